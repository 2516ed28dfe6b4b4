#include "agent/bench/challenge_solver.hpp"

#include <algorithm>

#include "core/challenge.hpp"
#ifdef GPUNEX_HAVE_CUDA
#include "gpu/cuda/cuda_bench.hpp"
#endif

namespace gpunex::agent::bench {

namespace {

namespace cc = core::challenge;
using core::Error;
using core::ErrorCode;

std::uint64_t next(std::uint64_t& s) {
  s += 0x9e3779b97f4a7c15ULL;
  std::uint64_t z = s;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

std::optional<LieMode> parse_lie_mode(std::string_view text) {
  for (auto m : {LieMode::none, LieMode::inflate, LieMode::random, LieMode::smaller, LieMode::vram, LieMode::replay,
                 LieMode::idle, LieMode::bait}) {
    if (lie_mode_name(m) == text) return m;
  }
  return std::nullopt;
}

std::string_view lie_mode_name(LieMode m) {
  switch (m) {
    case LieMode::none:
      return "none";
    case LieMode::inflate:
      return "inflate";
    case LieMode::random:
      return "random";
    case LieMode::smaller:
      return "smaller";
    case LieMode::vram:
      return "vram";
    case LieMode::replay:
      return "replay";
    case LieMode::idle:
      return "idle";
    case LieMode::bait:
      return "bait";
  }
  return "none";
}

struct ChallengeSolver::Fill {
  std::uint64_t slice_words = 0;
  std::uint64_t slices_held = 0;    // whole slices in memory
  std::vector<std::uint64_t> host;  // simulated GPU
#ifdef GPUNEX_HAVE_CUDA
  std::unique_ptr<gpu::cuda::DeviceFill> device;
#endif
};

ChallengeSolver::ChallengeSolver(LieMode lie, std::uint64_t lie_seed) : lie_(lie), lie_state_(lie_seed) {}
ChallengeSolver::~ChallengeSolver() = default;

core::Result<ChallengeSolver::GemmAnswer> ChallengeSolver::gemm(const protocol::ChallengeSpec& spec,
                                                                const ChallengeTarget& target) {
  const auto n = static_cast<std::size_t>(spec.n);
  GemmAnswer out;
  if (target.simulated && target.true_tflops > 0) {
    out.emulated_s = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) /
                     (target.true_tflops * 1e12 * cc::kSimDilation);
  }
  if (lie_ == LieMode::replay && last_c_) {
    out.c = *last_c_;
    out.emulated_s = 0;
    return out;
  }
  if (lie_ == LieMode::random) {
    out.c.resize(n * n);
    for (auto& x : out.c) x = static_cast<std::int64_t>(next(lie_state_) % 2001) - 1000;
    out.emulated_s = 0;
    return out;
  }
  if (lie_ == LieMode::smaller) {
    const std::size_t h = std::max<std::size_t>(1, n / 2);
    const auto c = cc::multiply(cc::generate_matrix(spec.seed_a, h), cc::generate_matrix(spec.seed_b, h));
    out.c.assign(n * n, 0);
    for (std::size_t i = 0; i < h; ++i) {
      for (std::size_t j = 0; j < h; ++j) out.c[i * n + j] = c.at(i, j);
    }
    out.emulated_s /= 8;
    return out;
  }
  if (target.simulated || target.cuda_ordinal < 0) {
    out.c = cc::multiply(cc::generate_matrix(spec.seed_a, n), cc::generate_matrix(spec.seed_b, n)).v;
  } else {
#ifdef GPUNEX_HAVE_CUDA
    auto c = gpu::cuda::challenge_gemm(target.cuda_ordinal, spec.seed_a, spec.seed_b, static_cast<int>(n));
    if (!c) return c.error();
    out.c = std::move(*c);
#else
    return Error::make(ErrorCode::unavailable, "this agent was built without CUDA: it cannot answer on the GPU");
#endif
  }
  if (lie_ == LieMode::replay) last_c_ = out.c;
  return out;
}

core::Status ChallengeSolver::fill(const protocol::ChallengeSpec& spec, const ChallengeTarget& target) {
  fill_ = std::make_unique<Fill>();
  fill_->slice_words = static_cast<std::uint64_t>(spec.slice_words);
  // What the GPU really holds, by the server's rule (90% of its memory, a slice per MiB).
  const auto held = static_cast<std::uint64_t>(std::max<std::int64_t>(1, target.memory_mib * 9 / 10));
  fill_->slices_held = std::min(held, static_cast<std::uint64_t>(spec.slices));
  if (lie_ == LieMode::random) return core::ok_status();  // fills nothing
  const std::uint64_t words = fill_->slices_held * fill_->slice_words;
  if (target.simulated || target.cuda_ordinal < 0) {
    fill_->host.resize(words);
    for (std::uint64_t i = 0; i < words; ++i) fill_->host[i] = cc::vram_word(spec.fill_seed, i);
    return core::ok_status();
  }
#ifdef GPUNEX_HAVE_CUDA
  auto d = gpu::cuda::DeviceFill::create(target.cuda_ordinal, spec.fill_seed, words);
  if (!d) return d.error();
  fill_->device = std::move(*d);
  fill_->slices_held = fill_->device->words() / fill_->slice_words;
  return core::ok_status();
#else
  return Error::make(ErrorCode::unavailable, "this agent was built without CUDA: it cannot fill GPU memory");
#endif
}

std::vector<std::string> ChallengeSolver::digests(const std::vector<std::uint64_t>& slices) {
  std::vector<std::string> out;
  if (lie_ == LieMode::replay && last_digests_) return *last_digests_;
  for (auto s : slices) {
    if (!fill_ || lie_ == LieMode::random || s >= fill_->slices_held) {
      std::string fake;
      for (int i = 0; i < 4; ++i) fake += protocol::seed_text(next(lie_state_));
      out.push_back(lie_ == LieMode::none ? std::string() : fake);
      continue;
    }
    const std::uint64_t first = s * fill_->slice_words;
    if (!fill_->host.empty()) {
      out.push_back(cc::words_digest(fill_->host.data() + first, fill_->slice_words));
      continue;
    }
#ifdef GPUNEX_HAVE_CUDA
    if (fill_->device) {
      auto words = fill_->device->read(first, fill_->slice_words);
      out.push_back(words ? cc::words_digest(words->data(), words->size()) : std::string());
      continue;
    }
#endif
    out.push_back(std::string());
  }
  if (lie_ == LieMode::replay) last_digests_ = out;
  return out;
}

}  // namespace gpunex::agent::bench
