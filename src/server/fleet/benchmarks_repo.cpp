#include "server/fleet/benchmarks_repo.hpp"

#include "core/rental.hpp"

#include "core/machine_status.hpp"
#include "util/crypto.hpp"

namespace gpunex::server {

using core::BenchmarkReason;
using core::BenchmarkRunStatus;
using store::Row;

namespace {

//! A status or reason as an SQL literal, so the statements' text (and their plans) stay fixed.
std::string sql(std::string_view name) {
  return "'" + std::string(name) + "'";
}
std::string sql(BenchmarkRunStatus s) {
  return sql(core::run_status_name(s));
}

BenchmarkRunStatus status_of(const std::string& text) {
  auto s = core::parse_run_status(text);
  if (!s) throw store::StoreError("benchmark_runs: unknown status " + text);
  return *s;
}

BenchmarkReason reason_of(const std::string& text) {
  auto r = core::parse_run_reason(text);
  if (!r) throw store::StoreError("benchmark_runs: unknown reason " + text);
  return *r;
}

store::Value opt(const std::optional<double>& v) {
  if (v) return *v;
  return nullptr;
}
store::Value opt(const std::optional<std::string>& v) {
  if (v) return *v;
  return nullptr;
}

const std::string& open_statuses() {
  static const std::string s =
      "(" + sql(BenchmarkRunStatus::requested) + ", " + sql(BenchmarkRunStatus::delivered) + ")";
  return s;
}

// Online machines with no open run and no request within the run timeout (a run that expired without a
// result is retried only after the timeout, not on every round).
const std::string& schedulable() {
  static const std::string s = "m.status = " + sql(core::machine_status_name(core::MachineStatus::online)) +
                               " AND NOT EXISTS (SELECT 1 FROM benchmark_runs r WHERE r.machine_id = m.id AND "
                               "(r.status IN " +
                               open_statuses() + " OR r.requested_at > ?))";
  return s;
}

}  // namespace

std::optional<std::int64_t> BenchmarksRepo::last_completed_at(const std::string& machine_id) {
  static const std::string q = "SELECT MAX(completed_at) FROM benchmark_runs WHERE machine_id = ? AND status = " +
                               sql(BenchmarkRunStatus::completed);
  auto r = tx_.query_one(q, {machine_id});
  if (!r || r->is_null(0)) return std::nullopt;
  return r->i64(0);
}

bool BenchmarksRepo::has_open_run(const std::string& machine_id) {
  static const std::string q = "SELECT 1 FROM benchmark_runs WHERE machine_id = ? AND status IN " + open_statuses();
  return tx_.query_one(q, {machine_id}).has_value();
}

const std::string& open_challenge_statuses_sql() {
  static const std::string s = [] {
    std::string out = "(";
    for (const auto status : kOpenChallengeStatuses) out += (out.size() > 1 ? ", " : "") + sql(status);
    return out + ")";
  }();
  return s;
}

namespace {
namespace heartbeat_work {

//! The work other than a spot check: the same conditions as benchmark_commands' steps (oldest_requested,
//! expire_delivered_before, expire_challenges: deadline_at < now). Each open challenge status has an EXISTS
//! of its own, not `status IN (...)`: SQLite builds an ephemeral index for an IN list that constrains an
//! index column on every run of the statement, which was most of this read's 8% of the server's CPU per
//! heartbeat (bench/README.md, heartbeat path (7)); an equality is one seek in benchmark_challenges_machine.
const std::string& other_work() {
  static const std::string w = [] {
    std::string out = "EXISTS (SELECT 1 FROM benchmark_runs WHERE machine_id = ? AND (status = " +
                      sql(BenchmarkRunStatus::requested) + " OR (status = " + sql(BenchmarkRunStatus::delivered) +
                      " AND delivered_at < ?)))";
    for (const auto status : kOpenChallengeStatuses) {
      out += " OR EXISTS (SELECT 1 FROM benchmark_challenges WHERE machine_id = ? AND status = " + sql(status) +
             " AND deadline_at < ?)";
    }
    return out;
  }();
  return w;
}

}  // namespace heartbeat_work
}  // namespace

const std::string& BenchmarksRepo::heartbeat_work_sql(bool spot_checks) {
  static const std::string with_spot_checks = "CASE WHEN m.spot_check_at IS NULL OR m.spot_check_at <= ? OR " +
                                              heartbeat_work::other_work() + " THEN 1 ELSE 0 END";
  static const std::string without = "CASE WHEN " + heartbeat_work::other_work() + " THEN 1 ELSE 0 END";
  return spot_checks ? with_spot_checks : without;
}

std::vector<store::Value> BenchmarksRepo::heartbeat_work_params(const HeartbeatWorkQuestion& q) {
  std::vector<store::Value> p;
  if (q.spot_checks) p = {q.now_ms};
  p.insert(p.end(), {q.machine_id, q.delivered_cutoff_ms});
  for (std::size_t i = 0; i < kOpenChallengeStatuses.size(); ++i) p.insert(p.end(), {q.machine_id, q.now_ms});
  return p;
}

bool BenchmarksRepo::has_heartbeat_work(const HeartbeatWorkQuestion& q) {
  // The column read with the machine's row (no row: no such machine, no work); without spot checks it
  // does not name the machine's row.
  static const std::string with_spot_checks = "SELECT " + heartbeat_work_sql(true) + " FROM machines m WHERE m.id = ?";
  static const std::string without = "SELECT " + heartbeat_work_sql(false);
  auto params = heartbeat_work_params(q);
  if (q.spot_checks) params.push_back(q.machine_id);
  const auto r = tx_.query_one(q.spot_checks ? with_spot_checks : without, params);
  return r && r->i64(0) != 0;
}

std::string BenchmarksRepo::open_run(const std::string& machine_id, BenchmarkReason reason, std::int64_t now) {
  static const std::string q =
      "INSERT INTO benchmark_runs (id, machine_id, reason, status, requested_at, simulated) "
      "VALUES (?, ?, ?, " +
      sql(BenchmarkRunStatus::requested) + ", ?, 0)";
  const std::string id = util::new_id("bench");
  tx_.exec(q, {id, machine_id, std::string(core::run_reason_name(reason)), now});
  return id;
}

std::int64_t BenchmarksRepo::live_rentals(const std::string& machine_id) {
  static const std::string ended(core::rental::to_string(core::rental::State::ended));
  const auto r = tx_.query_one("SELECT COUNT(*) FROM rentals WHERE machine_id = ? AND state <> ?", {machine_id, ended});
  return r ? r->i64(0) : 0;
}

std::vector<std::string> BenchmarksRepo::schedulable_machines(std::int64_t requested_after) {
  std::vector<std::string> out;
  for (const auto& m :
       tx_.query("SELECT m.id FROM machines m WHERE " + schedulable() + " ORDER BY m.id", {requested_after})) {
    out.push_back(m.str(0));
  }
  return out;
}

bool BenchmarksRepo::is_schedulable(const std::string& machine_id, std::int64_t requested_after) {
  return tx_.query_one("SELECT 1 FROM machines m WHERE m.id = ? AND " + schedulable(), {machine_id, requested_after})
      .has_value();
}

void BenchmarksRepo::expire_delivered_before(const std::string& machine_id, std::int64_t cutoff) {
  static const std::string q = "UPDATE benchmark_runs SET status = " + sql(BenchmarkRunStatus::expired) +
                               " WHERE machine_id = ? AND status = " + sql(BenchmarkRunStatus::delivered) +
                               " AND delivered_at < ?";
  tx_.exec(q, {machine_id, cutoff});
}

std::optional<RequestedRun> BenchmarksRepo::oldest_requested(const std::string& machine_id) {
  static const std::string q =
      "SELECT id, reason, requested_at FROM benchmark_runs WHERE machine_id = ? AND status = " +
      sql(BenchmarkRunStatus::requested) + " ORDER BY requested_at LIMIT 1";
  auto r = tx_.query_one(q, {machine_id});
  if (!r) return std::nullopt;
  return RequestedRun{r->str(0), reason_of(r->str(1)), r->i64(2)};
}

void BenchmarksRepo::mark_delivered(const std::string& run_id, std::int64_t now) {
  static const std::string q =
      "UPDATE benchmark_runs SET status = " + sql(BenchmarkRunStatus::delivered) + ", delivered_at = ? WHERE id = ?";
  tx_.exec(q, {now, run_id});
}

std::optional<BenchmarkRunState> BenchmarksRepo::find_run(const std::string& run_id, const std::string& machine_id) {
  auto r = tx_.query_one("SELECT status, reason FROM benchmark_runs WHERE id = ? AND machine_id = ?",
                         {run_id, machine_id});
  if (!r) return std::nullopt;
  return BenchmarkRunState{status_of(r->str(0)), reason_of(r->str(1))};
}

void BenchmarksRepo::complete_run(const std::string& run_id, bool simulated, const std::string& report_json,
                                  const std::string& machine_failures_json, std::int64_t now) {
  static const std::string q = "UPDATE benchmark_runs SET status = " + sql(BenchmarkRunStatus::completed) +
                               ", completed_at = ?, simulated = ?, report = ?, machine_failures = ? WHERE id = ?";
  tx_.exec(q, {now, std::int64_t{simulated}, report_json, machine_failures_json, run_id});
}

std::optional<std::int64_t> BenchmarksRepo::last_rerun_request_at(const std::string& machine_id) {
  static const std::string q = "SELECT MAX(requested_at) FROM benchmark_runs WHERE machine_id = ? AND reason = " +
                               sql(core::run_reason_name(BenchmarkReason::provider_request));
  auto r = tx_.query_one(q, {machine_id});
  if (!r || r->is_null(0)) return std::nullopt;
  return r->i64(0);
}

std::vector<BenchmarkRunRow> BenchmarksRepo::recent_runs(const std::string& machine_id, std::int64_t limit) {
  std::vector<BenchmarkRunRow> out;
  for (const auto& r : tx_.query("SELECT id, reason, status, requested_at, delivered_at, completed_at, simulated, "
                                 "machine_failures FROM benchmark_runs WHERE machine_id = ? ORDER BY requested_at "
                                 "DESC LIMIT " +
                                     std::to_string(limit),
                                 {machine_id})) {
    out.push_back(BenchmarkRunRow{r.str(0), reason_of(r.str(1)), status_of(r.str(2)), r.i64(3), r.opt_i64(4),
                                  r.opt_i64(5), r.boolean(6), r.opt_str(7)});
  }
  return out;
}

void BenchmarksRepo::add_gpu_result(const GpuResultWrite& g, std::int64_t now) {
  tx_.exec(
      "INSERT INTO gpu_benchmarks (run_id, machine_id, uuid, model, perf_score, quality_ratio, pass, figures, "
      "failures, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      {g.run_id, g.machine_id, g.uuid, opt(g.model), opt(g.perf_score), opt(g.quality_ratio), std::int64_t{g.pass},
       g.figures_json, g.failures_json, now});
}

