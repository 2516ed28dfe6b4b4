#include "util/time.hpp"

#include <chrono>
#include <cstdio>
#include <sstream>

#include <date/date.h>

namespace gpunex::util {

std::string rfc3339(std::int64_t epoch_ms) {
  using namespace std::chrono;
  sys_time<milliseconds> tp{milliseconds{epoch_ms}};
  if (epoch_ms % 1000 == 0) return date::format("%FT%TZ", date::floor<seconds>(tp));
  return date::format("%FT%TZ", tp);
}

std::optional<std::int64_t> parse_rfc3339(std::string_view s) {
  using namespace std::chrono;
  for (const char* fmt : {"%FT%TZ", "%FT%T%Ez"}) {
    std::istringstream in{std::string(s)};
    date::sys_time<milliseconds> tp;
    in >> date::parse(fmt, tp);
    if (!in.fail() && in.peek() == std::char_traits<char>::eof()) return tp.time_since_epoch().count();
  }
  return std::nullopt;
}

}  // namespace gpunex::util
