#include "core/application.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <sstream>

#include "core/json_reader.hpp"
#include "core/text.hpp"

namespace gpunex::core {

namespace {

constexpr std::array<std::string_view, 7> kDays = {"mon", "tue", "wed", "thu", "fri", "sat", "sun"};

std::string idx(std::string_view base, std::size_t i) { return std::string(base) + "[" + std::to_string(i) + "]"; }

Error bad(std::string field, std::string message) {
  return Error::make(ErrorCode::invalid_field, std::move(message), std::move(field));
}

const FieldLabels& form_labels() {
  static const FieldLabels labels = {{"full_name", {"full name", ""}},
                                     {"email", {"e-mail", ""}},
                                     {"gpus", {"GPU list", ""}},
                                     {"ups", {"UPS (backup power)", ""}},
                                     {"commitment_months", {"commitment period", "months"}},
                                     {"maintenance_notes", {"maintenance notes", ""}}};
  return labels;
}

const FieldLabels& gpu_labels() {
  static const FieldLabels labels = {{"model", {"GPU model", ""}},
                                     {"model_other", {"model name", ""}},
                                     {"count", {"number of GPUs", ""}},
                                     {"system_ram_gb", {"host system RAM", "GB"}},
                                     {"download_gbps", {"download speed", "Gbit/s"}},
                                     {"upload_gbps", {"upload speed", "Gbit/s"}}};
  return labels;
}

const FieldLabels& availability_labels() {
  static const FieldLabels labels = {{"timezone", {"time zone", ""}}, {"windows", {"schedule windows", ""}}};
  return labels;
}

const FieldLabels& window_labels() {
  static const FieldLabels labels = {{"start", {"start time", ""}}, {"end", {"end time", ""}}};
  return labels;
}

//! A required text field that must also be clean UTF-8 with something besides spaces.
std::string text_field(ObjectReader& r, std::string_view key, std::size_t max_len) {
  std::string v = r.required_string(key, 1, max_len);
  if (r.failed(key)) return v;
  if (!is_single_line_text(v)) {
    r.invalid(key, "must be plain text");
  } else if (trim(v).empty()) {
    r.invalid(key, "is required");
  }
  return trim(v);
}

Result<ScheduleWindow> parse_window(const nlohmann::json& j, const std::string& path, const std::string& context) {
  ObjectReader r(j, path, context, window_labels());
  ScheduleWindow w;
  const auto* days = r.required_array("days", 1, 7);
  r.describe_field("days",
                   {{"items", {{"type", "string"}, {"enum", std::vector<std::string>(kDays.begin(), kDays.end())}}},
                    {"uniqueItems", true}});
  if (days) {
    for (std::size_t k = 0; k < days->size(); ++k) {
      const auto& d = (*days)[k];
      const std::string field = idx(r.path_of("days"), k);
      const std::string day = "day " + std::to_string(k + 1);
      if (!d.is_string() || std::find(kDays.begin(), kDays.end(), d.get<std::string>()) == kDays.end()) {
        r.fail(bad(field, r.sentence(day + " must be one of mon, tue, wed, thu, fri, sat, sun")));
      } else if (std::find(w.days.begin(), w.days.end(), d.get<std::string>()) != w.days.end()) {
        r.fail(bad(field, r.sentence(d.get<std::string>() + " is listed twice")));
      } else {
        w.days.push_back(d.get<std::string>());
      }
    }
  }
  const std::string start = r.required_string("start", 1, 5);
  const std::string end = r.required_string("end", 1, 5);
  const auto st = r.failed("start") ? std::nullopt : parse_hh_mm(start);
  if (!r.failed("start") && !st) r.invalid("start", "must be a time HH:MM between 00:00 and 23:59");
  const auto en = r.failed("end") ? std::nullopt : parse_hh_mm(end, true);
  if (!r.failed("end") && !en) r.invalid("end", "must be a time HH:MM between 00:00 and 24:00");
  if (st && en && *st == *en) r.invalid("end", "must differ from the start time (choose 24/7 for always)");
  if (auto s = r.finish(); !s) return std::move(s).error();
  w.start_min = *st;
  w.end_min = *en;
  return w;
}

Result<Availability> parse_availability(const nlohmann::json& j, const std::string& path, const std::string& context,
                                        const FormCheckers& checkers) {
  Availability a;
  const std::string shape = context + ": availability must be \"24/7\" or a weekly schedule {timezone, windows}";
  if (j.is_string()) {
    if (j.get<std::string>() != "24/7") return bad(path, shape);
    return a;
  }
  if (!j.is_object()) return bad(path, shape);
  a.always = false;
  ObjectReader r(j, path, context + " schedule", availability_labels());
  a.timezone = r.required_line("timezone", 1, 64);
  if (!r.failed("timezone") && (!checkers.known_time_zone || !checkers.known_time_zone(a.timezone))) {
    r.invalid("timezone", "\"" + a.timezone + "\" is not known; use a name such as Europe/Berlin");
  }
  if (const auto* windows = r.required_array("windows", 1, 50)) {
    for (std::size_t i = 0; i < windows->size(); ++i) {
      auto w = parse_window((*windows)[i], idx(r.path_of("windows"), i), r.nested_context("window " + std::to_string(i + 1)));
      if (w) {
        a.windows.push_back(std::move(*w));
      } else {
        r.fail(std::move(w).error());
      }
    }
  }
  if (auto s = r.finish(); !s) return std::move(s).error();
  return a;
}

Result<Location> parse_location(const nlohmann::json& j, const std::string& path, const std::string& context) {
  ObjectReader r(j, path, context);
  Location l;
  l.city = text_field(r, "city", 100);
  l.country = text_field(r, "country", 100);
  l.region = text_field(r, "region", 100);
  if (auto s = r.finish(); !s) return std::move(s).error();
  return l;
}

Result<GpuEntry> parse_gpu(const nlohmann::json& j, std::size_t i, const FormCheckers& checkers) {
  const std::string context = "GPU " + std::to_string(i + 1);
  ObjectReader r(j, idx("gpus", i), context, gpu_labels());
  GpuEntry g;
  g.model = r.required_line("model", 1, 64);
  auto other = r.optional_line("model_other", 200);
  g.count = r.required_int("count", kMinGpuCount, kMaxGpuCount);
  g.system_ram_gb = r.required_int("system_ram_gb", kMinRamGb, kMaxRamGb);
  g.download_gbps = r.required_number("download_gbps", kMinGbps, kMaxGbps);
  g.upload_gbps = r.required_number("upload_gbps", kMinGbps, kMaxGbps);
  const auto* avail = r.required_value("availability", ObjectReader::Shape::object);
  const auto* loc = r.required_object("location");
  if (!r.failed("model") && g.model == "other") {
    if (!r.failed("model_other") && (!other || trim(*other).empty())) {
      r.fail(Error::make(ErrorCode::missing_field,
                         r.name_of("model_other") + " is required when the GPU model is not in the list",
                         r.path_of("model_other")));
    } else if (other && !is_clean_utf8(*other)) {
      r.invalid("model_other", "must be plain text");
    } else if (other) {
      g.model_other = trim(*other);
    }
  } else if (!r.failed("model")) {
    if (!checkers.known_model || !checkers.known_model(g.model)) {
      const std::string hint = checkers.model_hint ? checkers.model_hint(g.model) : std::string();
      r.invalid("model", "\"" + g.model + "\" is not in the GPU catalog; " + (hint.empty() ? "" : hint + " ") +
                             "(choose a listed model, or \"other\" for one that is not listed)");
    }
    if (other && !other->empty()) r.invalid("model_other", "is only for a GPU model that is not in the list");
  }
  if (avail) {
    auto a = parse_availability(*avail, r.path_of("availability"), context, checkers);
    if (a) {
      g.availability = std::move(*a);
    } else {
      r.fail(std::move(a).error());
    }
  }
  r.describe_alternative("availability", {{"const", "24/7"}});
  if (loc) {
    auto l = parse_location(*loc, r.path_of("location"), context);
    if (l) {
      g.location = std::move(*l);
    } else {
      r.fail(std::move(l).error());
    }
  }
  if (auto s = r.finish(); !s) return std::move(s).error();
  return g;
}

std::string fmt_gbps(double v) {
  std::ostringstream o;
  o << v;
  return o.str();
}

}  // namespace

const std::vector<std::int64_t>& allowed_commitments() {
  static const std::vector<std::int64_t> v = {3, 6, 12, 24};
  return v;
}

std::optional<int> parse_hh_mm(std::string_view s, bool allow_24) {
  if (s.size() != 5 || s[2] != ':') return std::nullopt;
  for (std::size_t i : {0u, 1u, 3u, 4u}) {
    if (s[i] < '0' || s[i] > '9') return std::nullopt;
  }
  int h = (s[0] - '0') * 10 + (s[1] - '0');
  int m = (s[3] - '0') * 10 + (s[4] - '0');
  if (m > 59) return std::nullopt;
  if (h == 24 && m == 0 && allow_24) return 24 * 60;
  if (h > 23) return std::nullopt;
  return h * 60 + m;
}

std::string format_hh_mm(int minutes) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%02d:%02d", (minutes / 60) % 100, minutes % 60);
  return buf;
}

