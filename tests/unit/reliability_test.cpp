#include "core/reliability.hpp"

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/rfc3339.hpp"

using namespace gpunex::core;               // NOLINT: test file
using namespace gpunex::core::reliability;  // NOLINT: test file

namespace {

std::int64_t ms(const std::string& rfc3339) {
  const auto v = parse_rfc3339_ms(rfc3339);
  EXPECT_TRUE(v.has_value()) << rfc3339;
  return v.value_or(0);
}

Schedule parse(const std::string& json) {
  auto r = parse_schedule(nlohmann::json::parse(json));
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? std::move(r).value() : always_available();
}

//! The minute of the day (UTC) that `hhmm` names.
std::size_t minute(const std::string& hhmm) {
  return static_cast<std::size_t>(std::stoi(hhmm.substr(0, 2)) * 60 + std::stoi(hhmm.substr(3, 2)));
}

//! A day with every counted minute present (or `missed` of them missing), jobs and runs as given.
Day day(std::int64_t day_ms, std::int64_t counted, std::int64_t missed = 0) {
  Day d;
  d.day_ms = day_ms;
  d.full = d.complete = true;
  d.counted_min = counted;
  d.present_min = counted - missed;
  return d;
}

const Config kDefaults;

}  // namespace

// ---- scheduled minutes across DST ----

TEST(ReliabilityPlan, OfficeHoursFollowTheZoneAcrossSpringForward) {
  // Berlin 09:00-17:00 every day: 08:00-16:00 UTC in winter (CET), 07:00-15:00 UTC in summer (CEST).
  const auto s = parse(R"({"timezone": "Europe/Berlin", "always": false,
    "windows": [{"days": ["mon","tue","wed","thu","fri","sat","sun"], "start": "09:00", "end": "17:00"}]})");
  const auto winter = plan_day(s, {}, ms("2026-03-28T00:00:00Z"), kDefaults);
  EXPECT_EQ(winter.scheduled.count(), 480u);
  EXPECT_FALSE(winter.scheduled[minute("07:59")]);
  EXPECT_TRUE(winter.scheduled[minute("08:00")]);
  EXPECT_TRUE(winter.scheduled[minute("15:59")]);
  EXPECT_FALSE(winter.scheduled[minute("16:00")]);
  const auto summer = plan_day(s, {}, ms("2026-03-29T00:00:00Z"), kDefaults);  // the change is at 01:00 UTC
  EXPECT_EQ(summer.scheduled.count(), 480u);
  EXPECT_TRUE(summer.scheduled[minute("07:00")]);
  EXPECT_FALSE(summer.scheduled[minute("15:00")]);
}

TEST(ReliabilityPlan, AWindowOverTheSkippedHourIsAnHourShorter) {
  // 01:30-03:30 Berlin time: 120 minutes, but on 29 March 2026 the clock jumps 02:00 -> 03:00, so
  // the window runs 01:30 CET (00:30 UTC) to 03:30 CEST (01:30 UTC): 60 minutes. The UTC day also
  // holds the first 30 minutes of the next local day's window (01:30 CEST = 23:30 UTC).
  const auto s = parse(R"({"timezone": "Europe/Berlin", "always": false,
    "windows": [{"days": ["mon","tue","wed","thu","fri","sat","sun"], "start": "01:30", "end": "03:30"}]})");
  EXPECT_EQ(plan_day(s, {}, ms("2026-03-28T00:00:00Z"), kDefaults).scheduled.count(), 120u);
  const auto change = plan_day(s, {}, ms("2026-03-29T00:00:00Z"), kDefaults);
  EXPECT_EQ(change.scheduled.count(), 60u + 30u);
  EXPECT_TRUE(change.scheduled[minute("00:30")]);
  EXPECT_TRUE(change.scheduled[minute("01:29")]);
  EXPECT_FALSE(change.scheduled[minute("01:30")]);
  EXPECT_FALSE(change.scheduled[minute("23:29")]);
  EXPECT_TRUE(change.scheduled[minute("23:30")]);
  EXPECT_EQ(plan_day(s, {}, ms("2026-03-30T00:00:00Z"), kDefaults).scheduled.count(), 120u);
}

