// Issue 21: a lying agent is caught, an honest one never is. Each trial is one challenge as the server
// issues it (fresh random seeds; n and the time allowed from server/fleet/challenges), answered by the
// agent's own solver (agent/bench/challenge_solver) in each lie mode, and judged by the functions the
// server's POST /v1/agent/challenges calls (core::challenge::judge_opened, judge_vram). The time a root
// takes is the simulated GPU's time (what the agent waits before posting) plus kOverheadS for the agent's
// HTTP round trip and computing on the CPU; the end-to-end test with the real agent is
// tests/js/api/challenges.test.mjs.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "agent/bench/backend_targets.hpp"
#include "agent/bench/challenge_solver.hpp"
#include "core/benchmark.hpp"
#include "core/challenge.hpp"
#include "core/gpu_catalog.hpp"
#include "gpu/sim/sim_backend.hpp"
#include "server/fleet/challenges.hpp"

namespace gpunex {
namespace {

namespace cc = core::challenge;
using agent::bench::ChallengeSolver;
using agent::bench::ChallengeTarget;
using agent::bench::LieMode;

constexpr int kTrials = 300;
constexpr double kOverheadS = 0.25;
constexpr std::int64_t kMemoryMib = 2048;  // small, so that 300 fills stay quick

const core::GpuModel* catalog_model(const std::string& model_id) {
  for (const auto& m : core::builtin_catalog()) {
    if (m.id == model_id) return &m;
  }
  return nullptr;
}

//! A simulated GPU of a catalog model at its expected FP16 tensor speed.
double true_tflops(const std::string& model_id) {
  const auto* m = catalog_model(model_id);
  return m ? *core::bench::expected_figure(core::bench::model_spec(*m), core::bench::Metric::fp16_tensor, {}) : 0;
}

struct Trials {
  int gemm_failed = 0, vram_failed = 0;
};

//! `kTrials` GEMM and VRAM challenges answered by an agent in `lie` mode on a simulated `model`.
Trials run_trials(LieMode lie, const std::string& model) {
  const server::ChallengeSettings s;
  std::mt19937_64 rng(static_cast<std::uint64_t>(lie) * 7919 + 17);
  ChallengeSolver solver(lie, rng());
  ChallengeTarget target;
  target.simulated = true;
  target.true_tflops = true_tflops(model);
  target.memory_mib = kMemoryMib;
  EXPECT_GT(target.true_tflops, 0) << model;
  // What the agent claims: its run's FP16 tensor figure (inflated under that lie), its registered memory.
  const double claimed = target.true_tflops * agent::bench::figure_factor(lie);
  const std::int64_t registered_mib = kMemoryMib * (lie == LieMode::vram ? agent::bench::kVramLieFactor : 1);
  const auto plan = server::plan_gemm_challenge(true, claimed, s);
  Trials out;
  for (int t = -1; t < kTrials; ++t) {  // trial -1 primes a replaying agent with a genuine old answer
    const auto seeds = cc::derive_seeds(std::to_string(rng()) + std::to_string(rng()), "chl_" + std::to_string(t));
    protocol::ChallengeSpec gemm;
    gemm.kind = "gemm";
    gemm.n = plan.n;
    gemm.products = plan.products;
    gemm.allowed_s = plan.allowed_s;
    gemm.seed_a = seeds.matrix_a;
    gemm.seed_b = seeds.matrix_b;
    // The root, timed as the server times it; then, only if it came in time, the rows the server picks.
    auto commit = solver.commit_gemm(gemm, target);
    EXPECT_TRUE(commit);
    bool gemm_ok = false;
    if (commit && commit->emulated_s + kOverheadS <= plan.allowed_s) {
      const auto rows = static_cast<std::uint64_t>(plan.n * plan.products);
      const auto picks = cc::pick_slices(seeds.slices, rows, static_cast<std::size_t>(plan.open_rows));
      const auto opened = solver.open_gemm(picks);
      const auto root = cc::parse_digest(commit->root);
      gemm_ok = opened && root &&
                cc::judge_opened(seeds, static_cast<std::size_t>(plan.n), static_cast<std::size_t>(plan.products),
                                 *root, picks, *opened) == cc::Outcome::passed;
    }

    protocol::ChallengeSpec vram;
    vram.kind = "vram";
    vram.fill_seed = seeds.matrix_a;
    vram.slices = registered_mib * 9 / 10;
    vram.slice_words = 128;
    EXPECT_TRUE(solver.fill(vram, target));
    const auto picked =
        cc::pick_slices(seeds.slices, static_cast<std::uint64_t>(vram.slices), static_cast<std::size_t>(s.vram_picks));
    const bool vram_ok = cc::judge_vram(vram.fill_seed, picked, 128, solver.digests(picked), kOverheadS,
                                        s.sim_vram_allowed_s) == cc::Outcome::passed;
    if (t < 0) continue;
    out.gemm_failed += !gemm_ok;
    out.vram_failed += !vram_ok;
  }
  std::printf("  %-8s %-9s n %lld x %lld products, %lld rows opened: GEMM failed %3d/%d, VRAM failed %3d/%d\n",
              std::string(agent::bench::lie_mode_name(lie)).c_str(), model.c_str(), static_cast<long long>(plan.n),
              static_cast<long long>(plan.products), static_cast<long long>(plan.open_rows), out.gemm_failed, kTrials,
              out.vram_failed, kTrials);
  return out;
}

constexpr int kCaughtAtLeast = kTrials * 99 / 100;

TEST(ChallengeTrials, HonestSimulatedGpusAreNeverFlagged) {
  for (const std::string model : {"H100-SXM", "L40S", "RTX-4090"}) {
    const auto r = run_trials(LieMode::none, model);
    EXPECT_EQ(r.gemm_failed, 0) << model;
    EXPECT_EQ(r.vram_failed, 0) << model;
  }
}

TEST(ChallengeTrials, InflatedFiguresAreLate) {
  for (const std::string model : {"H100-SXM", "L40S", "RTX-4090"}) {
    EXPECT_GE(run_trials(LieMode::inflate, model).gemm_failed, kCaughtAtLeast) << model;
  }
}

TEST(ChallengeTrials, RandomAnswersAreWrong) {
  const auto r = run_trials(LieMode::random, "L40S");
  EXPECT_GE(r.gemm_failed, kCaughtAtLeast);
  EXPECT_GE(r.vram_failed, kCaughtAtLeast);
}

// Figures twice the GPU's, with the root sent in time over the rows its real speed computed by then: the
// rows opened catch the made-up ones.
TEST(ChallengeTrials, APartialCommitmentIsCaughtWhenItsRowsAreOpened) {
  for (const std::string model : {"H100-SXM", "L40S", "RTX-4090"}) {
    EXPECT_GE(run_trials(LieMode::partial, model).gemm_failed, kCaughtAtLeast) << model;
  }
}

TEST(ChallengeTrials, AnAnswerFromASmallerMatrixIsWrong) {
  EXPECT_GE(run_trials(LieMode::smaller, "L40S").gemm_failed, kCaughtAtLeast);
}

TEST(ChallengeTrials, MoreVramThanPresentIsCaught) {
  EXPECT_GE(run_trials(LieMode::vram, "L40S").vram_failed, kCaughtAtLeast);
}

TEST(ChallengeTrials, AReplayedAnswerIsWrong) {
  const auto r = run_trials(LieMode::replay, "L40S");
  EXPECT_GE(r.gemm_failed, kCaughtAtLeast);
  EXPECT_GE(r.vram_failed, kCaughtAtLeast);
}

// The telemetry check: the readings the agent's own sampler takes on a simulated GPU during its FP16 tensor
// case (agent/bench/backend_targets, three per case as a short case gives), judged as the server judges a
// run's (core::challenge::judge_telemetry against the model's peak and TDP), a fresh second each trial.
std::int64_t g_fake_ms = 0;
std::int64_t fake_clock() { return g_fake_ms += 1000; }

int telemetry_failures(const std::string& model, const std::string& faults, bool idle, double claim_factor) {
  auto machine = gpu::sim::parse_machine_toml("[[gpu]]\nmodel = \"" + model + "\"\n" + faults, "trials");
  EXPECT_TRUE(machine) << (machine ? "" : machine.error().message);
  if (!machine) return -1;
  gpu::sim::SimBackend backend(*machine, "trials-" + model);
  backend.set_clock(&fake_clock);
  auto gpus = backend.list_gpus();
  EXPECT_TRUE(gpus);
  std::mutex mu;
  const auto targets = agent::bench::gpu_targets(backend, *gpus, mu, idle);
  const auto* m = catalog_model(model);
  const auto& target = targets.at(0);
  // What the honest run reports: the expected figure, derated by the simulated faults as the agent's suite does.
  const double claimed = true_tflops(model) * target.sim_perf_factor * target.sim_compute_derate * claim_factor;
  int failed = 0;
  for (int t = 0; t < kTrials; ++t) {
    std::vector<core::bench::TelemetryPoint> during;
    for (int k = 0; k < 3; ++k) during.push_back(*target.sample());
    failed += !cc::judge_telemetry(claimed, m->fp16_tensor_tflops.value_or(0), m->tdp_w.value_or(0), during).consistent;
  }
  std::printf("  telemetry %-9s %-24s idle=%d claim x%.1f: inconsistent %3d/%d\n", model.c_str(),
              faults.empty() ? "(no faults)" : faults.substr(0, faults.size() - 1).c_str(), idle, claim_factor, failed,
              kTrials);
  return failed;
}

TEST(ChallengeTrials, HonestTelemetryIsNeverFlagged) {
  for (const std::string model : {"H100-SXM", "L40S", "RTX-4090"}) {
    for (const std::string faults : {"", "power_cap = true\n", "thermal_throttle = true\n", "perf_factor = 0.7\n"}) {
      EXPECT_EQ(telemetry_failures(model, faults, false, 1.0), 0) << model << faults;
    }
  }
}

TEST(ChallengeTrials, FiguresWithIdleTelemetryAreCaught) {
  for (const std::string model : {"H100-SXM", "L40S", "RTX-4090"}) {
    EXPECT_GE(telemetry_failures(model, "", true, 1.0), kCaughtAtLeast) << model;
  }
}

TEST(ChallengeTrials, InflatedFiguresOutrunTheirPower) {
  for (const std::string model : {"H100-SXM", "L40S", "RTX-4090"}) {
    EXPECT_GE(telemetry_failures(model, "", false, agent::bench::kInflateFactor), kCaughtAtLeast) << model;
  }
}

}  // namespace
}  // namespace gpunex
