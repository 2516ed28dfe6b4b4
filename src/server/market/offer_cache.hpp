#pragma once
// The offer book every marketplace search reads, kept in memory and rebuilt on
// a thread of its own when the market changes (OfferCache).

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
#include <utility>
#include <vector>

#include "core/marketplace.hpp"
#include "core/rank.hpp"
#include "server/market/offer_candidates.hpp"
#include "store/store.hpp"

namespace gpunex::server {

//! The offer book every search reads. It changes only when the market changed (a new
//! market_version: one small query per search checks it, so replicas sharing a PostgreSQL store
//! see each other's changes at once) or when a machine's availability may have changed (the
//! book's valid_until). Thread-safe: searches share one book.
//!
//! A change is applied on a thread of the cache's own: it reads the market's change log since the
//! cache's version (market_changes, migration 20), the candidates of the machines that changed,
//! and patches the book (core::OfferBook's patching constructor), a few milliseconds for 100,000
//! GPUs. Reading every candidate again (0.2-0.7 s at that size: bench/market.sh) is left to the
//! first load, a global change (the GPU catalog), a change of many machines at once, and a cache
//! older than the log's pruned horizon. The searches in the first max_wait of a reload wait for it
//! (so a provider sees their new price at once); later ones answer from the previous book at once,
//! so that a slow full reload never holds them all. Only the first search, with no book yet, waits
//! for the whole load.
class OfferCache {
 public:
  //! One store snapshot's version and candidates: every candidate, or only those of the machines
  //! that changed after the version the loader was given.
  struct Loaded {
    std::int64_t version = 0;
    std::vector<core::OfferCandidate> candidates;
    //! Set when `candidates` are only those of these machines (each once), which replace theirs.
    std::optional<std::vector<std::string>> changed_machines;
  };
  //! `since`: the version the cache holds (nullopt: none yet, so every candidate is wanted).
  using Loader = std::function<Loaded(store::Store&, ScheduleCache&, std::optional<std::int64_t> since)>;

  //! From one store snapshot: the changed machines' candidates (market_changes) when the change log
  //! reaches back to `since`, else every candidate (offer_candidates()); simulated machines
  //! included only if `allow_simulated`.
  static Loader store_loader(bool allow_simulated);

  //! on_reload: told each background reload's seconds (the metrics).
  explicit OfferCache(std::chrono::milliseconds max_wait = std::chrono::milliseconds{25}, Loader loader = {},
                      std::function<void(double)> on_reload = {});
  ~OfferCache();
  OfferCache(const OfferCache&) = delete;
  OfferCache& operator=(const OfferCache&) = delete;

  //! The book for `now`, from `store`'s candidates (the same store, schedules and config on every call).
  std::shared_ptr<const core::OfferBook> book(store::Store& store, ScheduleCache& schedules,
                                              const core::RankConfig& config, core::UtcTime now);

 private:
  //! A version's candidates and, when already built, its book.
  struct State {
    std::int64_t version = 0;
    std::shared_ptr<const core::CandidateSet> candidates;
    std::shared_ptr<const core::OfferBook> book;
  };
  //! `loaded` applied to `base` (a patch when `loaded` holds only changes); the book built or patched
  //! at `now`, with the reload thread's memo.
  State apply(Loaded loaded, const State& base, core::UtcTime now, const core::RankConfig& config);
  void install(State state);  // with mutex_ held
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
  core::UtcTime last_now_{};  // the latest search's instant and config: the reload thread builds for them
  core::RankConfig config_;
  std::optional<std::int64_t> version_;
  std::shared_ptr<const core::CandidateSet> candidates_;
  core::AvailabilityMemo availability_;         // the searches' (under mutex_)
  core::AvailabilityMemo reload_availability_;  // the reload thread's own
  std::shared_ptr<const core::OfferBook> book_;
  std::jthread reloader_;  // last: started on the first reload, stopped and joined first
};

}  // namespace gpunex::server
