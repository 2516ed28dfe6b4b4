#include "core/machine_status.hpp"

namespace gpunex::core {

std::string_view machine_status_name(MachineStatus s) {
  switch (s) {
    case MachineStatus::offline: return "offline";
    case MachineStatus::online: return "online";
  }
  return "offline";
}

std::optional<MachineStatus> parse_machine_status(std::string_view s) {
  if (s == "offline") return MachineStatus::offline;
  if (s == "online") return MachineStatus::online;
  return std::nullopt;
}

HeartbeatTransition on_heartbeat(MachineStatus current) {
  return HeartbeatTransition{MachineStatus::online, current != MachineStatus::online};
}

std::int64_t offline_cutoff_ms(const OfflineRule& rule, std::int64_t now_ms) {
  return now_ms - std::int64_t{rule.offline_after_missed} * rule.heartbeat_interval_s * 1000;
}

bool goes_offline(const OfflineRule& rule, MachineStatus current, std::int64_t last_seen_ms, std::int64_t now_ms) {
  return current == MachineStatus::online && last_seen_ms < offline_cutoff_ms(rule, now_ms);
}

}  // namespace gpunex::core
