#include "core/marketplace.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include "core/text.hpp"

namespace gpunex::core {

namespace {
constexpr std::array<OfferSort, 3> kOfferSorts{OfferSort::rank, OfferSort::price, OfferSort::perf};
}  // namespace

std::string_view offer_sort_name(OfferSort s) {
  switch (s) {
    case OfferSort::price:
      return "price";
    case OfferSort::perf:
      return "perf";
    case OfferSort::rank:
      break;
  }
  return "rank";
}

std::optional<OfferSort> parse_offer_sort(std::string_view s) {
  for (const OfferSort sort : kOfferSorts) {
    if (s == offer_sort_name(sort)) return sort;
  }
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

namespace {

// The vector's candidates, shared with it (no copies).
std::shared_ptr<const CandidateSet> share(std::shared_ptr<const std::vector<OfferCandidate>> candidates) {
  auto set = std::make_shared<CandidateSet>();
  set->reserve(candidates->size());
  for (const auto& c : *candidates) set->emplace_back(candidates, &c);
  return set;
}

RankExplanation rank_of(const OfferCandidate& c, double model_median, const RankConfig& config) {
  return rank_offer(RankInput{c.reliability, c.perf_score, c.price, c.tier, static_cast<int>(c.commitment_months)},
                    model_median, config);
}

}  // namespace

OfferBook::OfferBook(std::shared_ptr<const std::vector<OfferCandidate>> candidates, UtcTime now,
                     AvailabilityMemo& availability, const RankConfig& config)
    : OfferBook(share(std::move(candidates)), now, availability, config) {}

OfferBook::OfferBook(std::shared_ptr<const CandidateSet> candidates, UtcTime now, AvailabilityMemo& availability,
                     const RankConfig& config)
    : candidates_(std::move(candidates)), built_at_(now), valid_until_(now + AvailabilityMemo::kHorizon) {
  std::vector<const OfferCandidate*> visible;
  visible.reserve(candidates_->size());
  for (const auto& c : *candidates_) {
    if (c->gpu_count_available <= 0 || c->price <= 0) continue;
    if (c->schedule) {
      const auto a = availability.at(c->schedule, now);
      valid_until_ = std::min(valid_until_, a.until);
      if (!a.available) continue;
    }
    visible.push_back(c.get());
  }
  rank_entries(visible, config);
  for (const OfferSort sort : {OfferSort::rank, OfferSort::price, OfferSort::perf}) {
    auto& order = orders_[static_cast<std::size_t>(sort)];
    order.resize(entries_.size());
    for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) { return before(sort, a, b); });
  }
}

void OfferBook::rank_entries(const std::vector<const OfferCandidate*>& visible, const RankConfig& config) {
  std::unordered_map<std::string_view, std::uint32_t> index;
  std::vector<std::vector<double>> values;
  entries_.reserve(visible.size());
  for (const auto* c : visible) {
    const auto [it, added] = index.try_emplace(c->model, static_cast<std::uint32_t>(models_.size()));
    if (added) {
      models_.push_back(Model{c->model});
      values.emplace_back();
    }
    values[it->second].push_back(perf_per_usdc(c->perf_score, c->price));
    entries_.push_back(Entry{c, {}, it->second});
  }
  for (std::size_t m = 0; m < models_.size(); ++m) models_[m].median = median_value(std::move(values[m]));
  for (auto& e : entries_) e.rank = rank_of(*e.candidate, models_[e.model].median, config);
}

