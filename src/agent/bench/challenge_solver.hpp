#pragma once
// The agent's side of benchmark challenges (protocol/challenge.hpp): the GEMM and VRAM answers, on the GPU
// through gpu/cuda when the target is a CUDA device, on the CPU at the small sizes the server asks of a
// simulated GPU. A simulated GPU answers no sooner than a GPU of its simulated speed would
// (core::challenge::kSimDilation), so the server's timing is exercised without a GPU.
//
// LieMode is for tests only (issue 21): a modified agent, so the tests can show the server catches it.
// It is honoured only when given explicitly (`gpunex-agent run --test-lie MODE`); nothing the server sends
// turns it on, and the server's checks do not depend on it.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/challenge.hpp"
#include "core/result.hpp"
#include "protocol/challenge.hpp"

namespace gpunex::agent::bench {

enum class LieMode {
  none,
  inflate,  // reports compute figures 3× what it measures, answers at its real speed
  random,   // skips the work: a random C, random digests
  smaller,  // computes the product of the matrices' top-left half, padded with zeros
  vram,     // registers twice the memory it has, fills what it has
  replay,   // answers each challenge with its previous answer of that kind (from the same solver: the agent
            // uses one per GPU and round for GEMMs, so only the trials replay GEMM answers)
  idle,     // reports figures with the telemetry of an idle GPU (figures it did not measure), answers honestly
  bait,     // honest in requested runs; once listed, answers spot checks at random (a GPU swapped after its run)
  partial,  // reports compute figures 2× what it measures; commits in time to the GEMM rows its real speed
            // computed by then and to made-up digests for the rest, and opens the rows asked honestly
};
std::optional<LieMode> parse_lie_mode(std::string_view text);
std::string_view lie_mode_name(LieMode m);
//! Compute figures are multiplied by this under LieMode::inflate (kPartialFactor under ::partial); memory
//! by kVramLieFactor under ::vram.
inline constexpr double kInflateFactor = 3.0;
inline constexpr double kPartialFactor = 2.0;
//! What a lying agent multiplies its compute figures by (1 for an honest one).
double figure_factor(LieMode m);
//! How long before its root is due a `partial` agent stops computing rows (its HTTP and hashing).
inline constexpr double kPartialReserveS = 0.4;
inline constexpr std::int64_t kVramLieFactor = 2;

//! The GPU a challenge is for.
struct ChallengeTarget {
  bool simulated = false;
  double true_tflops = 0;       // simulated: the FP16 tensor figure it really has (reference × factors)
  std::int64_t memory_mib = 0;  // what it really has (the registration may claim more under a lie)
  int cuda_ordinal = -1;
};

class ChallengeSolver {
 public:
  explicit ChallengeSolver(LieMode lie = LieMode::none, std::uint64_t lie_seed = 1);
  ~ChallengeSolver();
  ChallengeSolver(const ChallengeSolver&) = delete;
  ChallengeSolver& operator=(const ChallengeSolver&) = delete;

  //! A GEMM challenge's first step: every product's rows digested and committed under a Merkle root.
  struct GemmCommit {
    std::string root;       // hex
    double emulated_s = 0;  // simulated: how long the simulated GPU takes; the agent waits that long in all
  };
  core::Result<GemmCommit> commit_gemm(const protocol::ChallengeSpec& spec, const ChallengeTarget& target);
  //! Its second: the rows the server picked, each in full with its block and path (after commit_gemm).
  core::Result<std::vector<core::challenge::OpenedRow>> open_gemm(const std::vector<std::uint64_t>& rows);

  //! Fills the challenge's memory (as much as the GPU has); digests() then reads slices back from it.
  core::Status fill(const protocol::ChallengeSpec& spec, const ChallengeTarget& target);
  //! The hex SHA-256 of each slice as read back; "" for a slice outside the memory actually filled.
  std::vector<std::string> digests(const std::vector<std::uint64_t>& slices);

 private:
  struct Fill;
  LieMode lie_;
  std::uint64_t lie_state_;
  struct Gemm;
  std::unique_ptr<Gemm> gemm_;
  std::optional<std::pair<std::string, std::vector<core::challenge::OpenedRow>>> last_gemm_;
  std::optional<std::vector<std::string>> last_digests_;
  std::unique_ptr<Fill> fill_;
};

}  // namespace gpunex::agent::bench
