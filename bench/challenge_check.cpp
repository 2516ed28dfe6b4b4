// The benchmark challenges (issue 21) on a real GPU, for bench/gpu-check.sh: the committed GEMM challenge as
// the server issues it to a real GPU (n = 8192, as many products as take 4 s at the GPU's measured FP16
// figure, matrices generated on the GPU, cuBLAS), its rows committed, opened and judged by the server's check;
// the VRAM challenge over 90% of the GPU's memory, 16 slices read back and judged; and their wall time
// against the GPU part of a benchmark run (the suite's compute and memory cases at the suite's sizes and
// timings). Prints "key value" lines and the overhead as a share of the run (target < 5%).
// Exit status: 0 when both challenges pass, 1 otherwise.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/challenge.hpp"
#include "gpu/cuda/cuda_bench.hpp"
#include "server/fleet/challenges.hpp"

namespace cu = gpunex::gpu::cuda;
namespace cc = gpunex::core::challenge;

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int dev = argc > 1 ? std::stoi(argv[1]) : 0;
  if (cu::device_count() <= dev) {
    std::fprintf(stderr, "challenge_check: no CUDA device %d\n", dev);
    return 1;
  }
  auto p = cu::device_props(dev);
  if (!p) {
    std::fprintf(stderr, "challenge_check: %s\n", p.error().message.c_str());
    return 1;
  }
  std::printf("name %s\n", p->name.c_str());

  // The GPU part of a benchmark run, as the agent's suite runs it.
  const int g = cu::gemm_size_for_memory(static_cast<double>(p->total_mem) / (1ull << 30));
  auto t = Clock::now();
  (void)cu::fma_fp32(dev, cu::kFmaTiming);
  (void)cu::fma_fp16(dev, cu::kFmaTiming);
  (void)cu::gemm_lt(dev, cu::GemmType::fp16, g, g, g, cu::kGemmTiming);
  (void)cu::gemm_lt(dev, cu::GemmType::bf16, g, g, g, cu::kGemmTiming);
  if (p->cc_major * 10 + p->cc_minor >= 89) (void)cu::gemm_lt(dev, cu::GemmType::fp8_e4m3, g, g, g, cu::kGemmTiming);
  for (auto op : {cu::MemOp::read, cu::MemOp::write, cu::MemOp::copy}) {
    (void)cu::memory_bandwidth(dev, op, 1ull << 30, cu::kMemoryTiming);
  }
  const double bench_s = since(t);
  std::printf("benchmark_run_gpu_s %.3f\n", bench_s);

  std::mt19937_64 rng(std::random_device{}());
  const auto seeds = cc::derive_seeds(std::to_string(rng()), "chl_gpu_check");
  bool ok = true;

  // GEMM, committed: sized by the server's own plan at the FP16 figure this GPU just measured.
  const gpunex::server::ChallengeSettings settings;
  auto fp16 = cu::gemm_lt(dev, cu::GemmType::fp16, g, g, g, cu::kGemmTiming);
  const double tflops = fp16 && !fp16->empty() ? *std::max_element(fp16->begin(), fp16->end()) : 0;
  const auto plan = gpunex::server::plan_gemm_challenge(false, tflops, settings);
  std::printf(
      "fp16_tflops %.1f\ngemm_n %lld\ngemm_products %lld\ngemm_work_s %.3f\ngemm_allowed_s %.3f\n"
      "gemm_open_rows %lld\n",
      tflops, static_cast<long long>(plan.n), static_cast<long long>(plan.products), plan.work_s, plan.allowed_s,
      static_cast<long long>(plan.open_rows));
  t = Clock::now();
  auto leaves = cu::challenge_row_digests(dev, seeds.matrix_a, seeds.matrix_b, static_cast<int>(plan.n),
                                          static_cast<int>(plan.products));
  if (!leaves) {
    std::printf("gemm ERROR %s\n", leaves.error().message.c_str());
    return 1;
  }
  const auto commitment = cc::commit(std::move(*leaves), std::max(1u, std::thread::hardware_concurrency()));
  double gemm_s = since(t);
  const auto rows = static_cast<std::uint64_t>(plan.n) * static_cast<std::uint64_t>(plan.products);
  const auto picks = cc::pick_slices(seeds.slices, rows, static_cast<std::size_t>(plan.open_rows));
  t = Clock::now();
  auto values = cu::challenge_rows(dev, seeds.matrix_a, seeds.matrix_b, static_cast<int>(plan.n), picks);
  if (!values) {
    std::printf("gemm ERROR %s\n", values.error().message.c_str());
    return 1;
  }
  std::vector<cc::OpenedRow> opened;
  for (std::size_t k = 0; k < picks.size(); ++k) opened.push_back(cc::open_row(commitment, picks[k], (*values)[k]));
  const double open_s = since(t);
  t = Clock::now();
  const auto outcome = cc::judge_opened(seeds, static_cast<std::size_t>(plan.n),
                                        static_cast<std::size_t>(plan.products), commitment.root, picks, opened);
  std::printf("gemm_commit_s %.4f (allowed %.3f: %s)\ngemm_open_s %.4f\ngemm_check_s %.4f\ngemm_outcome %s\n", gemm_s,
              plan.allowed_s, gemm_s <= plan.allowed_s ? "in time" : "LATE", open_s, since(t),
              std::string(cc::outcome_name(outcome)).c_str());
  ok = ok && outcome == cc::Outcome::passed && gemm_s <= plan.allowed_s;
  gemm_s += open_s;

  // VRAM: 90% of the memory in 1 MiB slices, as the server asks of a real GPU; 16 picked afterwards.
  const std::uint64_t slice_words = (1 << 20) / 8;
  const std::uint64_t slices = (p->total_mem >> 20) * 9 / 10;
  const std::uint64_t free_slices = (p->free_mem >> 20) * 95 / 100;
  const std::uint64_t fill_slices = std::min(slices, free_slices);
  t = Clock::now();
  auto fill = cu::DeviceFill::create(dev, seeds.matrix_a, fill_slices * slice_words);
  const double fill_s = since(t);
  if (!fill) {
    std::printf("vram ERROR %s\n", fill.error().message.c_str());
    return 1;
  }
  const std::uint64_t held = (*fill)->words() / slice_words;
  const auto picked = cc::pick_slices(seeds.slices, held, 16);
  t = Clock::now();
  std::vector<std::string> digests;
  for (auto s : picked) {
    auto words = (*fill)->read(s * slice_words, slice_words);
    digests.push_back(words ? cc::words_digest(words->data(), words->size()) : std::string());
  }
  const double read_s = since(t);
  const auto vram = cc::judge_vram(seeds.matrix_a, picked, slice_words, digests, 0, 1);
  std::printf("vram_slices %llu of %llu\nvram_fill_s %.3f\nvram_read_s %.4f\nvram_outcome %s\n",
              static_cast<unsigned long long>(held), static_cast<unsigned long long>(slices), fill_s, read_s,
              std::string(cc::outcome_name(vram)).c_str());
  ok = ok && vram == cc::Outcome::passed;
  fill->reset();

  const double overhead = (gemm_s + fill_s + read_s) / bench_s;
  std::printf("challenge_overhead_pct %.2f\n", overhead * 100);
  std::printf("== challenges: %.3f s against a %.1f s benchmark run (GPU part): %.2f%% (target < 5%%): %s\n",
              gemm_s + fill_s + read_s, bench_s, overhead * 100, overhead < 0.05 ? "OK" : "OVER");
  return ok ? 0 : 1;
}
