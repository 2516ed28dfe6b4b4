#pragma once
// Rentals between the server and the agent (issue #16). Two messages, both idempotent:
//
// - GET /v1/agent/rentals?machine_id=ID&known=VERSION&wait_s=N — a long poll. The server answers
//   the machine's live rentals (the ones the agent must run, and the ones it must stop) as soon as
//   they differ from VERSION, the `version` of the agent's last answer, or after N seconds (at most
//   kMaxWaitS). An agent keeps one such request open at all times, so a start or stop reaches it
//   within a second of the customer's request instead of at the next heartbeat. The answer is the
//   whole desired state, not a queue of commands: an agent that restarts adopts what it lists and
//   removes every other rental container, and a repeated answer changes nothing.
// - POST /v1/agent/rental-events — what happened to the rentals (starting, running, ended, logs),
//   sequenced with the heartbeats (one seq per machine), sent through the agent's spool: while
//   the server is unreachable they wait on disk, and a replayed one is dropped by its seq.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/rental.hpp"
#include "core/rental_spec.hpp"
#include "core/result.hpp"
#include "protocol/version.hpp"

namespace gpunex::protocol {

inline constexpr std::string_view kAgentRentalsPath = "/v1/agent/rentals";
inline constexpr std::string_view kRentalEventsPath = "/v1/agent/rental-events";
//! The longest a rentals poll is held open.
inline constexpr int kMaxWaitS = 30;
//! The rentals poll's `blocked`: why the agent cannot run a rental now (no container engine answers,
//! the network guard cannot fence), in one line of at most kMaxBlockedBytes; absent when it can. The
//! server offers no GPU of a blocked machine and shows the provider why.
inline constexpr std::string_view kBlockedParam = "blocked";
inline constexpr std::size_t kMaxBlockedBytes = 300;
//! The agent's side: `why` as one line of valid UTF-8 (line breaks and control characters become
//! spaces), cut to kMaxBlockedBytes at a character boundary.
std::string blocked_text(std::string_view why);
//! The server's side: the parameter as sent (absent or empty: not blocked); an error naming
//! `blocked` when it is not one clean line of at most kMaxBlockedBytes.
core::Result<std::optional<std::string>> parse_blocked(std::optional<std::string_view> param);

//! One rental the machine must run (state requested, starting or running) or stop (stopping).
struct AssignedRental {
  std::string id;
  core::rental::State state = core::rental::State::requested;
  std::vector<std::string> gpu_uuids;
  core::rental::Spec spec;
  nlohmann::json to_json() const;
  bool operator==(const AssignedRental&) const = default;
};

//! The answer to a rentals poll.
struct AgentRentals {
  std::string version;  // changes whenever the list does; sent back as `known`
  std::vector<AssignedRental> rentals;
  nlohmann::json to_json() const;
  bool operator==(const AgentRentals&) const = default;
};
//! A version for a machine's rentals: the same list gives the same text.
std::string rentals_version(const std::vector<AssignedRental>& rentals);
core::Result<AgentRentals> parse_agent_rentals(const nlohmann::json& body);

//! What happened to a rental on the machine.
enum class RentalEventType {
  starting,  // the agent took it: pulling the image, creating the container
  running,   // the container runs: metering starts at `at`
  ended,     // the container is gone (exited, stopped on request, or never started)
  logs,      // the tail of the container's output
};
std::string_view to_string(RentalEventType t);

//! A host port the agent bound for one of the rental's container ports.
struct BoundPort {
  int container_port = 0;
  int host_port = 0;
  bool operator==(const BoundPort&) const = default;
};

struct RentalEvent {
  std::string rental_id;
  RentalEventType type = RentalEventType::starting;
  std::int64_t at_ms = 0;
  //! ended: why, when the agent knows (container_exited, start_failed, gpu_failure, host_failure);
  //! empty when it ended because the server asked (the server knows why).
  std::optional<core::rental::EndReason> reason;
  std::optional<int> exit_code;  // ended, container_exited
  bool oom = false;              // ended: the kernel killed it for memory
  std::optional<std::string> error;  // ended, start_failed: the engine's words
  std::optional<std::string> logs;   // logs: the last lines, at most kMaxLogBytes
  std::vector<BoundPort> ports;      // running: where the exposed ports are reachable
  nlohmann::json to_json() const;
  bool operator==(const RentalEvent&) const = default;
};
inline constexpr std::size_t kMaxLogBytes = 64 * 1024;

struct RentalEventsRequest {
  int protocol_version = kProtocolVersion;
  std::string machine_id;
  std::int64_t seq = 0;  // the machine's sequence, shared with heartbeats
  std::vector<RentalEvent> events;
  nlohmann::json to_json() const;
  bool operator==(const RentalEventsRequest&) const = default;
};
core::Result<RentalEventsRequest> parse_rental_events(const nlohmann::json& body);

}  // namespace gpunex::protocol
