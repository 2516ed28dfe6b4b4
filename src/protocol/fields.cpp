#include "protocol/fields.hpp"

#include <cmath>

#include "core/rfc3339.hpp"
#include "protocol/version.hpp"

namespace gpunex::protocol::detail {

using core::Error;
using core::ErrorCode;

std::optional<double> optional_number(core::ObjectReader& r, std::string_view key, double min, double max) {
  const nlohmann::json* v = r.optional_value(key);
  if (r.describing()) r.describe_field(key, {{"type", "number"}, {"minimum", min}, {"maximum", max}});
  if (v == nullptr) return std::nullopt;
  if (!v->is_number() || !std::isfinite(v->get<double>()) || v->get<double>() < min || v->get<double>() > max) {
    r.fail(Error::make(ErrorCode::invalid_field,
                       "must be a number from " + std::to_string(static_cast<long long>(min)) + " to " +
                           std::to_string(static_cast<long long>(max)),
                       r.path_of(key)));
    return std::nullopt;
  }
  return v->get<double>();
}

std::optional<std::int64_t> time_field(core::ObjectReader& r, std::string_view key, bool required) {
  auto s = required ? std::optional<std::string>(r.required_string(key, 1, kTimeTextMax))
                    : r.optional_string(key, kTimeTextMax);
  if (r.describing()) r.describe_field(key, {{"format", "date-time"}});
  if (!s || r.failed()) return std::nullopt;
  auto ms = core::parse_rfc3339_ms(*s);
  if (!ms) r.fail(Error::make(ErrorCode::invalid_field, "must be an RFC 3339 time", r.path_of(key)));
  return ms;
}

int protocol_version(core::ObjectReader& r) {
  const int v = static_cast<int>(r.required_int("protocol_version", 1, kProtocolVersionMax));
  if (r.describing()) r.describe_field("protocol_version", {{"const", kProtocolVersion}});
  if (!r.failed() && v != kProtocolVersion) {
    r.fail(Error::make(ErrorCode::invalid_field,
                       "protocol version " + std::to_string(v) + " is not supported by this server (it speaks " +
                           std::to_string(kProtocolVersion) + "); update the agent",
                       std::string("protocol_version"))
               .with_code("unsupported_protocol_version"));
  }
  return v;
}

std::string item_path(const std::string& list, std::size_t i) {
  return list + "[" + std::to_string(i) + "]";
}

std::string without_nul(std::string s) {
  std::erase(s, '\0');
  return s;
}

}  // namespace gpunex::protocol::detail
