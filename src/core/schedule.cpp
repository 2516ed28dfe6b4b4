#include "core/schedule.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <utility>

#include "core/json_reader.hpp"
#include "core/rfc3339.hpp"

namespace gpunex::core {

namespace {

using std::chrono::days;
using std::chrono::minutes;
using std::chrono::seconds;
using LocalTime = date::local_seconds;
using LocalDay = date::local_days;

constexpr std::array<const char*, 7> kDayNames = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};
constexpr std::array<const char*, 6> kCategoryNames = {"power", "network", "disk", "gpu", "software", "other"};
constexpr int kMinutesPerDay = 24 * 60;

//! An error on `field` (a JSON path) whose message is already a sentence for a person.
Error field_error(std::string field, std::string message, std::string code = "") {
  auto e = Error::make(ErrorCode::invalid_field, std::move(message), std::move(field));
  if (!code.empty()) return std::move(e).with_code(std::move(code));
  return e;
}

const FieldLabels& schedule_labels() {
  static const FieldLabels labels = {{"timezone", {"time zone", ""}},
                                     {"always", {"always available", ""}},
                                     {"maintenance", {"maintenance windows", ""}}};
  return labels;
}

const FieldLabels& window_labels() {
  static const FieldLabels labels = {{"start", {"start time", ""}}, {"end", {"end time", ""}},
                                     {"nth", {"week of the month", ""}}};
  return labels;
}

// ---- time of day, days, RFC 3339 ----

std::optional<int> parse_hhmm(const std::string& s, bool allow_24) {
  if (s.size() != 5 || s[2] != ':') return std::nullopt;
  for (int i : {0, 1, 3, 4})
    if (s[i] < '0' || s[i] > '9') return std::nullopt;
  const int h = (s[0] - '0') * 10 + (s[1] - '0');
  const int m = (s[3] - '0') * 10 + (s[4] - '0');
  if (m > 59) return std::nullopt;
  if (h == 24 && m == 0 && allow_24) return kMinutesPerDay;
  if (h > 23) return std::nullopt;
  return h * 60 + m;
}

std::string format_hhmm(int minutes_of_day) {
  std::string out(5, '0');
  const int h = minutes_of_day / 60;
  const int m = minutes_of_day % 60;
  out[0] = static_cast<char>('0' + h / 10);
  out[1] = static_cast<char>('0' + h % 10);
  out[2] = ':';
  out[3] = static_cast<char>('0' + m / 10);
  out[4] = static_cast<char>('0' + m % 10);
  return out;
}

std::optional<unsigned> parse_day(const nlohmann::json& v) {
  if (!v.is_string()) return std::nullopt;
  for (unsigned i = 0; i < kDayNames.size(); ++i)
    if (v.get_ref<const std::string&>() == kDayNames[i]) return i;
  return std::nullopt;
}

nlohmann::json days_to_json(DaySet days) {
  auto out = nlohmann::json::array();
  // Monday first, as people write a week.
  for (unsigned k = 0; k < 7; ++k) {
    const unsigned i = (k + 1) % 7;
    if (days & (1u << i)) out.push_back(kDayNames[i]);
  }
  return out;
}

std::optional<UtcTime> parse_utc(const std::string& s) {
  const auto ms = parse_rfc3339_ms(s);
  if (!ms) return std::nullopt;
  return date::floor<seconds>(date::sys_time<std::chrono::milliseconds>{std::chrono::milliseconds{*ms}});
}

// ---- wall-clock intervals ----

//! [start, end) of a wall-clock window that starts on local day `d`.
std::pair<LocalTime, LocalTime> local_interval(LocalDay d, int start_min, int end_min) {
  const int end = end_min > start_min ? end_min : end_min + kMinutesPerDay;
  return {LocalTime{d} + minutes{start_min}, LocalTime{d} + minutes{end}};
}

bool has_day(DaySet set, LocalDay d) { return (set & (1u << date::weekday{d}.c_encoding())) != 0; }

//! The day of month `ym` on which a monthly window falls, if that month has one.
std::optional<LocalDay> monthly_day(const MaintenanceWindow& w, date::year_month ym) {
  const date::weekday wd{w.weekday};
  if (w.nth < 0) return LocalDay{date::year_month_weekday_last{ym.year(), ym.month(), date::weekday_last{wd}}};
  const date::year_month_weekday ymwd{ym.year(), ym.month(), wd[static_cast<unsigned>(w.nth)]};
  if (!ymwd.ok()) return std::nullopt;  // no fifth such weekday this month
  return LocalDay{ymwd};
}

//! Whether a recurring window (weekly or monthly) starts on local day `d`.
bool recurs_on(const MaintenanceWindow& w, LocalDay d) {
  if (w.kind == MaintenanceWindow::Kind::weekly) return has_day(w.days, d);
  const date::year_month_day ymd{d};
  const auto day = monthly_day(w, ymd.year() / ymd.month());
  return day && *day == d;
}

//! The UTC instants at which the zone's wall clock passes `l`: one, two (a repeated hour) or,
//! for a wall time that does not exist, the transition that skips it.
std::pair<UtcTime, UtcTime> crossings(const date::time_zone& zone, LocalTime l) {
  const date::local_info info = zone.get_info(l);
  switch (info.result) {
    case date::local_info::unique:
      break;
    case date::local_info::ambiguous:
      return {UtcTime{(l - info.first.offset).time_since_epoch()}, UtcTime{(l - info.second.offset).time_since_epoch()}};
    case date::local_info::nonexistent:
      return {date::floor<seconds>(info.first.end), date::floor<seconds>(info.first.end)};
  }
  const UtcTime t{(l - info.first.offset).time_since_epoch()};
  return {t, t};
}

using UtcInterval = std::pair<UtcTime, UtcTime>;
using LocalInterval = std::pair<LocalTime, LocalTime>;

//! One occurrence of a wall-clock window as UTC instants: from the first instant the wall clock
//! reaches its start to the last instant it reaches its end (see the header for DST days).
UtcInterval to_utc(const date::time_zone& zone, const LocalInterval& l) {
  return {crossings(zone, l.first).first, crossings(zone, l.second).second};
}

//! The local days whose occurrences can contain `t`: a window lasts at most two days, and the
//! zone's offset can move its ends by hours either way.
std::pair<LocalDay, LocalDay> days_around(const Schedule& s, UtcTime t) {
  const LocalDay d = date::floor<days>(s.zone->to_local(t));
  return {d - days{2}, d + days{1}};
}

//! to_utc for the occurrences around [from, to]: plain arithmetic with one offset when the zone
//! has no transition within four days of the range (nearly always), the zone's rules otherwise.
class UtcMapper {
 public:
  UtcMapper(const date::time_zone& zone, UtcTime from, UtcTime to) : zone_(zone) {
    const date::sys_info info = zone.get_info(from - days{4});
    if (info.end > to + days{4}) offset_ = info.offset;
  }
  UtcInterval operator()(const LocalInterval& l) const {
    if (!offset_) return to_utc(zone_, l);
    return {UtcTime{(l.first - *offset_).time_since_epoch()}, UtcTime{(l.second - *offset_).time_since_epoch()}};
  }

