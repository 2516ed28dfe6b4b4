#pragma once
// The agent's main loop: register with the provider API key, then heartbeat
// with telemetry through the on-disk spool, backing off while the server is
// unreachable and stopping for good when the key is refused. Beside it, a long
// poll for the machine's rentals hands them to a RentalManager, whose events
// go out through the same spool.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "agent/bench/challenge_solver.hpp"
#include "agent/rentals.hpp"
#include "agent/runtime/container_runtime.hpp"
#include "agent/runtime/network_guard.hpp"
#include "agent/spool.hpp"
#include "agent/state.hpp"
#include "gpu/gpu_backend.hpp"
#include "protocol/register.hpp"

namespace gpunex::agent {

//! This agent's version, sent at registration (the protocol's version is protocol::kProtocolVersion).
inline constexpr const char* kAgentVersion = core::kReleaseVersion;

//! Process exit codes of gpunex-agent.
enum class ExitCode : int {
  ok = 0,
  failure = 1,
  usage = 2,
  no_gpu_backend = 3,  // no NVIDIA driver and no --simulate
  key_refused = 4,     // the server refused the API key (revoked or invalid)
};

struct AgentConfig {
  std::string server_url;
  std::string api_key;
  std::string ca_file;                           // custom CA bundle; TLS is always verified
  std::optional<unsigned> heartbeat_interval_s;  // overrides the server's value (tests)
  SpoolLimits spool;
  std::chrono::milliseconds backoff_initial{1000};
  std::chrono::milliseconds backoff_max{protocol::kAgentRetryMaxMs};
  std::chrono::milliseconds request_timeout{10000};
  std::uint64_t max_heartbeats = 0;  // stop after this many heartbeats are delivered (0: run until stopped)
  unsigned bench_storage_mib = 256;  // benchmark runs the server asks for: storage test file
  unsigned bench_net_mib = 256;      // ... and bytes per network throughput sample
  bench::LieMode test_lie = bench::LieMode::none;  // tests only (--test-lie): see bench/challenge_solver.hpp
  //! Rentals: the public ports, the stop grace, the engine (docker_host; empty: found as Docker's tools
  //! find it). The machine's facts (GPUs, RAM, cores, simulated) are filled in at start.
  RentalManagerOptions rentals;
  runtime::ContainerRuntime* container_runtime = nullptr;  // tests: this engine instead of docker_host's
  //! "iptables" (fence each rental's network: runtime/network_guard.hpp) or "none" (--network-guard).
  std::string network_guard = "iptables";
  //! Where customers reach the published ports (--public-host); empty: the address the server sees.
  std::string public_host;
  unsigned rentals_wait_s = 25;  // how long the server may hold a rentals poll (at most protocol::kMaxWaitS)
};

//! Delay before retry `attempt` (0-based): exponential, capped, with "equal jitter" (half fixed, half random).
std::chrono::milliseconds backoff_delay(unsigned attempt, std::chrono::milliseconds initial,
                                        std::chrono::milliseconds max, std::mt19937_64& rng);

//! The registration of this machine; it names the machine id only when `include_machine_id` and one is known.
protocol::RegisterRequest register_request(const AgentState& state, protocol::HostInfo host,
                                           std::vector<protocol::GpuInfo> gpus, bool simulated,
                                           bool include_machine_id);

//! True when a response is the server refusing the API key: retrying cannot help.
bool is_key_refused(long status, const std::string& body);

//! Runs until `stop` is set, the key is refused, or max_heartbeats is reached.
ExitCode run_agent(const AgentConfig& config, gpu::GpuBackend& backend, AgentState& state, std::atomic<bool>& stop);

}  // namespace gpunex::agent
