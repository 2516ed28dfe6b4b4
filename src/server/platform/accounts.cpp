#include "server/platform/accounts.hpp"

#include <algorithm>

#include "core/account.hpp"
#include "core/text.hpp"
#include "server/platform/platform_repo.hpp"
#include "util/crypto.hpp"
#include "util/time.hpp"

namespace gpunex::server {

using core::Error;
using core::ErrorCode;

const std::vector<std::string>& known_roles() {
  static const std::vector<std::string> roles = [] {
    std::vector<std::string> names;
    for (auto r : core::all_roles()) names.emplace_back(core::role_name(r));
    return names;
  }();
  return roles;
}

bool User::has_role(std::string_view role) const {
  return std::find(roles.begin(), roles.end(), role) != roles.end();
}

nlohmann::json User::to_json() const {
  return {{"id", id},
          {"email", email},
          {"email_verified", email_verified},
          {"full_name", full_name},
          {"roles", roles},
          {"created_at", util::rfc3339(created_at_ms)}};
}

namespace {

//! The password rules (signup, and a password set later), each broken one added to `errors` naming `field`.
void check_password(const std::string& password, const std::string& field, core::ErrorList& errors) {
  const auto bad = [&](std::string message) {
    errors.add(Error::make(ErrorCode::invalid_field, std::move(message), field));
  };
  if (password.size() < 10) bad("Password must be at least 10 characters");
  if (password.size() > 1024) bad("Password must be at most 1,024 characters");
  // A NUL or escape in a password cannot be typed back in every client (some cut at the NUL).
  if (!core::is_single_line_text(password)) bad("Password must not contain control characters");
}

}  // namespace

core::Status validate_new_user(const NewUser& u) {
  core::ErrorList errors;
  const auto bad = [&](const char* field, std::string message) {
    errors.add(Error::make(ErrorCode::invalid_field, std::move(message), field));
  };
  if (!core::is_valid_email(u.email)) bad("email", "E-mail is not a valid e-mail address (like name@example.com)");
  check_password(u.password, "password", errors);
  if (core::trim(u.full_name).empty()) {
    bad("full_name", "Full name is required");
  } else if (u.full_name.size() > 200 || !core::is_single_line_text(u.full_name)) {
    bad("full_name", "Full name must be at most 200 characters of plain text");
  }
  if (!core::parse_role(u.role)) {
    bad("role", "Role must be one of customer, provider, reviewer, admin");
  }
  return errors.status();
}

namespace {

std::vector<std::string> role_names(store::Tx& tx, const std::string& user_id) {
  std::vector<std::string> names;
  for (auto r : platform_repo::roles_of(tx, user_id)) names.emplace_back(core::role_name(r));
  return names;
}

}  // namespace

core::Result<User> create_user(store::Store& store, const NewUser& input, std::int64_t now_ms, bool verified,
                               const std::function<core::Status(store::Tx&, const User&)>& on_created) {
  NewUser u = input;
  u.email = core::to_lower_ascii(core::trim(u.email));
  u.full_name = core::trim(u.full_name);
  if (auto s = validate_new_user(u); !s) return std::move(s).error();
  const std::string hash = util::hash_password(u.password);
  return store.transact([&](store::Tx& tx) -> core::Result<User> {
    User user{util::new_id("usr"), u.email, u.full_name, {}, now_ms, verified};
    const auto verified_at = verified ? std::optional<std::int64_t>(now_ms) : std::nullopt;
    if (!platform_repo::insert_user(tx, {user.id, user.email, user.full_name, user.created_at_ms, verified_at},
                                    hash)) {
      return Error::make(ErrorCode::conflict, "an account with this e-mail already exists", "email")
          .with_code("email_taken");
    }
    for (auto role : core::initial_roles(*core::parse_role(u.role))) {
      platform_repo::grant_role(tx, user.id, role, user.created_at_ms);
    }
    user.roles = role_names(tx, user.id);
    if (on_created) {
      if (auto sent = on_created(tx, user); !sent) return std::move(sent).error();
    }
    return user;
  });
}

namespace {

std::string article_of(const std::string& role) {
  return role == "admin" ? "an " : "a ";
}

core::Error no_account(const std::string& email) {
  return Error::make(ErrorCode::not_found, "no account has the e-mail " + email, "email");
}

}  // namespace

core::Result<std::int64_t> set_password(store::Store& store, const std::string& email_text, const std::string& password,
                                        std::int64_t now_ms, const std::string& keep_session_hash,
                                        const std::string& password_field,
                                        const std::function<void(store::Tx&, const std::string&)>& tell) {
  const auto email = core::to_lower_ascii(core::trim(email_text));
  const auto find = [&](store::Tx& tx) -> core::Result<std::string> {
    const auto user = platform_repo::find_user_by_email(tx, email);
    if (!user) return no_account(email);
    return user->id;
  };
  return set_password(store, find, password, now_ms, keep_session_hash, password_field, tell);
}

core::Result<std::int64_t> set_password(store::Store& store,
                                        const std::function<core::Result<std::string>(store::Tx&)>& find,
                                        const std::string& password, std::int64_t now_ms,
                                        const std::string& keep_session_hash, const std::string& password_field,
                                        const std::function<void(store::Tx&, const std::string&)>& tell) {
  core::ErrorList errors;
  check_password(password, password_field, errors);
  if (auto s = errors.status(); !s) return std::move(s).error();
  const std::string hash = util::hash_password(password);
  return store.transact([&](store::Tx& tx) -> core::Result<std::int64_t> {
    auto user_id = find(tx);
    if (!user_id) return std::move(user_id).error();
    platform_repo::set_password_hash(tx, *user_id, hash);
    // What someone who had the password may have set going: reset links, and a move to another address.
    platform_repo::use_password_resets(tx, *user_id, now_ms);
    if (const auto row = platform_repo::find_user(tx, *user_id)) {
      platform_repo::use_email_changes(tx, *user_id, row->email, now_ms);
    }
    if (tell) tell(tx, *user_id);
    return platform_repo::delete_user_sessions(tx, *user_id, keep_session_hash);
  });
}

core::Result<User> set_staff_role(store::Store& store, const std::string& email_text, const std::string& role_text,
                                  bool held, std::int64_t now_ms) {
  const auto email = core::to_lower_ascii(core::trim(email_text));
  const auto role = core::parse_role(role_text);
  if (!role || (*role != core::Role::reviewer && *role != core::Role::admin)) {
    return Error::make(ErrorCode::invalid_field,
                       "role must be reviewer or admin (a provider is approved through an application)", "role");
  }
  return store.transact([&](store::Tx& tx) -> core::Result<User> {
    const auto row = platform_repo::find_user_by_email(tx, email);
    if (!row) return no_account(email);
    const auto had = role_names(tx, row->id);
    const bool has = std::find(had.begin(), had.end(), core::role_name(*role)) != had.end();
    if (held) {
      platform_repo::grant_role(tx, row->id, *role, now_ms);
    } else if (!has) {
      return Error::make(ErrorCode::conflict,
                         email + " is not " + article_of(role_text) + role_text + ": nothing to take back", "role")
          .with_code("role_not_held");
    } else if (*role == core::Role::admin && platform_repo::count_users_with_role_locked(tx, core::Role::admin) <= 1) {
      return Error::make(ErrorCode::conflict, email + " is the only admin: grant another account admin first", "email")
          .with_code("last_admin");
    } else {
      platform_repo::revoke_role(tx, row->id, *role);
    }
    return *find_user(tx, row->id);
  });
}

std::optional<User> find_user(store::Tx& tx, const std::string& user_id) {
  auto row = platform_repo::find_user(tx, user_id);
  if (!row) return std::nullopt;
  return User{row->id, row->email, row->full_name, role_names(tx, user_id), row->created_at_ms,
              row->email_verified_at_ms.has_value()};
}

core::Result<NewSession> login(store::Store& store, const std::string& email_in, const std::string& password,
                               std::int64_t ttl_ms, std::int64_t now_ms) {
  // A fixed hash verified when the account does not exist, so both failures take the same time.
  static const std::string dummy_hash = util::hash_password("not-a-real-password-0000");
  const std::string email = core::to_lower_ascii(core::trim(email_in));
  auto found = store.transact([&](store::Tx& tx) { return platform_repo::find_credentials(tx, email); },
                              store::TxMode::read);
  bool good = util::verify_password(password, found ? found->password_hash : dummy_hash) && found.has_value();
  if (!good) {
    return Error::make(ErrorCode::unauthenticated, "e-mail or password is wrong").with_code("invalid_credentials");
  }
  NewSession s;
  s.token = util::random_token(32);
  s.csrf_token = util::random_token(24);
  const std::string user_id = found->user_id;
  return store.transact([&](store::Tx& tx) -> core::Result<NewSession> {
    const auto now = now_ms;
    s.expires_at_ms = now + ttl_ms;
    platform_repo::insert_session(tx, {util::sha256_hex(s.token), user_id, s.csrf_token, now, s.expires_at_ms});
    // Expired sessions of this user are removed as they log in again, which bounds the table.
    platform_repo::delete_expired_sessions(tx, user_id, now);
    auto user = find_user(tx, user_id);
    if (!user) return Error::make(ErrorCode::unauthenticated, "e-mail or password is wrong");
    s.user = std::move(*user);
    return s;
  });
}

std::optional<SessionInfo> find_session(store::Tx& tx, const std::string& token, std::int64_t now_ms) {
  const std::string hash = util::sha256_hex(token);
  auto row = platform_repo::find_live_session(tx, hash, now_ms);
  if (!row) return std::nullopt;
  auto user = find_user(tx, row->user_id);
  if (!user) return std::nullopt;
  return SessionInfo{std::move(*user), row->csrf_token, hash};
}

void end_session(store::Tx& tx, const std::string& token_hash) {
  platform_repo::delete_session(tx, token_hash);
}

}  // namespace gpunex::server
