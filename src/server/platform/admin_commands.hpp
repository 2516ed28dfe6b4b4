#pragma once
// Operator commands run from the shell: `gpunex-server admin ...`.

#include <iosfwd>
#include <string>

#include "server/platform/config.hpp"

namespace gpunex::server {

//! Creates an account with a role; the password comes from `in` (first line). Returns the exit code.
int admin_create_user(const std::string& db_url, const std::string& email, const std::string& full_name,
                      const std::string& role, std::istream& in, std::ostream& out, std::ostream& err);
//! Sets an account's password (first line of `in`) and ends its sessions. Returns the exit code.
int admin_set_password(const std::string& db_url, const std::string& email, std::istream& in, std::ostream& out,
                       std::ostream& err);
//! Grants (`held`) or takes back a staff role (reviewer, admin). Returns the exit code.
int admin_set_role(const std::string& db_url, const std::string& email, const std::string& role, bool held,
                   std::ostream& out, std::ostream& err);

//! Where the first admin's login goes: printed once when standard output is a terminal; otherwise into
//! `login_file` (mode 0600) and only its path printed, so the password never reaches a log or a pipe.
struct BootstrapOutput {
  bool to_terminal = false;
  std::string login_file;  // e.g. var/first-admin.txt
  std::string email = "admin@localhost.localdomain";  // the first admin's address (the operator's own, best)
};

//! Creates the first admin (`email`) with a random password when no admin exists; see BootstrapOutput. When one exists
//! it says so (and how to set a lost password) and changes nothing. Returns the exit code.
int admin_bootstrap(const std::string& db_url, const BootstrapOutput& output, std::ostream& out, std::ostream& err);

//! Makes the secret of `cfg` (server_secret, else <data_dir>/server.key) the one the servers of the store
//! must use (check_server_secret), for when the recorded one is lost for good. Returns the exit code.
int admin_adopt_server_secret(const std::string& db_url, const Config& cfg, std::ostream& out, std::ostream& err);

//! Copies a running SQLite store to a new file `to` (mode 0600) as one consistent snapshot (online backup
//! API), safe while the server serves. On PostgreSQL it says to use pg_dump and fails. Returns the exit code.
int admin_backup(const std::string& db_url, const std::string& to, std::ostream& out, std::ostream& err);

//! Restores a backup made by admin_backup into the SQLite store `db_url`: a new path, or with `replace` an
//! existing database no process has open (kept beside it). On PostgreSQL it says to use pg_restore and fails.
//! Returns the exit code.
int admin_restore(const std::string& db_url, const std::string& from, bool replace, std::ostream& out,
                  std::ostream& err);

}  // namespace gpunex::server
