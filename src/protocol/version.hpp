#pragma once
// What every agent ↔ server message shares: the protocol version and the bounds both sides keep.

#include <cstddef>
#include <cstdint>

#include "core/protocol_version.hpp"

namespace gpunex::protocol {

//! Version of the agent ↔ server messages; sent in every message, and the server refuses another.
using core::kProtocolVersion;

//! The most GPUs one machine reports (and the bound on a GPU's index).
inline constexpr std::size_t kMaxGpusPerMachine = 64;

//! The longest an agent waits between two tries while the server does not answer (its backoff's cap):
//! once the platform serves again after an outage, every agent still running is back within this.
inline constexpr std::int64_t kAgentRetryMaxMs = 60'000;

}  // namespace gpunex::protocol
