#include "core/declared_gpus.hpp"

#include <algorithm>

namespace gpunex::core {

std::vector<DeclaredModel> declared_gpus(const ApplicationForm& form) {
  std::vector<DeclaredModel> out;
  for (const auto& g : form.gpus) {
    std::string model = g.model == "other" ? "other: " + g.model_other : g.model;
    auto it = std::find_if(out.begin(), out.end(), [&](const DeclaredModel& d) { return d.model == model; });
    if (it == out.end()) {
      out.push_back({std::move(model), g.count});
    } else {
      it->count += g.count;
    }
  }
  return out;
}

std::string declared_gpus_text(const std::vector<DeclaredModel>& gpus) {
  std::string s;
  for (const auto& d : gpus) {
    if (!s.empty()) s += ", ";
    s += std::to_string(d.count) + " × " + d.model;
  }
  return s;
}

}  // namespace gpunex::core
