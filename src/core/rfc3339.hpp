#pragma once
// RFC 3339 times, the API's time format, read without I/O so that domain
// logic (one-off maintenance windows) and util/ share one parser.

#include <cstdint>
#include <optional>
#include <string_view>

namespace gpunex::core {

//! Milliseconds since the Unix epoch of "2026-12-02T13:45:00.123Z" (Z or ±HH:MM offset); nullopt if malformed.
std::optional<std::int64_t> parse_rfc3339_ms(std::string_view s);

}  // namespace gpunex::core
