#pragma once
// Assembles marketplace offers (API.md GET /v1/marketplace/offers) from the
// store's candidates: drops machines outside their availability window, ranks
// each offer against the median value of visible offers of the same model
// (so a customer's filters never change an offer's rank), then filters, sorts
// and pages. Pure: the store query that yields candidates is in server/.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/money.hpp"
#include "core/rank.hpp"
#include "core/schedule.hpp"

namespace gpunex::core {

//! One machine's listed, priced GPUs of one model, as the store found them.
struct OfferCandidate {
  std::string machine_id;
  std::string model;
  std::int64_t gpu_count_available = 0;
  MicroUsdc price = 0;  // per GPU-hour
  double perf_score = 0;  // mean over those GPUs
  std::optional<double> reliability;  // nullopt until the score exists
  Tier tier = Tier::community;
  std::int64_t commitment_months = 0;
  std::string city, country, region;
  double vram_gib = 0;
  std::shared_ptr<const Schedule> schedule;  // null: always available (shared: machines share schedules)
};

enum class OfferSort { rank, price, perf };
//! "rank" / "price" / "perf"; nullopt for anything else.
std::optional<OfferSort> parse_offer_sort(std::string_view s);

struct OfferFilter {
  std::optional<std::string> model;
  std::optional<std::string> region;
  std::optional<double> min_vram_gb;
  std::optional<MicroUsdc> max_price;
  std::optional<double> min_reliability;
  std::optional<Tier> tier;
  OfferSort sort = OfferSort::rank;
};

struct Offer {
  OfferCandidate candidate;
  RankExplanation rank;
  std::optional<UtcTime> available_until;
};

//! Visible, filtered, sorted offers. Ties sort by machine id then model, so pages are stable.
//! available_until is left empty: it costs a scan of the schedule, so only the page shown gets it
//! (fill_available_until).
std::vector<Offer> assemble_offers(std::vector<OfferCandidate> candidates, UtcTime now, const OfferFilter& filter,
                                   const RankConfig& config = {});

//! Sets o.available_until from its schedule (empty for an always-on machine without maintenance).
void fill_available_until(Offer& o, UtcTime now);

//! The API form: {machine_id, model, gpu_count_available, usdc_per_gpu_hour, perf_score,
//! reliability, reliability_is_prior, tier, location, rank, rank_explanation, available_until}.
nlohmann::json to_json(const Offer& o);

}  // namespace gpunex::core
