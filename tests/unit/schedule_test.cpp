#include "core/schedule.hpp"

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "core/json_reader.hpp"
#include "core/rfc3339.hpp"
#include "test_time.hpp"

using namespace gpunex::core;  // NOLINT: test file
using gpunex::test_support::utc;

namespace {

std::string show(std::optional<UtcTime> t) { return t ? date::format("%FT%TZ", *t) : "none"; }

Schedule parse(const std::string& json) {
  auto r = parse_schedule(nlohmann::json::parse(json));
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? std::move(r).value() : always_available();
}

Error parse_error(const std::string& json) {
  auto r = parse_schedule(nlohmann::json::parse(json));
  EXPECT_FALSE(r.ok()) << json;
  return r.ok() ? Error{} : r.error();
}

std::string windows(const std::string& tz, const std::string& windows_json, const std::string& maintenance = "[]") {
  return R"({"timezone": ")" + tz + R"(", "always": false, "windows": )" + windows_json +
         R"(, "maintenance": )" + maintenance + "}";
}

}  // namespace

// ---- plain weeks ----

TEST(Schedule, AlwaysOn) {
  auto s = parse(R"({"timezone": "UTC", "always": true})");
  EXPECT_TRUE(is_available(s, utc("2026-01-01T00:00:00Z")));
  EXPECT_EQ(available_until(s, utc("2026-01-01T00:00:00Z")), std::nullopt);
  EXPECT_EQ(next_window_start(s, utc("2026-01-01T00:00:00Z")), std::nullopt);
}

TEST(Schedule, WindowAcrossMidnightInTokyo) {
  // Asia/Tokyo is UTC+9 all year. Friday 2026-01-02, 18:00 local = 09:00 UTC.
  auto s = parse(windows("Asia/Tokyo", R"([{"days": ["fri"], "start": "18:00", "end": "08:00"}])"));
  EXPECT_FALSE(is_available(s, utc("2026-01-02T08:59:59Z")));  // Fri 17:59:59
  EXPECT_TRUE(is_available(s, utc("2026-01-02T09:00:00Z")));   // Fri 18:00
  EXPECT_TRUE(is_available(s, utc("2026-01-02T15:00:00Z")));   // Sat 00:00
  EXPECT_TRUE(is_available(s, utc("2026-01-02T22:59:59Z")));   // Sat 07:59:59
  EXPECT_FALSE(is_available(s, utc("2026-01-02T23:00:00Z")));  // Sat 08:00
  EXPECT_FALSE(is_available(s, utc("2026-01-03T09:30:00Z")));  // Sat 18:30: only Friday starts a window
  EXPECT_EQ(show(available_until(s, utc("2026-01-02T11:00:00Z"))), "2026-01-02T23:00:00Z");
  EXPECT_EQ(available_until(s, utc("2026-01-03T09:30:00Z")), std::nullopt);  // not available now
  EXPECT_EQ(show(next_window_start(s, utc("2026-01-03T00:00:00Z"))), "2026-01-09T09:00:00Z");
  // While available, the next start is the one after the current window.
  EXPECT_EQ(show(next_window_start(s, utc("2026-01-02T10:00:00Z"))), "2026-01-09T09:00:00Z");
}

TEST(Schedule, WeekWrapsFromSundayToMonday) {
  auto s = parse(windows("UTC", R"([{"days": ["sun"], "start": "22:00", "end": "06:00"}])"));
  // 2026-01-04 is a Sunday.
  EXPECT_TRUE(is_available(s, utc("2026-01-04T23:00:00Z")));
  EXPECT_TRUE(is_available(s, utc("2026-01-05T05:59:00Z")));  // Monday
  EXPECT_FALSE(is_available(s, utc("2026-01-05T06:00:00Z")));
  EXPECT_FALSE(is_available(s, utc("2026-01-03T23:00:00Z")));  // Saturday night
  EXPECT_EQ(show(available_until(s, utc("2026-01-04T22:00:00Z"))), "2026-01-05T06:00:00Z");
  EXPECT_EQ(show(next_window_start(s, utc("2026-01-05T12:00:00Z"))), "2026-01-11T22:00:00Z");
}

