#pragma once
// RFC 3339 times, the API's time format, read and written without I/O so that
// domain logic (one-off maintenance windows), the agent protocol (protocol/)
// and util/ share one parser and one writer.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpunex::core {

//! Milliseconds since the Unix epoch of "2026-12-02T13:45:00.123Z" (Z or ±HH:MM offset); nullopt if malformed.
std::optional<std::int64_t> parse_rfc3339_ms(std::string_view s);

//! "2026-12-02T13:45:00.123Z" (milliseconds shown only when non-zero); parse_rfc3339_ms reads it back.
std::string format_rfc3339_ms(std::int64_t epoch_ms);

}  // namespace gpunex::core
