#pragma once
// Benchmark challenges on the server (issue 21; the exchange is described in protocol/challenge.hpp, the
// math in core/challenge.hpp). With a requested run's results the server issues, per reported GPU, a GEMM
// challenge timed by the GPU's claimed FP16 tensor TFLOP/s and a VRAM challenge over its registered
// memory; it keeps them in benchmark_challenges with their seeds, deadline and outcome. A wrong or late
// answer, or none by the deadline, delists the GPU with a reason the provider can act on and counts
// against the provider; `review_after` failures flag the provider for an admin's review.
// Every function works inside the caller's transaction.

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
#include "store/store.hpp"

namespace gpunex::server {

struct ChallengeSettings {
  double relative_margin = 0.25;     // an answer may be this much slower than the claimed speed allows
  double sim_fixed_margin_s = 0.75;  // simulated machines: the agent's HTTP and scheduling on top
  double fixed_margin_s = 5.0;       // real machines: a round trip over the internet, GEMM launch, transfer
  std::int64_t real_gemm_n = 256;    // protocol::kMaxGemmN: C travels in full
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

//! The n of a GEMM challenge, and the seconds its answer may take from the issue (pure; the trials test
//! reads them). A simulated GPU's speed is dilated by core::challenge::kSimDilation.
std::int64_t gemm_challenge_n(bool simulated, std::optional<double> claimed_tflops, const ChallengeSettings& s);
double gemm_allowed_s(bool simulated, std::optional<double> claimed_tflops, std::int64_t n, const ChallengeSettings& s);

//! Issues a GEMM and a VRAM challenge per GPU of the run; returns their protocol::ChallengeSpec JSON.
nlohmann::json issue_challenges(store::Tx& tx, const std::string& run_id, const std::string& machine_id, bool simulated,
                                const std::vector<ChallengedGpu>& gpus, const ChallengeSettings& s,
                                std::int64_t now_ms);

//! POST /v1/agent/challenges: judges an answer (or records a VRAM fill and picks the slices). 400 for a
//! malformed body, 404 for another provider's or an unknown challenge, 409 for one already decided.
core::Result<nlohmann::json> answer_challenge(store::Tx& tx, const std::string& provider_id, std::string_view body,
                                              const ChallengeSettings& s, std::int64_t now_ms);

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
