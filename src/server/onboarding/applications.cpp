#include "server/onboarding/applications.hpp"

#include "core/declared_gpus.hpp"

#include <algorithm>

#include <date/tz.h>

#include "server/mail/templates.hpp"
#include "server/onboarding/gpu_catalog.hpp"
#include "server/onboarding/providers.hpp"
#include "server/platform/notifications.hpp"
#include "server/platform/platform_repo.hpp"
#include "util/crypto.hpp"
#include "util/time.hpp"

namespace gpunex::server {

using core::ApplicationAction;
using core::ApplicationStatus;
using core::Error;
using core::ErrorCode;

namespace {

bool known_time_zone(std::string_view name) {
  try {
    return date::locate_zone(name) != nullptr;
  } catch (const std::exception&) {
    return false;
  }
}

Error changed_meanwhile() {
  return Error::make(ErrorCode::conflict, "the application changed meanwhile; reload it").with_code("invalid_state");
}

void append_history(store::Tx& tx, Application& app, const std::string& by, std::optional<ApplicationStatus> from,
                    ApplicationStatus to, const std::string& note, std::int64_t now) {
  HistoryEntry step{now, by, from, to, note};
  onboarding_repo::append_history(tx, app.id, step);
  app.history.push_back(std::move(step));
}

//! Records a status move the repository made (or refuses: two reviewers deciding at once get one 409).
core::Status moved(bool done, Application& app, ApplicationStatus to, std::int64_t now) {
  if (!done) return changed_meanwhile();
  app.status = to;
  app.updated_at_ms = now;
  return core::ok_status();
}

std::string link_to(const std::string& base_url, const std::string& id) { return base_url + "/#/applications/" + id; }

//! What the mails about `app` name.
mail::ApplicationFacts facts_of(const Application& app, const std::string& base_url) {
  return {app.id, app.form.full_name, core::declared_gpus_text(core::declared_gpus(app.form)),
          link_to(base_url, app.id)};
}

nlohmann::json history_json(const std::vector<HistoryEntry>& history) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& h : history) {
    out.push_back({{"at", util::rfc3339(h.at_ms)},
                   {"by", h.by},
                   {"from", h.from ? nlohmann::json(core::status_name(*h.from)) : nlohmann::json(nullptr)},
                   {"to", core::status_name(h.to)},
                   {"note", h.note}});
  }
  return out;
}

}  // namespace

nlohmann::json to_json(const Application& a, std::int64_t now_ms) {
  auto tier = core::assess_tier(a.form);
  nlohmann::json reasons = nlohmann::json::array();
  for (const auto& r : tier.rules) reasons.push_back(core::to_json(r));
  nlohmann::json j = core::to_json(a.form);
  j["id"] = a.id;
  j["user_id"] = a.user_id;
  j["status"] = core::status_name(a.status);
  j["editable"] = core::is_editable(a.status);
  j["suggested_tier"] = core::tier_name(tier.suggested);
  j["tier_reasons"] = reasons;
  j["tier"] = a.tier ? nlohmann::json(core::tier_name(*a.tier)) : nlohmann::json(nullptr);
  j["created_at"] = util::rfc3339(a.created_at_ms);
  j["updated_at"] = util::rfc3339(a.updated_at_ms);
  j["submitted_at"] = util::rfc3339_or_null(a.submitted_at_ms);
  j["decided_at"] = util::rfc3339_or_null(a.decided_at_ms);
  const bool waiting = a.status == ApplicationStatus::submitted && a.submitted_at_ms;
  j["expected_review_by"] =
      waiting ? nlohmann::json(util::rfc3339(core::add_business_days(*a.submitted_at_ms, core::kReviewPromiseBusinessDays)))
              : nlohmann::json(nullptr);
  j["review_overdue"] =
      waiting && now_ms > core::add_business_days(*a.submitted_at_ms, core::kReviewPromiseBusinessDays);
  j["history"] = history_json(a.history);
  return j;
}

core::Result<core::ApplicationForm> read_form(store::Tx& tx, const nlohmann::json& body) {
  core::FormCheckers checkers{known_time_zone,
                              [&](std::string_view id) { return find_model(tx, std::string(id)).has_value(); },
                              [&](std::string_view text) { return core::model_hint(text, list_models(tx)); }};
  return core::parse_application_form(body, checkers);
}

std::optional<Application> load_application(store::Tx& tx, const std::string& id) {
  auto a = onboarding_repo::find_application(tx, id);
  if (!a) return std::nullopt;
  a->history = onboarding_repo::history_of(tx, a->id);
  return a;
}

