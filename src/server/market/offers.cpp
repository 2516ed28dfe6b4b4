#include "server/market/offers.hpp"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "server/onboarding/applications.hpp"
#include "server/fleet/gpu_catalog.hpp"
#include "util/log.hpp"
#include "util/time.hpp"

namespace gpunex::server {

using core::Error;
using core::ErrorCode;

namespace {

PriceRow price_row(const store::Row& r) {
  return PriceRow{r.str(0), r.i64(1), r.str(2), r.i64(3), r.i64(4)};
}

constexpr const char* kPriceColumns = "model, usdc_micro, region, seq, started_at";

}  // namespace

nlohmann::json PriceRow::to_json() const {
  return {{"model", model},
          {"usdc_per_gpu_hour", core::format_usdc(usdc_micro)},
          {"region", region},
          {"started_at", util::rfc3339(started_at_ms)}};
}

MarketProfile market_profile(store::Tx& tx, const Provider& p, const std::string& model, std::int64_t now_ms) {
  if (auto r = tx.query_one("SELECT city, country, region, commitment_months FROM provider_market_profiles "
                            "WHERE provider_id = ?",
                            {p.id})) {
    return MarketProfile{r->str(0), r->str(1), r->str(2), r->i64(3)};
  }
  MarketProfile m;
  if (auto app = load_application(tx, p.application_id)) {
    m.commitment_months = app->form.commitment_months;
    const core::GpuEntry* entry = nullptr;
    for (const auto& g : app->form.gpus) {
      if (g.model == model) {
        entry = &g;
        break;
      }
    }
    if (!entry && !app->form.gpus.empty()) entry = &app->form.gpus.front();
    if (entry) m = MarketProfile{entry->location.city, entry->location.country, entry->location.region, m.commitment_months};
  }
  tx.exec("INSERT INTO provider_market_profiles (provider_id, city, country, region, commitment_months, updated_at) "
          "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (provider_id) DO NOTHING",
          {p.id, m.city, m.country, m.region, m.commitment_months, now_ms});
  return m;
}

core::Result<PriceRow> set_price(store::Tx& tx, const Provider& p, const std::string& model, core::MicroUsdc rate,
                                 const std::string& by_user, std::int64_t now_ms) {
  if (!find_model(tx, model)) {
    return Error::make(ErrorCode::unprocessable, "model: \"" + model + "\" is not in the GPU catalog", "model")
        .with_code("unknown_model");
  }
  const auto current = tx.query_one(std::string("SELECT ") + kPriceColumns +
                                        " FROM provider_current_prices WHERE provider_id = ? AND model = ?",
                                    {p.id, model});
  if (current && current->i64(1) == rate) return price_row(*current);
  const std::int64_t seq = current ? current->i64(3) + 1 : 1;
  const MarketProfile profile = market_profile(tx, p, model, now_ms);
  tx.exec("INSERT INTO provider_prices (provider_id, model, seq, usdc_micro, region, started_at, set_by) "
          "VALUES (?, ?, ?, ?, ?, ?, ?)",
          {p.id, model, seq, rate, profile.region, now_ms, by_user});
  tx.exec("INSERT INTO provider_current_prices (provider_id, model, usdc_micro, region, seq, started_at) "
          "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (provider_id, model) DO UPDATE SET usdc_micro = excluded.usdc_micro, "
          "region = excluded.region, seq = excluded.seq, started_at = excluded.started_at",
          {p.id, model, rate, profile.region, seq, now_ms});
  return PriceRow{model, rate, profile.region, seq, now_ms};
}

std::vector<PriceRow> current_prices(store::Tx& tx, const std::string& provider_id) {
  std::vector<PriceRow> out;
  for (const auto& r : tx.query(std::string("SELECT ") + kPriceColumns +
                                    " FROM provider_current_prices WHERE provider_id = ? ORDER BY model",
                                {provider_id})) {
    out.push_back(price_row(r));
  }
  return out;
}

std::vector<PriceRow> price_history(store::Tx& tx, const std::string& provider_id, const std::string& model) {
  std::vector<PriceRow> out;
  for (const auto& r : tx.query(std::string("SELECT ") + kPriceColumns +
                                    " FROM provider_prices WHERE provider_id = ? AND model = ? ORDER BY seq DESC",
                                {provider_id, model})) {
    out.push_back(price_row(r));
  }
  return out;
}

namespace {

// A provider's price for a model is an active listing while one of its online machines has a
// present, listed GPU of the model: the same GPUs offer_candidates offers (schedules aside: a
// machine outside its window is still in the market over a week).
constexpr const char* kActiveListing =
    "EXISTS (SELECT 1 FROM machines m JOIN machine_gpus g ON g.machine_id = m.id "
    "JOIN gpu_listing l ON l.machine_id = g.machine_id AND l.uuid = g.uuid "
    "WHERE m.provider_id = cp.provider_id AND m.status = 'online' AND g.present = 1 AND g.model = cp.model "
    "AND l.listed = 1)";

}  // namespace

std::vector<core::ListingSighting> listing_sightings(store::Tx& tx, const std::string& model, std::int64_t now_ms,
                                                     std::int64_t since_ms) {
  std::vector<core::ListingSighting> out;
  for (const auto& r : tx.query(std::string("SELECT cp.provider_id, cp.region, cp.usdc_micro, cp.seq, CASE WHEN ") +
                                    kActiveListing + " THEN 1 ELSE 0 END FROM provider_current_prices cp "
                                    "WHERE cp.model = ? ORDER BY cp.provider_id",
                                {model})) {
    out.push_back(core::ListingSighting{r.str(0), r.str(1), r.i64(2), r.i64(3),
                                        r.i64(4) != 0 ? std::optional<std::int64_t>(now_ms) : std::nullopt});
  }
  for (const auto& r : tx.query("SELECT provider_id, region, usdc_micro, price_seq, last_active_at "
                                "FROM listing_activity WHERE model = ? AND last_active_at >= ? "
                                "ORDER BY provider_id, price_seq",
                                {model, since_ms})) {
    out.push_back(core::ListingSighting{r.str(0), r.str(1), r.i64(2), r.i64(3), r.i64(4)});
  }
  return out;
}

core::RecommendationInput recommendation_input(store::Tx& tx, const std::string& model, const std::string& region,
                                               std::int64_t now_ms, const core::RecommendationConfig& config) {
  constexpr std::int64_t kDayMs = 86'400'000;
  const std::int64_t since = now_ms - std::int64_t{config.window_days} * kDayMs;
  auto in = core::listing_markets(listing_sightings(tx, model, now_ms, since), region, now_ms, config);
  in.catalog_price = reference_price(tx, model);
  return in;
}

std::size_t record_listing_activity(store::Tx& tx, std::int64_t now_ms, int keep_days) {
  constexpr std::int64_t kDayMs = 86'400'000;
  const auto seen = tx.exec(std::string("INSERT INTO listing_activity (provider_id, model, price_seq, usdc_micro, "
                                        "region, first_active_at, last_active_at) "
                                        "SELECT cp.provider_id, cp.model, cp.seq, cp.usdc_micro, cp.region, ?, ? "
                                        "FROM provider_current_prices cp WHERE ") +
                                kActiveListing +
                                " ON CONFLICT (provider_id, model, price_seq) DO UPDATE SET "
                                "last_active_at = excluded.last_active_at "
                                "WHERE excluded.last_active_at > listing_activity.last_active_at",
                            {now_ms, now_ms});
  tx.exec("DELETE FROM listing_activity WHERE last_active_at < ?", {now_ms - std::int64_t{keep_days} * kDayMs});
  return static_cast<std::size_t>(seen);
}

std::optional<std::string> machine_owner(store::Tx& tx, const std::string& machine_id) {
  auto r = tx.query_one("SELECT provider_id FROM machines WHERE id = ?", {machine_id});
  if (!r) return std::nullopt;
  return r->str(0);
}

void save_schedule(store::Tx& tx, const std::string& provider_id, const std::string& machine_id,
                   const core::Schedule& s, std::int64_t now_ms) {
  const nlohmann::json spec = core::schedule_to_json(s);
  tx.exec("INSERT INTO machine_schedules (machine_id, provider_id, timezone, always_on, spec, updated_at) "
          "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (machine_id) DO UPDATE SET timezone = excluded.timezone, "
          "always_on = excluded.always_on, spec = excluded.spec, updated_at = excluded.updated_at",
          {machine_id, provider_id, s.timezone, std::int64_t{s.always ? 1 : 0}, spec.dump(), now_ms});
  // A window keeps the time it was first declared while its definition stays the same.
  using Key = std::tuple<std::string, std::string, std::string>;  // kind, category, canonical JSON
  std::map<Key, std::int64_t> declared;
  for (const auto& r : tx.query("SELECT kind, category, recurrence, starts_at, ends_at, start_local, end_local, "
                                "declared_at FROM maintenance_windows WHERE machine_id = ?",
                                {machine_id})) {
    const std::string shape = r.opt_str(2).value_or("") + "|" + std::to_string(r.opt_i64(3).value_or(0)) + "|" +
                              std::to_string(r.opt_i64(4).value_or(0)) + "|" + r.opt_str(5).value_or("") + "|" +
                              r.opt_str(6).value_or("");
    declared.emplace(Key{r.str(0), r.str(1), shape}, r.i64(7));
  }
  tx.exec("DELETE FROM maintenance_windows WHERE machine_id = ?", {machine_id});
  const auto& items = spec["maintenance"];
  for (std::size_t i = 0; i < s.maintenance.size(); ++i) {
    const auto& m = s.maintenance[i];
    const auto& j = items[i];
    const bool once = m.kind == core::MaintenanceWindow::Kind::one_off;
    const std::string kind = once ? "one_off" : m.kind == core::MaintenanceWindow::Kind::weekly ? "weekly" : "monthly";
    const std::string recurrence = once ? "" : j["recurrence"].dump();
    const std::int64_t starts = once ? m.start_utc.time_since_epoch().count() * 1000 : 0;
    const std::int64_t ends = once ? m.end_utc.time_since_epoch().count() * 1000 : 0;
    const std::string start_local = once ? "" : j["start"].get<std::string>();
    const std::string end_local = once ? "" : j["end"].get<std::string>();
    const std::string shape = recurrence + "|" + std::to_string(starts) + "|" + std::to_string(ends) + "|" +
                              start_local + "|" + end_local;
    const auto it = declared.find(Key{kind, std::string(core::category_name(m.category)), shape});
    const auto opt_text = [](const std::string& v) -> store::Value {
      if (v.empty()) return nullptr;
      return v;
    };
    const auto opt_ms = [&](std::int64_t v) -> store::Value {
      if (!once) return nullptr;
      return v;
    };
    tx.exec("INSERT INTO maintenance_windows (machine_id, idx, category, kind, starts_at, ends_at, recurrence, "
            "start_local, end_local, note, declared_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            {machine_id, static_cast<std::int64_t>(i), std::string(core::category_name(m.category)), kind,
             opt_ms(starts), opt_ms(ends), opt_text(recurrence), opt_text(start_local), opt_text(end_local), m.note,
             it == declared.end() ? now_ms : it->second});
  }
}

