#pragma once
// The market area's public header (issue 6): provider prices and the price
// recommendation's inputs (prices.hpp), machine availability schedules
// (schedules.hpp), the offer candidates read from the store
// (offer_candidates.hpp) and the offer book the searches share
// (offer_cache.hpp). Every SQL statement of the area is in market_repo.cpp.

#include "server/market/offer_cache.hpp"
#include "server/market/offer_candidates.hpp"
#include "server/market/prices.hpp"
#include "server/market/schedules.hpp"
