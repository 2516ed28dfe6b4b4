#include "core/marketplace.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace gpunex::core {

std::optional<OfferSort> parse_offer_sort(std::string_view s) {
  if (s == "rank") return OfferSort::rank;
  if (s == "price") return OfferSort::price;
  if (s == "perf") return OfferSort::perf;
  return std::nullopt;
}

std::vector<Offer> assemble_offers(std::vector<OfferCandidate> candidates, UtcTime now, const OfferFilter& f,
                                   const RankConfig& config) {
  std::vector<Offer> visible;
  visible.reserve(candidates.size());
  for (auto& c : candidates) {
    if (c.gpu_count_available <= 0 || c.price <= 0) continue;
    if (c.schedule && !is_available(*c.schedule, now)) continue;
    visible.push_back(Offer{std::move(c), {}, std::nullopt});
  }
  std::map<std::string, std::vector<double>, std::less<>> values;
  for (const auto& o : visible)
    values[o.candidate.model].push_back(perf_per_usdc(o.candidate.perf_score, o.candidate.price));
  std::map<std::string, double, std::less<>> medians;
  for (auto& [model, v] : values) medians[model] = median_value(std::move(v));

  std::vector<Offer> out;
  for (auto& o : visible) {
    const auto& c = o.candidate;
    o.rank = rank_offer(RankInput{c.reliability, c.perf_score, c.price, c.tier, static_cast<int>(c.commitment_months)},
                        medians[c.model], config);
    if (f.model && c.model != *f.model) continue;
    if (f.region && c.region != *f.region) continue;
    if (f.min_vram_gb && c.vram_gib < *f.min_vram_gb) continue;
    if (f.max_price && c.price > *f.max_price) continue;
    if (f.min_reliability && o.rank.reliability < *f.min_reliability) continue;
    if (f.tier && c.tier != *f.tier) continue;
    out.push_back(std::move(o));
  }
  const auto key = [](const Offer& o) { return std::tie(o.candidate.machine_id, o.candidate.model); };
  std::sort(out.begin(), out.end(), [&](const Offer& a, const Offer& b) {
    switch (f.sort) {
      case OfferSort::rank:
        if (a.rank.rank != b.rank.rank) return a.rank.rank > b.rank.rank;
        break;
      case OfferSort::price:
        if (a.candidate.price != b.candidate.price) return a.candidate.price < b.candidate.price;
        break;
      case OfferSort::perf:
        if (a.candidate.perf_score != b.candidate.perf_score) return a.candidate.perf_score > b.candidate.perf_score;
        break;
    }
    return key(a) < key(b);
  });
  return out;
}

void fill_available_until(Offer& o, UtcTime now) {
  o.available_until = o.candidate.schedule ? available_until(*o.candidate.schedule, now) : std::nullopt;
}

nlohmann::json to_json(const Offer& o) {
  const auto& c = o.candidate;
  const auto r2 = [](double x) { return std::round(x * 100.0) / 100.0; };
  return {{"machine_id", c.machine_id},
          {"model", c.model},
          {"gpu_count_available", c.gpu_count_available},
          {"usdc_per_gpu_hour", format_usdc(c.price)},
          {"perf_score", r2(c.perf_score)},
          {"vram_gb", c.vram_gib},
          {"reliability", r2(o.rank.reliability)},
          {"reliability_is_prior", o.rank.reliability_is_prior},
          {"tier", tier_name(c.tier)},
          {"location", {{"city", c.city}, {"country", c.country}, {"region", c.region}}},
          {"rank", std::round(o.rank.rank * 10000.0) / 10000.0},
          {"rank_explanation", to_json(o.rank)},
          {"available_until", o.available_until ? nlohmann::json(date::format("%FT%TZ", *o.available_until))
                                                : nlohmann::json(nullptr)}};
}

}  // namespace gpunex::core