TEST(Schedule, AdjoiningWindowsMergeAcrossTheWeekEnd) {
  auto s = parse(windows("UTC", R"([{"days": ["sat", "sun"], "start": "00:00", "end": "24:00"},
                                   {"days": ["mon"], "start": "00:00", "end": "09:00"}])"));
  EXPECT_EQ(show(available_until(s, utc("2026-01-03T10:00:00Z"))), "2026-01-05T09:00:00Z");
  EXPECT_FALSE(is_available(s, utc("2026-01-05T09:00:00Z")));
  EXPECT_EQ(show(next_window_start(s, utc("2026-01-05T09:00:00Z"))), "2026-01-10T00:00:00Z");
}

TEST(Schedule, OverlappingWindowsAreAUnion) {
  auto s = parse(windows("UTC", R"([{"days": ["mon"], "start": "08:00", "end": "12:00"},
                                   {"days": ["mon"], "start": "10:00", "end": "14:00"}])"));
  EXPECT_EQ(show(available_until(s, utc("2026-01-05T09:00:00Z"))), "2026-01-05T14:00:00Z");
}

TEST(Schedule, EveryDayWindowsMeanNoEndInSight) {
  auto s = parse(windows("Europe/Berlin",
                         R"([{"days": ["mon","tue","wed","thu","fri","sat","sun"], "start": "00:00", "end": "24:00"}])"));
  EXPECT_TRUE(is_available(s, utc("2026-03-29T01:30:00Z")));
  EXPECT_EQ(available_until(s, utc("2026-03-29T01:30:00Z")), std::nullopt);
}

// ---- daylight saving: Europe/Berlin (2026-03-29 01:00 UTC: 02:00 CET → 03:00 CEST;
//      2026-10-25 01:00 UTC: 03:00 CEST → 02:00 CET) ----

TEST(ScheduleDst, BerlinWindowStartingInTheSkippedHourOpensAtTheTransition) {
  auto s = parse(windows("Europe/Berlin", R"([{"days": ["sun"], "start": "02:30", "end": "05:00"}])"));
  EXPECT_FALSE(is_available(s, utc("2026-03-29T00:59:59Z")));  // 01:59:59 CET
  EXPECT_TRUE(is_available(s, utc("2026-03-29T01:00:00Z")));   // 03:00 CEST
  EXPECT_EQ(show(available_until(s, utc("2026-03-29T01:00:00Z"))), "2026-03-29T03:00:00Z");  // 05:00 CEST
  EXPECT_EQ(show(next_window_start(s, utc("2026-03-28T12:00:00Z"))), "2026-03-29T01:00:00Z");
  // The week before, in winter time, the same window is 01:30–04:00 UTC.
  EXPECT_EQ(show(next_window_start(s, utc("2026-03-21T12:00:00Z"))), "2026-03-22T01:30:00Z");
}

TEST(ScheduleDst, BerlinWindowEndingInTheSkippedHourClosesAtTheTransition) {
  auto s = parse(windows("Europe/Berlin", R"([{"days": ["sat"], "start": "22:00", "end": "02:30"}])"));
  EXPECT_TRUE(is_available(s, utc("2026-03-28T21:00:00Z")));  // Sat 22:00 CET
  EXPECT_EQ(show(available_until(s, utc("2026-03-28T21:00:00Z"))), "2026-03-29T01:00:00Z");
  EXPECT_FALSE(is_available(s, utc("2026-03-29T01:00:00Z")));
}

TEST(ScheduleDst, BerlinFallBackKeepsTheWindowUnbroken) {
  // 02:15–06:00 on the fall-back Sunday: opens at the first 02:15 (CEST), runs through the
  // repeated hour, ends at 06:00 CET; 4 h 45 min of wall clock become 5 h 45 min of real time.
  auto s = parse(windows("Europe/Berlin", R"([{"days": ["sun"], "start": "02:15", "end": "06:00"}])"));
  EXPECT_FALSE(is_available(s, utc("2026-10-25T00:14:59Z")));
  EXPECT_TRUE(is_available(s, utc("2026-10-25T00:15:00Z")));  // 02:15 CEST
  EXPECT_TRUE(is_available(s, utc("2026-10-25T01:05:00Z")));  // 02:05 CET, the second pass
  EXPECT_EQ(show(available_until(s, utc("2026-10-25T00:15:00Z"))), "2026-10-25T05:00:00Z");
}

