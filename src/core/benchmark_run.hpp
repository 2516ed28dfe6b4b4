#pragma once
// A benchmark run's life: requested by the server (or reported unasked by the
// agent), delivered in a heartbeat reply, then completed by the agent's report
// or expired when no report came in time. Pure: the fleet repository stores it.

#include <cstdint>
#include <optional>
#include <string_view>

namespace gpunex::core {

enum class BenchmarkRunStatus { requested, delivered, completed, expired };

//! The stored and API name: "requested", "delivered", "completed", "expired".
std::string_view run_status_name(BenchmarkRunStatus s);
std::optional<BenchmarkRunStatus> parse_run_status(std::string_view s);

//! Open runs (requested or delivered) block another on the same machine.
bool is_open(BenchmarkRunStatus s);
//! The moves a run may make: requested → delivered → expired (no report within the timeout), and any
//! run not yet completed → completed by the agent's report (a late report for an expired run still
//! counts). Completed is final: a second report for the same run is refused.
bool can_move(BenchmarkRunStatus from, BenchmarkRunStatus to);

//! Why a run was opened.
enum class BenchmarkReason { first_registration, hardware_change, weekly, provider_request, agent };

//! The stored and API name: "first_registration", "hardware_change", "weekly", "provider_request", "agent".
std::string_view run_reason_name(BenchmarkReason r);
std::optional<BenchmarkReason> parse_run_reason(std::string_view s);

//! Why a machine is due a run now, or nothing: a first run when none completed, again after a GPU or
//! driver change since the last completed run, and when the last one is `interval_ms` old.
//! `hardware_changed` is whether a GPU, driver or simulated-flag change was recorded after `last_completed_ms`.
std::optional<BenchmarkReason> due_reason(std::optional<std::int64_t> last_completed_ms, bool hardware_changed,
                                          std::int64_t interval_ms, std::int64_t now_ms);

}  // namespace gpunex::core
