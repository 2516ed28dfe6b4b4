#pragma once
// The reliability score (DESIGN §3.12 and §4), pure: a machine's UTC days judged minute by minute
// against its schedule, its rentals' outcomes and its benchmark runs, then weighed into one score.
//
//   uptime U          = Σ w·present / Σ w·counted   (counted: scheduled minutes, less maintenance
//                                                    declared at least maintenance_notice ahead)
//   job completion C  = (Σ w·ok + n0·p0) / (Σ w·jobs + n0)   (a prior of n0 pseudo-jobs at rate p0)
//   stability S       = Σ w·run stability / Σ w·runs;  a run's stability is the mean over its GPUs of
//                       min(1, score / baseline) · (1 − throttle_penalty · throttled share)
//   score             = 100 · (wU·U + wC·C + wS·S) / (wU + wC + wS)
//
// over the days of the last window_days (today, partial, included), each day weighted
// 0.5^(age_days / half_life_days), today being age 0. A minute counts when its start lies in an
// availability window (core/schedule.hpp's DST rule; every minute of a 24/7 schedule), after the
// machine was registered and before the time judged; minutes outside the schedule never count,
// for or against. A machine is new (and shows the prior) until it has one whole UTC day with counted
// minutes behind it. Every constant is operator configuration (Config).

#include <bitset>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <date/tz.h>
#include <nlohmann/json.hpp>

#include "core/rental.hpp"
#include "core/schedule.hpp"