std::optional<GpuResultRow> BenchmarksRepo::latest_result(const std::string& machine_id, const std::string& uuid) {
  auto r = tx_.query_one("SELECT run_id, figures, failures, at FROM gpu_benchmarks WHERE machine_id = ? AND "
                         "uuid = ? ORDER BY at DESC LIMIT 1",
                         {machine_id, uuid});
  if (!r) return std::nullopt;
  return GpuResultRow{r->str(0), r->str(1), r->str(2), r->i64(3)};
}

std::vector<ScorePoint> BenchmarksRepo::score_history(const std::string& machine_id, const std::string& uuid,
                                                      std::int64_t limit) {
  std::vector<ScorePoint> out;
  for (const auto& h : tx_.query("SELECT at, perf_score, quality_ratio FROM gpu_benchmarks WHERE machine_id = ? AND "
                                 "uuid = ? ORDER BY at DESC LIMIT " +
                                     std::to_string(limit),
                                 {machine_id, uuid})) {
    out.push_back(ScorePoint{h.i64(0), h.is_null(1) ? std::nullopt : std::optional<double>(h.f64(1)),
                             h.is_null(2) ? std::nullopt : std::optional<double>(h.f64(2))});
  }
  return out;
}

std::vector<CompletedRunRow> BenchmarksRepo::completed_runs_since(const std::string& machine_id, std::int64_t since_ms) {
  static const std::string q = "SELECT id, completed_at, report FROM benchmark_runs WHERE machine_id = ? AND status = " +
                               sql(BenchmarkRunStatus::completed) +
                               " AND completed_at >= ? AND report IS NOT NULL ORDER BY completed_at, id";
  std::vector<CompletedRunRow> out;
  for (const auto& r : tx_.query(q, {machine_id, since_ms})) out.push_back(CompletedRunRow{r.str(0), r.i64(1), r.str(2)});
  return out;
}

