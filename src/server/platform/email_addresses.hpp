#pragma once
// Confirmed e-mail addresses. An account's mail goes only to an address it
// confirmed (notifications.hpp announce), so nobody can have the platform
// write to an address that is not theirs: signup sends a link to the address
// given, a change of address sends one to the new address (the account keeps
// the old one until it is opened), and the old address is told of the move.
// The link's token is in the mail only (kept apart in the outbox and erased
// once sent); the store keeps its SHA-256. The SQL is in platform_repo.hpp.

#include <cstdint>
#include <optional>
#include <string>

#include "core/result.hpp"
#include "server/platform/accounts.hpp"
#include "store/store.hpp"

namespace gpunex::server {

struct EmailConfirmationSettings {
  std::string base_url;           // the dashboard the link opens
  std::int64_t ttl_ms = 0;        // how long a link works
  std::int64_t per_hour = 0;      // links one account may be sent in an hour
  std::string server_secret;      // seals the link's token in the outbox
};

//! The dashboard page a confirmation link opens, with `token` in it.
std::string email_confirmation_link(const std::string& base_url, const std::string& token);

//! Mails `email` a link confirming it for `user` (`changing`: the account asked to move there).
//! Refused (rate_limited) when the account was sent `per_hour` links in the last hour.
core::Status send_email_confirmation(store::Tx& tx, const User& user, const std::string& email, bool changing,
                                     const EmailConfirmationSettings& s, std::int64_t now_ms);

//! Opens a link: the account's address becomes the link's, confirmed, and every other link the
//! account was sent stops working. Errors name `token` (not a link GPUnex sent, used already,
//! expired) or `email` (another account has the address since). A move tells the old address.
core::Result<User> confirm_email(store::Tx& tx, const std::string& token, const std::string& base_url,
                                 std::int64_t now_ms);

//! The address the account was last sent an unused, unexpired link for, if any.
std::optional<std::string> pending_email(store::Tx& tx, const std::string& user_id, std::int64_t now_ms);

}  // namespace gpunex::server
