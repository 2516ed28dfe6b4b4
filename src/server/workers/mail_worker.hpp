#pragma once
// The mail worker's round: deliver every due outbox mail through a Mailer,
// marking each sent only after the server accepted it, else scheduling a
// retry with exponential backoff, until max_attempts: then the mail is given up
// and any secret it carries erased. Secrets in mails never reach the logs.

#include <cstdint>
#include <string>

#include "server/mail/mailer.hpp"
#include "store/store.hpp"
#include "util/clock.hpp"

namespace gpunex::server::workers {

struct MailRoundResult {
  int sent = 0;
  int failed = 0;
};

//! One round over the due mails (at most `batch`); their secrets unsealed with `server_secret`, and a mail
//! whose secret does not unseal given up.
MailRoundResult deliver_due_mail(store::Store& store, mail::Mailer& mailer, const std::string& from,
                                 std::int64_t retry_base_ms, std::int64_t max_attempts, const util::Clock& clock,
                                 const std::string& server_secret, int batch = 50);

}  // namespace gpunex::server::workers
