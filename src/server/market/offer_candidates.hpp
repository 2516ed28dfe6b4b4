#pragma once
// What the marketplace can offer, read from the store: every machine's listed,
// priced GPUs, one candidate per (machine, model), and the market version that
// says when they changed. Schedules are parsed once per distinct text.

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/marketplace.hpp"
#include "core/schedule.hpp"
#include "store/store.hpp"

namespace gpunex::server {

//! Parsed schedules by their stored text: machines often share one, and parsing (about 20 µs)
//! would otherwise dominate an offer search. Thread-safe; emptied when it reaches its capacity.
class ScheduleCache {
 public:
  explicit ScheduleCache(std::size_t capacity = 16384) : capacity_(capacity) {}
  //! The schedule stored as `spec`; throws store::StoreError if it no longer parses.
  std::shared_ptr<const core::Schedule> get(const std::string& spec);

 private:
  std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<const core::Schedule>> parsed_;
  std::size_t capacity_;
};

//! Every machine's listed, priced GPUs that could be offered now: GPUs present and listed (not
//! delisted) on online machines of providers (approved by construction), with the provider's
//! current price for the model, one candidate per (machine, model). Availability windows, rank
//! and the filters are applied by core::OfferBook, so each offer is ranked against its whole model.
//! Uses machines/machine_gpus (issue 4), gpu_listing's listed/perf_score (issue 5) and the reliability
//! score each machine shows (reliability/, issue 17; none while a machine is new).
//! Machines on simulated GPUs are left out unless `allow_simulated` (the operator's demo mode,
//! allow_simulated_offers); then their candidates carry simulated = true.
std::vector<core::OfferCandidate> offer_candidates(store::Tx& tx, ScheduleCache& schedules,
                                                   bool allow_simulated = false);

struct MarketChanges;

//! The candidates of the machines `changes` names and of the providers' machines it names (the
//! same read as offer_candidates', filtered), and every machine whose candidates they replace: the
//! named machines and the providers' online ones (an offline machine has none).
struct ChangedCandidates {
  std::vector<core::OfferCandidate> candidates;
  std::vector<std::string> machines;
};
ChangedCandidates changed_offer_candidates(store::Tx& tx, ScheduleCache& schedules, bool allow_simulated,
                                           const MarketChanges& changes);

//! The store's market version: bumped (by triggers, migration 6) in every transaction that
//! changes what offer_candidates reads, so an unchanged version means unchanged candidates.
//! A table that offer_candidates starts to read needs the same trigger, in a new migration, logging
//! its machine or provider to market_changes as migration 20's do (the offer cache patches its book
//! from that log).
std::int64_t market_version(store::Tx& tx);

//! Forgets the market's changes (migration 20's log) up to `version`: an offer cache older than that
//! reloads every candidate.
void prune_market_changes(store::Tx& tx, std::int64_t version);

}  // namespace gpunex::server
