#pragma once
// The math of benchmark challenges (issue 21), pure: the server derives each
// challenge's seeds from its secret, checks a GEMM answer C = A·B with
// Freivalds' algorithm in O(n²) per round, repeats the check until a false
// answer passes with probability below a target, and bounds the time a GEMM may
// take at the GPU's claimed speed.
//
// Arithmetic: A and B hold small integers (|a| ≤ 8, from the seeds), so a GPU's
// FP32 (or FP16 with FP32 accumulation) GEMM computes C exactly while every
// |c_ij| < 2^24 (gemm_exact_in_fp32). The server then checks C exactly, over the
// integers modulo the Mersenne prime p = 2^61 − 1 with random vectors r in Z_p^n:
// no tolerance to tune, and a wrong C passes one round with probability ≤ 1/p
// (Schwartz–Zippel on the nonzero row of (AB − C)). A check over doubles would
// need a tolerance a lying agent could hide in; exact integers leave it none.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/benchmark_report.hpp"

namespace gpunex::core::challenge {

//! SHA-256 of `data` (FIPS 180-4).
std::array<std::uint8_t, 32> sha256(std::string_view data);
//! HMAC-SHA-256 (RFC 2104) of `data` under `key`.
std::array<std::uint8_t, 32> hmac_sha256(std::string_view key, std::string_view data);

//! The seeds of one challenge: the matrices A and B, the server's Freivalds vectors and the VRAM
//! slices it asks for. Derived as HMAC-SHA-256(server secret, "gpunex-challenge-v1:" + id), so they
//! are the same on every replica and after a restart, and unpredictable without the secret.
struct Seeds {
  std::uint64_t matrix_a = 0, matrix_b = 0, verifier = 0, slices = 0;
  bool operator==(const Seeds&) const = default;
};
Seeds derive_seeds(std::string_view server_secret, std::string_view challenge_id);

//! xoshiro256** (Blackman and Vigna), seeded through splitmix64: the generator the agent and the server
//! both use to expand a seed into matrices. Not for secrets: only the seeds are.
class Xoshiro256 {
 public:
  explicit Xoshiro256(std::uint64_t seed);
  std::uint64_t next();
  //! Uniform in [0, bound), bound > 0, without modulo bias.
  std::uint64_t below(std::uint64_t bound);

