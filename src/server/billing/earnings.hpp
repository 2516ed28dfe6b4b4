#pragma once
// The provider's earnings tracker (GET /v1/provider/earnings, issue #18): what settlements credited
// to the provider's earnings account (the ledger), plus the live accrual of its running rentals,
// marked as not settled yet, grouped by day, GPU, model or machine (core/earnings.hpp), as JSON or
// as CSV for a spreadsheet.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <date/date.h>
#include <nlohmann/json.hpp>

#include "core/earnings.hpp"
#include "core/payout_calendar.hpp"
#include "store/store.hpp"

namespace gpunex::server::billing {

struct EarningsQuery {
  std::int64_t from_ms = 0;
  std::int64_t to_ms = 0;  // exclusive
  core::earnings::GroupBy by = core::earnings::GroupBy::day;
};

//! The payout settings in force for the provider (server/payouts), as the tracker needs them: the
//! schedule picks the day and the minimum, the method the business days (SEPA skips TARGET2
//! closing days). No method chosen yet: weekly, and the calendar of a wallet payout.
//! What a provider paid in USDC is told while the server has no Solana hot wallet (their runs are held).
inline constexpr const char* kUsdcPayoutsHeld =
    "USDC payouts are held: the operator has not set up the Solana wallet they are paid from yet. Your "
    "earnings stay with you and go out once it is (or choose a SEPA bank transfer).";

struct PayoutPlan {
  core::payout::Schedule schedule = core::payout::Schedule::weekly;
  std::optional<core::payout::Method> method;
  core::payout::Minimums minimums;
  // When today is a payout day (payouts' side): whether today's run has paid this provider, and what it
  // pays if not (earned before today's cut-off).
  bool paid_today = false;
  core::MicroUsdc payable_today = 0;
  //! Whether this server pays USDC on Solana (a node and hot wallet configured); when not, USDC payout
  //! runs are held and the provider is told so.
  bool usdc_payouts_configured = true;
};

//! The figures of the tracker, before they are written as JSON or CSV.
struct EarningsReport {
  EarningsQuery query;
  core::MicroUsdc settled = 0, unsettled = 0;
  std::vector<core::earnings::Group> groups;
  core::MicroUsdc today = 0, last_7_days = 0, last_30_days = 0;
  std::int64_t period_from_ms = 0;  // the payout period's start: this week's Monday, or this month's first day
  core::MicroUsdc this_period = 0;  // earned since then, running rentals included
  core::MicroUsdc balance = 0;  // earned and not paid out
  PayoutPlan plan;
  core::payout::Pending pending;  // the next payout: its day and amount (core::payout::pending_payout)
};

EarningsReport provider_earnings(store::Tx& tx, const std::string& provider_id, const EarningsQuery& query,
                                 const PayoutPlan& plan, std::int64_t now_ms);

//! {from, to, group_by, currency, total, settled, unsettled, groups: [{key, settled, unsettled,
//! total}], today, last_7_days, last_30_days, this_period: {from, amount}, balance, pending_payout: {schedule, method,
//! next_date, amount, minimum, above_minimum}}.
nlohmann::json to_json(const EarningsReport& report);

//! The groups as CSV (RFC 4180, CRLF): a header `<group_by>,settled_usdc,unsettled_usdc,total_usdc`
//! and one row per group in the JSON's order, amounts in USDC with 6 decimals.
std::string to_csv(const EarningsReport& report);
//! "gpunex-earnings-2026-11-04-2026-12-04-by-day.csv": the range's first and last days.
std::string csv_file_name(const EarningsReport& report);

}  // namespace gpunex::server::billing
