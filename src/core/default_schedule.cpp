#include "core/default_schedule.hpp"

#include <algorithm>

namespace gpunex::core {

Result<DefaultSchedule> default_schedule(const ApplicationForm& form, const std::vector<std::string>& machine_models) {
  if (form.gpus.empty()) return DefaultSchedule{always_available(), std::nullopt};
  std::size_t pick = 0;
  for (std::size_t i = 0; i < form.gpus.size(); ++i) {
    if (std::find(machine_models.begin(), machine_models.end(), form.gpus[i].model) != machine_models.end()) {
      pick = i;
      break;
    }
  }
  const Availability& a = form.gpus[pick].availability;
  nlohmann::json spec = {{"timezone", a.always ? (a.timezone.empty() ? "UTC" : a.timezone) : a.timezone},
                         {"always", a.always}};
  if (!a.always) {
    nlohmann::json windows = nlohmann::json::array();
    for (const auto& w : a.windows) {
      windows.push_back({{"days", w.days}, {"start", format_hh_mm(w.start_min)}, {"end", format_hh_mm(w.end_min)}});
    }
    spec["windows"] = std::move(windows);
  }
  auto s = parse_schedule(spec, "gpus[" + std::to_string(pick) + "].availability");
  if (!s) return std::move(s).error();
  return DefaultSchedule{std::move(s).value(), pick};
}

}  // namespace gpunex::core
