#include "core/merge_patch.hpp"

namespace gpunex::core {

nlohmann::json merge_patch(nlohmann::json target, const nlohmann::json& patch) {
  if (!patch.is_object()) return patch;
  if (!target.is_object()) target = nlohmann::json::object();
  for (const auto& [key, value] : patch.items()) {
    if (value.is_null()) {
      target.erase(key);
    } else {
      auto it = target.find(key);
      target[key] = merge_patch(it == target.end() ? nlohmann::json(nullptr) : std::move(*it), value);
    }
  }
  return target;
}

}  // namespace gpunex::core
