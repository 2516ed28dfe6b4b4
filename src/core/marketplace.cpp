#include "core/marketplace.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

namespace gpunex::core {

std::optional<OfferSort> parse_offer_sort(std::string_view s) {
  if (s == "rank") return OfferSort::rank;
  if (s == "price") return OfferSort::price;
  if (s == "perf") return OfferSort::perf;
  return std::nullopt;
}

AvailabilityMemo::Answer AvailabilityMemo::at(const std::shared_ptr<const Schedule>& schedule, UtcTime t) {
  auto& k = known_[schedule.get()];
  if (k.schedule && k.from <= t && t < k.answer.until) return k.answer;
  k.schedule = schedule;
  k.from = t;
  k.answer.available = is_available(*schedule, t);
  k.answer.until = next_change(*schedule, t, kHorizon).value_or(t + kHorizon);
  return k.answer;
}

void AvailabilityMemo::prune() {
  std::erase_if(known_, [](const auto& kv) { return kv.second.schedule.use_count() <= 1; });
}

OfferBook::OfferBook(std::shared_ptr<const std::vector<OfferCandidate>> candidates, UtcTime now,
                     AvailabilityMemo& availability, const RankConfig& config)
    : candidates_(std::move(candidates)), built_at_(now), valid_until_(now + AvailabilityMemo::kHorizon) {
  std::vector<const OfferCandidate*> visible;
  visible.reserve(candidates_->size());
  for (const auto& c : *candidates_) {
    if (c.gpu_count_available <= 0 || c.price <= 0) continue;
    if (c.schedule) {
      const auto a = availability.at(c.schedule, now);
      valid_until_ = std::min(valid_until_, a.until);
      if (!a.available) continue;
    }
    visible.push_back(&c);
  }
  std::map<std::string, std::vector<double>, std::less<>> values;
  for (const auto* c : visible) values[c->model].push_back(perf_per_usdc(c->perf_score, c->price));
  std::map<std::string, double, std::less<>> medians;
  for (auto& [model, v] : values) medians[model] = median_value(std::move(v));

  entries_.reserve(visible.size());
  for (const auto* c : visible) {
    entries_.push_back(Entry{c, rank_offer(RankInput{c->reliability, c->perf_score, c->price, c->tier,
                                                     static_cast<int>(c->commitment_months)},
                                           medians[c->model], config)});
  }
  const auto key = [&](std::uint32_t i) {
    return std::tie(entries_[i].candidate->machine_id, entries_[i].candidate->model);
  };
  for (const OfferSort sort : {OfferSort::rank, OfferSort::price, OfferSort::perf}) {
    auto& order = orders_[static_cast<std::size_t>(sort)];
    order.resize(entries_.size());
    for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::uint32_t ia, std::uint32_t ib) {
      const Entry& a = entries_[ia];
      const Entry& b = entries_[ib];
      switch (sort) {
        case OfferSort::rank:
          if (a.rank.rank != b.rank.rank) return a.rank.rank > b.rank.rank;
          break;
        case OfferSort::price:
          if (a.candidate->price != b.candidate->price) return a.candidate->price < b.candidate->price;
          break;
        case OfferSort::perf:
          if (a.candidate->perf_score != b.candidate->perf_score)
            return a.candidate->perf_score > b.candidate->perf_score;
          break;
      }
      return key(ia) < key(ib);
    });
  }
}

OfferBook::Page OfferBook::search(const OfferFilter& f, std::size_t from, std::size_t limit) const {
  Page page;
  for (const std::uint32_t i : orders_[static_cast<std::size_t>(f.sort)]) {
    const Entry& e = entries_[i];
    const OfferCandidate& c = *e.candidate;
    if (f.models && std::find(f.models->begin(), f.models->end(), c.model) == f.models->end()) continue;
    if (f.region && c.region != *f.region) continue;
    if (f.min_vram_gb && c.vram_gib < *f.min_vram_gb) continue;
    if (f.max_price && c.price > *f.max_price) continue;
    if (f.min_reliability && e.rank.reliability < *f.min_reliability) continue;
    if (f.tier && c.tier != *f.tier) continue;
    if (page.total >= from && page.total - from < limit) page.items.push_back(Offer{c, e.rank, std::nullopt});
    ++page.total;
  }
  return page;
}

std::vector<Offer> assemble_offers(std::vector<OfferCandidate> candidates, UtcTime now, const OfferFilter& f,
                                   const RankConfig& config) {
  AvailabilityMemo availability;
  const OfferBook book(std::make_shared<const std::vector<OfferCandidate>>(std::move(candidates)), now, availability,
                       config);
  return book.search(f).items;
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
          {"simulated", c.simulated},
          {"location", {{"city", c.city}, {"country", c.country}, {"region", c.region}}},
          {"rank", std::round(o.rank.rank * 10000.0) / 10000.0},
          {"rank_explanation", to_json(o.rank)},
          {"available_until", o.available_until ? nlohmann::json(date::format("%FT%TZ", *o.available_until))
                                                : nlohmann::json(nullptr)}};
}

}  // namespace gpunex::core
