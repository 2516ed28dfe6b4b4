#include "core/price_recommendation.hpp"

#include <gtest/gtest.h>

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
