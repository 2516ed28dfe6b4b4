#include "agent/bench/challenge_solver.hpp"

#include <algorithm>
#include <thread>

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
                 LieMode::idle, LieMode::bait, LieMode::partial}) {
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
    case LieMode::partial:
      return "partial";
  }
  return "none";
}

double figure_factor(LieMode m) {
  return m == LieMode::inflate ? kInflateFactor : m == LieMode::partial ? kPartialFactor : 1.0;
}

struct ChallengeSolver::Fill {
  std::uint64_t slice_words = 0;
  std::uint64_t slices_held = 0;    // whole slices in memory
  std::vector<std::uint64_t> host;  // simulated GPU
#ifdef GPUNEX_HAVE_CUDA
  std::unique_ptr<gpu::cuda::DeviceFill> device;
#endif
};

struct ChallengeSolver::Gemm {
  protocol::ChallengeSpec spec;
  ChallengeTarget target;
  cc::Commitment commitment;
  bool halved = false;            // `smaller`: the rows of the top-left half's product, padded with zeros
};

ChallengeSolver::ChallengeSolver(LieMode lie, std::uint64_t lie_seed) : lie_(lie), lie_state_(lie_seed) {}
ChallengeSolver::~ChallengeSolver() = default;

namespace {

//! Row i of the `smaller` lie's product: the top-left half's product, padded with zeros.
std::vector<std::int64_t> halved_row(const protocol::ChallengeSpec& spec, std::uint64_t index) {
  const auto n = static_cast<std::size_t>(spec.n);
  const std::size_t h = std::max<std::size_t>(1, n / 2);
  std::vector<std::int64_t> out(n, 0);
  const std::uint64_t row = index % n;
  if (row >= h) return out;
  const std::uint64_t a_seed = cc::product_seed(spec.seed_a, index / n);
  for (std::size_t t = 0; t < h; ++t) {
    const std::int64_t a = cc::matrix_entry(a_seed, row * h + t);
    for (std::size_t c = 0; c < h; ++c) out[c] += a * cc::matrix_entry(spec.seed_b, t * h + c);
  }
  return out;
}

}  // namespace

core::Result<ChallengeSolver::GemmCommit> ChallengeSolver::commit_gemm(const protocol::ChallengeSpec& spec,
                                                                       const ChallengeTarget& target) {
  const auto n = static_cast<std::size_t>(spec.n);
  const auto products = static_cast<std::size_t>(spec.products);
  const std::uint64_t rows = static_cast<std::uint64_t>(n) * products;
  GemmCommit out;
  if (target.simulated && target.true_tflops > 0) {
    const double nd = static_cast<double>(n);
    out.emulated_s =
        2.0 * nd * nd * nd * static_cast<double>(products) / (target.true_tflops * 1e12 * cc::kSimDilation);
  }
  if (lie_ == LieMode::replay && last_gemm_) {
    out.root = last_gemm_->first;
    out.emulated_s = 0;
    return out;
  }
  auto g = std::make_unique<Gemm>();
  g->spec = spec;
  g->target = target;
  std::vector<std::uint64_t> leaves;
  if (lie_ == LieMode::random) {
    leaves.resize(rows);
    for (auto& x : leaves) x = next(lie_state_);
    out.emulated_s = 0;
  } else if (lie_ == LieMode::smaller) {
    g->halved = true;
    for (std::uint64_t k = 0; k < rows; ++k) {
      const auto row = halved_row(spec, k);
      leaves.push_back(cc::row_digest(row.data(), n));
    }
    out.emulated_s /= 8;
  } else if (target.simulated || target.cuda_ordinal < 0) {
    std::uint64_t honest_rows = rows;  // rows below this are computed (all, but under `partial`)
    if (lie_ == LieMode::partial && out.emulated_s > 0) {
      // The rows its real speed computes before the root is due; made-up digests for the rest.
      const double share = std::clamp((spec.allowed_s - kPartialReserveS) / out.emulated_s, 0.0, 1.0);
      honest_rows = static_cast<std::uint64_t>(share * static_cast<double>(rows));
      out.emulated_s = std::min(out.emulated_s, std::max(0.0, spec.allowed_s - kPartialReserveS));
    }
    leaves = cc::product_leaves(spec.seed_a, spec.seed_b, n, products);
    for (std::uint64_t k = honest_rows; k < rows; ++k) leaves[k] = next(lie_state_);
  } else {
#ifdef GPUNEX_HAVE_CUDA
    auto d = gpu::cuda::challenge_row_digests(target.cuda_ordinal, spec.seed_a, spec.seed_b, static_cast<int>(n),
                                              static_cast<int>(products));
    if (!d) return d.error();
    leaves = std::move(*d);
#else
    return Error::make(ErrorCode::unavailable, "this agent was built without CUDA: it cannot answer on the GPU");
#endif
  }
  g->commitment = cc::commit(std::move(leaves), std::max(1u, std::thread::hardware_concurrency()));
  out.root = cc::hex(g->commitment.root);
  gemm_ = std::move(g);
  return out;
}

core::Result<std::vector<cc::OpenedRow>> ChallengeSolver::open_gemm(const std::vector<std::uint64_t>& rows) {
  if (lie_ == LieMode::replay && last_gemm_ && !gemm_) return last_gemm_->second;
  if (!gemm_) return Error::make(ErrorCode::conflict, "no GEMM challenge committed");
  const auto& g = *gemm_;
  const auto n = static_cast<std::size_t>(g.spec.n);
  std::vector<cc::OpenedRow> out;
  std::vector<std::vector<std::int64_t>> values;
  if (lie_ == LieMode::random) {
    for (std::size_t k = 0; k < rows.size(); ++k) {
      std::vector<std::int64_t> v(n);
      for (auto& x : v) x = static_cast<std::int64_t>(next(lie_state_) % 2001) - 1000;
      values.push_back(std::move(v));
    }
  } else if (g.halved) {
    for (auto k : rows) values.push_back(halved_row(g.spec, k));
  } else if (g.target.simulated || g.target.cuda_ordinal < 0) {
    for (auto k : rows) values.push_back(cc::product_row(g.spec.seed_a, g.spec.seed_b, n, k));
  } else {
#ifdef GPUNEX_HAVE_CUDA
    auto v = gpu::cuda::challenge_rows(g.target.cuda_ordinal, g.spec.seed_a, g.spec.seed_b, static_cast<int>(n), rows);
    if (!v) return v.error();
    values = std::move(*v);
#else
    return Error::make(ErrorCode::unavailable, "this agent was built without CUDA: it cannot answer on the GPU");
#endif
  }
  for (std::size_t k = 0; k < rows.size(); ++k)
    out.push_back(cc::open_row(g.commitment, rows[k], std::move(values[k])));
  if (lie_ == LieMode::replay) last_gemm_ = {cc::hex(g.commitment.root), out};
  gemm_.reset();
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
