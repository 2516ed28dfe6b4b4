#include "core/rfc3339.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include <date/date.h>

namespace gpunex::core {

std::optional<std::int64_t> parse_rfc3339_ms(std::string_view s) {
  // YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM), parsed by hand: date::parse trips
  // -Wmaybe-uninitialized inside date.h at -O3.
  auto digits = [&](std::size_t pos, std::size_t n) -> std::optional<int> {
    if (pos + n > s.size()) return std::nullopt;
    int v = 0;
    for (std::size_t i = pos; i < pos + n; ++i) {
      if (s[i] < '0' || s[i] > '9') return std::nullopt;
      v = v * 10 + (s[i] - '0');
    }
    return v;
  };
  auto y = digits(0, 4), mo = digits(5, 2), d = digits(8, 2), h = digits(11, 2), mi = digits(14, 2), sec = digits(17, 2);
  if (!y || !mo || !d || !h || !mi || !sec || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') ||
      s[13] != ':' || s[16] != ':' || *h > 23 || *mi > 59 || *sec > 60) {
    return std::nullopt;
  }
  date::year_month_day ymd{date::year{*y}, date::month{static_cast<unsigned>(*mo)}, date::day{static_cast<unsigned>(*d)}};
  if (!ymd.ok()) return std::nullopt;
  std::size_t pos = 19;
  std::int64_t ms = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    std::size_t first = pos;
    int scale = 100;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      ms += (s[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == first) return std::nullopt;
  }
  std::int64_t offset_min = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    auto oh = digits(pos + 1, 2), om = digits(pos + 4, 2);
    if (!oh || !om || pos + 3 >= s.size() || s[pos + 3] != ':' || *oh > 23 || *om > 59) return std::nullopt;
    offset_min = (s[pos] == '-' ? -1 : 1) * (*oh * 60 + *om);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != s.size()) return std::nullopt;
  std::int64_t days = date::sys_days{ymd}.time_since_epoch().count();
  std::int64_t secs = days * 86400 + *h * 3600 + *mi * 60 + std::min(*sec, 59) - offset_min * 60;
  return secs * 1000 + ms;
}

std::string format_rfc3339_ms(std::int64_t epoch_ms) {
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

}  // namespace gpunex::core
