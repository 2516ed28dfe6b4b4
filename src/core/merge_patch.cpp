#include "core/merge_patch.hpp"

namespace gpunex::core {

nlohmann::json merge_patch(nlohmann::json target, const nlohmann::json& patch) {
  // nlohmann::json implements RFC 7396 §2 as written; this wrapper gives it a value-returning form
  // and one name for every PATCH endpoint (tests/unit/merge_patch_test.cpp holds the RFC's cases).
  target.merge_patch(patch);
  return target;
}

}  // namespace gpunex::core
