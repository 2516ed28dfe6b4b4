#include "server/mail/templates.hpp"

#include <chrono>
#include <cstdio>

#include <date/date.h>

#include "core/api_key.hpp"
#include "core/rfc3339.hpp"
#include "util/time.hpp"

namespace gpunex::server::mail {

namespace {

std::string greeting(const ApplicationFacts& app) { return "Hello " + app.full_name + ",\n\n"; }

constexpr const char* kSignature = "\n\n-- GPUnex\n";

std::string tier_title(core::Tier tier) { return tier == core::Tier::enterprise ? "Enterprise" : "Community"; }

//! "a" or "an" before a word, by its first letter.
std::string article_for(const std::string& word) { return word.find_first_of("AEIOU") == 0 ? "an " : "a "; }

//! A GPU's event told the same way in the dashboard and, with its link, by mail.
Announcement gpu_announcement(const std::string& kind, const GpuFacts& gpu, const std::string& title,
                              const std::string& body) {
  MailText mail{kind, "GPUnex: " + title, body + "\n\n" + gpu.link + "\n"};
  NoticeText notice{kind, title, body, gpu.link};
  return {std::move(mail), std::move(notice)};
}

}  // namespace

std::string day_text(std::int64_t ms) {
  using namespace std::chrono;
  return date::format("%A, %d %B %Y", date::floor<days>(sys_time<milliseconds>{milliseconds{ms}}));
}

Announcement application_submitted(const ApplicationFacts& app, std::int64_t expected_review_ms) {
  const std::string kind = "application_submitted";
  MailText mail{kind, "GPUnex: we received your provider application",
                greeting(app) + "thank you for applying to provide GPUs on GPUnex. Your application " + app.id +
                    " (GPUs: " + app.gpus_text + ") is now waiting for review.\n\n" +
                    "Reviews take 1 to 3 business days; expect our answer by " + day_text(expected_review_ms) + " (" +
                    util::rfc3339(expected_review_ms) + ").\n\n" + "Follow it here: " + app.link + kSignature};
  NoticeText notice{kind, "Application submitted", "Expect a review by " + day_text(expected_review_ms) + ".",
                    app.link};
  return {std::move(mail), std::move(notice)};
}

Announcement application_to_review(const ApplicationFacts& app, bool resubmitted, const std::string& review_link) {
  const std::string kind = "application_to_review";
  const std::string title =
      (resubmitted ? "Application resubmitted by " : "New provider application from ") + app.full_name;
  const std::string body = "Application " + app.id + " (GPUs: " + app.gpus_text + ") is waiting for review.";
  MailText mail{kind, "GPUnex: " + title, body + "\n\nReview it: " + review_link + kSignature};
  NoticeText notice{kind, title, body, review_link};
  return {std::move(mail), std::move(notice)};
}

Announcement password_changed(const std::string& email, const std::string& link) {
  const std::string kind = "password_changed";
  const std::string body = "The password of your GPUnex account " + email +
                           " was changed, and every other session of the account was signed out.";
  MailText mail{kind, "GPUnex: your password was changed",
                body +
                    "\n\nIf you did not change it, someone else knows your password or reads your mail: set a "
                    "new one at once (\"Forgot your password?\" on the sign-in page mails a link to this address), "
                    "and check your API keys and payout settings.\n\nYour account: " +
                    link + kSignature};
  NoticeText notice{kind, "Password changed", body, link};
  return {std::move(mail), std::move(notice)};
}

Announcement application_approved(const ApplicationFacts& app, core::Tier tier, const std::string& note,
                                  const std::string& base_url, bool with_key) {
  const std::string kind = "application_approved";
  const std::string title = tier_title(tier);
  const std::string install = "curl -fsSL " + base_url + "/agent/install.sh | bash";
  // Without encrypted mail the key stays off the wire: the applicant signs in and reveals it once.
  const std::string key_text =
      with_key ? "\nYour provider API key (keep it secret; it is shown only here and once in the dashboard):\n\n"
                 "    " + std::string(kSecretPlaceholder) + "\n\n"
               : "\nYour provider API key waits for you, shown once: sign in and open your application within " +
                     std::to_string(core::kApiKeyRevealDays) + " days:\n\n    " + app.link + "\n\n";
  MailText mail{kind, "GPUnex: you are approved as " + article_for(title) + title + " provider",
                greeting(app) + "your provider application " + app.id + " (GPUs: " + app.gpus_text +
                    ") is approved. Your tier: " + title + ".\n" +
                    (note.empty() ? "" : "\nNote from the reviewer: " + note + "\n") + key_text +
                    "Install the GPUnex agent on each GPU host with:\n\n"
                    "    " + install + "\n\n"
                    "The installer asks for the key (or reads GPUNEX_API_KEY). You can rotate or revoke keys in the "
                    "dashboard at any time." + kSignature};
  NoticeText notice{kind, "Approved as " + title + " provider", "Install the agent: " + install, app.link};
  return {std::move(mail), std::move(notice)};
}

Announcement application_needs_info(const ApplicationFacts& app, const std::string& note) {
  const std::string kind = "application_needs_info";
  MailText mail{kind, "GPUnex: we need more information about your application",
                greeting(app) + "the reviewer of your provider application " + app.id +
                    " needs more information:\n\n    " + note +
                    "\n\nPlease edit the application and submit it again here: " + app.link + kSignature};
  NoticeText notice{kind, "More information needed", note, app.link};
  return {std::move(mail), std::move(notice)};
}

Announcement application_rejected(const ApplicationFacts& app, const std::string& note) {
  const std::string kind = "application_rejected";
  MailText mail{kind, "GPUnex: your provider application",
                greeting(app) + "we are sorry: your provider application " + app.id +
                    " was not approved.\n\nThe reviewer's note:\n\n    " + note + "\n\nDetails: " + app.link +
                    kSignature};
  NoticeText notice{kind, "Application not approved", note, app.link};
  return {std::move(mail), std::move(notice)};
}

std::string gpu_figure(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, v >= 100 ? "%.0f" : "%.2f", v);
  return buf;
}

