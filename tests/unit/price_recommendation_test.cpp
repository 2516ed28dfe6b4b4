#include "core/price_recommendation.hpp"
#include "test_time.hpp"

#include <gtest/gtest.h>

#include <chrono>

using namespace gpunex::core;  // NOLINT: test file

namespace {
constexpr MicroUsdc usdc(double x) { return static_cast<MicroUsdc>(x * 1'000'000 + 0.5); }
}  // namespace

TEST(Percentile, NearestRank) {
  const std::vector<MicroUsdc> v = {10, 20, 30, 40, 50, 60, 70, 80, 90, 100};
  EXPECT_EQ(percentile_nearest_rank(v, 25), 30);  // ceil(2.5) = 3rd
  EXPECT_EQ(percentile_nearest_rank(v, 75), 80);  // ceil(7.5) = 8th
  EXPECT_EQ(percentile_nearest_rank(v, 90), 90);  // 9th exactly
  EXPECT_EQ(percentile_nearest_rank(v, 100), 100);
  EXPECT_EQ(percentile_nearest_rank(v, 1), 10);
  EXPECT_EQ(percentile_nearest_rank({7}, 25), 7);
  const std::vector<MicroUsdc> three = {1, 2, 3};
  EXPECT_EQ(percentile_nearest_rank(three, 25), 1);
  EXPECT_EQ(percentile_nearest_rank(three, 75), 3);
  EXPECT_EQ(percentile_nearest_rank(three, 90), 3);
}

TEST(Percentile, Median) {
  EXPECT_EQ(median_of({1, 2, 3}), 2);
  EXPECT_EQ(median_of({1, 2, 3, 4}), 2);  // 2.5 rounded down
  EXPECT_EQ(median_of({2'000'000, 3'000'000}), 2'500'000);
  EXPECT_EQ(median_of({5}), 5);
}

TEST(Recommendation, RegionalAtTargetUtilisationIsTheMedian) {
  RecommendationInput in;
  in.regional.prices = {usdc(2.0), usdc(2.2), usdc(2.4), usdc(2.6), usdc(3.0)};
  in.regional.utilisation = 0.7;
  auto r = recommend_price(in);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->basis, PriceBasis::regional);
  EXPECT_EQ(r->recommended, usdc(2.4));
  EXPECT_EQ(r->p25, usdc(2.2));
  EXPECT_EQ(r->p75, usdc(2.6));
  EXPECT_EQ(r->listings, 5u);
}

TEST(Recommendation, UtilisationMovesThePriceWithinTheClamp) {
  RecommendationInput in;
  // 10 prices 1.00 .. 1.90: median 1.45 (mean of 1.40 and 1.50), p25 1.20, p90 1.80.
  for (int i = 0; i < 10; ++i) in.regional.prices.push_back(usdc(1.0 + 0.1 * i));
  in.regional.utilisation = 0.9;  // factor 1.1 → 1.595
  EXPECT_EQ(recommend_price(in)->recommended, 1'595'000);
  in.regional.utilisation = 1.0;  // factor 1.15 → 1.6675
  EXPECT_EQ(recommend_price(in)->recommended, 1'667'500);
  in.regional.utilisation = 0.5;  // factor 0.9 → 1.305
  EXPECT_EQ(recommend_price(in)->recommended, 1'305'000);
  in.regional.utilisation = 0.0;  // factor 0.65 → 0.9425, clamped up to p25
  EXPECT_EQ(recommend_price(in)->recommended, usdc(1.2));
  in.regional.utilisation = 7.0;  // nonsense is clamped to 1
  EXPECT_EQ(recommend_price(in)->recommended, 1'667'500);
  in.regional.utilisation.reset();  // no rental history: neutral factor
  EXPECT_EQ(recommend_price(in)->recommended, 1'450'000);
}

TEST(Recommendation, ClampsToP90) {
  RecommendationInput in;
  // median 2.0; p90 of {1,2,2,2,2.05} is 2.05; factor 1.15 would give 2.3.
  in.regional.prices = {usdc(1), usdc(2), usdc(2), usdc(2), usdc(2.05)};
  in.regional.utilisation = 1.0;
  EXPECT_EQ(recommend_price(in)->recommended, usdc(2.05));
}

TEST(Recommendation, FallsBackToGlobalThenCatalog) {
  RecommendationConfig config;  // min_listings = 3
  RecommendationInput in;
  in.regional.prices = {usdc(9), usdc(9)};  // too few
  in.global.prices = {usdc(1), usdc(2), usdc(3), usdc(9), usdc(9)};
  in.catalog_price = usdc(2.5);
  auto r = recommend_price(in, config);
  EXPECT_EQ(r->basis, PriceBasis::global);
  EXPECT_EQ(r->recommended, usdc(3));
  EXPECT_EQ(basis_name(r->basis), "global");

  in.global.prices = {usdc(1), usdc(2)};
  r = recommend_price(in, config);
  EXPECT_EQ(r->basis, PriceBasis::catalog);
  EXPECT_EQ(r->recommended, usdc(2.5));
  EXPECT_EQ(r->p25, usdc(2.5));
  EXPECT_EQ(r->p75, usdc(2.5));
  EXPECT_EQ(r->listings, 0u);

  in.catalog_price.reset();
  EXPECT_FALSE(recommend_price(in, config));
}

