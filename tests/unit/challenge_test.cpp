// The challenge math of issue 21 (core/challenge.hpp): seeds, Freivalds' check, the number of rounds
// and the timing bound. Each test can fail: a wrong product, a wrong hash or a non-monotonic bound.
#include "core/challenge.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/clock_events.hpp"
#include "util/crypto.hpp"

namespace gpunex {
namespace {

using namespace core::challenge;  // NOLINT: the test reads like the header

std::string hex(const std::array<std::uint8_t, 32>& d) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (auto b : d) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

Matrix product(const Matrix& a, const Matrix& b) {
  Matrix c{a.rows, b.cols, std::vector<std::int64_t>(a.rows * b.cols, 0)};
  for (std::size_t i = 0; i < a.rows; ++i)
    for (std::size_t k = 0; k < a.cols; ++k)
      for (std::size_t j = 0; j < b.cols; ++j) c.at(i, j) += a.at(i, k) * b.at(k, j);
  return c;
}

TEST(Challenge, Sha256MatchesFipsVectorsAndLibsodium) {
  EXPECT_EQ(hex(sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hex(sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // Every padding case (one block, two blocks, exact multiples) against the server's libsodium.
  std::string s;
  for (int len = 0; len < 200; ++len) {
    EXPECT_EQ(hex(sha256(s)), util::sha256_hex(s)) << len;
    s += static_cast<char>('a' + len % 26);
  }
}

TEST(Challenge, HmacMatchesRfc4231) {
  EXPECT_EQ(hex(hmac_sha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  // Test case 6: a key longer than the block is hashed first.
  EXPECT_EQ(hex(hmac_sha256(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First")),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(Challenge, SeedsAreDeterministicPerChallengeAndSecret) {
  const std::string secret(32, 's');
  const auto a = derive_seeds(secret, "chl_1");
  EXPECT_EQ(a, derive_seeds(secret, "chl_1"));  // every replica, every restart
  EXPECT_NE(a, derive_seeds(secret, "chl_2"));
  EXPECT_NE(a, derive_seeds(std::string(32, 't'), "chl_1"));
  EXPECT_NE(a.matrix_a, a.matrix_b);
  EXPECT_NE(a.verifier, a.slices);
}

TEST(Challenge, MatricesComeFromTheSeedWithinTheirBound) {
  const auto m = generate_matrix(42, 16);
  EXPECT_EQ(m.v, generate_matrix(42, 16).v);
  EXPECT_NE(m.v, generate_matrix(43, 16).v);
  int low = 0, high = 0;
  for (auto x : m.v) {
    EXPECT_GE(x, -8);
    EXPECT_LE(x, 8);
    low += x == -8;
    high += x == 8;
  }
  EXPECT_GT(low + high, 0);  // both ends are reachable
}

TEST(Challenge, Fp32ComputesTheProductExactlyOnlyWhileSumsStayBelow2To24) {
  EXPECT_TRUE(gemm_exact_in_fp32(8192));
  EXPECT_TRUE(gemm_exact_in_fp32(262143, 8));
  EXPECT_FALSE(gemm_exact_in_fp32(262144, 8));  // 262144 · 64 = 2^24
  EXPECT_FALSE(gemm_exact_in_fp32(8192, 64));
}

TEST(Challenge, FreivaldsAcceptsTheProductAndCatchesOneWrongEntry) {
  const std::size_t n = 48;
  const auto a = generate_matrix(1, n);
  const auto b = generate_matrix(2, n);
  const auto c = product(a, b);
  const unsigned k = repetitions(per_round_false_pass(), 1e-9);
  EXPECT_TRUE(freivalds_check(a, b, c, 7, k));
  // One wrong entry anywhere, by any amount (including a multiple of nothing small), is caught.
  for (std::size_t i : {std::size_t{0}, n / 2, n - 1}) {
    for (std::size_t j : {std::size_t{0}, n / 3, n - 1}) {
      for (std::int64_t delta : {std::int64_t{1}, std::int64_t{-1}, std::int64_t{1} << 40}) {
        auto wrong = c;
        wrong.at(i, j) += delta;
        EXPECT_FALSE(freivalds_check(a, b, wrong, 7, k)) << i << "," << j << " by " << delta;
      }
    }
  }
  // Random answers, the product of other matrices, and a smaller product are all refused.
  EXPECT_FALSE(freivalds_check(a, b, generate_matrix(3, n, 1000), 7, k));
  EXPECT_FALSE(freivalds_check(a, b, product(generate_matrix(4, n), b), 7, k));
  const auto small = product(generate_matrix(1, n / 2), generate_matrix(2, n / 2));
  EXPECT_FALSE(freivalds_check(a, b, small, 7, k));
  // Over many verifier seeds, a single wrong entry never passes.
  auto wrong = c;
  wrong.at(5, 9) += 1;
  for (std::uint64_t seed = 0; seed < 300; ++seed) EXPECT_FALSE(freivalds_check(a, b, wrong, seed, 1)) << seed;
}

TEST(Challenge, FreivaldsIsExactForNegativeAndLargeEntries) {
  Matrix a{2, 3, {-5, 7, 0, 3, -2, 9}};
  Matrix b{3, 2, {1, -4, 6, 2, -8, 5}};
  const auto c = product(a, b);
  EXPECT_TRUE(freivalds_check(a, b, c, 11, 3));
  EXPECT_FALSE(freivalds_check(a, b, Matrix{2, 2, {c.v[0], c.v[1], c.v[2], c.v[3] + 1}}, 11, 3));
  EXPECT_FALSE(freivalds_check(a, b, Matrix{2, 2, {c.v[0], c.v[1], c.v[2]}}, 11, 3));  // malformed
}

TEST(Challenge, RoundsBringAFalsePassBelowTheTarget) {
  // Vectors of 0s and 1s: a false answer passes a round with probability at most 1/2.
  EXPECT_EQ(repetitions(0.5, 1e-9), 30u);
  EXPECT_LT(std::pow(0.5, 30), 1e-9);
  EXPECT_GE(std::pow(0.5, 29), 1e-9);
  // Vectors in Z_p: one round is enough (1/p ≈ 4.3e-19).
  EXPECT_EQ(repetitions(per_round_false_pass(), 1e-9), 1u);
  for (double per : {0.5, 0.1, 1.0 / 3, 0.9, 1e-3}) {
    const unsigned k = repetitions(per, 1e-9);
    EXPECT_LT(std::pow(per, k), 1e-9) << per;
    EXPECT_GE(std::pow(per, k - 1), 1e-9) << per;  // and no more rounds than needed
  }
  EXPECT_EQ(repetitions(1.0, 1e-9), 0u);  // no bound: no number of rounds helps
}

TEST(Challenge, TimingBoundFollowsTheClaimedSpeed) {
  // 2·8192³ operations at 100 TFLOP/s take 11 ms; with 25% and 50 ms of margin, 63.7 ms.
  EXPECT_NEAR(max_gemm_seconds(8192, 100, 0.25, 0.05), 2.0 * 8192.0 * 8192.0 * 8192.0 / 1e14 * 1.25 + 0.05, 1e-12);
  double last = 0;
  for (std::size_t n = 256; n <= 32768; n *= 2) {
    const double t = max_gemm_seconds(n, 100, 0.25, 0.05);
    EXPECT_GT(t, last) << n;  // larger matrices are allowed longer
    last = t;
  }
  EXPECT_LT(max_gemm_seconds(8192, 400, 0.25, 0.05), max_gemm_seconds(8192, 100, 0.25, 0.05));  // a faster claim
  EXPECT_GT(max_gemm_seconds(8192, 100, 0.5, 0.05), max_gemm_seconds(8192, 100, 0.25, 0.05));
  // Products add their work, the margins once: 3 products of 11 ms with 25% and 50 ms.
  EXPECT_NEAR(max_gemm_seconds(8192, 100, 0.25, 0.05, 3), 3 * 2.0 * 8192.0 * 8192.0 * 8192.0 / 1e14 * 1.25 + 0.05,
              1e-12);
  // A GPU 2x slower than it claims is late beyond a 25% margin once the fixed part is small.
  const double n = 16384;
  const double slow = 2.0 * n * n * n / (50e12);
  EXPECT_GT(slow, max_gemm_seconds(16384, 100, 0.25, 0.05));
}

}  // namespace
}  // namespace gpunex

namespace gpunex::core::challenge {
namespace {

// The CUDA kernels (gpu/cuda/cuda_bench.cu) repeat matrix_entry and vram_word; these values pin both
// (computed independently, in Python, from the definitions in challenge.hpp).
TEST(Challenge, MatrixEntriesAndVramWordsArePinned) {
  const std::vector<std::int64_t> first = {4, 5, 8, -3, 8, 3, 5, 7};
  for (std::size_t k = 0; k < first.size(); ++k) EXPECT_EQ(matrix_entry(42, k), first[k]) << k;
  EXPECT_EQ(generate_matrix(42, 4).v[5], 3);
  EXPECT_EQ(vram_word(7, 0), 0x63cbe1e459320dd7ULL);
  EXPECT_EQ(vram_word(7, 1), 0x372de566b14634eaULL);
  EXPECT_EQ(vram_word(7, 2), 0x17bbbca660b05bb7ULL);
}

// product_seed and row_digest are repeated by the CUDA kernels too; the Merkle root by any prover. These
// values were computed independently, in Python (hashlib), from the definitions in challenge.hpp.
TEST(Challenge, CommittedGemmPiecesArePinned) {
  EXPECT_EQ(product_seed(42, 0), 0xbdd732262feb6e95ULL);
  EXPECT_EQ(product_seed(42, 1), 0xc549d6f38899c014ULL);
  EXPECT_EQ(product_seed(42, 2), 0xcdacef9d79afab42ULL);
  const std::vector<std::int64_t> row = {1, -2, 3, 0, 524288};
  EXPECT_EQ(row_digest(row.data(), row.size()), 0x71759928dfffe3a8ULL);
  std::vector<std::uint64_t> leaves;
  for (std::uint64_t x = 1; x < 600; ++x) leaves.push_back(x);  // three blocks, the last short
  EXPECT_EQ(hex(commit(leaves).root), "0248cda5c52c3e1df6ba8483e68aaa2170d9065e6f6e1db0294863232a3890c0");
  // Hashed on several threads, the same commitment.
  std::vector<std::uint64_t> many(40000);
  for (std::size_t i = 0; i < many.size(); ++i) many[i] = i * 0x9e3779b97f4a7c15ULL;
  const auto one = commit(many), three = commit(many, 3);
  EXPECT_EQ(three.root, one.root);
  EXPECT_EQ(three.blocks, one.blocks);
}

TEST(Challenge, MerklePathsVerifyOnlyTheirOwnBlock) {
  for (std::size_t count : {1u, 2u, 3u, 5u, 8u, 13u}) {
    std::vector<Digest> blocks;
    for (std::size_t i = 0; i < count; ++i) blocks.push_back(sha256(std::to_string(i)));
    const auto root = merkle_root(blocks);
    for (std::size_t i = 0; i < count; ++i) {
      const auto path = merkle_path(blocks, i);
      EXPECT_TRUE(merkle_verify(root, blocks[i], i, count, path)) << count << " " << i;
      EXPECT_FALSE(merkle_verify(root, sha256("other"), i, count, path)) << count << " " << i;
      if (count > 1) {
        EXPECT_FALSE(merkle_verify(root, blocks[i], (i + 1) % count, count, path)) << count << " " << i;
      }
      EXPECT_FALSE(merkle_verify(root, blocks[i], count, count, path));
    }
  }
}

TEST(Challenge, ProductRowsAreTheRowsOfTheProducts) {
  const std::size_t n = 48;
  const auto b = generate_matrix(12, n);
  const auto c1 = multiply(generate_matrix(product_seed(11, 1), n), b);
  for (std::uint64_t i : {0u, 7u, 47u}) {
    const auto row = product_row(11, 12, n, n + i);
    EXPECT_EQ(row, std::vector<std::int64_t>(c1.v.begin() + static_cast<std::ptrdiff_t>(i * n),
                                             c1.v.begin() + static_cast<std::ptrdiff_t>((i + 1) * n)));
  }
  const auto leaves = product_leaves(11, 12, n, 2);
  ASSERT_EQ(leaves.size(), 2 * n);
  EXPECT_EQ(leaves[n + 7], row_digest(c1.v.data() + 7 * n, n));
}

//! An honest prover's opening of `picks`.
std::vector<OpenedRow> opening(const Commitment& c, const Seeds& s, std::size_t n,
                               const std::vector<std::uint64_t>& picks) {
  std::vector<OpenedRow> out;
  for (auto k : picks) out.push_back(open_row(c, k, product_row(s.matrix_a, s.matrix_b, n, k)));
  return out;
}

TEST(Challenge, JudgesOpenedRows) {
  const Seeds s{11, 12, 13, 14};
  const std::size_t n = 40, products = 9;  // 360 rows: two blocks
  const auto c = commit(product_leaves(s.matrix_a, s.matrix_b, n, products));
  const auto picks = pick_slices(s.slices, n * products, 24);
  const auto honest = opening(c, s, n, picks);
  EXPECT_EQ(judge_opened(s, n, products, c.root, picks, honest), Outcome::passed);
  // A row changed after the commitment: its digest is not the committed leaf.
  auto changed = honest;
  changed[3].values[5] += 1;
  EXPECT_EQ(judge_opened(s, n, products, c.root, picks, changed), Outcome::wrong);
  // The same row with its leaf changed to match: the block no longer hashes to the root.
  changed[3].block[changed[3].index % kLeafBlock] = row_digest(changed[3].values.data(), n);
  EXPECT_EQ(judge_opened(s, n, products, c.root, picks, changed), Outcome::wrong);
  // A consistent commitment to a wrong row (the prover's own): Freivalds catches the row.
  auto leaves = product_leaves(s.matrix_a, s.matrix_b, n, products);
  auto wrong_row = product_row(s.matrix_a, s.matrix_b, n, picks[0]);
  wrong_row[0] += 1;
  leaves[picks[0]] = row_digest(wrong_row.data(), n);
  const auto lying = commit(leaves);
  auto lies = opening(lying, s, n, picks);
  lies[0] = open_row(lying, picks[0], wrong_row);
  EXPECT_EQ(judge_opened(s, n, products, lying.root, picks, lies), Outcome::wrong);
  // Rows other than the picks, too few, out of order, or too large to be a product's.
  EXPECT_EQ(judge_opened(s, n, products, c.root, picks, opening(c, s, n, pick_slices(99, n * products, 24))),
            Outcome::wrong);
  EXPECT_EQ(judge_opened(s, n, products, c.root, picks, {honest.begin(), honest.end() - 1}), Outcome::wrong);
  auto swapped = honest;
  std::swap(swapped[0], swapped[1]);
  EXPECT_EQ(judge_opened(s, n, products, c.root, picks, swapped), Outcome::wrong);
  auto huge = honest;
  huge[0].values[0] = INT64_MAX;
  EXPECT_EQ(judge_opened(s, n, products, c.root, picks, huge), Outcome::wrong);
  // Another challenge's root.
  EXPECT_EQ(judge_opened(s, n, products, sha256("x"), picks, honest), Outcome::wrong);
  // Nothing picked, nothing opened: nothing was checked.
  EXPECT_EQ(judge_opened(s, n, products, c.root, {}, {}), Outcome::wrong);
}

// A prover that computed only a share f of the rows (the rest made up) passes only when no picked row is
// a made-up one: over 300 commitments, with f = 0.75 and 73 rows opened (rows_to_open's k for
// f = 0.75 at 1e-9), none passes.
TEST(Challenge, APartialProverIsCaughtByTheRowsOpened) {
  const std::size_t n = 32, products = 40;
  const std::size_t rows = n * products;
  const std::size_t k = rows_to_open(6.0, 4.0, 2.0, rows, 16, 128);
  EXPECT_EQ(k, 73u);
  int passed = 0;
  for (std::uint64_t t = 0; t < 300; ++t) {
    const Seeds s{t + 1, t + 2, t + 3, t + 4};
    auto leaves = product_leaves(s.matrix_a, s.matrix_b, n, products);
    for (std::size_t r = rows * 3 / 4; r < rows; ++r) leaves[r] = t * 7919 + r;  // made up
    const auto c = commit(leaves);
    const auto picks = pick_slices(s.slices, rows, k);
    passed += judge_opened(s, n, products, c.root, picks, opening(c, s, n, picks)) == Outcome::passed;
  }
  EXPECT_EQ(passed, 0);
}

TEST(Challenge, PlansFillTheWorkTimeAndOpenEnoughRows) {
  // 8192³·2 = 1.1 TFLOP: an H100 at 790 TFLOP/s does about 2,900 in 4 s.
  const auto p = plan_gemm(8192, 790, 4.0);
  EXPECT_EQ(p.n, 8192u);
  EXPECT_NEAR(static_cast<double>(p.products), 4.0 * 790e12 / (2.0 * 8192.0 * 8192.0 * 8192.0), 1.0);
  EXPECT_NEAR(p.work_s, 4.0, 0.01);
  EXPECT_EQ(plan_gemm(8192, 0.001, 4.0).products, 1u);  // never none
  // With the defaults (4 s, 25% + 1.5 s): a GPU half as fast has done 81% of the rows when its root is
  // due; 100 rows catch it below 1e-9.
  const double allowed = p.work_s * 1.25 + 1.5;
  const auto k = rows_to_open(allowed, p.work_s, 2.0, 1u << 30, 16, 128);
  const double f = allowed / (2.0 * p.work_s);
  EXPECT_LT(std::pow(f, static_cast<double>(k)), 1e-9);
  EXPECT_GE(std::pow(f, static_cast<double>(k - 1)), 1e-9);
  EXPECT_EQ(rows_to_open(allowed, p.work_s, 2.0, 50, 16, 128), 50u);  // never more than there are
  EXPECT_EQ(rows_to_open(10.0, 1.0, 2.0, 1000, 16, 128), 128u);       // f ≥ 1: the cap
  EXPECT_EQ(rows_to_open(0.2, 1.0, 2.0, 1000, 16, 128), 16u);         // the floor
}

TEST(Challenge, JudgesVramSlicesAndTime) {
  const auto picked = pick_slices(99, 1000, 16);
  EXPECT_EQ(picked.size(), 16u);
  EXPECT_EQ(pick_slices(99, 3, 16).size(), 3u);  // never more than there are
  std::vector<std::string> digests;
  for (auto p : picked) digests.push_back(vram_slice_digest(5, p, 128));
  EXPECT_EQ(judge_vram(5, picked, 128, digests, 0.1, 2.0), Outcome::passed);
  EXPECT_EQ(judge_vram(5, picked, 128, digests, 2.1, 2.0), Outcome::late);
  digests.back()[0] = digests.back()[0] == 'a' ? 'b' : 'a';
  EXPECT_EQ(judge_vram(5, picked, 128, digests, 0.1, 2.0), Outcome::wrong);
  EXPECT_EQ(judge_vram(5, picked, 128, {}, 0.1, 2.0), Outcome::wrong);
}

bench::TelemetryPoint reading(std::optional<double> power_w, std::uint64_t bits = 0) {
  bench::TelemetryPoint p;
  p.during = "compute.fp16_tensor";
  p.power_w = power_w;
  p.sm_clock_mhz = 1700;
  p.clock_event_bits = bits;
  return p;
}

TEST(Challenge, TelemetryMustExplainTheClaimedFigure) {
  // H100 SXM: 989.5 TFLOP/s at 700 W, so at most 2 · 1.414 TFLOP/s per watt.
  const double peak = 989.5, tdp = 700;
  EXPECT_NEAR(needed_power_w(989.5, peak, tdp), 350.0, 1e-9);
  EXPECT_NEAR(needed_power_w(400, peak, tdp, 1.0), 400.0 / (peak / tdp), 1e-9);
  // A healthy card: ~790 TFLOP/s with its power near TDP, the first sample before it ramped.
  auto ok = judge_telemetry(790, peak, tdp, {reading(95, clock_event::gpu_idle), reading(640), reading(688)});
  EXPECT_TRUE(ok.consistent) << ok.cause;
  EXPECT_EQ(ok.measured_w, 688);
  // The example: 400 TFLOP/s at 30 W.
  auto low = judge_telemetry(400, peak, tdp, {reading(30), reading(31)});
  EXPECT_FALSE(low.consistent);
  EXPECT_EQ(low.cause, "telemetry_power");
  EXPECT_EQ(low.measured_w, 31);
  EXPECT_NEAR(low.needed_w, 400.0 / (peak / tdp * kPowerSlack), 1e-9);
  // Just enough power passes, just below fails: the bound is the only line.
  const double need = needed_power_w(500, peak, tdp);
  EXPECT_TRUE(judge_telemetry(500, peak, tdp, {reading(need)}).consistent);
  EXPECT_FALSE(judge_telemetry(500, peak, tdp, {reading(need - 0.5)}).consistent);
  // Every sample idle: no work was done, whatever the power says.
  auto idle = judge_telemetry(500, peak, tdp, {reading(600, clock_event::gpu_idle), reading(600, clock_event::gpu_idle)});
  EXPECT_EQ(idle.cause, "telemetry_idle");
  // No power at all (or no samples): nothing shows the work.
  EXPECT_EQ(judge_telemetry(500, peak, tdp, {reading(std::nullopt)}).cause, "telemetry_missing");
  EXPECT_EQ(judge_telemetry(500, peak, tdp, {}).cause, "telemetry_missing");
  // A model without a known TDP or peak: nothing to compare with.
  EXPECT_TRUE(judge_telemetry(500, peak, 0, {}).consistent);
  EXPECT_TRUE(judge_telemetry(500, 0, tdp, {}).consistent);
}

}  // namespace
}  // namespace gpunex::core::challenge
