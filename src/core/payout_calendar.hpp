#pragma once
// When providers are paid (DESIGN §3.11, issue #18), pure: the payout day of a schedule, the
// cut-off of its run and the minimum it pays above. Weekly payouts are on Mondays (UTC); monthly
// ones on the first business day of the month, Monday to Friday, and for bank transfers (SEPA) not
// on a TARGET2 closing day (1 January, Good Friday, Easter Monday, 1 May, 25 and 26 December),
// when euro payments are not settled.

#include <cstdint>
#include <string_view>

#include <date/date.h>

#include "core/money.hpp"
#include "core/result.hpp"

namespace gpunex::core::payout {

enum class Schedule { weekly, monthly };
std::string_view to_string(Schedule s);
Result<Schedule> parse_schedule(std::string_view s);

enum class Method { solana_usdc, sepa };
std::string_view to_string(Method m);
Result<Method> parse_method(std::string_view s);

//! Easter Sunday of a Gregorian year (the anonymous Gregorian algorithm, "Meeus/Jones/Butcher").
date::year_month_day easter_sunday(date::year y);
//! Whether TARGET2, the euro settlement system, is closed that day.
bool target2_closed(date::sys_days day);
//! Monday to Friday, and for SEPA not a TARGET2 closing day.
bool business_day(date::sys_days day, Method method);

//! The first payout day on or after `from`: weekly, the next Monday (`from` itself when a Monday), for
//! SEPA the business day after a Monday TARGET2 is closed (Easter Monday: the Tuesday);
//! monthly, the first business day of `from`'s month when that is not before `from`, else of the
//! next month.
date::sys_days next_payout_day(Schedule schedule, Method method, date::sys_days from);
//! The first day of the payout period `today` is in: its week's Monday (weekly) or its month's first day
//! (monthly), UTC. A provider's "this period" counts from there.
date::sys_days period_start(Schedule schedule, date::sys_days today);
//! A run pays the earnings settled before its payout day starts (00:00 UTC), in epoch ms.
std::int64_t cutoff_ms(date::sys_days payout_day);

//! The least a run pays out (operator settings): below it the earnings wait for the next run.
struct Minimums {
  MicroUsdc weekly = 20'000'000;  // 20 USDC
  MicroUsdc monthly = 1'000'000;  // 1 USDC
};
MicroUsdc minimum(Schedule schedule, const Minimums& minimums);
//! Whether `amount` is paid at a run of `schedule`: above zero and at least the minimum.
bool pays(Schedule schedule, MicroUsdc amount, const Minimums& minimums);

//! The payout a provider is to get next: its day and what it pays as things stand.
struct Pending {
  date::sys_days day;
  MicroUsdc amount = 0;
};
//! On `today`, with `balance` earned and not paid out: today's payout when today is a payout day of the
//! schedule, its run has not paid yet (`paid_today`) and what was earned before today's cut-off
//! (`payable_today`, at most the balance) reaches the minimum; otherwise the next payout day's, which pays
//! the whole balance as it stands (today's earnings are after today's cut-off).
Pending pending_payout(Schedule schedule, Method method, date::sys_days today, MicroUsdc balance,
                       MicroUsdc payable_today, bool paid_today, const Minimums& minimums);

}  // namespace gpunex::core::payout
