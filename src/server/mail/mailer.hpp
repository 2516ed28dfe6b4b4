#pragma once
// Outgoing mail behind one narrow interface (STYLE §2): SMTP through libcurl,
// or a file drop of .eml files for development (`make run`) when no SMTP
// server is configured. The mail worker (workers/mail_worker.hpp) is the only caller.

#include <cstdint>
#include <memory>
#include <string>

#include "core/result.hpp"

namespace gpunex::server::mail {

//! One plain-text mail.
struct Message {
  std::string id;  // outbox id; also the left part of Message-ID
  std::string from;  // "Name <addr>" or "addr"
  std::string to;    // one address
  std::string subject;
  std::string body;  // UTF-8 text, '\n' line ends
  std::int64_t date_ms = 0;
};

//! Sends a message; an error means "not accepted, try again later".
class Mailer {
 public:
  virtual ~Mailer() = default;
  virtual core::Status send(const Message& m) = 0;
  //! A description for logs ("smtp://127.0.0.1:2525", "files in var/mail").
  virtual std::string describe() const = 0;
};

//! The bare address of "Name <addr>" or "addr".
std::string address_of(const std::string& mailbox);
//! The RFC 5322 text of a message: Date, Message-ID, From, To, Subject, MIME headers, CRLF line ends.
std::string format_rfc5322(const Message& m);

//! SMTP (smtp:// or smtps://) through libcurl: MAIL FROM, RCPT TO, DATA. With `require_tls`, an smtp://
//! server that does not take STARTTLS gets nothing (the mail waits in the outbox).
std::unique_ptr<Mailer> make_smtp_mailer(std::string url, bool require_tls = false);
//! Writes each message atomically as <dir>/<date>-<id>.eml.
std::unique_ptr<Mailer> make_file_drop_mailer(std::string dir);

}  // namespace gpunex::server::mail
