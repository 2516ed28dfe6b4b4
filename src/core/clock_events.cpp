#include "core/clock_events.hpp"

#include <cstdio>

namespace gpunex::core {

namespace {

struct Reason {
  std::uint64_t bit;
  std::string_view name;
  bool throttle;  // heat or power slows the GPU (not idle, not a clock setting)
};

constexpr Reason kReasons[] = {
    {clock_event::gpu_idle, "gpu_idle", false},
    {clock_event::applications_clocks_setting, "applications_clocks_setting", false},
    {clock_event::sw_power_cap, "sw_power_cap", true},
    {clock_event::hw_slowdown, "hw_slowdown", true},
    {clock_event::sync_boost, "sync_boost", false},
    {clock_event::sw_thermal_slowdown, "sw_thermal_slowdown", true},
    {clock_event::hw_thermal_slowdown, "hw_thermal_slowdown", true},
    {clock_event::hw_power_brake_slowdown, "hw_power_brake_slowdown", true},
    {clock_event::display_clock_setting, "display_clock_setting", false},
};

}  // namespace

std::vector<std::string> clock_event_names(std::uint64_t bits) {
  std::vector<std::string> out;
  std::uint64_t known = 0;
  for (const Reason& r : kReasons) {
    known |= r.bit;
    if ((bits & r.bit) != 0) out.emplace_back(r.name);
  }
  if (std::uint64_t rest = bits & ~known; rest != 0) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "unknown_0x%llx", static_cast<unsigned long long>(rest));
    out.emplace_back(buf);
  }
  return out;
}

bool is_throttled(std::uint64_t bits) {
  for (const Reason& r : kReasons) {
    if (r.throttle && (bits & r.bit) != 0) return true;
  }
  return false;
}

bool is_throttle_event(std::string_view name) {
  for (const Reason& r : kReasons) {
    if (r.throttle && r.name == name) return true;
  }
  return false;
}

}  // namespace gpunex::core
