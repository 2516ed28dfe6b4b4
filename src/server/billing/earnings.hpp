#pragma once
// The provider's earnings tracker (GET /v1/provider/earnings, issue #18): what settlements credited
// to the provider's earnings account (the ledger), plus the live accrual of its running rentals,
// marked as not settled yet, grouped by day, GPU, model or machine (core/earnings.hpp).

#include <cstdint>
#include <string>

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

//! {from, to, group_by, currency, total, settled, unsettled, groups: [{key, settled, unsettled,
//! total}], today, last_7_days, last_30_days, balance, pending_payout}.
nlohmann::json provider_earnings(store::Tx& tx, const std::string& provider_id, const EarningsQuery& query,
                                 const core::payout::Minimums& minimums, std::int64_t now_ms);

}  // namespace gpunex::server::billing
