#pragma once
// The agent ↔ server messages (API.md /v1/agent/register and /heartbeat),
// parsed strictly: every bad input is one Error naming the field's JSON path,
// and fields the protocol does not define are refused.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"

namespace gpunex::server {

using core::Result;

inline constexpr int kAgentProtocolVersion = 1;
inline constexpr std::size_t kMaxGpusPerMachine = 64;

struct AgentHost {
  std::string hostname, cpu_model, os, kernel;
  std::int64_t cpu_cores = 0, ram_mib = 0, disk_free_mib = 0;
  std::optional<std::string> docker_version;
  nlohmann::json to_json() const;
};

struct AgentGpu {
  std::int64_t index = 0;
  std::string uuid, name;
  std::optional<std::string> model, serial, compute_capability;
  std::int64_t memory_mib = 0;
  std::string driver_version, cuda_version, pci_bus_id;
  std::int64_t pcie_gen_current = 0, pcie_gen_max = 0, pcie_width_current = 0, pcie_width_max = 0;
  double power_limit_w = 0;
  //! Facts kept as JSON beside the columns (serial, PCIe link, power limit, compute capability).
  nlohmann::json facts() const;
};

struct RegisterRequest {
  int protocol_version = 0;
  std::string agent_version;
  std::string machine_fingerprint;
  std::optional<std::string> machine_id;
  AgentHost host;
  std::vector<AgentGpu> gpus;
  bool simulated = false;
};

struct TelemetrySample {
  std::int64_t index = 0;
  std::string uuid;
  std::int64_t at_ms = 0;
  std::optional<std::string> error;  // the GPU did not answer; no readings
  std::optional<std::int64_t> memory_used_mib, temperature_c, util_gpu_pct, util_mem_pct, sm_clock_mhz, mem_clock_mhz;
  std::optional<double> power_w, power_limit_w;
  std::vector<std::string> clock_events;
  std::optional<std::int64_t> ecc_corrected, ecc_uncorrected;
  nlohmann::json to_json() const;
  //! to_json().dump(), written directly (it is stored per GPU on every heartbeat).
  std::string to_json_text() const;
};

struct AgentEvent {
  std::string type;  // gpu_lost | gpu_recovered
  std::string uuid;
  std::int64_t at_ms = 0;
  std::optional<std::string> message;
};

struct HeartbeatRequest {
  int protocol_version = 0;
  std::string machine_id;
  std::int64_t seq = 0;
  std::optional<std::int64_t> sent_at_ms;
  std::vector<TelemetrySample> telemetry;
  nlohmann::json jobs = nlohmann::json::array();
  std::vector<AgentEvent> events;
};

Result<RegisterRequest> parse_register_request(const nlohmann::json& body);
Result<HeartbeatRequest> parse_heartbeat_request(const nlohmann::json& body);

//! Clock-event names that mean the GPU is slowed by heat or power.
bool is_throttle_event(const std::string& name);

}  // namespace gpunex::server
