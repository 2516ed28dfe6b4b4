#include "server/platform/email_addresses.hpp"

#include "server/mail/templates.hpp"
#include "server/platform/notifications.hpp"
#include "server/platform/platform_repo.hpp"
#include "util/crypto.hpp"

namespace gpunex::server {

using core::Error;
using core::ErrorCode;

namespace {

constexpr std::int64_t kHourMs = 3'600'000;

}  // namespace

std::string email_confirmation_link(const std::string& base_url, const std::string& token) {
  return base_url + "/#/confirm-email/" + token;
}

core::Status send_email_confirmation(store::Tx& tx, const User& user, const std::string& email, bool changing,
                                     const EmailConfirmationSettings& s, std::int64_t now_ms) {
  if (platform_repo::count_email_confirmations_since(tx, user.id, now_ms - kHourMs) >= s.per_hour) {
    // Another goes out once the oldest of the hour's leaves it.
    const auto oldest = platform_repo::first_email_confirmation_since(tx, user.id, now_ms - kHourMs);
    return Error::make(ErrorCode::rate_limited,
                       "too many confirmation mails for this account; try again within an hour")
        .with_code("too_many_confirmations")
        .with_retry_after_ms(oldest ? *oldest + kHourMs - now_ms : kHourMs);
  }
  const std::string token = util::random_token(32);
  const std::int64_t expires = now_ms + s.ttl_ms;
  platform_repo::insert_email_confirmation(tx, {util::sha256_hex(token), user.id, email, now_ms, expires, {}});
  const auto text = mail::email_confirmation(user.full_name, email,
                                             email_confirmation_link(s.base_url, mail::kSecretPlaceholder), expires,
                                             changing);
  enqueue_mail(tx, OutgoingMail{text.kind, email, text.subject, text.body, MailSecret{token, s.server_secret}}, now_ms);
  return core::ok_status();
}

core::Result<User> confirm_email(store::Tx& tx, const std::string& token, const std::string& base_url,
                                 std::int64_t now_ms) {
  const auto c = platform_repo::find_email_confirmation(tx, util::sha256_hex(token));
  if (!c) {
    return Error::make(ErrorCode::invalid_field, "this confirmation link is not one GPUnex sent", "token")
        .with_code("unknown_token");
  }
  if (c->used_at_ms) {
    return Error::make(ErrorCode::invalid_field, "this confirmation link was used already", "token")
        .with_code("token_used");
  }
  if (c->expires_at_ms <= now_ms) {
    return Error::make(ErrorCode::invalid_field, "this confirmation link has expired; ask for a new one", "token")
        .with_code("token_expired");
  }
  const auto before = platform_repo::find_user(tx, c->user_id);
  if (!before) return Error::make(ErrorCode::invalid_field, "this confirmation link is not one GPUnex sent", "token");
  if (!platform_repo::use_email_confirmation(tx, c->token_hash, now_ms)) {
    return Error::make(ErrorCode::invalid_field, "this confirmation link was used already", "token")
        .with_code("token_used");
  }
  platform_repo::use_all_email_confirmations(tx, c->user_id, now_ms);
  if (!platform_repo::set_verified_email(tx, c->user_id, c->email, now_ms)) {
    return Error::make(ErrorCode::conflict, "another account has this e-mail address now", "email")
        .with_code("email_taken");
  }
  if (before->email_verified_at_ms && before->email != c->email) {
    // The old address was the account's: it hears of the move (a stolen session cannot move the
    // account's mail away unseen), then the account's mail goes to the new one.
    const auto a = mail::email_changed(before->email, c->email, base_url + "/#/account");
    enqueue_mail(tx, OutgoingMail{a.mail.kind, before->email, a.mail.subject, a.mail.body, std::nullopt}, now_ms);
    notify_user(tx, c->user_id, a.notice.kind, a.notice.title, a.notice.body, a.notice.link, now_ms);
  }
  auto user = find_user(tx, c->user_id);
  if (!user) return Error::make(ErrorCode::invalid_field, "this confirmation link is not one GPUnex sent", "token");
  return std::move(*user);
}

std::optional<std::string> pending_email(store::Tx& tx, const std::string& user_id, std::int64_t now_ms) {
  return platform_repo::pending_email(tx, user_id, now_ms);
}

}  // namespace gpunex::server
