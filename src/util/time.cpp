#include "util/time.hpp"

#include "core/rfc3339.hpp"

namespace gpunex::util {

std::string rfc3339(std::int64_t epoch_ms) { return core::format_rfc3339_ms(epoch_ms); }

std::optional<std::int64_t> parse_rfc3339(std::string_view s) { return core::parse_rfc3339_ms(s); }

}  // namespace gpunex::util
