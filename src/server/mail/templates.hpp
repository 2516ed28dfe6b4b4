#pragma once
// Every text GPUnex tells a user, in one place: the subject and body of each
// mail and the title and body of the in-app notification sent with it. Pure
// functions from typed facts to text (no store, no clock), so each one is
// tested on its own. An area that tells users something new adds its facts
// struct and one function here.

#include <cstdint>
#include <string>

#include "core/application.hpp"

namespace gpunex::server::mail {

//! Stands in the body for a secret (an API key) kept apart in the outbox until the mail is sent.
inline constexpr const char* kSecretPlaceholder = "{{secret}}";

//! A mail's text; `kind` names the event in the outbox ("application_submitted", ...).
struct MailText {
  std::string kind;
  std::string subject;
  std::string body;
};

//! An in-app notification's text.
struct NoticeText {
  std::string kind;
  std::string title;
  std::string body;
  std::string link;
};

//! One event told to a user both ways: by mail and in the dashboard.
struct Announcement {
  MailText mail;
  NoticeText notice;
};

//! What every mail about a provider application names.
struct ApplicationFacts {
  std::string id;
  std::string full_name;
  std::string gpus_text;  // the declared GPUs, as core::declared_gpus_text writes them
  std::string link;       // the application's page in the dashboard
};

//! "Wednesday, 02 December 2026": a day as a person reads it (UTC).
std::string day_text(std::int64_t ms);

//! Received and waiting for review, expected by `expected_review_ms`.
Announcement application_submitted(const ApplicationFacts& app, std::int64_t expected_review_ms);
//! Approved as `tier`; the body carries kSecretPlaceholder where the API key goes, and the install
//! command for `base_url`. An empty `note` is left out.
Announcement application_approved(const ApplicationFacts& app, core::Tier tier, const std::string& note,
                                  const std::string& base_url);
//! The reviewer asks for more: `note` says what.
Announcement application_needs_info(const ApplicationFacts& app, const std::string& note);
//! Not approved: `note` says why.
Announcement application_rejected(const ApplicationFacts& app, const std::string& note);

}  // namespace gpunex::server::mail
