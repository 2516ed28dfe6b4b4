#include "server/rentals/rentals_repo.hpp"

#include <algorithm>

#include "core/machine_status.hpp"

namespace gpunex::server::rentals {

namespace {

namespace rental = core::rental;

constexpr const char* kColumns =
    "id, customer_id, provider_id, machine_id, model, gpu_count, price_micro, commission_bp, state, spec, created_at, "
    "running_since, ended_at, end_reason, stop_reason, exit_code, oom, error, ports, logs, logs_at, settled_charged, "
    "settled_provider, last_settled_at, stop_requested_at, promised_until, "
    "(SELECT m.public_host FROM machines m WHERE m.id = rentals.machine_id), "
    "(SELECT m.status FROM machines m WHERE m.id = rentals.machine_id)";

RentalRow row_of(store::Tx& tx, const store::Row& r) {
  RentalRow out;
  out.id = r.str(0);
  out.customer_id = r.str(1);
  out.provider_id = r.str(2);
  out.machine_id = r.str(3);
  out.model = r.str(4);
  out.gpu_count = static_cast<int>(r.i64(5));
  out.price = r.i64(6);
  out.commission = static_cast<core::ledger::BasisPoints>(r.i64(7));
  auto state = rental::parse_state(r.str(8));
  out.state = state ? *state : rental::State::ended;
  out.spec = r.str(9);
  out.created_at_ms = r.i64(10);
  out.running_since_ms = r.opt_i64(11);
  out.ended_at_ms = r.opt_i64(12);
  if (auto reason = r.opt_str(13)) {
    if (auto parsed = rental::parse_end_reason(*reason)) out.end_reason = *parsed;
  }
  if (auto reason = r.opt_str(14)) {
    if (auto parsed = rental::parse_end_reason(*reason)) out.stop_reason = *parsed;
  }
  if (auto code = r.opt_i64(15)) out.exit_code = static_cast<int>(*code);
  out.oom = r.opt_i64(16).value_or(0) != 0;
  out.error = r.opt_str(17);
  out.ports = r.str(18);
  out.logs = r.str(19);
  out.logs_at_ms = r.opt_i64(20);
  out.settled = core::ledger::Settled{r.i64(21), r.i64(22)};
  out.last_settled_at_ms = r.opt_i64(23);
  out.stop_requested_at_ms = r.opt_i64(24);
  out.promised_until_ms = r.opt_i64(25);
  out.machine_host = r.opt_str(26);
  out.machine_online =
      r.opt_str(27) == std::optional<std::string>(core::machine_status_name(core::MachineStatus::online));
  for (const auto& g : tx.query("SELECT uuid FROM rental_gpus WHERE rental_id = ? ORDER BY uuid", {out.id})) {
    out.gpu_uuids.push_back(g.str(0));
  }
  return out;
}

}  // namespace

std::vector<EndedRow> ended_on_machine(store::Tx& tx, const std::string& machine_id, std::int64_t since_ms) {
  std::vector<EndedRow> out;
  for (const auto& r : tx.query("SELECT id, ended_at, end_reason, provider_side FROM rentals WHERE machine_id = ? AND "
                                "state = ? AND ended_at >= ? ORDER BY ended_at, id",
                                {machine_id, std::string(rental::to_string(rental::State::ended)), since_ms})) {
    EndedRow e{r.str(0), r.opt_i64(1).value_or(0), rental::EndReason::customer_stopped, r.opt_i64(3).value_or(0) != 0};
    if (auto reason = r.opt_str(2)) {
      if (auto parsed = rental::parse_end_reason(*reason)) e.reason = *parsed;
    }
    out.push_back(std::move(e));
  }
  return out;
}

core::Status insert_with_gpus(store::Tx& tx, const RentalRow& row) {
  tx.exec(
      "INSERT INTO rentals (id, customer_id, provider_id, machine_id, model, gpu_count, price_micro, commission_bp, "
      "state, spec, created_at, promised_until) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      {row.id, row.customer_id, row.provider_id, row.machine_id, row.model, std::int64_t{row.gpu_count}, row.price,
       std::int64_t{row.commission}, std::string(rental::to_string(row.state)), row.spec, row.created_at_ms,
       row.promised_until_ms ? store::Value(*row.promised_until_ms) : store::Value(nullptr)});
  for (const auto& uuid : row.gpu_uuids) {
    // ON CONFLICT DO NOTHING, not a caught unique violation: PostgreSQL aborts the transaction on one.
    // A racing transaction that inserted the same GPU first makes this one wait for its end, then
    // find the row and insert nothing.
    auto got = tx.query(
        "INSERT INTO gpu_allocations (machine_id, uuid, rental_id, allocated_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (machine_id, uuid) DO NOTHING RETURNING uuid",
        {row.machine_id, uuid, row.id, row.created_at_ms});
    if (got.empty()) {
      return core::Error::make(core::ErrorCode::conflict, "GPU " + uuid + " was just given to another rental")
          .with_code("gpus_taken");
    }
    tx.exec("INSERT INTO rental_gpus (rental_id, uuid) VALUES (?, ?)", {row.id, uuid});
  }
  return core::ok_status();
}

