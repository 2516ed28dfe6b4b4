#pragma once
// Forgotten passwords. Anyone may ask for a link that sets a new password for an address; if an account
// has it, the link is mailed there (the address the account signed up or moved to: whoever reads its mail
// owns the account), and the answer's body is the same whether or not one does (signup's email_taken
// says as much already; the time to answer differs by the one insert). A link works once, for a short while, and a
// limited number are mailed to an account an hour. Opening one sets the password and ends every session of the account.
// The link's token is in the mail only (kept apart in the outbox and erased once sent); the store keeps its SHA-256.
// The SQL is in platform_repo.hpp.

#include <cstdint>
#include <string>

#include "core/result.hpp"
#include "store/store.hpp"

namespace gpunex::server {

struct PasswordResetSettings {
  std::string base_url;       // the dashboard the link opens
  std::int64_t ttl_ms = 0;    // how long a link works
  std::int64_t per_hour = 0;  // links one account may be sent in an hour
  std::string server_secret;  // seals the link's token in the outbox
};

//! The dashboard page a reset link opens, with `token` in it.
std::string password_reset_link(const std::string& base_url, const std::string& token);

//! Mails the account with `email` (already trimmed and lower-cased) a reset link, unless there is no
//! such account or it was sent `per_hour` links in the last hour: then nothing happens, and the caller
//! answers as it would have. True when a link was mailed (never for the caller's answer).
bool request_password_reset(store::Tx& tx, const std::string& email, const PasswordResetSettings& s,
                            std::int64_t now_ms);

//! Opens a link: the account's password becomes `password` (checked as at signup; errors name
//! `new_password`), every reset link of the account stops working, every session ends, and the account
//! is told. A link mailed to the account's address while it was not confirmed confirms it (the mail
//! reached its owner). Errors name `token`: not a link GPUnex sent, used already, or expired. Answers
//! the account's e-mail address and how many sessions ended.
struct PasswordReset {
  std::string email;
  std::int64_t sessions_ended = 0;
};
core::Result<PasswordReset> reset_password(store::Store& store, const std::string& token, const std::string& password,
                                           const std::string& base_url, std::int64_t now_ms);

}  // namespace gpunex::server