TEST(ScheduleDst, BerlinWindowEndingInTheRepeatedHourEndsAtItsSecondPass) {
  auto s = parse(windows("Europe/Berlin", R"([{"days": ["sat"], "start": "22:00", "end": "02:30"}])"));
  EXPECT_EQ(show(available_until(s, utc("2026-10-24T21:00:00Z"))), "2026-10-25T01:30:00Z");  // 02:30 CET
  EXPECT_TRUE(is_available(s, utc("2026-10-25T00:45:00Z")));   // 02:45 CEST: past the first 02:30
  EXPECT_FALSE(is_available(s, utc("2026-10-25T01:30:00Z")));
}

// ---- America/New_York (2026-03-08 07:00 UTC: 02:00 EST → 03:00 EDT;
//      2026-11-01 06:00 UTC: 02:00 EDT → 01:00 EST) ----

TEST(ScheduleDst, NewYorkNightWindowAcrossSpringForward) {
  // Sat 20:00 → Sun 08:00 local: 12 h of wall clock, 11 h of real time that night.
  auto s = parse(windows("America/New_York", R"([{"days": ["sat"], "start": "20:00", "end": "08:00"}])"));
  EXPECT_TRUE(is_available(s, utc("2026-03-08T01:00:00Z")));   // Sat 20:00 EST
  EXPECT_EQ(show(available_until(s, utc("2026-03-08T01:00:00Z"))), "2026-03-08T12:00:00Z");  // 08:00 EDT
  EXPECT_TRUE(is_available(s, utc("2026-03-08T07:00:00Z")));   // 03:00 EDT
  EXPECT_FALSE(is_available(s, utc("2026-03-08T12:00:00Z")));
  // The weekend before, 08:00 EST is 13:00 UTC.
  EXPECT_EQ(show(available_until(s, utc("2026-03-01T01:00:00Z"))), "2026-03-01T13:00:00Z");
  EXPECT_EQ(show(next_window_start(s, utc("2026-03-08T12:00:00Z"))), "2026-03-15T00:00:00Z");  // Sat 20:00 EDT
}

TEST(ScheduleDst, NewYorkFallBack) {
  // A window 01:30–06:00 on the fall-back Sunday opens at the first 01:30 (EDT).
  auto s = parse(windows("America/New_York", R"([{"days": ["sun"], "start": "01:30", "end": "06:00"}])"));
  EXPECT_FALSE(is_available(s, utc("2026-11-01T05:29:00Z")));
  EXPECT_TRUE(is_available(s, utc("2026-11-01T05:30:00Z")));  // 01:30 EDT
  EXPECT_TRUE(is_available(s, utc("2026-11-01T06:10:00Z")));  // 01:10 EST, second pass
  EXPECT_EQ(show(available_until(s, utc("2026-11-01T05:30:00Z"))), "2026-11-01T11:00:00Z");  // 06:00 EST
  // A window ending at 01:30 closes at the second 01:30.
  auto night = parse(windows("America/New_York", R"([{"days": ["sat"], "start": "22:00", "end": "01:30"}])"));
  EXPECT_EQ(show(available_until(night, utc("2026-11-01T03:00:00Z"))), "2026-11-01T06:30:00Z");
}

TEST(ScheduleDst, TokyoHasNoTransitions) {
  auto s = parse(windows("Asia/Tokyo", R"([{"days": ["sun"], "start": "02:30", "end": "05:00"}])"));
  // 2026-03-29 is a Sunday; 02:30 JST = Sat 17:30 UTC, every week of the year.
  EXPECT_EQ(show(next_window_start(s, utc("2026-03-27T00:00:00Z"))), "2026-03-28T17:30:00Z");
  EXPECT_EQ(show(next_window_start(s, utc("2026-10-23T00:00:00Z"))), "2026-10-24T17:30:00Z");
  EXPECT_EQ(show(available_until(s, utc("2026-10-24T17:30:00Z"))), "2026-10-24T20:00:00Z");
}