TEST(ReliabilityPlan, FallBackRepeatsAnHour) {
  // New York falls back on 1 November 2026 (02:00 EDT -> 01:00 EST). A 00:00-04:00 window lasts 5 h:
  // 04:00-09:00 UTC.
  const auto s = parse(R"({"timezone": "America/New_York", "always": false,
    "windows": [{"days": ["sun"], "start": "00:00", "end": "04:00"}]})");
  const auto p = plan_day(s, {}, ms("2026-11-01T00:00:00Z"), kDefaults);
  EXPECT_EQ(p.scheduled.count(), 300u);
  EXPECT_TRUE(p.scheduled[minute("04:00")]);
  EXPECT_TRUE(p.scheduled[minute("08:59")]);
  EXPECT_FALSE(p.scheduled[minute("09:00")]);
}

TEST(ReliabilityPlan, AlwaysOnCountsEveryMinute) {
  EXPECT_EQ(plan_day(always_available(), {}, ms("2026-05-01T00:00:00Z"), kDefaults).scheduled.count(), 1440u);
}

// ---- maintenance notice ----

TEST(ReliabilityMaintenance, DeclaredADayAheadCostsNothingAnHourAheadCounts) {
  const auto s = parse(R"({"timezone": "UTC", "always": true, "maintenance": [
    {"category": "power", "start": "2026-05-01T10:00:00Z", "end": "2026-05-01T12:00:00Z"}]})");
  const std::int64_t d = ms("2026-05-01T00:00:00Z");
  MinuteBits present;
  present.set();
  for (std::size_t m = minute("10:00"); m < minute("12:00"); ++m) present.reset(m);  // down for the maintenance

  const auto early = plan_day(s, {ms("2026-04-30T10:00:00Z")}, d, kDefaults);  // exactly 24 h ahead
  EXPECT_EQ(early.excused.count(), 120u);
  EXPECT_TRUE(early.late.empty());
  const Day excused = judge_day(early, present, 0, d + kDayMs, {}, {}, kDefaults);
  EXPECT_EQ(excused.counted_min, 1320);
  EXPECT_EQ(excused.present_min, 1320);
  EXPECT_EQ(excused.excused_min, 120);
  EXPECT_TRUE(excused.events.empty());
  EXPECT_DOUBLE_EQ(excused.uptime(), 1.0);

  const auto late = plan_day(s, {ms("2026-05-01T09:00:00Z")}, d, kDefaults);  // an hour ahead
  EXPECT_EQ(late.excused.count(), 0u);
  ASSERT_EQ(late.late.size(), 1u);
  const Day counted = judge_day(late, present, 0, d + kDayMs, {}, {}, kDefaults);
  EXPECT_EQ(counted.counted_min, 1440);
  EXPECT_EQ(counted.present_min, 1320);
  ASSERT_EQ(counted.events.size(), 1u);
  EXPECT_EQ(counted.events[0].minutes, 120);
  EXPECT_EQ(counted.events[0].late_declared_ms, ms("2026-05-01T09:00:00Z"));
  EXPECT_EQ(describe(counted.events[0], *date::locate_zone("UTC"), counted.uptime(), kDefaults),
            "Offline 10:00–12:00 (2 h) during scheduled hours, in maintenance declared only 1.0 h ahead (24 h notice "
            "needed): uptime 91.7% that day");

  // One second short of a day is still too late.
  EXPECT_EQ(plan_day(s, {ms("2026-04-30T10:00:01Z")}, d, kDefaults).excused.count(), 0u);
  // The notice is configuration.
  Config hour = kDefaults;
  hour.maintenance_notice_ms = 3'600'000;
  EXPECT_EQ(plan_day(s, {ms("2026-05-01T09:00:00Z")}, d, hour).excused.count(), 120u);
}

TEST(ReliabilityMaintenance, RecurringWindowIsLateOnlyForItsFirstOccurrence) {
  const auto s = parse(R"({"timezone": "UTC", "always": true, "maintenance": [
    {"category": "software", "recurrence": {"days": ["mon","tue","wed","thu","fri","sat","sun"]}, "start": "03:00", "end": "04:00"}]})");
  const std::vector<std::int64_t> declared = {ms("2026-05-01T02:00:00Z")};
  EXPECT_EQ(plan_day(s, declared, ms("2026-05-01T00:00:00Z"), kDefaults).excused.count(), 0u);
  EXPECT_EQ(plan_day(s, declared, ms("2026-05-02T00:00:00Z"), kDefaults).excused.count(), 60u);
}

