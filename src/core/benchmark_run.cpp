#include "core/benchmark_run.hpp"

namespace gpunex::core {

std::string_view run_status_name(BenchmarkRunStatus s) {
  switch (s) {
    case BenchmarkRunStatus::requested: return "requested";
    case BenchmarkRunStatus::delivered: return "delivered";
    case BenchmarkRunStatus::completed: return "completed";
    case BenchmarkRunStatus::expired: return "expired";
  }
  return "requested";
}

std::optional<BenchmarkRunStatus> parse_run_status(std::string_view s) {
  for (auto v : {BenchmarkRunStatus::requested, BenchmarkRunStatus::delivered, BenchmarkRunStatus::completed,
                 BenchmarkRunStatus::expired}) {
    if (run_status_name(v) == s) return v;
  }
  return std::nullopt;
}

bool is_open(BenchmarkRunStatus s) {
  return s == BenchmarkRunStatus::requested || s == BenchmarkRunStatus::delivered;
}

bool can_move(BenchmarkRunStatus from, BenchmarkRunStatus to) {
  switch (from) {
    case BenchmarkRunStatus::requested:
      return to == BenchmarkRunStatus::delivered || to == BenchmarkRunStatus::completed;
    case BenchmarkRunStatus::delivered:
      return to == BenchmarkRunStatus::completed || to == BenchmarkRunStatus::expired;
    case BenchmarkRunStatus::expired:
      return to == BenchmarkRunStatus::completed;
    case BenchmarkRunStatus::completed:
      return false;
  }
  return false;
}

std::string_view run_reason_name(BenchmarkReason r) {
  switch (r) {
    case BenchmarkReason::first_registration: return "first_registration";
    case BenchmarkReason::hardware_change: return "hardware_change";
    case BenchmarkReason::weekly: return "weekly";
    case BenchmarkReason::provider_request: return "provider_request";
    case BenchmarkReason::agent: return "agent";
  }
  return "agent";
}

std::optional<BenchmarkReason> parse_run_reason(std::string_view s) {
  for (auto v : {BenchmarkReason::first_registration, BenchmarkReason::hardware_change, BenchmarkReason::weekly,
                 BenchmarkReason::provider_request, BenchmarkReason::agent}) {
    if (run_reason_name(v) == s) return v;
  }
  return std::nullopt;
}

std::optional<BenchmarkReason> due_reason(std::optional<std::int64_t> last_completed_ms, bool hardware_changed,
                                          std::int64_t interval_ms, std::int64_t now_ms) {
  if (!last_completed_ms) return BenchmarkReason::first_registration;
  if (hardware_changed) return BenchmarkReason::hardware_change;
  if (*last_completed_ms <= now_ms - interval_ms) return BenchmarkReason::weekly;
  return std::nullopt;
}

}  // namespace gpunex::core