std::vector<std::string> allocated_uuids(store::Tx& tx, const std::string& machine_id) {
  std::vector<std::string> out;
  for (const auto& r : tx.query("SELECT uuid FROM gpu_allocations WHERE machine_id = ? ORDER BY uuid", {machine_id})) {
    out.push_back(r.str(0));
  }
  return out;
}

std::optional<std::string> provider_of_user(store::Tx& tx, const std::string& user_id) {
  auto r = tx.query_one("SELECT id FROM providers WHERE user_id = ?", {user_id});
  if (!r) return std::nullopt;
  return r->str(0);
}

std::optional<RentalRow> find(store::Tx& tx, const std::string& id) {
  auto r = tx.query_one(std::string("SELECT ") + kColumns + " FROM rentals WHERE id = ?", {id});
  if (!r) return std::nullopt;
  return row_of(tx, *r);
}

std::optional<RentalRow> find_for_update(store::Tx& tx, const std::string& id) {
  const char* lock = tx.dialect() == store::Dialect::postgres ? " FOR UPDATE" : "";
  auto r = tx.query_one(std::string("SELECT ") + kColumns + " FROM rentals WHERE id = ?" + lock, {id});
  if (!r) return std::nullopt;
  return row_of(tx, *r);
}

namespace {

std::vector<RentalRow> rows_where(store::Tx& tx, const std::string& where, std::vector<store::Value> params) {
  std::vector<RentalRow> out;
  for (const auto& r : tx.query(std::string("SELECT ") + kColumns + " FROM rentals WHERE " + where, std::move(params))) {
    out.push_back(row_of(tx, r));
  }
  return out;
}

const std::string kEnded(rental::to_string(rental::State::ended));

}  // namespace

std::vector<RentalRow> list_for_customer(store::Tx& tx, const std::string& customer_id) {
  return rows_where(tx, "customer_id = ? ORDER BY created_at DESC, id DESC", {customer_id});
}

std::vector<RentalRow> live_for_customer(store::Tx& tx, const std::string& customer_id) {
  return rows_where(tx, "customer_id = ? AND state <> ? ORDER BY created_at, id", {customer_id, kEnded});
}

std::vector<RentalRow> list_for_provider(store::Tx& tx, const std::string& provider_id) {
  return rows_where(tx, "provider_id = ? ORDER BY created_at DESC, id DESC", {provider_id});
}

std::vector<RentalRow> live_on_machine(store::Tx& tx, const std::string& machine_id) {
  return rows_where(tx, "machine_id = ? AND state <> ? ORDER BY created_at, id", {machine_id, kEnded});
}

std::vector<RentalRow> all_live(store::Tx& tx) {
  return rows_where(tx, "state <> ? ORDER BY created_at, id", {kEnded});
}

namespace {

//! Runs `select` + " WHERE state <> 'ended' AND machine_id IN (?, …)" + `rest` over `machine_ids`, 200 at
//! a time (a statement's parameters are bounded), giving each row to `each`.
template <class Each>
void for_live_on(store::Tx& tx, const std::string& select, const std::string& rest,
                 const std::vector<std::string>& machine_ids, Each each) {
  constexpr std::size_t kChunk = 200;
  for (std::size_t from = 0; from < machine_ids.size(); from += kChunk) {
    const std::size_t n = std::min(kChunk, machine_ids.size() - from);
    std::string q = select + " WHERE state <> ? AND machine_id IN (";
    std::vector<store::Value> params{kEnded};
    for (std::size_t i = 0; i < n; ++i) {
      q += i == 0 ? "?" : ", ?";
      params.emplace_back(machine_ids[from + i]);
    }
    for (const auto& r : tx.query(q + ") " + rest, std::move(params))) each(r);
  }
}

}  // namespace

std::map<std::string, std::vector<std::pair<std::string, rental::State>>> live_states(
    store::Tx& tx, const std::vector<std::string>& machine_ids) {
  std::map<std::string, std::vector<std::pair<std::string, rental::State>>> out;
  for_live_on(tx, "SELECT machine_id, id, state FROM rentals", "ORDER BY created_at, id", machine_ids,
              [&](const store::Row& r) {
                auto state = rental::parse_state(r.str(2));
                out[r.str(0)].emplace_back(r.str(1), state ? *state : rental::State::ended);
              });
  return out;
}

std::map<std::string, std::int64_t> rented_gpus(store::Tx& tx, const std::vector<std::string>& machine_ids) {
  std::map<std::string, std::int64_t> out;
  for_live_on(tx, "SELECT machine_id, SUM(gpu_count) FROM rentals", "GROUP BY machine_id", machine_ids,
              [&](const store::Row& r) { out[r.str(0)] = r.i64(1); });
  return out;
}

std::int64_t rented_gpus_total(store::Tx& tx) {
  const auto r = tx.query_one("SELECT COALESCE(SUM(gpu_count), 0) FROM rentals WHERE state <> ?", {kEnded});
  return r ? r->i64(0) : 0;
}

