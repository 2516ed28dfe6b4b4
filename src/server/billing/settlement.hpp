#pragma once
// Usage into money (issue #16): rentals are metered per second from the agent's running event to
// their end, and settled into the ledger at least hourly while they run and once more as they end.
// Each settlement is one ledger transaction (customer → provider earnings + platform commission)
// written in the same store transaction as the rental's settled totals, and keyed by the rental's
// running total: a settlement repeated after a crash finds its key taken and posts nothing, and
// rounding happens once, on the running total (core/ledger.hpp), so nothing is lost either.
//
// A round of the rentals worker also stops what must stop: max_duration, window_ended and
// balance_exhausted (core::rental::due_stop), and agent_lost for a machine silent longer than
// core::rental::kAgentLostAfterMs.

#include <cstdint>
#include <string>

#include "core/money.hpp"
#include "server/rentals/rentals_repo.hpp"
#include "store/store.hpp"

namespace gpunex::server::billing {

//! Posts what the rental owes beyond its settlements, up to its end (ended) or `now_ms`, and records
//! the new totals. Nothing when nothing is owed (a rental that never ran is never charged).
void settle(store::Tx& tx, const rentals::RentalRow& r, std::int64_t now_ms);

//! The customer's balance less what their rentals have used and not yet settled: what a new rental's
//! first hour is checked against, and what the balance page shows as available.
core::MicroUsdc available_balance(store::Tx& tx, const std::string& customer_id, std::int64_t now_ms);

//! What a new rental's first hour is checked against, from one read of the customer's live rentals: the
//! available balance, and the part of it their other rentals hold for their own first hours.
struct StartingBalance {
  core::MicroUsdc available = 0;
  core::MicroUsdc held = 0;
};
StartingBalance starting_balance(store::Tx& tx, const std::string& customer_id, std::int64_t now_ms);

struct RentalsRoundSettings {
  std::int64_t settle_interval_ms = 3'600'000;
  std::string base_url;  // links in what customers are told (a rental ended: rentals::tell_customer_ended)
  std::string payment_instructions;  // how to add credit, as the operator wrote it (a low-balance warning)
  //! Since when the rentals worker has been watching without a break (workers::Watching): a machine's
  //! silence counts from then, so the platform's own outage never loses a rental's agent.
  std::int64_t watching_since_ms = 0;
};
struct RentalsRound {
  std::size_t settled = 0;
  std::size_t stops = 0;
  std::size_t lost = 0;
  std::size_t balance_warnings = 0;
  std::size_t failed = 0;  // rentals whose round threw (logged); the others' went on
};
//! One round of the rentals worker over every live rental, each in a transaction of its own; then each
//! customer with a live rental or a standing warning, in one of their own, is warned when their running
//! rentals will use the balance up within the hour (core::ledger::low_balance), or has the warning lifted.
RentalsRound run_rentals_round(store::Store& store, const RentalsRoundSettings& settings, std::int64_t now_ms);

}  // namespace gpunex::server::billing
