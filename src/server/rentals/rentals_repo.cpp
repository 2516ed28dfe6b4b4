#include "server/rentals/rentals_repo.hpp"

namespace gpunex::server::rentals {

namespace {

namespace rental = core::rental;

constexpr const char* kColumns =
    "id, customer_id, provider_id, machine_id, model, gpu_count, price_micro, commission_bp, state, spec, created_at, "
    "running_since, ended_at, end_reason";

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
  for (const auto& g : tx.query("SELECT uuid FROM rental_gpus WHERE rental_id = ? ORDER BY uuid", {out.id})) {
    out.gpu_uuids.push_back(g.str(0));
  }
  return out;
}

}  // namespace

core::Status insert_with_gpus(store::Tx& tx, const RentalRow& row) {
  tx.exec(std::string("INSERT INTO rentals (") + kColumns + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
          {row.id, row.customer_id, row.provider_id, row.machine_id, row.model, std::int64_t{row.gpu_count}, row.price,
           std::int64_t{row.commission}, std::string(rental::to_string(row.state)), row.spec, row.created_at_ms,
           nullptr, nullptr, nullptr});
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

std::optional<RentalRow> find(store::Tx& tx, const std::string& id) {
  auto r = tx.query_one(std::string("SELECT ") + kColumns + " FROM rentals WHERE id = ?", {id});
  if (!r) return std::nullopt;
  return row_of(tx, *r);
}

std::vector<RentalRow> list_for_customer(store::Tx& tx, const std::string& customer_id) {
  std::vector<RentalRow> out;
  for (const auto& r : tx.query(
           std::string("SELECT ") + kColumns + " FROM rentals WHERE customer_id = ? ORDER BY created_at DESC, id DESC",
           {customer_id})) {
    out.push_back(row_of(tx, r));
  }
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
         std::int64_t now_ms) {
  tx.exec(
      "UPDATE rentals SET state = ?, ended_at = ?, end_reason = ?, provider_side = ?, exit_code = ?, oom = ? "
      "WHERE id = ? AND ended_at IS NULL",
      {std::string(rental::to_string(rental::State::ended)), now_ms, std::string(rental::to_string(reason)),
       std::int64_t{rental::provider_side(reason) ? 1 : 0},
       exit_code ? store::Value{std::int64_t{*exit_code}} : store::Value{nullptr}, std::int64_t{oom ? 1 : 0}, id});
  tx.exec("DELETE FROM gpu_allocations WHERE rental_id = ?", {id});
}

}  // namespace gpunex::server::rentals
