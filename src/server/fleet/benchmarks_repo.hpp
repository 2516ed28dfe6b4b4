#pragma once
// The fleet's benchmark tables, and every SQL statement that reads or writes
// them: benchmark_runs, gpu_benchmarks and gpu_listing (store/migrations.cpp).
// Typed rows in and out; run statuses and reasons as core enums. Works inside
// the caller's transaction.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/benchmark_run.hpp"
#include "store/store.hpp"

namespace gpunex::server {

//! What has_heartbeat_work asks of a machine: its work due by `now_ms`, a delivered run expired before
//! `delivered_cutoff_ms`, and (with spot checks on) a spot check due.
struct HeartbeatWorkQuestion {
  std::string machine_id;
  std::int64_t now_ms = 0;
  std::int64_t delivered_cutoff_ms = 0;
  bool spot_checks = false;
};

//! A run as the ingestion sees it.
struct BenchmarkRunState {
  core::BenchmarkRunStatus status = core::BenchmarkRunStatus::requested;
  core::BenchmarkReason reason = core::BenchmarkReason::agent;
};

//! A run waiting for delivery in a heartbeat reply.
struct RequestedRun {
  std::string id;
  core::BenchmarkReason reason = core::BenchmarkReason::agent;
  std::int64_t requested_at_ms = 0;
};

//! A run as the provider's Benchmarks tab lists it.
struct BenchmarkRunRow {
  std::string id;
  core::BenchmarkReason reason = core::BenchmarkReason::agent;
  core::BenchmarkRunStatus status = core::BenchmarkRunStatus::requested;
  std::int64_t requested_ms = 0;
  std::optional<std::int64_t> delivered_ms, completed_ms;
  bool simulated = false;
  std::optional<std::string> machine_failures_json;
};

//! One GPU's judged result in a run (gpu_benchmarks).
struct GpuResultWrite {
  std::string run_id, machine_id, uuid;
  std::optional<std::string> model;
  std::optional<double> perf_score, quality_ratio;
  bool pass = false;
  std::string figures_json, failures_json;
};

//! A GPU's newest result.
struct GpuResultRow {
  std::string run_id;
  std::string figures_json, failures_json;
  std::int64_t at_ms = 0;
};

//! One point of a GPU's score history.
struct ScorePoint {
  std::int64_t at_ms = 0;
  std::optional<double> perf_score, quality_ratio;
};

//! A GPU's listing as the last run decided it (gpu_listing).
struct ListingWrite {
  std::string machine_id, uuid;
  bool listed = false;
  std::optional<double> perf_score, quality_ratio;
  std::optional<std::string> delist_reason, recommendation;
  std::string last_run_id;
};

//! A present GPU of a machine with its listing, none before a first run.
struct GpuListingRow {
  std::string uuid;
  std::int64_t index = 0;
  std::string name;
  std::optional<std::string> model;
  std::optional<bool> listed;
  std::optional<double> perf_score, quality_ratio;
  std::optional<std::string> delist_reason, recommendation;
};

//! A completed run with its stored report (the agent's body, as core::bench::to_json writes it).
struct CompletedRunRow {
  std::string id;
  std::int64_t completed_ms = 0;
  std::string report_json;
  std::string machine_failures_json = "[]";  // recent_completed_runs only
};

//! A GPU's scored result in a run.
struct GpuScoreRow {
  std::string run_id, uuid;
  double perf_score = 0;
  std::int64_t at_ms = 0;
};

//! The challenge statuses still awaiting the agent (server/fleet/challenges.cpp).
inline constexpr std::array<std::string_view, 3> kOpenChallengeStatuses = {"issued", "filled", "committed"};
//! kOpenChallengeStatuses as an SQL list: "('issued', 'filled', 'committed')".
const std::string& open_challenge_statuses_sql();

//! The benchmark tables of one transaction.
class BenchmarksRepo {
 public:
  explicit BenchmarksRepo(store::Tx& tx) : tx_(tx) {}

