#pragma once
// Account rules without I/O: the roles an account can hold and their names as
// stored and shown (user_roles.role, /v1/me "roles").

#include <optional>
#include <string_view>
#include <vector>

namespace gpunex::core {

//! What an account may do; every account is a customer, the other roles are granted.
enum class Role { customer, provider, reviewer, admin };

std::string_view role_name(Role r);
std::optional<Role> parse_role(std::string_view s);
//! Every role, in the order signup's error message lists them.
const std::vector<Role>& all_roles();

//! The roles a new account starts with: customer, plus `requested` when it is another one.
std::vector<Role> initial_roles(Role requested);

}  // namespace gpunex::core
