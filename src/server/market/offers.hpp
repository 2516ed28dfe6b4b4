#pragma once
// Store access for the marketplace (issue 6): provider prices with their
// history, the market profile an offer shows (location, commitment), machine
// availability schedules with their maintenance windows, and the inputs of the
// price recommendation. The formulas themselves live in core/.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/marketplace.hpp"
#include "core/money.hpp"
#include "core/price_recommendation.hpp"
#include "core/result.hpp"
#include "core/schedule.hpp"
#include "server/onboarding/providers.hpp"
#include "store/store.hpp"

namespace gpunex::server {

//! One price of a provider for a model; a change adds a row, so the history is kept and the
//! current price is the row with the highest seq. Rentals will record the price they start at.
struct PriceRow {
  std::string model;
  core::MicroUsdc usdc_micro = 0;
  std::string region;
  std::int64_t seq = 0;
  std::int64_t started_at_ms = 0;
  nlohmann::json to_json() const;
};

//! Sets a provider's rate for a catalog model (422 unknown_model, field "model", otherwise);
//! setting the current rate again changes nothing and returns the current row.
core::Result<PriceRow> set_price(store::Tx& tx, const Provider& p, const std::string& model, core::MicroUsdc rate,
                                 const std::string& by_user, std::int64_t now_ms);
//! The current rate of each model the provider prices, by model id.
std::vector<PriceRow> current_prices(store::Tx& tx, const std::string& provider_id);
//! Every rate the provider has set for a model, newest first.
std::vector<PriceRow> price_history(store::Tx& tx, const std::string& provider_id, const std::string& model);

//! Where a provider's GPUs are and for how long it committed, taken from its approved application.
struct MarketProfile {
  std::string city, country, region;
  std::int64_t commitment_months = 0;
};
//! The profile (creating the row from the application on first use); `model` picks the
//! application's GPU entry whose location is used, falling back to the first entry.
MarketProfile market_profile(store::Tx& tx, const Provider& p, const std::string& model, std::int64_t now_ms);

//! Every provider's listing of `model` as far as the store knows it: its current price, active
//! now or not (a listed, present GPU of the model on an online machine), and each earlier or
//! current price last seen active within `since_ms` (listing_activity).
std::vector<core::ListingSighting> listing_sightings(store::Tx& tx, const std::string& model, std::int64_t now_ms,
                                                     std::int64_t since_ms);
//! The recommendation's market for (model, region) at `now_ms` (core::listing_markets over
//! listing_sightings) and the model's reference price. Until rentals exist, utilisation is
//! unknown: the factor is neutral.
core::RecommendationInput recommendation_input(store::Tx& tx, const std::string& model, const std::string& region,
                                               std::int64_t now_ms, const core::RecommendationConfig& config = {});
//! The listings worker's round: every listing active now is recorded as seen at `now_ms`
//! (listing_activity), and rows last seen more than `keep_days` ago are deleted. Returns the
//! rows written.
std::size_t record_listing_activity(store::Tx& tx, std::int64_t now_ms, int keep_days);

//! The provider that owns a machine, if the machine exists.
std::optional<std::string> machine_owner(store::Tx& tx, const std::string& machine_id);
//! Replaces a machine's schedule and maintenance windows; a maintenance window that was already
//! declared keeps its declared_at (uptime excludes only maintenance declared in advance).
void save_schedule(store::Tx& tx, const std::string& provider_id, const std::string& machine_id,
                   const core::Schedule& s, std::int64_t now_ms);
//! A machine's schedule; nullopt when none was set (the machine is then available 24/7).
std::optional<core::Schedule> load_schedule(store::Tx& tx, const std::string& machine_id);
//! The schedule's API form plus, at `now_ms`: available_now, available_until, next_window_start.
nlohmann::json schedule_json(const std::string& machine_id, const core::Schedule& s, std::int64_t now_ms);

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
//! Uses machines/machine_gpus (issue 4) and gpu_listing's listed/perf_score (issue 5).
std::vector<core::OfferCandidate> offer_candidates(store::Tx& tx, ScheduleCache& schedules);

//! The store's market version: bumped (by triggers, migration 6) in every transaction that
//! changes what offer_candidates reads, so an unchanged version means unchanged candidates.
//! A table that offer_candidates starts to read needs the same trigger, in a new migration.
std::int64_t market_version(store::Tx& tx);

//! The offer book every search reads. It is rebuilt only when the market changed (a new
//! market_version: one small query per search checks it, so replicas sharing a PostgreSQL store
//! see each other's changes at once) or when a machine's availability may have changed (the
//! book's valid_until). Thread-safe: searches share one book.
//!
//! A reload reads every candidate again (0.2-0.7 s for 100,000 GPUs: bench/market.sh), so it runs
//! on a thread of the cache's own. The searches in the first max_wait of a reload wait for it (a
//! small market reloads well within that, so a provider sees their new price at once); later ones
//! answer from the previous book at once: in a large market changes come every few seconds, and
//! searches must not all wait for each reload. Only the first search, with no book yet, waits for
//! the whole load.
class OfferCache {
 public:
  //! The version and candidates of one store snapshot; offer_candidates() unless a test says otherwise.
  using Loaded = std::pair<std::int64_t, std::vector<core::OfferCandidate>>;
  using Loader = std::function<Loaded(store::Store&, ScheduleCache&)>;

  //! on_reload: told each background reload's seconds (the metrics).
  explicit OfferCache(std::chrono::milliseconds max_wait = std::chrono::milliseconds{25}, Loader loader = {},
                      std::function<void(double)> on_reload = {});
  ~OfferCache();
  OfferCache(const OfferCache&) = delete;
  OfferCache& operator=(const OfferCache&) = delete;

  //! The book for `now`, from `store`'s candidates (the same store and schedules on every call).
  std::shared_ptr<const core::OfferBook> book(store::Store& store, ScheduleCache& schedules,
                                              const core::RankConfig& config, core::UtcTime now);

 private:
  void install(Loaded loaded);  // with mutex_ held
  void reload_loop(std::stop_token stop);

  const std::chrono::milliseconds max_wait_;
  const Loader loader_;
  const std::function<void(double)> on_reload_;
  std::mutex mutex_;
  std::condition_variable_any work_;      // the reload thread waits here for reload_wanted_
  std::condition_variable_any reloaded_;  // searches wait here for a reload
  bool reload_wanted_ = false;
  std::int64_t requested_ = 0;     // the newest version a reload has been asked for
  std::chrono::steady_clock::time_point wait_until_;  // when that was asked, plus max_wait
  store::Store* store_ = nullptr;  // what the reload thread reads (set by the first search)
  ScheduleCache* schedules_ = nullptr;
  std::optional<std::int64_t> version_;
  std::shared_ptr<const std::vector<core::OfferCandidate>> candidates_;
  core::AvailabilityMemo availability_;
  std::shared_ptr<const core::OfferBook> book_;
  std::jthread reloader_;  // last: started on the first reload, stopped and joined first
};

}  // namespace gpunex::server
