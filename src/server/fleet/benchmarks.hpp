#pragma once
// Benchmark runs on the server: scheduling (after first registration, weekly,
// after a driver or GPU change; never two at once on a machine), delivery as a
// `run_benchmark` command in the heartbeat reply, ingestion of the agent's
// results (validated, stored with raw samples), each GPU's performance score
// and quality ratio, delisting at once with a notification naming the failed
// metric, measured vs expected and a recommendation, and relisting when a
// later run passes. The judgement itself is core/benchmark.hpp, the run and
// listing rules core/benchmark_run.hpp and core/listing.hpp, the SQL
// benchmarks_repo, the notices' text mail/templates.hpp; every function here
// works inside the caller's transaction, except the scheduler's round.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/benchmark.hpp"
#include "core/benchmark_run.hpp"
#include "core/reliability.hpp"
#include "core/result.hpp"
#include "server/fleet/benchmarks_repo.hpp"
#include "server/fleet/challenges.hpp"
#include "server/platform/config.hpp"
#include "store/store.hpp"

namespace gpunex::server {

//! How long a requested run waits for the machine's rentals to end before it is delivered anyway.
inline constexpr std::int64_t kRunWaitsForRentalsMs = 24 * 3'600'000;

//! Why a machine's GPUs are unlisted after its hardware changed, until a run verifies them again.
inline constexpr std::string_view kReverifyReason =
    "the machine's GPUs, driver or simulated flag changed: it is verified again before it is listed";

struct BenchmarkSettings {
  core::bench::Policy policy;
  std::int64_t interval_ms = 7LL * 24 * 3600 * 1000;    // a full run this often
  std::int64_t run_timeout_ms = 2LL * 3600 * 1000;      // a delivered run with no result expires
  std::int64_t rerun_min_interval_ms = 3600 * 1000;     // a provider's re-run button, per machine
  std::string base_url;                                  // for links in mails
  ChallengeSettings challenges;                          // issued with every requested run's results
};

//! The settings from the server's configuration.
BenchmarkSettings benchmark_settings(const Config& c);

//! Opens the runs that are due on online machines with no open run. Returns how many. Reads which are
//! due in one read transaction, then opens them `chunk` machines per write transaction, `pause` apart.
std::size_t schedule_benchmarks(store::Store& store, const BenchmarkSettings& s, std::int64_t now_ms,
                                std::size_t chunk = 200,
                                std::chrono::milliseconds pause = std::chrono::milliseconds(50));

//! A machine is verified before it is offered (issue 21): when it first registers, and when it registers
//! again with other GPUs, another driver or another simulated flag. Its listed GPUs are delisted (saying
//! why) until a run requested now, for `reason`, passes. A run delivered before the change is expired (the
//! agent that had it is gone); one still waiting for delivery is kept and serves.
void require_verification(store::Tx& tx, const std::string& machine_id, core::BenchmarkReason reason,
                          std::int64_t now_ms);

//! What a heartbeat of the machine at `now_ms` asks about its benchmark work (has_heartbeat_work).
HeartbeatWorkQuestion heartbeat_work_question(const std::string& machine_id, const BenchmarkSettings& s,
                                              std::int64_t now_ms);

//! The commands for a heartbeat reply: a `run_benchmark` for a requested run (marked delivered), else none.
//! Expires runs delivered longer ago than the timeout first. `has_work`: the answer to
//! heartbeat_work_question when the heartbeat's check read it already (false: nothing to do), else it is read.
nlohmann::json benchmark_commands(store::Tx& tx, const std::string& machine_id, const BenchmarkSettings& s,
                                  std::int64_t now_ms, std::optional<bool> has_work = std::nullopt);

//! POST /v1/agent/benchmarks: validates and stores a run, judges each GPU, delists or relists, notifies.
//! Any fault (malformed, another machine's id or GPU, implausible figures) is a 400 naming the field,
//! and nothing is stored.
core::Result<nlohmann::json> record_benchmark_run(store::Tx& tx, const std::string& provider_id,
                                                  std::string_view body, const BenchmarkSettings& s,
                                                  std::int64_t now_ms);

//! GET /v1/provider/machines/{id}/benchmarks: per GPU the listing state, the latest figures against the
//! reference, the score history; and the machine's runs. 404 when not this provider's machine.
core::Result<nlohmann::json> machine_benchmarks(store::Tx& tx, const std::string& provider_id,
                                                const std::string& machine_id);

//! The provider's re-run: 404 not theirs, 409 a run is open, 429 within the minimum interval.
core::Result<nlohmann::json> request_benchmark_rerun(store::Tx& tx, const std::string& provider_id,
                                                     const std::string& machine_id, const BenchmarkSettings& s,
                                                     std::int64_t now_ms);

//! The machine's benchmark runs completed at or after `since_ms`, as the reliability score's stability
//! reads them: each scored GPU's performance score against its baseline (its first scored run), and
//! the share of the run's samples it spent thermally throttled or power capped.
std::vector<core::reliability::BenchRun> benchmark_runs_for_score(store::Tx& tx, const std::string& machine_id,
                                                                  std::int64_t since_ms);

//! The listing state of a GPU for the marketplace: perf score, whether it is listed.
struct GpuListing {
  bool listed = false;
  std::optional<double> perf_score;
};
std::optional<GpuListing> gpu_listing(store::Tx& tx, const std::string& machine_id, const std::string& uuid);

}  // namespace gpunex::server
