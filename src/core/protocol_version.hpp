#pragma once
// The version of the agent ↔ server messages, sent in every one of them, and the release version. Declared here, in the
// lowest layer, because core itself reads one of those messages (the benchmark report,
// core/benchmark_report.hpp); everything else reads it as protocol::kProtocolVersion.

namespace gpunex::core {

//! Version of the agent ↔ server messages; a message of another version is refused.
inline constexpr int kProtocolVersion = 1;

//! The release of every program (gpunex-server, gpunex-agent, gpunex): what `--version` prints and the
//! agent reports. CMakeLists.txt reads its project version from this line.
inline constexpr const char* kReleaseVersion = "0.1.0";

}  // namespace gpunex::core
