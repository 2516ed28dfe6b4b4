#include "server/platform/admin_commands.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string_view>

#include "core/text.hpp"
#include "server/platform/accounts.hpp"
#include "server/platform/platform_repo.hpp"
#include "server/platform/server_key.hpp"
#include "store/backup.hpp"
#include "store/store.hpp"
#include "util/clock.hpp"
#include "util/crypto.hpp"

namespace gpunex::server {

namespace {

//! The password on the first line of `in`, without its line end.
std::string password_line(std::istream& in) {
  std::string password;
  std::getline(in, password);
  if (!password.empty() && password.back() == '\r') password.pop_back();
  return password;
}

//! An operator command's store: one that exists (a mistyped --db is an error, not a new empty database).
std::unique_ptr<store::Store> existing_store(const std::string& db_url) {
  auto store = store::open_store(db_url, store::StoreOptions{.create_missing = false});
  store::migrate(*store);
  return store;
}

void print_roles(std::ostream& out, const User& user) {
  out << " with roles";
  for (const auto& r : user.roles) out << " " << r;
  out << "\n";
}

}  // namespace

int admin_set_password(const std::string& db_url, const std::string& email, std::istream& in, std::ostream& out,
                       std::ostream& err) {
  const std::string password = password_line(in);
  try {
    auto ended = set_password(*existing_store(db_url), email, password, util::SystemClock{}.now_ms());
    if (!ended) {
      err << "error: " << ended.error().message << "\n";
      return 1;
    }
    out << "password of " << core::to_lower_ascii(core::trim(email)) << " set; " << *ended
        << (*ended == 1 ? " session" : " sessions") << " ended\n";
    return 0;
  } catch (const store::StoreError& e) {
    err << "error: " << e.what() << "\n";
    return 1;
  }
}

int admin_set_role(const std::string& db_url, const std::string& email, const std::string& role, bool held,
                   std::ostream& out, std::ostream& err) {
  try {
    auto user = set_staff_role(*existing_store(db_url), email, role, held, util::SystemClock{}.now_ms());
    if (!user) {
      err << "error: " << user.error().message << "\n";
      return 1;
    }
    out << user->email << " (" << user->id << ") now";
    print_roles(out, *user);
    return 0;
  } catch (const store::StoreError& e) {
    err << "error: " << e.what() << "\n";
    return 1;
  }
}

int admin_create_user(const std::string& db_url, const std::string& email, const std::string& full_name,
                      const std::string& role, std::istream& in, std::ostream& out, std::ostream& err) {
  const std::string password = password_line(in);
  try {
    auto store = existing_store(db_url);
    auto user = create_user(*store, NewUser{email, password, full_name.empty() ? email : full_name, role}, util::SystemClock{}.now_ms(),
                            /*verified=*/true);
    if (!user) {
      err << "error: " << user.error().message << "\n";
      return 1;
    }
    out << "created " << user->email << " (" << user->id << ")";
    print_roles(out, *user);
    return 0;
  } catch (const store::StoreError& e) {
    err << "error: " << e.what() << "\n";
    return 1;
  }
}

namespace {

//! Writes the first admin's login to `path`, readable by its owner only (0600 from the moment it exists).
bool write_login_file(const std::string& path, const std::string& email, const std::string& password,
                      std::ostream& err) {
  std::error_code ec;
  const auto dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    err << "error: cannot write " << path << ": " << std::strerror(errno) << "\n";
    return false;
  }
  const std::string text = "e-mail:   " + email + "\npassword: " + password + "\n";
  // A file left by an earlier run keeps its old mode through O_TRUNC: set it before writing.
  const bool ok = ::fchmod(fd, 0600) == 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  if (!ok) err << "error: cannot write " << path << ": " << std::strerror(errno) << "\n";
  ::close(fd);
  if (!ok) std::filesystem::remove(path, ec);
  return ok;
}

}  // namespace

