#include "server/platform/accounts.hpp"

#include <algorithm>

#include "core/text.hpp"
#include "util/crypto.hpp"
#include "util/time.hpp"

namespace gpunex::server {

using core::Error;
using core::ErrorCode;

bool User::has_role(std::string_view role) const {
  return std::find(roles.begin(), roles.end(), role) != roles.end();
}

nlohmann::json User::to_json() const {
  return {{"id", id},
          {"email", email},
          {"full_name", full_name},
          {"roles", roles},
          {"created_at", util::rfc3339(created_at_ms)}};
}

core::Status validate_new_user(const NewUser& u) {
  core::ErrorList errors;
  const auto bad = [&](const char* field, std::string message) {
    errors.add(Error::make(ErrorCode::invalid_field, std::move(message), field));
  };
  if (!core::is_valid_email(u.email)) bad("email", "E-mail is not a valid e-mail address (like name@example.com)");
  if (u.password.size() < 10) bad("password", "Password must be at least 10 characters");
  if (u.password.size() > 1024) bad("password", "Password must be at most 1,024 characters");
  if (core::trim(u.full_name).empty()) {
    bad("full_name", "Full name is required");
  } else if (u.full_name.size() > 200 || !core::is_clean_utf8(u.full_name)) {
    bad("full_name", "Full name must be at most 200 characters of plain text");
  }
  if (std::find(known_roles().begin(), known_roles().end(), u.role) == known_roles().end()) {
    bad("role", "Role must be one of customer, provider, reviewer, admin");
  }
  return errors.status();
}

namespace {

std::vector<std::string> roles_of(store::Tx& tx, const std::string& user_id) {
  std::vector<std::string> roles;
  for (const auto& r : tx.query("SELECT role FROM user_roles WHERE user_id = ? ORDER BY role", {user_id})) {
    roles.push_back(r.str(0));
  }
  return roles;
}

}  // namespace

core::Result<User> create_user(store::Store& store, const NewUser& input, std::int64_t now_ms) {
  NewUser u = input;
  u.email = core::to_lower_ascii(core::trim(u.email));
  u.full_name = core::trim(u.full_name);
  if (auto s = validate_new_user(u); !s) return std::move(s).error();
  const std::string hash = util::hash_password(u.password);
  return store.transact([&](store::Tx& tx) -> core::Result<User> {
    User user{util::new_id("usr"), u.email, u.full_name, {}, now_ms};
    auto inserted = tx.query(
        "INSERT INTO users (id, email, full_name, password_hash, created_at) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (email) DO NOTHING RETURNING id",
        {user.id, user.email, user.full_name, hash, user.created_at_ms});
    if (inserted.empty()) {
      return Error::make(ErrorCode::conflict, "an account with this e-mail already exists", "email")
          .with_code("email_taken");
    }
    std::vector<std::string> roles = {"customer"};
    if (u.role != "customer") roles.push_back(u.role);
    for (const auto& role : roles) {
      tx.exec("INSERT INTO user_roles (user_id, role, granted_at) VALUES (?, ?, ?)", {user.id, role, user.created_at_ms});
    }
    user.roles = roles_of(tx, user.id);
    return user;
  });
}

std::optional<User> find_user(store::Tx& tx, const std::string& user_id) {
  auto row = tx.query_one("SELECT id, email, full_name, created_at FROM users WHERE id = ?", {user_id});
  if (!row) return std::nullopt;
  return User{row->str(0), row->str(1), row->str(2), roles_of(tx, user_id), row->i64(3)};
}

core::Result<NewSession> login(store::Store& store, const std::string& email_in, const std::string& password,
                               std::int64_t ttl_ms, std::int64_t now_ms) {
  // A fixed hash verified when the account does not exist, so both failures take the same time.
  static const std::string dummy_hash = util::hash_password("not-a-real-password-0000");
  const std::string email = core::to_lower_ascii(core::trim(email_in));
  auto found = store.transact(
      [&](store::Tx& tx) {
        return tx.query_one("SELECT id, password_hash FROM users WHERE email = ?", {email});
      },
      store::TxMode::read);
  bool good = util::verify_password(password, found ? found->str(1) : dummy_hash) && found.has_value();
  if (!good) {
    return Error::make(ErrorCode::unauthenticated, "e-mail or password is wrong").with_code("invalid_credentials");
  }
  NewSession s;
  s.token = util::random_token(32);
  s.csrf_token = util::random_token(24);
  const std::string user_id = found->str(0);
  return store.transact([&](store::Tx& tx) -> core::Result<NewSession> {
    const auto now = now_ms;
    s.expires_at_ms = now + ttl_ms;
    tx.exec("INSERT INTO sessions (token_hash, user_id, csrf_token, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
            {util::sha256_hex(s.token), user_id, s.csrf_token, now, s.expires_at_ms});
    // Expired sessions of this user are removed as they log in again, which bounds the table.
    tx.exec("DELETE FROM sessions WHERE user_id = ? AND expires_at <= ?", {user_id, now});
    auto user = find_user(tx, user_id);
    if (!user) return Error::make(ErrorCode::unauthenticated, "e-mail or password is wrong");
    s.user = std::move(*user);
    return s;
  });
}

std::optional<SessionInfo> find_session(store::Tx& tx, const std::string& token, std::int64_t now_ms) {
  const std::string hash = util::sha256_hex(token);
  auto row = tx.query_one("SELECT user_id, csrf_token FROM sessions WHERE token_hash = ? AND expires_at > ?",
                          {hash, now_ms});
  if (!row) return std::nullopt;
  auto user = find_user(tx, row->str(0));
  if (!user) return std::nullopt;
  return SessionInfo{std::move(*user), row->str(1), hash};
}

void end_session(store::Tx& tx, const std::string& token_hash) {
  tx.exec("DELETE FROM sessions WHERE token_hash = ?", {token_hash});
}

}  // namespace gpunex::server
