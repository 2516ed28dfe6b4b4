#pragma once
// Assembles marketplace offers (API.md GET /v1/marketplace/offers) from the
// store's candidates: drops machines outside their availability window, ranks
// each offer against the median value of visible offers of the same model
// (so a customer's filters never change an offer's rank), then filters, sorts
// and pages. The ranked, sorted offers of one instant are an OfferBook that
// many searches share. Pure: the store query that yields candidates, and the
// cache that keeps a book between searches, are in server/.

#include <array>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
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
  bool simulated = false;  // the machine's GPUs are simulated: offered only in demo mode, and said so
};

//! A market's candidates, each shared: a book patched after a change keeps the candidates that did
//! not change rather than copying them.
using CandidateSet = std::vector<std::shared_ptr<const OfferCandidate>>;

enum class OfferSort { rank, price, perf };
//! "rank" / "price" / "perf": the API's name of a sort.
std::string_view offer_sort_name(OfferSort s);
//! The sort offer_sort_name names; nullopt for anything else.
std::optional<OfferSort> parse_offer_sort(std::string_view s);

struct OfferFilter {
  //! Catalog ids (a customer's model filter, resolved by core::model_filter_matches); empty: none.
  std::optional<std::vector<std::string>> models;
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

//! is_available(schedule, t), remembered over the stretch of time in which the answer cannot
//! change, so that a market whose machines share schedules is not re-evaluated (zones, windows,
//! maintenance) on every search. Holds the schedules it has answered for, so their addresses stay
//! unique while remembered. Not thread-safe.
class AvailabilityMemo {
 public:
  struct Answer {
    bool available = true;
    UtcTime until{};  // the answer holds from the instant asked about up to this one
  };
  //! An answer is checked again at least this often.
  static constexpr std::chrono::hours kHorizon{24};

  Answer at(const std::shared_ptr<const Schedule>& schedule, UtcTime t);
  //! Forgets the schedules that only the memo still holds.
  void prune();

 private:
  struct Known {
    std::shared_ptr<const Schedule> schedule;
    UtcTime from{};
    Answer answer;
  };
  std::unordered_map<const Schedule*, Known> known_;
};

//! Where a page of offers ended: its last offer's place in the search's sort order, so that the next
//! page starts after it whatever was taken or added meanwhile (an offset would skip an offer for each
//! one taken from an earlier page).
struct OfferCursor {
  OfferSort sort = OfferSort::rank;
  double value = 0;  // the offer's rank, price (micro-USDC, exact in a double) or perf score, by sort
  std::string machine_id;
  std::string model;
};
//! The API's form, opaque to clients and safe in a query unescaped: "rank~<the value's 64 bits in
//! hex>~<machine id>~<model>".
std::string format_offer_cursor(const OfferCursor& c);
//! nullopt for anything format_offer_cursor does not write.
std::optional<OfferCursor> parse_offer_cursor(std::string_view s);

//! The offers visible at one instant, ranked against their model and kept in the three sort
//! orders: what every search at that instant shares, so that a search only filters and pages.
//! Immutable once built; valid from `now` until valid_until() (the first instant at which a
//! machine's availability may change), as long as the candidates are.
class OfferBook {
 public:
  OfferBook(std::shared_ptr<const CandidateSet> candidates, UtcTime now, AvailabilityMemo& availability,
            const RankConfig& config = {});
  OfferBook(std::shared_ptr<const std::vector<OfferCandidate>> candidates, UtcTime now, AvailabilityMemo& availability,
            const RankConfig& config = {});
  //! `previous` after some machines changed: the same offers and orders as a book built from
  //! `candidates` at `now`, in time proportional to the book's size plus the changed offers' sort
  //! (a book built anew sorts everything three times). `candidates` is previous's without the
  //! candidates of `changed_machines`, followed from index `added_from` by their candidates now.
  //! Requires previous.built_at() <= now < previous.valid_until() and previous's RankConfig.
  OfferBook(const OfferBook& previous, std::shared_ptr<const CandidateSet> candidates,
            const std::unordered_set<std::string_view>& changed_machines, std::size_t added_from, UtcTime now,
            AvailabilityMemo& availability, const RankConfig& config = {});

