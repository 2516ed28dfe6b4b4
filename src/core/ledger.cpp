#include "core/ledger.hpp"

#include <algorithm>
#include <limits>
#include <optional>

namespace gpunex::core::ledger {

namespace {

constexpr std::int64_t kMsPerHour = 3'600'000;
constexpr BasisPoints kWhole = 10'000;

Error invalid(std::string message) {
  return Error::make(ErrorCode::invalid_field, std::move(message));
}

bool has_owner(AccountKind k) {
  return k == AccountKind::customer_balance || k == AccountKind::provider_earnings;
}

}  // namespace

std::string account_name(const Account& a) {
  switch (a.kind) {
    case AccountKind::customer_balance:
      return "customer:" + a.owner;
    case AccountKind::provider_earnings:
      return "provider:" + a.owner;
    case AccountKind::platform_commission:
      return "platform:commission";
    case AccountKind::money_in:
      return "platform:money_in";
    case AccountKind::money_out:
      return "platform:money_out";
    case AccountKind::payouts_in_flight:
      return "platform:payouts_in_flight";
  }
  return "platform:unknown";
}

Result<Account> parse_account(std::string_view name) {
  if (name == "platform:commission") return Account::commission();
  if (name == "platform:money_in") return Account::incoming();
  if (name == "platform:money_out") return Account::outgoing();
  if (name == "platform:payouts_in_flight") return Account::in_flight();
  auto owned = [&](std::string_view prefix, AccountKind kind) -> std::optional<Account> {
    if (name.size() <= prefix.size() || name.substr(0, prefix.size()) != prefix) return std::nullopt;
    return Account{kind, std::string(name.substr(prefix.size()))};
  };
  if (auto a = owned("customer:", AccountKind::customer_balance)) return *a;
  if (auto a = owned("provider:", AccountKind::provider_earnings)) return *a;
  return invalid("unknown ledger account '" + std::string(name) + "'");
}

std::string_view to_string(TxKind k) {
  switch (k) {
    case TxKind::credit:
      return "credit";
    case TxKind::settlement:
      return "settlement";
    case TxKind::payout:
      return "payout";
    case TxKind::payout_return:
      return "payout_return";
    case TxKind::correction:
      return "correction";
  }
  return "unknown";
}

Result<TxKind> parse_tx_kind(std::string_view s) {
  for (auto k : {TxKind::credit, TxKind::settlement, TxKind::payout, TxKind::payout_return, TxKind::correction}) {
    if (to_string(k) == s) return k;
  }
  return invalid("unknown ledger transaction kind '" + std::string(s) + "'");
}

Status check_balanced(const Transaction& tx) {
  if (tx.entries.size() < 2) return invalid("a ledger transaction needs at least two entries");
  __int128 sum = 0;
  for (const auto& e : tx.entries) {
    if (e.amount == 0) return invalid("ledger entry on " + account_name(e.account) + " is zero");
    if (has_owner(e.account.kind) == e.account.owner.empty()) {
      return invalid("ledger account " + account_name(e.account) + " is malformed");
    }
    sum += e.amount;
  }
  if (sum != 0) return invalid("ledger transaction " + tx.id + " does not balance");
  return ok_status();
}

Result<Transaction> credit(std::string id, const std::string& customer_id, MicroUsdc amount, std::string actor,
                           std::string reference, std::int64_t at_ms) {
  if (amount <= 0) return Error::make(ErrorCode::invalid_field, "amount must be above zero", "amount");
  if (customer_id.empty()) return Error::make(ErrorCode::invalid_field, "a credit needs a customer", "customer");
  Transaction tx{std::move(id),
                 TxKind::credit,
                 std::move(actor),
                 "credit added by an operator",
                 std::move(reference),
                 at_ms,
                 {{Account::incoming(), -amount}, {Account::customer(customer_id), amount}}};
  return tx;
}

namespace {

Result<Transaction> moved(std::string id, TxKind kind, std::string reason, const std::string& payout_id,
                          std::int64_t at_ms, Account from, Account to, MicroUsdc amount) {
  if (amount <= 0) return Error::make(ErrorCode::invalid_field, "a payout's amount must be above zero", "amount");
  if (payout_id.empty()) return invalid("a payout transaction needs the payout's id");
  Transaction tx{std::move(id), kind,  "system:payouts", std::move(reason), payout_id, at_ms,
                 {{std::move(from), -amount}, {std::move(to), amount}}};
  if (auto st = check_balanced(tx); !st) return std::move(st).error();
  return tx;
}

}  // namespace

Result<Transaction> payout_started(std::string id, const std::string& provider_id, MicroUsdc amount,
                                   const std::string& payout_id, std::int64_t at_ms) {
  return moved(std::move(id), TxKind::payout, "payout " + payout_id + " on its way", payout_id, at_ms,
               Account::provider(provider_id), Account::in_flight(), amount);
}

Result<Transaction> payout_paid(std::string id, MicroUsdc amount, const std::string& payout_id, std::int64_t at_ms) {
  return moved(std::move(id), TxKind::payout, "payout " + payout_id + " paid", payout_id, at_ms, Account::in_flight(),
               Account::outgoing(), amount);
}

Result<Transaction> payout_returned(std::string id, const std::string& provider_id, MicroUsdc amount,
                                    const std::string& payout_id, std::string reason, std::int64_t at_ms) {
  return moved(std::move(id), TxKind::payout_return, "payout " + payout_id + " returned: " + reason, payout_id, at_ms,
               Account::in_flight(), Account::provider(provider_id), amount);
}

Result<Transaction> paid_payout_returned(std::string id, const std::string& provider_id, MicroUsdc amount,
                                         const std::string& payout_id, std::string reason, std::int64_t at_ms) {
  return moved(std::move(id), TxKind::payout_return, "payout " + payout_id + " returned after it was paid: " + reason,
               payout_id, at_ms, Account::outgoing(), Account::provider(provider_id), amount);
}

MicroUsdc usage_total(MicroUsdc rate_per_gpu_hour, int gpus, std::int64_t elapsed_ms) {
  if (rate_per_gpu_hour <= 0 || gpus <= 0 || elapsed_ms <= 0) return 0;
  const __int128 micro_ms = static_cast<__int128>(rate_per_gpu_hour) * gpus * elapsed_ms;
  const __int128 total = micro_ms / kMsPerHour;  // rounds toward zero: down, as everything is positive
  if (total > std::numeric_limits<MicroUsdc>::max()) return std::numeric_limits<MicroUsdc>::max();
  return static_cast<MicroUsdc>(total);
}

MicroUsdc provider_share(MicroUsdc charge, BasisPoints commission) {
  if (charge <= 0) return 0;
  if (commission < 0) commission = 0;
  if (commission > kWhole) commission = kWhole;
  return static_cast<MicroUsdc>(static_cast<__int128>(charge) * (kWhole - commission) / kWhole);
}

SettlementPlan plan_settlement(MicroUsdc rate_per_gpu_hour, int gpus, std::int64_t elapsed_ms, BasisPoints commission,
                               const Settled& before) {
  SettlementPlan plan;
  const MicroUsdc total = usage_total(rate_per_gpu_hour, gpus, elapsed_ms);
  plan.after.charged = total;
  plan.after.provider = provider_share(total, commission);
  plan.charge = plan.after.charged - before.charged;
  plan.provider = plan.after.provider - before.provider;
  plan.commission = plan.charge - plan.provider;
  return plan;
}

Transaction settlement_transaction(std::string id, const SettlementPlan& plan, const std::string& customer_id,
                                   const std::string& provider_id, const std::string& rental_id, std::int64_t at_ms) {
  Transaction tx{
      std::move(id), TxKind::settlement, "system:billing", "usage of rental " + rental_id, rental_id, at_ms, {}};
  if (plan.charge != 0) tx.entries.push_back({Account::customer(customer_id), -plan.charge});
  if (plan.provider != 0) tx.entries.push_back({Account::provider(provider_id), plan.provider});
  if (plan.commission != 0) tx.entries.push_back({Account::commission(), plan.commission});
  return tx;
}

std::int64_t hours_left(MicroUsdc balance, MicroUsdc spend_per_hour) {
  if (spend_per_hour <= 0) return -1;
  if (balance <= 0) return 0;
  return balance / spend_per_hour;
}

std::int64_t minutes_left(MicroUsdc available, MicroUsdc spend_per_hour) {
  if (spend_per_hour <= 0) return -1;
  if (available <= 0) return 0;
  // available · 60 / per_hour without overflow for any balance below 1.5e17 micro-USDC.
  return static_cast<std::int64_t>(static_cast<__int128>(available) * 60 / spend_per_hour);
}

LowBalance low_balance(MicroUsdc available, MicroUsdc spend_per_hour, bool warned) {
  if (spend_per_hour <= 0) return warned ? LowBalance::rearm : LowBalance::none;
  // Compared as available · 1 h < per_hour · the line, in 128 bits: no rounding of the time left.
  const bool within = static_cast<__int128>(std::max<MicroUsdc>(available, 0)) * 3'600'000 <
                      static_cast<__int128>(spend_per_hour) * kLowBalanceWarnMs;
  if (within) return warned ? LowBalance::none : LowBalance::warn;
  return warned ? LowBalance::rearm : LowBalance::none;
}

Status Book::post(const Transaction& tx) {
  if (auto s = check_balanced(tx); !s) return s;
  if (ids_.contains(tx.id))
    return Error::make(ErrorCode::conflict, "ledger transaction " + tx.id + " is already posted");
  // Every new balance is worked out before any is changed, so a refused transaction changes nothing.
  std::map<Account, MicroUsdc> next;
  for (const auto& e : tx.entries) {
    auto it = next.try_emplace(e.account, balance(e.account)).first;
    if (__builtin_add_overflow(it->second, e.amount, &it->second)) {
      return invalid("ledger account " + account_name(e.account) + " would overflow");
    }
  }
  for (const auto& [account, b] : next) balances_[account] = b;
  ids_[tx.id] = true;
  entries_ += tx.entries.size();
  return ok_status();
}

MicroUsdc Book::balance(const Account& a) const {
  auto it = balances_.find(a);
  return it == balances_.end() ? 0 : it->second;
}

MicroUsdc Book::total() const {
  MicroUsdc sum = 0;
  for (const auto& [account, b] : balances_) sum += b;
  return sum;
}

}  // namespace gpunex::core::ledger