Result<ApplicationForm> parse_application_form(const nlohmann::json& body, const FormCheckers& checkers) {
  ObjectReader r(body, "", "", form_labels());
  ApplicationForm f;
  f.full_name = text_field(r, "full_name", 200);
  std::string email = r.required_string("email", 1, 254);
  if (!r.failed("email") && !is_valid_email(trim(email))) {
    r.invalid("email", "is not a valid e-mail address (like name@example.com)");
  }
  f.email = to_lower_ascii(trim(email));
  auto company = r.optional_line("company", 200);
  if (company && !is_clean_utf8(*company)) r.invalid("company", "must be plain text");
  f.company = company ? trim(*company) : "";
  const auto* gpus = r.required_array("gpus", 1, kMaxGpuEntries);
  f.ups = r.required_bool("ups");
  f.commitment_months = r.required_int("commitment_months", 1, 120);
  r.describe_field("commitment_months", {{"enum", allowed_commitments()}});
  if (!r.failed("commitment_months") &&
      std::find(allowed_commitments().begin(), allowed_commitments().end(), f.commitment_months) ==
          allowed_commitments().end()) {
    r.invalid("commitment_months", "must be 3, 6, 12 or 24 months");
  }
  auto notes = r.optional_text("maintenance_notes", 4000);
  if (notes && !is_clean_utf8(*notes)) r.invalid("maintenance_notes", "must be plain text");
  f.maintenance_notes = notes ? trim(*notes) : "";
  if (gpus) {
    for (std::size_t i = 0; i < gpus->size(); ++i) {
      auto g = parse_gpu((*gpus)[i], i, checkers);
      if (g) {
        f.gpus.push_back(std::move(*g));
      } else {
        r.fail(std::move(g).error());
      }
    }
  }
  if (auto s = r.finish(); !s) return std::move(s).error();
  return f;
}

