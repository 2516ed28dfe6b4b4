#include "server/onboarding/applications.hpp"

#include "core/declared_gpus.hpp"

#include <algorithm>
#include <set>

#include <date/date.h>
#include <date/tz.h>

#include "server/fleet/gpu_catalog.hpp"
#include "server/platform/notifications.hpp"
#include "server/onboarding/providers.hpp"
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

std::string day_text(std::int64_t ms) {
  using namespace std::chrono;
  return date::format("%A, %d %B %Y", date::floor<days>(sys_time<milliseconds>{milliseconds{ms}}));
}

nlohmann::json opt_time(const std::optional<std::int64_t>& t) {
  return t ? nlohmann::json(util::rfc3339(*t)) : nlohmann::json(nullptr);
}

void append_history(store::Tx& tx, Application& app, const std::string& by, std::optional<ApplicationStatus> from,
                    ApplicationStatus to, const std::string& note, std::int64_t now) {
  auto seq = tx.query_one("SELECT COALESCE(MAX(seq), 0) + 1 FROM application_history WHERE application_id = ?", {app.id});
  store::Value from_v = from ? store::Value(std::string(core::status_name(*from))) : store::Value(nullptr);
  tx.exec("INSERT INTO application_history (application_id, seq, at, by_user, from_status, to_status, note) "
          "VALUES (?, ?, ?, ?, ?, ?, ?)",
          {app.id, seq->i64(0), now, by, from_v, std::string(core::status_name(to)), note});
  app.history.push_back(HistoryEntry{now, by, from ? std::optional<std::string>(std::string(core::status_name(*from)))
                                                   : std::nullopt,
                                     std::string(core::status_name(to)), note});
}

//! Moves the status only if nobody else moved it first (two reviewers deciding at once get one 409).
core::Status move_status(store::Tx& tx, Application& app, ApplicationStatus to, std::int64_t now,
                         const std::string& extra_sql = "", store::Params extra = {}) {
  store::Params p = {std::string(core::status_name(to)), now};
  p.insert(p.end(), extra.begin(), extra.end());
  p.push_back(app.id);
  p.push_back(std::string(core::status_name(app.status)));
  auto n = tx.exec("UPDATE applications SET status = ?, updated_at = ?" + extra_sql + " WHERE id = ? AND status = ?", p);
  if (n != 1) {
    return Error::make(ErrorCode::conflict, "the application changed meanwhile; reload it").with_code("invalid_state");
  }
  app.status = to;
  app.updated_at_ms = now;
  return core::ok_status();
}

std::string link_to(const std::string& base_url, const std::string& id) { return base_url + "/#/applications/" + id; }

Application from_row(const store::Row& r) {
  Application a;
  a.id = r.str(0);
  a.user_id = r.str(1);
  a.status = core::parse_status(r.str(2)).value_or(ApplicationStatus::draft);
  // The stored form was validated when written; it is re-read without the outside checks.
  core::FormCheckers trust{[](std::string_view) { return true; }, [](std::string_view) { return true; }};
  auto form = core::parse_application_form(nlohmann::json::parse(r.str(3)), trust);
  if (form) a.form = std::move(*form);
  a.created_at_ms = r.i64(4);
  a.updated_at_ms = r.i64(5);
  a.submitted_at_ms = r.opt_i64(6);
  a.decided_at_ms = r.opt_i64(7);
  a.tier = r.opt_str(8);
  return a;
}

constexpr const char* kCols =
    "id, user_id, status, form, created_at, updated_at, submitted_at, decided_at, tier";

void load_history(store::Tx& tx, Application& a) {
  for (const auto& h : tx.query("SELECT at, by_user, from_status, to_status, note FROM application_history "
                                "WHERE application_id = ? ORDER BY seq",
                                {a.id})) {
    a.history.push_back(HistoryEntry{h.i64(0), h.str(1), h.opt_str(2), h.str(3), h.str(4)});
  }
}

}  // namespace

