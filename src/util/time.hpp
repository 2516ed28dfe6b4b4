#pragma once
// Time formats at the API edge: RFC 3339 UTC strings <-> epoch milliseconds.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace gpunex::util {

//! "2026-12-02T13:45:00.123Z" (milliseconds shown only when non-zero).
std::string rfc3339(std::int64_t epoch_ms);
//! Parses an RFC 3339 time with Z or an offset; nullopt if malformed.
std::optional<std::int64_t> parse_rfc3339(std::string_view s);
//! An optional time as the API writes it: rfc3339(ms), or null.
nlohmann::json rfc3339_or_null(const std::optional<std::int64_t>& epoch_ms);

}  // namespace gpunex::util
