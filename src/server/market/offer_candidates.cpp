#include "server/market/offer_candidates.hpp"

#include <algorithm>

#include "server/market/market_repo.hpp"
#include "server/onboarding/gpu_catalog.hpp"
#include "server/onboarding/onboarding_repo.hpp"
#include "server/reliability/reliability.hpp"

namespace gpunex::server {

std::shared_ptr<const core::Schedule> ScheduleCache::get(const std::string& spec) {
  {
    std::lock_guard lock(mutex_);
    if (auto it = parsed_.find(spec); it != parsed_.end()) return it->second;
  }
  auto s = core::parse_schedule(nlohmann::json::parse(spec));
  if (!s) throw store::StoreError("stored schedule is invalid: " + s.error().message);
  auto shared = std::make_shared<const core::Schedule>(std::move(s).value());
  std::lock_guard lock(mutex_);
  if (parsed_.size() >= capacity_) parsed_.clear();
  parsed_.emplace(spec, shared);
  return shared;
}

namespace {

//! An online machine as its offers show it.
struct OfferMachine {
  std::string provider_id;
  core::Tier tier = core::Tier::community;
  std::string city, country, region;
  std::int64_t commitment_months = 0;
  std::shared_ptr<const core::Schedule> schedule;
  bool simulated = false;
};

//! The online machines by id (only those `only` covers, when given), with their provider's tier
//! (onboarding's, joined here by provider id), their schedules parsed (once per distinct text).
//! `covered`, when given, receives the id of every machine read.
std::unordered_map<std::string, OfferMachine> online_machines(store::Tx& tx, MarketRepo& repo, ScheduleCache& schedules,
                                                              bool allow_simulated, const MarketChanges* only,
                                                              std::vector<std::string>* covered) {
  auto rows = repo.online_offer_machines(only);
  std::unordered_map<std::string, core::Tier> tiers;
  if (only) {
    std::vector<std::string> providers;
    for (const auto& r : rows) {
      providers.push_back(r.provider_id);
      if (covered) covered->push_back(r.machine_id);
    }
    std::sort(providers.begin(), providers.end());
    providers.erase(std::unique(providers.begin(), providers.end()), providers.end());
    tiers = onboarding_repo::provider_tiers(tx, &providers);
  } else {
    tiers = onboarding_repo::provider_tiers(tx);
  }
  std::unordered_map<std::string, OfferMachine> machines;
  for (auto& r : rows) {
    const auto tier = tiers.find(r.provider_id);
    if (tier == tiers.end()) continue;  // no such provider (machines.provider_id references one)
    if (r.simulated && !allow_simulated) continue;  // never offered outside the operator's demo mode
    OfferMachine m;
    m.provider_id = std::move(r.provider_id);
    m.tier = tier->second;
    m.city = std::move(r.city);
    m.country = std::move(r.country);
    m.region = std::move(r.region);
    m.commitment_months = r.commitment_months;
    m.simulated = r.simulated;
    if (r.schedule_spec) m.schedule = schedules.get(*r.schedule_spec);
    machines.emplace(std::move(r.machine_id), std::move(m));
  }
  return machines;
}

// The candidates of every online machine, or only of those `only` covers (each query filtered
// alike, so that a change's candidates are exactly what a full read would give for its machines).
std::vector<core::OfferCandidate> read_candidates(store::Tx& tx, ScheduleCache& schedules, bool allow_simulated,
                                                  const MarketChanges* only, std::vector<std::string>* covered) {
  // Plain queries joined here by key, rather than one seven-way join: the planners misjudge that
  // join at this size (PostgreSQL estimates a handful of rows for 100,000 GPUs and picks nested
  // loops), and each query alone is a scan or an index walk.
  MarketRepo repo(tx);
  const auto machines = online_machines(tx, repo, schedules, allow_simulated, only, covered);
  std::vector<std::string> machine_ids, provider_ids;
  if (only) {
    for (const auto& [id, m] : machines) {
      machine_ids.push_back(id);
      provider_ids.push_back(m.provider_id);
    }
    std::sort(provider_ids.begin(), provider_ids.end());
    provider_ids.erase(std::unique(provider_ids.begin(), provider_ids.end()), provider_ids.end());
  }
  std::unordered_map<std::string, core::MicroUsdc> prices;  // by provider id + '\n' + model
  for (const auto& p : repo.all_current_prices(only ? &provider_ids : nullptr))
    prices.emplace(p.provider_id + '\n' + p.model, p.usdc_micro);
  const auto vram = model_vram_gib(tx);
  // Machines still new carry none: the prior.
  const auto reliability = reliability::published_scores(tx, only ? &machine_ids : nullptr);

  // Listed GPUs in key order, summed here per (machine, model): the mean perf score is then the
  // same on every plan and store (a database's AVG sums in whatever order its plan reads, and
  // PostgreSQL's parallel plans change that order from one run to the next).
  std::vector<core::OfferCandidate> out;
  struct Group {
    std::string model;
    std::int64_t gpus = 0;
    double perf_sum = 0;
  };
  std::vector<Group> groups;  // of the machine being read, in the order its models appear
  const OfferMachine* machine = nullptr;
  std::string machine_id;
  const auto flush = [&] {
    for (const auto& g : groups) {
      const auto price = prices.find(machine->provider_id + '\n' + g.model);
      if (price == prices.end()) continue;  // not priced by its provider
      const auto v = vram.find(g.model);
      if (v == vram.end()) continue;
      core::OfferCandidate c;
      c.machine_id = machine_id;
      c.model = g.model;
      c.gpu_count_available = g.gpus;  // no rentals yet: every listed GPU is free
      c.perf_score = g.perf_sum / static_cast<double>(g.gpus);
      c.price = price->second;
      c.tier = machine->tier;
      c.city = machine->city;
      c.country = machine->country;
      c.region = machine->region;
      c.commitment_months = machine->commitment_months;
      c.vram_gib = v->second;
      c.schedule = machine->schedule;
      c.simulated = machine->simulated;
      if (const auto r = reliability.find(machine_id); r != reliability.end()) c.reliability = r->second;
      out.push_back(std::move(c));
    }
    groups.clear();
  };
  for (auto& r : repo.listed_gpus(only ? &machine_ids : nullptr)) {
    std::string id = std::move(r.machine_id);
    if (id != machine_id) {
      if (machine) flush();
      const auto m = machines.find(id);
      machine = m == machines.end() ? nullptr : &m->second;  // null: offline
      machine_id = std::move(id);
    }
    if (!machine) continue;
    std::string model = std::move(r.model);
    auto g = std::find_if(groups.begin(), groups.end(), [&](const Group& x) { return x.model == model; });
    if (g == groups.end()) g = groups.insert(groups.end(), Group{std::move(model)});
    ++g->gpus;
    g->perf_sum += r.perf_score;
  }
  if (machine) flush();
  return out;
}

}  // namespace

std::vector<core::OfferCandidate> offer_candidates(store::Tx& tx, ScheduleCache& schedules, bool allow_simulated) {
  return read_candidates(tx, schedules, allow_simulated, nullptr, nullptr);
}

ChangedCandidates changed_offer_candidates(store::Tx& tx, ScheduleCache& schedules, bool allow_simulated,
                                           const MarketChanges& changes) {
  ChangedCandidates out;
  out.machines = changes.machines;
  out.candidates = read_candidates(tx, schedules, allow_simulated, &changes, &out.machines);
  std::sort(out.machines.begin(), out.machines.end());
  out.machines.erase(std::unique(out.machines.begin(), out.machines.end()), out.machines.end());
  return out;
}

std::int64_t market_version(store::Tx& tx) {
  return MarketRepo(tx).market_version();
}

void prune_market_changes(store::Tx& tx, std::int64_t version) {
  MarketRepo(tx).prune_market_changes(version);
}

}  // namespace gpunex::server
