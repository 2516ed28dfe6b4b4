#pragma once
// Accounts and sessions: users with roles, argon2id password hashes, and
// session tokens that the store keeps only as SHA-256 hashes. The SQL is in
// platform_repo.hpp; the role names in core/account.hpp.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/account.hpp"
#include "core/result.hpp"
#include "store/store.hpp"

namespace gpunex::server {

//! The roles an account can hold, by name (core::Role).
const std::vector<std::string>& known_roles();

struct User {
  std::string id;
  std::string email;
  std::string full_name;
  std::vector<std::string> roles;
  std::int64_t created_at_ms = 0;
  bool email_verified = false;  // the account confirmed `email`: its mail goes there

  bool has_role(std::string_view role) const;
  bool has_role(core::Role role) const { return has_role(core::role_name(role)); }
  //! The API shape of /v1/me: {id, email, email_verified, full_name, roles, created_at}.
  nlohmann::json to_json() const;
};

struct NewUser {
  std::string email;
  std::string password;
  std::string full_name;
  std::string role = "customer";
};

//! Checks signup input; errors name the field (email, password, full_name, role).
core::Status validate_new_user(const NewUser& u);
//! Validates, hashes the password (outside any transaction) and inserts the user; 409 if the e-mail is taken.
//! `verified`: the address counts as confirmed (an operator made the account); else the account
//! confirms it by the link `on_created` sends, in the same transaction.
core::Result<User> create_user(store::Store& store, const NewUser& u, std::int64_t now_ms, bool verified,
                               const std::function<core::Status(store::Tx&, const User&)>& on_created = {});
std::optional<User> find_user(store::Tx& tx, const std::string& user_id);

//! Sets the password of the account with `email` (checked as at signup, hashed outside any transaction)
//! and ends every session it has but `keep_session_hash` (the one that asked, when the account changes its
//! own): a password changed because it leaked leaves nobody else signed in with it. `tell` runs in the same
//! transaction (to tell the account). Answers how many sessions ended; 400 naming `password_field`, 404
//! naming email.
//! Every unused password reset link of the account stops working too (at `now_ms`), and so does every
//! link that would move it to another address.
core::Result<std::int64_t> set_password(store::Store& store, const std::string& email, const std::string& password,
                                        std::int64_t now_ms, const std::string& keep_session_hash = "",
                                        const std::string& password_field = "password",
                                        const std::function<void(store::Tx&, const std::string& user_id)>& tell = {});
//! The same, for the account `find` answers (its id, or why there is none) in the transaction.
core::Result<std::int64_t> set_password(store::Store& store,
                                        const std::function<core::Result<std::string>(store::Tx&)>& find,
                                        const std::string& password, std::int64_t now_ms,
                                        const std::string& keep_session_hash, const std::string& password_field,
                                        const std::function<void(store::Tx&, const std::string& user_id)>& tell);

//! Grants (`held`) or takes back a staff role, reviewer or admin, of the account with `email`, and answers
//! the account. The customer and provider roles are not the operator's to hand out (a provider is approved
//! through an application), and the last admin keeps the role (409 last_admin).
core::Result<User> set_staff_role(store::Store& store, const std::string& email, const std::string& role, bool held,
                                  std::int64_t now_ms);

//! A new login: the token is returned here once and stored only as its hash.
struct NewSession {
  std::string token;
  std::string csrf_token;
  std::int64_t expires_at_ms = 0;
  User user;
};

//! Checks the password (in constant time whether or not the account exists) and opens a session.
//! Wrong e-mail and wrong password give the same 401.
core::Result<NewSession> login(store::Store& store, const std::string& email, const std::string& password,
                               std::int64_t ttl_ms, std::int64_t now_ms);

//! A live session found by its token.
struct SessionInfo {
  User user;
  std::string csrf_token;
  std::string token_hash;
};
std::optional<SessionInfo> find_session(store::Tx& tx, const std::string& token, std::int64_t now_ms);
void end_session(store::Tx& tx, const std::string& token_hash);

}  // namespace gpunex::server
