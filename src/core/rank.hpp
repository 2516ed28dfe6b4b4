#pragma once
// Marketplace rank (DESIGN §4): reliability/100 · value · tier boost ·
// commitment boost, where value is the offer's performance per USDC divided by
// the median performance per USDC of offers of the same GPU model. A rank of 1
// is an average-value offer from a perfectly reliable Community provider.
// Every factor is reported, so a listing can show why it ranks where it does.

#include <optional>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/application.hpp"  // Tier, tier_name, parse_tier
#include "core/money.hpp"

namespace gpunex::core {

//! Every constant of the rank, with DESIGN §4's defaults (operator configuration).
struct RankConfig {
  double enterprise_boost = 1.15;
  int commitment_mid_months = 6;
  double commitment_mid_boost = 1.05;
  int commitment_long_months = 12;
  double commitment_long_boost = 1.10;
  //! The reliability a machine carries until its score has been computed.
  double reliability_prior = 90.0;
};

struct RankInput {
  //! 0..100; nullopt until the reliability score exists (the prior is used).
  std::optional<double> reliability;
  double perf_score = 0;
  MicroUsdc price = 0;  // per GPU-hour
  Tier tier = Tier::community;
  int commitment_months = 0;
};

struct RankExplanation {
  double reliability = 0;
  bool reliability_is_prior = false;
  double reliability_factor = 0;
  double perf_per_usdc = 0;
  double model_median_perf_per_usdc = 0;
  double value_factor = 1;
  Tier tier = Tier::community;
  double tier_boost = 1;
  int commitment_months = 0;
  double commitment_boost = 1;
  double rank = 0;
};

//! Performance score per USDC per GPU-hour; 0 for a non-positive price.
double perf_per_usdc(double perf_score, MicroUsdc price);
//! The median of perf_per_usdc values (mean of the middle two); 0 for none.
double median_value(std::vector<double> values);
//! The rank of one offer, given the median value of its model's offers.
RankExplanation rank_offer(const RankInput& in, double model_median_perf_per_usdc, const RankConfig& config = {});
//! The explanation as the API shows it (rank_explanation).
nlohmann::json to_json(const RankExplanation& e);

}  // namespace gpunex::core
