#pragma once
// Field readers the message parsers share (not part of the module's interface).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/json_reader.hpp"

namespace gpunex::protocol::detail {

//! A bound for counters and sizes: large, yet exact as a JSON number.
inline constexpr std::int64_t kBig = 1LL << 50;

//! An optional finite number from min to max.
std::optional<double> optional_number(core::ObjectReader& r, std::string_view key, double min, double max);
//! An RFC 3339 time as epoch milliseconds.
std::optional<std::int64_t> time_field(core::ObjectReader& r, std::string_view key, bool required);
//! Reads protocol_version, refusing any version but this one with code unsupported_protocol_version.
int protocol_version(core::ObjectReader& r);
//! "gpus[3]".
std::string item_path(const std::string& list, std::size_t i);

}  // namespace gpunex::protocol::detail
