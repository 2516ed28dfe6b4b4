#pragma once
// How many items one page of a list may hold (?limit=): the server checks it, the CLI's help says it.

#include <cstddef>

namespace gpunex::core {

inline constexpr std::size_t kDefaultPageLimit = 50;
//! Every list but the marketplace's offers.
inline constexpr std::size_t kMaxPageLimit = 200;
//! GET /v1/marketplace/offers: a search page may be longer.
inline constexpr std::size_t kMaxOffersPageLimit = 500;

}  // namespace gpunex::core