std::vector<CompletedRunRow> BenchmarksRepo::recent_completed_runs(const std::string& machine_id, std::int64_t limit) {
  static const std::string q =
      "SELECT id, completed_at, report, COALESCE(machine_failures, '[]') FROM benchmark_runs WHERE machine_id = ? AND "
      "status = " +
      sql(BenchmarkRunStatus::completed) + " AND report IS NOT NULL ORDER BY completed_at DESC, id DESC LIMIT ?";
  std::vector<CompletedRunRow> out;
  for (const auto& r : tx_.query(q, {machine_id, limit})) {
    out.push_back(CompletedRunRow{r.str(0), r.i64(1), r.str(2), r.str(3)});
  }
  return out;
}

std::vector<GpuScoreRow> BenchmarksRepo::gpu_scores_since(const std::string& machine_id, std::int64_t since_ms) {
  std::vector<GpuScoreRow> out;
  for (const auto& r : tx_.query("SELECT run_id, uuid, perf_score, at FROM gpu_benchmarks WHERE machine_id = ? AND "
                                 "at >= ? AND perf_score IS NOT NULL ORDER BY at, run_id, uuid",
                                 {machine_id, since_ms})) {
    out.push_back(GpuScoreRow{r.str(0), r.str(1), r.f64(2), r.i64(3)});
  }
  return out;
}

