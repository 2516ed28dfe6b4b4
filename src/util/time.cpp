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
  const auto day = date::floor<date::days>(tp);
  const date::year_month_day ymd{day};
  const int year = static_cast<int>(ymd.year());
  if (year < 0 || year > 9999) {
    if (epoch_ms % 1000 == 0) return date::format("%FT%TZ", date::floor<seconds>(tp));
    return date::format("%FT%TZ", tp);
  }
  // The same text as date::format("%FT%TZ"), without a stream (this runs for every sample stored).
  const auto ms = (tp - day).count();
  char buf[32];
  const int n =
      std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02d", year, static_cast<unsigned>(ymd.month()),
                    static_cast<unsigned>(ymd.day()), static_cast<int>(ms / 3'600'000),
                    static_cast<int>(ms / 60'000 % 60), static_cast<int>(ms / 1000 % 60));
  std::string out(buf, static_cast<std::size_t>(n));
  if (ms % 1000 != 0) {
    std::snprintf(buf, sizeof buf, ".%03d", static_cast<int>(ms % 1000));
    out += buf;
  }
  out += 'Z';
  return out;
}

std::optional<std::int64_t> parse_rfc3339(std::string_view s) { return core::parse_rfc3339_ms(s); }

}  // namespace gpunex::util
