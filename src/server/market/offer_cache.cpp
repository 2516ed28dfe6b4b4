#include "server/market/offer_cache.hpp"

#include "server/market/market_repo.hpp"
#include "util/log.hpp"

namespace gpunex::server {

namespace {

// One snapshot for the version and offer_candidates' queries, so the candidates are exactly those of
// the version (SQLite reads a whole transaction at one snapshot; PostgreSQL does so from REPEATABLE
// READ on, and a read-only transaction there never fails to serialise).
OfferCache::Loaded load_candidates(store::Store& store, ScheduleCache& schedules, bool allow_simulated) {
  return store.transact(
      [&](store::Tx& tx) {
        MarketRepo(tx).read_one_snapshot();
        return std::make_pair(market_version(tx), offer_candidates(tx, schedules, allow_simulated));
      },
      store::TxMode::read);
}

}  // namespace

OfferCache::Loader OfferCache::store_loader(bool allow_simulated) {
  return [allow_simulated](store::Store& store, ScheduleCache& schedules) {
    return load_candidates(store, schedules, allow_simulated);
  };
}

OfferCache::OfferCache(std::chrono::milliseconds max_wait, Loader loader, std::function<void(double)> on_reload)
    : max_wait_(max_wait),
      loader_(loader ? std::move(loader) : store_loader(false)),
      on_reload_(std::move(on_reload)) {}

OfferCache::~OfferCache() {
  reloader_.request_stop();  // the thread wakes (work_ waits on its stop token) and ends
  if (reloader_.joinable()) reloader_.join();
}

void OfferCache::install(Loaded loaded) {
  version_ = loaded.first;
  candidates_ = std::make_shared<const std::vector<core::OfferCandidate>>(std::move(loaded.second));
  book_.reset();
  availability_.prune();
}

void OfferCache::reload_loop(std::stop_token stop) {
  std::unique_lock lock(mutex_);
  while (work_.wait(lock, stop, [&] { return reload_wanted_; })) {
    // Every version requested so far was committed before this snapshot begins.
    reload_wanted_ = false;
    std::optional<Loaded> loaded;
    lock.unlock();
    const auto t0 = std::chrono::steady_clock::now();
    try {
      loaded = loader_(*store_, *schedules_);
      if (on_reload_) on_reload_(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    } catch (const std::exception& e) {
      util::log_event("warn", "offer cache reload failed", {{"error", e.what()}});
    }
    lock.lock();
    if (!loaded) {
      requested_ = version_.value_or(0);  // the next search that sees the change asks again
    } else if (!version_ || loaded->first >= *version_) {  // not older than one installed inline meanwhile
      install(std::move(*loaded));
    }
    reloaded_.notify_all();
  }
}

std::shared_ptr<const core::OfferBook> OfferCache::book(store::Store& store, ScheduleCache& schedules,
                                                        const core::RankConfig& config, core::UtcTime now) {
  const auto read_version = [&] {
    return store.transact([](store::Tx& tx) { return market_version(tx); }, store::TxMode::read);
  };
  std::int64_t version = read_version();
  std::unique_lock lock(mutex_);
  // Older than the cached one: read before another search's reload, most likely; read again, as
  // a store put back from a backup can also go back.
  if (version_ && version < *version_) version = read_version();
  if (!version_ || version < *version_) {
    install(loader_(store, schedules));  // no book yet, or a store put back: wait for it
    requested_ = *version_;
  } else if (version > *version_) {
    // A change no reload has been asked to cover: one that starts from now on will (one more,
    // when a reload is running, as it may have read before this change). The searches wait for it
    // until max_wait after it was asked for.
    if (version > requested_) {
      requested_ = version;
      wait_until_ = std::chrono::steady_clock::now() + max_wait_;
      store_ = &store;
      schedules_ = &schedules;
      reload_wanted_ = true;
      if (!reloader_.joinable()) reloader_ = std::jthread([this](std::stop_token stop) { reload_loop(stop); });
      work_.notify_one();
    }
    reloaded_.wait_until(lock, wait_until_, [&] { return *version_ >= version; });
  }
  if (!book_ || now < book_->built_at() || now >= book_->valid_until()) {
    book_ = std::make_shared<const core::OfferBook>(candidates_, now, availability_, config);
  }
  return book_;
}

}  // namespace gpunex::server