  UtcTime built_at() const { return built_at_; }
  UtcTime valid_until() const { return valid_until_; }
  const std::shared_ptr<const CandidateSet>& candidates() const { return candidates_; }

  struct Page {
    std::vector<Offer> items;  // available_until left empty (see fill_available_until)
    std::size_t total = 0;     // offers matching the filter
    std::optional<OfferCursor> next;  // after the last item, when more match after it
  };
  //! The offers matching `filter` in its sort order (ties by machine id, then model, so pages are
  //! stable): `limit` of them from position `from`, and how many match in all.
  Page search(const OfferFilter& filter, std::size_t from = 0,
              std::size_t limit = std::numeric_limits<std::size_t>::max()) const;
  //! The same, `limit` of them from the first that comes after `after` in filter.sort's order
  //! (after.sort must be filter.sort); by rank, after the cursor's offer where it stands now when the
  //! book still has it (ranks move with their model's median).
  Page search(const OfferFilter& filter, const OfferCursor& after, std::size_t limit) const;
  //! Whether any of the machine's GPUs is offered (its index built at the first call, once per book).
  bool offers_machine(std::string_view machine_id) const;

 private:
  struct Entry {
    const OfferCandidate* candidate;
    RankExplanation rank;
    std::uint32_t model;  // index in models_
  };
  struct Model {
    std::string id;
    double median = 0;  // of the visible offers' perf per USDC
  };
  //! Whether entry a comes before entry b in `sort`'s order (a strict total order: ties by key).
  bool before(OfferSort sort, std::uint32_t a, std::uint32_t b) const;
  //! Whether entry i comes after the place `c` names in c.sort's order.
  bool after(std::uint32_t i, const OfferCursor& c) const;
  Page search(const OfferFilter& filter, std::size_t from, const OfferCursor* after, std::size_t limit) const;
  //! The visible candidates' ranks against their models' medians.
  void rank_entries(const std::vector<const OfferCandidate*>& visible, const RankConfig& config);

  std::shared_ptr<const CandidateSet> candidates_;
  std::vector<Model> models_;
  std::vector<Entry> entries_;
  std::array<std::vector<std::uint32_t>, 3> orders_;  // entry indexes by OfferSort
  UtcTime built_at_{};
  UtcTime valid_until_{};
  mutable std::once_flag machines_indexed_;
  mutable std::unordered_set<std::string_view> machines_;  // offers_machine's index
};

//! What a machine says of itself that decides whether the marketplace can offer it.
struct MachineOfferFacts {
  bool online = false;
  std::optional<std::string> rentals_blocked;  // why its agent cannot run rentals
  bool simulated_hidden = false;               // simulated GPUs, outside the operator's demo mode
  bool available_now = true;                   // within its schedule, not in maintenance
  std::vector<std::string> listed_models;      // each present, listed GPU's model
  std::vector<std::string> unpriced_models;    // listed models with no rate, each once
  int listed_free = 0;                         // listed GPUs of priced models that no rental holds
};
//! Why a machine that the marketplace does not show is not offered, in a provider's words: the first of
//! offline, its agent refusing rentals, simulated GPUs, no GPU listed, outside its availability, no rate,
//! every GPU rented.
std::string not_offered_reason(const MachineOfferFacts& f);

//! Every visible offer matching `filter`, sorted (OfferBook::search over one instant's book).
std::vector<Offer> assemble_offers(std::vector<OfferCandidate> candidates, UtcTime now, const OfferFilter& filter,
                                   const RankConfig& config = {});

//! Sets o.available_until from its schedule (empty for an always-on machine without maintenance).
void fill_available_until(Offer& o, UtcTime now);

//! A score as the offers give it (perf_score, reliability): two decimals. Whoever prints a mean of scores
//! rounds it here first, so a machine's figure and its offer's read the same ("17.05" → 17.1, not 17.0).
double score_figure(double score);

//! The API form: {machine_id, model, gpu_count_available, usdc_per_gpu_hour, perf_score,
//! reliability, reliability_is_prior, tier, location, rank, rank_explanation, available_until}.
nlohmann::json to_json(const Offer& o);

}  // namespace gpunex::core
