#pragma once
// Benchmark challenges (issue 21): work whose answer the server checks cheaply and whose timing is bounded
// by the GPU's claimed speed, so a modified agent cannot fake the figures it reports.
//
// The exchange, after the agent posts a requested run's results (POST /v1/agent/benchmarks), or in a
// heartbeat's spot_check command:
//
// 1. The reply lists a `ChallengeSpec` per reported GPU and kind (`challenges`). Its seeds are new: drawn
//    by the server when it got the figures, so no answer can be computed before.
// 2. GEMM, committed (core/challenge.hpp says why it binds): the agent computes `products` GEMMs
//    C_j = A_j·B of n×n on the GPU, A_j and B generated from the seeds, and posts only the Merkle root of
//    its rows' digests (`ChallengeAnswer::root`) within `allowed_s` of the issue: the time `products`
//    GEMMs take at the claimed FP16 tensor speed, plus a margin. The reply names the rows the server
//    picked only now (`ChallengeReply::rows`, leaf numbers j·n + i) with `allowed_s` for the opening; the
//    agent posts each row in full with its block of digests and Merkle path (`ChallengeAnswer::opened`).
//    The server checks them against the root and, by Freivalds, against A_j·B.
// 3. VRAM: the agent fills `slices × slice_words` words of GPU memory with the seed's pattern and posts
//    `filled`; the reply names the slices the server picked only now (`ChallengeReply::slices`); the
//    agent posts their digests, read back from GPU memory, within `allowed_s` of that reply.
//
// Only digests travel before the server picks, so a GEMM challenge can be as large as a timing bound on a
// real GPU needs (seconds of work at n = 8192), and nothing in an answer can be chosen after seeing what
// the server checks.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/challenge.hpp"
#include "core/result.hpp"
#include "protocol/version.hpp"

namespace gpunex::protocol {

inline constexpr std::string_view kAgentChallengesPath = "/v1/agent/challenges";
inline constexpr std::string_view kGemmChallenge = "gemm";
inline constexpr std::string_view kVramChallenge = "vram";
//! The largest GEMM challenge: every entry of A_j·B stays below 2^24 (exact in FP32) up to n = 16384.
inline constexpr std::int64_t kMaxGemmN = 16384;
//! The most products in one GEMM challenge.
inline constexpr std::int64_t kMaxGemmProducts = 1 << 20;
//! The most rows the server asks to open (each travels in full: n integers).
inline constexpr std::int64_t kMaxOpenedRows = 128;
//! The largest body POST /v1/agent/challenges takes: kMaxOpenedRows rows of n = 8192 (the real GPU's
//! size) as JSON integers, with their blocks and paths.
inline constexpr std::uint64_t kMaxChallengeBody = 16ull << 20;
//! The most VRAM slices a challenge asks digests of.
inline constexpr std::int64_t kMaxVramSlices = 64;

//! One challenge, as the server issues it (in the results' reply).
struct ChallengeSpec {
  std::string id;
  std::string kind;  // kGemmChallenge | kVramChallenge
  std::string gpu_uuid;
  double allowed_s = 0;  // gemm: from the issue to the answer; vram: from the slices' reply to the digests
  // gemm: products A_j·B, A_j from core::challenge::product_seed(seed_a, j), B from seed_b
  std::uint64_t seed_a = 0, seed_b = 0;
  std::int64_t n = 0, products = 1;
  // vram: words slices × slice_words, word i = core::challenge::vram_word(fill_seed, i)
  std::uint64_t fill_seed = 0;
  std::int64_t slices = 0, slice_words = 0;
  nlohmann::json to_json() const;
  bool operator==(const ChallengeSpec&) const = default;
};
//! Lenient, as an agent reads a reply: a spec it cannot read (another kind, a missing field) is left out.
std::vector<ChallengeSpec> parse_challenge_specs(const nlohmann::json& list);

//! POST /v1/agent/challenges: one answer (or, for VRAM, the notice that the fill is done).
struct ChallengeAnswer {
  int protocol_version = kProtocolVersion;
  std::string machine_id;
  std::string challenge_id;
  std::optional<std::string> root;  // gemm, first post: hex SHA-256 Merkle root of the rows
  std::optional<std::vector<core::challenge::OpenedRow>> opened;  // gemm, second post: the picked rows
  bool filled = false;                              // vram, first post
  std::optional<std::vector<std::string>> digests;  // vram, second post: per picked slice, hex SHA-256
  nlohmann::json to_json() const;
  bool operator==(const ChallengeAnswer&) const = default;
};
core::Result<ChallengeAnswer> parse_challenge_answer(const nlohmann::json& body);

//! The reply: the verdict, or (after `filled`) the slices to digest.
struct ChallengeReply {
  std::string challenge_id;
  std::string status;                 // "passed", "wrong", "late", or "pending" (rows or slices follow)
  std::vector<std::uint64_t> rows;    // gemm: the leaves to open (product · n + row)
  std::vector<std::uint64_t> slices;  // vram: the slices to digest
  std::optional<double> allowed_s;
  std::optional<std::string> reason;  // why it failed, for the provider
  nlohmann::json to_json() const;
  bool operator==(const ChallengeReply&) const = default;
};
//! Lenient.
ChallengeReply parse_challenge_reply(const nlohmann::json& body);

//! A seed as JSON carries it: 16 hex digits (a JSON number holds only 53 bits exactly).
std::string seed_text(std::uint64_t seed);
std::optional<std::uint64_t> parse_seed(std::string_view text);

}  // namespace gpunex::protocol
