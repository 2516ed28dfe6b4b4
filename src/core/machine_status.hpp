#pragma once
// A provider machine's status and the rules that move it: a heartbeat makes a
// machine Online, silence for `offline_after_missed` heartbeat intervals makes
// it Offline. Pure: the fleet repository stores what these rules decide.

#include <cstdint>
#include <optional>
#include <string_view>

namespace gpunex::core {

//! Whether a machine's agent is heard from. A new machine starts Offline until its first heartbeat.
enum class MachineStatus { offline, online };

//! The stored and API name: "offline", "online".
std::string_view machine_status_name(MachineStatus s);
//! The status a stored name stands for; nullopt for any other text.
std::optional<MachineStatus> parse_machine_status(std::string_view s);

//! What a heartbeat does to a machine: it is Online afterwards; `came_online` when it was not before
//! (the machine's events record that).
struct HeartbeatTransition {
  MachineStatus next = MachineStatus::online;
  bool came_online = false;
};
HeartbeatTransition on_heartbeat(MachineStatus current);

//! The offline rule's inputs, from the server's configuration.
struct OfflineRule {
  int heartbeat_interval_s = 15;
  int offline_after_missed = 3;
};
//! A machine last seen strictly before this instant has missed its heartbeats and goes Offline.
std::int64_t offline_cutoff_ms(const OfflineRule& rule, std::int64_t now_ms);
//! Whether an Online machine last seen at `last_seen_ms` goes Offline at `now_ms` (last seen before the cutoff).
bool goes_offline(const OfflineRule& rule, MachineStatus current, std::int64_t last_seen_ms, std::int64_t now_ms);

}  // namespace gpunex::core