std::optional<core::Schedule> load_schedule(store::Tx& tx, const std::string& machine_id) {
  auto r = tx.query_one("SELECT spec FROM machine_schedules WHERE machine_id = ?", {machine_id});
  if (!r) return std::nullopt;
  auto s = core::parse_schedule(nlohmann::json::parse(r->str(0)));
  // Stored schedules were validated when saved; one that no longer parses (a time zone removed
  // from the OS database) fails loudly rather than silently listing the machine.
  if (!s) throw store::StoreError("machine " + machine_id + ": stored schedule is invalid: " + s.error().message);
  return std::move(s).value();
}

nlohmann::json schedule_json(const std::string& machine_id, const core::Schedule& s, std::int64_t now_ms) {
  const core::UtcTime now{std::chrono::seconds{now_ms / 1000}};
  const auto ms = [](std::optional<core::UtcTime> t) -> nlohmann::json {
    if (!t) return nullptr;
    return util::rfc3339(t->time_since_epoch().count() * 1000);
  };
  nlohmann::json j = core::schedule_to_json(s);
  j["machine_id"] = machine_id;
  j["available_now"] = core::is_available(s, now);
  j["available_until"] = ms(core::available_until(s, now));
  j["next_window_start"] = ms(core::next_window_start(s, now));
  return j;
}