TEST(ReliabilityMaintenance, OutsideTheScheduleItChangesNothing) {
  const auto s = parse(R"({"timezone": "UTC", "always": false,
    "windows": [{"days": ["fri"], "start": "09:00", "end": "17:00"}],
    "maintenance": [{"category": "power", "start": "2026-05-01T18:00:00Z", "end": "2026-05-01T20:00:00Z"}]})");
  const auto p = plan_day(s, {ms("2026-05-01T17:30:00Z")}, ms("2026-05-01T00:00:00Z"), kDefaults);
  EXPECT_EQ(p.scheduled.count(), 480u);
  EXPECT_EQ(p.excused.count(), 0u);
  EXPECT_TRUE(p.late.empty());
}

// ---- judging a day ----

TEST(ReliabilityDay, OnlyMinutesAfterRegistrationAndBeforeNowCount) {
  const std::int64_t d = ms("2026-05-01T00:00:00Z");
  const auto p = plan_day(always_available(), {}, d, kDefaults);
  MinuteBits present;
  for (std::size_t m = minute("12:00"); m < minute("13:00"); ++m) present.set(m);
  // Registered 12:00:30: minute 12:00 started before it. Judged at 13:00:59: minute 13:00 has not ended.
  const Day day = judge_day(p, present, ms("2026-05-01T12:00:30Z"), ms("2026-05-01T13:00:59Z"), {}, {}, kDefaults);
  EXPECT_FALSE(day.full);
  EXPECT_FALSE(day.complete);
  EXPECT_EQ(day.counted_min, 59);
  EXPECT_EQ(day.present_min, 59);
  EXPECT_TRUE(day.events.empty());
}

TEST(ReliabilityDay, OfflineStretchesBecomeEventsInTheProvidersTime) {
  const std::int64_t d = ms("2026-05-01T00:00:00Z");
  const auto p = plan_day(always_available(), {}, d, kDefaults);
  MinuteBits present;
  present.set();
  for (std::size_t m = minute("12:02"); m < minute("12:40"); ++m) present.reset(m);
  const Day day = judge_day(p, present, 0, d + kDayMs, {}, {}, kDefaults);
  ASSERT_EQ(day.events.size(), 1u);
  EXPECT_EQ(day.events[0].at_ms, ms("2026-05-01T12:02:00Z"));
  EXPECT_EQ(day.events[0].end_ms, ms("2026-05-01T12:40:00Z"));
  // Berlin is UTC+2 in May.
  EXPECT_EQ(describe(day.events[0], *date::locate_zone("Europe/Berlin"), day.uptime(), kDefaults),
            "Offline 14:02–14:40 (38 min) during scheduled hours: uptime 97.4% that day");
  EXPECT_FALSE(advice(day.events[0]).empty());
}

TEST(ReliabilityDay, JudgedMinutesKeepTheirJudgementWhenTheScheduleChanges) {
  const std::int64_t d = ms("2026-05-01T00:00:00Z");
  const auto before = plan_day(always_available(), {}, d, kDefaults);
  const auto narrowed = plan_day(parse(R"({"timezone": "UTC", "always": false,
    "windows": [{"days": ["fri"], "start": "18:00", "end": "20:00"}]})"),
                                 {}, d, kDefaults);
  // Judged up to noon on the 24/7 schedule; then the provider narrows it to 18:00-20:00.
  const auto merged = merge_plans(before, ms("2026-05-01T12:00:00Z"), narrowed);
  EXPECT_EQ(merged.scheduled.count(), 720u + 120u);
  EXPECT_TRUE(merged.scheduled[minute("11:59")]);
  EXPECT_FALSE(merged.scheduled[minute("12:00")]);
}