core::Result<Application> create_application(store::Tx& tx, const User& user, const core::ApplicationForm& form, std::int64_t now_ms) {
  if (find_provider_by_user(tx, user.id)) {
    return Error::make(ErrorCode::conflict, "you are already a provider").with_code("already_provider");
  }
  if (auto open = onboarding_repo::find_open_application_id(tx, user.id)) {
    return Error::make(ErrorCode::conflict, "you already have an open application " + *open + "; edit that one")
        .with_code("application_open");
  }
  Application a;
  a.id = util::new_id("app");
  a.user_id = user.id;
  a.status = ApplicationStatus::draft;
  a.form = form;
  a.created_at_ms = a.updated_at_ms = now_ms;
  onboarding_repo::insert_application(tx, a);
  append_history(tx, a, user.id, std::nullopt, ApplicationStatus::draft, "application started", now_ms);
  return a;
}

core::Result<Application> edit_application(store::Tx& tx, Application app, const core::ApplicationForm& form, std::int64_t now_ms) {
  if (auto s = core::apply_action(app.status, ApplicationAction::edit); !s) return std::move(s).error();
  if (!onboarding_repo::update_form(tx, app.id, app.status, form, now_ms)) return changed_meanwhile();
  app.form = form;
  app.updated_at_ms = now_ms;
  return app;
}

core::Result<Application> submit_application(store::Tx& tx, Application app, const User& by,
                                             const std::string& base_url, std::int64_t now_ms) {
  auto to = core::apply_action(app.status, ApplicationAction::submit);
  if (!to) return std::move(to).error();
  const auto from = app.status;
  if (auto s = moved(onboarding_repo::move_to_submitted(tx, app.id, from, now_ms), app, *to, now_ms); !s) {
    return std::move(s).error();
  }
  app.submitted_at_ms = now_ms;
  append_history(tx, app, by.id, from, *to, from == ApplicationStatus::needs_info ? "resubmitted" : "submitted", now_ms);
  const auto expected = core::add_business_days(now_ms, core::kReviewPromiseBusinessDays);
  announce(tx, app.user_id, mail::application_submitted(facts_of(app, base_url), expected),
           std::nullopt, now_ms);
  // The staff who review it are told too (the promise above is theirs to keep), the applicant never.
  const auto to_review = mail::application_to_review(facts_of(app, base_url), from == ApplicationStatus::needs_info,
                                                     base_url + "/#/review/" + app.id);
  for (const auto& staff : platform_repo::users_with_roles(tx, {core::Role::reviewer, core::Role::admin})) {
    if (staff != app.user_id) announce(tx, staff, to_review, std::nullopt, now_ms);
  }
  return app;
}

std::vector<Application> list_user_applications(store::Tx& tx, const std::string& user_id) {
  auto out = onboarding_repo::applications_of_user(tx, user_id);
  for (auto& a : out) a.history = onboarding_repo::history_of(tx, a.id);
  return out;
}

std::vector<Application> review_queue(store::Tx& tx, ApplicationStatus status) {
  // A resubmission after needs_info keeps the place of its first submission: answering the reviewer's
  // question does not send the applicant to the back of the queue.
  return onboarding_repo::applications_in_review_order(tx, status);
}

nlohmann::json queue_entry_json(const Application& a, std::int64_t now_ms) {
  auto tier = core::assess_tier(a.form);
  const auto declared = core::declared_gpus(a.form);
  std::int64_t gpu_count = 0;
  std::vector<std::string> models;
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& d : declared) {
    gpu_count += d.count;
    models.push_back(d.model);
    gpus.push_back({{"model", d.model}, {"count", d.count}});
  }
  nlohmann::json j = {{"id", a.id},
                      {"user_id", a.user_id},
                      {"status", core::status_name(a.status)},
                      {"full_name", a.form.full_name},
                      {"email", a.form.email},
                      {"company", a.form.company.empty() ? nlohmann::json(nullptr) : nlohmann::json(a.form.company)},
                      {"gpu_count", gpu_count},
                      {"models", models},
                      {"gpus", std::move(gpus)},
                      {"gpus_text", core::declared_gpus_text(declared)},
                      {"suggested_tier", core::tier_name(tier.suggested)},
                      {"submitted_at", util::rfc3339_or_null(a.submitted_at_ms)},
                      {"first_submitted_at", util::rfc3339_or_null(a.first_submitted_at_ms)}};
  if (a.submitted_at_ms) {
    const auto due = core::add_business_days(*a.submitted_at_ms, core::kReviewPromiseBusinessDays);
    j["age_ms"] = std::max<std::int64_t>(0, now_ms - *a.submitted_at_ms);
    j["age_business_days"] = core::business_days_between(*a.submitted_at_ms, now_ms);
    j["expected_review_by"] = util::rfc3339(due);
    j["overdue"] = now_ms > due;
  }
  return j;
}

