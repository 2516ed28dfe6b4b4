#include "core/rank.hpp"

#include <algorithm>
#include <cmath>

namespace gpunex::core {

double perf_per_usdc(double perf_score, MicroUsdc price) {
  if (price <= 0) return 0;
  return perf_score / (static_cast<double>(price) / static_cast<double>(kMicroPerUsdc));
}

double median_value(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

RankExplanation rank_offer(const RankInput& in, double model_median, const RankConfig& config) {
  RankExplanation e;
  e.reliability_is_prior = !in.reliability.has_value();
  e.reliability = std::clamp(in.reliability.value_or(config.reliability_prior), 0.0, 100.0);
  e.reliability_factor = e.reliability / 100.0;
  e.perf_per_usdc = perf_per_usdc(in.perf_score, in.price);
  e.model_median_perf_per_usdc = model_median;
  // With no median to compare against (a model's only offer), value is neutral.
  e.value_factor = model_median > 0 ? e.perf_per_usdc / model_median : 1.0;
  e.tier = in.tier;
  e.tier_boost = in.tier == Tier::enterprise ? config.enterprise_boost : 1.0;
  e.commitment_months = in.commitment_months;
  if (in.commitment_months >= config.commitment_long_months) e.commitment_boost = config.commitment_long_boost;
  else if (in.commitment_months >= config.commitment_mid_months) e.commitment_boost = config.commitment_mid_boost;
  e.rank = e.reliability_factor * e.value_factor * e.tier_boost * e.commitment_boost;
  return e;
}

nlohmann::json to_json(const RankExplanation& e) {
  // Rounded for display; the order of offers uses the exact rank.
  const auto r4 = [](double x) { return std::round(x * 10000.0) / 10000.0; };
  return {
      {"rank", r4(e.rank)},
      {"reliability", {{"value", r4(e.reliability)}, {"source", e.reliability_is_prior ? "prior" : "score"},
                       {"factor", r4(e.reliability_factor)}}},
      {"value", {{"perf_per_usdc", r4(e.perf_per_usdc)},
                 {"model_median_perf_per_usdc", r4(e.model_median_perf_per_usdc)},
                 {"factor", r4(e.value_factor)}}},
      {"tier", {{"tier", tier_name(e.tier)}, {"factor", r4(e.tier_boost)}}},
      {"commitment", {{"months", e.commitment_months}, {"factor", r4(e.commitment_boost)}}},
  };
}

}  // namespace gpunex::core