OfferBook::OfferBook(const OfferBook& previous, std::shared_ptr<const CandidateSet> candidates,
                     const std::unordered_set<std::string_view>& changed_machines, std::size_t added_from, UtcTime now,
                     AvailabilityMemo& availability, const RankConfig& config)
    : candidates_(std::move(candidates)),
      models_(previous.models_),
      built_at_(now),
      valid_until_(previous.valid_until_) {
  // The previous entries that stay, and where each went (kGone: its machine changed).
  constexpr std::uint32_t kGone = std::numeric_limits<std::uint32_t>::max();
  std::vector<std::uint32_t> moved(previous.entries_.size(), kGone);
  std::vector<char> touched(models_.size(), 0);  // models that lost or gained an offer
  entries_.reserve(previous.entries_.size() + (candidates_->size() - added_from));
  for (std::uint32_t i = 0; i < previous.entries_.size(); ++i) {
    const Entry& e = previous.entries_[i];
    if (changed_machines.contains(e.candidate->machine_id)) {
      touched[e.model] = 1;
      continue;
    }
    moved[i] = static_cast<std::uint32_t>(entries_.size());
    entries_.push_back(e);
  }
  const std::size_t kept = entries_.size();  // the entries after these are the changed machines'

  std::map<std::string, std::uint32_t, std::less<>> index;  // (views of models_ would move with it)
  for (std::uint32_t m = 0; m < models_.size(); ++m) index.emplace(models_[m].id, m);
  for (std::size_t i = added_from; i < candidates_->size(); ++i) {
    const OfferCandidate& c = *(*candidates_)[i];
    if (c.gpu_count_available <= 0 || c.price <= 0) continue;
    if (c.schedule) {
      // The previous entries' availability holds until previous.valid_until(), which is after now.
      const auto a = availability.at(c.schedule, now);
      valid_until_ = std::min(valid_until_, a.until);
      if (!a.available) continue;
    }
    const auto [it, added] = index.try_emplace(c.model, static_cast<std::uint32_t>(models_.size()));
    if (added) {
      models_.push_back(Model{c.model});
      touched.push_back(0);
    }
    touched[it->second] = 1;
    entries_.push_back(Entry{&c, {}, it->second});
  }

  // A touched model's median may have moved; then all its offers are ranked again. An untouched
  // model's offers keep their rank, and so their place in every order.
  std::vector<std::vector<double>> values(models_.size());
  for (const auto& e : entries_) {
    if (touched[e.model]) values[e.model].push_back(perf_per_usdc(e.candidate->perf_score, e.candidate->price));
  }
  std::vector<char> reranked(models_.size(), 0);
  for (std::size_t m = 0; m < models_.size(); ++m) {
    if (!touched[m]) continue;
    const double median = median_value(std::move(values[m]));
    reranked[m] = median != models_[m].median;
    models_[m].median = median;
  }
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    auto& e = entries_[i];
    if (i >= kept || reranked[e.model]) e.rank = rank_of(*e.candidate, models_[e.model].median, config);
  }

  // Each order: the previous one without the entries that left or are placed again, merged with
  // those, sorted. A model ranked again keeps its offers' order but for rounding (they were all
  // scaled by the same median), so they come in their previous order and are sorted only if needed.
  for (const OfferSort sort : {OfferSort::rank, OfferSort::price, OfferSort::perf}) {
    const bool by_rank = sort == OfferSort::rank;
    const auto less = [&](std::uint32_t a, std::uint32_t b) { return before(sort, a, b); };
    std::vector<std::uint32_t> stay, again, added;
    stay.reserve(entries_.size());
    for (const std::uint32_t i : previous.orders_[static_cast<std::size_t>(sort)]) {
      const std::uint32_t j = moved[i];
      if (j == kGone) continue;
      (by_rank && reranked[entries_[j].model] ? again : stay).push_back(j);
    }
    if (!std::is_sorted(again.begin(), again.end(), less)) std::sort(again.begin(), again.end(), less);
    for (auto i = static_cast<std::uint32_t>(kept); i < entries_.size(); ++i) added.push_back(i);
    std::sort(added.begin(), added.end(), less);
    std::vector<std::uint32_t> moving(again.size() + added.size());
    std::merge(again.begin(), again.end(), added.begin(), added.end(), moving.begin(), less);
    auto& order = orders_[static_cast<std::size_t>(sort)];
    order.resize(entries_.size());
    std::merge(stay.begin(), stay.end(), moving.begin(), moving.end(), order.begin(), less);
  }
}

bool OfferBook::before(OfferSort sort, std::uint32_t ia, std::uint32_t ib) const {
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
      if (a.candidate->perf_score != b.candidate->perf_score) return a.candidate->perf_score > b.candidate->perf_score;
      break;
  }
  return std::tie(a.candidate->machine_id, a.candidate->model) < std::tie(b.candidate->machine_id, b.candidate->model);
}

namespace {

double sort_value(OfferSort sort, const OfferCandidate& c, const RankExplanation& rank) {
  switch (sort) {
    case OfferSort::price:
      return static_cast<double>(c.price);
    case OfferSort::perf:
      return c.perf_score;
    case OfferSort::rank:
      break;
  }
  return rank.rank;
}

}  // namespace

bool OfferBook::after(std::uint32_t i, const OfferCursor& k) const {
  const Entry& e = entries_[i];
  const double v = sort_value(k.sort, *e.candidate, e.rank);
  if (v != k.value) return k.sort == OfferSort::price ? v > k.value : v < k.value;
  return std::tie(e.candidate->machine_id, e.candidate->model) > std::tie(k.machine_id, k.model);
}

OfferBook::Page OfferBook::search(const OfferFilter& f, std::size_t from, std::size_t limit) const {
  return search(f, from, nullptr, limit);
}

OfferBook::Page OfferBook::search(const OfferFilter& f, const OfferCursor& after, std::size_t limit) const {
  return search(f, 0, &after, limit);
}

