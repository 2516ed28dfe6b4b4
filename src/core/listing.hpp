#pragma once
// A benchmarked GPU's listing: listed while its latest run passes, delisted at
// once when one fails, relisted when a later run passes. Pure: the fleet
// repository stores the state, the benchmark ingestion tells the provider.

#include <optional>

#include "core/benchmark.hpp"

namespace gpunex::core {

//! What a run's verdict does to a GPU's listing, for the provider's notification.
enum class ListingChange {
  none,      // no news: still listed, still delisted (already told), or a first run that passed
  delisted,  // failed while listed, or on its first run
  relisted,  // passed after being delisted
};

//! `was_listed`: the listing before this run, nullopt when the GPU was never benchmarked.
ListingChange listing_change(std::optional<bool> was_listed, bool passes);

//! The finding that keeps a GPU outside the catalog unlisted: it has no reference figures to meet.
bench::Finding unknown_model_finding();

}  // namespace gpunex::core
