#pragma once
// NVML's clocks-event (throttle) reasons as GPUnex names them: the bits of the mask a GPU reports,
// their names in telemetry messages, and which of them mean the GPU is slowed by heat or power.
// In core because the backends, the messages and the benchmark rules all read the same table.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpunex::core {

//! The bits of NVML's clocks-event reasons.
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

//! The same question about one name of a telemetry sample's clock_events.
bool is_throttle_event(std::string_view name);

}  // namespace gpunex::core