TEST(Recommendation, MinimumListingsIsConfigurable) {
  RecommendationInput in;
  in.regional.prices = {usdc(4)};
  in.global.prices = {usdc(1), usdc(1), usdc(1)};
  RecommendationConfig one;
  one.min_listings = 1;
  EXPECT_EQ(recommend_price(in, one)->basis, PriceBasis::regional);
  EXPECT_EQ(recommend_price(in)->basis, PriceBasis::global);
  in.regional.prices = {usdc(4), usdc(4), usdc(5)};  // exactly the minimum
  EXPECT_EQ(recommend_price(in)->basis, PriceBasis::regional);
}

// Issue 14 item 8: the recommendation reads active listing prices over the last 7 days only.
namespace {

using gpunex::test_support::kDay;
using gpunex::test_support::kHour;

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

ListingSighting seen(std::string provider, std::string region, double price, std::optional<std::int64_t> active,
                     std::int64_t seq = 1) {
  return ListingSighting{std::move(provider), std::move(region), usdc(price), seq, active};
}

}  // namespace

TEST(ListingMarkets, OnlyListingsActiveInTheLastSevenDaysCount) {
  const auto now = now_ms();
  const std::vector<ListingSighting> s = {
      seen("p1", "eu", 1.00, now),                  // active now
      seen("p2", "eu", 1.20, now - 2 * kDay),       // ended two days ago: still in the window
      seen("p3", "eu", 1.40, now - 7 * kDay + kHour),  // just inside
      seen("p4", "eu", 9.00, now - 8 * kDay),       // ended eight days ago
      seen("p5", "eu", 0.10, std::nullopt),         // priced, but never a listed GPU on an online machine
      seen("p6", "us", 2.00, now - kHour),
  };
  const auto in = listing_markets(s, "eu", now);
  EXPECT_EQ(in.regional.prices, (std::vector<MicroUsdc>{usdc(1.00), usdc(1.20), usdc(1.40)}));
  EXPECT_EQ(in.global.prices, (std::vector<MicroUsdc>{usdc(1.00), usdc(1.20), usdc(1.40), usdc(2.00)}));
  EXPECT_FALSE(in.regional.utilisation);
  EXPECT_FALSE(in.catalog_price);

  // The 8-day-old and the never-active prices would have moved the recommendation.
  auto r = recommend_price(in);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->basis, PriceBasis::regional);
  EXPECT_EQ(r->recommended, usdc(1.20));
  EXPECT_EQ(r->listings, 3u);

  // A shorter window (operator configuration) drops the two-day-old listing too.
  RecommendationConfig one_day;
  one_day.window_days = 1;
  EXPECT_EQ(listing_markets(s, "eu", now, one_day).regional.prices,
            (std::vector<MicroUsdc>{usdc(1.00)}));
}

TEST(ListingMarkets, OneListingPerProviderAtItsLatestActivePrice) {
  const auto now = now_ms();
  const std::vector<ListingSighting> s = {
      seen("p1", "eu", 1.00, now - 3 * kDay, 1),
      seen("p1", "eu", 1.50, now, 2),           // the same listing, repriced: replaces 1.00
      seen("p2", "eu", 0.90, now - 9 * kDay, 1),  // p2's old price, out of the window
      seen("p2", "eu", 1.10, now - kDay, 2),
      seen("p3", "eu", 1.30, now - kDay, 1),
      seen("p3", "eu", 5.00, std::nullopt, 2),  // repriced after its GPUs went offline: never active at 5.00
  };
  const auto in = listing_markets(s, "eu", now);
  EXPECT_EQ(in.regional.prices, (std::vector<MicroUsdc>{usdc(1.50), usdc(1.10), usdc(1.30)}));
}

TEST(ListingMarkets, NothingActiveFallsBackToTheCatalogPrice) {
  const auto now = now_ms();
  auto in = listing_markets({seen("p1", "eu", 1.0, now - 8 * kDay), seen("p2", "eu", 1.1, std::nullopt),
                             seen("p3", "eu", 1.2, std::nullopt)},
                            "eu", now);
  EXPECT_TRUE(in.global.prices.empty());
  EXPECT_FALSE(recommend_price(in));  // no basis at all: the server says so
  in.catalog_price = usdc(0.9);
  EXPECT_EQ(recommend_price(in)->basis, PriceBasis::catalog);
}
