#include "server/billing/settlement.hpp"

#include <chrono>
#include <set>

#include "core/ledger.hpp"
#include "core/rental.hpp"
#include "core/rental_spec.hpp"
#include "core/schedule.hpp"
#include "server/billing/ledger_repo.hpp"
#include "server/fleet/machines_repo.hpp"
#include "server/fleet/schedules.hpp"
#include "server/mail/templates.hpp"
#include "server/platform/notifications.hpp"
#include "server/rentals/rentals.hpp"
#include "util/crypto.hpp"
#include "util/log.hpp"

namespace gpunex::server::billing {

namespace {

namespace ledger = core::ledger;
namespace rental = core::rental;

//! Where the machine's schedule stands at `now_ms`: outside its availability, and in maintenance.
struct WindowNow {
  bool outside = false;
  bool maintenance = false;
};
WindowNow window_now(store::Tx& tx, const std::string& machine_id, std::int64_t now_ms) {
  const auto schedule = load_schedule(tx, machine_id);
  if (!schedule) return {};
  const core::UtcTime t{std::chrono::seconds{now_ms / 1000}};
  return {!core::is_available(*schedule, t), core::in_maintenance(*schedule, t)};
}

//! One live rental's round: lost agent, due stops, hourly settlement. True for each thing done.
void round_for(store::Tx& tx, const std::string& id, const RentalsRoundSettings& settings, std::int64_t now_ms,
               RentalsRound& out) {
  auto r = rentals::find_for_update(tx, id);
  if (!r || r->state == rental::State::ended) return;
  const auto last_seen = MachinesRepo(tx).last_seen_ms(r->machine_id);
  const std::int64_t seen = std::max(last_seen.value_or(r->created_at_ms), r->created_at_ms);
  // Silent for the platform only while it was watching: an agent that could not reach a platform that
  // was down is not lost (it keeps the container running and comes back within kAgentRetryMaxMs).
  if (now_ms - std::max(seen, settings.watching_since_ms) > rental::kAgentLostAfterMs) {
    // Metered up to the machine's last sign of life, not the moment the platform gave up on it.
    rentals::end_now(tx, *r, rental::EndReason::agent_lost, std::max(seen, r->running_since_ms.value_or(seen)));
    settle(tx, *rentals::find(tx, id), now_ms);
    rentals::tell_customer_ended(tx, *rentals::find(tx, id), settings.base_url, now_ms);
    ++out.lost;
    return;
  }
  if (!r->running_since_ms) return;
  if (r->state == rental::State::running) {
    rental::Running run;
    run.running_since_ms = *r->running_since_ms;
    run.max_duration_ms = rentals::max_duration_ms(*r);
    if (const auto w = window_now(tx, r->machine_id, now_ms); w.outside) {
      run.window_ends_ms = now_ms;
      run.in_maintenance = w.maintenance;
    }
    run.promised_until_ms = r->promised_until_ms;
    run.price_per_gpu_hour = r->price;
    run.gpus = r->gpu_count;
    // The balance this rental may still spend: the ledger's, less what the customer's other rentals owe.
    run.balance_at_last_settlement = available_balance(tx, r->customer_id, now_ms) + rentals::unsettled(*r, now_ms);
    run.settled = r->settled;
    if (auto due = rental::due_stop(run, now_ms)) {
      rentals::request_stop(tx, r->id, *due, now_ms);
      util::log_event("info", "rental stop due", {{"rental", r->id}, {"reason", rental::to_string(*due)}});
      ++out.stops;
      settle(tx, *rentals::find(tx, id), now_ms);
      ++out.settled;
      return;
    }
  }
  if (now_ms - r->last_settled_at_ms.value_or(*r->running_since_ms) >= settings.settle_interval_ms) {
    settle(tx, *r, now_ms);
    ++out.settled;
  }
}

//! One customer's low-balance check (core::ledger::low_balance): warned, lifted, or left; answers which.
//! (Not a bool: Store::transact rolls back a transaction whose function answers false.)
ledger::LowBalance check_low_balance(store::Tx& tx, const std::string& customer_id, bool warned,
                                     const RentalsRoundSettings& settings, std::int64_t now_ms) {
  const auto accrual = rentals::customer_accrual(tx, customer_id, now_ms);
  const auto available = balance(tx, ledger::Account::customer(customer_id)) - accrual.unsettled;
  // Only what goes on running spends on: rentals asked to stop (by the customer, or just now for the balance)
  // neither need a warning nor shorten the time left.
  const auto per_hour = accrual.running_per_hour;
  const auto due = ledger::low_balance(available, per_hour, warned);
  if (due == ledger::LowBalance::rearm) lift_balance_warning(tx, customer_id);
  if (due != ledger::LowBalance::warn) return due;
  if (!record_balance_warning(tx, customer_id, now_ms)) return ledger::LowBalance::none;
  mail::BalanceLowFacts facts;
  facts.minutes_left = ledger::minutes_left(available, per_hour);
  facts.available_text = core::format_usdc(std::max<core::MicroUsdc>(available, 0));
  facts.per_hour_text = core::format_usdc(per_hour);
  facts.payment_instructions = settings.payment_instructions;
  facts.link = settings.base_url + "/#/balance";
  announce(tx, customer_id, mail::balance_low(facts), std::nullopt, now_ms);
  util::log_event("info", "balance low", {{"customer", customer_id}, {"minutes_left", facts.minutes_left}});
  return due;
}

}  // namespace

void settle(store::Tx& tx, const rentals::RentalRow& r, std::int64_t now_ms) {
  const std::int64_t until = rentals::metered_until(r, now_ms);
  const auto elapsed = rental::metered_ms(r.running_since_ms, until);
  const auto plan = ledger::plan_settlement(r.price, r.gpu_count, elapsed, r.commission, r.settled);
  if (plan.charge == 0 && plan.provider == 0) {
    if (r.running_since_ms) rentals::record_settled(tx, r.id, r.settled, r.settled, now_ms);
    return;
  }
  const auto t = ledger::settlement_transaction(util::new_id("ltx"), plan, r.customer_id, r.provider_id, r.id, until);
  // Keyed by the move between running totals: the same settlement twice posts once.
  auto posted = post(tx, t,
                     "settle:" + r.id + ":" + std::to_string(r.settled.charged) + ">" + std::to_string(plan.after.charged));
  if (!posted) throw store::StoreError("a settlement did not post: " + posted.error().message);
  rentals::record_settled(tx, r.id, r.settled, plan.after, now_ms);
}

core::MicroUsdc available_balance(store::Tx& tx, const std::string& customer_id, std::int64_t now_ms) {
  return starting_balance(tx, customer_id, now_ms).available;
}

StartingBalance starting_balance(store::Tx& tx, const std::string& customer_id, std::int64_t now_ms) {
  const auto accrual = rentals::customer_accrual(tx, customer_id, now_ms);
  return {balance(tx, ledger::Account::customer(customer_id)) - accrual.unsettled, accrual.first_hour_held};
}

RentalsRound run_rentals_round(store::Store& store, const RentalsRoundSettings& settings, std::int64_t now_ms) {
  const auto live = store.transact([](store::Tx& tx) { return rentals::all_live(tx); }, store::TxMode::read);
  RentalsRound out;
  for (const auto& r : live) {
    // One rental that cannot be settled holds up none of the others (nor the lost agents' watch).
    try {
      store.transact([&](store::Tx& tx) { round_for(tx, r.id, settings, now_ms, out); });
    } catch (const std::exception& e) {
      ++out.failed;
      util::log_event("error", "rental round failed", {{"rental", r.id}, {"error", e.what()}});
    }
  }
  // After the stops: a customer whose rentals were just stopped for their balance is not warned too.
  std::set<std::string> warned;
  for (auto& c : store.transact([](store::Tx& tx) { return warned_customers(tx); }, store::TxMode::read)) {
    warned.insert(std::move(c));
  }
  std::set<std::string> customers = warned;
  for (const auto& r : live) customers.insert(r.customer_id);
  for (const auto& c : customers) {
    const auto done =
        store.transact([&](store::Tx& tx) { return check_low_balance(tx, c, warned.contains(c), settings, now_ms); });
    if (done == ledger::LowBalance::warn) ++out.balance_warnings;
  }
  return out;
}

}  // namespace gpunex::server::billing
