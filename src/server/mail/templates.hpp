#pragma once
// Every text GPUnex tells a user, in one place: the subject and body of each
// mail and the title and body of the in-app notification sent with it. Pure
// functions from typed facts to text (no store, no clock), so each one is
// tested on its own. An area that tells users something new adds its facts
// struct and one function here.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/application.hpp"
#include "core/benchmark.hpp"

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

//! What reviewers and admins are told of an application waiting for them: `review_link` is its page in
//! the review queue; `resubmitted` after the applicant answered a request for more information.
Announcement application_to_review(const ApplicationFacts& app, bool resubmitted, const std::string& review_link);

//! Told to an account whose password was changed from its own session: if it was not its owner, the mail
//! says what to do. `link` is the account page.
Announcement password_changed(const std::string& email, const std::string& link);

//! "Wednesday, 02 December 2026": a day as a person reads it (UTC).
std::string day_text(std::int64_t ms);

//! Received and waiting for review, expected by `expected_review_ms`.
Announcement application_submitted(const ApplicationFacts& app, std::int64_t expected_review_ms);
//! Approved as `tier`, with the install command for `base_url`. With `with_key` the body carries
//! kSecretPlaceholder where the API key goes; without, it carries no key and sends the applicant to the
//! one-time reveal on the application's page. An empty `note` is left out.
Announcement application_approved(const ApplicationFacts& app, core::Tier tier, const std::string& note,
                                  const std::string& base_url, bool with_key);
//! The reviewer asks for more: `note` says what.
Announcement application_needs_info(const ApplicationFacts& app, const std::string& note);
//! Not approved: `note` says why.
Announcement application_rejected(const ApplicationFacts& app, const std::string& note);

//! What every mail about one of a provider's GPUs names.
struct GpuFacts {
  std::string name;  // as gpu_display_name writes it
  std::string link;  // the machine's benchmarks in the dashboard
};

//! How a text names a GPU: "GPU 0 (H100-SXM) on host-a"; `model_or_name` is the catalog id, else the NVML name.
std::string gpu_display_name(std::int64_t index, const std::string& model_or_name, const std::string& hostname);
//! A figure as the GPU texts print it: whole above 100, else two decimals.
std::string gpu_figure(double v);

//! A benchmark run delisted the GPU: every failed check with measured vs expected and what to do.
//! `failures` is not empty.
Announcement gpu_delisted(const GpuFacts& gpu, const std::vector<core::bench::Finding>& failures);
//! The GPU passed after being delisted, with its quality ratio when it has one.
Announcement gpu_relisted(const GpuFacts& gpu, std::optional<double> quality_ratio);

//! A provider's payout destination changed: what it is now, and when it takes effect (the cool-down
//! lets the provider stop a change they did not make).
Announcement payout_destination_changed(const std::string& method_text, const std::string& destination_text,
                                        std::int64_t effective_at_ms, const std::string& link);

//! A payout failed for good or came back from the bank: the amount is in the provider's earnings again.
Announcement payout_returned(const std::string& amount_text, const std::string& method_text,
                             const std::string& reason, const std::string& link);

//! What a mail about a machine's reliability names.
struct ReliabilityFacts {
  std::string machine;  // "host-a (mch_…)"
  double score = 0;
  double alert_below = 0;
  struct Reason {
    std::string text;    // the event in plain words
    std::string advice;  // what to do about it
  };
  std::vector<Reason> reasons;  // the events that cost the most, most first
  int recovers_in_days = 0;     // if nothing else goes wrong
  std::string link;             // the machine's Performance tab
};

//! The machine's reliability score fell below the alert level: why, what to do, and how long until it recovers.
Announcement reliability_low(const ReliabilityFacts& facts);

//! Confirms that `email` is the account's: the link (to the dashboard, the token in kSecretPlaceholder)
//! expires at `expires_at_ms`. `changing` says the account asked to move to this address.
MailText email_confirmation(const std::string& full_name, const std::string& email, const std::string& link,
                            std::int64_t expires_at_ms, bool changing);
//! A link that sets a new password (the token in kSecretPlaceholder), asked for with `email`; it expires
//! at `expires_at_ms`.
MailText password_reset(const std::string& full_name, const std::string& email, const std::string& link,
                        std::int64_t expires_at_ms);
//! Sent to the old address when the account's address moved to `new_email`.
Announcement email_changed(const std::string& old_email, const std::string& new_email, const std::string& link);

//! What the customer is told of a rental that ended without their asking.
struct RentalEndFacts {
  std::string rental_id;
  std::string gpus_text;  // "1 × L40S"
  std::string why;        // core::rental::end_text: "Stopped by the provider"
  std::string cost_text;  // "0.421337"
  bool charged = true;    // false: it never ran (start_failed)
  std::string link;       // the rental's page
};
Announcement rental_ended(const RentalEndFacts& facts);

//! What a customer is told when the provider schedules maintenance that will stop their running rental.
struct RentalMaintenanceFacts {
  std::string rental_id;
  std::string gpus_text;     // "1 × L40S"
  std::string stop_at_text;  // "2026-12-08T10:00:00Z"
  std::string link;          // the rental's page
};
Announcement rental_maintenance(const RentalMaintenanceFacts& facts);
//! The maintenance a customer was told of will not stop their rental after all (`stop_at_text`: when it
//! would have).
Announcement rental_maintenance_called_off(const RentalMaintenanceFacts& facts);

//! What a provider is told when machines of theirs stop sending heartbeats within their availability: one
//! announcement for those found in one sweep (a site's outage is one mail, not one a machine).
struct MachineOfflineFacts {
  struct Machine {
    std::string name;            // "host-a (mch_…)"
    std::string last_seen_text;  // "2026-12-08T10:00:00Z"
    std::string link;            // the machine's page
  };
  std::vector<Machine> machines;  // at least one
  int missed_heartbeats = 0;
  int rentals_end_after_minutes = 0;  // a running rental's agent is lost after this long
  std::string machines_link;          // the Machines page (for several)
};
Announcement machine_offline(const MachineOfflineFacts& facts);

//! What a customer is told when their running rentals will use their balance up within the hour.
struct BalanceLowFacts {
  std::int64_t minutes_left = 0;     // core::ledger::minutes_left
  std::string available_text;        // "1.000000"
  std::string per_hour_text;         // "1.500000"
  std::string payment_instructions;  // the operator's; empty: none written
  std::string link;                  // the Balance page
};
Announcement balance_low(const BalanceLowFacts& facts);

}  // namespace gpunex::server::mail