// ---- maintenance ----

TEST(Maintenance, OneOffHidesAnAlwaysOnMachine) {
  auto s = parse(R"({"timezone": "UTC", "always": true, "maintenance": [
      {"category": "power", "start": "2026-02-10T02:00:00Z", "end": "2026-02-10T04:00:00Z", "note": "UPS swap"}]})");
  EXPECT_TRUE(is_available(s, utc("2026-02-10T01:59:59Z")));
  EXPECT_TRUE(in_maintenance(s, utc("2026-02-10T02:00:00Z")));
  EXPECT_FALSE(is_available(s, utc("2026-02-10T02:00:00Z")));
  EXPECT_TRUE(is_available(s, utc("2026-02-10T04:00:00Z")));
  EXPECT_EQ(show(available_until(s, utc("2026-02-09T00:00:00Z"))), "2026-02-10T02:00:00Z");
  EXPECT_EQ(show(next_window_start(s, utc("2026-02-10T03:00:00Z"))), "2026-02-10T04:00:00Z");
  EXPECT_EQ(available_until(s, utc("2026-02-11T00:00:00Z")), std::nullopt);
}

TEST(Maintenance, FirstSundayOfEachMonthInTheScheduleZone) {
  auto s = parse(R"({"timezone": "Europe/Berlin", "always": true, "maintenance": [
      {"category": "software", "recurrence": {"nth": 1, "weekday": "sun"}, "start": "02:00", "end": "04:00"}]})");
  // First Sundays: 2026-02-01 (CET, 01:00–03:00 UTC), 2026-06-07 (CEST, 00:00–02:00 UTC).
  EXPECT_TRUE(in_maintenance(s, utc("2026-02-01T01:00:00Z")));
  EXPECT_FALSE(in_maintenance(s, utc("2026-02-01T03:00:00Z")));
  EXPECT_FALSE(in_maintenance(s, utc("2026-02-08T01:30:00Z")));  // second Sunday
  EXPECT_TRUE(in_maintenance(s, utc("2026-06-07T00:30:00Z")));
  EXPECT_EQ(show(available_until(s, utc("2026-02-02T00:00:00Z"))), "2026-03-01T01:00:00Z");
  EXPECT_EQ(show(next_window_start(s, utc("2026-06-07T01:00:00Z"))), "2026-06-07T02:00:00Z");
}

TEST(Maintenance, LastAndFifthWeekdays) {
  auto last = parse(R"({"timezone": "UTC", "always": true, "maintenance": [
      {"category": "disk", "recurrence": {"nth": -1, "weekday": "fri"}, "start": "23:00", "end": "01:00"}]})");
  // Last Friday of January 2026 is the 30th; the window runs into Saturday the 31st.
  EXPECT_TRUE(in_maintenance(last, utc("2026-01-30T23:30:00Z")));
  EXPECT_TRUE(in_maintenance(last, utc("2026-01-31T00:30:00Z")));
  EXPECT_FALSE(in_maintenance(last, utc("2026-01-23T23:30:00Z")));
  auto fifth = parse(R"({"timezone": "UTC", "always": true, "maintenance": [
      {"category": "gpu", "recurrence": {"nth": 5, "weekday": "thu"}, "start": "10:00", "end": "11:00"}]})");
  // January 2026 has five Thursdays (29th); February 2026 has four.
  EXPECT_TRUE(in_maintenance(fifth, utc("2026-01-29T10:30:00Z")));
  EXPECT_EQ(show(available_until(fifth, utc("2026-02-01T00:00:00Z"))), "2026-04-30T10:00:00Z");
}

