#pragma once
// The reliability area (DESIGN §3.12, issue 17): each machine's UTC days judged against its schedule,
// its rentals' outcomes and its benchmark runs (the rules: core/reliability.hpp), kept day by day
// (reliability_repo), the score the marketplace shows, the provider's Performance view, and the mail
// when a score falls below the operator's alert level.
//
// Inputs: the fleet's presence minutes, schedules with their maintenance declaration times, and
// benchmark runs (fleet/, which this area may include); the rentals' outcomes come from rentals/,
// which comes after this area, so callers hand them in as a JobSource (api/ and workers/ pass
// rentals::reliability_jobs).

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/reliability.hpp"
#include "core/result.hpp"
#include "server/fleet/machines.hpp"
#include "server/platform/config.hpp"
#include "store/store.hpp"

namespace gpunex::server::reliability {

struct Settings {
  core::reliability::Config score;
  double alert_below = 80;
  double alert_rearm_points = 2;
  //! A day is final (never judged again) this long after its end: heartbeats committing late are in.
  std::int64_t finalize_grace_ms = 5 * 60'000;
  std::string base_url;  // for links in mails
};
Settings settings_of(const Config& c);

//! The rentals on a machine that ended at or after `since_ms` (rentals::reliability_jobs).
using JobSource = std::function<std::vector<core::reliability::Job>(store::Tx&, const std::string& machine_id,
                                                                    std::int64_t since_ms)>;

//! Brings the machine's days up to `now_ms` and stores them, updates the score the marketplace shows
//! (rounded to 0.1) and tells the provider when it falls below the alert level. Returns the score; sets
//! `*alerted_now` (when given) to whether this call raised the alert.
core::reliability::Score refresh_machine(store::Tx& tx, const MachineForScore& machine, const JobSource& jobs,
                                         const Settings& s, std::int64_t now_ms, bool* alerted_now = nullptr);

struct RoundResult {
  std::size_t machines = 0;
  std::size_t alerts = 0;
  std::int64_t pruned_days = 0;
};
//! The worker's round: every machine, `chunk` to a transaction; then days older than twice the window go.
RoundResult run_round(store::Store& store, const JobSource& jobs, const Settings& s, std::int64_t now_ms,
                      std::size_t chunk = 100);

//! GET /v1/provider/machines/{id}/reliability: the score (or "new" and the prior), its three parts with
//! their inputs, the daily history of the window, the events that moved it in plain words with what to
//! do, and how long until it recovers; today's partial day judged live. 404 when not the provider's.
core::Result<nlohmann::json> machine_reliability(store::Tx& tx, const std::string& provider_id,
                                                 const std::string& machine_id, const JobSource& jobs,
                                                 const Settings& s, std::int64_t now_ms);

//! GET /v1/provider/reliability: the provider's score over all of their machines, each machine's figures
//! (score, uptime, job completion, benchmark stability) weighted by its GPU count; machines still new
//! (scored by the prior) count only while no machine has a score of its own. The events of every
//! machine, newest first, each naming its machine. `machines` lists what went in.
nlohmann::json provider_reliability(store::Tx& tx, const std::string& provider_id, const JobSource& jobs,
                                    const Settings& s, std::int64_t now_ms);

//! The score the marketplace shows for every machine that has one (not new), by machine id; only
//! `machines`' when given.
std::unordered_map<std::string, double> published_scores(store::Tx& tx,
                                                         const std::vector<std::string>* machines = nullptr);

}  // namespace gpunex::server::reliability
