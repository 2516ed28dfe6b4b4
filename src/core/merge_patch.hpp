#pragma once
// JSON Merge Patch (RFC 7396): how every PATCH endpoint turns a partial body
// into the whole document it then validates. A member of the patch replaces
// the target's member, null removes it, an object merges recursively, and
// anything else (arrays included) replaces wholesale.

#include <nlohmann/json.hpp>

namespace gpunex::core {

//! The target with `patch` applied, as RFC 7396 §2 defines it. A patch that is not an object replaces the target.
nlohmann::json merge_patch(nlohmann::json target, const nlohmann::json& patch);

}  // namespace gpunex::core
