#pragma once
// Registration (POST /v1/agent/register): the agent's host and GPUs, and the server's reply.
// Parsing is strict: every bad input is one Error naming the field's JSON path, and fields the
// protocol does not define are refused.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "protocol/version.hpp"

namespace gpunex::protocol {

//! Facts about the agent's host. The server stores to_json() as the machine's host.
struct HostInfo {
  std::string hostname;
  std::string cpu_model;
  std::int64_t cpu_cores = 0;      // logical CPUs
  std::int64_t ram_mib = 0;
  std::int64_t disk_free_mib = 0;  // in the agent's data folder
  std::string os;                  // PRETTY_NAME from os-release
  std::string kernel;              // uname -r
  std::optional<std::string> docker_version;
  //! Where customers reach this host's published ports (--public-host: a DNS name or an IP address); when
  //! absent, the server takes the address the agent's registration came from.
  std::optional<std::string> public_host;
  nlohmann::json to_json() const;
  bool operator==(const HostInfo&) const = default;
};

//! One GPU as the agent reports it: what does not change while the agent runs.
struct GpuInfo {
  std::int64_t index = 0;
  std::string uuid;                   // "GPU-xxxxxxxx-..."
  std::string name;                   // as NVML reports it, e.g. "NVIDIA L40S"
  std::optional<std::string> model;   // catalog id when the agent knows it ("L40S")
  std::optional<std::string> serial;  // absent where the board has none
  std::int64_t memory_mib = 0;
  std::string driver_version;  // "550.54.15"
  std::string cuda_version;    // CUDA driver API version, "12.4"
  std::string pci_bus_id;      // "00000000:17:00.0"; empty when unknown
  std::int64_t pcie_gen_current = 0;  // 0 where the board does not say
  std::int64_t pcie_gen_max = 0;
  std::int64_t pcie_width_current = 0;
  std::int64_t pcie_width_max = 0;
  double power_limit_w = 0;
  std::optional<std::string> compute_capability;  // "8.9"
  nlohmann::json to_json() const;
  //! The facts the server keeps as JSON beside its columns (all but uuid, name, model and memory).
  nlohmann::json facts() const;
  bool operator==(const GpuInfo&) const = default;
};

struct RegisterRequest {
  int protocol_version = kProtocolVersion;
  std::string agent_version;
  std::string machine_fingerprint;        // made once by the agent; the server re-attaches by it
  std::optional<std::string> machine_id;  // the id this server gave before, when the agent has one
  HostInfo host;
  std::vector<GpuInfo> gpus;
  bool simulated = false;
  nlohmann::json to_json() const;
  bool operator==(const RegisterRequest&) const = default;
};

struct RegisterReply {
  std::string machine_id;
  std::optional<unsigned> heartbeat_interval_s;
  nlohmann::json to_json() const;
  bool operator==(const RegisterReply&) const = default;
};

core::Result<RegisterRequest> parse_register_request(const nlohmann::json& body);

//! Lenient, as an agent reads a reply: only machine_id is required; an interval that is not a
//! non-negative integer is ignored.
core::Result<RegisterReply> parse_register_reply(const nlohmann::json& body);

}  // namespace gpunex::protocol