nlohmann::json to_json(const ApplicationForm& f) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : f.gpus) {
    nlohmann::json a;
    if (g.availability.always) {
      a = "24/7";
    } else {
      nlohmann::json windows = nlohmann::json::array();
      for (const auto& w : g.availability.windows) {
        windows.push_back({{"days", w.days}, {"start", format_hh_mm(w.start_min)}, {"end", format_hh_mm(w.end_min)}});
      }
      a = {{"timezone", g.availability.timezone}, {"windows", windows}};
    }
    nlohmann::json e = {{"model", g.model},
                        {"count", g.count},
                        {"system_ram_gb", g.system_ram_gb},
                        {"download_gbps", g.download_gbps},
                        {"upload_gbps", g.upload_gbps},
                        {"availability", a},
                        {"location", {{"city", g.location.city}, {"country", g.location.country}, {"region", g.location.region}}}};
    if (g.model == "other") e["model_other"] = g.model_other;
    gpus.push_back(std::move(e));
  }
  return {{"full_name", f.full_name},
          {"email", f.email},
          {"company", f.company.empty() ? nlohmann::json(nullptr) : nlohmann::json(f.company)},
          {"gpus", gpus},
          {"ups", f.ups},
          {"commitment_months", f.commitment_months},
          {"maintenance_notes", f.maintenance_notes}};
}

