#pragma once
// Operator commands run from the shell: `gpunex-server admin ...`.

#include <iosfwd>
#include <string>

namespace gpunex::server {

//! Creates an account with a role; the password comes from `in` (first line). Returns the exit code.
int admin_create_user(const std::string& db_url, const std::string& email, const std::string& full_name,
                      const std::string& role, std::istream& in, std::ostream& out, std::ostream& err);
//! Creates admin@localhost with a random password when no admin exists, printing the login once.
int admin_bootstrap(const std::string& db_url, std::ostream& out, std::ostream& err);

}  // namespace gpunex::server
