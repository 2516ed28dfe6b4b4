#pragma once
// The GPU hardware interface: only the calls GPUnex makes. Two implementations:
// NVML loaded at run time (gpu/nvml/) and a data-driven simulation (gpu/sim/).
// Domain code depends on this header only, never on a driver header.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"

namespace gpunex::gpu {

//! What does not change while the agent runs: identity, memory, link, limits.
struct GpuInfo {
  unsigned index = 0;
  std::string name;    // as NVML reports it, e.g. "NVIDIA L40S"
  std::string model;   // catalog id when known ("L40S"), else empty
  std::string uuid;    // "GPU-xxxxxxxx-..."
  std::string serial;  // empty where the board has none
  std::uint64_t memory_total_mib = 0;
  std::string driver_version;  // "550.54.15"
  std::string cuda_version;    // CUDA driver API version, "12.4"
  std::string pci_bus_id;      // "00000000:17:00.0"
  unsigned pcie_gen_current = 0;
  unsigned pcie_gen_max = 0;
  unsigned pcie_width_current = 0;
  unsigned pcie_width_max = 0;
  double power_limit_w = 0;
  std::optional<std::string> compute_capability;  // "8.9"
};

//! One telemetry sample of one GPU. Fields a GPU does not support stay nullopt.
struct GpuSample {
  unsigned index = 0;
  std::string uuid;
  std::int64_t at_ms = 0;
  std::uint64_t memory_used_mib = 0;
  std::optional<unsigned> temperature_c;
  std::optional<double> power_w;
  std::optional<double> power_limit_w;
  std::optional<unsigned> util_gpu_pct;
  std::optional<unsigned> util_mem_pct;
  std::optional<unsigned> sm_clock_mhz;
  std::optional<unsigned> mem_clock_mhz;
  std::uint64_t clock_event_bits = 0;     // NVML clocks-event (throttle) reasons bitmask
  std::vector<std::string> clock_events;  // the same, decoded (see clock_event_names)
  std::optional<std::uint64_t> ecc_corrected;
  std::optional<std::uint64_t> ecc_uncorrected;
};

//! The bits of NVML's clocks-event reasons, as GPUnex names them.
namespace clock_event {
inline constexpr std::uint64_t gpu_idle = 0x1;
inline constexpr std::uint64_t applications_clocks_setting = 0x2;
inline constexpr std::uint64_t sw_power_cap = 0x4;
inline constexpr std::uint64_t hw_slowdown = 0x8;
inline constexpr std::uint64_t sync_boost = 0x10;
inline constexpr std::uint64_t sw_thermal_slowdown = 0x20;
inline constexpr std::uint64_t hw_thermal_slowdown = 0x40;
inline constexpr std::uint64_t hw_power_brake_slowdown = 0x80;
inline constexpr std::uint64_t display_clock_setting = 0x100;
}  // namespace clock_event

//! Decodes a clocks-event bitmask into snake_case names; unknown bits become "unknown_0x...".
std::vector<std::string> clock_event_names(std::uint64_t bits);

//! True when the bits mean the GPU is slowed by heat or by its power limit (not idle or app clocks).
bool is_throttled(std::uint64_t bits);

//! A GPU backend. Implementations are not thread-safe; one thread samples.
class GpuBackend {
 public:
  virtual ~GpuBackend() = default;
  //! Every GPU the backend sees, with its static facts.
  virtual core::Result<std::vector<GpuInfo>> list_gpus() = 0;
  //! One telemetry sample of the GPU at `index` (as list_gpus numbered it).
  virtual core::Result<GpuSample> sample(unsigned index) = 0;
  //! True for the simulated backend: the agent and the dashboard must say so.
  virtual bool simulated() const = 0;
  //! A one-line description for logs ("NVML, driver 550.54.15"; "2x L40S" for the simulation).
  virtual std::string describe() const = 0;
};

//! JSON forms sent to the server (API.md register and heartbeat bodies).
nlohmann::json to_json(const GpuInfo& info);
nlohmann::json to_json(const GpuSample& sample);

}  // namespace gpunex::gpu