TEST(ReliabilityDay, MinutesSurviveTheirTextForm) {
  MinuteBits b;
  b.set(0);
  b.set(5);
  b.set(1439);
  const auto hex = to_hex(b);
  EXPECT_EQ(hex.size(), 360u);
  // The stored form: digit i holds minutes 4i..4i+3, the earliest in its lowest bit.
  EXPECT_EQ(hex, "12" + std::string(357, '0') + "8");
  EXPECT_EQ(from_hex(hex), b);
  MinuteBits pattern;  // every word of the bitset, across the 64-minute boundaries
  for (std::size_t m = 0; m < 1440; m += 7) pattern.set(m);
  EXPECT_EQ(from_hex(to_hex(pattern)), pattern);
  EXPECT_EQ(to_hex(pattern).substr(15, 3), "804");  // minutes 63 and 70: digit 15 bit 3, digit 17 bit 2
  EXPECT_FALSE(from_hex("xyz").has_value());
  EXPECT_FALSE(from_hex(std::string(359, '0') + "g").has_value());  // in the last, partial word
  EXPECT_FALSE(from_hex("A" + std::string(359, '0')).has_value());  // written lower case only
  EXPECT_EQ(from_hex(std::string(360, 'f')), ~MinuteBits{});
  const std::vector<std::int64_t> minutes = {ms("2026-05-01T00:05:00Z"), ms("2026-04-30T23:59:00Z")};
  EXPECT_EQ(minutes_of_day(minutes, ms("2026-05-01T00:00:00Z")).count(), 1u);
}

// ---- job completion ----

TEST(ReliabilityJobs, PriorOfFivePseudoJobsAtNinetyFivePercent) {
  const std::int64_t d = ms("2026-05-10T00:00:00Z");
  const std::int64_t now = d + 12 * 3'600'000;
  const auto score_with = [&](int ok, int failed) {
    Day today = day(d, 600);
    today.jobs = ok + failed;
    today.jobs_ok = ok;
    return score_as_of({day(d - kDayMs, 1440), today}, now, kDefaults);
  };
  EXPECT_DOUBLE_EQ(score_with(0, 0).job_completion, 0.95);  // no jobs: the prior
  EXPECT_DOUBLE_EQ(score_with(1, 0).job_completion, (1 + 4.75) / 6);
  EXPECT_DOUBLE_EQ(score_with(0, 1).job_completion, 4.75 / 6);  // one failure moves it by a sixth, not to 0
  EXPECT_DOUBLE_EQ(score_with(100, 0).job_completion, (100 + 4.75) / 105);
  EXPECT_DOUBLE_EQ(score_with(90, 10).job_completion, (90 + 4.75) / 105);
}

TEST(ReliabilityJobs, ProviderSideEndsAreFailuresWithTheirReason) {
  const std::int64_t d = ms("2026-05-10T00:00:00Z");
  std::vector<Job> jobs = {{"r_ok", d + 1000, rental::EndReason::customer_stopped, false},
                           {"r_gpu", d + 2000, rental::EndReason::gpu_failure, true},
                           {"r_yesterday", d - 1000, rental::EndReason::gpu_failure, true}};
  const Day day =
      judge_day(plan_day(always_available(), {}, d, kDefaults), MinuteBits{}.set(), 0, d + kDayMs, jobs, {}, kDefaults);
  EXPECT_EQ(day.jobs, 2);
  EXPECT_EQ(day.jobs_ok, 1);
  ASSERT_EQ(day.events.size(), 1u);
  EXPECT_EQ(describe(day.events[0], *date::locate_zone("UTC"), 1, kDefaults), "Rental r_gpu ended by GPU failure");
}

TEST(ReliabilityJobs, OlderJobsWeighLess) {
  const std::int64_t today = ms("2026-05-10T00:00:00Z");
  Day week_ago = day(today - 7 * kDayMs, 1440);
  week_ago.jobs = 1;  // failed a week ago: weight 1/2
  const auto s = score_as_of({week_ago, day(today, 10)}, today + 3'600'000, kDefaults);
  EXPECT_NEAR(s.job_completion, 4.75 / 5.5, 1e-12);
}

// ---- stability ----

TEST(ReliabilityStability, RunAgainstBaselineLoweredByThrottling) {
  GpuRun g{"GPU-0", 0, 91, 100, 0, 0, 0};
  EXPECT_DOUBLE_EQ(gpu_run_stability(g, kDefaults), 0.91);
  g.thermal_share = g.throttled_share = 0.12;
  EXPECT_DOUBLE_EQ(gpu_run_stability(g, kDefaults), 0.91 * 0.88);
  GpuRun faster{"GPU-1", 1, 105, 100, 0, 0, 0};
  EXPECT_DOUBLE_EQ(gpu_run_stability(faster, kDefaults), 1.0);  // above the baseline counts as 1
  Config half = kDefaults;
  half.throttle_penalty = 0.5;
  EXPECT_DOUBLE_EQ(gpu_run_stability(g, half), 0.91 * 0.94);

  const BenchRun run{"brun_1", 0, {g, faster}};
  EXPECT_DOUBLE_EQ(run_stability(run, kDefaults).value(), (0.91 * 0.88 + 1.0) / 2);
  EXPECT_FALSE(run_stability(BenchRun{}, kDefaults).has_value());
  Event e;
  e.kind = EventKind::benchmark_low;
  e.ratio = 0.91;
  e.thermal_share = 0.12;
  EXPECT_EQ(describe(e, *date::locate_zone("UTC"), 1, kDefaults),
            "Benchmark at 91% of baseline, thermally throttled 12% of the run");
}

