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
#include <string_view>
#include <vector>

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

//! The challenge's n×n input from its seed: entries uniform in [-max_abs, max_abs].
Matrix generate_matrix(std::uint64_t seed, std::size_t n, std::int64_t max_abs = 8);

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

}  // namespace gpunex::core::challenge
