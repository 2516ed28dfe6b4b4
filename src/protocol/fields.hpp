#pragma once
// Field readers the message parsers share (not part of the module's interface).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json_reader.hpp"

namespace gpunex::protocol::detail {

//! A bound for counters and sizes: large, yet exact as a JSON number.
inline constexpr std::int64_t kBig = 1LL << 50;
//! The longest text time_field reads, and the largest protocol_version read (then refused unless ours).
inline constexpr std::size_t kTimeTextMax = 64;
inline constexpr std::int64_t kProtocolVersionMax = 1000;

//! An optional finite number from min to max.
std::optional<double> optional_number(core::ObjectReader& r, std::string_view key, double min, double max);
//! An RFC 3339 time as epoch milliseconds.
std::optional<std::int64_t> time_field(core::ObjectReader& r, std::string_view key, bool required);
//! Reads protocol_version, refusing any version but this one with code unsupported_protocol_version.
int protocol_version(core::ObjectReader& r);
//! "gpus[3]".
std::string item_path(const std::string& list, std::size_t i);
//! `s` without its NUL bytes: the server refuses a NUL in any JSON string (no store text can hold one).
std::string without_nul(std::string s);

//! Parses every item of the array `list`, found at `key`, with parse(item, "key[i]", T&) into `out`;
//! each bad item's error is recorded in `r` (and the item left out).
template <class T, class Parse>
void parse_items(core::ObjectReader& r, const nlohmann::json& list, const std::string& key, std::vector<T>& out,
                 Parse parse) {
  for (std::size_t i = 0; i < list.size(); ++i) {
    T item;
    if (auto st = parse(list[i], item_path(key, i), item); !st) {
      r.fail(std::move(st).error());
      continue;
    }
    out.push_back(std::move(item));
  }
}

}  // namespace gpunex::protocol::detail
