#pragma once
// Money is integer micro-USDC (6 decimals, USDC's own unit), never a float
// (DESIGN §4). The API carries it as a decimal string ("1.850000"); these are
// the only functions that turn one into the other.

#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace gpunex::core {

//! An amount of USDC in millionths. Signed so that ledger differences fit.
using MicroUsdc = std::int64_t;

inline constexpr MicroUsdc kMicroPerUsdc = 1'000'000;
//! The highest rate per GPU-hour a provider may set: 1000 USDC.
inline constexpr MicroUsdc kMaxRatePerGpuHour = 1000 * kMicroPerUsdc;

//! Parses a non-negative decimal amount: one or more digits, optionally a '.' followed by
//! 1–6 digits ("2", "1.85", "0.000001"). No sign, exponent, spaces, thousands separators
//! or a bare '.' ("1.", ".5"); at most 12 integer digits. The error (invalid_field, with
//! no field set: the caller names it) says which rule was broken, calling the value `what`
//! ("Price per GPU-hour must not be negative").
Result<MicroUsdc> parse_usdc(std::string_view text, std::string_view what = "amount");

//! A rate per GPU-hour: parse_usdc() plus the bounds, above 0 and at most 1000 USDC.
Result<MicroUsdc> parse_rate(std::string_view text, std::string_view what = "rate");

//! Formats with exactly six decimals: 1'850'000 → "1.850000", -5 → "-0.000005".
std::string format_usdc(MicroUsdc amount);

}  // namespace gpunex::core