// ---- state machine ----

std::string_view status_name(ApplicationStatus s) {
  switch (s) {
    case ApplicationStatus::draft: return "draft";
    case ApplicationStatus::submitted: return "submitted";
    case ApplicationStatus::needs_info: return "needs_info";
    case ApplicationStatus::approved: return "approved";
    case ApplicationStatus::rejected: return "rejected";
  }
  return "draft";
}

const std::vector<ApplicationStatus>& all_statuses() {
  static const std::vector<ApplicationStatus> all = {ApplicationStatus::draft, ApplicationStatus::submitted,
                                                     ApplicationStatus::needs_info, ApplicationStatus::approved,
                                                     ApplicationStatus::rejected};
  return all;
}

std::optional<ApplicationStatus> parse_status(std::string_view s) {
  for (auto st : all_statuses()) {
    if (status_name(st) == s) return st;
  }
  return std::nullopt;
}

bool is_editable(ApplicationStatus s) { return s == ApplicationStatus::draft || s == ApplicationStatus::needs_info; }

bool is_open(ApplicationStatus s) { return is_editable(s) || s == ApplicationStatus::submitted; }

std::optional<ApplicationAction> parse_decision(std::string_view s) {
  if (s == "approve") return ApplicationAction::approve;
  if (s == "reject") return ApplicationAction::reject;
  if (s == "needs_info") return ApplicationAction::request_info;
  return std::nullopt;
}

Result<ApplicationStatus> apply_action(ApplicationStatus from, ApplicationAction action) {
  auto refuse = [&](std::string what) -> Result<ApplicationStatus> {
    return Error::make(ErrorCode::conflict,
                       "cannot " + what + " an application that is " + std::string(status_name(from)))
        .with_code("invalid_state");
  };
  switch (action) {
    case ApplicationAction::edit:
      if (is_editable(from)) return from;
      return refuse("edit");
    case ApplicationAction::submit:
      if (is_editable(from)) return ApplicationStatus::submitted;
      return refuse("submit");
    case ApplicationAction::approve:
      if (from == ApplicationStatus::submitted) return ApplicationStatus::approved;
      return refuse("approve");
    case ApplicationAction::reject:
      if (from == ApplicationStatus::submitted) return ApplicationStatus::rejected;
      return refuse("reject");
    case ApplicationAction::request_info:
      if (from == ApplicationStatus::submitted) return ApplicationStatus::needs_info;
      return refuse("ask for more information on");
  }
  return refuse("change");
}

// ---- tiers ----

std::string_view tier_name(Tier t) { return t == Tier::enterprise ? "enterprise" : "community"; }

std::optional<Tier> parse_tier(std::string_view s) {
  if (s == "enterprise") return Tier::enterprise;
  if (s == "community") return Tier::community;
  return std::nullopt;
}

