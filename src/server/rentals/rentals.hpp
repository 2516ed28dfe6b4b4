#pragma once
// Customers renting GPUs (issue #16): the scheduler that places a rental on free GPUs, the stops a
// customer, a provider or the platform asks for, what a machine's agent must run (the long poll's
// answer) and what its events do to a rental. The rules are core/rental.hpp's; the SQL is
// rentals_repo's. Money is billing's (it comes after this area): the caller passes the customer's
// available balance in, and settles the rentals that end_rentals() reports ended.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/ledger.hpp"
#include "core/rental.hpp"
#include "core/reliability.hpp"
#include "core/rental_spec.hpp"
#include "core/result.hpp"
#include "protocol/rentals.hpp"
#include "server/rentals/rentals_repo.hpp"
#include "store/store.hpp"

namespace gpunex::server::rentals {

//! A customer's POST /v1/rentals, checked field by field.
struct CreateRequest {
  core::rental::Request request;  // machine_id or filters, gpu_count
  std::optional<std::string> model_text;  // as the customer typed it; resolved against the catalog
  std::string model_field = "model";      // where it was typed: model, or filters.model
  core::rental::Spec spec;
};
core::Result<CreateRequest> read_create_request(const nlohmann::json& body);

//! One offer the scheduler may place the rental on, best first (from the marketplace's book).
struct Candidate {
  std::string machine_id;
  std::string model;
};

//! Places a rental on the first candidate with enough free GPUs whose first hour, at the provider's
//! current price (locked from now on), `available_balance` covers beside what the customer's other
//! rentals hold for theirs (`held`, Accrual::first_hour_held); a candidate it does not cover is passed
//! over for the next. 409 no_gpus_available when none has enough; 409 gpus_taken when another rental
//! took them in the meantime (the caller retries in a new transaction); 402 insufficient_balance,
//! naming the amount needed, when the balance covers none that has.
core::Result<RentalRow> create(store::Tx& tx, const std::string& customer_id, const CreateRequest& request,
                               const std::vector<Candidate>& candidates, core::MicroUsdc available_balance,
                               core::MicroUsdc held, core::ledger::BasisPoints commission, std::int64_t now_ms);

//! What the customer's rentals still owe beyond their settlements at `now_ms` (the live cost not yet
//! taken from the balance), and what they spend per hour while running.
struct Accrual {
  core::MicroUsdc unsettled = 0;
  core::MicroUsdc per_hour = 0;
  core::MicroUsdc running_per_hour = 0;  // of those running and not asked to stop: what goes on being spent
  core::MicroUsdc first_hour_held = 0;  // what is left of the first hour of those not asked to stop
};
Accrual customer_accrual(store::Tx& tx, const std::string& customer_id, std::int64_t now_ms);
//! The same for one rental.
core::MicroUsdc unsettled(const RentalRow& r, std::int64_t now_ms);
core::MicroUsdc cost_so_far(const RentalRow& r, std::int64_t now_ms);
//! The metered end: the end time once ended, else now.
std::int64_t metered_until(const RentalRow& r, std::int64_t now_ms);

//! Asks for a stop. Ending is the agent's to confirm, except for a rental whose agent never took it
//! (state requested): that one ends at once, not charged. An ended rental is answered as it is.
RentalRow stop(store::Tx& tx, const RentalRow& r, core::rental::EndReason reason, std::int64_t now_ms);

//! The machine's live rentals as its agent must see them, after checking the machine is the
//! provider's (404 otherwise).
core::Result<protocol::AgentRentals> agent_rentals(store::Tx& tx, const std::string& provider_id,
                                                   const std::string& machine_id);
//! The version of each machine's live rentals (rentals_version of id:state), for waiting polls.
std::map<std::string, std::string> versions(store::Tx& tx, const std::vector<std::string>& machine_ids);

//! What a batch of agent events did: the rentals that ended (to be settled), and whether the batch
//! was a replay (its seq seen before: nothing applied).
struct EventsOutcome {
  std::vector<std::string> ended;
  bool duplicate = false;
  std::size_t applied = 0;
};
core::Result<EventsOutcome> apply_events(store::Tx& tx, const std::string& provider_id,
                                         const protocol::RentalEventsRequest& req, std::int64_t now_ms);

//! A GPU of the machine stopped answering: the live rentals holding it are asked to stop with
//! gpu_failure; one its agent never took (requested) ends at once, and its customer is told
//! (tell_customer_ended, links under `base_url`). Returns how many.
std::size_t stop_for_lost_gpu(store::Tx& tx, const std::string& machine_id, const std::string& uuid,
                              const std::string& base_url, std::int64_t now_ms);

//! Ends a rental on the platform's side (agent lost), at `at_ms`.
void end_now(store::Tx& tx, const RentalRow& r, core::rental::EndReason reason, std::int64_t at_ms);

//! The customer's view (API.md, GET /v1/rentals/{id}).
//! The rentals on a machine that ended at or after `since_ms`, as the reliability score's job
//! completion reads them (reliability/ comes before rentals/: api/ and workers/ hand this to it).
std::vector<core::reliability::Job> reliability_jobs(store::Tx& tx, const std::string& machine_id,
                                                     std::int64_t since_ms);

nlohmann::json customer_json(const RentalRow& r, std::int64_t now_ms);
//! The rental's max_hours in milliseconds, when it has one.
std::optional<std::int64_t> max_duration_ms(const RentalRow& r);

//! Tells the customer, by mail and in the dashboard, that their rental ended when they did not end it
//! themselves (the provider stopped it, its machine failed or went away, the balance or its time ran
//! out, it could not start). Nothing for one still live or stopped by them. `base_url` makes the link.
void tell_customer_ended(store::Tx& tx, const RentalRow& r, const std::string& base_url, std::int64_t now_ms);

//! What a machine's new schedule means for its running rentals: how many there are, and when the first
//! maintenance stops them (core::rental::maintenance_stop_at; each customer whose stop is new or moved
//! by the change is told now, links under `base_url`). A narrowed availability stops none of them.
struct ScheduleEffect {
  std::size_t running = 0;
  std::size_t stopped_by_maintenance = 0;
  std::optional<std::int64_t> first_stop_ms;
};
ScheduleEffect tell_schedule_change(store::Tx& tx, const std::string& machine_id, const core::Schedule& before,
                                    const core::Schedule& after, const std::string& base_url, std::int64_t now_ms);
//! The provider's view: which GPUs and what they earn, never who rents them.
nlohmann::json provider_json(const RentalRow& r, std::int64_t now_ms);

}  // namespace gpunex::server::rentals
