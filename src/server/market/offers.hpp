#pragma once
// The market area's public header (issue 6): provider prices and the price
// recommendation's inputs (prices.hpp), the machines' availability schedules
// (owned by the fleet: fleet/schedules.hpp), the offer candidates read from
// the store (offer_candidates.hpp) and the offer book the searches share
// (offer_cache.hpp). Every SQL statement of the area is in market_repo.cpp.

#include "server/market/offer_cache.hpp"
#include "server/market/offer_candidates.hpp"
#include "server/market/prices.hpp"
#include "server/fleet/schedules.hpp"
