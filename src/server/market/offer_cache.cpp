#include "server/market/offer_cache.hpp"

#include <string_view>
#include <unordered_set>

#include "server/market/market_repo.hpp"
#include "util/log.hpp"

namespace gpunex::server {

namespace {

// More changed machines and providers than this are read as a whole market: a thousand-key filter
// is still a few milliseconds, and a change that large (a fleet's import) is rare.
constexpr std::size_t kMaxChanges = 1000;

// One snapshot for the version, the change log and the candidates' queries, so the candidates are
// exactly those of the version (SQLite reads a whole transaction at one snapshot; PostgreSQL does
// so from REPEATABLE READ on, and a read-only transaction there never fails to serialise).
OfferCache::Loaded load_candidates(store::Store& store, ScheduleCache& schedules, bool allow_simulated,
                                   std::optional<std::int64_t> since) {
  return store.transact(
      [&](store::Tx& tx) {
        MarketRepo repo(tx);
        repo.read_one_snapshot();
        OfferCache::Loaded out;
        out.version = repo.market_version();
        if (since && out.version >= *since) {
          auto changes = repo.market_changes_since(*since, kMaxChanges);
          if (!changes.everything) {
            auto changed = changed_offer_candidates(tx, schedules, allow_simulated, changes);
            out.candidates = std::move(changed.candidates);
            out.changed_machines = std::move(changed.machines);
            return out;
          }
        }
        out.candidates = offer_candidates(tx, schedules, allow_simulated);
        return out;
      },
      store::TxMode::read);
}

// The vector's candidates, shared with it (no copies).
std::shared_ptr<const core::CandidateSet> share(std::vector<core::OfferCandidate> candidates,
                                                core::CandidateSet into = {}) {
  const auto owner = std::make_shared<const std::vector<core::OfferCandidate>>(std::move(candidates));
  into.reserve(into.size() + owner->size());
  for (const auto& c : *owner) into.emplace_back(owner, &c);
  return std::make_shared<const core::CandidateSet>(std::move(into));
}

}  // namespace

OfferCache::Loader OfferCache::store_loader(bool allow_simulated) {
  return [allow_simulated](store::Store& store, ScheduleCache& schedules, std::optional<std::int64_t> since) {
    return load_candidates(store, schedules, allow_simulated, since);
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

OfferCache::State OfferCache::apply(Loaded loaded, const State& base, core::UtcTime now,
                                    const core::RankConfig& config) {
  State next{loaded.version, nullptr, nullptr};
  if (!loaded.changed_machines || !base.candidates) {
    next.candidates = share(std::move(loaded.candidates));
    next.book = std::make_shared<const core::OfferBook>(next.candidates, now, reload_availability_, config);
    reload_availability_.prune();
    return next;
  }
  const std::unordered_set<std::string_view> changed(loaded.changed_machines->begin(), loaded.changed_machines->end());
  core::CandidateSet kept;
  kept.reserve(base.candidates->size() + loaded.candidates.size());
  for (const auto& c : *base.candidates) {
    if (!changed.contains(c->machine_id)) kept.push_back(c);
  }
  const std::size_t added_from = kept.size();
  next.candidates = share(std::move(loaded.candidates), std::move(kept));
  if (base.book && base.book->built_at() <= now && now < base.book->valid_until()) {
    next.book = std::make_shared<const core::OfferBook>(*base.book, next.candidates, changed, added_from, now,
                                                        reload_availability_, config);
  } else {
    next.book = std::make_shared<const core::OfferBook>(next.candidates, now, reload_availability_, config);
  }
  reload_availability_.prune();
  return next;
}

void OfferCache::install(State state) {
  version_ = state.version;
  candidates_ = std::move(state.candidates);
  book_ = std::move(state.book);
  availability_.prune();
}

void OfferCache::reload_loop(std::stop_token stop) {
  std::unique_lock lock(mutex_);
  while (work_.wait(lock, stop, [&] { return reload_wanted_; })) {
    // Every version requested so far was committed before this snapshot begins.
    reload_wanted_ = false;
    const State base{version_.value_or(0), candidates_, book_};
    const auto since = version_;
    const auto now = last_now_;
    const auto config = config_;
    std::optional<State> next;
    lock.unlock();
    const auto t0 = std::chrono::steady_clock::now();
    try {
      next = apply(loader_(*store_, *schedules_, since), base, now, config);
      if (on_reload_) on_reload_(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    } catch (const std::exception& e) {
      util::log_event("warn", "offer cache reload failed", {{"error", e.what()}});
    }
    lock.lock();
    if (next && version_ == since) {
      install(std::move(*next));
    } else {
      // Failed, or a search installed a full load meanwhile (a store put back), which this one
      // may not patch: the next search that sees a change asks again.
      requested_ = version_.value_or(0);
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
  last_now_ = now;
  config_ = config;
  // Older than the cached one: read before another search's reload, most likely; read again, as
  // a store put back from a backup can also go back.
  if (version_ && version < *version_) version = read_version();
  if (!version_ || version < *version_) {
    // No book yet, or a store put back: wait for the whole load.
    auto loaded = loader_(store, schedules, std::nullopt);
    install(State{loaded.version, share(std::move(loaded.candidates)), nullptr});
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