TEST(ReliabilityStability, WithAndWithoutThrottlingInTheScore) {
  const std::int64_t d = ms("2026-05-10T00:00:00Z");
  const auto plan = plan_day(always_available(), {}, d, kDefaults);
  const MinuteBits all = MinuteBits{}.set();
  const BenchRun clean{"brun_a", d + 1000, {{"GPU-0", 0, 100, 100, 0, 0, 0}}};
  const BenchRun hot{"brun_b", d + 2000, {{"GPU-0", 0, 100, 100, 0.25, 0, 0.25}}};
  const Day smooth = judge_day(plan, all, 0, d + kDayMs, {}, {clean}, kDefaults);
  EXPECT_TRUE(smooth.events.empty());
  EXPECT_DOUBLE_EQ(score_as_of({smooth}, d + kDayMs, kDefaults).stability, 1.0);
  const Day throttled = judge_day(plan, all, 0, d + kDayMs, {}, {clean, hot}, kDefaults);
  ASSERT_EQ(throttled.events.size(), 1u);
  EXPECT_EQ(throttled.events[0].ref, "brun_b");
  EXPECT_DOUBLE_EQ(score_as_of({throttled}, d + kDayMs, kDefaults).stability, (1.0 + 0.75) / 2);
  // No run in the window: the stability prior, said as such.
  const auto none = score_as_of({day(d, 1440)}, d + kDayMs, kDefaults);
  EXPECT_TRUE(none.stability_is_prior);
  EXPECT_DOUBLE_EQ(none.stability, 0.95);
}

// ---- the score ----

