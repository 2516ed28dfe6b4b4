#include "server/reliability/reliability_repo.hpp"

#include <array>
#include <string_view>

namespace gpunex::server::reliability {

namespace {

// A day's columns, in the order days() reads them and upsert_day writes them. The minutes (360 hex digits
// each: scheduled, excused, present) days() reads only for a day that is not final.
constexpr std::array<std::string_view, 20> kDayColumns = {
    "day",         "judged_until", "final",       "full_day",       "scheduled", "excused", "present",
    "counted_min", "present_min",  "excused_min", "jobs",           "jobs_ok",   "runs",    "run_sum",
    "events",      "score",        "uptime",      "job_completion", "stability", "is_new"};

bool is_minutes(std::string_view column) {
  return column == "scheduled" || column == "excused" || column == "present";
}

//! The day's columns, each as `as(name)` gives it, separated by commas.
template <class As>
std::string day_columns(As as) {
  std::string out;
  for (const std::string_view name : kDayColumns) out += (out.empty() ? "" : ", ") + as(std::string(name));
  return out;
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
  static const std::string q = "SELECT " + day_columns([](const std::string& name) {
                                 return is_minutes(name) ? "CASE WHEN final = 0 THEN " + name + " ELSE '' END" : name;
                               }) +
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
  // Every column but the key's day is written again on a conflict.
  static const std::string q = [] {
    std::string set;
    for (const std::string_view name : kDayColumns) {
      if (name != "day") set += (set.empty() ? "" : ", ") + std::string(name) + " = excluded." + std::string(name);
    }
    return "INSERT INTO reliability_days (machine_id, " + day_columns([](const std::string& name) { return name; }) +
           ") VALUES (?, " + day_columns([](const std::string&) { return std::string("?"); }) +
           ") ON CONFLICT (machine_id, day) DO UPDATE SET " + set;
  }();
  tx_.exec(q, {machine_id,       d.day_ms,      d.judged_until_ms, flag(d.final), flag(d.full),  d.scheduled_hex,
               d.excused_hex,    d.present_hex, d.counted_min,     d.present_min, d.excused_min, d.jobs,
               d.jobs_ok,        d.runs,        d.run_sum,         d.events_json, d.score,       d.uptime,
               d.job_completion, d.stability,   flag(d.is_new)});
}

std::int64_t ReliabilityRepo::prune_days_before(std::int64_t before_day_ms, std::int64_t limit) {
  // Final days first, then days never finalized (their machine's rounds stopped before the day ended, and
  // resumed after it left the window), each through its partial index (migration 24): the literal
  // `final = 1` and `final = 0` are what lets the planner use them.
  std::int64_t deleted = 0;
  for (const char* final : {"1", "0"}) {
    if (deleted >= limit) break;
    deleted += tx_.exec(std::string("DELETE FROM reliability_days WHERE (machine_id, day) IN (SELECT machine_id, day "
                                    "FROM reliability_days WHERE final = ") +
                            final + " AND day < ? LIMIT ?)",
                        {before_day_ms, limit - deleted});
  }
  return deleted;
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
