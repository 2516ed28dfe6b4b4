#pragma once
// Provider prices with their history, the market profile an offer shows
// (location, commitment), the listings worker's record of active listings, and
// the inputs of the price recommendation. The formulas live in core/; the SQL
// in market_repo.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/money.hpp"
#include "core/price_recommendation.hpp"
#include "core/result.hpp"
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

//! Sets a provider's rate for the catalog model `model_text` names (catalog_id_named: "l4" is L4;
//! 422 unknown_model, field "model", otherwise); setting the current rate again changes nothing and
//! returns the current row.
core::Result<PriceRow> set_price(store::Tx& tx, const Provider& p, const std::string& model_text, core::MicroUsdc rate,
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
//! The same profile without writing it: the stored one, else the application's. For read transactions
//! (a write in one fails on SQLite when another writer committed since it began).
MarketProfile current_market_profile(store::Tx& tx, const Provider& p, const std::string& model);
//! The profile the application gives (nothing stored).
MarketProfile application_profile(store::Tx& tx, const Provider& p, const std::string& model);

//! Every provider's listing of `model` as far as the store knows it: its current price, active
//! now or not (a listed, present GPU of the model on an online machine), and each earlier or
//! current price last seen active within `since_ms` (listing_activity).
//! Simulated machines' listings count only with `include_simulated` (allow_simulated_offers: where the
//! market offers them); elsewhere nothing unverified sets a price.
std::vector<core::ListingSighting> listing_sightings(store::Tx& tx, const std::string& model, std::int64_t now_ms,
                                                     std::int64_t since_ms, bool include_simulated);
//! The recommendation's market for (model, region) at `now_ms` (core::listing_markets over
//! listing_sightings) and the model's reference price. Until rentals exist, utilisation is
//! unknown: the factor is neutral.
core::RecommendationInput recommendation_input(store::Tx& tx, const std::string& model, const std::string& region,
                                               std::int64_t now_ms, const core::RecommendationConfig& config,
                                               bool include_simulated);
//! The listings worker's round: every listing active now is recorded as seen at `now_ms`
//! (listing_activity), and rows last seen more than `keep_days` ago are deleted. Returns the
//! rows written.
std::size_t record_listing_activity(store::Tx& tx, std::int64_t now_ms, int keep_days, bool include_simulated);

}  // namespace gpunex::server
