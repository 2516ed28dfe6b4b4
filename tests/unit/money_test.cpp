#include "core/money.hpp"

#include <gtest/gtest.h>

using gpunex::core::ErrorCode;
using gpunex::core::format_usdc;
using gpunex::core::kMaxRatePerGpuHour;
using gpunex::core::parse_rate;
using gpunex::core::parse_usdc;

TEST(Money, ParsesDecimalStrings) {
  EXPECT_EQ(*parse_usdc("1.85"), 1'850'000);
  EXPECT_EQ(*parse_usdc("2"), 2'000'000);
  EXPECT_EQ(*parse_usdc("0.000001"), 1);
  EXPECT_EQ(*parse_usdc("0"), 0);
  EXPECT_EQ(*parse_usdc("1000.000000"), 1'000'000'000);
  EXPECT_EQ(*parse_usdc("0.5"), 500'000);
  EXPECT_EQ(*parse_usdc("007.25"), 7'250'000);
  EXPECT_EQ(*parse_usdc("999999999999.999999"), 999'999'999'999'999'999);
}

TEST(Money, RefusesWithReason) {
  struct Case {
    const char* text;
    const char* code;
  };
  for (const Case& c : {Case{"", "invalid_amount"}, Case{"-1", "negative_amount"}, Case{"+1", "invalid_amount"},
                        Case{"1e3", "invalid_amount"}, Case{"1E3", "invalid_amount"}, Case{" 1", "invalid_amount"},
                        Case{"1 ", "invalid_amount"}, Case{"1. 5", "invalid_amount"}, Case{"1.", "invalid_amount"},
                        Case{".5", "invalid_amount"}, Case{"1,5", "invalid_amount"}, Case{"1.2.3", "invalid_amount"},
                        Case{"abc", "invalid_amount"}, Case{"0x10", "invalid_amount"}, Case{"NaN", "invalid_amount"},
                        Case{"1.0000001", "too_many_decimals"}, Case{"0.1234567", "too_many_decimals"},
                        Case{"1000000000000", "amount_too_large"}}) {
    auto r = parse_usdc(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.error().code, ErrorCode::invalid_field) << c.text;
    EXPECT_EQ(r.error().detail_code, c.code) << c.text;
    EXPECT_FALSE(r.error().message.empty());
  }
  EXPECT_NE(parse_usdc("1.1234567").error().message.find("6 decimals"), std::string::npos);
  EXPECT_NE(parse_usdc("-2").error().message.find("negative"), std::string::npos);
}

TEST(Money, RateBounds) {
  EXPECT_EQ(*parse_rate("0.000001"), 1);
  EXPECT_EQ(*parse_rate("1000"), kMaxRatePerGpuHour);
  EXPECT_EQ(parse_rate("0").error().detail_code, "rate_out_of_range");
  EXPECT_EQ(parse_rate("0.000000").error().detail_code, "rate_out_of_range");
  EXPECT_EQ(parse_rate("1000.000001").error().detail_code, "rate_out_of_range");
  EXPECT_EQ(parse_rate("-1").error().detail_code, "negative_amount");
  EXPECT_EQ(parse_rate("2.5000001").error().detail_code, "too_many_decimals");
}

TEST(Money, FormatsSixDecimals) {
  EXPECT_EQ(format_usdc(1'850'000), "1.850000");
  EXPECT_EQ(format_usdc(0), "0.000000");
  EXPECT_EQ(format_usdc(1), "0.000001");
  EXPECT_EQ(format_usdc(-5), "-0.000005");
  EXPECT_EQ(format_usdc(-1'500'000), "-1.500000");
  EXPECT_EQ(format_usdc(INT64_MIN), "-9223372036854.775808");
  EXPECT_EQ(format_usdc(INT64_MAX), "9223372036854.775807");
}

TEST(Money, RoundTrips) {
  for (std::int64_t v : {0LL, 1LL, 999'999LL, 1'000'000LL, 2'500'000LL, 123'456'789'012LL}) {
    EXPECT_EQ(*parse_usdc(format_usdc(v)), v);
  }
}
