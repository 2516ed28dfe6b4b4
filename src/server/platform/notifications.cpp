#include "server/platform/notifications.hpp"

#include <algorithm>
#include <limits>

#include "util/crypto.hpp"
#include "util/time.hpp"

namespace gpunex::server {

std::string enqueue_mail(store::Tx& tx, const OutgoingMail& mail, std::int64_t now_ms) {
  std::string id = util::new_id("mail");
  store::Value secret = mail.secret ? store::Value(*mail.secret) : store::Value(nullptr);
  tx.exec(
      "INSERT INTO outbox (id, kind, to_addr, subject, body, secret, created_at, attempts, next_attempt_at) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?)",
      {id, mail.kind, mail.to, mail.subject, mail.body, secret, now_ms, now_ms});
  return id;
}

std::vector<DueMail> due_mails(store::Tx& tx, std::int64_t now_ms, int limit) {
  std::vector<DueMail> out;
  for (const auto& r : tx.query("SELECT id, to_addr, subject, body, secret, created_at, attempts FROM outbox "
                                "WHERE sent_at IS NULL AND next_attempt_at <= ? ORDER BY next_attempt_at, id LIMIT ?",
                                {now_ms, std::int64_t{limit}})) {
    DueMail m{r.str(0), r.str(1), r.str(2), r.str(3), r.i64(5), r.i64(6)};
    if (auto secret = r.opt_str(4)) {
      const std::string ph = kSecretPlaceholder;
      for (auto pos = m.body.find(ph); pos != std::string::npos; pos = m.body.find(ph, pos + secret->size())) {
        m.body.replace(pos, ph.size(), *secret);
      }
    }
    out.push_back(std::move(m));
  }
  return out;
}

void mark_mail_sent(store::Tx& tx, const std::string& id, std::int64_t now_ms) {
  tx.exec("UPDATE outbox SET sent_at = ?, secret = NULL, attempts = attempts + 1, last_error = NULL WHERE id = ?",
          {now_ms, id});
}

void mark_mail_failed(store::Tx& tx, const std::string& id, const std::string& error, std::int64_t next_attempt_ms) {
  tx.exec("UPDATE outbox SET attempts = attempts + 1, last_error = ?, next_attempt_at = ? WHERE id = ?",
          {error.substr(0, 1000), next_attempt_ms, id});
}

void give_up_mail(store::Tx& tx, const std::string& id, const std::string& error) {
  tx.exec("UPDATE outbox SET attempts = attempts + 1, last_error = ?, next_attempt_at = ?, secret = NULL WHERE id = ?",
          {("gave up: " + error).substr(0, 1000), std::numeric_limits<std::int64_t>::max(), id});
}

std::int64_t mail_retry_delay_ms(std::int64_t attempts, std::int64_t base_ms) {
  constexpr std::int64_t kMax = 3'600'000;
  std::int64_t d = std::max<std::int64_t>(base_ms, 1);
  for (std::int64_t i = 1; i < attempts && d < kMax; ++i) d *= 2;
  return std::min(d, kMax);
}

void notify_user(store::Tx& tx, const std::string& user_id, const std::string& kind, const std::string& title,
                 const std::string& body, const std::string& link, std::int64_t now_ms) {
  tx.exec("INSERT INTO notifications (id, user_id, kind, title, body, link, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
          {util::new_id("ntf"), user_id, kind, title, body, link, now_ms});
}

core::Result<nlohmann::json> list_notifications(store::Tx& tx, const std::string& user_id, const PageParams& page) {
  // Keyset: after the cursor's (created_at, id), in the same newest-first order; one row more tells a next page.
  std::string sql = "SELECT id, kind, title, body, link, created_at, read_at FROM notifications WHERE user_id = ? ";
  store::Params args{user_id};
  if (page.after) {
    auto c = tx.query_one("SELECT created_at FROM notifications WHERE user_id = ? AND id = ?", {user_id, *page.after});
    if (!c) {
      return core::Error::make(core::ErrorCode::invalid_field, "cursor does not name an item of this list", "cursor");
    }
    sql += "AND (created_at < ? OR (created_at = ? AND id < ?)) ";
    args.insert(args.end(), {c->i64(0), c->i64(0), *page.after});
  }
  sql += "ORDER BY created_at DESC, id DESC LIMIT ?";
  args.emplace_back(static_cast<std::int64_t>(page.limit + 1));
  nlohmann::json items = nlohmann::json::array();
  nlohmann::json next = nullptr;
  for (const auto& r : tx.query(sql, args)) {
    if (items.size() == page.limit) {
      next = items.back()["id"];
      break;
    }
    auto read = r.opt_i64(6);
    items.push_back({{"id", r.str(0)},
                     {"kind", r.str(1)},
                     {"title", r.str(2)},
                     {"body", r.str(3)},
                     {"link", r.opt_str(4) ? nlohmann::json(*r.opt_str(4)) : nlohmann::json(nullptr)},
                     {"created_at", util::rfc3339(r.i64(5))},
                     {"read_at", read ? nlohmann::json(util::rfc3339(*read)) : nlohmann::json(nullptr)}});
  }
  auto unread = tx.query_one("SELECT COUNT(*) FROM notifications WHERE user_id = ? AND read_at IS NULL", {user_id});
  return nlohmann::json{{"items", items}, {"unread", unread ? unread->i64(0) : 0}, {"next_cursor", next}};
}

bool mark_notification_read(store::Tx& tx, const std::string& user_id, const std::string& id, std::int64_t now_ms) {
  auto row = tx.query_one("SELECT read_at FROM notifications WHERE id = ? AND user_id = ?", {id, user_id});
  if (!row) return false;
  if (row->is_null(0)) tx.exec("UPDATE notifications SET read_at = ? WHERE id = ?", {now_ms, id});
  return true;
}

}  // namespace gpunex::server
