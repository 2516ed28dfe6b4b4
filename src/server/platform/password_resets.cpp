#include "server/platform/password_resets.hpp"

#include "server/mail/templates.hpp"
#include "server/platform/accounts.hpp"
#include "server/platform/notifications.hpp"
#include "server/platform/platform_repo.hpp"
#include "util/crypto.hpp"

namespace gpunex::server {

using core::Error;
using core::ErrorCode;

namespace {

constexpr std::int64_t kResetWindowMs = 3'600'000;  // the hour the per-account limit counts over

core::Error used_link() {
  return Error::make(ErrorCode::invalid_field, "this password reset link was used already; ask for a new one", "token")
      .with_code("token_used");
}

core::Error unknown_link() {
  return Error::make(ErrorCode::invalid_field, "this password reset link is not one GPUnex sent", "token")
      .with_code("unknown_token");
}

}  // namespace

std::string password_reset_link(const std::string& base_url, const std::string& token) {
  return base_url + "/#/reset-password/" + token;
}

bool request_password_reset(store::Tx& tx, const std::string& email, const PasswordResetSettings& s,
                            std::int64_t now_ms) {
  const auto user = platform_repo::find_user_by_email(tx, email);
  if (!user) return false;
  if (platform_repo::count_password_resets_since(tx, user->id, now_ms - kResetWindowMs) >= s.per_hour) return false;
  const std::string token = util::random_token(32);
  const std::int64_t expires = now_ms + s.ttl_ms;
  platform_repo::insert_password_reset(tx, {util::sha256_hex(token), user->id, user->email, now_ms, expires, {}});
  const auto text = mail::password_reset(user->full_name, user->email,
                                         password_reset_link(s.base_url, mail::kSecretPlaceholder), expires);
  enqueue_mail(tx, OutgoingMail{text.kind, user->email, text.subject, text.body, MailSecret{token, s.server_secret}},
               now_ms);
  return true;
}

core::Result<PasswordReset> reset_password(store::Store& store, const std::string& token, const std::string& password,
                                           const std::string& base_url, std::int64_t now_ms) {
  const std::string token_hash = util::sha256_hex(token);
  PasswordReset done;
  const auto find = [&](store::Tx& tx) -> core::Result<std::string> {
    const auto r = platform_repo::find_password_reset(tx, token_hash);
    if (!r) return unknown_link();
    if (r->used_at_ms) {
      return used_link();
    }
    if (r->expires_at_ms <= now_ms) {
      return Error::make(ErrorCode::invalid_field, "this password reset link has expired; ask for a new one", "token")
          .with_code("token_expired");
    }
    const auto user = platform_repo::find_user(tx, r->user_id);
    if (!user) return unknown_link();
    if (user->email != r->email) {
      // The account moved to another address since: a link to the old one no longer speaks for it.
      return Error::make(ErrorCode::invalid_field,
                         "this password reset link was mailed to the account's old address; ask for a new one", "token")
          .with_code("token_expired");
    }
    // This link, marked used by the first opening only; set_password then voids the account's others.
    if (!platform_repo::use_password_reset(tx, token_hash, now_ms)) return used_link();
    if (!user->email_verified_at_ms) platform_repo::set_verified_email(tx, user->id, user->email, now_ms);
    done.email = user->email;
    return user->id;
  };
  const auto tell = [&](store::Tx& tx, const std::string& user_id) {
    announce(tx, user_id, mail::password_changed(done.email, base_url + "/#/account"), std::nullopt, now_ms);
  };
  auto ended = set_password(store, find, password, now_ms, "", "new_password", tell);
  if (!ended) return std::move(ended).error();
  done.sessions_ended = *ended;
  return done;
}

}  // namespace gpunex::server
