#include "server/billing/earnings.hpp"

#include <map>
#include <optional>

#include "core/ledger.hpp"
#include "core/rental.hpp"
#include "server/billing/ledger_repo.hpp"
#include "server/rentals/rentals.hpp"
#include "util/time.hpp"

namespace gpunex::server::billing {

namespace {

namespace ledger = core::ledger;
using core::earnings::Earning;

constexpr std::int64_t kDayMs = 86'400'000;

//! The settlements' provider shares in [from, to) and the running rentals' unsettled accrual (at now,
//! when now is in the range).
std::vector<Earning> earnings_between(store::Tx& tx, const std::string& provider_id, std::int64_t from_ms,
                                      std::int64_t to_ms, std::int64_t now_ms) {
  std::vector<Earning> out;
  std::map<std::string, std::optional<rentals::RentalRow>> rentals_by_id;
  auto rental_of = [&](const std::string& id) -> const std::optional<rentals::RentalRow>& {
    auto it = rentals_by_id.find(id);
    if (it == rentals_by_id.end()) it = rentals_by_id.emplace(id, rentals::find(tx, id)).first;
    return it->second;
  };
  for (const auto& line :
       history_between(tx, ledger::Account::provider(provider_id), ledger::TxKind::settlement, from_ms, to_ms)) {
    const auto& r = rental_of(line.reference);
    Earning e{line.at_ms, line.amount, true, line.reference, "", "", {}};
    if (r) {
      e.machine_id = r->machine_id;
      e.model = r->model;
      e.gpus = r->gpu_uuids;
    }
    out.push_back(std::move(e));
  }
  if (now_ms >= from_ms && now_ms < to_ms) {
    for (const auto& r : rentals::list_for_provider(tx, provider_id)) {
      if (r.state == core::rental::State::ended || !r.running_since_ms) continue;
      const auto accrued = ledger::provider_share(rentals::cost_so_far(r, now_ms), r.commission) - r.settled.provider;
      if (accrued > 0) out.push_back(Earning{now_ms, accrued, false, r.id, r.machine_id, r.model, r.gpu_uuids});
    }
  }
  return out;
}

}  // namespace

nlohmann::json provider_earnings(store::Tx& tx, const std::string& provider_id, const EarningsQuery& query,
                                 const core::payout::Minimums& minimums, std::int64_t now_ms) {
  const auto in_range = earnings_between(tx, provider_id, query.from_ms, query.to_ms, now_ms);
  core::MicroUsdc settled = 0, unsettled = 0;
  for (const auto& e : in_range) (e.settled ? settled : unsettled) += e.amount;
  auto groups = nlohmann::json::array();
  for (const auto& g : core::earnings::group(in_range, query.by)) {
    groups.push_back({{"key", g.key},
                      {"settled", core::format_usdc(g.settled)},
                      {"unsettled", core::format_usdc(g.unsettled)},
                      {"total", core::format_usdc(g.total())}});
  }
  // Today and the last 7 and 30 days, whatever the range asked.
  const std::int64_t today = now_ms - now_ms % kDayMs;
  const auto recent = earnings_between(tx, provider_id, today - 29 * kDayMs, now_ms + 1, now_ms);
  // What the provider has earned and not been paid: the earnings account's balance (payouts take from it).
  const auto balance = billing::balance(tx, ledger::Account::provider(provider_id));
  const auto schedule = core::payout::Schedule::weekly;  // until the provider chooses (payout settings)
  const date::sys_days next_day = core::payout::next_payout_day(
      schedule, core::payout::Method::solana_usdc,
      date::floor<date::days>(date::sys_time<std::chrono::milliseconds>(std::chrono::milliseconds(now_ms))));
  return {{"from", util::rfc3339(query.from_ms)},
          {"to", util::rfc3339(query.to_ms)},
          {"group_by", core::earnings::to_string(query.by)},
          {"currency", "USDC"},
          {"total", core::format_usdc(settled + unsettled)},
          {"settled", core::format_usdc(settled)},
          {"unsettled", core::format_usdc(unsettled)},
          {"groups", std::move(groups)},
          {"today", core::format_usdc(core::earnings::sum_since(recent, today))},
          {"last_7_days", core::format_usdc(core::earnings::sum_since(recent, today - 6 * kDayMs))},
          {"last_30_days", core::format_usdc(core::earnings::sum_since(recent, today - 29 * kDayMs))},
          {"balance", core::format_usdc(balance)},
          {"pending_payout",
           {{"schedule", core::payout::to_string(schedule)},
            {"next_date", date::format("%F", next_day)},
            {"amount", core::format_usdc(balance)},
            {"minimum", core::format_usdc(core::payout::minimum(schedule, minimums))},
            {"above_minimum", core::payout::pays(schedule, balance, minimums)}}}};
}

}  // namespace gpunex::server::billing