TEST(Maintenance, WeeklyInsideAWindowEndsTheOfferEarly) {
  auto s = parse(windows("UTC", R"([{"days": ["mon"], "start": "08:00", "end": "20:00"}])",
                         R"([{"category": "network", "recurrence": {"days": ["mon"]}, "start": "12:00", "end": "13:00"}])"));
  EXPECT_EQ(show(available_until(s, utc("2026-01-05T09:00:00Z"))), "2026-01-05T12:00:00Z");
  EXPECT_FALSE(is_available(s, utc("2026-01-05T12:30:00Z")));
  EXPECT_EQ(show(next_window_start(s, utc("2026-01-05T12:30:00Z"))), "2026-01-05T13:00:00Z");
}

TEST(Maintenance, OverlapsAreRefusedNamingTheLaterEntry) {
  const auto overlap = [](const std::string& a, const std::string& b) {
    return parse_error(R"({"timezone": "Europe/Berlin", "always": true, "maintenance": [)" + a + "," + b + "]}");
  };
  const std::string first_sunday = R"({"category": "power", "recurrence": {"nth": 1, "weekday": "sun"}, "start": "02:00", "end": "04:00"})";
  // One-off vs one-off.
  auto e = overlap(R"({"category": "power", "start": "2026-02-10T02:00:00Z", "end": "2026-02-10T04:00:00Z"})",
                   R"({"category": "disk", "start": "2026-02-10T03:59:00Z", "end": "2026-02-10T05:00:00Z"})");
  EXPECT_EQ(e.field, "maintenance[1]");
  EXPECT_EQ(e.detail_code, "maintenance_overlap");
  // Monthly vs one-off on the first Sunday of March 2026 (01:00–03:00 UTC).
  e = overlap(first_sunday, R"({"category": "disk", "start": "2026-03-01T02:30:00Z", "end": "2026-03-01T05:00:00Z"})");
  EXPECT_EQ(e.field, "maintenance[1]");
  // Monthly vs weekly on Sundays.
  e = overlap(first_sunday, R"({"category": "gpu", "recurrence": {"days": ["sun"]}, "start": "03:00", "end": "05:00"})");
  EXPECT_EQ(e.field, "maintenance[1]");
  // Weekly vs weekly across midnight into Monday.
  e = overlap(R"({"category": "gpu", "recurrence": {"days": ["sun"]}, "start": "23:00", "end": "01:00"})",
              R"({"category": "gpu", "recurrence": {"days": ["mon"]}, "start": "00:30", "end": "02:00"})");
  EXPECT_EQ(e.field, "maintenance[1]");
  // First Sunday vs last Saturday running past midnight into a month's first Sunday (e.g. 2026-02-28 → 03-01).
  e = overlap(first_sunday, R"({"category": "gpu", "recurrence": {"nth": -1, "weekday": "sat"}, "start": "22:00", "end": "02:30"})");
  EXPECT_EQ(e.field, "maintenance[1]");
  // Monthly vs monthly that never meet.
  auto ok = parse_schedule(nlohmann::json::parse(R"({"timezone": "Europe/Berlin", "always": true, "maintenance": [)" +
                                                 first_sunday + R"(, {"category": "gpu", "recurrence": {"nth": 2, "weekday": "sun"}, "start": "02:00", "end": "04:00"}]})"));
  EXPECT_TRUE(ok.ok());
  // Back to back is not an overlap.
  ok = parse_schedule(nlohmann::json::parse(R"({"timezone": "UTC", "always": true, "maintenance": [
      {"category": "power", "start": "2026-02-10T02:00:00Z", "end": "2026-02-10T04:00:00Z"},
      {"category": "power", "start": "2026-02-10T04:00:00Z", "end": "2026-02-10T05:00:00Z"}]})"));
  EXPECT_TRUE(ok.ok());
}

// ---- bad input names the field ----

