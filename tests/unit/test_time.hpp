#pragma once
// Times the unit tests share: a fixed "now" for the tests that need no particular day
// (2023-11-14T22:13:20Z), an hour and a day in milliseconds, and an RFC 3339 text as the calendar
// time the schedule and marketplace rules take.

#include <chrono>
#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "core/rfc3339.hpp"
#include "core/schedule.hpp"

namespace gpunex::test_support {

inline constexpr std::int64_t kNow = 1'700'000'000'000;
inline constexpr std::int64_t kHour = 3'600'000;
inline constexpr std::int64_t kDay = 24 * kHour;

inline core::UtcTime utc(const std::string& s) {
  const auto ms = core::parse_rfc3339_ms(s);
  EXPECT_TRUE(ms.has_value()) << s;
  return core::UtcTime{std::chrono::seconds{ms.value_or(0) / 1000}};
}

}  // namespace gpunex::test_support
