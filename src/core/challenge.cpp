#include "core/challenge.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>

#include "core/clock_events.hpp"
#include "core/text.hpp"

namespace gpunex::core::challenge {

namespace {

constexpr std::array<std::uint32_t, 64> kK = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

constexpr std::uint32_t rotr(std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

void compress(std::array<std::uint32_t, 8>& h, const std::uint8_t* block) {
  std::array<std::uint32_t, 64> w{};
  for (int i = 0; i < 16; ++i) {
    w[i] = (std::uint32_t{block[4 * i]} << 24) | (std::uint32_t{block[4 * i + 1]} << 16) |
           (std::uint32_t{block[4 * i + 2]} << 8) | std::uint32_t{block[4 * i + 3]};
  }
  for (int i = 16; i < 64; ++i) {
    const std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    const std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  auto v = h;
  for (int i = 0; i < 64; ++i) {
    const std::uint32_t s1 = rotr(v[4], 6) ^ rotr(v[4], 11) ^ rotr(v[4], 25);
    const std::uint32_t ch = (v[4] & v[5]) ^ (~v[4] & v[6]);
    const std::uint32_t t1 = v[7] + s1 + ch + kK[i] + w[i];
    const std::uint32_t s0 = rotr(v[0], 2) ^ rotr(v[0], 13) ^ rotr(v[0], 22);
    const std::uint32_t maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
    const std::uint32_t t2 = s0 + maj;
    v = {t1 + t2, v[0], v[1], v[2], v[3] + t1, v[4], v[5], v[6]};
  }
  for (int i = 0; i < 8; ++i) h[i] += v[i];
}

std::uint64_t splitmix64(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

constexpr std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

std::uint64_t reduce(unsigned __int128 x) {
  // x mod 2^61 − 1 for x < 2^122: fold the high bits onto the low ones twice.
  std::uint64_t r = static_cast<std::uint64_t>(x & kPrime) + static_cast<std::uint64_t>(x >> 61);
  r = (r & kPrime) + (r >> 61);
  return r >= kPrime ? r - kPrime : r;
}

std::uint64_t mod_p(std::int64_t x) {
  const std::int64_t p = static_cast<std::int64_t>(kPrime);
  const std::int64_t r = x % p;
  return static_cast<std::uint64_t>(r < 0 ? r + p : r);
}

std::uint64_t mul_add(std::uint64_t acc, std::uint64_t a, std::uint64_t b) {
  return reduce(static_cast<unsigned __int128>(a) * b + acc);
}

//! M·r modulo p.
std::vector<std::uint64_t> times(const Matrix& m, const std::vector<std::uint64_t>& r) {
  std::vector<std::uint64_t> out(m.rows, 0);
  for (std::size_t i = 0; i < m.rows; ++i) {
    std::uint64_t acc = 0;
    for (std::size_t j = 0; j < m.cols; ++j) acc = mul_add(acc, mod_p(m.at(i, j)), r[j]);
    out[i] = acc;
  }
  return out;
}

//! `count` words, each as 8 little-endian bytes.
std::string words_bytes(const std::uint64_t* words, std::size_t count) {
  std::string bytes(count * 8, '\0');
  for (std::size_t w = 0; w < count; ++w) {
    for (std::size_t b = 0; b < 8; ++b) bytes[w * 8 + b] = static_cast<char>(words[w] >> (8 * b));
  }
  return bytes;
}

}  // namespace

std::array<std::uint8_t, 32> sha256(std::string_view data) {
  std::array<std::uint32_t, 8> h = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                    0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  const auto* p = reinterpret_cast<const std::uint8_t*>(data.data());
  std::size_t full = data.size() / 64;
  for (std::size_t i = 0; i < full; ++i) compress(h, p + 64 * i);
  std::array<std::uint8_t, 128> tail{};
  const std::size_t rest = data.size() - 64 * full;
  if (rest > 0) std::memcpy(tail.data(), p + 64 * full, rest);
  tail[rest] = 0x80;
  const std::size_t blocks = rest + 9 <= 64 ? 1 : 2;
  const std::uint64_t bits = static_cast<std::uint64_t>(data.size()) * 8;
  for (int i = 0; i < 8; ++i) tail[64 * blocks - 1 - i] = static_cast<std::uint8_t>(bits >> (8 * i));
  for (std::size_t i = 0; i < blocks; ++i) compress(h, tail.data() + 64 * i);
  std::array<std::uint8_t, 32> out{};
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 4; ++j) out[4 * i + j] = static_cast<std::uint8_t>(h[i] >> (24 - 8 * j));
  }
  return out;
}

std::array<std::uint8_t, 32> hmac_sha256(std::string_view key, std::string_view data) {
  std::string k(key);
  if (k.size() > 64) {
    const auto d = sha256(k);
    k.assign(d.begin(), d.end());
  }
  k.resize(64, '\0');
  std::string inner(64, '\0'), outer(64, '\0');
  for (std::size_t i = 0; i < 64; ++i) {
    inner[i] = static_cast<char>(k[i] ^ 0x36);
    outer[i] = static_cast<char>(k[i] ^ 0x5c);
  }
  inner.append(data);
  const auto ih = sha256(inner);
  outer.append(ih.begin(), ih.end());
  return sha256(outer);
}

Seeds derive_seeds(std::string_view server_secret, std::string_view challenge_id) {
  const auto d = hmac_sha256(server_secret, "gpunex-challenge-v1:" + std::string(challenge_id));
  const auto word = [&](int i) {
    std::uint64_t w = 0;
    for (int j = 0; j < 8; ++j) w = (w << 8) | d[8 * i + j];
    return w;
  };
  return Seeds{word(0), word(1), word(2), word(3)};
}

Xoshiro256::Xoshiro256(std::uint64_t seed) {
  for (auto& s : s_) s = splitmix64(seed);
}

std::uint64_t Xoshiro256::next() {
  const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

std::uint64_t Xoshiro256::below(std::uint64_t bound) {
  const std::uint64_t limit = UINT64_MAX - UINT64_MAX % bound;  // draws at or above it would bias
  for (;;) {
    const std::uint64_t x = next();
    if (x < limit) return x % bound;
  }
}

std::int64_t matrix_entry(std::uint64_t seed, std::uint64_t k, std::int64_t max_abs) {
  std::uint64_t x = seed ^ (k * 0xd1b54a32d192ed03ULL);
  const std::uint64_t r = splitmix64(x) >> 32;
  const auto span = static_cast<std::uint64_t>(2 * max_abs + 1);
  return static_cast<std::int64_t>((r * span) >> 32) - max_abs;
}

Matrix generate_matrix(std::uint64_t seed, std::size_t n, std::int64_t max_abs) {
  Matrix m{n, n, std::vector<std::int64_t>(n * n)};
  for (std::size_t k = 0; k < m.v.size(); ++k) m.v[k] = matrix_entry(seed, k, max_abs);
  return m;
}

Matrix multiply(const Matrix& a, const Matrix& b) {
  Matrix c{a.rows, b.cols, std::vector<std::int64_t>(a.rows * b.cols, 0)};
  // Row by row through pointers: the inner loop is one multiply-add over two contiguous rows, with no
  // index arithmetic (in the sanitizer build the 300-trial tests took a fifth less time for it).
  for (std::size_t i = 0; i < a.rows; ++i) {
    std::int64_t* const crow = c.v.data() + i * b.cols;
    for (std::size_t k = 0; k < a.cols; ++k) {
      const std::int64_t x = a.at(i, k);
      const std::int64_t* const brow = b.v.data() + k * b.cols;
      for (std::size_t j = 0; j < b.cols; ++j) crow[j] += x * brow[j];
    }
  }
  return c;
}

std::uint64_t vram_word(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t x = seed ^ (i * 0x9e6c63d0676a9a99ULL);
  return splitmix64(x);
}

std::string words_digest(const std::uint64_t* words, std::size_t count) {
  return hex(sha256(words_bytes(words, count)));
}

std::string vram_slice_digest(std::uint64_t seed, std::uint64_t slice, std::uint64_t slice_words) {
  std::vector<std::uint64_t> words(slice_words);
  for (std::uint64_t w = 0; w < slice_words; ++w) words[w] = vram_word(seed, slice * slice_words + w);
  return words_digest(words.data(), words.size());
}

std::vector<std::uint64_t> pick_slices(std::uint64_t seed, std::uint64_t slices, std::size_t count) {
  Xoshiro256 rng(seed);
  std::vector<std::uint64_t> out;
  while (out.size() < count && out.size() < slices) {
    const std::uint64_t s = rng.below(slices);
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  }
  return out;
}

bool gemm_exact_in_fp32(std::size_t n, std::int64_t max_abs) {
  const double largest = static_cast<double>(n) * static_cast<double>(max_abs) * static_cast<double>(max_abs);
  return largest < 16777216.0;  // 2^24: every partial sum is an integer FP32 represents exactly
}

unsigned repetitions(double per_round, double target) {
  if (!(per_round > 0 && per_round < 1 && target > 0 && target < 1)) return 0;
  auto k = static_cast<unsigned>(std::ceil(std::log(target) / std::log(per_round)));
  while (std::pow(per_round, k) >= target) ++k;  // per_round^k must be strictly below the target
  while (k > 1 && std::pow(per_round, k - 1) < target) --k;
  return k;
}

double per_round_false_pass() {
  return 1.0 / static_cast<double>(kPrime);
}

bool freivalds_check(const Matrix& a, const Matrix& b, const Matrix& c, std::uint64_t verifier_seed,
                     unsigned rounds) {
  if (a.cols != b.rows || c.rows != a.rows || c.cols != b.cols) return false;
  if (a.v.size() != a.rows * a.cols || b.v.size() != b.rows * b.cols || c.v.size() != c.rows * c.cols) return false;
  Xoshiro256 rng(verifier_seed);
  for (unsigned k = 0; k < rounds; ++k) {
    std::vector<std::uint64_t> r(b.cols);
    for (auto& x : r) x = rng.below(kPrime);
    if (times(a, times(b, r)) != times(c, r)) return false;
  }
  return true;
}

double max_gemm_seconds(std::size_t n, double claimed_tflops, double relative_margin, double fixed_margin_s,
                        std::size_t products) {
  const double nd = static_cast<double>(n);
  const double ideal = 2.0 * nd * nd * nd * static_cast<double>(products) / (claimed_tflops * 1e12);
  return ideal * (1.0 + relative_margin) + fixed_margin_s;
}

std::string_view outcome_name(Outcome o) {
  switch (o) {
    case Outcome::passed:
      return "passed";
    case Outcome::wrong:
      return "wrong";
    case Outcome::late:
      return "late";
  }
  return "wrong";
}

std::string hex(const Digest& d) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (auto byte : d) {
    out += kHex[byte >> 4];
    out += kHex[byte & 15];
  }
  return out;
}

std::optional<Digest> parse_digest(std::string_view text) {
  if (text.size() != 64) return std::nullopt;
  Digest d{};
  for (std::size_t i = 0; i < 32; ++i) {
    const int hi = lower_hex_value(text[2 * i]), lo = lower_hex_value(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    d[i] = static_cast<std::uint8_t>(hi * 16 + lo);
  }
  return d;
}

std::uint64_t product_seed(std::uint64_t seed_a, std::uint64_t product) {
  std::uint64_t x = seed_a ^ (product * 0xa0761d6478bd642fULL);
  return splitmix64(x);
}

std::uint64_t row_digest(const std::int64_t* row, std::size_t n) {
  std::uint64_t sum = 0;
  for (std::size_t c = 0; c < n; ++c) {
    std::uint64_t x = static_cast<std::uint64_t>(row[c]) ^ (c * 0xc2b2ae3d27d4eb4fULL);
    sum += splitmix64(x);
  }
  return sum;
}

Digest block_hash(const std::uint64_t* leaves, std::size_t count) {
  return sha256(std::string_view(words_bytes(leaves, count)));
}

namespace {

Digest hash_pair(const Digest& left, const Digest& right) {
  std::string both(64, '\0');
  std::memcpy(both.data(), left.data(), 32);
  std::memcpy(both.data() + 32, right.data(), 32);
  return sha256(both);
}

//! The level above: pairs hashed, an odd last node carried up.
std::vector<Digest> level_up(const std::vector<Digest>& level) {
  std::vector<Digest> up;
  for (std::size_t i = 0; i + 1 < level.size(); i += 2) up.push_back(hash_pair(level[i], level[i + 1]));
  if (level.size() % 2 == 1) up.push_back(level.back());
  return up;
}

//! Σ v_k·r_k modulo p, the sum kept whole in 128 bits (|v| < 2^40, r < 2^61, fewer than 2^24 terms).
std::uint64_t dot_mod_p(const std::int64_t* v, const std::uint64_t* r, std::size_t n) {
  __int128 acc = 0;
  for (std::size_t k = 0; k < n; ++k) acc += static_cast<__int128>(v[k]) * static_cast<__int128>(r[k]);
  const bool negative = acc < 0;
  const auto magnitude = static_cast<unsigned __int128>(negative ? -acc : acc);
  const std::uint64_t m = reduce(magnitude % (static_cast<unsigned __int128>(kPrime) * kPrime));
  return negative && m != 0 ? kPrime - m : m;
}

}  // namespace

Digest merkle_root(std::vector<Digest> level) {
  if (level.empty()) return sha256("");
  while (level.size() > 1) level = level_up(level);
  return level.front();
}

std::vector<Digest> merkle_path(std::vector<Digest> level, std::size_t index) {
  std::vector<Digest> path;
  while (level.size() > 1) {
    const std::size_t sibling = index ^ 1;
    if (sibling < level.size()) path.push_back(level[sibling]);
    level = level_up(level);
    index /= 2;
  }
  return path;
}

bool merkle_verify(const Digest& root, const Digest& leaf, std::size_t index, std::size_t count,
                   const std::vector<Digest>& path) {
  if (index >= count) return false;
  Digest node = leaf;
  std::size_t used = 0;
  while (count > 1) {
    const std::size_t sibling = index ^ 1;
    if (sibling < count) {
      if (used == path.size()) return false;
      node = index % 2 == 0 ? hash_pair(node, path[used]) : hash_pair(path[used], node);
      ++used;
    }
    index /= 2;
    count = (count + 1) / 2;
  }
  return used == path.size() && node == root;
}

Commitment commit(std::vector<std::uint64_t> leaves, unsigned threads) {
  Commitment c;
  c.leaves = std::move(leaves);
  const std::size_t blocks = (c.leaves.size() + kLeafBlock - 1) / kLeafBlock;
  c.blocks.resize(blocks);
  const auto hash_range = [&](std::size_t first, std::size_t last) {
    for (std::size_t b = first; b < last; ++b) {
      const std::size_t at = b * kLeafBlock;
      c.blocks[b] = block_hash(c.leaves.data() + at, std::min(kLeafBlock, c.leaves.size() - at));
    }
  };
  threads = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(blocks / 64 + 1)));
  std::vector<std::thread> pool;
  const std::size_t per = (blocks + threads - 1) / threads;
  for (unsigned t = 1; t < threads; ++t) {
    pool.emplace_back(hash_range, std::min(blocks, t * per), std::min(blocks, (t + 1) * per));
  }
  hash_range(0, std::min(blocks, per));
  for (auto& th : pool) th.join();
  c.root = merkle_root(c.blocks);
  return c;
}

OpenedRow open_row(const Commitment& c, std::uint64_t index, std::vector<std::int64_t> values) {
  OpenedRow o;
  o.index = index;
  o.values = std::move(values);
  if (index >= c.leaves.size()) return o;
  const std::size_t block = static_cast<std::size_t>(index) / kLeafBlock;
  const std::size_t first = block * kLeafBlock;
  o.block.assign(c.leaves.begin() + static_cast<std::ptrdiff_t>(first),
                 c.leaves.begin() + static_cast<std::ptrdiff_t>(std::min(first + kLeafBlock, c.leaves.size())));
  o.path = merkle_path(c.blocks, block);
  return o;
}

std::vector<std::int64_t> product_row(std::uint64_t seed_a, std::uint64_t seed_b, std::size_t n, std::uint64_t index) {
  const std::uint64_t a_seed = product_seed(seed_a, index / n);
  const std::uint64_t row = index % n;
  std::vector<std::int64_t> out(n, 0);
  for (std::size_t t = 0; t < n; ++t) {
    const std::int64_t a = matrix_entry(a_seed, row * n + t);
    if (a == 0) continue;
    for (std::size_t c = 0; c < n; ++c) out[c] += a * matrix_entry(seed_b, t * n + c);
  }
  return out;
}

std::vector<std::uint64_t> product_leaves(std::uint64_t seed_a, std::uint64_t seed_b, std::size_t n,
                                          std::size_t products) {
  const auto b = generate_matrix(seed_b, n);
  std::vector<std::uint64_t> leaves;
  leaves.reserve(n * products);
  for (std::size_t j = 0; j < products; ++j) {
    const auto c = multiply(generate_matrix(product_seed(seed_a, j), n), b);
    for (std::size_t i = 0; i < n; ++i) leaves.push_back(row_digest(c.v.data() + i * n, n));
  }
  return leaves;
}

GemmPlan plan_gemm(std::size_t n, double tflops, double target_s) {
  GemmPlan p;
  p.n = n;
  const double nd = static_cast<double>(n);
  const double one = 2.0 * nd * nd * nd / (tflops * 1e12);  // seconds per product at the claimed speed
  p.products = tflops > 0 ? std::max<std::size_t>(1, static_cast<std::size_t>(std::llround(target_s / one))) : 1;
  p.work_s = tflops > 0 ? one * static_cast<double>(p.products) : 0;
  return p;
}

std::size_t rows_to_open(double allowed_s, double work_s, double slower_by, std::size_t rows, std::size_t floor,
                         std::size_t cap, double target) {
  std::size_t k = cap;
  if (work_s > 0 && slower_by > 0) {
    const double f = allowed_s / (slower_by * work_s);
    if (f < 1) k = std::max<std::size_t>(floor, std::min<std::size_t>(cap, repetitions(f, target)));
  }
  return std::min(k, rows);
}

Outcome judge_opened(const Seeds& seeds, std::size_t n, std::size_t products, const Digest& root,
                     const std::vector<std::uint64_t>& picks, const std::vector<OpenedRow>& opened) {
  const std::uint64_t rows = static_cast<std::uint64_t>(n) * products;
  const std::size_t blocks = static_cast<std::size_t>((rows + kLeafBlock - 1) / kLeafBlock);
  if (n == 0 || picks.empty() || opened.size() != picks.size()) return Outcome::wrong;
  for (std::size_t k = 0; k < picks.size(); ++k) {
    const auto& o = opened[k];
    if (o.index != picks[k] || o.index >= rows || o.values.size() != n) return Outcome::wrong;
    // No entry of A_j·B exceeds n·8² in magnitude; larger values are wrong (and would overflow the sums).
    const auto bound = static_cast<std::int64_t>(n) * 64;
    for (const auto v : o.values) {
      if (v > bound || v < -bound) return Outcome::wrong;
    }
    const std::size_t block = static_cast<std::size_t>(o.index / kLeafBlock);
    const std::size_t first = block * kLeafBlock;
    if (o.block.size() != std::min<std::uint64_t>(kLeafBlock, rows - first)) return Outcome::wrong;
    if (o.block[static_cast<std::size_t>(o.index) - first] != row_digest(o.values.data(), n)) return Outcome::wrong;
    if (!merkle_verify(root, block_hash(o.block.data(), o.block.size()), block, blocks, o.path)) {
      return Outcome::wrong;
    }
  }
  // Freivalds on each row: row·r = a_i·(B·r) modulo p, B·r once per round for every row.
  Xoshiro256 rng(seeds.verifier);
  const unsigned rounds = repetitions(per_round_false_pass(), 1e-9);
  std::vector<std::int64_t> b_row(n), a_row(n);
  std::vector<std::uint64_t> r(n), br(n);
  for (unsigned round = 0; round < rounds; ++round) {
    for (auto& x : r) x = rng.below(kPrime);
    for (std::size_t t = 0; t < n; ++t) {
      for (std::size_t c = 0; c < n; ++c) b_row[c] = matrix_entry(seeds.matrix_b, t * n + c);
      br[t] = dot_mod_p(b_row.data(), r.data(), n);
    }
    for (const auto& o : opened) {
      const std::uint64_t a_seed = product_seed(seeds.matrix_a, o.index / n);
      const std::uint64_t row = o.index % n;
      for (std::size_t t = 0; t < n; ++t) a_row[t] = matrix_entry(a_seed, row * n + t);
      if (dot_mod_p(o.values.data(), r.data(), n) != dot_mod_p(a_row.data(), br.data(), n)) return Outcome::wrong;
    }
  }
  return Outcome::passed;
}

Outcome judge_vram(std::uint64_t fill_seed, const std::vector<std::uint64_t>& slices, std::uint64_t slice_words,
                   const std::vector<std::string>& digests, double elapsed_s, double allowed_s) {
  if (digests.size() != slices.size()) return Outcome::wrong;
  for (std::size_t i = 0; i < slices.size(); ++i) {
    if (digests[i] != vram_slice_digest(fill_seed, slices[i], slice_words)) return Outcome::wrong;
  }
  return elapsed_s <= allowed_s ? Outcome::passed : Outcome::late;
}

double needed_power_w(double claimed_tflops, double peak_tflops, double tdp_w, double slack) {
  if (peak_tflops <= 0 || tdp_w <= 0 || slack <= 0) return 0;
  return claimed_tflops / (peak_tflops / tdp_w * slack);
}

TelemetryVerdict judge_telemetry(double claimed_tflops, double peak_tflops, double tdp_w,
                                 const std::vector<bench::TelemetryPoint>& during, double slack) {
  TelemetryVerdict v;
  v.needed_w = needed_power_w(claimed_tflops, peak_tflops, tdp_w, slack);
  if (v.needed_w <= 0) return v;
  bool any_power = false, all_idle = !during.empty();
  for (const auto& p : during) {
    if (p.power_w) {
      any_power = true;
      v.measured_w = std::max(v.measured_w, *p.power_w);
    }
    if (!(p.clock_event_bits & clock_event::gpu_idle)) all_idle = false;
  }
  if (!any_power) {
    v.consistent = false;
    v.cause = "telemetry_missing";
  } else if (all_idle) {
    v.consistent = false;
    v.cause = "telemetry_idle";
  } else if (v.measured_w < v.needed_w) {
    v.consistent = false;
    v.cause = "telemetry_power";
  }
  return v;
}

}  // namespace gpunex::core::challenge
