#include "core/money.hpp"

#include <cstdlib>

namespace gpunex::core {

namespace {

Error money_error(std::string msg, std::string code) {
  return Error::make(ErrorCode::invalid_field, std::move(msg)).with_code(std::move(code));
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

Result<MicroUsdc> parse_usdc(std::string_view s, std::string_view what) {
  const std::string name(what);
  constexpr std::size_t kMaxIntegerDigits = 12;
  constexpr std::size_t kMaxDecimals = 6;
  if (s.empty()) return money_error(name + " is empty; write it like \"1.85\"", "invalid_amount");
  for (char c : s) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
      return money_error(name + " must not contain spaces", "invalid_amount");
  }
  if (s.front() == '-') return money_error(name + " must not be negative", "negative_amount");
  if (s.front() == '+') return money_error(name + " must not have a sign", "invalid_amount");
  if (s.find_first_of("eE") != std::string_view::npos)
    return money_error(name + " must be a plain decimal, without an exponent", "invalid_amount");
  const std::size_t dot = s.find('.');
  const std::string_view whole = s.substr(0, dot);
  const std::string_view frac = dot == std::string_view::npos ? std::string_view{} : s.substr(dot + 1);
  const auto all_digits = [](std::string_view part) {
    for (char c : part)
      if (!is_digit(c)) return false;
    return true;
  };
  if (whole.empty() || !all_digits(whole) || !all_digits(frac) || (dot != std::string_view::npos && frac.empty()))
    return money_error(name + " is not a number: use digits with an optional '.' and up to 6 decimals, like \"1.85\"",
                       "invalid_amount");
  if (frac.size() > kMaxDecimals)
    return money_error(name + " has more than 6 decimals (USDC's smallest unit is 0.000001)", "too_many_decimals");
  const std::size_t first_significant = whole.find_first_not_of('0');
  const std::size_t significant = first_significant == std::string_view::npos ? 0 : whole.size() - first_significant;
  if (significant > kMaxIntegerDigits) return money_error(name + " is too large", "amount_too_large");

  MicroUsdc value = 0;
  for (char c : whole) value = value * 10 + (c - '0');
  value *= kMicroPerUsdc;
  MicroUsdc scale = kMicroPerUsdc;
  for (char c : frac) {
    scale /= 10;
    value += (c - '0') * scale;
  }
  return value;
}

Result<MicroUsdc> parse_rate(std::string_view text, std::string_view what) {
  auto amount = parse_usdc(text, what);
  if (!amount) return amount;
  const std::string name(what);
  if (*amount <= 0) return money_error(name + " must be above 0", "rate_out_of_range");
  if (*amount > kMaxRatePerGpuHour) {
    return money_error(name + " must be at most 1,000 USDC per GPU-hour", "rate_out_of_range");
  }
  return amount;
}

std::string format_usdc(MicroUsdc amount) {
  const bool negative = amount < 0;
  // Work in unsigned so that the most negative value does not overflow on negation.
  std::uint64_t magnitude = negative ? std::uint64_t{0} - static_cast<std::uint64_t>(amount)
                                     : static_cast<std::uint64_t>(amount);
  // Digits from the right: six decimals, the point, then at least one integer digit.
  char buf[32];
  char* p = buf + sizeof buf;
  for (int i = 0; i < 6; ++i, magnitude /= 10) *--p = static_cast<char>('0' + magnitude % 10);
  *--p = '.';
  do {
    *--p = static_cast<char>('0' + magnitude % 10);
    magnitude /= 10;
  } while (magnitude != 0);
  if (negative) *--p = '-';
  return std::string(p, buf + sizeof buf);
}

}  // namespace gpunex::core
