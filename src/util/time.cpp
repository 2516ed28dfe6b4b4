#include "util/time.hpp"

#include <nlohmann/json.hpp>

#include "core/rfc3339.hpp"

namespace gpunex::util {

std::string rfc3339(std::int64_t epoch_ms) { return core::format_rfc3339_ms(epoch_ms); }

std::optional<std::int64_t> parse_rfc3339(std::string_view s) { return core::parse_rfc3339_ms(s); }

nlohmann::json rfc3339_or_null(const std::optional<std::int64_t>& epoch_ms) {
  return epoch_ms ? nlohmann::json(rfc3339(*epoch_ms)) : nlohmann::json(nullptr);
}

}  // namespace gpunex::util