int admin_bootstrap(const std::string& db_url, const BootstrapOutput& output, std::ostream& out, std::ostream& err) {
  try {
    auto store = store::open_store(db_url);
    store::migrate(*store);
    bool has_admin = store->transact(
        [](store::Tx& tx) { return platform_repo::any_user_with_role(tx, core::Role::admin); }, store::TxMode::read);
    if (has_admin) {
      out << "An admin account exists already: nothing to do. A lost admin password is set again with "
             "`gpunex-server admin set-password --db URL (or --config FILE) --email EMAIL --password-stdin`.\n";
      return 0;
    }
    // As the account keeps it (and as the login file must say it).
    const std::string email = core::to_lower_ascii(core::trim(output.email));
    const std::string password = util::random_token(12);
    // The file first: an account whose password could not be kept anywhere would be locked for good.
    if (!output.to_terminal && !write_login_file(output.login_file, email, password, err)) return 1;
    auto user = create_user(*store, NewUser{email, password, "Administrator", std::string(core::role_name(core::Role::admin))},
                            util::SystemClock{}.now_ms(), /*verified=*/true);
    if (!user) {
      std::error_code ec;
      if (!output.to_terminal) std::filesystem::remove(output.login_file, ec);
      err << "error: " << user.error().message << "\n";
      return 1;
    }
    if (output.to_terminal) {
      out << "First admin account (shown once):\n  e-mail:   " << user->email << "\n  password: " << password << "\n";
    } else {
      out << "First admin account: " << user->email << "; its password is in " << output.login_file
          << " (mode 0600; standard output is not a terminal, so it is not printed)\n";
    }
    out.flush();
    return 0;
  } catch (const store::StoreError& e) {
    err << "error: " << e.what() << "\n";
    return 1;
  }
}

namespace {

//! The SQLite file a sqlite:PATH URL names; nullopt (after saying what to use instead) for PostgreSQL.
std::optional<std::string> sqlite_path(const std::string& db_url, std::string_view pg_advice, std::ostream& err) {
  if (db_url.rfind("postgresql://", 0) == 0 || db_url.rfind("postgres://", 0) == 0) {
    err << "error: this store is PostgreSQL: " << pg_advice << "\n";
    return std::nullopt;
  }
  if (db_url.rfind("sqlite:", 0) != 0) {
    err << "error: expected --db sqlite:PATH or a postgresql:// URL\n";
    return std::nullopt;
  }
  return db_url.substr(7);
}

}  // namespace

int admin_adopt_server_secret(const std::string& db_url, const Config& cfg, std::ostream& out, std::ostream& err) {
  std::string secret = cfg.server_secret;
  std::string from = "server_secret";
  if (secret.empty()) {
    auto key = load_or_create_server_key(cfg.data_dir);
    if (!key) {
      err << "error: " << key.error().message << "\n";
      return 1;
    }
    secret = std::move(*key);
    from = (std::filesystem::path(cfg.data_dir) / "server.key").string();
  }
  try {
    adopt_server_secret(*existing_store(db_url), secret, util::SystemClock{}.now_ms());
    out << "the database's servers must now use the secret of " << from << ": give every other server the same one\n";
    return 0;
  } catch (const store::StoreError& e) {
    err << "error: " << e.what() << "\n";
    return 1;
  }
}

int admin_backup(const std::string& db_url, const std::string& to, std::ostream& out, std::ostream& err) {
  const auto path = sqlite_path(
      db_url, "back it up with pg_dump (pg_dump -Fc -f gpunex.dump \"$GPUNEX_DB\"; see the README's Backups section)",
      err);
  if (!path) return 1;
  try {
    const auto report = store::backup_sqlite(*path, to);
    out << "backed up " << *path << " to " << to << " (" << report.bytes << " bytes, " << report.pages
        << " pages, schema version " << report.schema_version << ", integrity ok, mode 0600)\n";
    return 0;
  } catch (const store::StoreError& e) {
    err << "error: " << e.what() << "\n";
    return 1;
  }
}

int admin_restore(const std::string& db_url, const std::string& from, bool replace, std::ostream& out,
                  std::ostream& err) {
  const auto path = sqlite_path(
      db_url, "restore a pg_dump archive with pg_restore (see the README's Backups section)", err);
  if (!path) return 1;
  try {
    const auto report = store::restore_sqlite(from, *path, replace);
    out << "restored " << from << " into " << *path << " (" << report.bytes << " bytes, schema version "
        << report.schema_version << ", integrity ok, mode 0600)\n";
    if (!report.kept_old.empty()) out << "the database it replaced is kept as " << report.kept_old << "\n";
    return 0;
  } catch (const store::StoreError& e) {
    err << "error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace gpunex::server