OfferBook::Page OfferBook::search(const OfferFilter& f, std::size_t from, const OfferCursor* start,
                                  std::size_t limit) const {
  Page page;
  std::size_t skipped = 0;  // matching offers before the page
  bool more = false;
  const auto& order = orders_[static_cast<std::size_t>(f.sort)];
  // By rank, the page starts after the cursor's offer where it stands now: a rank is against its model's
  // median, which moves when an offer of the model is taken or added, so the rank the cursor kept may
  // fall anywhere among the others now. A price or a perf score stays: the page starts after the value.
  std::optional<std::size_t> anchor;
  if (start && start->sort == OfferSort::rank) {
    for (std::size_t k = 0; k < order.size() && !anchor; ++k) {
      const OfferCandidate& c = *entries_[order[k]].candidate;
      if (c.machine_id == start->machine_id && c.model == start->model) anchor = k;
    }
  }
  for (std::size_t k = 0; k < order.size(); ++k) {
    const std::uint32_t i = order[k];
    const Entry& e = entries_[i];
    const OfferCandidate& c = *e.candidate;
    if (f.models && std::find(f.models->begin(), f.models->end(), c.model) == f.models->end()) continue;
    if (f.region && !equal_ignoring_ascii_case(c.region, *f.region)) continue;  // "EU-WEST" finds eu-west
    if (f.min_vram_gb && c.vram_gib < *f.min_vram_gb) continue;
    if (f.max_price && c.price > *f.max_price) continue;
    if (f.min_reliability && e.rank.reliability < *f.min_reliability) continue;
    if (f.tier && c.tier != *f.tier) continue;
    ++page.total;
    const bool before_page = start ? (anchor ? k <= *anchor : !after(i, *start)) : skipped < from;
    if (before_page) {
      ++skipped;
    } else if (page.items.size() < limit) {
      page.items.push_back(Offer{c, e.rank, std::nullopt});
    } else {
      more = true;
    }
  }
  if (more && !page.items.empty()) {
    const Offer& last = page.items.back();
    page.next = OfferCursor{f.sort, sort_value(f.sort, last.candidate, last.rank), last.candidate.machine_id,
                            last.candidate.model};
  }
  return page;
}

bool OfferBook::offers_machine(std::string_view machine_id) const {
  std::call_once(machines_indexed_, [this] {
    machines_.reserve(entries_.size());
    for (const Entry& e : entries_) machines_.insert(e.candidate->machine_id);
  });
  return machines_.contains(machine_id);
}

std::string not_offered_reason(const MachineOfferFacts& f) {
  if (!f.online) return "offline: its agent is not heard from";
  if (f.rentals_blocked) return "its agent cannot run rentals: " + *f.rentals_blocked;
  if (f.simulated_hidden) return "simulated GPUs are offered only in the operator's demo mode";
  if (f.listed_models.empty()) return "no GPU is listed: see its benchmarks";
  if (!f.available_now) return "outside its availability schedule, or in maintenance";
  if (f.unpriced_models.size() == std::set<std::string>(f.listed_models.begin(), f.listed_models.end()).size()) {
    std::string models;
    for (const auto& m : f.unpriced_models) models += (models.empty() ? "" : ", ") + m;
    return "no rate set for " + models;
  }
  if (f.listed_free == 0) return "every listed GPU is rented";
  return "not in the marketplace now (it catches up within seconds of a change)";
}

std::string format_offer_cursor(const OfferCursor& c) {
  char bits[17];
  std::snprintf(bits, sizeof bits, "%016llx", static_cast<unsigned long long>(std::bit_cast<std::uint64_t>(c.value)));
  return std::string(offer_sort_name(c.sort)) + "~" + bits + "~" + c.machine_id + "~" + c.model;
}

std::optional<OfferCursor> parse_offer_cursor(std::string_view s) {
  std::array<std::string_view, 4> part;
  for (std::size_t n = 0; n + 1 < part.size(); ++n) {
    const auto tilde = s.find('~');
    if (tilde == std::string_view::npos) return std::nullopt;
    part[n] = s.substr(0, tilde);
    s.remove_prefix(tilde + 1);
  }
  part[3] = s;
  const auto sort = parse_offer_sort(part[0]);
  if (!sort || part[1].size() != 16 || part[2].empty() || part[3].empty() ||
      part[3].find('~') != std::string_view::npos) {
    return std::nullopt;
  }
  std::uint64_t bits = 0;
  const auto [end, ec] = std::from_chars(part[1].data(), part[1].data() + part[1].size(), bits, 16);
  if (ec != std::errc{} || end != part[1].data() + part[1].size()) return std::nullopt;
  const double value = std::bit_cast<double>(bits);
  if (!std::isfinite(value)) return std::nullopt;
  return OfferCursor{*sort, value, std::string(part[2]), std::string(part[3])};
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

double score_figure(double score) {
  return std::round(score * 100.0) / 100.0;
}

nlohmann::json to_json(const Offer& o) {
  const auto& c = o.candidate;
  return {{"machine_id", c.machine_id},
          {"model", c.model},
          {"gpu_count_available", c.gpu_count_available},
          {"usdc_per_gpu_hour", format_usdc(c.price)},
          {"perf_score", score_figure(c.perf_score)},
          {"vram_gb", c.vram_gib},
          {"reliability", score_figure(o.rank.reliability)},
          {"reliability_is_prior", o.rank.reliability_is_prior},
          {"tier", tier_name(c.tier)},
          {"simulated", c.simulated},
          {"location", {{"city", c.city}, {"country", c.country}, {"region", c.region}}},
          {"rank", std::round(o.rank.rank * 10000.0) / 10000.0},
          {"rank_explanation", to_json(o.rank)},
          {"available_until",
           o.available_until ? nlohmann::json(date::format("%FT%TZ", *o.available_until)) : nlohmann::json(nullptr)}};
}

}  // namespace gpunex::core