  //! When the machine's newest completed run completed; none before a first.
  std::optional<std::int64_t> last_completed_at(const std::string& machine_id);
  bool has_open_run(const std::string& machine_id);
  //! Whether a heartbeat of the machine has benchmark work to do: a requested run to deliver, a run
  //! delivered before `delivered_cutoff_ms` or a challenge past its deadline to expire, or (with spot checks
  //! on) a spot check due or not yet scheduled. One read, so that most heartbeats do no more; a machine
  //! running a benchmark (its run delivered, its challenges open and in time) is one of them.
  bool has_heartbeat_work(const HeartbeatWorkQuestion& q);
  //! The same question as a column (0 or 1) of a read of the machine's row named `m`, for a statement that
  //! reads the machine anyway (MachinesRepo::heartbeat_machine_of_key, where a statement costs a round
  //! trip): its SQL, and its parameters, which come before the read's own.
  static const std::string& heartbeat_work_sql(bool spot_checks);
  static std::vector<store::Value> heartbeat_work_params(const HeartbeatWorkQuestion& q);
  //! Opens a run, Requested; returns its id.
  std::string open_run(const std::string& machine_id, core::BenchmarkReason reason, std::int64_t now_ms);
  //! Online machines with no open run and no run requested after `requested_after_ms`, by id.
  std::vector<std::string> schedulable_machines(std::int64_t requested_after_ms);
  //! The same test for one machine (again under the write lock).
  bool is_schedulable(const std::string& machine_id, std::int64_t requested_after_ms);

  //! Delivered runs of the machine delivered before `cutoff_ms` become Expired.
  void expire_delivered_before(const std::string& machine_id, std::int64_t cutoff_ms);
  //! The machine's oldest Requested run.
  std::optional<RequestedRun> oldest_requested(const std::string& machine_id);
  //! How many rentals on the machine have not ended: a benchmark run waits for them.
  std::int64_t live_rentals(const std::string& machine_id);
  void mark_delivered(const std::string& run_id, std::int64_t now_ms);

  std::optional<BenchmarkRunState> find_run(const std::string& run_id, const std::string& machine_id);
  void complete_run(const std::string& run_id, bool simulated, const std::string& report_json,
                    const std::string& machine_failures_json, std::int64_t now_ms);
  //! When the provider last asked for a re-run of the machine.
  std::optional<std::int64_t> last_rerun_request_at(const std::string& machine_id);
  //! The newest runs first.
  std::vector<BenchmarkRunRow> recent_runs(const std::string& machine_id, std::int64_t limit);

  void add_gpu_result(const GpuResultWrite& r, std::int64_t now_ms);
  std::optional<GpuResultRow> latest_result(const std::string& machine_id, const std::string& uuid);
  //! The newest points first.
  std::vector<ScorePoint> score_history(const std::string& machine_id, const std::string& uuid, std::int64_t limit);

  //! The machine's runs completed at or after `since_ms`, oldest first.
  std::vector<CompletedRunRow> completed_runs_since(const std::string& machine_id, std::int64_t since_ms);
  //! The machine's last `limit` completed runs with their report and machine checks, newest first.
  std::vector<CompletedRunRow> recent_completed_runs(const std::string& machine_id, std::int64_t limit);
  //! The machine's scored GPU results at or after `since_ms` (0: all of them), oldest first.
  std::vector<GpuScoreRow> gpu_scores_since(const std::string& machine_id, std::int64_t since_ms);
  //! Each GPU's first scored result (its baseline), by uuid.
  std::vector<GpuScoreRow> first_gpu_scores(const std::string& machine_id);

  //! The listing before a run: listed or not, none when never benchmarked; with the perf score.
  struct Listing {
    bool listed = false;
    std::optional<double> perf_score;
    std::string delist_reason;
  };
  std::optional<Listing> listing(const std::string& machine_id, const std::string& uuid);
  void upsert_listing(const ListingWrite& l, std::int64_t now_ms);
  //! Every listed GPU of the machine delisted with this reason until a run passes; returns how many.
  std::int64_t unlist_machine(const std::string& machine_id, const std::string& reason,
                              const std::string& recommendation, std::int64_t now_ms);
  //! The machine's present GPUs by index, with their listing.
  std::vector<GpuListingRow> present_gpu_listings(const std::string& machine_id);

 private:
  store::Tx& tx_;
};

}  // namespace gpunex::server
