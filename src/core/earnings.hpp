#pragma once
// A provider's earnings grouped for the earnings tracker (issue #18), pure: each settlement's
// provider share from the ledger, and the live accrual of running rentals not settled yet, by day
// (UTC), GPU, model or machine. A rental's amount is split evenly over its GPUs (the remainder of
// the division to its first GPU), so the GPUs' figures add up to the rental's exactly.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/money.hpp"
#include "core/result.hpp"

namespace gpunex::core::earnings {

enum class GroupBy { day, gpu, model, machine };
Result<GroupBy> parse_group_by(std::string_view s);
std::string_view to_string(GroupBy g);

//! One amount earned: a settlement's provider share, or a running rental's unsettled accrual.
struct Earning {
  std::int64_t at_ms = 0;  // the settlement's time, or now for an accrual
  MicroUsdc amount = 0;
  bool settled = true;
  std::string rental_id, machine_id, model;
  std::vector<std::string> gpus;
};

struct Group {
  std::string key;  // "2026-12-04", a GPU uuid, a model id or a machine id
  MicroUsdc settled = 0;
  MicroUsdc unsettled = 0;
  MicroUsdc total() const { return settled + unsettled; }
  bool operator==(const Group&) const = default;
};

//! The groups in key order (days ascending).
std::vector<Group> group(const std::vector<Earning>& earnings, GroupBy by);

//! The sum of the earnings at or after `since_ms` (today, the last 7 or 30 days).
MicroUsdc sum_since(const std::vector<Earning>& earnings, std::int64_t since_ms);

}  // namespace gpunex::core::earnings
