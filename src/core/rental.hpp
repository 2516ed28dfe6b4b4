#pragma once
// A rental's rules (DESIGN §3, issue #16), pure: its states and the moves between them, why it ended
// and whether that is on the provider's side (the reliability score counts those), which GPUs the
// scheduler gives it, what it may cost before it starts, and when it must stop.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/ledger.hpp"
#include "core/money.hpp"
#include "core/result.hpp"
#include "core/schedule.hpp"

namespace gpunex::core::rental {

//! requested → starting (the agent pulls and creates) → running → stopping → ended.
enum class State { requested, starting, running, stopping, ended };
std::string_view to_string(State s);
Result<State> parse_state(std::string_view s);

enum class EndReason {
  customer_stopped,
  max_duration,
  balance_exhausted,
  window_ended,
  container_exited,  // with its exit code; OOM told apart
  start_failed,      // image pull or create failed: the customer is not charged
  provider_stopped,
  gpu_failure,
  host_failure,
  agent_lost,  // the machine offline longer than kAgentLostAfterMs
};
std::string_view to_string(EndReason r);
Result<EndReason> parse_end_reason(std::string_view s);
//! Whether the provider's side caused the end (DESIGN §4, job completion C).
bool provider_side(EndReason r);
//! A customer's words for why a rental ended ("Stopped by the provider", "Out of memory (exit 137)").
std::string end_text(EndReason r, std::optional<int> exit_code, bool oom);

inline constexpr std::int64_t kAgentLostAfterMs = 5 * 60'000;

//! What moves a rental.
enum class Event {
  agent_starting,  // the agent took the start command (pull, create)
  agent_running,   // the container runs: metering starts here
  stop,            // the customer, the provider, or the platform asks it to stop
  ended,           // the agent reports the container gone (exited, stopped, failed to start)
};
//! The state after `e`, or a conflict error naming both. `ended` is reachable from every state but
//! itself (a container can exit at any time); `stop` is idempotent while stopping.
Result<State> next_state(State from, Event e);
inline bool active(State s) {
  return s != State::ended;
}

// ---- scheduling ----

//! One GPU the scheduler may give: free now (online, listed, inside its window, not rented).
struct FreeGpu {
  std::string machine_id;
  std::string uuid;
  std::string model;
  std::string provider_id;
  std::string region;
  MicroUsdc price = 0;     // the provider's rate for this model, per GPU-hour
  double reliability = 0;  // 0–100
  double rank = 0;         // the marketplace rank of its offer: higher first
};

//! What the customer asked for: one offer (a machine) or filters.
struct Request {
  std::optional<std::string> machine_id;
  std::optional<std::string> model;
  int gpu_count = 1;
  std::optional<std::string> region;
  std::optional<double> min_reliability;
  std::optional<MicroUsdc> max_price;
};

struct Pick {
  std::string machine_id;
  std::string provider_id;
  std::string model;
  MicroUsdc price = 0;
  std::vector<std::string> uuids;  // gpu_count of them, on one machine, one model
};

//! The GPUs to give: on one machine, of one model, all matching the request; the best-ranked such
//! machine first, then the cheaper, then the machine id (stable). Within it the GPUs in uuid order.
//! nullopt when no machine has enough.
std::optional<Pick> pick_gpus(const std::vector<FreeGpu>& free, const Request& request);

// ---- money ----

inline constexpr std::int64_t kHourMs = 3'600'000;
//! The stretch a rental's balance must cover to start, and holds while it runs: its first hour, or all
//! of it when its max_hours is shorter (a 15-minute job needs 15 minutes' balance, not an hour's).
std::int64_t first_span_ms(std::optional<std::int64_t> max_duration_ms);
//! The cost of `span_ms` (the first hour) at the locked price: what the balance must cover to start.
MicroUsdc first_hour_cost(MicroUsdc price_per_gpu_hour, int gpus, std::int64_t span_ms = kHourMs);
//! What is left of a live rental's first span after `metered_ms` of use: held from the balance a new
//! rental may start on, so that one hour's balance does not start several rentals.
MicroUsdc first_hour_left(MicroUsdc price_per_gpu_hour, int gpus, std::int64_t metered_ms,
                          std::int64_t span_ms = kHourMs);
//! ok, or 402 insufficient_balance naming the amount needed and the balance. `held`: the part of
//! `balance` the customer's other live rentals hold for their first span (not available to this one).
Status check_can_start(MicroUsdc balance, MicroUsdc price_per_gpu_hour, int gpus, MicroUsdc held = 0,
                       std::int64_t span_ms = kHourMs);

//! What a running rental knows when deciding whether it must stop now.
struct Running {
  std::int64_t running_since_ms = 0;  // the agent's running event
  std::optional<std::int64_t> max_duration_ms;
  std::optional<std::int64_t> window_ends_ms;  // the machine's availability window, when not 24/7
  //! The end of availability its offer showed when the rental was made: 0 when none (24/7), nullopt
  //! when not known (a rental made before it was kept).
  std::optional<std::int64_t> promised_until_ms;
  bool in_maintenance = false;  // the machine is in a maintenance window now
  MicroUsdc price_per_gpu_hour = 0;
  int gpus = 1;
  MicroUsdc balance_at_last_settlement = 0;  // the customer's balance
  ledger::Settled settled;                   // what this rental has settled so far
};
//! The reason it must stop at `now_ms`, if any: max_duration, then the window's end, then
//! balance_exhausted (the balance less what has accrued since the last settlement is used up). Outside
//! the machine's availability, it stops (window_ended) once the end it was promised has come (the
//! customer rented until then; also when no promise was kept); before that, a schedule narrowed since
//! does not cut it short: it runs on until the promised end (no new rentals meanwhile: the provider's
//! way to drain a machine), while maintenance does (provider_stopped: the provider's side, as a stop by
//! hand would be).
std::optional<EndReason> due_stop(const Running& r, std::int64_t now_ms);

//! When maintenance in `s` will stop a running rental that was promised availability until
//! `promised_until_ms` (0: no end, 24/7 when rented): the start of the first maintenance occurrence not
//! yet over within 90 days that begins before the promised end (`now_ms` when it has begun already);
//! nullopt when none will.
std::optional<std::int64_t> maintenance_stop_at(const core::Schedule& s, std::int64_t promised_until_ms,
                                                std::int64_t now_ms);

//! Milliseconds of metered use between the running event and `until_ms` (0 before it started).
std::int64_t metered_ms(std::optional<std::int64_t> running_since_ms, std::int64_t until_ms);

//! How long after a stop was asked its rental is still metered when the agent has not confirmed the end:
//! time for the agent to hear of the stop (its next poll) and to stop the container (its grace, 10 s by
//! default). An agent that never confirms, buggy or made so, bills no further.
inline constexpr std::int64_t kStopMeteredMs = 60'000;
//! Where metering ends: at the end the agent confirmed, or now, never later than kStopMeteredMs after
//! the stop was asked, and never past `max_duration_ms` of running (max_hours caps the cost, whenever
//! the worker and the agent get round to stopping it). A stop the customer did not cause, the provider's
//! side (provider_stopped, a failed GPU or host) or the end of the availability they were rented with
//! (window_ended), meters nothing after it was asked: the seconds the agent takes to stop the container
//! are not the customer's.
std::int64_t metered_until(std::optional<std::int64_t> ended_at_ms, std::optional<std::int64_t> stop_asked_at_ms,
                           std::int64_t now_ms, std::optional<std::int64_t> running_since_ms = std::nullopt,
                           std::optional<std::int64_t> max_duration_ms = std::nullopt,
                           std::optional<EndReason> stop_reason = std::nullopt);

//! Why a rental ended, from what its agent said and the stop that was asked. A stop that was asked ends
//! for its reason. Otherwise the agent is believed about the container and its machine only (it exited,
//! it could not start, a GPU or the host failed); a reason only the platform gives (the customer stopped
//! it, the balance ran out, the provider stopped it...) from the agent alone is a host failure: a
//! provider's agent cannot put the end on the customer, or off the provider's record.
EndReason ended_reason(std::optional<EndReason> agent_said, std::optional<EndReason> stop_asked);

}  // namespace gpunex::core::rental