nlohmann::json to_json(const Application& a, std::int64_t now_ms) {
  auto tier = core::assess_tier(a.form);
  nlohmann::json reasons = nlohmann::json::array();
  for (const auto& r : tier.rules) reasons.push_back(core::to_json(r));
  nlohmann::json history = nlohmann::json::array();
  for (const auto& h : a.history) {
    history.push_back({{"at", util::rfc3339(h.at_ms)},
                       {"by", h.by},
                       {"from", h.from ? nlohmann::json(*h.from) : nlohmann::json(nullptr)},
                       {"to", h.to},
                       {"note", h.note}});
  }
  nlohmann::json j = core::to_json(a.form);
  j["id"] = a.id;
  j["user_id"] = a.user_id;
  j["status"] = core::status_name(a.status);
  j["editable"] = core::is_editable(a.status);
  j["suggested_tier"] = core::tier_name(tier.suggested);
  j["tier_reasons"] = reasons;
  j["tier"] = a.tier ? nlohmann::json(*a.tier) : nlohmann::json(nullptr);
  j["created_at"] = util::rfc3339(a.created_at_ms);
  j["updated_at"] = util::rfc3339(a.updated_at_ms);
  j["submitted_at"] = opt_time(a.submitted_at_ms);
  j["decided_at"] = opt_time(a.decided_at_ms);
  const bool waiting = a.status == ApplicationStatus::submitted && a.submitted_at_ms;
  j["expected_review_by"] =
      waiting ? nlohmann::json(util::rfc3339(core::add_business_days(*a.submitted_at_ms, core::kReviewPromiseBusinessDays)))
              : nlohmann::json(nullptr);
  j["review_overdue"] =
      waiting && now_ms > core::add_business_days(*a.submitted_at_ms, core::kReviewPromiseBusinessDays);
  j["history"] = history;
  return j;
}

core::Result<core::ApplicationForm> read_form(store::Tx& tx, const nlohmann::json& body) {
  core::FormCheckers checkers{known_time_zone,
                              [&](std::string_view id) { return find_model(tx, std::string(id)).has_value(); }};
  return core::parse_application_form(body, checkers);
}

std::optional<Application> load_application(store::Tx& tx, const std::string& id) {
  auto r = tx.query_one(std::string("SELECT ") + kCols + " FROM applications WHERE id = ?", {id});
  if (!r) return std::nullopt;
  Application a = from_row(*r);
  load_history(tx, a);
  return a;
}

core::Result<Application> create_application(store::Tx& tx, const User& user, const core::ApplicationForm& form, std::int64_t now_ms) {
  if (find_provider_by_user(tx, user.id)) {
    return Error::make(ErrorCode::conflict, "you are already a provider").with_code("already_provider");
  }
  auto open = tx.query_one("SELECT id FROM applications WHERE user_id = ? AND status IN ('draft', 'submitted', "
                           "'needs_info')",
                           {user.id});
  if (open) {
    return Error::make(ErrorCode::conflict, "you already have an open application " + open->str(0) + "; edit that one")
        .with_code("application_open");
  }
  const auto now = now_ms;
  Application a;
  a.id = util::new_id("app");
  a.user_id = user.id;
  a.form = form;
  a.created_at_ms = a.updated_at_ms = now;
  tx.exec("INSERT INTO applications (id, user_id, status, form, created_at, updated_at) VALUES (?, ?, 'draft', ?, ?, ?)",
          {a.id, a.user_id, core::to_json(form).dump(), now, now});
  append_history(tx, a, user.id, std::nullopt, ApplicationStatus::draft, "application started", now);
  return a;
}

core::Result<Application> edit_application(store::Tx& tx, Application app, const core::ApplicationForm& form, std::int64_t now_ms) {
  if (auto s = core::apply_action(app.status, ApplicationAction::edit); !s) return std::move(s).error();
  const auto now = now_ms;
  auto n = tx.exec("UPDATE applications SET form = ?, updated_at = ? WHERE id = ? AND status = ?",
                   {core::to_json(form).dump(), now, app.id, std::string(core::status_name(app.status))});
  if (n != 1) return Error::make(ErrorCode::conflict, "the application changed meanwhile; reload it").with_code("invalid_state");
  app.form = form;
  app.updated_at_ms = now;
  return app;
}

