#pragma once
// Rentals in the store (tables rentals, rental_gpus, gpu_allocations; migration 10): the only code
// that reads or writes them. A GPU is given by inserting its gpu_allocations row, whose primary key
// (machine, uuid) refuses a second holder: exactly one of any number of racing rentals gets it.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/ledger.hpp"
#include "core/money.hpp"
#include "core/rental.hpp"
#include "core/result.hpp"
#include "store/store.hpp"

namespace gpunex::server::rentals {

struct RentalRow {
  std::string id;
  std::string customer_id;
  std::string provider_id;
  std::string machine_id;
  std::string model;
  int gpu_count = 0;
  core::MicroUsdc price = 0;  // per GPU-hour, locked at start
  core::ledger::BasisPoints commission = core::ledger::kDefaultCommission;
  core::rental::State state = core::rental::State::requested;
  std::string spec;  // what the customer asked to run (JSON: image, command, env, ports, max hours)
  std::int64_t created_at_ms = 0;
  std::optional<std::int64_t> running_since_ms;
  std::optional<std::int64_t> ended_at_ms;
  std::optional<core::rental::EndReason> end_reason;
  std::vector<std::string> gpu_uuids;
};

//! Writes a new rental and gives it `row.gpu_uuids` on its machine. The allocation fails as a whole
//! (409 gpus_taken, nothing written: the caller's transaction rolls back) when any of them is held.
core::Status insert_with_gpus(store::Tx& tx, const RentalRow& row);

//! The GPUs of `machine_id` that a live rental holds now.
std::vector<std::string> allocated_uuids(store::Tx& tx, const std::string& machine_id);

std::optional<RentalRow> find(store::Tx& tx, const std::string& id);
//! A customer's rentals, newest first.
std::vector<RentalRow> list_for_customer(store::Tx& tx, const std::string& customer_id);

//! Moves a rental's state; when it ends, records why and gives its GPUs back.
void set_state(store::Tx& tx, const std::string& id, core::rental::State state, std::int64_t now_ms);
void end(store::Tx& tx, const std::string& id, core::rental::EndReason reason, std::optional<int> exit_code, bool oom,
         std::int64_t now_ms);

}  // namespace gpunex::server::rentals
