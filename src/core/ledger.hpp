#pragma once
// The money rules (DESIGN §4): a double-entry ledger in integer micro-USDC. Pure: no I/O. The store
// keeps the transactions (billing/ledger_repo); these functions decide what a transaction is and
// whether it may be posted.
//
// Sign convention: an entry's amount is what it adds to its account. Every transaction sums to
// zero, so the whole ledger sums to zero: money that arrives is taken from `money_in` (which goes
// negative by everything ever paid in) and money that leaves goes to `money_out`. A customer's
// balance, a provider's earnings and the platform's commission are the sums of their entries.
// Transactions are immutable; a correction is a new transaction.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/money.hpp"
#include "core/result.hpp"

namespace gpunex::core::ledger {

enum class AccountKind {
  customer_balance,     // owner: the customer's user id
  provider_earnings,    // owner: the provider id
  platform_commission,  // no owner
  money_in,             // no owner: every credit, deposit or top-up comes from here
  money_out,            // no owner: every payout goes here
  payouts_in_flight,    // no owner: payouts created and not yet confirmed paid (or returned)
};

struct Account {
  AccountKind kind = AccountKind::platform_commission;
  std::string owner;  // empty for the platform's own accounts

  static Account customer(std::string user_id) { return {AccountKind::customer_balance, std::move(user_id)}; }
  static Account provider(std::string provider_id) { return {AccountKind::provider_earnings, std::move(provider_id)}; }
  static Account commission() { return {AccountKind::platform_commission, {}}; }
  static Account incoming() { return {AccountKind::money_in, {}}; }
  static Account outgoing() { return {AccountKind::money_out, {}}; }
  static Account in_flight() { return {AccountKind::payouts_in_flight, {}}; }