 private:
  const date::time_zone& zone_;
  std::optional<seconds> offset_;
};

//! Calls fn(UtcInterval, bool maintenance) for every occurrence around [from, to].
template <class F>
void for_each_occurrence(const Schedule& s, UtcTime from, UtcTime to, F&& fn) {
  const UtcMapper map(*s.zone, from, to);
  const LocalDay first = days_around(s, from).first;
  const LocalDay last = days_around(s, to).second;
  for (LocalDay d = first; d <= last; d += days{1}) {
    if (!s.always) {
      for (const auto& w : s.windows)
        if (has_day(w.days, d)) fn(map(local_interval(d, w.start_min, w.end_min)), false);
    }
    for (const auto& m : s.maintenance)
      if (m.kind != MaintenanceWindow::Kind::one_off && recurs_on(m, d))
        fn(map(local_interval(d, m.start_min, m.end_min)), true);
  }
}

//! Every instant in (from, to) at which availability may change, sorted.
std::vector<UtcTime> change_points(const Schedule& s, UtcTime from, UtcTime to) {
  std::vector<UtcTime> out;
  for_each_occurrence(s, from, to, [&](const UtcInterval& i, bool) {
    out.push_back(i.first);
    out.push_back(i.second);
  });
  for (const auto& m : s.maintenance) {
    if (m.kind != MaintenanceWindow::Kind::one_off) continue;
    out.push_back(m.start_utc);
    out.push_back(m.end_utc);
  }
  std::erase_if(out, [&](UtcTime t) { return t <= from || t >= to; });
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

//! Scans change points after `t` for the first one where availability becomes `want`,
//! widening the horizon once.
std::optional<UtcTime> first_change_to(const Schedule& s, UtcTime t, bool want) {
  for (int horizon_days : {9, 400}) {
    bool state = is_available(s, t);
    for (UtcTime c : change_points(s, t, t + days{horizon_days})) {
      const bool now = is_available(s, c);
      if (now == want && state != want) return c;
      state = now;
    }
  }
  return std::nullopt;
}

// ---- maintenance overlap ----

std::vector<LocalInterval> expand(const MaintenanceWindow& w, LocalDay from, LocalDay to) {
  std::vector<LocalInterval> out;
  for (LocalDay d = from; d <= to; d += days{1})
    if (recurs_on(w, d)) out.push_back(local_interval(d, w.start_min, w.end_min));
  return out;
}

template <class I>
bool any_intersect(const std::vector<I>& a, const std::vector<I>& b) {
  // Both are sorted by start and hold intervals of at most two days: a two-pointer sweep.
  std::size_t j = 0;
  for (const auto& x : a) {
    while (j < b.size() && b[j].second <= x.first) ++j;
    for (std::size_t k = j; k < b.size() && b[k].first < x.second; ++k)
      if (b[k].second > x.first) return true;
  }
  return false;
}

bool overlap(const Schedule& s, const MaintenanceWindow& x, const MaintenanceWindow& y) {
  using Kind = MaintenanceWindow::Kind;
  if (x.kind == Kind::one_off && y.kind == Kind::one_off)
    return x.start_utc < y.end_utc && y.start_utc < x.end_utc;
  if (x.kind == Kind::one_off || y.kind == Kind::one_off) {
    const auto& once = x.kind == Kind::one_off ? x : y;
    const auto& rec = x.kind == Kind::one_off ? y : x;
    const LocalDay from = date::floor<days>(s.zone->to_local(once.start_utc)) - days{2};
    const LocalDay to = date::floor<days>(s.zone->to_local(once.end_utc)) + days{1};
    std::vector<UtcInterval> occ;
    for (const auto& l : expand(rec, from, to)) occ.push_back(to_utc(*s.zone, l));
    return any_intersect(occ, std::vector<UtcInterval>{{once.start_utc, once.end_utc}});
  }
  // Two recurring windows overlap when their wall-clock occurrences ever do. Weekly ones repeat
  // every week, so two weeks decide it; anything monthly repeats with the calendar, whose
  // weekdays repeat every 28 years between 1901 and 2099.
  const LocalDay base = LocalDay{date::year{2001} / 1 / 1};  // a Monday
  if (x.kind == Kind::weekly && y.kind == Kind::weekly)
    return any_intersect(expand(x, base, base + days{15}), expand(y, base, base + days{15}));
  const LocalDay end = LocalDay{date::year{2029} / 1 / 1};
  if (x.kind == Kind::monthly && y.kind == Kind::monthly)
    return any_intersect(expand(x, base, end), expand(y, base, end));
  const auto& monthly = x.kind == Kind::monthly ? x : y;
  const auto& weekly = x.kind == Kind::monthly ? y : x;
  for (const auto& occ : expand(monthly, base, end)) {
    const LocalDay d = date::floor<days>(occ.first);
    if (any_intersect(std::vector<LocalInterval>{occ}, expand(weekly, d - days{2}, d + days{2}))) return true;
  }
  return false;
}

// ---- reading the API form ----

//! The schema of a day name, as parse_day reads it.
nlohmann::json day_schema() {
  return {{"type", "string"}, {"enum", kDayNames}};
}

DaySet read_days(ObjectReader& r, const std::string& key) {
  const auto* arr = r.required_array(key, 1, 7);
  r.describe_field(key, {{"items", day_schema()}, {"uniqueItems", true}});
  if (!arr) return 0;
  DaySet set = 0;
  for (std::size_t i = 0; i < arr->size(); ++i) {
    const std::string field = r.path_of(key) + "[" + std::to_string(i) + "]";
    const auto day = parse_day((*arr)[i]);
    if (!day) {
      r.fail(field_error(field, r.sentence("day " + std::to_string(i + 1) + " must be one of mon, tue, wed, thu, fri, sat, sun"),
                         "invalid_day"));
    } else if (set & (1u << *day)) {
      r.fail(field_error(field, r.sentence(std::string(kDayNames[*day]) + " is listed twice"), "duplicate_day"));
    } else {
      set = static_cast<DaySet>(set | (1u << *day));
    }
  }
  return set;
}

//! Reads start/end as "HH:MM" into a wall-clock window; end == start is refused.
void read_times(ObjectReader& r, int& start_min, int& end_min) {
  const std::string start = r.required_string("start", 1, 5);
  const std::string end = r.required_string("end", 1, 5);
  r.describe_field("start", {{"description", "A time of day HH:MM, 00:00 to 23:59."}});
  r.describe_field("end", {{"description", "A time of day HH:MM, 00:00 to 24:00; not the start."}});
  const auto s = r.failed("start") ? std::nullopt : parse_hhmm(start, false);
  if (!r.failed("start") && !s) r.invalid("start", "must be a time of day \"HH:MM\" (00:00–23:59)", "invalid_time");
  const auto e = r.failed("end") ? std::nullopt : parse_hhmm(end, true);
  if (!r.failed("end") && !e) r.invalid("end", "must be a time of day \"HH:MM\" (00:00–24:00)", "invalid_time");
  if (!s || !e) return;
  if (*e == *s) return r.invalid("end", "must differ from the start time (a window cannot be empty)", "empty_window");
  start_min = *s;
  end_min = *e;
}

//! One maintenance window; nullopt when it has an error (recorded on `r`).
std::optional<MaintenanceWindow> read_maintenance(ObjectReader& r, const std::string& path) {
  MaintenanceWindow m;
  const std::string category = r.required_string("category", 1, 20);
  r.describe_field("category", {{"enum", kCategoryNames}});
  if (!r.failed("category")) {
    const auto* it = std::find(kCategoryNames.begin(), kCategoryNames.end(), category);
    if (it == kCategoryNames.end()) {
      r.invalid("category", "must be one of power, network, disk, gpu, software, other", "invalid_category");
    } else {
      m.category = static_cast<MaintenanceCategory>(it - kCategoryNames.begin());
    }
  }
  m.note = r.optional_text("note", 500).value_or("");
  // Described, every form is read: the one-off form's start/end (date-times, the looser of the two
  // forms), and the recurrence's weekly and monthly fields, each required only with its form.
  const auto* rec = r.optional_value("recurrence", ObjectReader::Shape::object);
  if (!rec || r.describing()) {
    m.kind = MaintenanceWindow::Kind::one_off;
    const std::string start = r.required_string("start", 1, 40);
    const std::string end = r.required_string("end", 1, 40);
    const auto s = r.failed("start") ? std::nullopt : parse_utc(start);
    if (!r.failed("start") && !s) {
      r.invalid("start", "must be a date and time such as \"2026-03-01T02:00:00Z\" (or give a recurrence and a "
                         "time of day)", "invalid_time");
    }
    const auto e = r.failed("end") ? std::nullopt : parse_utc(end);
    if (!r.failed("end") && !e) r.invalid("end", "must be a date and time such as \"2026-03-01T04:00:00Z\"", "invalid_time");
    if (s && e && *e <= *s) r.invalid("end", "must be after the start", "empty_window");
    if (s && e && *e - *s > kMaxOneOffMaintenance) {
      r.invalid("end", "is too late: a one-off maintenance window may last at most 31 days", "window_too_long");
    }
    if (!r.describing()) {
      if (r.failed()) return std::nullopt;
      m.start_utc = *s;
      m.end_utc = *e;
      return m;
    }
    r.describe_field("start", {{"description", "A UTC date and time; with a recurrence, a time of day HH:MM."}});
    r.describe_field("end", {{"description", "A UTC date and time; with a recurrence, a time of day HH:MM."}});
  }
  ObjectReader rr(*rec, path + ".recurrence", r.nested_context("recurrence"), window_labels());
  const bool weekly = rec->is_object() && rec->contains("days");
  if (weekly || rr.describing()) {
    rr.describe_when("the recurrence is weekly");
    m.kind = MaintenanceWindow::Kind::weekly;
    m.days = read_days(rr, "days");
  }
  if (!weekly || rr.describing()) {
    rr.describe_when("the recurrence is monthly (no days)");
    m.kind = MaintenanceWindow::Kind::monthly;
    const auto nth = rr.required_int("nth", -1, 5);
    if (!rr.failed("nth") && nth == 0) {
      rr.invalid("nth", "must be 1 to 5, or -1 for the last of the month", "invalid_nth");
    }
    m.nth = static_cast<int>(nth);
    const auto* wd = rr.required_value("weekday");
    if (wd) {
      const auto day = parse_day(*wd);
      if (!day) rr.invalid("weekday", "must be one of mon, tue, wed, thu, fri, sat, sun", "invalid_day");
      else m.weekday = *day;
    }
    rr.describe_field("weekday", day_schema());
  }
  rr.describe_when("");
  if (auto st = rr.finish(); !st) r.fail(std::move(st).error());
  if (r.describing()) return std::nullopt;  // start/end described above, as the one-off form's
  read_times(r, m.start_min, m.end_min);
  if (r.failed()) return std::nullopt;
  return m;
}

}  // namespace

std::string_view category_name(MaintenanceCategory c) { return kCategoryNames[static_cast<std::size_t>(c)]; }

Result<Schedule> parse_schedule(const nlohmann::json& body, const std::string& path) {
  ObjectReader r(body, path, "", schedule_labels());
  Schedule s;
  s.timezone = r.required_line("timezone", 1, 64);
  s.always = r.required_bool("always");
  if (!r.failed("timezone")) {
    try {
      s.zone = date::locate_zone(s.timezone);
    } catch (const std::exception&) {
      r.invalid("timezone", "\"" + s.timezone + "\" is not known; use a name such as \"Europe/Berlin\"",
                "unknown_timezone");
    }
  }
  if (const auto* windows = r.optional_value("windows", ObjectReader::Shape::list)) {
    r.describe_field("windows", {{"maxItems", kMaxWindows}});
    if (!windows->is_array()) {
      r.invalid("windows", "must be a list");
    } else if (windows->size() > kMaxWindows) {
      r.invalid("windows", "can have at most " + std::to_string(kMaxWindows) + " windows");
    } else {
      for (std::size_t i = 0; i < windows->size(); ++i) {
        const std::string wpath = r.path_of("windows") + "[" + std::to_string(i) + "]";
        ObjectReader wr((*windows)[i], wpath, r.nested_context("window " + std::to_string(i + 1)), window_labels());
        WeeklyWindow w;
        w.days = read_days(wr, "days");
        read_times(wr, w.start_min, w.end_min);
        if (auto st = wr.finish(); !st) r.fail(std::move(st).error());
        s.windows.push_back(w);
      }
    }
  }
  if (!r.failed("always") && !r.failed("windows")) {
    if (s.always && !s.windows.empty()) r.invalid("windows", "must be empty when always is true", "windows_with_always");
    if (!s.always && s.windows.empty()) {
      r.invalid("windows", "needs at least one window, or set always to true", "no_windows");
    }
  }
  if (const auto* maint = r.optional_value("maintenance", ObjectReader::Shape::list)) {
    r.describe_field("maintenance", {{"maxItems", kMaxMaintenance}});
    if (!maint->is_array()) {
      r.invalid("maintenance", "must be a list");
    } else if (maint->size() > kMaxMaintenance) {
      r.invalid("maintenance", "can have at most " + std::to_string(kMaxMaintenance) + " windows");
    } else {
      for (std::size_t i = 0; i < maint->size(); ++i) {
        const std::string mpath = r.path_of("maintenance") + "[" + std::to_string(i) + "]";
        const std::string name = "maintenance window " + std::to_string(i + 1);
        ObjectReader mr((*maint)[i], mpath, r.nested_context(name), window_labels());
        auto m = read_maintenance(mr, mpath);
        if (auto st = mr.finish(); !st) {
          r.fail(std::move(st).error());
          continue;
        }
        if (!m || !s.zone) continue;
        for (std::size_t j = 0; j < s.maintenance.size(); ++j) {
          if (overlap(s, s.maintenance[j], *m)) {
            r.fail(field_error(mpath, r.sentence(name + " overlaps maintenance window " + std::to_string(j + 1)),
                               "maintenance_overlap"));
            break;
          }
        }
        s.maintenance.push_back(std::move(*m));
      }
    }
  }
  if (auto st = r.finish(); !st) return std::move(st).error();
  return s;
}

nlohmann::json schedule_to_json(const Schedule& s) {
  nlohmann::json out = {{"timezone", s.timezone}, {"always", s.always}};
  auto windows = nlohmann::json::array();
  for (const auto& w : s.windows)
    windows.push_back({{"days", days_to_json(w.days)}, {"start", format_hhmm(w.start_min)}, {"end", format_hhmm(w.end_min)}});
  out["windows"] = std::move(windows);
  auto maint = nlohmann::json::array();
  for (const auto& m : s.maintenance) {
    nlohmann::json j = {{"category", category_name(m.category)}};
    switch (m.kind) {
      case MaintenanceWindow::Kind::one_off:
        j["start"] = date::format("%FT%TZ", m.start_utc);
        j["end"] = date::format("%FT%TZ", m.end_utc);
        break;
      case MaintenanceWindow::Kind::weekly:
        j["recurrence"] = {{"days", days_to_json(m.days)}};
        j["start"] = format_hhmm(m.start_min);
        j["end"] = format_hhmm(m.end_min);
        break;
      case MaintenanceWindow::Kind::monthly:
        j["recurrence"] = {{"nth", m.nth}, {"weekday", kDayNames[m.weekday]}};
        j["start"] = format_hhmm(m.start_min);
        j["end"] = format_hhmm(m.end_min);
        break;
    }
    if (!m.note.empty()) j["note"] = m.note;
    maint.push_back(std::move(j));
  }
  out["maintenance"] = std::move(maint);
  return out;
}

Schedule always_available() {
  Schedule s;
  s.zone = date::locate_zone("UTC");
  return s;
}

bool in_maintenance(const Schedule& s, UtcTime t) {
  bool hit = false;
  for (const auto& m : s.maintenance)
    if (m.kind == MaintenanceWindow::Kind::one_off && m.start_utc <= t && t < m.end_utc) return true;
  for_each_occurrence(s, t, t, [&](const UtcInterval& i, bool maintenance) {
    if (maintenance && i.first <= t && t < i.second) hit = true;
  });
  return hit;
}

bool is_available(const Schedule& s, UtcTime t) {
  for (const auto& m : s.maintenance)
    if (m.kind == MaintenanceWindow::Kind::one_off && m.start_utc <= t && t < m.end_utc) return false;
  bool in_window = s.always;
  bool in_maint = false;
  for_each_occurrence(s, t, t, [&](const UtcInterval& i, bool maintenance) {
    if (i.first <= t && t < i.second) (maintenance ? in_maint : in_window) = true;
  });
  return in_window && !in_maint;
}

std::optional<UtcTime> available_until(const Schedule& s, UtcTime t) {
  if (!is_available(s, t)) return std::nullopt;
  if (s.always && s.maintenance.empty()) return std::nullopt;
  return first_change_to(s, t, false);
}

std::optional<UtcTime> next_window_start(const Schedule& s, UtcTime t) {
  if (s.always && s.maintenance.empty()) return std::nullopt;
  return first_change_to(s, t, true);
}

std::vector<Occurrence> occurrences(const Schedule& s, UtcTime from, UtcTime to) {
  std::vector<Occurrence> out;
  if (to <= from) return out;
  const auto keep = [&](const UtcInterval& i, int maintenance) {
    if (i.first < to && i.second > from) out.push_back(Occurrence{i.first, i.second, maintenance});
  };
  const UtcMapper map(*s.zone, from, to);
  const LocalDay first = days_around(s, from).first;
  const LocalDay last = days_around(s, to).second;
  for (LocalDay d = first; d <= last; d += days{1}) {
    if (!s.always) {
      for (const auto& w : s.windows)
        if (has_day(w.days, d)) keep(map(local_interval(d, w.start_min, w.end_min)), -1);
    }
    for (std::size_t i = 0; i < s.maintenance.size(); ++i) {
      const auto& m = s.maintenance[i];
      if (m.kind != MaintenanceWindow::Kind::one_off && recurs_on(m, d))
        keep(map(local_interval(d, m.start_min, m.end_min)), static_cast<int>(i));
    }
  }
  for (std::size_t i = 0; i < s.maintenance.size(); ++i) {
    const auto& m = s.maintenance[i];
    if (m.kind == MaintenanceWindow::Kind::one_off) keep({m.start_utc, m.end_utc}, static_cast<int>(i));
  }
  return out;
}

std::optional<UtcTime> next_change(const Schedule& s, UtcTime t, std::chrono::seconds horizon) {
  const auto points = change_points(s, t, t + horizon);
  if (points.empty()) return std::nullopt;
  return points.front();
}

}  // namespace gpunex::core
