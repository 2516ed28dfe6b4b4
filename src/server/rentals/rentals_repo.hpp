#pragma once
// Rentals in the store (tables rentals, rental_gpus, gpu_allocations; migration 10): the only code
// that reads or writes them. A GPU is given by inserting its gpu_allocations row, whose primary key
// (machine, uuid) refuses a second holder: exactly one of any number of racing rentals gets it.

#include <cstdint>
#include <map>
#include <utility>
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
  // Migration 11 on: set while it runs and when it ends.
  std::optional<core::rental::EndReason> stop_reason;  // why a stop was asked (the end reason once the agent confirms)
  std::optional<int> exit_code;
  bool oom = false;
  std::optional<std::string> error;  // start_failed: the engine's words
  std::string ports = "[]";          // JSON [{container_port, host_port}] the agent bound
  std::string logs;                  // the tail of the container's output
  std::optional<std::int64_t> logs_at_ms;
  core::ledger::Settled settled;     // what settlements have posted so far
  std::optional<std::int64_t> last_settled_at_ms;
  // Migration 25 on: when the stop was first asked (metering ends at most a minute after it).
  std::optional<std::int64_t> stop_requested_at_ms;
  // Migration 28 on: the end of availability its offer showed when it was made (0: none); null before.
  std::optional<std::int64_t> promised_until_ms;
  // Of its machine, read with it: where customers reach its ports (migration 27) and whether its agent
  // is heard from now.
  std::optional<std::string> machine_host;
  bool machine_online = false;
};

//! Writes a new rental and gives it `row.gpu_uuids` on its machine. The allocation fails as a whole
//! (409 gpus_taken, nothing written: the caller's transaction rolls back) when any of them is held.
core::Status insert_with_gpus(store::Tx& tx, const RentalRow& row);

//! The GPUs of `machine_id` that a live rental holds now.
std::vector<std::string> allocated_uuids(store::Tx& tx, const std::string& machine_id);

std::optional<RentalRow> find(store::Tx& tx, const std::string& id);
//! The provider a user is, if any: a provider does not rent its own GPUs.
std::optional<std::string> provider_of_user(store::Tx& tx, const std::string& user_id);
//! find(), its row locked until the transaction ends (PostgreSQL; SQLite's writers run one at a time):
//! for a write that reads the rental's settled totals and posts from them, so that two (the rentals
//! worker, an agent's end) never settle the same time twice.
std::optional<RentalRow> find_for_update(store::Tx& tx, const std::string& id);
//! A customer's rentals, newest first.
std::vector<RentalRow> list_for_customer(store::Tx& tx, const std::string& customer_id);
//! A customer's rentals that are not ended, oldest first.
std::vector<RentalRow> live_for_customer(store::Tx& tx, const std::string& customer_id);
//! The rentals on a provider's machines, newest first.
std::vector<RentalRow> list_for_provider(store::Tx& tx, const std::string& provider_id);
//! A machine's rentals that are not ended, oldest first: what its agent must run or stop.
std::vector<RentalRow> live_on_machine(store::Tx& tx, const std::string& machine_id);
//! Every rental that is not ended, oldest first (the rentals worker).
std::vector<RentalRow> all_live(store::Tx& tx);
//! For each of `machine_ids`, its live rentals as (id, state), oldest first: what a poll's version is
//! made of, read for many waiting agents at once.
std::map<std::string, std::vector<std::pair<std::string, core::rental::State>>> live_states(
    store::Tx& tx, const std::vector<std::string>& machine_ids);
//! For each of `machine_ids` with live rentals, how many GPUs they hold.
std::map<std::string, std::int64_t> rented_gpus(store::Tx& tx, const std::vector<std::string>& machine_ids);
//! How many GPUs every live rental holds together.
std::int64_t rented_gpus_total(store::Tx& tx);

//! The GPUs the scheduler may give on each of `machine_ids`, by (machine, model), in uuid order:
//! present, listed, scored, on an online machine, and held by no rental. Reads the fleet's tables
//! (machines, machine_gpus, gpu_listing) in the same statement as gpu_allocations: the one place the
//! rentals area reads them, so that what is free is decided in the transaction that takes it.
std::map<std::pair<std::string, std::string>, std::vector<std::string>> free_gpus_on(
    store::Tx& tx, const std::vector<std::string>& machine_ids);

//! A rental that ended: its id, when, why and whether on the provider's side (as recorded).
struct EndedRow {
  std::string id;
  std::int64_t ended_at_ms = 0;
  core::rental::EndReason reason = core::rental::EndReason::customer_stopped;
  bool provider_side = false;
};
//! The rentals on `machine_id` that ended at or after `since_ms`, oldest first (the reliability score).
std::vector<EndedRow> ended_on_machine(store::Tx& tx, const std::string& machine_id, std::int64_t since_ms);

//! Moves a rental's state; when it ends, records why and gives its GPUs back.
void set_state(store::Tx& tx, const std::string& id, core::rental::State state, std::int64_t now_ms);
void end(store::Tx& tx, const std::string& id, core::rental::EndReason reason, std::optional<int> exit_code, bool oom,
         std::int64_t now_ms, const std::optional<std::string>& error = std::nullopt);
//! The container runs since `since_ms` with `ports_json` bound (metering starts at the first such call).
void mark_running(store::Tx& tx, const std::string& id, std::int64_t since_ms, const std::string& ports_json);
//! Asks the agent to stop it: state stopping; the first reason asked, and its time, are kept.
void request_stop(store::Tx& tx, const std::string& id, core::rental::EndReason reason, std::int64_t now_ms);
//! Records what the settlements have posted so far, moving the totals from `before` (what the settlement
//! read); totals that moved meanwhile throw store::StoreError, rolling the settlement back.
void record_settled(store::Tx& tx, const std::string& id, const core::ledger::Settled& before,
                    const core::ledger::Settled& after, std::int64_t at_ms);
void set_logs(store::Tx& tx, const std::string& id, const std::string& logs, std::int64_t at_ms);

}  // namespace gpunex::server::rentals