namespace {

//! Names the reviewer's new catalog model in the "other" GPU entries it is for, adds it to the catalog
//! (with its reference price when given) and stores the changed form.
core::Status add_reviewed_model(store::Tx& tx, Application& app, const User& reviewer, const Decision& d,
                                std::int64_t now) {
  // Only the "other" entries this model is for now name it; other unlisted GPUs stay as they are.
  if (auto n = core::assign_other_model(app.form, d.add_model_for, d.add_model->id, "add_model"); !n) {
    return std::move(n).error();
  }
  if (auto s = add_model(tx, *d.add_model, reviewer.id, "add_model.id", now); !s) return std::move(s).error();
  if (d.add_model_reference_price) set_reference_price(tx, d.add_model->id, *d.add_model_reference_price, now);
  onboarding_repo::replace_form(tx, app.id, app.form);
  return core::ok_status();
}

//! submitted → approved: the tier, the provider, its first API key (mailed, and kept for one reveal).
core::Result<DecisionResult> approve(store::Tx& tx, Application app, const User& reviewer, const Decision& d,
                                     const DecisionSettings& settings, std::int64_t now) {
  const std::string& base_url = settings.base_url;
  const auto from = app.status;
  const auto to = ApplicationStatus::approved;
  auto tier = core::choose_tier(core::assess_tier(app.form), d.tier);
  if (!tier) return std::move(tier).error();
  if (d.add_model) {
    if (auto s = add_reviewed_model(tx, app, reviewer, d, now); !s) return std::move(s).error();
  }
  const onboarding_repo::DecisionRecord record{to, reviewer.id, *tier};
  if (auto s = moved(onboarding_repo::move_to_decided(tx, app.id, from, record, now), app, to, now); !s) {
    return std::move(s).error();
  }
  app.decided_at_ms = now;
  app.tier = *tier;
  const std::string tier_s(core::tier_name(*tier));
  append_history(tx, app, reviewer.id, from, to, d.note.empty() ? "approved as " + tier_s : d.note, now);
  if (find_provider_by_user(tx, app.user_id)) {
    return Error::make(ErrorCode::conflict, "this user is already a provider").with_code("already_provider");
  }
  DecisionResult out;
  auto provider = create_provider(tx, app.user_id, app.id, *tier, now);
  auto key = create_api_key(tx, provider.id, now);
  // The applicant opens it once on the application page; the mail carries it only when mail is encrypted.
  keep_for_reveal(tx, key, app.user_id, settings.server_secret, now);
  out.provider_id = provider.id;
  out.api_key = key.key;
  out.api_key_id = key.id;
  announce(
      tx, app.user_id,
      mail::application_approved(facts_of(app, base_url), *tier, d.note, base_url, settings.mail_carries_key),
      settings.mail_carries_key ? std::optional<MailSecret>(MailSecret{key.key, settings.server_secret}) : std::nullopt,
      now);
  out.app = std::move(app);
  return out;
}

//! submitted → rejected or needs_info, with the reviewer's note told to the applicant.
core::Result<DecisionResult> send_back(store::Tx& tx, Application app, const User& reviewer, const Decision& d,
                                       ApplicationStatus to, const std::string& base_url, std::int64_t now) {
  const auto from = app.status;
  const bool reject = d.action == ApplicationAction::reject;
  const bool done = reject ? onboarding_repo::move_to_decided(tx, app.id, from, {to, reviewer.id, std::nullopt}, now)
                           : onboarding_repo::move_status(tx, app.id, from, to, now);
  if (auto s = moved(done, app, to, now); !s) return std::move(s).error();
  if (reject) app.decided_at_ms = now;
  append_history(tx, app, reviewer.id, from, to, d.note, now);
  const auto facts = facts_of(app, base_url);
  announce(tx, app.user_id,
           reject ? mail::application_rejected(facts, d.note) : mail::application_needs_info(facts, d.note),
           std::nullopt, now);
  DecisionResult out;
  out.app = std::move(app);
  return out;
}

}  // namespace

core::Result<DecisionResult> decide_application(store::Tx& tx, Application app, const User& reviewer,
                                                const Decision& d, const DecisionSettings& settings,
                                                std::int64_t now_ms) {
  auto to = core::apply_action(app.status, d.action);
  if (!to) return std::move(to).error();
  if (d.action == ApplicationAction::approve) return approve(tx, std::move(app), reviewer, d, settings, now_ms);
  return send_back(tx, std::move(app), reviewer, d, *to, settings.base_url, now_ms);
}

}  // namespace gpunex::server