std::vector<GpuScoreRow> BenchmarksRepo::first_gpu_scores(const std::string& machine_id) {
  std::vector<GpuScoreRow> out;
  for (const auto& r : tx_.query("SELECT b.run_id, b.uuid, b.perf_score, b.at FROM gpu_benchmarks b "
                                 "WHERE b.machine_id = ? AND b.perf_score IS NOT NULL AND b.at = (SELECT MIN(f.at) "
                                 "FROM gpu_benchmarks f WHERE f.machine_id = b.machine_id AND f.uuid = b.uuid AND "
                                 "f.perf_score IS NOT NULL) ORDER BY b.uuid, b.run_id",
                                 {machine_id})) {
    out.push_back(GpuScoreRow{r.str(0), r.str(1), r.f64(2), r.i64(3)});
  }
  return out;
}

std::optional<BenchmarksRepo::Listing> BenchmarksRepo::listing(const std::string& machine_id, const std::string& uuid) {
  auto r = tx_.query_one("SELECT listed, perf_score, delist_reason FROM gpu_listing WHERE machine_id = ? AND uuid = ?",
                         {machine_id, uuid});
  if (!r) return std::nullopt;
  return Listing{r->boolean(0), r->opt_f64(1), r->opt_str(2).value_or("")};
}

void BenchmarksRepo::upsert_listing(const ListingWrite& l, std::int64_t now) {
  tx_.exec(
      "INSERT INTO gpu_listing (machine_id, uuid, listed, perf_score, quality_ratio, delist_reason, "
      "recommendation, last_run_id, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
      "ON CONFLICT (machine_id, uuid) DO UPDATE SET listed = excluded.listed, perf_score = excluded.perf_score, "
      "quality_ratio = excluded.quality_ratio, delist_reason = excluded.delist_reason, "
      "recommendation = excluded.recommendation, last_run_id = excluded.last_run_id, "
      "updated_at = excluded.updated_at",
      {l.machine_id, l.uuid, std::int64_t{l.listed}, opt(l.perf_score), opt(l.quality_ratio), opt(l.delist_reason),
       opt(l.recommendation), l.last_run_id, now});
}

std::int64_t BenchmarksRepo::unlist_machine(const std::string& machine_id, const std::string& reason,
                                            const std::string& recommendation, std::int64_t now) {
  return tx_.exec(
      "UPDATE gpu_listing SET listed = 0, delist_reason = ?, recommendation = ?, updated_at = ? "
      "WHERE machine_id = ? AND listed = 1",
      {reason, recommendation, now, machine_id});
}

std::vector<GpuListingRow> BenchmarksRepo::present_gpu_listings(const std::string& machine_id) {
  std::vector<GpuListingRow> out;
  for (const auto& g : tx_.query("SELECT g.uuid, g.idx, g.name, g.model, l.listed, l.perf_score, l.quality_ratio, "
                                 "l.delist_reason, l.recommendation FROM machine_gpus g LEFT JOIN gpu_listing l ON "
                                 "l.machine_id = g.machine_id AND l.uuid = g.uuid WHERE g.machine_id = ? AND "
                                 "g.present = 1 ORDER BY g.idx",
                                 {machine_id})) {
    GpuListingRow row;
    row.uuid = g.str(0);
    row.index = g.i64(1);
    row.name = g.str(2);
    if (!g.is_null(3)) row.model = g.str(3);
    if (!g.is_null(4)) row.listed = g.boolean(4);
    if (!g.is_null(5)) row.perf_score = g.f64(5);
    if (!g.is_null(6)) row.quality_ratio = g.f64(6);
    if (!g.is_null(7)) row.delist_reason = g.str(7);
    if (!g.is_null(8)) row.recommendation = g.str(8);
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace gpunex::server
