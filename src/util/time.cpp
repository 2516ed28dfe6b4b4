#include "util/time.hpp"

#include "core/rfc3339.hpp"

#include <chrono>
#include <cstdio>
#include <algorithm>

#include <date/date.h>

namespace gpunex::util {

std::string rfc3339(std::int64_t epoch_ms) {
  using namespace std::chrono;
  sys_time<milliseconds> tp{milliseconds{epoch_ms}};
  if (epoch_ms % 1000 == 0) return date::format("%FT%TZ", date::floor<seconds>(tp));
  return date::format("%FT%TZ", tp);
}

std::optional<std::int64_t> parse_rfc3339(std::string_view s) { return core::parse_rfc3339_ms(s); }

}  // namespace gpunex::util