namespace {

const std::string& free_gpus_query() {
  static const std::string q =
      "SELECT g.machine_id, g.model, g.uuid FROM machine_gpus g JOIN machines m ON m.id = g.machine_id "
      "JOIN gpu_listing l ON l.machine_id = g.machine_id AND l.uuid = g.uuid "
      "LEFT JOIN gpu_allocations a ON a.machine_id = g.machine_id AND a.uuid = g.uuid "
      "WHERE g.present = 1 AND l.listed = 1 AND l.perf_score IS NOT NULL AND g.model IS NOT NULL "
      "AND a.uuid IS NULL AND m.rentals_blocked IS NULL AND m.status = '" +
      std::string(core::machine_status_name(core::MachineStatus::online)) + "' ";
  return q;
}

}  // namespace

std::map<std::pair<std::string, std::string>, std::vector<std::string>> free_gpus_on(
    store::Tx& tx, const std::vector<std::string>& machine_ids) {
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> out;
  if (machine_ids.empty()) return out;
  std::string q = free_gpus_query() + "AND g.machine_id IN (";
  std::vector<store::Value> params;
  for (std::size_t i = 0; i < machine_ids.size(); ++i) {
    q += i == 0 ? "?" : ", ?";
    params.emplace_back(machine_ids[i]);
  }
  q += ") ORDER BY g.machine_id, g.uuid";
  for (const auto& r : tx.query(q, std::move(params))) out[{r.str(0), r.str(1)}].push_back(r.str(2));
  return out;
}

void set_state(store::Tx& tx, const std::string& id, rental::State state, std::int64_t now_ms) {
  if (state == rental::State::running) {
    tx.exec("UPDATE rentals SET state = ?, running_since = COALESCE(running_since, ?) WHERE id = ?",
            {std::string(rental::to_string(state)), now_ms, id});
  } else {
    tx.exec("UPDATE rentals SET state = ? WHERE id = ?", {std::string(rental::to_string(state)), id});
  }
}

void end(store::Tx& tx, const std::string& id, rental::EndReason reason, std::optional<int> exit_code, bool oom,
         std::int64_t now_ms, const std::optional<std::string>& error) {
  tx.exec(
      "UPDATE rentals SET state = ?, ended_at = ?, end_reason = ?, provider_side = ?, exit_code = ?, oom = ?, "
      "error = ? WHERE id = ? AND ended_at IS NULL",
      {std::string(rental::to_string(rental::State::ended)), now_ms, std::string(rental::to_string(reason)),
       std::int64_t{rental::provider_side(reason) ? 1 : 0},
       exit_code ? store::Value{std::int64_t{*exit_code}} : store::Value{nullptr}, std::int64_t{oom ? 1 : 0},
       error ? store::Value{*error} : store::Value{nullptr}, id});
  tx.exec("DELETE FROM gpu_allocations WHERE rental_id = ?", {id});
}

void mark_running(store::Tx& tx, const std::string& id, std::int64_t since_ms, const std::string& ports_json) {
  tx.exec(
      "UPDATE rentals SET state = CASE WHEN state = ? THEN state ELSE ? END, "
      "running_since = COALESCE(running_since, ?), ports = ? WHERE id = ? AND ended_at IS NULL",
      {std::string(rental::to_string(rental::State::stopping)), std::string(rental::to_string(rental::State::running)),
       since_ms, ports_json, id});
}

void request_stop(store::Tx& tx, const std::string& id, rental::EndReason reason, std::int64_t now_ms) {
  // Never before its last settlement (one taken at a later instant, on another replica's clock, or read
  // before this transaction began): a stop on the provider's side meters nothing after it was asked, so
  // an earlier one would leave the rental settled past what it is billed.
  tx.exec(
      "UPDATE rentals SET state = ?, stop_reason = COALESCE(stop_reason, ?), "
      "stop_requested_at = COALESCE(stop_requested_at, CASE WHEN last_settled_at > ? THEN last_settled_at ELSE ? "
      "END) WHERE id = ? AND ended_at IS NULL",
      {std::string(rental::to_string(rental::State::stopping)), std::string(rental::to_string(reason)), now_ms, now_ms,
       id});
}

void record_settled(store::Tx& tx, const std::string& id, const core::ledger::Settled& before,
                    const core::ledger::Settled& after, std::int64_t at_ms) {
  const auto changed = tx.exec(
      "UPDATE rentals SET settled_charged = ?, settled_provider = ?, last_settled_at = ? WHERE id = ? AND "
      "settled_charged = ? AND settled_provider = ?",
      {after.charged, after.provider, at_ms, id, before.charged, before.provider});
  if (changed != 1) {
    throw store::StoreError("rental " + id + " was settled by another transaction meanwhile: this one rolls back");
  }
}

void set_logs(store::Tx& tx, const std::string& id, const std::string& logs, std::int64_t at_ms) {
  tx.exec("UPDATE rentals SET logs = ?, logs_at = ? WHERE id = ? AND (logs_at IS NULL OR logs_at <= ?)",
          {logs, at_ms, id, at_ms});
}

}  // namespace gpunex::server::rentals
