#include "server/billing/ledger_repo.hpp"

namespace gpunex::server::billing {

namespace ledger = core::ledger;

core::Result<std::string> post(store::Tx& tx, const ledger::Transaction& t,
                               const std::optional<std::string>& dedupe_key) {
  if (auto s = ledger::check_balanced(t); !s) return std::move(s).error();
  store::Value key = dedupe_key ? store::Value{*dedupe_key} : store::Value{nullptr};
  // ON CONFLICT DO NOTHING, not a caught unique violation: PostgreSQL aborts a transaction on one.
  auto inserted = tx.query(
      "INSERT INTO ledger_transactions (id, kind, actor, reason, reference, dedupe_key, created_at) "
      "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING id",
      {t.id, std::string(ledger::to_string(t.kind)), t.actor, t.reason, t.reference, key, t.at_ms});
  if (inserted.empty()) {
    if (dedupe_key) {
      auto first = tx.query_one("SELECT id FROM ledger_transactions WHERE dedupe_key = ?", {*dedupe_key});
      if (first) return first->str(0);
    }
    return core::Error::make(core::ErrorCode::conflict, "ledger transaction " + t.id + " is already posted");
  }
  std::int64_t seq = 0;
  for (const auto& e : t.entries) {
    tx.exec("INSERT INTO ledger_entries (tx_id, seq, account, amount, created_at) VALUES (?, ?, ?, ?, ?)",
            {t.id, seq++, ledger::account_name(e.account), e.amount, t.at_ms});
  }
  return t.id;
}

core::MicroUsdc balance(store::Tx& tx, const ledger::Account& account) {
  auto r = tx.query_one("SELECT COALESCE(SUM(amount), 0) FROM ledger_entries WHERE account = ?",
                        {ledger::account_name(account)});
  return r ? r->i64(0) : 0;
}

std::vector<HistoryLine> history(store::Tx& tx, const ledger::Account& account) {
  std::vector<HistoryLine> out;
  for (const auto& r :
       tx.query("SELECT t.id, t.kind, t.reason, t.reference, t.created_at, SUM(e.amount) "
                "FROM ledger_entries e JOIN ledger_transactions t ON t.id = e.tx_id WHERE e.account = ? "
                "GROUP BY t.id, t.kind, t.reason, t.reference, t.created_at ORDER BY t.created_at DESC, t.id DESC",
                {ledger::account_name(account)})) {
    auto kind = ledger::parse_tx_kind(r.str(1));
    out.push_back({r.str(0), kind ? *kind : ledger::TxKind::correction, r.str(2), r.str(3), r.i64(4), r.i64(5)});
  }
  return out;
}

std::vector<HistoryLine> history_between(store::Tx& tx, const ledger::Account& account, ledger::TxKind kind,
                                         std::int64_t from_ms, std::int64_t to_ms) {
  std::vector<HistoryLine> out;
  for (const auto& r : tx.query(
           "SELECT t.id, t.reason, t.reference, t.created_at, SUM(e.amount) "
           "FROM ledger_entries e JOIN ledger_transactions t ON t.id = e.tx_id "
           "WHERE e.account = ? AND t.kind = ? AND t.created_at >= ? AND t.created_at < ? "
           "GROUP BY t.id, t.reason, t.reference, t.created_at ORDER BY t.created_at, t.id",
           {ledger::account_name(account), std::string(ledger::to_string(kind)), from_ms, to_ms})) {
    out.push_back({r.str(0), kind, r.str(1), r.str(2), r.i64(3), r.i64(4)});
  }
  return out;
}

std::optional<ledger::Transaction> find_transaction(store::Tx& tx, const std::string& id) {
  auto head =
      tx.query_one("SELECT id, kind, actor, reason, reference, created_at FROM ledger_transactions WHERE id = ?", {id});
  if (!head) return std::nullopt;
  auto kind = ledger::parse_tx_kind(head->str(1));
  ledger::Transaction t{head->str(0),
                        kind ? *kind : ledger::TxKind::correction,
                        head->str(2),
                        head->str(3),
                        head->str(4),
                        head->i64(5),
                        {}};
  for (const auto& r : tx.query("SELECT account, amount FROM ledger_entries WHERE tx_id = ? ORDER BY seq", {id})) {
    auto account = ledger::parse_account(r.str(0));
    if (account) t.entries.push_back({*account, r.i64(1)});
  }
  return t;
}

std::vector<CreditLine> credits(store::Tx& tx) {
  std::vector<CreditLine> out;
  // The customer's entry names who was credited; the actor is an admin's user id, or the shell's name.
  for (const auto& r :
       tx.query("SELECT t.id, u.id, u.email, e.amount, t.reference, COALESCE(a.email, t.actor), t.created_at "
                "FROM ledger_transactions t JOIN ledger_entries e ON e.tx_id = t.id AND e.account LIKE 'customer:%' "
                "JOIN users u ON u.id = substr(e.account, 10) LEFT JOIN users a ON a.id = t.actor "
                "WHERE t.kind = 'credit' ORDER BY t.created_at DESC, t.id DESC")) {
    out.push_back({r.str(0), r.str(1), r.str(2), r.i64(3), r.str(4), r.str(5), r.i64(6)});
  }
  return out;
}

std::vector<std::string> warned_customers(store::Tx& tx) {
  std::vector<std::string> out;
  for (const auto& r : tx.query("SELECT customer_id FROM balance_warnings ORDER BY customer_id"))
    out.push_back(r.str(0));
  return out;
}

bool record_balance_warning(store::Tx& tx, const std::string& customer_id, std::int64_t now_ms) {
  return !tx.query(
                "INSERT INTO balance_warnings (customer_id, warned_at) VALUES (?, ?) "
                "ON CONFLICT (customer_id) DO NOTHING RETURNING customer_id",
                {customer_id, now_ms})
              .empty();
}

void lift_balance_warning(store::Tx& tx, const std::string& customer_id) {
  tx.exec("DELETE FROM balance_warnings WHERE customer_id = ?", {customer_id});
}

}  // namespace gpunex::server::billing
