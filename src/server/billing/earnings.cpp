#include "server/billing/earnings.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <string_view>

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

//! A CSV cell: quoted when it holds a comma, a quote or a line break; one that a spreadsheet would
//! read as a formula (=, +, -, @ first) gets a leading apostrophe.
std::string csv_field(const std::string& s) {
  std::string v = s;
  if (!v.empty() && std::string_view("=+-@").find(v.front()) != std::string_view::npos) v.insert(0, "'");
  if (v.find_first_of(",\"\r\n") == std::string::npos) return v;
  std::string q = "\"";
  for (char c : v) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string day_of(std::int64_t ms) {
  return date::format(
      "%F", date::floor<date::days>(date::sys_time<std::chrono::milliseconds>(std::chrono::milliseconds(ms))));
}

}  // namespace

EarningsReport provider_earnings(store::Tx& tx, const std::string& provider_id, const EarningsQuery& query,
                                 const PayoutPlan& plan, std::int64_t now_ms) {
  EarningsReport report;
  report.query = query;
  report.plan = plan;
  const auto in_range = earnings_between(tx, provider_id, query.from_ms, query.to_ms, now_ms);
  for (const auto& e : in_range) (e.settled ? report.settled : report.unsettled) += e.amount;
  report.groups = core::earnings::group(in_range, query.by);
  // Today, the last 7 and 30 days and the payout period so far (a week, or a month: up to 31 days), whatever
  // the range asked, from one read back to the earliest of them.
  const auto today_day =
      date::floor<date::days>(date::sys_time<std::chrono::milliseconds>(std::chrono::milliseconds(now_ms)));
  const std::int64_t today = core::payout::cutoff_ms(today_day);
  report.period_from_ms = core::payout::cutoff_ms(core::payout::period_start(plan.schedule, today_day));
  const auto recent =
      earnings_between(tx, provider_id, std::min(today - 29 * kDayMs, report.period_from_ms), now_ms + 1, now_ms);
  report.today = core::earnings::sum_since(recent, today);
  report.last_7_days = core::earnings::sum_since(recent, today - 6 * kDayMs);
  report.last_30_days = core::earnings::sum_since(recent, today - 29 * kDayMs);
  report.this_period = core::earnings::sum_since(recent, report.period_from_ms);
  // What the provider has earned and not been paid: the earnings account's balance (payouts take from it).
  report.balance = billing::balance(tx, ledger::Account::provider(provider_id));
  report.pending = core::payout::pending_payout(
      plan.schedule, plan.method.value_or(core::payout::Method::solana_usdc),
      date::floor<date::days>(date::sys_time<std::chrono::milliseconds>(std::chrono::milliseconds(now_ms))),
      report.balance, plan.payable_today, plan.paid_today, plan.minimums);
  return report;
}

nlohmann::json to_json(const EarningsReport& r) {
  auto groups = nlohmann::json::array();
  for (const auto& g : r.groups) {
    groups.push_back({{"key", g.key},
                      {"settled", core::format_usdc(g.settled)},
                      {"unsettled", core::format_usdc(g.unsettled)},
                      {"total", core::format_usdc(g.total())}});
  }
  const auto schedule = r.plan.schedule;
  return {{"from", util::rfc3339(r.query.from_ms)},
          {"to", util::rfc3339(r.query.to_ms)},
          {"group_by", core::earnings::to_string(r.query.by)},
          {"currency", "USDC"},
          {"total", core::format_usdc(r.settled + r.unsettled)},
          {"settled", core::format_usdc(r.settled)},
          {"unsettled", core::format_usdc(r.unsettled)},
          {"groups", std::move(groups)},
          {"today", core::format_usdc(r.today)},
          {"last_7_days", core::format_usdc(r.last_7_days)},
          {"last_30_days", core::format_usdc(r.last_30_days)},
          {"this_period", {{"from", util::rfc3339(r.period_from_ms)}, {"amount", core::format_usdc(r.this_period)}}},
          {"balance", core::format_usdc(r.balance)},
          {"pending_payout",
           {{"schedule", core::payout::to_string(schedule)},
            {"method", r.plan.method ? nlohmann::json(core::payout::to_string(*r.plan.method)) : nlohmann::json()},
            {"next_date", date::format("%F", r.pending.day)},
            {"amount", core::format_usdc(r.pending.amount)},
            {"minimum", core::format_usdc(core::payout::minimum(schedule, r.plan.minimums))},
            {"above_minimum", core::payout::pays(schedule, r.pending.amount, r.plan.minimums)},
            // Why it will not go out on its day, though due: said, so that a provider is not left waiting.
            {"held_reason", r.plan.method == core::payout::Method::solana_usdc && !r.plan.usdc_payouts_configured
                                ? nlohmann::json(kUsdcPayoutsHeld)
                                : nlohmann::json(nullptr)}}}};
}

std::string to_csv(const EarningsReport& r) {
  std::string out = std::string(core::earnings::to_string(r.query.by)) + ",settled_usdc,unsettled_usdc,total_usdc\r\n";
  for (const auto& g : r.groups) {
    out += csv_field(g.key) + "," + core::format_usdc(g.settled) + "," + core::format_usdc(g.unsettled) + "," +
           core::format_usdc(g.total()) + "\r\n";
  }
  return out;
}

std::string csv_file_name(const EarningsReport& r) {
  return "gpunex-earnings-" + day_of(r.query.from_ms) + "-" + day_of(r.query.to_ms - 1) + "-by-" +
         std::string(core::earnings::to_string(r.query.by)) + ".csv";
}

}  // namespace gpunex::server::billing