core::Result<Application> submit_application(store::Tx& tx, Application app, const User& by,
                                             const std::string& base_url, std::int64_t now_ms) {
  auto to = core::apply_action(app.status, ApplicationAction::submit);
  if (!to) return std::move(to).error();
  const auto now = now_ms;
  const auto from = app.status;
  if (auto s = move_status(tx, app, *to, now, ", submitted_at = ?", {now}); !s) return std::move(s).error();
  app.submitted_at_ms = now;
  append_history(tx, app, by.id, from, *to, from == ApplicationStatus::needs_info ? "resubmitted" : "submitted", now);
  const auto expected = core::add_business_days(now, core::kReviewPromiseBusinessDays);
  const std::string link = link_to(base_url, app.id);
  OutgoingMail m{"application_submitted", app.form.email,
                 "GPUnex: we received your provider application",
                 "Hello " + app.form.full_name + ",\n\n"
                 "thank you for applying to provide GPUs on GPUnex. Your application " + app.id +
                     " (GPUs: " + core::declared_gpus_text(core::declared_gpus(app.form)) +
                     ") is now waiting for review.\n\n"
                     "Reviews take 1 to 3 business days; expect our answer by " + day_text(expected) + " (" +
                     util::rfc3339(expected) + ").\n\n"
                     "Follow it here: " + link + "\n\n-- GPUnex\n",
                 std::nullopt};
  enqueue_mail(tx, m, now);
  notify_user(tx, app.user_id, "application_submitted", "Application submitted",
              "Expect a review by " + day_text(expected) + ".", link, now);
  return app;
}

std::vector<Application> list_user_applications(store::Tx& tx, const std::string& user_id) {
  std::vector<Application> out;
  for (const auto& r : tx.query(std::string("SELECT ") + kCols +
                                    " FROM applications WHERE user_id = ? ORDER BY created_at DESC, id",
                                {user_id})) {
    out.push_back(from_row(r));
    load_history(tx, out.back());
  }
  return out;
}

std::vector<Application> review_queue(store::Tx& tx, ApplicationStatus status) {
  // A resubmission after needs_info keeps the place of its first submission: answering the reviewer's
  // question does not send the applicant to the back of the queue.
  std::vector<Application> out;
  for (const auto& r : tx.query(std::string("SELECT ") + kCols +
                                    ", (SELECT MIN(h.at) FROM application_history h WHERE h.application_id = "
                                    "applications.id AND h.to_status = 'submitted') AS first_submitted_at "
                                    "FROM applications WHERE status = ? "
                                    "ORDER BY first_submitted_at, submitted_at, created_at, id",
                                {std::string(core::status_name(status))})) {
    out.push_back(from_row(r));
    out.back().first_submitted_at_ms = r.opt_i64(9);
  }
  return out;
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
                      {"submitted_at", opt_time(a.submitted_at_ms)},
                      {"first_submitted_at", opt_time(a.first_submitted_at_ms)}};
  if (a.submitted_at_ms) {
    const auto due = core::add_business_days(*a.submitted_at_ms, core::kReviewPromiseBusinessDays);
    j["age_ms"] = std::max<std::int64_t>(0, now_ms - *a.submitted_at_ms);
    j["age_business_days"] = core::business_days_between(*a.submitted_at_ms, now_ms);
    j["expected_review_by"] = util::rfc3339(due);
    j["overdue"] = now_ms > due;
  }
  return j;
}

