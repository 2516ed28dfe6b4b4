#pragma once
// The market's tables, and every SQL statement that reads or writes them:
// provider_prices, provider_current_prices, provider_market_profiles,
// listing_activity and market_version (store/migrations.cpp), plus the offer
// candidates' read across the fleet's tables (machines, machine_gpus,
// gpu_listing, machine_schedules). Typed rows in and out. Works inside the
// caller's transaction.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/application.hpp"
#include "core/marketplace.hpp"
#include "core/money.hpp"
#include "core/price_recommendation.hpp"
#include "store/store.hpp"

namespace gpunex::server {

//! One price of a provider for a model (provider_prices; the current one also in provider_current_prices).
struct PriceRecord {
  std::string model;
  core::MicroUsdc usdc_micro = 0;
  std::string region;
  std::int64_t seq = 0;
  std::int64_t started_at_ms = 0;
};

//! Where a provider's GPUs are and for how long it committed (provider_market_profiles).
struct ProfileRecord {
  std::string city, country, region;
  std::int64_t commitment_months = 0;
};

//! An online machine as an offer shows it: its provider, location and schedule text.
struct OfferMachineRow {
  std::string machine_id, provider_id;
  std::string city, country, region;
  std::int64_t commitment_months = 0;
  std::optional<std::string> schedule_spec;
  bool simulated = false;  // the machine's own flag (machines.simulated), never a benchmark report's
};

//! A present, listed, scored GPU of a catalog model.
struct ListedGpuRow {
  std::string machine_id, model;
  double perf_score = 0;
};

//! A provider's current price of a model.
struct CurrentPrice {
  std::string provider_id, model;
  core::MicroUsdc usdc_micro = 0;
};

//! What changed in the market after a version (market_changes, migration 20).
struct MarketChanges {
  bool everything = false;                       // a global change (the GPU catalog), or changes no longer logged
  std::vector<std::string> machines, providers;  // each once
};

//! The market tables of one transaction.
class MarketRepo {
 public:
  explicit MarketRepo(store::Tx& tx) : tx_(tx) {}

  std::optional<PriceRecord> current_price(const std::string& provider_id, const std::string& model);
  //! Adds a price to the history and makes it the current one.
  void add_price(const std::string& provider_id, const PriceRecord& p, const std::string& by_user);
  //! The provider's current prices by model id.
  std::vector<PriceRecord> current_prices(const std::string& provider_id);
  //! Every price the provider set for a model, newest first.
  std::vector<PriceRecord> price_history(const std::string& provider_id, const std::string& model);
  //! Every provider's current price, for the offer candidates; only `providers`' when given.
  std::vector<CurrentPrice> all_current_prices(const std::vector<std::string>* providers = nullptr);

  std::optional<ProfileRecord> profile(const std::string& provider_id);
  //! Stores a profile unless the provider already has one.
  void add_profile(const std::string& provider_id, const ProfileRecord& p, std::int64_t now_ms);

  //! Every provider's current price of `model` (by provider) with whether it is an active listing now.
  //! Simulated machines count only with `include_simulated` (the operator's demo mode offers them).
  std::vector<std::pair<core::ListingSighting, bool>> current_listings(const std::string& model,
                                                                       bool include_simulated);
  //! Earlier and current prices of `model` last seen active at or after `since_ms`.
  std::vector<core::ListingSighting> listing_activity(const std::string& model, std::int64_t since_ms);
  //! Records every active listing as seen at `now_ms`; returns the rows written.
  std::int64_t record_active_listings(std::int64_t now_ms, bool include_simulated);
  void delete_listing_activity_before(std::int64_t before_ms);

  //! Online machines with their provider's profile and their schedule (the tier is onboarding's:
  //! onboarding_repo::provider_tiers); when `only` is given, only the machines it names and those of
  //! the providers it names.
  std::vector<OfferMachineRow> online_offer_machines(const MarketChanges* only = nullptr);
  //! Listed GPUs that no rental holds (gpu_allocations), in key order (machine, uuid); only `machines`'
  //! when given.
  std::vector<ListedGpuRow> listed_gpus(const std::vector<std::string>* machines = nullptr);

  //! Makes the rest of the transaction read one snapshot (PostgreSQL: REPEATABLE READ, READ ONLY; SQLite
  //! always does). First in the transaction.
  void read_one_snapshot();
  //! The store's market version (migration 6's triggers bump it).
  std::int64_t market_version();
  //! The machines and providers whose offers changed after `version`, up to this snapshot's version;
  //! everything when more than `limit` of them did (reading them one by one would be slower than
  //! reading all), or when the log no longer goes back to `version` (pruned).
  MarketChanges market_changes_since(std::int64_t version, std::size_t limit);
  //! Forgets the changes up to `version` (market_changes_since for older versions says everything).
  void prune_market_changes(std::int64_t version);

 private:
  store::Tx& tx_;
};

}  // namespace gpunex::server