TEST(ReliabilityScore, NewMachinesShowThePriorUntilAWholeDay) {
  const std::int64_t registered = ms("2026-05-10T12:00:00Z");
  const std::int64_t d = ms("2026-05-10T00:00:00Z");
  const auto plan = plan_day(always_available(), {}, d, kDefaults);
  const Day first = judge_day(plan, MinuteBits{}.set(), registered, d + kDayMs, {}, {}, kDefaults);
  auto s = score_as_of({first}, d + kDayMs + 60'000, kDefaults);
  EXPECT_TRUE(s.is_new);  // half a day: not a whole one
  EXPECT_DOUBLE_EQ(s.score, 90);
  const auto next = plan_day(always_available(), {}, d + kDayMs, kDefaults);
  const Day second = judge_day(next, MinuteBits{}.set(), registered, d + 2 * kDayMs, {}, {}, kDefaults);
  s = score_as_of({first, second}, d + 2 * kDayMs, kDefaults);
  EXPECT_FALSE(s.is_new);
  EXPECT_DOUBLE_EQ(s.score, 100 * (0.5 + 0.3 * 0.95 + 0.2 * 0.95));
  Config prior = kDefaults;
  prior.prior_score = 75;
  EXPECT_DOUBLE_EQ(score_as_of({first}, d + kDayMs, prior).score, 75);
}

TEST(ReliabilityScore, RecentDaysWeighMoreAndTheWindowEnds) {
  const std::int64_t today = ms("2026-05-31T00:00:00Z");
  const std::int64_t now = today + 6 * 3'600'000;
  std::vector<Day> days;
  for (int age = 0; age < 35; ++age)
    days.push_back(day(today - age * kDayMs, age == 0 ? 360 : 1440, age == 3 ? 1440 : 0));
  const auto s = score_as_of(days, now, kDefaults);
  double wp = 0, wc = 0;
  for (int age = 0; age < 30; ++age) {
    const double w = std::pow(0.5, age / 7.0);
    const double counted = age == 0 ? 360 : 1440;
    wc += w * counted;
    wp += w * (age == 3 ? 0 : counted);
  }
  EXPECT_NEAR(s.uptime, wp / wc, 1e-12);
  EXPECT_EQ(s.counted_min, 360 + 29 * 1440);  // days 30 to 34 are out of the window
  EXPECT_NEAR(s.score, 100 * (0.5 * wp / wc + 0.3 * 0.95 + 0.2 * 0.95), 1e-9);
  // The same day down is worth less after a week of good days.
  for (int ahead = 1; ahead <= 7; ++ahead) days.push_back(day(today + ahead * kDayMs, 1440));
  const auto later = score_as_of(days, now + 7 * kDayMs, kDefaults);
  EXPECT_GT(later.uptime, s.uptime);
}

TEST(ReliabilityScore, WeightsAreConfiguration) {
  const std::int64_t today = ms("2026-05-31T00:00:00Z");
  Config c = kDefaults;
  c.weight_uptime = 1;
  c.weight_jobs = 0;
  c.weight_stability = 0;
  const auto s = score_as_of({day(today - kDayMs, 1440, 144), day(today, 0)}, today + 1, c);
  EXPECT_NEAR(s.score, 90.0, 1e-9);
}

TEST(ReliabilityScore, EventPointsAddUpToWhatTheDowntimeCost) {
  const std::int64_t today = ms("2026-05-31T00:00:00Z");
  std::vector<Day> days;
  for (int age = 1; age < 10; ++age) days.push_back(day(today - age * kDayMs, 1440));
  Day down = day(today - 2 * kDayMs, 1440, 1440);
  Event gone;
  gone.at_ms = down.day_ms;
  gone.end_ms = down.day_ms + kDayMs;
  gone.minutes = 1440;
  down.events.push_back(gone);
  days[1] = down;
  const auto s = score_as_of(days, today + 1, kDefaults);
  auto clean = days;
  clean[1].present_min = 1440;
  const double lost = score_as_of(clean, today + 1, kDefaults).score - s.score;
  EXPECT_NEAR(event_points(down.events[0], down, s, today + 1, kDefaults), lost, 1e-9);
}

TEST(ReliabilityScore, RecoveryCountsTheDaysUntilTheEventsCostLessThanAPoint) {
  const std::int64_t today = ms("2026-05-31T00:00:00Z");
  std::vector<Day> days;
  for (int age = 0; age < 30; ++age) days.push_back(day(today - age * kDayMs, 1440, age == 1 || age == 2 ? 1440 : 0));
  const std::vector<std::int64_t> future = {1440};
  const auto r = recovery(days, today + kDayMs - 1, future, kDefaults);
  EXPECT_GT(r.points_lost, 1.0);
  EXPECT_GT(r.days, 0);
  EXPECT_LT(r.days, 30);
  // Step by step: the day it says the cost is below a point, and not the day before.
  const auto cost_after = [&](int k) {
    auto actual = days;
    auto clean = days;
    for (auto& d : clean) d.present_min = d.counted_min;
    for (int i = 1; i <= k; ++i) {
      actual.push_back(day(today + i * kDayMs, 1440));
      clean.push_back(day(today + i * kDayMs, 1440));
    }
    const std::int64_t at = today + kDayMs - 1 + k * kDayMs;
    return score_as_of(clean, at, kDefaults).formula - score_as_of(actual, at, kDefaults).formula;
  };
  EXPECT_LT(cost_after(r.days), 1.0);
  EXPECT_GE(cost_after(r.days - 1), 1.0);
  std::vector<Day> perfect;
  for (int age = 0; age < 30; ++age) perfect.push_back(day(today - age * kDayMs, 1440));
  EXPECT_EQ(recovery(perfect, today + 1, future, kDefaults).days, 0);
}

TEST(ReliabilityEvents, SurviveTheirJsonForm) {
  Event e;
  e.kind = EventKind::job_failed;
  e.at_ms = 5;
  e.ref = "r_1";
  e.reason = rental::EndReason::agent_lost;
  const auto back = event_from_json(to_json(e));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->ref, "r_1");
  EXPECT_EQ(back->reason, rental::EndReason::agent_lost);
  Event off;
  off.late_declared_ms = 7;
  off.minutes = 3;
  EXPECT_EQ(event_from_json(to_json(off))->late_declared_ms, 7);
  EXPECT_FALSE(event_from_json(nlohmann::json{{"kind", "nope"}, {"at_ms", 1}}).has_value());
}
