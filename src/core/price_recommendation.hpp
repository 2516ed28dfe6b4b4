#pragma once
// The price the platform suggests to a provider for a GPU model in a region
// (DESIGN §4): the median of active listing prices over the last 7 days, times
// 1 + slope·(utilisation − target), clamped to the listings' 25th–90th
// percentile. With fewer than min_listings prices in the region it uses all
// regions, then the catalog reference price, and says which it used.
//
// A listing is one provider's price for the model. It is active while the
// provider has a listed GPU of the model on an online machine; a price set
// with no such GPU is no listing. The window counts a listing seen active at
// any time in the last window_days before now, at its latest such price.
//
// Percentiles are nearest-rank: the p-th percentile of n sorted prices is the
// ceil(p/100·n)-th smallest, so it is always a price somebody listed. The
// median is the middle price, or the mean of the two middle ones (rounded
// down to the micro-USDC). Money stays integer; only the utilisation factor is
// a double, and the product is rounded to the nearest micro-USDC.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/money.hpp"

namespace gpunex::core {

struct RecommendationConfig {
  //! Fewer listings than this in a basis make the estimate too noisy: fall back to the next basis.
  std::size_t min_listings = 3;
  double target_utilisation = 0.7;
  double utilisation_slope = 0.5;
  //! Listings seen active within this many days before now count.
  int window_days = 7;
};

enum class PriceBasis { regional, global, catalog };
std::string_view basis_name(PriceBasis b);

//! One basis's market: the active listing prices and, when known, the share of listed GPU-hours rented.
struct Market {
  std::vector<MicroUsdc> prices;
  //! 0..1; nullopt while there is no rental history: the factor is then neutral (1).
  std::optional<double> utilisation;
};

struct RecommendationInput {
  Market regional;
  Market global;
  std::optional<MicroUsdc> catalog_price;
};

struct Recommendation {
  MicroUsdc recommended = 0;
  MicroUsdc p25 = 0;
  MicroUsdc p75 = 0;
  PriceBasis basis = PriceBasis::catalog;
  std::size_t listings = 0;  // prices in the basis used (0 for catalog)
  MicroUsdc median = 0;
  double utilisation_factor = 1.0;
};

//! One provider's listing of a model as the store saw it.
struct ListingSighting {
  std::string provider_id;
  std::string region;     // where the provider was when it set this price
  MicroUsdc price = 0;
  std::int64_t price_seq = 0;  // the provider's price sequence for the model: a later price replaces an earlier one
  //! The last time the listing was active at this price (epoch ms); nullopt when it never was
  //! (priced, but no listed GPU of the model on an online machine).
  std::optional<std::int64_t> last_active_ms;
};

//! The listing prices DESIGN §4 takes at `now_ms`: of listings active within config.window_days
//! before it, one price per provider (its latest price seen active), in `region` (regional) and in
//! all regions (global). Utilisation is left unknown and the catalog price unset.
RecommendationInput listing_markets(const std::vector<ListingSighting>& sightings, std::string_view region,
                                    std::int64_t now_ms, const RecommendationConfig& config = {});

//! Nearest-rank percentile (0 < p ≤ 100) of prices; `sorted` must be ascending and non-empty.
MicroUsdc percentile_nearest_rank(const std::vector<MicroUsdc>& sorted, double p);
//! The median of ascending, non-empty prices (mean of the middle two, rounded down).
MicroUsdc median_of(const std::vector<MicroUsdc>& sorted);

//! The recommendation, or nullopt when no basis has enough listings and the catalog has no price.
//! With the catalog basis, p25 = p75 = recommended = the catalog price.
std::optional<Recommendation> recommend_price(const RecommendationInput& in, const RecommendationConfig& config = {});

}  // namespace gpunex::core