TierAssessment assess_tier(const ApplicationForm& f) {
  TierAssessment a;
  a.rules.push_back({"ups", f.ups, f.ups ? "has UPS backup power" : "no UPS backup power"});

  std::string avail_fail;
  std::string bw_fail;
  for (std::size_t i = 0; i < f.gpus.size(); ++i) {
    const auto& g = f.gpus[i];
    if (!g.availability.always && avail_fail.empty()) avail_fail = idx("gpus", i) + " is available on a schedule, not 24/7";
    if (bw_fail.empty() && (g.download_gbps < kEnterpriseMinGbps || g.upload_gbps < kEnterpriseMinGbps)) {
      bw_fail = idx("gpus", i) + " has " + fmt_gbps(g.download_gbps) + " Gbit/s down and " +
                fmt_gbps(g.upload_gbps) + " Gbit/s up; needs at least 1 both ways";
    }
  }
  a.rules.push_back({"availability", avail_fail.empty(),
                     avail_fail.empty() ? "every GPU entry is available 24/7" : avail_fail});
  a.rules.push_back({"bandwidth", bw_fail.empty(),
                     bw_fail.empty() ? "every GPU entry has at least 1 Gbit/s down and up" : bw_fail});
  const bool commit_ok = f.commitment_months >= kEnterpriseMinCommitmentMonths;
  a.rules.push_back({"commitment", commit_ok,
                     "commits for " + std::to_string(f.commitment_months) + " months" +
                         (commit_ok ? "" : "; needs at least 6")});
  const bool company_ok = !f.company.empty();
  a.rules.push_back({"company", company_ok, company_ok ? "applies as company " + f.company : "no company given"});
  const bool all = std::all_of(a.rules.begin(), a.rules.end(), [](const TierRule& r) { return r.passed; });
  a.suggested = all ? Tier::enterprise : Tier::community;
  return a;
}

Result<Tier> choose_tier(const TierAssessment& assessment, std::optional<Tier> requested) {
  Tier t = requested.value_or(assessment.suggested);
  if (t == Tier::community) return t;
  for (const auto& r : assessment.rules) {
    if (!r.passed) {
      return Error::make(ErrorCode::unprocessable,
                         "Enterprise tier refused by rule '" + r.rule + "': " + r.reason, "tier")
          .with_code("tier_rule_failed");
    }
  }
  return t;
}

nlohmann::json to_json(const TierRule& r) { return {{"rule", r.rule}, {"passed", r.passed}, {"reason", r.reason}}; }

// ---- unlisted models ----

Result<int> assign_other_model(ApplicationForm& form, const std::string& model_other, const std::string& model_id,
                               const std::string& field) {
  std::vector<std::string> names;  // the distinct free-text names, in entry order
  for (const auto& g : form.gpus) {
    if (g.model == "other" && std::find(names.begin(), names.end(), g.model_other) == names.end()) {
      names.push_back(g.model_other);
    }
  }
  if (names.empty()) return bad(field, field + " is only for applications with an \"other\" GPU");
  std::string listed;
  for (const auto& n : names) listed += (listed.empty() ? "\"" : ", \"") + n + "\"";
  const std::string which = field + ".model_other";
  const std::string wanted = trim(model_other);
  if (wanted.empty() && names.size() > 1) {
    return Error::make(ErrorCode::missing_field,
                       which + " is required: the application lists several unlisted GPUs (" + listed +
                           "); name the one this model is for",
                       which);
  }
  const std::string& target = wanted.empty() ? names.front() : wanted;
  int changed = 0;
  for (auto& g : form.gpus) {
    if (g.model != "other" || g.model_other != target) continue;
    g.model = model_id;
    g.model_other.clear();
    ++changed;
  }
  if (changed == 0) {
    return bad(which, which + " \"" + wanted + "\" matches no \"other\" GPU of the application; it lists " + listed);
  }
  return changed;
}

// ---- business days ----

namespace {
constexpr std::int64_t kDayMs = 86'400'000;

std::int64_t floor_div(std::int64_t a, std::int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

//! 1970-01-01 was a Thursday; Monday = 0.
bool is_weekend(std::int64_t day) {
  std::int64_t wd = ((day + 3) % 7 + 7) % 7;
  return wd >= 5;
}
}  // namespace

std::int64_t add_business_days(std::int64_t from_ms, int n) {
  std::int64_t day = floor_div(from_ms, kDayMs);
  const std::int64_t tod = from_ms - day * kDayMs;
  for (int i = 0; i < n; ++i) {
    ++day;
    while (is_weekend(day)) ++day;
  }
  return day * kDayMs + tod;
}

int business_days_between(std::int64_t from_ms, std::int64_t to_ms) {
  int n = 0;
  for (std::int64_t t = add_business_days(from_ms, 1); t <= to_ms && n < 1'000'000; t = add_business_days(t, 1)) ++n;
  return n;
}

}  // namespace gpunex::core
