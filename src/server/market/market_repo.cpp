#include "server/market/market_repo.hpp"

#include "core/machine_status.hpp"

namespace gpunex::server {

using store::Row;

namespace {

PriceRecord price_of(const Row& r) {
  return PriceRecord{r.str(0), r.i64(1), r.str(2), r.i64(3), r.i64(4)};
}

constexpr const char* kPriceColumns = "model, usdc_micro, region, seq, started_at";

// A provider's price for a model is an active listing while one of its online machines has a
// present, listed GPU of the model: the same GPUs the offer candidates offer (schedules aside: a
// machine outside its window is still in the market over a week). Reads the fleet's tables.
//! A listing is active on an online machine of the provider with a listed, present GPU of the model; on a
//! simulated machine only where simulated machines are offered (the operator's demo mode, issue 21).
const std::string& active_listing(bool include_simulated) {
  const auto make = [](bool simulated) {
    return "EXISTS (SELECT 1 FROM machines m JOIN machine_gpus g ON g.machine_id = m.id "
           "JOIN gpu_listing l ON l.machine_id = g.machine_id AND l.uuid = g.uuid "
           "WHERE m.provider_id = cp.provider_id AND m.status = '" +
           std::string(core::machine_status_name(core::MachineStatus::online)) +
           "' AND g.present = 1 AND g.model = cp.model AND l.listed = 1" + (simulated ? "" : " AND m.simulated = 0") +
           ")";
  };
  static const std::string with = make(true), without = make(false);
  return include_simulated ? with : without;
}

}  // namespace

std::optional<PriceRecord> MarketRepo::current_price(const std::string& provider_id, const std::string& model) {
  auto r = tx_.query_one(std::string("SELECT ") + kPriceColumns +
                             " FROM provider_current_prices WHERE provider_id = ? AND model = ?",
                         {provider_id, model});
  if (!r) return std::nullopt;
  return price_of(*r);
}

void MarketRepo::add_price(const std::string& provider_id, const PriceRecord& p, const std::string& by_user) {
  tx_.exec("INSERT INTO provider_prices (provider_id, model, seq, usdc_micro, region, started_at, set_by) "
           "VALUES (?, ?, ?, ?, ?, ?, ?)",
           {provider_id, p.model, p.seq, p.usdc_micro, p.region, p.started_at_ms, by_user});
  tx_.exec("INSERT INTO provider_current_prices (provider_id, model, usdc_micro, region, seq, started_at) "
           "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (provider_id, model) DO UPDATE SET usdc_micro = excluded.usdc_micro, "
           "region = excluded.region, seq = excluded.seq, started_at = excluded.started_at",
           {provider_id, p.model, p.usdc_micro, p.region, p.seq, p.started_at_ms});
}

std::vector<PriceRecord> MarketRepo::current_prices(const std::string& provider_id) {
  std::vector<PriceRecord> out;
  for (const auto& r : tx_.query(std::string("SELECT ") + kPriceColumns +
                                     " FROM provider_current_prices WHERE provider_id = ? ORDER BY model",
                                 {provider_id})) {
    out.push_back(price_of(r));
  }
  return out;
}

std::vector<PriceRecord> MarketRepo::price_history(const std::string& provider_id, const std::string& model) {
  std::vector<PriceRecord> out;
  for (const auto& r : tx_.query(std::string("SELECT ") + kPriceColumns +
                                     " FROM provider_prices WHERE provider_id = ? AND model = ? ORDER BY seq DESC",
                                 {provider_id, model})) {
    out.push_back(price_of(r));
  }
  return out;
}

std::vector<CurrentPrice> MarketRepo::all_current_prices(const std::vector<std::string>* providers) {
  std::string sql = "SELECT provider_id, model, usdc_micro FROM provider_current_prices";
  store::Params params;
  if (providers) {
    sql += " WHERE provider_id" + store::in_list(providers->size());
    params.assign(providers->begin(), providers->end());
  }
  std::vector<CurrentPrice> out;
  for (const auto& r : tx_.query(sql, params)) {
    out.push_back(CurrentPrice{r.str(0), r.str(1), r.i64(2)});
  }
  return out;
}

std::optional<ProfileRecord> MarketRepo::profile(const std::string& provider_id) {
  auto r = tx_.query_one("SELECT city, country, region, commitment_months FROM provider_market_profiles "
                         "WHERE provider_id = ?",
                         {provider_id});
  if (!r) return std::nullopt;
  return ProfileRecord{r->str(0), r->str(1), r->str(2), r->i64(3)};
}

void MarketRepo::add_profile(const std::string& provider_id, const ProfileRecord& p, std::int64_t now_ms) {
  tx_.exec("INSERT INTO provider_market_profiles (provider_id, city, country, region, commitment_months, updated_at) "
           "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (provider_id) DO NOTHING",
           {provider_id, p.city, p.country, p.region, p.commitment_months, now_ms});
}

std::vector<std::pair<core::ListingSighting, bool>> MarketRepo::current_listings(const std::string& model,
                                                                                 bool include_simulated) {
  std::vector<std::pair<core::ListingSighting, bool>> out;
  for (const auto& r : tx_.query("SELECT cp.provider_id, cp.region, cp.usdc_micro, cp.seq, CASE WHEN " +
                                     active_listing(include_simulated) +
                                     " THEN 1 ELSE 0 END FROM provider_current_prices cp "
                                     "WHERE cp.model = ? ORDER BY cp.provider_id",
                                 {model})) {
    out.emplace_back(core::ListingSighting{r.str(0), r.str(1), r.i64(2), r.i64(3), std::nullopt}, r.i64(4) != 0);
  }
  return out;
}

std::vector<core::ListingSighting> MarketRepo::listing_activity(const std::string& model, std::int64_t since_ms) {
  std::vector<core::ListingSighting> out;
  for (const auto& r : tx_.query("SELECT provider_id, region, usdc_micro, price_seq, last_active_at "
                                 "FROM listing_activity WHERE model = ? AND last_active_at >= ? "
                                 "ORDER BY provider_id, price_seq",
                                 {model, since_ms})) {
    out.push_back(core::ListingSighting{r.str(0), r.str(1), r.i64(2), r.i64(3), r.i64(4)});
  }
  return out;
}

std::int64_t MarketRepo::record_active_listings(std::int64_t now_ms, bool include_simulated) {
  return tx_.exec("INSERT INTO listing_activity (provider_id, model, price_seq, usdc_micro, "
                  "region, first_active_at, last_active_at) "
                  "SELECT cp.provider_id, cp.model, cp.seq, cp.usdc_micro, cp.region, ?, ? "
                  "FROM provider_current_prices cp WHERE " +
                      active_listing(include_simulated) +
                      " ON CONFLICT (provider_id, model, price_seq) DO UPDATE SET "
                      "last_active_at = excluded.last_active_at "
                      "WHERE excluded.last_active_at > listing_activity.last_active_at",
                  {now_ms, now_ms});
}

void MarketRepo::delete_listing_activity_before(std::int64_t before_ms) {
  tx_.exec("DELETE FROM listing_activity WHERE last_active_at < ?", {before_ms});
}

std::vector<OfferMachineRow> MarketRepo::online_offer_machines(const MarketChanges* only) {
  static const std::string q =
      "SELECT m.id, m.provider_id, COALESCE(mp.city, ''), COALESCE(mp.country, ''), "
      "COALESCE(mp.region, ''), COALESCE(mp.commitment_months, 0), ms.spec, m.simulated "
      "FROM machines m LEFT JOIN provider_market_profiles mp ON mp.provider_id = m.provider_id "
      "LEFT JOIN machine_schedules ms ON ms.machine_id = m.id "
      "WHERE m.rentals_blocked IS NULL AND m.status = '" +
      std::string(core::machine_status_name(core::MachineStatus::online)) + "'";
  std::string sql = q;
  store::Params params;
  if (only) {
    // Two selects rather than one OR: SQLite's planner took the OR for a walk of the status index
    // (every online machine: 6 ms of CPU at 20,000, against 0.5 ms); each half alone is an index search.
    sql += " AND m.id" + store::in_list(only->machines.size()) + " UNION " + q + " AND m.provider_id" +
           store::in_list(only->providers.size());
    params.assign(only->machines.begin(), only->machines.end());
    params.insert(params.end(), only->providers.begin(), only->providers.end());
  }
  std::vector<OfferMachineRow> out;
  for (const auto& r : tx_.query(sql, params)) {
    out.push_back(OfferMachineRow{r.str(0), r.str(1), r.str(2), r.str(3), r.str(4), r.i64(5), r.opt_str(6),
                                  r.i64(7) != 0});
  }
  return out;
}

std::vector<ListedGpuRow> MarketRepo::listed_gpus(const std::vector<std::string>* machines) {
  std::string sql =
      "SELECT g.machine_id, g.model, l.perf_score FROM machine_gpus g "
      "JOIN gpu_listing l ON l.machine_id = g.machine_id AND l.uuid = g.uuid "
      "LEFT JOIN gpu_allocations a ON a.machine_id = g.machine_id AND a.uuid = g.uuid "
      "WHERE a.uuid IS NULL AND g.present = 1 AND l.listed = 1 AND l.perf_score IS NOT NULL "
      "AND g.model IS NOT NULL";
  store::Params params;
  if (machines) {
    sql += " AND g.machine_id" + store::in_list(machines->size());
    params.assign(machines->begin(), machines->end());
  }
  std::vector<ListedGpuRow> out;
  for (const auto& r : tx_.query(sql + " ORDER BY g.machine_id, g.uuid", params)) {
    out.push_back(ListedGpuRow{r.str(0), r.str(1), r.f64(2)});
  }
  return out;
}

void MarketRepo::read_one_snapshot() {
  if (tx_.dialect() == store::Dialect::postgres) tx_.exec("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY");
}

std::int64_t MarketRepo::market_version() {
  const auto r = tx_.query_one("SELECT version FROM market_version WHERE id = 1");
  if (!r) throw store::StoreError("market_version has no row (migration 6)");
  return r->i64(0);
}

MarketChanges MarketRepo::market_changes_since(std::int64_t version, std::size_t limit) {
  MarketChanges out;
  const auto from = tx_.query_one("SELECT changes_from FROM market_version WHERE id = 1");
  if (!from || version < from->i64(0)) {
    out.everything = true;
    return out;
  }
  // LIMIT: a bulk change (a fleet's import) would otherwise be read row by row only to be reloaded whole.
  const auto rows = tx_.query("SELECT DISTINCT kind, id FROM market_changes WHERE version > ? LIMIT ?",
                              {version, static_cast<std::int64_t>(limit) + 1});
  if (rows.size() > limit) {
    out.everything = true;
    return out;
  }
  for (const auto& r : rows) {
    const auto kind = r.str(0);
    if (kind == "all") {
      out.everything = true;
    } else {
      (kind == "provider" ? out.providers : out.machines).push_back(r.str(1));
    }
  }
  return out;
}

void MarketRepo::prune_market_changes(std::int64_t version) {
  tx_.exec("DELETE FROM market_changes WHERE version <= ?", {version});
  tx_.exec("UPDATE market_version SET changes_from = ? WHERE id = 1 AND changes_from < ?", {version, version});
}

}  // namespace gpunex::server