core::Result<DecisionResult> decide_application(store::Tx& tx, Application app, const User& reviewer,
                                                const Decision& d, const std::string& base_url, std::int64_t now_ms) {
  auto to = core::apply_action(app.status, d.action);
  if (!to) return std::move(to).error();
  const auto now = now_ms;
  const auto from = app.status;
  const std::string link = link_to(base_url, app.id);
  DecisionResult out;

  if (d.action == ApplicationAction::approve) {
    auto assessment = core::assess_tier(app.form);
    auto tier = core::choose_tier(assessment, d.tier);
    if (!tier) return std::move(tier).error();
    if (d.add_model) {
      // Only the "other" entries this model is for now name it; other unlisted GPUs stay as they are.
      if (auto n = core::assign_other_model(app.form, d.add_model_for, d.add_model->id, "add_model"); !n) {
        return std::move(n).error();
      }
      if (auto s = add_model(tx, *d.add_model, reviewer.id, "add_model.id", now); !s) return std::move(s).error();
      if (d.add_model_reference_price) set_reference_price(tx, d.add_model->id, *d.add_model_reference_price, now);
      tx.exec("UPDATE applications SET form = ? WHERE id = ?", {core::to_json(app.form).dump(), app.id});
    }
    const std::string tier_s(core::tier_name(*tier));
    if (auto s = move_status(tx, app, *to, now, ", decided_at = ?, decided_by = ?, tier = ?", {now, reviewer.id, tier_s});
        !s) {
      return std::move(s).error();
    }
    app.decided_at_ms = now;
    app.tier = tier_s;
    append_history(tx, app, reviewer.id, from, *to, d.note.empty() ? "approved as " + tier_s : d.note, now);
    if (find_provider_by_user(tx, app.user_id)) {
      return Error::make(ErrorCode::conflict, "this user is already a provider").with_code("already_provider");
    }
    auto provider = create_provider(tx, app.user_id, app.id, tier_s, now);
    auto key = create_api_key(tx, provider.id, now);
    keep_for_reveal(tx, key, app.user_id, now);  // the applicant opens it once on the application page
    out.provider_id = provider.id;
    out.api_key = key.key;
    out.api_key_id = key.id;
    const std::string tier_title = tier_s == "enterprise" ? "Enterprise" : "Community";
    const std::string article = tier_title.find_first_of("AEIOU") == 0 ? "an " : "a ";
    OutgoingMail m{"application_approved", app.form.email,
                   "GPUnex: you are approved as " + article + tier_title + " provider",
                   "Hello " + app.form.full_name + ",\n\n"
                   "your provider application " + app.id + " (GPUs: " +
                       core::declared_gpus_text(core::declared_gpus(app.form)) + ") is approved. Your tier: " +
                       tier_title + ".\n" +
                       (d.note.empty() ? "" : "\nNote from the reviewer: " + d.note + "\n") +
                       "\nYour provider API key (keep it secret; it is shown only here and once in the dashboard):\n\n"
                       "    " + kSecretPlaceholder + "\n\n"
                       "Install the GPUnex agent on each GPU host with:\n\n"
                       "    curl -fsSL " + base_url + "/agent/install.sh | bash\n\n"
                       "The installer asks for the key (or reads GPUNEX_API_KEY). You can rotate or revoke keys in the "
                       "dashboard at any time.\n\n-- GPUnex\n",
                   key.key};
    enqueue_mail(tx, m, now);
    notify_user(tx, app.user_id, "application_approved", "Approved as " + tier_title + " provider",
                "Install the agent: curl -fsSL " + base_url + "/agent/install.sh | bash", link, now);
  } else {
    if (auto s = move_status(tx, app, *to, now,
                             d.action == ApplicationAction::reject ? ", decided_at = ?, decided_by = ?" : "",
                             d.action == ApplicationAction::reject ? store::Params{now, reviewer.id} : store::Params{});
        !s) {
      return std::move(s).error();
    }
    if (d.action == ApplicationAction::reject) app.decided_at_ms = now;
    append_history(tx, app, reviewer.id, from, *to, d.note, now);
    if (d.action == ApplicationAction::request_info) {
      enqueue_mail(tx,
                   OutgoingMail{"application_needs_info", app.form.email,
                                "GPUnex: we need more information about your application",
                                "Hello " + app.form.full_name + ",\n\n"
                                "the reviewer of your provider application " + app.id +
                                    " needs more information:\n\n    " + d.note +
                                    "\n\nPlease edit the application and submit it again here: " + link +
                                    "\n\n-- GPUnex\n",
                                std::nullopt},
                   now);
      notify_user(tx, app.user_id, "application_needs_info", "More information needed", d.note, link, now);
    } else {
      enqueue_mail(tx,
                   OutgoingMail{"application_rejected", app.form.email, "GPUnex: your provider application",
                                "Hello " + app.form.full_name + ",\n\n"
                                "we are sorry: your provider application " + app.id +
                                    " was not approved.\n\nThe reviewer's note:\n\n    " + d.note +
                                    "\n\nDetails: " + link + "\n\n-- GPUnex\n",
                                std::nullopt},
                   now);
      notify_user(tx, app.user_id, "application_rejected", "Application not approved", d.note, link, now);
    }
  }
  out.app = std::move(app);
  return out;
}

}  // namespace gpunex::server
