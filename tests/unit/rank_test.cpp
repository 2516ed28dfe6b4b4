#include "core/rank.hpp"

#include <gtest/gtest.h>

using namespace gpunex::core;  // NOLINT: test file

TEST(Rank, AverageOfferFromCommunityProviderWithPerfectReliability) {
  RankInput in{100.0, 80.0, 2'000'000, Tier::community, 3};
  auto e = rank_offer(in, 40.0);  // 80 perf / 2 USDC = 40 per USDC = the median
  EXPECT_DOUBLE_EQ(e.perf_per_usdc, 40.0);
  EXPECT_DOUBLE_EQ(e.value_factor, 1.0);
  EXPECT_DOUBLE_EQ(e.rank, 1.0);
  EXPECT_FALSE(e.reliability_is_prior);
  EXPECT_DOUBLE_EQ(e.commitment_boost, 1.0);
}

TEST(Rank, EveryFactorMultiplies) {
  RankInput in{80.0, 100.0, 2'000'000, Tier::enterprise, 12};
  auto e = rank_offer(in, 25.0);  // 50 per USDC, twice the median
  EXPECT_DOUBLE_EQ(e.reliability_factor, 0.8);
  EXPECT_DOUBLE_EQ(e.value_factor, 2.0);
  EXPECT_DOUBLE_EQ(e.tier_boost, 1.15);
  EXPECT_DOUBLE_EQ(e.commitment_boost, 1.10);
  EXPECT_NEAR(e.rank, 0.8 * 2.0 * 1.15 * 1.10, 1e-12);
}

TEST(Rank, CommitmentSteps) {
  RankInput in{100.0, 10.0, 1'000'000, Tier::community, 0};
  for (auto [months, boost] : std::vector<std::pair<int, double>>{{0, 1.0}, {3, 1.0}, {5, 1.0}, {6, 1.05}, {11, 1.05},
                                                                  {12, 1.10}, {24, 1.10}}) {
    in.commitment_months = months;
    EXPECT_DOUBLE_EQ(rank_offer(in, 10.0).commitment_boost, boost) << months;
  }
}

TEST(Rank, PriorUntilTheScoreExists) {
  RankInput in{std::nullopt, 10.0, 1'000'000, Tier::community, 0};
  auto e = rank_offer(in, 10.0);
  EXPECT_TRUE(e.reliability_is_prior);
  EXPECT_DOUBLE_EQ(e.reliability, 90.0);
  EXPECT_DOUBLE_EQ(e.rank, 0.9);
  RankConfig config;
  config.reliability_prior = 75;
  EXPECT_DOUBLE_EQ(rank_offer(in, 10.0, config).rank, 0.75);
  auto j = to_json(e);
  EXPECT_EQ(j["reliability"]["source"], "prior");
  EXPECT_EQ(j["reliability"]["value"], 90.0);
  EXPECT_EQ(j["tier"]["tier"], "community");
  EXPECT_EQ(j["commitment"]["factor"], 1.0);
  EXPECT_EQ(j["rank"], 0.9);
}

TEST(Rank, ConfigOverridesBoosts) {
  RankConfig config;
  config.enterprise_boost = 1.5;
  config.commitment_long_boost = 2.0;
  RankInput in{100.0, 10.0, 1'000'000, Tier::enterprise, 12};
  EXPECT_DOUBLE_EQ(rank_offer(in, 10.0, config).rank, 3.0);
}

TEST(Rank, CheaperOrFasterRanksHigher) {
  const double median = median_value({perf_per_usdc(100, 2'000'000), perf_per_usdc(100, 2'500'000),
                                      perf_per_usdc(100, 3'000'000)});
  EXPECT_DOUBLE_EQ(median, 40.0);
  RankInput cheap{std::nullopt, 100.0, 2'000'000, Tier::community, 0};
  RankInput dear{std::nullopt, 100.0, 3'000'000, Tier::community, 0};
  EXPECT_GT(rank_offer(cheap, median).rank, rank_offer(dear, median).rank);
  RankInput fast{std::nullopt, 120.0, 3'000'000, Tier::community, 0};
  EXPECT_GT(rank_offer(fast, median).rank, rank_offer(dear, median).rank);
}

TEST(Rank, EdgeCases) {
  EXPECT_DOUBLE_EQ(perf_per_usdc(100, 0), 0.0);
  EXPECT_DOUBLE_EQ(median_value({}), 0.0);
  EXPECT_DOUBLE_EQ(median_value({1, 3}), 2.0);
  RankInput in{150.0, 10.0, 1'000'000, Tier::community, 0};  // reliability clamped to 100
  EXPECT_DOUBLE_EQ(rank_offer(in, 0.0).rank, 1.0);           // no median: neutral value
  EXPECT_EQ(parse_tier("enterprise"), Tier::enterprise);
  EXPECT_EQ(parse_tier("Enterprise"), std::nullopt);
}
