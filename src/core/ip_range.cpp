#include "core/ip_range.hpp"

#include <arpa/inet.h>

#include <cstring>

#include "core/text.hpp"

namespace gpunex::core {

namespace {

// The address as 4 or 16 bytes; an IPv4 address written as IPv6 (::ffff:a.b.c.d, what a socket bound
// to [::] reports for an IPv4 peer) is read as the IPv4 one.
std::optional<std::pair<bool, std::array<std::uint8_t, 16>>> parse_address(std::string_view text) {
  if (text.empty() || text.size() > 45) return std::nullopt;
  const std::string s(text);
  std::array<std::uint8_t, 16> b{};
  if (inet_pton(AF_INET, s.c_str(), b.data()) == 1) return std::pair{false, b};
  if (inet_pton(AF_INET6, s.c_str(), b.data()) != 1) return std::nullopt;
  static constexpr std::uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(b.data(), kMapped, 12) == 0) {
    std::array<std::uint8_t, 16> v4{};
    std::memcpy(v4.data(), b.data() + 12, 4);
    return std::pair{false, v4};
  }
  return std::pair{true, b};
}

bool matches(const IpRange& r, bool v6, const std::array<std::uint8_t, 16>& address) {
  if (v6 != r.v6) return false;
  int bits = r.prefix;
  for (std::size_t i = 0; bits > 0; ++i, bits -= 8) {
    const std::uint8_t mask = bits >= 8 ? 0xff : static_cast<std::uint8_t>(0xff << (8 - bits));
    if ((address[i] & mask) != (r.bytes[i] & mask)) return false;
  }
  return true;
}

}  // namespace

bool IpRange::contains(std::string_view address) const {
  const auto a = parse_address(address);
  return a && matches(*this, a->first, a->second);
}

std::optional<IpRange> parse_ip_range(std::string_view text) {
  const auto slash = text.find('/');
  const auto a = parse_address(text.substr(0, slash));
  if (!a) return std::nullopt;
  IpRange r;
  r.v6 = a->first;
  r.bytes = a->second;
  const int max = r.v6 ? 128 : 32;
  r.prefix = max;
  if (slash != std::string_view::npos) {
    const auto digits = text.substr(slash + 1);
    if (digits.empty() || digits.size() > 3) return std::nullopt;
    int n = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') return std::nullopt;
      n = n * 10 + (c - '0');
    }
    if (n > max) return std::nullopt;
    r.prefix = n;
  }
  return r;
}

IpRanges parse_ip_ranges(std::string_view list) {
  IpRanges out;
  while (true) {
    const auto comma = list.find(',');
    const std::string one = trim(list.substr(0, comma));
    if (!one.empty()) {
      auto r = parse_ip_range(one);
      if (!r) {
        out.error = "'" + one + "' is not an IP address or a CIDR range (10.0.0.5, 10.0.0.0/8, fd00::/8)";
        out.ranges.clear();
        return out;
      }
      out.ranges.push_back(*r);
    }
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return out;
}

bool in_any(const std::vector<IpRange>& ranges, std::string_view address) {
  if (ranges.empty()) return false;
  const auto a = parse_address(address);
  if (!a) return false;
  for (const auto& r : ranges) {
    if (matches(r, a->first, a->second)) return true;
  }
  return false;
}

}  // namespace gpunex::core
