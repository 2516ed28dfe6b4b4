#include "core/rental.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <tuple>

namespace gpunex::core::rental {

namespace {

constexpr State kStates[] = {State::requested, State::starting, State::running, State::stopping, State::ended};
constexpr EndReason kReasons[] = {
    EndReason::customer_stopped, EndReason::max_duration, EndReason::balance_exhausted, EndReason::window_ended,
    EndReason::container_exited, EndReason::start_failed, EndReason::provider_stopped,  EndReason::gpu_failure,
    EndReason::host_failure,     EndReason::agent_lost};

std::string_view event_name(Event e) {
  switch (e) {
    case Event::agent_starting:
      return "starting";
    case Event::agent_running:
      return "running";
    case Event::stop:
      return "stop";
    case Event::ended:
      return "ended";
  }
  return "unknown";
}

}  // namespace

std::string_view to_string(State s) {
  switch (s) {
    case State::requested:
      return "requested";
    case State::starting:
      return "starting";
    case State::running:
      return "running";
    case State::stopping:
      return "stopping";
    case State::ended:
      return "ended";
  }
  return "unknown";
}

Result<State> parse_state(std::string_view s) {
  for (auto v : kStates) {
    if (to_string(v) == s) return v;
  }
  return Error::make(ErrorCode::invalid_field, "unknown rental state '" + std::string(s) + "'");
}

std::string_view to_string(EndReason r) {
  switch (r) {
    case EndReason::customer_stopped:
      return "customer_stopped";
    case EndReason::max_duration:
      return "max_duration";
    case EndReason::balance_exhausted:
      return "balance_exhausted";
    case EndReason::window_ended:
      return "window_ended";
    case EndReason::container_exited:
      return "container_exited";
    case EndReason::start_failed:
      return "start_failed";
    case EndReason::provider_stopped:
      return "provider_stopped";
    case EndReason::gpu_failure:
      return "gpu_failure";
    case EndReason::host_failure:
      return "host_failure";
    case EndReason::agent_lost:
      return "agent_lost";
  }
  return "unknown";
}

Result<EndReason> parse_end_reason(std::string_view s) {
  for (auto v : kReasons) {
    if (to_string(v) == s) return v;
  }
  return Error::make(ErrorCode::invalid_field, "unknown rental end reason '" + std::string(s) + "'");
}

bool provider_side(EndReason r) {
  return r == EndReason::provider_stopped || r == EndReason::gpu_failure || r == EndReason::host_failure ||
         r == EndReason::agent_lost;
}

std::string end_text(EndReason r, std::optional<int> exit_code, bool oom) {
  switch (r) {
    case EndReason::customer_stopped:
      return "Stopped by you";
    case EndReason::max_duration:
      return "Reached its maximum duration";
    case EndReason::balance_exhausted:
      return "Stopped: the balance ran out";
    case EndReason::window_ended:
      return "Stopped: the provider's availability window ended";
    case EndReason::container_exited: {
      const std::string code = exit_code ? " (exit " + std::to_string(*exit_code) + ")" : "";
      return oom ? "Out of memory" + code : "The container exited" + code;
    }
    case EndReason::start_failed:
      return "Could not start (not charged)";
    case EndReason::provider_stopped:
      return "Stopped by the provider";
    case EndReason::gpu_failure:
      return "A GPU failed";
    case EndReason::host_failure:
      return "The provider's machine failed";
    case EndReason::agent_lost:
      return "The provider's machine went offline";
  }
  return "Ended";
}

Result<State> next_state(State from, Event e) {
  auto refuse = [&] {
    return Error::make(ErrorCode::conflict, "a rental that is " + std::string(to_string(from)) + " cannot take '" +
                                                std::string(event_name(e)) + "'")
        .with_code("rental_state");
  };
  if (from == State::ended) return refuse();
  switch (e) {
    case Event::agent_starting:
      if (from == State::requested) return State::starting;
      if (from == State::starting) return State::starting;  // a repeated event
      return refuse();
    case Event::agent_running:
      if (from == State::requested || from == State::starting || from == State::running) return State::running;
      return refuse();
    case Event::stop:
      return State::stopping;
    case Event::ended:
      return State::ended;
  }
  return refuse();
}

std::optional<Pick> pick_gpus(const std::vector<FreeGpu>& free, const Request& request) {
  if (request.gpu_count < 1) return std::nullopt;
  // GPUs per (machine, model) that match the request.
  std::map<std::pair<std::string, std::string>, std::vector<const FreeGpu*>> groups;
  for (const auto& g : free) {
    if (request.machine_id && g.machine_id != *request.machine_id) continue;
    if (request.model && g.model != *request.model) continue;
    if (request.region && g.region != *request.region) continue;
    if (request.min_reliability && g.reliability < *request.min_reliability) continue;
    if (request.max_price && g.price > *request.max_price) continue;
    groups[{g.machine_id, g.model}].push_back(&g);
  }
  const std::vector<const FreeGpu*>* best = nullptr;
  for (const auto& [key, gpus] : groups) {
    if (static_cast<int>(gpus.size()) < request.gpu_count) continue;
    if (best == nullptr) {
      best = &gpus;
      continue;
    }
    const auto* a = gpus.front();
    const auto* b = best->front();
    if (std::make_tuple(-a->rank, a->price, a->machine_id) < std::make_tuple(-b->rank, b->price, b->machine_id)) {
      best = &gpus;
    }
  }
  if (best == nullptr) return std::nullopt;
  std::vector<const FreeGpu*> chosen = *best;
  std::sort(chosen.begin(), chosen.end(), [](const FreeGpu* a, const FreeGpu* b) { return a->uuid < b->uuid; });
  chosen.resize(static_cast<std::size_t>(request.gpu_count));
  Pick p{chosen.front()->machine_id, chosen.front()->provider_id, chosen.front()->model, chosen.front()->price, {}};
  for (const auto* g : chosen) p.uuids.push_back(g->uuid);
  return p;
}

std::int64_t first_span_ms(std::optional<std::int64_t> max_duration_ms) {
  return max_duration_ms ? std::clamp<std::int64_t>(*max_duration_ms, 1, kHourMs) : kHourMs;
}

MicroUsdc first_hour_cost(MicroUsdc price_per_gpu_hour, int gpus, std::int64_t span_ms) {
  return ledger::usage_total(price_per_gpu_hour, gpus, span_ms);
}

MicroUsdc first_hour_left(MicroUsdc price_per_gpu_hour, int gpus, std::int64_t metered_ms, std::int64_t span_ms) {
  const auto used = ledger::usage_total(price_per_gpu_hour, gpus, std::min<std::int64_t>(metered_ms, span_ms));
  return std::max<MicroUsdc>(0, first_hour_cost(price_per_gpu_hour, gpus, span_ms) - used);
}

Status check_can_start(MicroUsdc balance, MicroUsdc price_per_gpu_hour, int gpus, MicroUsdc held,
                       std::int64_t span_ms) {
  // At least a micro-USDC free: a rental is never started on an empty balance, whatever its price.
  const auto needed = std::max<MicroUsdc>(1, first_hour_cost(price_per_gpu_hour, gpus, span_ms));
  const auto free = balance - held;
  if (free >= needed) return ok_status();
  const std::string of_it =
      held > 0 ? ", of which " + format_usdc(held) + " USDC is held for the first hour of your other rentals" : "";
  const std::string span = span_ms >= kHourMs ? "the first hour" : "its max_hours";
  return Error::make(ErrorCode::payment_required,
                     "the balance (" + format_usdc(balance) + " USDC" + of_it + ") does not cover " + span + ": " +
                         format_usdc(needed) + " USDC is needed to start, " + format_usdc(needed - free) +
                         " USDC more (your Balance page, or gpunex balance, says how to add credit)")
      .with_code("insufficient_balance")
      .with_detail("balance", format_usdc(balance))
      .with_detail("held", format_usdc(held))
      .with_detail("needed", format_usdc(needed))
      .with_detail("missing", format_usdc(needed - free));
}

std::int64_t metered_ms(std::optional<std::int64_t> running_since_ms, std::int64_t until_ms) {
  if (!running_since_ms) return 0;
  return std::max<std::int64_t>(0, until_ms - *running_since_ms);
}

std::int64_t metered_until(std::optional<std::int64_t> ended_at_ms, std::optional<std::int64_t> stop_asked_at_ms,
                           std::int64_t now_ms, std::optional<std::int64_t> running_since_ms,
                           std::optional<std::int64_t> max_duration_ms, std::optional<EndReason> stop_reason) {
  std::int64_t until = ended_at_ms.value_or(now_ms);
  if (stop_asked_at_ms) {
    const bool not_the_customers =
        stop_reason && (provider_side(*stop_reason) || *stop_reason == EndReason::window_ended);
    until = std::min(until, *stop_asked_at_ms + (not_the_customers ? 0 : kStopMeteredMs));
  }
  if (running_since_ms && max_duration_ms) until = std::min(until, *running_since_ms + *max_duration_ms);
  return until;
}

EndReason ended_reason(std::optional<EndReason> agent_said, std::optional<EndReason> stop_asked) {
  if (stop_asked) return *stop_asked;
  const EndReason said = agent_said.value_or(EndReason::host_failure);
  switch (said) {
    case EndReason::container_exited:
    case EndReason::start_failed:
    case EndReason::gpu_failure:
    case EndReason::host_failure:
      return said;
    default:
      return EndReason::host_failure;
  }
}

std::optional<EndReason> due_stop(const Running& r, std::int64_t now_ms) {
  const auto ran = metered_ms(r.running_since_ms, now_ms);
  if (r.max_duration_ms && ran >= *r.max_duration_ms) return EndReason::max_duration;
  if (r.window_ends_ms && now_ms >= *r.window_ends_ms) {
    const bool promised_still = r.promised_until_ms && (*r.promised_until_ms == 0 || now_ms < *r.promised_until_ms);
    if (!promised_still) return EndReason::window_ended;
    if (r.in_maintenance) return EndReason::provider_stopped;
  }
  const auto owed = ledger::usage_total(r.price_per_gpu_hour, r.gpus, ran) - r.settled.charged;
  if (r.balance_at_last_settlement - owed <= 0) return EndReason::balance_exhausted;
  return std::nullopt;
}

std::optional<std::int64_t> maintenance_stop_at(const core::Schedule& s, std::int64_t promised_until_ms,
                                                std::int64_t now_ms) {
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  const core::UtcTime now{std::chrono::seconds{now_ms / 1000}};
  std::optional<std::int64_t> first;
  for (const auto& o : core::occurrences(s, now, now + std::chrono::hours(24 * 90))) {
    if (o.maintenance < 0) continue;
    const std::int64_t start = duration_cast<milliseconds>(o.start.time_since_epoch()).count();
    const std::int64_t end = duration_cast<milliseconds>(o.end.time_since_epoch()).count();
    if (end <= now_ms) continue;
    if (promised_until_ms != 0 && start >= promised_until_ms) continue;  // after the promised end
    const std::int64_t at = std::max(start, now_ms);
    if (!first || at < *first) first = at;
  }
  return first;
}

}  // namespace gpunex::core::rental
