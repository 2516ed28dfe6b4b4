#include "server/reliability/reliability_repo.hpp"

#include <array>

namespace gpunex::server::reliability {

namespace {

// A day's columns, in the order days() reads them and upsert_day writes them: the minutes (360 hex digits
// each) between the others.
constexpr const char* kDayColumnsBefore = "day, judged_until, final, full_day";
constexpr std::array<const char*, 3> kDayMinuteColumns = {"scheduled", "excused", "present"};
constexpr const char* kDayColumnsAfter =
    "counted_min, present_min, excused_min, jobs, jobs_ok, runs, run_sum, events, score, uptime, job_completion, "
    "stability, is_new";

//! The day's columns, each minute column given by `minutes(name)`.
template <class Minutes>
std::string day_columns(Minutes minutes) {
  std::string out = kDayColumnsBefore;
  for (const char* name : kDayMinuteColumns) out += ", " + minutes(std::string(name));
  return out + ", " + kDayColumnsAfter;
}

std::int64_t flag(bool b) {
  return b ? 1 : 0;
}

}  // namespace

std::vector<DayRow> ReliabilityRepo::days(const std::string& machine_id, std::int64_t since_day_ms,
                                          std::int64_t before_day_ms) {
  std::vector<DayRow> out;
  // A final day's minutes (three texts of 360 hex digits) are never judged again: it comes without them, so
  // that each round does not copy them for a window of days of every machine.
  static const std::string q =
      "SELECT " +
      day_columns([](const std::string& name) { return "CASE WHEN final = 0 THEN " + name + " ELSE '' END"; }) +
      " FROM reliability_days WHERE machine_id = ? AND day >= ? AND day < ? ORDER BY day";
  for (const auto& r : tx_.query(q, {machine_id, since_day_ms, before_day_ms})) {
    DayRow d;
    d.day_ms = r.i64(0);
    d.judged_until_ms = r.i64(1);
    d.final = r.i64(2) != 0;
    d.full = r.i64(3) != 0;
    d.scheduled_hex = r.str(4);
    d.excused_hex = r.str(5);
    d.present_hex = r.str(6);
    d.counted_min = r.i64(7);
    d.present_min = r.i64(8);
    d.excused_min = r.i64(9);
    d.jobs = r.i64(10);
    d.jobs_ok = r.i64(11);
    d.runs = r.i64(12);
    d.run_sum = r.f64(13);
    d.events_json = r.str(14);
    d.score = r.f64(15);
    d.uptime = r.f64(16);
    d.job_completion = r.f64(17);
    d.stability = r.f64(18);
    d.is_new = r.i64(19) != 0;
    out.push_back(std::move(d));
  }
  return out;
}

void ReliabilityRepo::upsert_day(const std::string& machine_id, const DayRow& d) {
  static const std::string columns = day_columns([](const std::string& name) { return name; });
  tx_.exec("INSERT INTO reliability_days (machine_id, " + columns +
               ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
               "ON CONFLICT (machine_id, day) DO UPDATE SET judged_until = excluded.judged_until, "
               "final = excluded.final, full_day = excluded.full_day, scheduled = excluded.scheduled, "
               "excused = excluded.excused, present = excluded.present, counted_min = excluded.counted_min, "
               "present_min = excluded.present_min, excused_min = excluded.excused_min, jobs = excluded.jobs, "
               "jobs_ok = excluded.jobs_ok, runs = excluded.runs, run_sum = excluded.run_sum, "
               "events = excluded.events, score = excluded.score, uptime = excluded.uptime, "
               "job_completion = excluded.job_completion, stability = excluded.stability, is_new = excluded.is_new",
           {machine_id,       d.day_ms,      d.judged_until_ms, flag(d.final), flag(d.full),  d.scheduled_hex,
            d.excused_hex,    d.present_hex, d.counted_min,     d.present_min, d.excused_min, d.jobs,
            d.jobs_ok,        d.runs,        d.run_sum,         d.events_json, d.score,       d.uptime,
            d.job_completion, d.stability,   flag(d.is_new)});
}

std::int64_t ReliabilityRepo::prune_days_before(std::int64_t before_day_ms, std::int64_t limit) {
  return tx_.exec(
      "DELETE FROM reliability_days WHERE (machine_id, day) IN (SELECT machine_id, day FROM "
      "reliability_days WHERE day < ? LIMIT " +
          std::to_string(limit) + ")",
      {before_day_ms});
}

std::optional<PublishedRow> ReliabilityRepo::published(const std::string& machine_id) {
  auto r = tx_.query_one("SELECT score, is_new, computed_at, alerted FROM reliability_scores WHERE machine_id = ?",
                         {machine_id});
  if (!r) return std::nullopt;
  return PublishedRow{r->f64(0), r->i64(1) != 0, r->i64(2), r->i64(3) != 0};
}

void ReliabilityRepo::upsert_published(const std::string& machine_id, const PublishedRow& p) {
  tx_.exec(
      "INSERT INTO reliability_scores (machine_id, score, is_new, computed_at, alerted) VALUES (?, ?, ?, ?, ?) "
      "ON CONFLICT (machine_id) DO UPDATE SET score = excluded.score, is_new = excluded.is_new, "
      "computed_at = excluded.computed_at, alerted = excluded.alerted",
      {machine_id, p.score, flag(p.is_new), p.computed_ms, flag(p.alerted)});
}

std::unordered_map<std::string, double> ReliabilityRepo::all_scored(const std::vector<std::string>* machines) {
  std::string sql = "SELECT machine_id, score FROM reliability_scores WHERE is_new = 0";
  store::Params params;
  if (machines) {
    sql += " AND machine_id" + store::in_list(machines->size());
    params.assign(machines->begin(), machines->end());
  }
  std::unordered_map<std::string, double> out;
  for (const auto& r : tx_.query(sql, params)) out.emplace(r.str(0), r.f64(1));
  return out;
}

}  // namespace gpunex::server::reliability
