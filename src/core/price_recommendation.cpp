#include "core/price_recommendation.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace gpunex::core {

std::string_view basis_name(PriceBasis b) {
  switch (b) {
    case PriceBasis::regional: return "regional";
    case PriceBasis::global: return "global";
    case PriceBasis::catalog: return "catalog";
  }
  return "catalog";
}

MicroUsdc percentile_nearest_rank(const std::vector<MicroUsdc>& sorted, double p) {
  const auto n = static_cast<double>(sorted.size());
  auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * n - 1e-9));
  rank = std::clamp<std::size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

MicroUsdc median_of(const std::vector<MicroUsdc>& sorted) {
  const std::size_t n = sorted.size();
  if (n % 2 == 1) return sorted[n / 2];
  const MicroUsdc a = sorted[n / 2 - 1];
  const MicroUsdc b = sorted[n / 2];
  return a + (b - a) / 2;
}

RecommendationInput listing_markets(const std::vector<ListingSighting>& sightings, std::string_view region,
                                    std::int64_t now_ms, const RecommendationConfig& config) {
  constexpr std::int64_t kDayMs = 86'400'000;
  const std::int64_t since = now_ms - std::int64_t{config.window_days} * kDayMs;
  std::map<std::string_view, const ListingSighting*> latest;  // by provider
  for (const auto& s : sightings) {
    if (!s.last_active_ms || *s.last_active_ms < since) continue;
    auto& slot = latest[s.provider_id];
    if (!slot || s.price_seq > slot->price_seq) slot = &s;
  }
  RecommendationInput in;
  for (const auto& [provider, s] : latest) {
    in.global.prices.push_back(s->price);
    if (s->region == region) in.regional.prices.push_back(s->price);
  }
  return in;
}

std::optional<Recommendation> recommend_price(const RecommendationInput& in, const RecommendationConfig& config) {
  const auto from_market = [&](const Market& m, PriceBasis basis) -> std::optional<Recommendation> {
    if (m.prices.size() < std::max<std::size_t>(config.min_listings, 1)) return std::nullopt;
    std::vector<MicroUsdc> sorted = m.prices;
    std::sort(sorted.begin(), sorted.end());
    Recommendation r;
    r.basis = basis;
    r.listings = sorted.size();
    r.median = median_of(sorted);
    r.p25 = percentile_nearest_rank(sorted, 25);
    r.p75 = percentile_nearest_rank(sorted, 75);
    const MicroUsdc p90 = percentile_nearest_rank(sorted, 90);
    if (m.utilisation) {
      const double u = std::clamp(*m.utilisation, 0.0, 1.0);
      r.utilisation_factor = 1.0 + config.utilisation_slope * (u - config.target_utilisation);
    }
    const auto raw = static_cast<MicroUsdc>(std::llround(static_cast<double>(r.median) * r.utilisation_factor));
    r.recommended = std::clamp(raw, r.p25, p90);
    return r;
  };
  if (auto r = from_market(in.regional, PriceBasis::regional)) return r;
  if (auto r = from_market(in.global, PriceBasis::global)) return r;
  if (!in.catalog_price) return std::nullopt;
  Recommendation r;
  r.basis = PriceBasis::catalog;
  r.recommended = r.p25 = r.p75 = r.median = *in.catalog_price;
  return r;
}

}  // namespace gpunex::core
