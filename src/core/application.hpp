#pragma once
// A provider's application (DESIGN §3.2): its fields, their validation (every
// error names its JSON path), the review state machine, the tier rules
// (DESIGN §3.4) and the business-day arithmetic behind "expected review by".
// Pure logic: the checks that need the outside world (known time zones, the
// GPU catalog) are passed in as functions.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"

namespace gpunex::core {

//! One weekly availability window, e.g. mon–fri 18:00–08:00 (an end before the start runs past midnight).
struct ScheduleWindow {
  std::vector<std::string> days;  // "mon".."sun", no repeats
  int start_min = 0;              // minutes after midnight
  int end_min = 0;
};

//! Either "24/7" (always) or a weekly schedule in an IANA time zone.
struct Availability {
  bool always = true;
  std::string timezone;
  std::vector<ScheduleWindow> windows;
};

struct Location {
  std::string city;
  std::string country;
  std::string region;
};

//! One GPU entry of an application.
struct GpuEntry {
  std::string model;        // a catalog id, or "other"
  std::string model_other;  // free text, only (and then required) when model is "other"
  std::int64_t count = 1;
  std::int64_t system_ram_gb = 1;
  double download_gbps = 0;
  double upload_gbps = 0;
  Availability availability;
  Location location;
};

//! The editable fields of an application.
struct ApplicationForm {
  std::string full_name;
  std::string email;
  std::string company;  // "" when none
  std::vector<GpuEntry> gpus;
  bool ups = false;
  std::int64_t commitment_months = 3;
  std::string maintenance_notes;
};

//! Outside knowledge the validator needs: which time zones and GPU models exist.
struct FormCheckers {
  std::function<bool(std::string_view)> known_time_zone;
  std::function<bool(std::string_view)> known_model;
  //! For a model that is not known: what to tell the applicant (core::model_hint); may be empty.
  std::function<std::string(std::string_view)> model_hint = {};
};

//! Validation limits (the numbers), exposed for tests and the dashboard.
inline constexpr std::int64_t kMinGpuCount = 1, kMaxGpuCount = 1024;
inline constexpr std::int64_t kMinRamGb = 1, kMaxRamGb = 16384;
inline constexpr double kMinGbps = 0.01, kMaxGbps = 400;
inline constexpr std::size_t kMaxGpuEntries = 64;
//! The commitment periods a provider can choose, in months.
const std::vector<std::int64_t>& allowed_commitments();

//! Reads and validates an application body. The error lists every invalid field (error.fields), each
//! by its JSON path ("gpus[1].location.country") with a message for a person ("GPU 2: country is required").
Result<ApplicationForm> parse_application_form(const nlohmann::json& body, const FormCheckers& checkers);
//! The API shape of the form (the inverse of parse_application_form).
nlohmann::json to_json(const ApplicationForm& form);

//! Points the "other" GPU entries whose free text is `model_other` at the catalog model `model_id`, and
//! returns how many it changed. An empty `model_other` means "the one unlisted model": allowed only when
//! every "other" entry names the same. Errors name `field` ("add_model"): none of the entries is
//! "other" (400 on `field`), or `model_other` is missing or matches none (400 on `field`.model_other).
Result<int> assign_other_model(ApplicationForm& form, const std::string& model_other, const std::string& model_id,
                               const std::string& field);

//! "HH:MM" (00:00–23:59, or 24:00 as an end) → minutes after midnight; nullopt if malformed.
std::optional<int> parse_hh_mm(std::string_view s, bool allow_24 = false);
std::string format_hh_mm(int minutes);

// ---- state machine ----

enum class ApplicationStatus { draft, submitted, needs_info, approved, rejected };
//! What someone does to an application.
enum class ApplicationAction { edit, submit, approve, reject, request_info };

std::string_view status_name(ApplicationStatus s);
std::optional<ApplicationStatus> parse_status(std::string_view s);
//! The state after `action`, or a 409 conflict saying why it is not allowed now.
Result<ApplicationStatus> apply_action(ApplicationStatus from, ApplicationAction action);
//! Only drafts and applications waiting for more information can be edited.
bool is_editable(ApplicationStatus s);
//! Every status, in the order of the review flow.
const std::vector<ApplicationStatus>& all_statuses();
//! Not decided yet (draft, submitted, needs_info): an applicant has at most one such application.
bool is_open(ApplicationStatus s);
//! A reviewer's decision as the API names it ("approve", "reject", "needs_info"); nullopt for anything else.
std::optional<ApplicationAction> parse_decision(std::string_view s);

// ---- tiers ----

enum class Tier { community, enterprise };
std::string_view tier_name(Tier t);
std::optional<Tier> parse_tier(std::string_view s);

//! One Enterprise rule and how this application fares against it.
struct TierRule {
  std::string rule;  // "ups", "availability", "bandwidth", "commitment", "company"
  bool passed = false;
  std::string reason;
};

struct TierAssessment {
  Tier suggested = Tier::community;
  std::vector<TierRule> rules;  // every rule, passed or failed, in a fixed order
  bool enterprise_eligible() const { return suggested == Tier::enterprise; }
};

inline constexpr double kEnterpriseMinGbps = 1.0;
inline constexpr std::int64_t kEnterpriseMinCommitmentMonths = 6;

//! Applies DESIGN §3.4: Enterprise needs UPS, 24/7 for every entry, ≥ 1 Gbit/s both ways for every
//! entry, commitment ≥ 6 months and a company; anything else is Community.
TierAssessment assess_tier(const ApplicationForm& form);
//! The tier a reviewer picks (or the suggestion when none): Community is always allowed; Enterprise
//! only when every rule passed, else 422 naming the first failed rule (field "tier").
Result<Tier> choose_tier(const TierAssessment& assessment, std::optional<Tier> requested);
nlohmann::json to_json(const TierRule& rule);

// ---- business days ----

//! The moment `n` business days (Monday–Friday, UTC) after `from_ms`, at the same time of day.
//! A weekend start counts from the following Monday.
std::int64_t add_business_days(std::int64_t from_ms, int n);
//! Whole business days that have ended between `from_ms` and `to_ms` (0 when to ≤ from).
int business_days_between(std::int64_t from_ms, std::int64_t to_ms);
//! Reviews are promised within this many business days of submission.
inline constexpr int kReviewPromiseBusinessDays = 3;

}  // namespace gpunex::core
