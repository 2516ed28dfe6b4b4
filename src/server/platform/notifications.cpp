#include "server/platform/notifications.hpp"

#include <algorithm>

#include "server/platform/platform_repo.hpp"
#include "util/crypto.hpp"
#include "util/time.hpp"

namespace gpunex::server {

namespace {

//! At most this much of a delivery error is kept with the mail.
constexpr std::size_t kMaxErrorChars = 1000;

//! A mail's secret in the outbox: this prefix, then util::seal's text under kOutboxContext.
constexpr std::string_view kSealedPrefix = "sealed:";
constexpr std::string_view kOutboxContext = "gpunex outbox secret";

std::string with_secret(std::string body, const std::string& secret) {
  const std::string ph = kSecretPlaceholder;
  for (auto pos = body.find(ph); pos != std::string::npos; pos = body.find(ph, pos + secret.size())) {
    body.replace(pos, ph.size(), secret);
  }
  return body;
}

nlohmann::json notification_json(const platform_repo::NotificationRow& n) {
  return {{"id", n.id},
          {"kind", n.kind},
          {"title", n.title},
          {"body", n.body},
          {"link", n.link ? nlohmann::json(*n.link) : nlohmann::json(nullptr)},
          {"created_at", util::rfc3339(n.created_at_ms)},
          {"read_at", util::rfc3339_or_null(n.read_at_ms)}};
}

}  // namespace

std::string enqueue_mail(store::Tx& tx, const OutgoingMail& mail, std::int64_t now_ms) {
  std::string id = util::new_id("mail");
  std::optional<std::string> sealed;
  if (mail.secret) {
    sealed = std::string(kSealedPrefix) + util::seal(kOutboxContext, mail.secret->server_secret, mail.secret->value);
  }
  platform_repo::insert_mail(tx, {id, mail.kind, mail.to, mail.subject, mail.body, sealed, now_ms, 0});
  return id;
}

std::vector<DueMail> due_mails(store::Tx& tx, std::int64_t now_ms, int limit, const std::string& server_secret) {
  std::vector<DueMail> out;
  for (auto& r : platform_repo::find_due_mails(tx, now_ms, limit)) {
    DueMail m{r.id, r.to, r.subject, std::move(r.body), r.created_at_ms, r.attempts, {}};
    if (r.secret) {
      // Sealed by enqueue_mail; a mail queued by an older server holds its secret as it is.
      std::optional<std::string> secret = *r.secret;
      if (r.secret->starts_with(kSealedPrefix)) {
        secret = util::unseal(kOutboxContext, server_secret, std::string_view(*r.secret).substr(kSealedPrefix.size()));
      }
      if (secret) {
        m.body = with_secret(std::move(m.body), *secret);
      } else {
        m.unsendable = "its secret does not unseal with this server's server_secret (changed since it was queued)";
      }
    }
    out.push_back(std::move(m));
  }
  return out;
}

void mark_mail_sent(store::Tx& tx, const std::string& id, std::int64_t now_ms) {
  platform_repo::set_mail_sent(tx, id, now_ms);
}

void mark_mail_failed(store::Tx& tx, const std::string& id, const std::string& error, std::int64_t next_attempt_ms) {
  platform_repo::set_mail_failed(tx, id, error.substr(0, kMaxErrorChars), next_attempt_ms);
}

void give_up_mail(store::Tx& tx, const std::string& id, const std::string& error) {
  platform_repo::set_mail_given_up(tx, id, ("gave up: " + error).substr(0, kMaxErrorChars));
}

std::int64_t mail_retry_delay_ms(std::int64_t attempts, std::int64_t base_ms) {
  constexpr std::int64_t kMax = 3'600'000;
  std::int64_t d = std::max<std::int64_t>(base_ms, 1);
  for (std::int64_t i = 1; i < attempts && d < kMax; ++i) d *= 2;
  return std::min(d, kMax);
}

bool announce(store::Tx& tx, const std::string& user_id, const mail::Announcement& a,
              const std::optional<MailSecret>& secret, std::int64_t now_ms) {
  const auto to = platform_repo::verified_email(tx, user_id);
  if (to) enqueue_mail(tx, OutgoingMail{a.mail.kind, *to, a.mail.subject, a.mail.body, secret}, now_ms);
  notify_user(tx, user_id, a.notice.kind, a.notice.title, a.notice.body, a.notice.link, now_ms);
  return to.has_value();
}

void notify_user(store::Tx& tx, const std::string& user_id, const std::string& kind, const std::string& title,
                 const std::string& body, const std::string& link, std::int64_t now_ms) {
  platform_repo::insert_notification(tx, {util::new_id("ntf"), user_id, kind, title, body, link, now_ms, std::nullopt});
}

core::Result<nlohmann::json> list_notifications(store::Tx& tx, const std::string& user_id, const PageParams& page) {
  // Keyset: after the cursor's (created_at, id), in the same newest-first order; one row more tells a next page.
  std::optional<platform_repo::NotificationCursor> after;
  if (page.after) {
    auto c = platform_repo::find_notification(tx, user_id, *page.after);
    if (!c) {
      return core::Error::make(core::ErrorCode::invalid_field, "cursor does not name an item of this list", "cursor");
    }
    after = platform_repo::NotificationCursor{c->created_at_ms, *page.after};
  }
  nlohmann::json items = nlohmann::json::array();
  nlohmann::json next = nullptr;
  for (const auto& n : platform_repo::notifications_page(tx, user_id, after, page.limit + 1)) {
    if (items.size() == page.limit) {
      next = items.back()["id"];
      break;
    }
    items.push_back(notification_json(n));
  }
  const auto unread = platform_repo::count_unread_notifications(tx, user_id);
  return nlohmann::json{{"items", items}, {"unread", unread}, {"next_cursor", next}};
}

bool mark_notification_read(store::Tx& tx, const std::string& user_id, const std::string& id, std::int64_t now_ms) {
  auto n = platform_repo::find_notification(tx, user_id, id);
  if (!n) return false;
  if (!n->read_at_ms) platform_repo::set_notification_read(tx, id, now_ms);
  return true;
}

}  // namespace gpunex::server
