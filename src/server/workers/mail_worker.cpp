#include "server/workers/mail_worker.hpp"

#include "server/platform/notifications.hpp"
#include "util/log.hpp"

namespace gpunex::server::workers {

MailRoundResult deliver_due_mail(store::Store& store, mail::Mailer& mailer, const std::string& from,
                                 std::int64_t retry_base_ms, std::int64_t max_attempts, const util::Clock& clock,
                                 const std::string& server_secret, int batch) {
  MailRoundResult result;
  auto due = store.transact([&](store::Tx& tx) { return due_mails(tx, clock.now_ms(), batch, server_secret); },
                            store::TxMode::read);
  for (const auto& m : due) {
    if (!m.unsendable.empty()) {
      store.transact([&](store::Tx& tx) { give_up_mail(tx, m.id, m.unsendable); });
      util::log_event("error", "mail given up", {{"mail_id", m.id}, {"error", m.unsendable}});
      ++result.failed;
      continue;
    }
    mail::Message msg{m.id, from, m.to, m.subject, m.body, clock.now_ms()};
    auto sent = mailer.send(msg);
    const auto now = clock.now_ms();
    if (sent) {
      store.transact([&](store::Tx& tx) { mark_mail_sent(tx, m.id, now); });
      util::log_event("info", "mail sent", {{"mail_id", m.id}, {"attempt", m.attempts + 1}});
      ++result.sent;
    } else if (m.attempts + 1 >= max_attempts) {
      store.transact([&](store::Tx& tx) { give_up_mail(tx, m.id, sent.error().message); });
      util::log_event("error", "mail given up",
                      {{"mail_id", m.id}, {"attempts", m.attempts + 1}, {"error", sent.error().message},
                       {"mailer", mailer.describe()}});
      ++result.failed;
      break;
    } else {
      const auto delay = mail_retry_delay_ms(m.attempts + 1, retry_base_ms);
      store.transact([&](store::Tx& tx) { mark_mail_failed(tx, m.id, sent.error().message, now + delay); });
      util::log_event("warn", "mail not sent; will retry",
                      {{"mail_id", m.id}, {"attempt", m.attempts + 1}, {"retry_in_ms", delay},
                       {"error", sent.error().message}, {"mailer", mailer.describe()}});
      ++result.failed;
      break;  // the server is likely down for every mail; the rest stay due for the next round
    }
  }
  return result;
}

}  // namespace gpunex::server::workers
