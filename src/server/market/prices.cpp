#include "server/market/prices.hpp"

#include "server/onboarding/gpu_catalog.hpp"
#include "server/market/market_repo.hpp"
#include "server/onboarding/applications.hpp"
#include "util/time.hpp"

namespace gpunex::server {

using core::Error;
using core::ErrorCode;

namespace {

constexpr std::int64_t kDayMs = 86'400'000;

PriceRow price_row(const PriceRecord& r) {
  return PriceRow{r.model, r.usdc_micro, r.region, r.seq, r.started_at_ms};
}

std::vector<PriceRow> price_rows(const std::vector<PriceRecord>& records) {
  std::vector<PriceRow> out;
  out.reserve(records.size());
  for (const auto& r : records) out.push_back(price_row(r));
  return out;
}

}  // namespace

nlohmann::json PriceRow::to_json() const {
  return {{"model", model},
          {"usdc_per_gpu_hour", core::format_usdc(usdc_micro)},
          {"region", region},
          {"started_at", util::rfc3339(started_at_ms)}};
}

MarketProfile market_profile(store::Tx& tx, const Provider& p, const std::string& model, std::int64_t now_ms) {
  MarketRepo repo(tx);
  if (auto r = repo.profile(p.id)) return MarketProfile{r->city, r->country, r->region, r->commitment_months};
  const MarketProfile m = application_profile(tx, p, model);
  repo.add_profile(p.id, ProfileRecord{m.city, m.country, m.region, m.commitment_months}, now_ms);
  return m;
}

MarketProfile current_market_profile(store::Tx& tx, const Provider& p, const std::string& model) {
  if (auto r = MarketRepo(tx).profile(p.id)) return MarketProfile{r->city, r->country, r->region, r->commitment_months};
  return application_profile(tx, p, model);
}

MarketProfile application_profile(store::Tx& tx, const Provider& p, const std::string& model) {
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
  return m;
}

core::Result<PriceRow> set_price(store::Tx& tx, const Provider& p, const std::string& model_text, core::MicroUsdc rate,
                                 const std::string& by_user, std::int64_t now_ms) {
  auto id = catalog_id_named(tx, model_text, "model");
  if (!id) return std::move(id).error();
  const std::string& model = *id;
  MarketRepo repo(tx);
  const auto current = repo.current_price(p.id, model);
  if (current && current->usdc_micro == rate) return price_row(*current);
  const std::int64_t seq = current ? current->seq + 1 : 1;
  const MarketProfile profile = market_profile(tx, p, model, now_ms);
  const PriceRecord price{model, rate, profile.region, seq, now_ms};
  repo.add_price(p.id, price, by_user);
  return price_row(price);
}

std::vector<PriceRow> current_prices(store::Tx& tx, const std::string& provider_id) {
  return price_rows(MarketRepo(tx).current_prices(provider_id));
}

std::vector<PriceRow> price_history(store::Tx& tx, const std::string& provider_id, const std::string& model) {
  return price_rows(MarketRepo(tx).price_history(provider_id, model));
}

std::vector<core::ListingSighting> listing_sightings(store::Tx& tx, const std::string& model, std::int64_t now_ms,
                                                     std::int64_t since_ms, bool include_simulated) {
  MarketRepo repo(tx);
  std::vector<core::ListingSighting> out;
  for (auto& [sighting, active_now] : repo.current_listings(model, include_simulated)) {
    if (active_now) sighting.last_active_ms = now_ms;
    out.push_back(std::move(sighting));
  }
  for (auto& s : repo.listing_activity(model, since_ms)) out.push_back(std::move(s));
  return out;
}

core::RecommendationInput recommendation_input(store::Tx& tx, const std::string& model, const std::string& region,
                                               std::int64_t now_ms, const core::RecommendationConfig& config,
                                               bool include_simulated) {
  const std::int64_t since = now_ms - std::int64_t{config.window_days} * kDayMs;
  auto in = core::listing_markets(listing_sightings(tx, model, now_ms, since, include_simulated), region, now_ms,
                                  config);
  in.catalog_price = reference_price(tx, model);
  return in;
}

std::size_t record_listing_activity(store::Tx& tx, std::int64_t now_ms, int keep_days, bool include_simulated) {
  MarketRepo repo(tx);
  const auto seen = repo.record_active_listings(now_ms, include_simulated);
  repo.delete_listing_activity_before(now_ms - std::int64_t{keep_days} * kDayMs);
  return static_cast<std::size_t>(seen);
}

}  // namespace gpunex::server
