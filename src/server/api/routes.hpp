#pragma once
// Where the server's REST routes are assembled: make_app builds the App
// (platform/request_pipeline.hpp) with every area's endpoints, handing it what
// the areas provide (onboarding's API keys) and keeping what they own for as
// long as the App (the market's offer book). The dashboard's routes are web/'s
// (web/web_routes.hpp), added by main.cpp beside these.

#include <memory>

#include "server/market/offer_cache.hpp"
#include "server/market/offer_candidates.hpp"
#include "server/platform/config.hpp"
#include "server/platform/request_pipeline.hpp"
#include "store/store.hpp"
#include "util/clock.hpp"

namespace gpunex::server {

//! Builds the App on `store` with every REST route registered. `clock` null: clock_for(config).
std::unique_ptr<App> make_app(Config config, std::unique_ptr<store::Store> store,
                              std::shared_ptr<util::Clock> clock = nullptr);

// One per file of api/, each adding its area's routes.
void register_system_api(App& app);
void register_auth_api(App& app);
void register_applications_api(App& app);
void register_provider_api(App& app);
//! The provider's machines say whether `offers` (built from `schedules`) shows them.
void register_agent_api(App& app, OfferCache& offers, ScheduleCache& schedules);
void register_bench_net_api(App& app);
void register_benchmarks_api(App& app);
//! The offer search reads `offers`, built from `schedules`: both must outlive the App's requests.
void register_market_api(App& app, OfferCache& offers, ScheduleCache& schedules);
void register_billing_api(App& app);
void register_reliability_api(App& app);
void register_payouts_api(App& app);
//! GET /v1/openapi.json: the API document, built from the route table at its first request (openapi.hpp).
void register_openapi_api(App& app);
namespace rentals {
class AgentPolls;
}
void register_rentals_api(App& app, OfferCache& offers, ScheduleCache& schedules, rentals::AgentPolls& polls);

}  // namespace gpunex::server
