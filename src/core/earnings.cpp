#include "core/earnings.hpp"

#include <map>

#include "core/rfc3339.hpp"

namespace gpunex::core::earnings {

Result<GroupBy> parse_group_by(std::string_view s) {
  if (s == "day") return GroupBy::day;
  if (s == "gpu") return GroupBy::gpu;
  if (s == "model") return GroupBy::model;
  if (s == "machine") return GroupBy::machine;
  return Error::make(ErrorCode::invalid_field, "group_by must be day, gpu, model or machine", "group_by");
}

std::string_view to_string(GroupBy g) {
  switch (g) {
    case GroupBy::day:
      return "day";
    case GroupBy::gpu:
      return "gpu";
    case GroupBy::model:
      return "model";
    case GroupBy::machine:
      return "machine";
  }
  return "day";
}

std::vector<Group> group(const std::vector<Earning>& earnings, GroupBy by) {
  std::map<std::string, Group> groups;
  auto add = [&](const std::string& key, MicroUsdc amount, bool settled) {
    auto& g = groups[key];
    g.key = key;
    (settled ? g.settled : g.unsettled) += amount;
  };
  for (const auto& e : earnings) {
    switch (by) {
      case GroupBy::day:
        add(format_rfc3339_ms(e.at_ms).substr(0, 10), e.amount, e.settled);
        break;
      case GroupBy::model:
        add(e.model, e.amount, e.settled);
        break;
      case GroupBy::machine:
        add(e.machine_id, e.amount, e.settled);
        break;
      case GroupBy::gpu: {
        if (e.gpus.empty()) {
          add("", e.amount, e.settled);
          break;
        }
        const auto n = static_cast<MicroUsdc>(e.gpus.size());
        const MicroUsdc each = e.amount / n;
        for (std::size_t i = 0; i < e.gpus.size(); ++i) add(e.gpus[i], each + (i == 0 ? e.amount - each * n : 0), e.settled);
        break;
      }
    }
  }
  std::vector<Group> out;
  for (auto& [key, g] : groups) out.push_back(std::move(g));
  return out;
}

MicroUsdc sum_since(const std::vector<Earning>& earnings, std::int64_t since_ms) {
  MicroUsdc total = 0;
  for (const auto& e : earnings) {
    if (e.at_ms >= since_ms) total += e.amount;
  }
  return total;
}

}  // namespace gpunex::core::earnings
