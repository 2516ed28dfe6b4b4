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
#include <thread>
#include <utility>
#include <vector>

#include "core/marketplace.hpp"
#include "core/rank.hpp"
#include "server/market/offer_candidates.hpp"
#include "store/store.hpp"

namespace gpunex::server {

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

  //! offer_candidates() from one store snapshot, simulated machines included only if `allow_simulated`.
  static Loader store_loader(bool allow_simulated);

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
