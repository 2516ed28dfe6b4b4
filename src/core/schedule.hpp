#pragma once
// A machine's availability (DESIGN §3.9): always on, or weekly windows of
// wall-clock time in an IANA time zone, minus maintenance windows.
//
// The rule, which also settles daylight-saving changes: each occurrence of a
// wall-clock window [start, end) runs, in real time, from the first instant
// the zone's clock shows its start to the last instant it shows its end; the
// machine is available inside an occurrence and outside every maintenance
// window. So an occurrence is always one unbroken stretch, and on the
// transition days:
//  - spring forward (Berlin 02:00 → 03:00): a boundary at a wall time that
//    does not exist takes effect at the transition; a window 02:30–05:00 opens
//    at 03:00 CEST, a window 22:00–02:30 closes at 03:00 CEST (= 01:00 UTC).
//  - fall back (New York 02:00 → 01:00): a start in the repeated hour opens at
//    its first pass, an end there closes at its second pass; a window
//    22:00–01:30 runs until 01:30 EST, a window 01:30–06:00 opens at 01:30 EDT.
//    (A window lying wholly inside the repeated hour therefore also covers the
//    stretch between its two passes.)
// A window whose end is at or before its start ends the next day
// ("fri" 18:00–08:00 runs Fri 18:00 → Sat 08:00; "sun" wraps to Monday);
// "24:00" is allowed as an end; end == start is refused.
//
// Pure logic: the only outside input is the OS tz database, read through
// Howard Hinnant's date/tz.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <date/tz.h>
#include <nlohmann/json.hpp>

#include "core/result.hpp"

namespace gpunex::core {

using UtcTime = std::chrono::sys_seconds;

//! Days of the week as a bit set: bit (date::weekday::c_encoding()), Sunday = bit 0.
using DaySet = std::uint8_t;

//! One weekly window of wall-clock time, in minutes after local midnight.
struct WeeklyWindow {
  DaySet days = 0;
  int start_min = 0;  // 0..1439
  int end_min = 0;    // 0..1440; at or before start_min: ends the next day
};

enum class MaintenanceCategory { power, network, disk, gpu, software, other };

//! A declared maintenance window: once (UTC instants), every week, or the nth weekday of each month.
struct MaintenanceWindow {
  enum class Kind { one_off, weekly, monthly };
  Kind kind = Kind::one_off;
  MaintenanceCategory category = MaintenanceCategory::other;
  UtcTime start_utc{};  // one_off
  UtcTime end_utc{};    // one_off
  DaySet days = 0;      // weekly
  int nth = 1;          // monthly: 1..5, or -1 for the last one of the month
  unsigned weekday = 0; // monthly: c_encoding, Sunday = 0
  int start_min = 0;    // weekly, monthly: wall-clock minutes, as WeeklyWindow
  int end_min = 0;
  std::string note;
};

//! A machine's availability schedule, validated.
struct Schedule {
  std::string timezone = "UTC";
  const date::time_zone* zone = nullptr;  // resolved from timezone; never null once parsed
  bool always = true;
  std::vector<WeeklyWindow> windows;
  std::vector<MaintenanceWindow> maintenance;
};

//! Limits on what a schedule may hold.
inline constexpr std::size_t kMaxWindows = 50;
inline constexpr std::size_t kMaxMaintenance = 20;
//! A one-off maintenance window may last at most this long.
inline constexpr std::chrono::hours kMaxOneOffMaintenance{24 * 31};

//! Reads and validates the API form (API.md, PUT /v1/provider/machines/{id}/schedule):
//! {timezone, always, windows: [{days, start, end}], maintenance: [{category, start, end, note?,
//! recurrence?: {nth, weekday} | {days}}]}. One-off maintenance start/end are RFC 3339 times;
//! recurring ones are "HH:MM" in the schedule's zone. Errors name the field as a JSON path
//! ("windows[1].end", "maintenance[2]" for an overlap). Fields are read relative to `path`.
Result<Schedule> parse_schedule(const nlohmann::json& body, const std::string& path = "");

//! The canonical API form of a schedule; parse_schedule(schedule_to_json(s)) gives s back.
nlohmann::json schedule_to_json(const Schedule& s);

//! The 24/7 schedule in UTC with no maintenance: what a machine has until its provider sets one.
Schedule always_available();

//! True when `t` is inside a maintenance window.
bool in_maintenance(const Schedule& s, UtcTime t);
//! True when `t` is inside a window (or the schedule is always on) and not in maintenance.
bool is_available(const Schedule& s, UtcTime t);
//! When available at `t`: the first later instant at which it is not (the current window's
//! end, or the next maintenance start). nullopt when not available at `t`, or when no end
//! falls within about 400 days (an always-on schedule without maintenance).
std::optional<UtcTime> available_until(const Schedule& s, UtcTime t);
//! The first instant after `t` at which the machine becomes available (after the current
//! window, if it is available now); nullopt when none within about 400 days.
std::optional<UtcTime> next_window_start(const Schedule& s, UtcTime t);

//! The first instant after `t` and before `t + horizon` at which availability may change;
//! nullopt when none does. is_available is the same at every instant from `t` up to it.
std::optional<UtcTime> next_change(const Schedule& s, UtcTime t, std::chrono::seconds horizon);

//! One stretch of a schedule in UTC: an occurrence of a weekly window, or of a maintenance window.
struct Occurrence {
  UtcTime start{}, end{};
  int maintenance = -1;  // the index in Schedule::maintenance; -1 for a weekly availability window
};
//! Every occurrence that overlaps [from, to), unsorted: the weekly windows' (none for an always-on
//! schedule, which is available throughout) and the maintenance windows', each occurrence mapped to
//! UTC by the DST rule above. What uptime against the schedule is measured on.
std::vector<Occurrence> occurrences(const Schedule& s, UtcTime from, UtcTime to);

//! "power", "network", ...
std::string_view category_name(MaintenanceCategory c);

}  // namespace gpunex::core
