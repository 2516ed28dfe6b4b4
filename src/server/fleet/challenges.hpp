#pragma once
// Benchmark challenges on the server (issue 21; the exchange is described in protocol/challenge.hpp, the
// math in core/challenge.hpp). With a requested run's results the server issues, per reported GPU, a GEMM
// challenge timed by the GPU's claimed FP16 tensor TFLOP/s (its rows committed, then some opened) and a
// VRAM challenge over its registered memory; it keeps them in benchmark_challenges with their seeds,
// deadline and outcome. A wrong or late answer, or none by the deadline, delists the GPU with a reason the provider can
// act on and counts against the provider; `review_after` failures flag the provider for an admin's review. Every
// function works inside the caller's transaction.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/benchmark.hpp"
#include "core/benchmark_report.hpp"
#include "core/challenge.hpp"
#include "core/result.hpp"
#include "protocol/challenge.hpp"
#include "store/store.hpp"

namespace gpunex::server {

struct ChallengeSettings {
  double relative_margin = 0.25;     // an answer may be this much slower than the claimed speed allows
  double sim_fixed_margin_s = 0.75;  // simulated machines: the agent's HTTP and scheduling on top
  double fixed_margin_s = 1.5;       // real machines: a round trip, the GEMMs' launch, hashing the digests
  std::int64_t real_gemm_n = 8192;   // the n of a real GPU's GEMM challenge
  std::int64_t sim_gemm_n = 64;      // a simulated GPU's (on the CPU; its products fill the work time)
  double gemm_work_s = 4.0;          // a real GPU's GEMM challenge takes this long at the claimed speed
  double sim_gemm_work_s = 1.0;      // a simulated GPU's, at its dilated speed (core::challenge::kSimDilation)
  double slower_by = 2.0;            // the rows opened catch a GPU this much slower than claimed (< 1e-9)
  std::int64_t min_open_rows = 16;   // and never fewer rows than this
  double open_allowed_s = 60.0;      // from the rows' pick to their opening (no speed bound: recomputed rows)
  double sim_open_allowed_s = 5.0;
  std::int64_t vram_picks = 16;      // slices the server asks digests of
  double vram_allowed_s = 5.0;       // from the slices' reply to their digests
  double sim_vram_allowed_s = 2.0;
  std::int64_t fill_allowed_ms = 10LL * 60 * 1000;  // from the issue to `filled`
  std::int64_t review_after = 3;                    // failed challenges before the provider is flagged for review
  bool require_answers = true;                      // an unanswered challenge (or a run without power readings) fails
  std::int64_t spot_check_mean_ms = 24LL * 3600 * 1000;  // mean time between a machine's spot checks; 0: none
  std::string base_url;                             // for the link in the provider's mail
};

//! The delist reason of a GPU whose run passed and whose challenges are not all answered yet: it is listed
//! when the last one passes (with require_answers; without, a passing run lists it at once).
inline constexpr std::string_view kAwaitingChallenges = "Waiting for the answers to its benchmark challenges";

//! A reported GPU as a challenge needs it.
struct ChallengedGpu {
  std::string uuid;
  std::optional<double> claimed_tflops;  // the run's FP16 tensor figure, else the model's reference
  std::int64_t memory_mib = 0;           // as registered
};

//! A GEMM challenge's size and times (pure; the trials test reads them): the products of n×n that fill
//! the work time at the claimed FP16 tensor speed (core::challenge::plan_gemm; dilated by kSimDilation for
//! a simulated GPU, whose many small products leave more rows than are opened, as a real GPU's do), the
//! seconds its root may take from the issue, and the rows the server opens.
struct GemmChallengePlan {
  std::int64_t n = 0, products = 1, open_rows = 0;
  double work_s = 0, allowed_s = 0, open_allowed_s = 0;
};
inline GemmChallengePlan plan_gemm_challenge(bool simulated, std::optional<double> claimed,
                                             const ChallengeSettings& s) {
  GemmChallengePlan p;
  const double fixed = simulated ? s.sim_fixed_margin_s : s.fixed_margin_s;
  const double speed = claimed && *claimed > 0 ? *claimed * (simulated ? core::challenge::kSimDilation : 1.0) : 0;
  const double target = simulated ? s.sim_gemm_work_s : s.gemm_work_s;
  const auto n = static_cast<std::size_t>(simulated ? s.sim_gemm_n : s.real_gemm_n);
  const auto plan = core::challenge::plan_gemm(n, speed, target);
  p.n = static_cast<std::int64_t>(plan.n);
  p.products = static_cast<std::int64_t>(plan.products);
  p.work_s = plan.work_s;
  p.allowed_s = speed > 0 ? core::challenge::max_gemm_seconds(plan.n, speed, s.relative_margin, fixed, plan.products)
                          : fixed;
  p.open_allowed_s = simulated ? s.sim_open_allowed_s : s.open_allowed_s;
  p.open_rows = static_cast<std::int64_t>(core::challenge::rows_to_open(
      p.allowed_s, p.work_s, s.slower_by, plan.n * plan.products, static_cast<std::size_t>(s.min_open_rows),
      static_cast<std::size_t>(protocol::kMaxOpenedRows)));
  return p;
}

//! Issues a GEMM and a VRAM challenge per GPU of the run; returns their protocol::ChallengeSpec JSON.
nlohmann::json issue_challenges(store::Tx& tx, const std::string& run_id, const std::string& machine_id, bool simulated,
                                const std::vector<ChallengedGpu>& gpus, const ChallengeSettings& s,
                                std::int64_t now_ms);

//! The costly part of judging a GEMM challenge's opened rows (O(n²) per challenge), for a read
//! transaction before the write one: the verdict, or nothing when `a` opens no challenge of this
//! provider's that awaits its rows (answer_challenge then says why).
std::optional<core::challenge::Outcome> judge_opening(store::Tx& tx, const std::string& provider_id,
                                                      const protocol::ChallengeAnswer& a);

//! POST /v1/agent/challenges: judges an answer (or records a GEMM root or a VRAM fill and picks the rows
//! or slices), with `prejudged` from judge_opening when the caller has it. 404 for another provider's or
//! an unknown challenge, 409 for one already decided, 400 for an answer of the wrong step.
core::Result<nlohmann::json> answer_challenge(store::Tx& tx, const std::string& provider_id,
                                              const protocol::ChallengeAnswer& a, const ChallengeSettings& s,
                                              std::int64_t now_ms,
                                              std::optional<core::challenge::Outcome> prejudged = std::nullopt);

//! With require_answers: the machine's open challenges past their deadline fail as unanswered. Returns how many.
std::size_t expire_challenges(store::Tx& tx, const std::string& machine_id, const ChallengeSettings& s,
                              std::int64_t now_ms);

//! The telemetry check of one GPU's run (core::challenge::judge_telemetry on the samples of its FP16 tensor
//! case), or nothing when there is nothing to check: no claimed figure, a model without a known peak or TDP,
//! or (without require_answers, for reports posted by hand) no power readings at all.
std::optional<core::challenge::TelemetryVerdict> check_run_telemetry(const core::bench::GpuRun& gpu,
                                                                     std::optional<double> claimed_tflops,
                                                                     const core::bench::ModelSpec* model,
                                                                     std::optional<double> tdp_w,
                                                                     const ChallengeSettings& s);
//! What the provider reads when the telemetry check fails: a Finding that keeps the GPU off the market.
core::bench::Finding telemetry_finding(const core::challenge::TelemetryVerdict& v, double claimed_tflops);
//! Keeps the verdict beside the run's challenges (kind "telemetry"); a failure counts against the provider
//! like a failed challenge. The run's findings have already kept the GPU off the market.
void record_telemetry_check(store::Tx& tx, const std::string& run_id, const std::string& machine_id,
                            const std::string& gpu_uuid, double claimed_tflops,
                            const core::challenge::TelemetryVerdict& v, const ChallengeSettings& s,
                            std::int64_t now_ms);

//! A `spot_check` command for the heartbeat reply of a machine whose spot check is due: a GEMM and a VRAM
//! challenge for each listed GPU that no rental holds, checking the figures of the run that listed it.
//! Due at random times, on average spot_check_mean_ms apart (uniform in ½..1½ of it, so a provider cannot
//! plan for one); none while the machine has a run or a challenge open.
std::optional<nlohmann::json> spot_check_command(store::Tx& tx, const std::string& machine_id,
                                                 const ChallengeSettings& s, std::int64_t now_ms);

//! The run's challenges for the provider's Benchmarks tab.
nlohmann::json run_challenges(store::Tx& tx, const std::string& run_id);

//! GET /v1/admin/providers/flagged: providers flagged for review, newest first.
nlohmann::json flagged_providers(store::Tx& tx);

}  // namespace gpunex::server