 private:
  std::array<std::uint64_t, 4> s_{};
};

//! A dense row-major matrix of integers.
struct Matrix {
  std::size_t rows = 0, cols = 0;
  std::vector<std::int64_t> v;
  std::int64_t at(std::size_t r, std::size_t c) const { return v[r * cols + c]; }
  std::int64_t& at(std::size_t r, std::size_t c) { return v[r * cols + c]; }
};

//! Entry k (row-major) of a challenge matrix: counter-based, so a GPU thread computes its own entry
//! without a sequential generator. Uniform in [-max_abs, max_abs] up to a bias below 2^-32.
//! The CUDA kernel (gpu/cuda/cuda_bench.cu) repeats this function; both must stay the same.
std::int64_t matrix_entry(std::uint64_t seed, std::uint64_t k, std::int64_t max_abs = 8);
//! The challenge's n×n input from its seed: matrix_entry for every entry.
Matrix generate_matrix(std::uint64_t seed, std::size_t n, std::int64_t max_abs = 8);
//! A·B over the integers (the simulated backend's answer, and the tests').
Matrix multiply(const Matrix& a, const Matrix& b);

//! Word `i` of a VRAM challenge's fill pattern (counter-based, like matrix_entry).
std::uint64_t vram_word(std::uint64_t seed, std::uint64_t i);
//! The hex SHA-256 of `count` words, each as 8 little-endian bytes: how a VRAM slice is digested.
std::string words_digest(const std::uint64_t* words, std::size_t count);
//! The hex SHA-256 of slice `slice` (`slice_words` words from word slice·slice_words, little-endian).
std::string vram_slice_digest(std::uint64_t seed, std::uint64_t slice, std::uint64_t slice_words);
//! `count` distinct slice numbers below `slices`, from the server's slices seed (count ≤ slices).
std::vector<std::uint64_t> pick_slices(std::uint64_t seed, std::uint64_t slices, std::size_t count);

//! Whether an n-term dot product of entries bounded by max_abs stays exact in FP32's 24-bit mantissa.
bool gemm_exact_in_fp32(std::size_t n, std::int64_t max_abs = 8);

//! The prime of the check, 2^61 − 1.
inline constexpr std::uint64_t kPrime = (std::uint64_t{1} << 61) - 1;

//! Rounds needed so that a false answer passes all of them with probability below `target`, when one
//! round lets it pass with probability at most `per_round` (0 < per_round < 1, 0 < target < 1):
//! the least k with per_round^k < target.
unsigned repetitions(double per_round, double target);
//! One round's bound for vectors uniform in Z_p: 1/p.
double per_round_false_pass();

//! Freivalds' check of C = A·B modulo kPrime, `rounds` rounds with vectors from `verifier_seed`:
//! O(rounds · n²). False when the shapes disagree or any round finds A(Br) ≠ Cr.
bool freivalds_check(const Matrix& a, const Matrix& b, const Matrix& c, std::uint64_t verifier_seed,
                     unsigned rounds);

//! The longest an n×n×n GEMM (2n³ floating-point operations) may take at `claimed_tflops`, with
//! `relative_margin` on top (0.25: 25% slower than claimed) and `fixed_margin_s` for launch and
//! transfer. An answer later than this is late.
//! `products` such GEMMs (the committed challenge) take `products` times the ideal time, margins added once.
double max_gemm_seconds(std::size_t n, double claimed_tflops, double relative_margin, double fixed_margin_s,
                        std::size_t products = 1);

//! A simulated GPU runs the challenge GEMM on the CPU at small n, so its "speed" is dilated: it answers
//! as a GPU of T TFLOP/s would if T were T · kSimDilation. The agent waits that long before answering;
//! the server's deadline for a simulated machine uses the same factor. Timing is thereby tested here.
inline constexpr double kSimDilation = 1e-8;

//! Why a challenge failed, or passed.
enum class Outcome { passed, wrong, late };
std::string_view outcome_name(Outcome o);

// ---- The committed GEMM (protocol/challenge.hpp): a timing bound that binds on a real GPU ----
//
// The challenge is `products` GEMMs C_j = A_j·B (n×n, j < products), sized so that they take `work_s` at
// the claimed speed: far more than a round trip, so the time allowed is mostly the GPU's. The agent sends
// only a commitment to every row of every C_j: a 64-bit digest per row (row_digest), the rows' digests in
// blocks of kLeafBlock hashed with SHA-256, and the blocks under a Merkle root. Only after the root came
// in time does the server pick rows to open; the agent sends each picked row in full with its block and
// Merkle path, and the server checks the row against the root and, with Freivalds' vector, against A_j·B
// at O(n) per row once B·r is known (O(n²), once per challenge).
//
// Why it binds: a GPU slower than claimed cannot compute every row in time, and a row's digest cannot be
// had without every entry of the row (it mixes each entry through a nonlinear function, so no linear
// shortcut gives it). A prover that computed a share f of the rows before the deadline and made up the
// rest passes a row picked uniformly with probability at most f, and all of k picked rows with at most
// f^k. rows_to_open picks k so that a GPU `slower_by` times slower than claimed passes below the target.

//! Leaves (row digests) per SHA-256 block under the Merkle tree.
inline constexpr std::size_t kLeafBlock = 256;
using Digest = std::array<std::uint8_t, 32>;
std::string hex(const Digest& d);
std::optional<Digest> parse_digest(std::string_view hex_text);

//! The seed of product j's left matrix A_j (B is one matrix, from the challenge's seed_b).
//! The CUDA kernels (gpu/cuda/cuda_bench.cu) repeat product_seed and row_digest; all must stay the same.
std::uint64_t product_seed(std::uint64_t seed_a, std::uint64_t product);
//! The digest of one row of a product: Σ_c mix(row[c], c) modulo 2^64, mix a splitmix64 finalizer.
std::uint64_t row_digest(const std::int64_t* row, std::size_t n);
//! SHA-256 of `count` leaves, each as 8 little-endian bytes.
Digest block_hash(const std::uint64_t* leaves, std::size_t count);
//! The Merkle root over block hashes: parent = SHA-256(left ‖ right), an odd last node carried up as it
//! is. One block: its hash. None: SHA-256 of nothing.
Digest merkle_root(std::vector<Digest> level);
//! The sibling hashes from block `index` up to the root (none where the node was carried up).
std::vector<Digest> merkle_path(std::vector<Digest> level, std::size_t index);
//! Whether `leaf` at `index` of `count` blocks, with `path`, hashes up to `root`.
bool merkle_verify(const Digest& root, const Digest& leaf, std::size_t index, std::size_t count,
                   const std::vector<Digest>& path);

//! A prover's whole commitment: the leaves (row digests, product-major: leaf j·n + i is row i of C_j),
//! their block hashes and the root. The agent builds it from leaves computed on the GPU or the CPU.
struct Commitment {
  std::vector<std::uint64_t> leaves;
  std::vector<Digest> blocks;
  Digest root{};
};
//! `threads` > 1 hashes the blocks on that many threads (an H200's 4 s of products are ~30M leaves,
//! 240 MB: about 1 s on one core, inside the margin the prover is timed by).
Commitment commit(std::vector<std::uint64_t> leaves, unsigned threads = 1);

//! One opened row, as the agent sends it: the row in full, its block's leaves and the block's Merkle path.
struct OpenedRow {
  std::uint64_t index = 0;  // leaf number: product · n + row
  std::vector<std::int64_t> values;
  std::vector<std::uint64_t> block;
  std::vector<Digest> path;
  bool operator==(const OpenedRow&) const = default;
};
//! Opens leaf `index` of a commitment, with the row's values (the prover recomputes or kept them).
OpenedRow open_row(const Commitment& c, std::uint64_t index, std::vector<std::int64_t> values);

//! Row i of A_j·B over the integers, on the CPU: O(n²) (the simulated GPU's answer, and the tests').
std::vector<std::int64_t> product_row(std::uint64_t seed_a, std::uint64_t seed_b, std::size_t n, std::uint64_t index);
//! Every row digest of every product, on the CPU: O(products·n³), for the simulated GPU's small n.
std::vector<std::uint64_t> product_leaves(std::uint64_t seed_a, std::uint64_t seed_b, std::size_t n,
                                          std::size_t products);

//! A committed GEMM's size: `products` GEMMs of n×n taking about `work_s` at the claimed speed.
struct GemmPlan {
  std::size_t n = 0, products = 0;
  double work_s = 0;  // 2n³·products at the claimed speed
};
//! At least one product; as many as fill `target_s` at `tflops` (already dilated for a simulated GPU).
GemmPlan plan_gemm(std::size_t n, double tflops, double target_s);
//! The rows to open so that a prover `slower_by` times slower than claimed passes below `target`: it can
//! have computed at most f = allowed_s / (slower_by · work_s) of the rows when its root is due, so
//! k = repetitions(f, target). At least `floor`, at most `cap` and the number of rows; `cap` when f ≥ 1
//! (the margins leave such a prover time for every row: only its lateness can catch it).
std::size_t rows_to_open(double allowed_s, double work_s, double slower_by, std::size_t rows, std::size_t floor,
                         std::size_t cap, double target = 1e-9);

//! The opened rows judged (wrong when there are no picks): one per pick, in the picks' order, each in its block at its
//! place (its digest the leaf there), the block under `root` by its path, and the row equal to row i of A_j·B by
//! Freivalds' check modulo kPrime (a false row passes below 1e-9). O(n²) for B·r, then O(n) per row.
Outcome judge_opened(const Seeds& seeds, std::size_t n, std::size_t products, const Digest& root,
                     const std::vector<std::uint64_t>& picks, const std::vector<OpenedRow>& opened);
//! A VRAM answer judged: one digest per picked slice, each as vram_slice_digest gives it.
Outcome judge_vram(std::uint64_t fill_seed, const std::vector<std::uint64_t>& slices, std::uint64_t slice_words,
                   const std::vector<std::string>& digests, double elapsed_s, double allowed_s);

//! Telemetry consistency: the power, clocks and clock events a GPU reported while it ran the case its
//! claimed FP16 tensor figure comes from must be those of a GPU doing that work ("no 400 TFLOP/s at 30 W").
//! No GPU does more FP16 tensor work per watt than its model's datasheet peak over its TDP; `slack` (2 by
//! default) covers a card that reaches its figure below TDP, so only figures the power cannot explain fail.
struct TelemetryVerdict {
  bool consistent = true;
  std::string cause;        // empty, or "telemetry_missing", "telemetry_idle", "telemetry_power"
  double measured_w = 0;    // the highest power read during the case
  double needed_w = 0;      // the least power the claimed figure needs
};
inline constexpr double kPowerSlack = 2.0;
//! The least power (W) at which `claimed_tflops` is possible for a model of `peak_tflops` at `tdp_w`.
double needed_power_w(double claimed_tflops, double peak_tflops, double tdp_w, double slack = kPowerSlack);
//! Judges the samples taken during the case (TelemetryPoint::during == its key): inconsistent when none
//! carries a power reading, when every one says the GPU was idle (clock event gpu_idle), or when the
//! highest power is below needed_power_w. Consistent when the model's peak or TDP is unknown (nothing to
//! compare with).
TelemetryVerdict judge_telemetry(double claimed_tflops, double peak_tflops, double tdp_w,
                                 const std::vector<bench::TelemetryPoint>& during, double slack = kPowerSlack);
}  // namespace gpunex::core::challenge
