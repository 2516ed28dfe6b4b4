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
double max_gemm_seconds(std::size_t n, double claimed_tflops, double relative_margin, double fixed_margin_s);

//! A simulated GPU runs the challenge GEMM on the CPU at small n, so its "speed" is dilated: it answers
//! as a GPU of T TFLOP/s would if T were T · kSimDilation. The agent waits that long before answering;
//! the server's deadline for a simulated machine uses the same factor. Timing is thereby tested here.
inline constexpr double kSimDilation = 1e-8;
//! The n of a simulated GEMM challenge: about `target_s` at the claimed (dilated) speed, in 64..256,
//! a multiple of 32.
std::size_t sim_gemm_n(double claimed_tflops, double target_s = 1.0);

//! Why a challenge failed, or passed.
enum class Outcome { passed, wrong, late };
std::string_view outcome_name(Outcome o);

//! A GEMM answer judged: the product must pass Freivalds (to false-pass probability < 1e-9) and arrive
//! within `allowed_s` of the issue.
Outcome judge_gemm(const Seeds& seeds, std::size_t n, const Matrix& c, double elapsed_s, double allowed_s);
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
