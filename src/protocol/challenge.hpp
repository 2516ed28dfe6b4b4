#pragma once
// Benchmark challenges (issue 21): work whose answer the server checks cheaply and whose timing is bounded
// by the GPU's claimed speed, so a modified agent cannot fake the figures it reports.
//
// The exchange, after the agent posts a requested run's results (POST /v1/agent/benchmarks):
//
// 1. The reply lists a `ChallengeSpec` per reported GPU and kind (`challenges`). Its seeds are new: drawn
//    by the server when it got the figures, so no answer can be computed before. Each has `allowed_s`,
//    the time the claimed figures allow (core::challenge::max_gemm_seconds plus a margin).
// 2. GEMM: the agent generates A and B from the seeds (core::challenge::matrix_entry), computes C = A·B
//    on the GPU and posts C in full (`ChallengeAnswer::c`, n ≤ kMaxGemmN). The server checks it with
//    Freivalds' algorithm (O(n²) per round, false pass < 1e-9) and times it from the issue.
// 3. VRAM: the agent fills `slices × slice_words` words of GPU memory with the seed's pattern and posts
//    `filled`; the reply names the slices the server picked only now (`ChallengeReply::slices`); the
//    agent posts their digests, read back from GPU memory, within `allowed_s` of that reply.
//
// Full C rather than a hash plus rows: at n ≤ 256 it is at most 65,536 integers (~400 KB of JSON), the
// server's check needs no second round trip, and nothing in the answer can be chosen after seeing what
// the server checks. Larger n (for a timing bound that bites on a real GPU) needs the two-round form:
// row digests first, then rows the server picks; see src/protocol/README.md.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "protocol/version.hpp"

namespace gpunex::protocol {

inline constexpr std::string_view kAgentChallengesPath = "/v1/agent/challenges";
inline constexpr std::string_view kGemmChallenge = "gemm";
inline constexpr std::string_view kVramChallenge = "vram";
//! The largest GEMM challenge: its C travels in full.
inline constexpr std::int64_t kMaxGemmN = 256;
//! The most VRAM slices a challenge asks digests of.
inline constexpr std::int64_t kMaxVramSlices = 64;

//! One challenge, as the server issues it (in the results' reply).
struct ChallengeSpec {
  std::string id;
  std::string kind;  // kGemmChallenge | kVramChallenge
  std::string gpu_uuid;
  double allowed_s = 0;  // gemm: from the issue to the answer; vram: from the slices' reply to the digests
  // gemm
  std::uint64_t seed_a = 0, seed_b = 0;
  std::int64_t n = 0;
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
  std::optional<std::vector<std::int64_t>> c;       // gemm: C row-major, n·n entries
  bool filled = false;                              // vram, first post
  std::optional<std::vector<std::string>> digests;  // vram, second post: per picked slice, hex SHA-256
  nlohmann::json to_json() const;
  bool operator==(const ChallengeAnswer&) const = default;
};
core::Result<ChallengeAnswer> parse_challenge_answer(const nlohmann::json& body);

//! The reply: the verdict, or (after `filled`) the slices to digest.
struct ChallengeReply {
  std::string challenge_id;
  std::string status;  // "passed", "wrong", "late", or "pending" (slices follow)
  std::vector<std::uint64_t> slices;
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
