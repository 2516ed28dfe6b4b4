#include "gpu/gpu_backend.hpp"

#include <cstdio>

#include "util/time.hpp"

namespace gpunex::gpu {

std::vector<std::string> clock_event_names(std::uint64_t bits) {
  struct Named {
    std::uint64_t bit;
    const char* name;
  };
  static constexpr Named kNames[] = {
      {clock_event::gpu_idle, "gpu_idle"},
      {clock_event::applications_clocks_setting, "applications_clocks_setting"},
      {clock_event::sw_power_cap, "sw_power_cap"},
      {clock_event::hw_slowdown, "hw_slowdown"},
      {clock_event::sync_boost, "sync_boost"},
      {clock_event::sw_thermal_slowdown, "sw_thermal_slowdown"},
      {clock_event::hw_thermal_slowdown, "hw_thermal_slowdown"},
      {clock_event::hw_power_brake_slowdown, "hw_power_brake_slowdown"},
      {clock_event::display_clock_setting, "display_clock_setting"},
  };
  std::vector<std::string> out;
  std::uint64_t known = 0;
  for (const Named& n : kNames) {
    known |= n.bit;
    if ((bits & n.bit) != 0) out.emplace_back(n.name);
  }
  if (std::uint64_t rest = bits & ~known; rest != 0) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "unknown_0x%llx", static_cast<unsigned long long>(rest));
    out.emplace_back(buf);
  }
  return out;
}

bool is_throttled(std::uint64_t bits) {
  constexpr std::uint64_t kThrottle = clock_event::sw_power_cap | clock_event::hw_slowdown |
                                      clock_event::sw_thermal_slowdown | clock_event::hw_thermal_slowdown |
                                      clock_event::hw_power_brake_slowdown;
  return (bits & kThrottle) != 0;
}

namespace {
template <class T>
nlohmann::json opt(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}
}  // namespace

nlohmann::json to_json(const GpuInfo& g) {
  return {
      {"index", g.index},
      {"uuid", g.uuid},
      {"name", g.name},
      {"model", g.model.empty() ? nlohmann::json(nullptr) : nlohmann::json(g.model)},
      {"serial", g.serial.empty() ? nlohmann::json(nullptr) : nlohmann::json(g.serial)},
      {"memory_mib", g.memory_total_mib},
      {"driver_version", g.driver_version},
      {"cuda_version", g.cuda_version},
      {"pci_bus_id", g.pci_bus_id},
      {"pcie_gen_current", g.pcie_gen_current},
      {"pcie_gen_max", g.pcie_gen_max},
      {"pcie_width_current", g.pcie_width_current},
      {"pcie_width_max", g.pcie_width_max},
      {"power_limit_w", g.power_limit_w},
      {"compute_capability", opt(g.compute_capability)},
  };
}

nlohmann::json to_json(const GpuSample& s) {
  return {
      {"index", s.index},
      {"uuid", s.uuid},
      {"at", util::rfc3339(s.at_ms)},
      {"memory_used_mib", s.memory_used_mib},
      {"temperature_c", opt(s.temperature_c)},
      {"power_w", opt(s.power_w)},
      {"power_limit_w", opt(s.power_limit_w)},
      {"util_gpu_pct", opt(s.util_gpu_pct)},
      {"util_mem_pct", opt(s.util_mem_pct)},
      {"sm_clock_mhz", opt(s.sm_clock_mhz)},
      {"mem_clock_mhz", opt(s.mem_clock_mhz)},
      {"clock_events", s.clock_events},
      {"ecc_corrected", opt(s.ecc_corrected)},
      {"ecc_uncorrected", opt(s.ecc_uncorrected)},
  };
}

}  // namespace gpunex::gpu
