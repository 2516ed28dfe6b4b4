#pragma once
// Notifications: the durable mail outbox (written in the same transaction as
// the change it reports, delivered later by the mail worker) and the in-app
// notification list of each user. The texts are in mail/templates.hpp, the
// SQL in platform_repo.hpp.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "server/mail/templates.hpp"
#include "server/platform/paging.hpp"

#include "store/store.hpp"

namespace gpunex::server {

//! A secret a mail carries (an API key, a link's token), sealed in the outbox with the server secret
//! (util::seal): a copy of the database taken while the mail waits (a backup, an SMTP outage's retries)
//! does not hold it.
struct MailSecret {
  std::string value;
  std::string server_secret;
};

//! A mail to queue. `secret` is kept apart from the body, which holds the placeholder
//! kSecretPlaceholder; it is put in only when sending and erased once sent.
struct OutgoingMail {
  std::string kind;  // "application_submitted", ...
  std::string to;
  std::string subject;
  std::string body;
  std::optional<MailSecret> secret;
};
inline constexpr const char* kSecretPlaceholder = mail::kSecretPlaceholder;

//! Queues a mail in the outbox; returns its id.
std::string enqueue_mail(store::Tx& tx, const OutgoingMail& mail, std::int64_t now_ms);

//! A mail due for delivery, with the secret already put into the body.
struct DueMail {
  std::string id;
  std::string to;
  std::string subject;
  std::string body;
  std::int64_t created_at_ms = 0;
  std::int64_t attempts = 0;
  //! Why it cannot be sent (its secret does not unseal with `server_secret`: the secret changed); empty: none.
  std::string unsendable;
};
std::vector<DueMail> due_mails(store::Tx& tx, std::int64_t now_ms, int limit, const std::string& server_secret);
//! Marks a mail sent and erases its secret.
void mark_mail_sent(store::Tx& tx, const std::string& id, std::int64_t now_ms);
//! Records a failed attempt and when to try again.
void mark_mail_failed(store::Tx& tx, const std::string& id, const std::string& error, std::int64_t next_attempt_ms);
//! Records the last failed attempt: the mail stays unsent, is never due again, and its secret is erased.
void give_up_mail(store::Tx& tx, const std::string& id, const std::string& error);
//! The delay before retry number `attempts` (1-based): base · 2^(attempts-1), at most one hour.
std::int64_t mail_retry_delay_ms(std::int64_t attempts, std::int64_t base_ms);

//! Tells a user an event both ways: queues `a.mail` (with `secret` kept apart when given) to the
//! account's confirmed address, and adds `a.notice` to their notifications. An account that has not
//! confirmed its address gets the notification only: account mail never goes to an address nobody
//! has shown to be theirs. Returns whether a mail was queued.
bool announce(store::Tx& tx, const std::string& user_id, const mail::Announcement& a,
              const std::optional<MailSecret>& secret, std::int64_t now_ms);

//! Adds an in-app notification for a user.
void notify_user(store::Tx& tx, const std::string& user_id, const std::string& kind, const std::string& title,
                 const std::string& body, const std::string& link, std::int64_t now_ms);
//! A page of the user's notifications, newest first, as {items, unread, next_cursor}; a cursor
//! naming none of theirs is a 400 naming "cursor".
core::Result<nlohmann::json> list_notifications(store::Tx& tx, const std::string& user_id, const PageParams& page);
//! Marks one of the user's notifications read; false when it is not theirs or does not exist.
bool mark_notification_read(store::Tx& tx, const std::string& user_id, const std::string& id, std::int64_t now_ms);

}  // namespace gpunex::server