std::string gpu_display_name(std::int64_t index, const std::string& model_or_name, const std::string& hostname) {
  return "GPU " + std::to_string(index) + " (" + model_or_name + ") on " + hostname;
}

Announcement gpu_delisted(const GpuFacts& gpu, const std::vector<core::bench::Finding>& failures) {
  const auto fmt = gpu_figure;
  std::string body = gpu.name + " is delisted: customers cannot rent it until a benchmark run passes.\n";
  for (const auto& f : failures) {
    body += "\n- " + f.label + ": measured " + fmt(f.measured) + " " + f.unit + ", expected " + fmt(f.expected) +
            (f.expected > 0 ? " (ratio " + fmt(f.ratio()) + ")" : "") + ".\n  What to do: " + f.recommendation;
  }
  body += "\n\nAfter fixing it, re-run the benchmarks from the Benchmarks tab.";
  return gpu_announcement("gpu_delisted", gpu, gpu.name + " delisted: " + failures.front().label, body);
}

Announcement gpu_relisted(const GpuFacts& gpu, std::optional<double> quality_ratio) {
  return gpu_announcement("gpu_relisted", gpu, gpu.name + " relisted",
                          gpu.name + " passed its benchmarks" +
                              (quality_ratio ? " (quality ratio " + gpu_figure(*quality_ratio) + ")" : std::string()) +
                              " and is listed again.");
}

Announcement payout_destination_changed(const std::string& method_text, const std::string& destination_text,
                                        std::int64_t effective_at_ms, const std::string& link) {
  const std::string when = day_text(effective_at_ms) + " at " + core::format_rfc3339_ms(effective_at_ms).substr(11, 5) +
                           " UTC";
  Announcement a;
  a.mail.kind = "payout_destination_changed";
  a.mail.subject = "Your payout destination was changed";
  a.mail.body = "Your GPUnex payouts will go to a new destination: " + method_text + " " + destination_text +
                ".\n\nIt takes effect on " + when +
                ". Until then payouts go where they went before.\n\nIf you did not make this change, change your "
                "password and contact support before then: " +
                link + "\n";
  a.notice = {"payout_destination_changed", "Payout destination changed",
              "Payouts go to " + method_text + " " + destination_text + " from " + when + ".", link};
  return a;
}

