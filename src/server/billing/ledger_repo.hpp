#pragma once
// The ledger in the store (tables ledger_transactions, ledger_entries; migration 9): the only code
// that reads or writes them. Transactions are checked by core::ledger before they are written and
// are never changed afterwards (the store refuses UPDATE and DELETE on both tables).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/ledger.hpp"
#include "core/money.hpp"
#include "core/result.hpp"
#include "store/store.hpp"

namespace gpunex::server::billing {

//! Writes a balanced transaction and its entries. With a `dedupe_key`, a second transaction with the
//! same key writes nothing and answers the first one's id; otherwise answers `t.id`. An unbalanced
//! transaction is refused (invalid_field) and writes nothing.
core::Result<std::string> post(store::Tx& tx, const core::ledger::Transaction& t,
                               const std::optional<std::string>& dedupe_key = std::nullopt);

//! The sum of an account's entries.
core::MicroUsdc balance(store::Tx& tx, const core::ledger::Account& account);

//! One transaction as one account saw it.
struct HistoryLine {
  std::string transaction_id;
  core::ledger::TxKind kind = core::ledger::TxKind::credit;
  std::string reason;
  std::string reference;
  std::int64_t at_ms = 0;
  core::MicroUsdc amount = 0;  // the sum of this account's entries in the transaction
};
//! An account's transactions, newest first.
std::vector<HistoryLine> history(store::Tx& tx, const core::ledger::Account& account);

//! An account's lines of one kind of transaction with times in [from_ms, to_ms), oldest first.
std::vector<HistoryLine> history_between(store::Tx& tx, const core::ledger::Account& account, core::ledger::TxKind kind,
                                         std::int64_t from_ms, std::int64_t to_ms);

//! A posted transaction, with every entry.
std::optional<core::ledger::Transaction> find_transaction(store::Tx& tx, const std::string& id);

//! A credit as the operators' list shows it.
struct CreditLine {
  std::string transaction_id;
  std::string user_id;
  std::string email;
  core::MicroUsdc amount = 0;
  std::string reference;
  std::string by;  // who credited it: an admin's e-mail, or "operator:NAME" from the shell
  std::int64_t at_ms = 0;
};
//! Every credit, newest first.
std::vector<CreditLine> credits(store::Tx& tx);

// ---- low-balance warnings (table balance_warnings; migration 29) ----

//! The customers with a standing low-balance warning.
std::vector<std::string> warned_customers(store::Tx& tx);
//! Records a warning; false when one stood already (another round wrote it first).
bool record_balance_warning(store::Tx& tx, const std::string& customer_id, std::int64_t now_ms);
//! Lifts a customer's warning, so the next fall is warned again.
void lift_balance_warning(store::Tx& tx, const std::string& customer_id);

}  // namespace gpunex::server::billing