TEST(ScheduleInput, ErrorsNameTheField) {
  struct Case {
    std::string json;
    std::string field;
    std::string code;
  };
  const std::vector<Case> cases = {
      {R"({"timezone": "Mars/Olympus", "always": true})", "timezone", "unknown_timezone"},
      {R"({"timezone": "Europe/Berlin"})", "always", "missing_field"},
      {windows("UTC", R"([{"days": ["mon"], "start": "08:00", "end": "08:00"}])"), "windows[0].end", "empty_window"},
      {windows("UTC", R"([{"days": ["mon"], "start": "8:00", "end": "09:00"}])"), "windows[0].start", "invalid_time"},
      {windows("UTC", R"([{"days": ["mon"], "start": "24:00", "end": "09:00"}])"), "windows[0].start", "invalid_time"},
      {windows("UTC", R"([{"days": ["mon"], "start": "08:00", "end": "09:60"}])"), "windows[0].end", "invalid_time"},
      {windows("UTC", R"([{"days": ["monday"], "start": "08:00", "end": "09:00"}])"), "windows[0].days[0]", "invalid_day"},
      {windows("UTC", R"([{"days": ["mon", "mon"], "start": "08:00", "end": "09:00"}])"), "windows[0].days[1]", "duplicate_day"},
      {windows("UTC", R"([{"days": [], "start": "08:00", "end": "09:00"}])"), "windows[0].days", "invalid_field"},
      {windows("UTC", R"([{"days": ["mon"], "start": "08:00", "end": "09:00", "tz": "x"}])"), "windows[0].tz", "unknown_field"},
      {windows("UTC", "[]"), "windows", "no_windows"},
      {R"({"timezone": "UTC", "always": true, "windows": [{"days": ["mon"], "start": "08:00", "end": "09:00"}]})", "windows", "windows_with_always"},
      {R"({"timezone": "UTC", "always": true, "colour": "red"})", "colour", "unknown_field"},
      {R"({"timezone": "UTC", "always": true, "maintenance": [{"category": "cosmic", "start": "2026-01-01T00:00:00Z", "end": "2026-01-01T01:00:00Z"}]})", "maintenance[0].category", "invalid_category"},
      {R"({"timezone": "UTC", "always": true, "maintenance": [{"category": "power", "start": "02:00", "end": "04:00"}]})", "maintenance[0].start", "invalid_time"},
      {R"({"timezone": "UTC", "always": true, "maintenance": [{"category": "power", "start": "2026-01-01T02:00:00Z", "end": "2026-01-01T02:00:00Z"}]})", "maintenance[0].end", "empty_window"},
      {R"({"timezone": "UTC", "always": true, "maintenance": [{"category": "power", "start": "2026-01-01T02:00:00Z", "end": "2026-03-01T02:00:00Z"}]})", "maintenance[0].end", "window_too_long"},
      {R"({"timezone": "UTC", "always": true, "maintenance": [{"category": "power", "recurrence": {"nth": 0, "weekday": "sun"}, "start": "02:00", "end": "04:00"}]})", "maintenance[0].recurrence.nth", "invalid_nth"},
      {R"({"timezone": "UTC", "always": true, "maintenance": [{"category": "power", "recurrence": {"nth": 1, "weekday": "sunday"}, "start": "02:00", "end": "04:00"}]})", "maintenance[0].recurrence.weekday", "invalid_day"},
      {R"({"timezone": "UTC", "always": true, "maintenance": [{"category": "power", "recurrence": {"days": ["sun"], "nth": 1}, "start": "02:00", "end": "04:00"}]})", "maintenance[0].recurrence.nth", "unknown_field"},
      {R"({"timezone": "UTC", "always": true, "maintenance": [{"category": "power", "recurrence": {"days": ["sun"]}, "start": "02:00", "end": "02:00"}]})", "maintenance[0].end", "empty_window"},
  };
  for (const auto& c : cases) {
    auto e = parse_error(c.json);
    EXPECT_EQ(e.field, c.field) << c.json << " → " << e.message;
    EXPECT_EQ(e.detail_code.value_or(std::string(code_name(e.code))), c.code) << c.json << " → " << e.message;
  }
}