Announcement payout_returned(const std::string& amount_text, const std::string& method_text,
                             const std::string& reason, const std::string& link) {
  Announcement a;
  a.mail.kind = "payout_returned";
  a.mail.subject = "Your payout of " + amount_text + " USDC was returned";
  a.mail.body = "Your payout of " + amount_text + " USDC by " + method_text + " did not arrive: " + reason +
                ".\n\nThe amount is back in your GPUnex earnings and goes out with your next payout. Check your "
                "payout settings: " +
                link + "\n";
  a.notice = {"payout_returned", "Payout returned",
              amount_text + " USDC by " + method_text + " came back (" + reason +
                  "); it is in your earnings again. Check your payout method before the next payout.",
              link};
  return a;
}

Announcement rental_ended(const RentalEndFacts& f) {
  const std::string title = "Rental " + f.rental_id + " ended: " + f.why;
  const std::string cost = f.charged ? "It cost " + f.cost_text + " USDC in all." : "It was not charged.";
  Announcement a;
  a.mail = {"rental_ended", "GPUnex: " + title,
            "Your rental " + f.rental_id + " (" + f.gpus_text + ") has ended: " + f.why + ". " + cost +
                "\n\nIts logs stay on its page, and the marketplace has other GPUs to rent: " + f.link + "\n"};
  a.notice = {"rental_ended", title, f.gpus_text + ". " + cost, f.link};
  return a;
}

Announcement rental_maintenance_called_off(const RentalMaintenanceFacts& f) {
  const std::string title = "Rental " + f.rental_id + " runs on: the provider called off its maintenance";
  const std::string facts = "The maintenance that was to stop your rental " + f.rental_id + " (" + f.gpus_text +
                            ") at " + f.stop_at_text + " is called off: the rental runs on as you rented it.";
  Announcement a;
  a.mail = {"rental_maintenance_called_off", "GPUnex: " + title, facts + "\n\nYour rental: " + f.link + "\n"};
  a.notice = {"rental_maintenance_called_off", title, facts, f.link};
  return a;
}

Announcement rental_maintenance(const RentalMaintenanceFacts& f) {
  const std::string title = "Rental " + f.rental_id + " stops at " + f.stop_at_text + ": the provider's maintenance";
  const std::string facts = "The provider of your rental " + f.rental_id + " (" + f.gpus_text +
                            ") has scheduled maintenance from " + f.stop_at_text +
                            ": the rental is stopped then, and billed up to that moment. Save your work before then.";
  Announcement a;
  a.mail = {"rental_maintenance", "GPUnex: " + title, facts + "\n\nYour rental: " + f.link + "\n"};
  a.notice = {"rental_maintenance", title, facts, f.link};
  return a;
}

Announcement balance_low(const BalanceLowFacts& f) {
  const std::string when = f.minutes_left <= 0   ? "now"
                           : f.minutes_left == 1 ? "in about a minute"
                                                 : "in about " + std::to_string(f.minutes_left) + " minutes";
  const std::string title = "Your balance runs out " + when;
  const std::string facts = f.available_text + " USDC is available and your running rentals use " + f.per_hour_text +
                            " USDC an hour. When it is used up they are stopped.";
  const std::string how = f.payment_instructions.empty()
                              ? "Ask the operator to add credit, or stop what you no longer need."
                              : "To add credit: " + f.payment_instructions;
  Announcement a;
  a.mail = {"balance_low", "GPUnex: " + title, facts + "\n\n" + how + "\n\nYour balance: " + f.link + "\n"};
  a.notice = {"balance_low", title, facts + " " + how, f.link};
  return a;
}

Announcement reliability_low(const ReliabilityFacts& f) {
  char score[32], level[32];
  std::snprintf(score, sizeof score, "%.1f", f.score);
  std::snprintf(level, sizeof level, "%.0f", f.alert_below);
  const std::string title = "Reliability of " + f.machine + " fell to " + score;
  std::string body = "The reliability score of " + f.machine + " is " + score + ", below " + level +
                     ". The marketplace ranks its offers lower, and customers filtering on reliability may not see "
                     "them.\n";
  if (!f.reasons.empty()) body += "\nWhat lowered it:\n";
  for (const auto& r : f.reasons) body += "\n- " + r.text + ".\n  What to do: " + r.advice;
  body += "\n\nIf nothing else goes wrong, the score recovers in about " + std::to_string(f.recovers_in_days) +
          (f.recovers_in_days == 1 ? " day" : " days") + ": recent days weigh most, so every good day helps.";
  MailText mail{"reliability_low", "GPUnex: " + title, body + "\n\n" + f.link + "\n" + kSignature};
  NoticeText notice{"reliability_low", title,
                    f.reasons.empty() ? "See the Performance tab for what lowered it." : f.reasons.front().text + ".",
                    f.link};
  return {std::move(mail), std::move(notice)};
}

