#pragma once
// Heartbeats (POST /v1/agent/heartbeat): telemetry per GPU and GPU events, sent every interval
// with an increasing sequence number; the reply carries the server's commands. Parsing is strict:
// every bad input is one Error naming the field's JSON path, and unknown fields are refused.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/clock_events.hpp"
#include "core/result.hpp"
#include "protocol/challenge.hpp"
#include "protocol/version.hpp"

namespace gpunex::protocol {

using core::is_throttle_event;

//! One telemetry sample of one GPU. Readings a GPU does not support stay empty; a sample with an
//! error (the GPU did not answer) has no readings.
struct TelemetrySample {
  std::int64_t index = 0;
  std::string uuid;
  std::int64_t at_ms = 0;
  std::optional<std::string> error;
  std::optional<std::int64_t> memory_used_mib;  // always present when there is no error
  std::optional<std::int64_t> temperature_c;
  std::optional<double> power_w;
  std::optional<double> power_limit_w;
  std::optional<std::int64_t> util_gpu_pct;
  std::optional<std::int64_t> util_mem_pct;
  std::optional<std::int64_t> sm_clock_mhz;
  std::optional<std::int64_t> mem_clock_mhz;
  std::vector<std::string> clock_events;  // core::clock_event_names of NVML's clocks-event reasons
  std::optional<std::int64_t> ecc_corrected;
  std::optional<std::int64_t> ecc_uncorrected;

  nlohmann::json to_json() const;
  //! The sample without its GPU's index and uuid: what the server keeps per GPU and shows.
  nlohmann::json readings_json() const;
  //! readings_json().dump(), written directly (the server stores it for every GPU on every heartbeat).
  std::string readings_text() const;
  bool operator==(const TelemetrySample&) const = default;
};

//! A change the agent saw between heartbeats.
struct GpuEvent {
  std::string type;  // kGpuLost | kGpuRecovered
  std::string uuid;
  std::int64_t at_ms = 0;
  std::optional<std::string> message;
  nlohmann::json to_json() const;
  bool operator==(const GpuEvent&) const = default;
};
inline constexpr std::string_view kGpuLost = "gpu_lost";            // the GPU stopped answering
inline constexpr std::string_view kGpuRecovered = "gpu_recovered";  // it answers again

//! The bounds of a heartbeat's fields, read by both its readers (parse_heartbeat_request and
//! read_heartbeat_direct), so they cannot disagree.
namespace heartbeat_limits {
inline constexpr std::size_t kMachineIdMax = 64;
inline constexpr std::int64_t kSeqMax = std::int64_t{1} << 53;  // exact as a JSON number
inline constexpr std::size_t kUuidMax = 96;
inline constexpr std::size_t kTextMax = 1000;  // a sample's error, an event's message
inline constexpr std::int64_t kMemoryUsedMibMax = 16 * 1024 * 1024;
inline constexpr std::int64_t kTemperatureMax = 200;
inline constexpr double kPowerMax = 10000;
inline constexpr std::int64_t kPercentMax = 100;
inline constexpr std::int64_t kClockMhzMax = 100000;
inline constexpr std::size_t kClockEventsMax = 32;
inline constexpr std::size_t kClockEventNameMax = 64;
inline constexpr std::size_t kEventTypeMax = 32;
inline constexpr std::size_t kEventsMax = 256;
inline constexpr std::size_t kJobsMax = 1024;
}  // namespace heartbeat_limits

struct HeartbeatRequest {
  int protocol_version = kProtocolVersion;
  std::string machine_id;
  // From 1 (again after the agent's state is lost), increasing, one count with the rental events, sent in
  // order from the agent's spool: the server takes a seq only above the machine's last one and answers a
  // replayed or older one as a duplicate, storing nothing.
  std::int64_t seq = 0;
  std::optional<std::int64_t> sent_at_ms;
  std::vector<TelemetrySample> telemetry;
  nlohmann::json jobs = nlohmann::json::array();  // reserved for rentals; an empty array today
  std::vector<GpuEvent> events;                   // written only when there are some
  nlohmann::json to_json() const;
  bool operator==(const HeartbeatRequest&) const = default;
};

//! One command in a heartbeat reply. This version defines run_benchmark; an agent logs and skips
//! any other type, so the server can add commands without breaking older agents.
struct Command {
  std::string type;                   // kRunBenchmark | kSpotCheck
  std::optional<std::string> run_id;  // run_benchmark: the server's id, sent back with the results
  std::optional<std::string> reason;  // run_benchmark: why the server asks
  std::vector<ChallengeSpec> challenges;  // spot_check: answered as a run's challenges are
  nlohmann::json to_json() const;
  bool operator==(const Command&) const = default;
};
inline constexpr std::string_view kRunBenchmark = "run_benchmark";
//! Challenges at a random time while a GPU is listed and idle (issue 21): the same exchange as after a run
//! (protocol/challenge.hpp), so figures that held in the run must hold at any time.
inline constexpr std::string_view kSpotCheck = "spot_check";

struct HeartbeatReply {
  std::vector<Command> commands;
  std::optional<unsigned> heartbeat_interval_s;
  bool duplicate = false;  // the seq was not above the machine's last one: nothing was stored
  nlohmann::json to_json() const;
  bool operator==(const HeartbeatReply&) const = default;
};

core::Result<HeartbeatRequest> parse_heartbeat_request(const nlohmann::json& body);

//! The body's text as parse_heartbeat_request reads its JSON, by way of read_heartbeat_direct when that
//! takes it (a heartbeat as agents send it), else of the JSON tree, which names every fault. What the
//! server calls for every heartbeat.
core::Result<HeartbeatRequest> read_heartbeat_request(std::string_view body);
//! The body read straight from the parser's events, with no JSON tree: only a body that
//! parse_heartbeat_request(core::parse_json_object(body)) takes, read alike; nullopt for anything else,
//! including what it would take but this does not know (a non-empty jobs list). heartbeat_reader.cpp.
std::optional<HeartbeatRequest> read_heartbeat_direct(std::string_view body);

//! Lenient, as an agent reads a reply: whatever is not understood is left empty (a command
//! without a text type gets type "").
HeartbeatReply parse_heartbeat_reply(const nlohmann::json& body);

}  // namespace gpunex::protocol