namespace gpunex::core::reliability {

inline constexpr std::int64_t kMinuteMs = 60'000;
inline constexpr std::int64_t kDayMs = 86'400'000;
inline constexpr int kMinutesPerDay = 1440;
//! One bit per minute of a UTC day; bit m is the minute starting m minutes after midnight.
using MinuteBits = std::bitset<kMinutesPerDay>;

//! Every constant of the score; DESIGN §4's defaults.
struct Config {
  int window_days = 30;
  double half_life_days = 7;
  double weight_uptime = 0.5;
  double weight_jobs = 0.3;
  double weight_stability = 0.2;
  double job_prior_count = 5;                             // pseudo-jobs ...
  double job_prior_rate = 0.95;                           // ... completed at this rate
  std::int64_t maintenance_notice_ms = 24 * 3'600'000LL;  // maintenance declared this far ahead is excused
  double throttle_penalty = 1.0;                          // a run fully throttled loses this share of its stability
  double stability_prior = 0.95;                          // S when no benchmark run falls in the window
  double prior_score = 90;                                // what a new machine shows (the rank's reliability prior)
  double recovered_points = 1.0;                          // recovered: the events of the window cost less than this
};

//! The UTC midnight (ms) of the day holding `ms`.
std::int64_t day_of(std::int64_t ms);
//! 0.5^(age_days / half_life_days).
double day_weight(std::int64_t age_days, const Config& c);

// ---- the schedule, minute by minute ----

//! A maintenance occurrence declared too late to be excused.
struct LateMaintenance {
  std::int64_t start_ms = 0, end_ms = 0, declared_ms = 0;
};

//! What the schedule makes of one UTC day.
struct DayPlan {
  std::int64_t day_ms = 0;
  MinuteBits scheduled;               // in an availability window
  MinuteBits excused;                 // scheduled, but in maintenance declared at least maintenance_notice ahead
  std::vector<LateMaintenance> late;  // maintenance over scheduled minutes declared later than that
};

//! The plan of the day starting at `day_ms` (a UTC midnight). `declared_ms[i]` is when
//! s.maintenance[i] was declared; one missing counts as declared too late.
DayPlan plan_day(const Schedule& s, const std::vector<std::int64_t>& declared_ms, std::int64_t day_ms, const Config& c);
//! `judged`'s minutes before `judged_until_ms` and `fresh`'s after: a minute once judged keeps its
//! judgement, so changing a schedule never re-judges time already past.
DayPlan merge_plans(const DayPlan& judged, std::int64_t judged_until_ms, const DayPlan& fresh);

//! Minutes as 360 hex digits (minute 0 in the first digit's low bit) and back; nullopt if malformed.
std::string to_hex(const MinuteBits& bits);
std::optional<MinuteBits> from_hex(std::string_view hex);
//! The minutes of the day starting at `day_ms` holding one of `minutes_ms` (minute starts, any order).
MinuteBits minutes_of_day(std::span<const std::int64_t> minutes_ms, std::int64_t day_ms);

// ---- the inputs besides presence ----

//! A rental that ended on the machine.
struct Job {
  std::string rental_id;
  std::int64_t ended_ms = 0;
  rental::EndReason reason = rental::EndReason::customer_stopped;
  bool provider_side = false;  // as recorded when it ended (rental::provider_side)
};

//! One GPU's result in a benchmark run.
struct GpuRun {
  std::string uuid;
  std::int64_t index = 0;
  double score = 0;            // the run's performance score
  double baseline = 0;         // the GPU's baseline: its first scored run
  double thermal_share = 0;    // share of the run's samples thermally throttled
  double power_share = 0;      // ... power capped or braked
  double throttled_share = 0;  // ... either
};

//! A completed benchmark run with its scored GPUs.
struct BenchRun {
  std::string run_id;
  std::int64_t at_ms = 0;
  std::vector<GpuRun> gpus;
};

//! Sets g's thermal, power and throttled shares from the clocks-event bits of its samples in a run
//! (core/clock_events.hpp: thermal slowdowns and HW slowdown are thermal; the power cap and brake
//! are power). No samples: no throttling known.
void set_throttle_shares(GpuRun& g, const std::vector<std::uint64_t>& sample_bits);
//! min(1, score / baseline) · (1 − throttle_penalty · throttled_share), within [0, 1].
double gpu_run_stability(const GpuRun& g, const Config& c);
//! The mean over the run's GPUs; nullopt for a run with none.
std::optional<double> run_stability(const BenchRun& r, const Config& c);

// ---- a judged day ----

enum class EventKind { offline, job_failed, benchmark_low };
std::string_view to_string(EventKind k);

//! Something that moved the score.
struct Event {
  EventKind kind = EventKind::offline;
  std::int64_t at_ms = 0;
  std::int64_t end_ms = 0;                       // offline: the end of the last minute missed
  std::int64_t minutes = 0;                      // offline: minutes missed
  std::optional<std::int64_t> late_declared_ms;  // offline inside maintenance declared too late
  std::string ref;                               // the rental's or the run's id
  std::optional<rental::EndReason> reason;       // job_failed
  double ratio = 1;                              // benchmark_low: the worst GPU's min(1, score / baseline)
  double thermal_share = 0, power_share = 0;     // benchmark_low: the worst GPU's
  double stability = 1;                          // benchmark_low: the run's
};
nlohmann::json to_json(const Event& e);
std::optional<Event> event_from_json(const nlohmann::json& j);

//! One UTC day, judged up to some time.
struct Day {
  std::int64_t day_ms = 0;
  bool full = false;             // the machine existed from the day's start
  bool complete = false;         // judged up to the day's end
  std::int64_t counted_min = 0;  // scheduled, not excused, machine registered, minute ended
  std::int64_t present_min = 0;  // of those, with a heartbeat
  std::int64_t excused_min = 0;
  std::int64_t jobs = 0, jobs_ok = 0;
  std::int64_t runs = 0;
  double run_sum = 0;
  std::vector<Event> events;
  //! present / counted; 1 with nothing counted.
  double uptime() const;
};

//! Judges the day of `plan` up to `until_ms` (minutes that ended by then; the whole day when it is
//! past): `present` are the minutes with a heartbeat, `registered_ms` when the machine appeared;
//! `jobs` and `runs` may hold other days', which are left out.
Day judge_day(const DayPlan& plan, const MinuteBits& present, std::int64_t registered_ms, std::int64_t until_ms,
              const std::vector<Job>& jobs, const std::vector<BenchRun>& runs, const Config& c);

// ---- the score ----

struct Score {
  double score = 0;  // 0..100; the prior when is_new
  bool is_new = true;
  double uptime = 1, job_completion = 0, stability = 0;
  bool stability_is_prior = true;
  // The inputs: weighted sums and plain counts over the window.
  double w_present = 0, w_counted = 0;
  std::int64_t present_min = 0, counted_min = 0, excused_min = 0;
  double w_jobs = 0, w_jobs_ok = 0;
  std::int64_t jobs = 0, jobs_ok = 0;
  double w_runs = 0, w_run_sum = 0;
  std::int64_t runs = 0;
  double formula = 0;  // the formula's value, also for a new machine
};

//! The score at `as_of_ms` from judged days (any order; days outside the window are left out). The
//! score at the end of day d is score_as_of(days, d + kDayMs - 1): d at age 0, judged whole.
Score score_as_of(const std::vector<Day>& days, std::int64_t as_of_ms, const Config& c);

//! The points `e` (of `day`) takes off the score `s` at `as_of_ms`: its share of the part it lowers.
double event_points(const Event& e, const Day& day, const Score& s, std::int64_t as_of_ms, const Config& c);

//! How long the window's events keep weighing on the score if nothing else goes wrong.
struct Recovery {
  double points_lost = 0;  // the score without the events, less the score
  int days = 0;            // days until the events cost less than recovered_points
};
//! `future_counted[k]` is the minutes that will count on the (k+1)th day after today; later days
//! repeat the last. Future days are taken as perfect, with no new rentals or runs.
Recovery recovery(const std::vector<Day>& days, std::int64_t as_of_ms, const std::vector<std::int64_t>& future_counted,
                  const Config& c);

// ---- words ----

//! The event in plain words, times in `zone`: "Offline 14:02–14:40 during scheduled hours: uptime
//! 97.9% that day", "Rental r_… ended by GPU failure", "Benchmark at 91% of baseline, thermally
//! throttled 12% of the run". `day_uptime` is the uptime of the event's day.
std::string describe(const Event& e, const date::time_zone& zone, double day_uptime, const Config& c);
//! What the provider can do about it, one or two sentences.
std::string advice(const Event& e);

}  // namespace gpunex::core::reliability