Announcement machine_offline(const MachineOfflineFacts& f) {
  const bool one = f.machines.size() == 1;
  const auto& first = f.machines.front();
  const std::string title =
      one ? first.name + " is offline" : std::to_string(f.machines.size()) + " machines are offline";
  std::string said;
  if (one) {
    said = "GPUnex has not heard from the agent on " + first.name + " since " + first.last_seen_text + " (" +
           std::to_string(f.missed_heartbeats) + " heartbeats missed).";
  } else {
    said = "GPUnex has not heard from the agents on these machines (" + std::to_string(f.missed_heartbeats) +
           " heartbeats missed):";
    for (const auto& m : f.machines) said += "\n- " + m.name + ", last heard " + m.last_seen_text + ": " + m.link;
  }
  const std::string them = one ? "it" : "each";
  const std::string body =
      said + "\n\nUntil " + (one ? "it is" : "they are") +
      " back, their GPUs are not offered to customers, and the time counts against their reliability score.\n\n"
      "If a customer is renting one, the rental ends when its agent has not been heard for " +
      std::to_string(f.rentals_end_after_minutes) + " minutes, and its customer is told.\n\nWhat to check: that " +
      them +
      " is on and online, and the agent's service (systemctl status gpunex-agent; journalctl -u gpunex-agent). "
      "Nothing needs doing when " +
      (one ? "it comes" : "they come") + " back: the agent reconnects by itself.";
  const std::string link = one ? first.link : f.machines_link;
  MailText mail{"machine_offline", "GPUnex: " + title, body + "\n\n" + link + kSignature};
  NoticeText notice{"machine_offline", title, said, link};
  return {std::move(mail), std::move(notice)};
}

MailText email_confirmation(const std::string& full_name, const std::string& email, const std::string& link,
                            std::int64_t expires_at_ms, bool changing) {
  const std::string until = day_text(expires_at_ms) + " at " + core::format_rfc3339_ms(expires_at_ms).substr(11, 5) +
                            " UTC";
  MailText m;
  m.kind = "email_confirmation";
  m.subject = "Confirm your e-mail address for GPUnex";
  m.body = "Hello " + full_name + ",\n\n" +
           (changing ? "You asked to change the e-mail address of your GPUnex account to " + email + "."
                     : "You signed up for GPUnex with " + email + ".") +
           " Confirm it by opening this link:\n\n" + link + "\n\nThe link works once, until " + until +
           ". Until you confirm, GPUnex sends no other mail to this address" +
           (changing ? " and your account keeps its old one" : "") +
           ".\n\nIf you did not ask for this, ignore this mail: nothing changes.\n";
  return m;
}

MailText password_reset(const std::string& full_name, const std::string& email, const std::string& link,
                        std::int64_t expires_at_ms) {
  const std::string until =
      day_text(expires_at_ms) + " at " + core::format_rfc3339_ms(expires_at_ms).substr(11, 5) + " UTC";
  MailText m;
  m.kind = "password_reset";
  m.subject = "Set a new password for GPUnex";
  m.body = "Hello " + full_name +
           ",\n\nYou (or someone who typed your address) asked to set a new password for "
           "the GPUnex account " +
           email + ". Set it by opening this link:\n\n" + link + "\n\nThe link works once, until " + until +
           ". Setting a password signs the account out everywhere; its provider API keys keep working.\n\n"
           "If you did not ask for this, ignore this mail: your password stays as it is.\n";
  return m;
}

Announcement email_changed(const std::string& old_email, const std::string& new_email, const std::string& link) {
  Announcement a;
  a.mail.kind = "email_changed";
  a.mail.subject = "The e-mail address of your GPUnex account was changed";
  a.mail.body = "The e-mail address of your GPUnex account is now " + new_email + " (it was " + old_email +
                ").\n\nGPUnex sends its mail there from now on. If you did not make this change, contact support "
                "at once: " +
                link + "\n";
  a.notice = {"email_changed", "E-mail address changed", "Your account's e-mail address is now " + new_email + ".",
              link};
  return a;
}

}  // namespace gpunex::server::mail
