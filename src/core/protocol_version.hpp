#pragma once
// The version of the agent ↔ server messages, sent in every one of them. Declared here, in the
// lowest layer, because core itself reads one of those messages (the benchmark report,
// core/benchmark_report.hpp); everything else reads it as protocol::kProtocolVersion.

namespace gpunex::core {

//! Version of the agent ↔ server messages; a message of another version is refused.
inline constexpr int kProtocolVersion = 1;

}  // namespace gpunex::core
