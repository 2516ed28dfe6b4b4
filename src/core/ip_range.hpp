#pragma once
// Address ranges as an operator writes them in a setting (10.0.0.5, 10.0.0.0/8, fd00::/8): parsed
// once, then asked whether a peer's address is in them.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpunex::core {

//! One address (a range of one) or a CIDR range, IPv4 or IPv6.
struct IpRange {
  bool v6 = false;
  std::array<std::uint8_t, 16> bytes{};  // IPv4 in the first 4
  int prefix = 0;                        // bits that must match: 32 or 128 for one address

  //! Whether `address` (IPv4, IPv6, or IPv4 written as IPv6, "::ffff:10.0.0.1") is in the range.
  bool contains(std::string_view address) const;
};

//! "10.0.0.5", "10.0.0.0/8", "2001:db8::1", "fd00::/8"; nullopt for anything else (a name, a bad
//! prefix, host bits set past the prefix are allowed and ignored).
std::optional<IpRange> parse_ip_range(std::string_view text);

//! A comma-separated list of ranges (spaces around each allowed, empty entries ignored), or the
//! first entry that is not one, as an error message.
struct IpRanges {
  std::vector<IpRange> ranges;
  std::string error;  // empty when every entry parsed
};
IpRanges parse_ip_ranges(std::string_view list);

//! Whether `address` is in any of `ranges`.
bool in_any(const std::vector<IpRange>& ranges, std::string_view address);

}  // namespace gpunex::core
