#pragma once
// What every agent ↔ server message shares: the protocol version and the bounds both sides keep.

#include <cstddef>

#include "core/protocol_version.hpp"

namespace gpunex::protocol {

//! Version of the agent ↔ server messages; sent in every message, and the server refuses another.
using core::kProtocolVersion;

//! The most GPUs one machine reports (and the bound on a GPU's index).
inline constexpr std::size_t kMaxGpusPerMachine = 64;

}  // namespace gpunex::protocol