  friend bool operator==(const Account&, const Account&) = default;
  friend auto operator<=>(const Account&, const Account&) = default;
};

//! "customer:usr_1", "provider:prv_1", "platform:commission", "platform:money_in", "platform:money_out",
//! "platform:payouts_in_flight": the account's name in the store and the API.
std::string account_name(const Account& a);
Result<Account> parse_account(std::string_view name);

//! Why a transaction was posted.
enum class TxKind {
  credit,      // an operator adds customer credit (money_in → customer)
  settlement,  // usage of a rental (customer → provider + commission)
  payout,         // a payout: provider earnings → in flight, then in flight → money_out once paid
  payout_return,  // a payout that failed or came back: in flight → the provider's earnings again
  correction,     // an operator's correction of an earlier transaction
};
std::string_view to_string(TxKind k);
Result<TxKind> parse_tx_kind(std::string_view s);

struct Entry {
  Account account;
  MicroUsdc amount = 0;  // what it adds to the account; never 0
};

struct Transaction {
  std::string id;
  TxKind kind = TxKind::credit;
  std::string actor;      // who posted it: a user id, or "system:<worker>"
  std::string reason;     // in words, for the history
  std::string reference;  // the outside reference (an operator's payment reference, a rental id)
  std::int64_t at_ms = 0;
  std::vector<Entry> entries;
};

//! A transaction may be posted when it has at least two entries, none of them zero, all on
//! well-formed accounts (owner present exactly for customer and provider accounts), and its
//! entries sum to zero without overflow. The error names what is wrong.
Status check_balanced(const Transaction& tx);

//! An operator's credit to a customer: money_in → customer. `amount` must be above zero.
Result<Transaction> credit(std::string id, const std::string& customer_id, MicroUsdc amount, std::string actor,
                           std::string reference, std::int64_t at_ms);

// ---- usage and settlement ----

//! Commission in basis points (2000 = 20%), an operator setting.
using BasisPoints = std::int32_t;
inline constexpr BasisPoints kDefaultCommission = 2000;

//! What a rental owes in total after `elapsed_ms` of running on `gpus` GPUs at `rate_per_gpu_hour`,
//! rounded down to the micro-USDC. Rounding happens here, on the running total, never per piece, so
//! however often a rental is settled the sum of its settlements is this one figure.
MicroUsdc usage_total(MicroUsdc rate_per_gpu_hour, int gpus, std::int64_t elapsed_ms);

//! The provider's share of a total charge: charge × (1 − commission), rounded down; the remainder
//! (at most one micro-USDC per rounding) is the platform's.
MicroUsdc provider_share(MicroUsdc charge, BasisPoints commission);

//! What has been settled so far for one rental.
struct Settled {
  MicroUsdc charged = 0;   // taken from the customer
  MicroUsdc provider = 0;  // given to the provider
};

//! The settlement that brings a rental from `before` to its total at `elapsed_ms`: the customer pays
//! the difference of the totals, the provider gets the difference of its shares of the totals, the
//! platform the rest. Nothing (entries empty) when there is nothing new to settle. When the total is
//! below what was settled (a settlement ran ahead of the end the agent reported later), the
//! differences are negative: the transaction gives the difference back, so the sum of a rental's
//! settlements is always its total at its end.
struct SettlementPlan {
  MicroUsdc charge = 0;
  MicroUsdc provider = 0;
  MicroUsdc commission = 0;
  Settled after;
};
SettlementPlan plan_settlement(MicroUsdc rate_per_gpu_hour, int gpus, std::int64_t elapsed_ms, BasisPoints commission,
                               const Settled& before);

//! The ledger transaction of a settlement plan (kind settlement, reference the rental id).
Transaction settlement_transaction(std::string id, const SettlementPlan& plan, const std::string& customer_id,
                                   const std::string& provider_id, const std::string& rental_id, std::int64_t at_ms);

//! How many whole hours `balance` lasts at `spend_per_hour` (for "about N hours left"); -1 when
//! nothing is being spent.
std::int64_t hours_left(MicroUsdc balance, MicroUsdc spend_per_hour);

//! A customer is warned once when their running rentals will use their available balance up within
//! kLowBalanceWarnMs (then they are stopped, balance_exhausted), and warned again only after it has lasted
//! that long or more since (a top-up, a rental stopped) or nothing ran: one warning per fall, not one each
//! round of the rentals worker. Time only lowers what is available, so only such an event lifts it back.
inline constexpr std::int64_t kLowBalanceWarnMs = 3'600'000;
enum class LowBalance { none, warn, rearm };
//! What to do now: `warned` says a warning stands from before.
LowBalance low_balance(MicroUsdc available, MicroUsdc spend_per_hour, bool warned);
//! Whole minutes `available` lasts at `spend_per_hour` (0 when it is used up); -1 when nothing is spent.
std::int64_t minutes_left(MicroUsdc available, MicroUsdc spend_per_hour);

// ---- payouts (DESIGN §3.11): earnings → in flight → paid out, or back to the provider ----

//! A payout created by a run: `amount` leaves the provider's earnings for payouts_in_flight.
Result<Transaction> payout_started(std::string id, const std::string& provider_id, MicroUsdc amount,
                                   const std::string& payout_id, std::int64_t at_ms);
//! The payout confirmed (on chain, or by the bank): in flight → money_out.
Result<Transaction> payout_paid(std::string id, MicroUsdc amount, const std::string& payout_id, std::int64_t at_ms);
//! The payout failed for good or was returned: in flight → the provider's earnings, with why.
Result<Transaction> payout_returned(std::string id, const std::string& provider_id, MicroUsdc amount,
                                    const std::string& payout_id, std::string reason, std::int64_t at_ms);
//! A bank transfer returned after it was marked paid (a SEPA return comes days later): the money came back,
//! money_out → the provider's earnings, with why.
Result<Transaction> paid_payout_returned(std::string id, const std::string& provider_id, MicroUsdc amount,
                                         const std::string& payout_id, std::string reason, std::int64_t at_ms);

// ---- an in-memory ledger: the rules applied to a sequence of transactions ----

//! Posts checked transactions and keeps the balances, for tests and for replaying a ledger read from
//! the store to verify it. A transaction that fails check_balanced() or reuses an id is refused and
//! changes nothing.
class Book {
 public:
  Status post(const Transaction& tx);
  MicroUsdc balance(const Account& a) const;
  //! The sum over every account; zero whenever the book is consistent.
  MicroUsdc total() const;
  std::size_t transactions() const { return ids_.size(); }
  std::size_t entries() const { return entries_; }
  const std::map<Account, MicroUsdc>& balances() const { return balances_; }

 private:
  std::map<Account, MicroUsdc> balances_;
  std::map<std::string, bool> ids_;
  std::size_t entries_ = 0;
};

}  // namespace gpunex::core::ledger
