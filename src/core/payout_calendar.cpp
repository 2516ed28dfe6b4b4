#include "core/payout_calendar.hpp"

#include <algorithm>

namespace gpunex::core::payout {

using namespace date;

std::string_view to_string(Schedule s) {
  return s == Schedule::weekly ? "weekly" : "monthly";
}

Result<Schedule> parse_schedule(std::string_view s) {
  if (s == "weekly") return Schedule::weekly;
  if (s == "monthly") return Schedule::monthly;
  return Error::make(ErrorCode::invalid_field, "schedule must be weekly (Mondays) or monthly (first business day)",
                     "schedule");
}

std::string_view to_string(Method m) {
  return m == Method::solana_usdc ? "solana_usdc" : "sepa";
}

Result<Method> parse_method(std::string_view s) {
  if (s == "solana_usdc") return Method::solana_usdc;
  if (s == "sepa") return Method::sepa;
  return Error::make(ErrorCode::invalid_field, "method must be solana_usdc or sepa", "method");
}

year_month_day easter_sunday(year y) {
  const int Y = static_cast<int>(y);
  const int a = Y % 19, b = Y / 100, c = Y % 100, d = b / 4, e = b % 4;
  const int f = (b + 8) / 25, g = (b - f + 1) / 3, h = (19 * a + b - d - g + 15) % 30;
  const int i = c / 4, k = c % 4, l = (32 + 2 * e + 2 * i - h - k) % 7;
  const int m = (a + 11 * h + 22 * l) / 451;
  const int month = (h + l - 7 * m + 114) / 31;
  const int day = ((h + l - 7 * m + 114) % 31) + 1;
  return year_month_day{y, date::month(static_cast<unsigned>(month)), date::day(static_cast<unsigned>(day))};
}

bool target2_closed(sys_days day) {
  const year_month_day ymd{day};
  const auto m = ymd.month();
  const auto d = ymd.day();
  if ((m == January && d == date::day(1)) || (m == May && d == date::day(1)) ||
      (m == December && (d == date::day(25) || d == date::day(26)))) {
    return true;
  }
  const sys_days easter{easter_sunday(ymd.year())};
  return day == easter - days(2) || day == easter + days(1);
}

bool business_day(sys_days day, Method method) {
  const weekday wd{day};
  if (wd == Saturday || wd == Sunday) return false;
  return method != Method::sepa || !target2_closed(day);
}

namespace {

sys_days first_business_day(year_month ym, Method method) {
  sys_days d{ym / 1};
  while (!business_day(d, method)) d += days(1);
  return d;
}

}  // namespace

sys_days next_payout_day(Schedule schedule, Method method, sys_days from) {
  if (schedule == Schedule::weekly) {
    // The Monday of `from`'s week, or for SEPA the first business day from it (Easter Monday: Tuesday).
    const auto pay_day = [&](sys_days monday) {
      while (!business_day(monday, method)) monday += days(1);
      return monday;
    };
    const sys_days this_week = from - (weekday{from} - Monday);  // weekday difference: 0..6 days back
    if (const sys_days d = pay_day(this_week); d >= from) return d;
    return pay_day(this_week + weeks(1));
  }
  const year_month ym = year_month_day{from}.year() / year_month_day{from}.month();
  const sys_days here = first_business_day(ym, method);
  if (here >= from) return here;
  return first_business_day(ym + months(1), method);
}

sys_days period_start(Schedule schedule, sys_days today) {
  if (schedule == Schedule::weekly) return today - (weekday{today} - Monday);
  const year_month_day ymd{today};
  return sys_days{ymd.year() / ymd.month() / 1};
}

std::int64_t cutoff_ms(sys_days payout_day) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(payout_day.time_since_epoch()).count();
}

MicroUsdc minimum(Schedule schedule, const Minimums& minimums) {
  return schedule == Schedule::weekly ? minimums.weekly : minimums.monthly;
}

bool pays(Schedule schedule, MicroUsdc amount, const Minimums& minimums) {
  return amount > 0 && amount >= minimum(schedule, minimums);
}

Pending pending_payout(Schedule schedule, Method method, sys_days today, MicroUsdc balance, MicroUsdc payable_today,
                       bool paid_today, const Minimums& minimums) {
  const sys_days next = next_payout_day(schedule, method, today);
  if (next != today) return {next, balance};
  const MicroUsdc now_payable = std::min(payable_today, balance);
  if (!paid_today && pays(schedule, now_payable, minimums)) return {today, now_payable};
  return {next_payout_day(schedule, method, today + days(1)), balance};
}

}  // namespace gpunex::core::payout