// Issue #14: every invalid field at once, each in words a person understands.
TEST(ScheduleInput, ListsEveryInvalidField) {
  auto e = parse_error(windows("Mars/Olympus",
                               R"([{"days": ["mon"], "start": "8:00", "end": "09:00"},
                                   {"days": ["sat", "someday"], "start": "10:00", "end": "12:00"}])",
                               R"([{"category": "cosmic", "start": "2026-01-01T00:00:00Z", "end": "2026-01-01T01:00:00Z"}])"));
  EXPECT_EQ(e.field, "timezone");
  EXPECT_EQ(e.detail_code, "unknown_timezone");
  std::vector<std::pair<std::string, std::string>> got;
  for (const auto& f : e.fields) got.emplace_back(f.field, f.message);
  const std::vector<std::pair<std::string, std::string>> want = {
      {"timezone", "Time zone \"Mars/Olympus\" is not known; use a name such as \"Europe/Berlin\""},
      {"windows[0].start", "Window 1: start time must be a time of day \"HH:MM\" (00:00–23:59)"},
      {"windows[1].days[1]", "Window 2: day 2 must be one of mon, tue, wed, thu, fri, sat, sun"},
      {"maintenance[0].category",
       "Maintenance window 1: category must be one of power, network, disk, gpu, software, other"},
  };
  EXPECT_EQ(got, want);
}

TEST(ScheduleInput, RoundTripsThroughTheApiForm) {
  const std::string json = windows(
      "America/New_York",
      R"([{"days": ["fri", "mon"], "start": "18:00", "end": "08:00"}, {"days": ["sun"], "start": "00:00", "end": "24:00"}])",
      R"([{"category": "power", "start": "2026-02-10T02:00:00Z", "end": "2026-02-10T04:00:00Z", "note": "UPS"},
          {"category": "software", "recurrence": {"nth": 1, "weekday": "sun"}, "start": "02:00", "end": "04:00"},
          {"category": "network", "recurrence": {"days": ["wed"]}, "start": "12:00", "end": "12:30"}])");
  auto s = parse(json);
  auto j = schedule_to_json(s);
  EXPECT_EQ(j["windows"][0]["days"], nlohmann::json({"mon", "fri"}));
  EXPECT_EQ(j["windows"][1]["end"], "24:00");
  EXPECT_EQ(j["maintenance"][0]["start"], "2026-02-10T02:00:00Z");
  EXPECT_EQ(j["maintenance"][1]["recurrence"]["nth"], 1);
  auto again = parse_schedule(j);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(schedule_to_json(*again), j);
}

// The API document's body of PUT /v1/provider/machines/{id}/schedule is parse_schedule described.
TEST(Schedule, ItsParserDescribesTheBodyItReads) {
  using nlohmann::json;
  const json s = describe_body([](const json& body) { (void)parse_schedule(body); });
  EXPECT_EQ(s["required"], json({"timezone", "always"}));
  EXPECT_EQ(s["additionalProperties"], false);
  const auto& window = s["properties"]["windows"]["items"];
  EXPECT_TRUE(s["properties"]["windows"]["maxItems"].is_number());
  EXPECT_EQ(window["required"], json({"days", "start", "end"}));
  EXPECT_EQ(window["properties"]["days"]["items"]["enum"], json({"sun", "mon", "tue", "wed", "thu", "fri", "sat"}));
  EXPECT_EQ(window["properties"]["days"]["uniqueItems"], true);
  EXPECT_EQ(window["properties"]["start"]["maxLength"], 5);
  // A maintenance window: one-off (start/end date-times) or recurring, each form's fields required with it.
  const auto& m = s["properties"]["maintenance"]["items"];
  EXPECT_EQ(m["required"], json({"category", "start", "end"}));
  EXPECT_EQ(m["properties"]["category"]["enum"], json({"power", "network", "disk", "gpu", "software", "other"}));
  EXPECT_EQ(m["properties"]["start"]["maxLength"], 40);
  const auto& rec = m["properties"]["recurrence"];
  EXPECT_EQ(rec["type"], json({"object", "null"}));
  EXPECT_FALSE(rec.contains("required"));
  EXPECT_EQ(rec["properties"]["days"]["description"], "Required when the recurrence is weekly.");
  EXPECT_EQ(rec["properties"]["nth"]["minimum"], -1);
  EXPECT_EQ(rec["properties"]["weekday"]["enum"][1], "mon");
}
