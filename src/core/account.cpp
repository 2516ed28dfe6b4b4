#include "core/account.hpp"

namespace gpunex::core {

std::string_view role_name(Role r) {
  switch (r) {
    case Role::customer: return "customer";
    case Role::provider: return "provider";
    case Role::reviewer: return "reviewer";
    case Role::admin: return "admin";
  }
  return "customer";
}

const std::vector<Role>& all_roles() {
  static const std::vector<Role> roles = {Role::customer, Role::provider, Role::reviewer, Role::admin};
  return roles;
}

std::optional<Role> parse_role(std::string_view s) {
  for (auto r : all_roles()) {
    if (role_name(r) == s) return r;
  }
  return std::nullopt;
}

std::vector<Role> initial_roles(Role requested) {
  std::vector<Role> roles = {Role::customer};
  if (requested != Role::customer) roles.push_back(requested);
  return roles;
}

}  // namespace gpunex::core