std::shared_ptr<const core::Schedule> ScheduleCache::get(const std::string& spec) {
  {
    std::lock_guard lock(mutex_);
    if (auto it = parsed_.find(spec); it != parsed_.end()) return it->second;
  }
  auto s = core::parse_schedule(nlohmann::json::parse(spec));
  if (!s) throw store::StoreError("stored schedule is invalid: " + s.error().message);
  auto shared = std::make_shared<const core::Schedule>(std::move(s).value());
  std::lock_guard lock(mutex_);
  if (parsed_.size() >= capacity_) parsed_.clear();
  parsed_.emplace(spec, shared);
  return shared;
}

std::vector<core::OfferCandidate> offer_candidates(store::Tx& tx, ScheduleCache& schedules) {
  // Plain queries joined here by key, rather than one seven-way join: the planners misjudge that
  // join at this size (PostgreSQL estimates a handful of rows for 100,000 GPUs and picks nested
  // loops), and each query alone is a scan or an index walk.
  struct Machine {
    std::string provider_id;
    core::Tier tier = core::Tier::community;
    std::string city, country, region;
    std::int64_t commitment_months = 0;
    std::shared_ptr<const core::Schedule> schedule;
  };
  std::unordered_map<std::string, Machine> machines;
  for (const auto& r : tx.query("SELECT m.id, m.provider_id, p.tier, COALESCE(mp.city, ''), COALESCE(mp.country, ''), "
                                "COALESCE(mp.region, ''), COALESCE(mp.commitment_months, 0), ms.spec "
                                "FROM machines m JOIN providers p ON p.id = m.provider_id "
                                "LEFT JOIN provider_market_profiles mp ON mp.provider_id = p.id "
                                "LEFT JOIN machine_schedules ms ON ms.machine_id = m.id "
                                "WHERE m.status = 'online'")) {
    Machine m;
    m.provider_id = r.str(1);
    m.tier = core::parse_tier(r.str(2)).value_or(core::Tier::community);
    m.city = r.str(3);
    m.country = r.str(4);
    m.region = r.str(5);
    m.commitment_months = r.i64(6);
    if (auto spec = r.opt_str(7)) m.schedule = schedules.get(*spec);
    machines.emplace(r.str(0), std::move(m));
  }
  std::unordered_map<std::string, core::MicroUsdc> prices;  // by provider id + '\n' + model
  for (const auto& r : tx.query("SELECT provider_id, model, usdc_micro FROM provider_current_prices")) {
    prices.emplace(r.str(0) + '\n' + r.str(1), r.i64(2));
  }
  std::unordered_map<std::string, double> vram;
  for (const auto& r : tx.query("SELECT id, vram_gib FROM gpu_models")) vram.emplace(r.str(0), r.f64(1));

  // Listed GPUs in key order, summed here per (machine, model): the mean perf score is then the
  // same on every plan and store (a database's AVG sums in whatever order its plan reads, and
  // PostgreSQL's parallel plans change that order from one run to the next).
  std::vector<core::OfferCandidate> out;
  struct Group {
    std::string model;
    std::int64_t gpus = 0;
    double perf_sum = 0;
  };
  std::vector<Group> groups;  // of the machine being read, in the order its models appear
  const Machine* machine = nullptr;
  std::string machine_id;
  const auto flush = [&] {
    for (const auto& g : groups) {
      const auto price = prices.find(machine->provider_id + '\n' + g.model);
      if (price == prices.end()) continue;  // not priced by its provider
      const auto v = vram.find(g.model);
      if (v == vram.end()) continue;
      core::OfferCandidate c;
      c.machine_id = machine_id;
      c.model = g.model;
      c.gpu_count_available = g.gpus;  // no rentals yet: every listed GPU is free
      c.perf_score = g.perf_sum / static_cast<double>(g.gpus);
      c.price = price->second;
      c.tier = machine->tier;
      c.city = machine->city;
      c.country = machine->country;
      c.region = machine->region;
      c.commitment_months = machine->commitment_months;
      c.vram_gib = v->second;
      c.schedule = machine->schedule;
      out.push_back(std::move(c));
    }
    groups.clear();
  };
  for (const auto& r : tx.query("SELECT g.machine_id, g.model, l.perf_score FROM machine_gpus g "
                                "JOIN gpu_listing l ON l.machine_id = g.machine_id AND l.uuid = g.uuid "
                                "WHERE g.present = 1 AND l.listed = 1 AND l.perf_score IS NOT NULL "
                                "AND g.model IS NOT NULL ORDER BY g.machine_id, g.uuid")) {
    std::string id = r.str(0);
    if (id != machine_id) {
      if (machine) flush();
      const auto m = machines.find(id);
      machine = m == machines.end() ? nullptr : &m->second;  // null: offline
      machine_id = std::move(id);
    }
    if (!machine) continue;
    std::string model = r.str(1);
    auto g = std::find_if(groups.begin(), groups.end(), [&](const Group& x) { return x.model == model; });
    if (g == groups.end()) g = groups.insert(groups.end(), Group{std::move(model)});
    ++g->gpus;
    g->perf_sum += r.f64(2);
  }
  if (machine) flush();
  return out;
}

std::int64_t market_version(store::Tx& tx) {
  const auto r = tx.query_one("SELECT version FROM market_version WHERE id = 1");
  if (!r) throw store::StoreError("market_version has no row (migration 6)");
  return r->i64(0);
}

namespace {

// One snapshot for the version and offer_candidates' queries, so the candidates are exactly those of
// the version (SQLite reads a whole transaction at one snapshot; PostgreSQL does so from REPEATABLE
// READ on, and a read-only transaction there never fails to serialise).
OfferCache::Loaded load_candidates(store::Store& store, ScheduleCache& schedules) {
  return store.transact(
      [&](store::Tx& tx) {
        if (tx.dialect() == store::Dialect::postgres)
          tx.exec("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY");
        return std::make_pair(market_version(tx), offer_candidates(tx, schedules));
      },
      store::TxMode::read);
}

}  // namespace

OfferCache::OfferCache(std::chrono::milliseconds max_wait, Loader loader, std::function<void(double)> on_reload)
    : max_wait_(max_wait),
      loader_(loader ? std::move(loader) : Loader(load_candidates)),
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
