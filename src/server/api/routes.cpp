#include "server/api/routes.hpp"

#include <chrono>

#include "server/onboarding/providers.hpp"
#include "server/rentals/agent_polls.hpp"
#include "server/rentals/rentals.hpp"

namespace gpunex::server {

std::unique_ptr<App> make_app(Config config, std::unique_ptr<store::Store> store,
                              std::shared_ptr<util::Clock> clock) {
  auto app = std::make_unique<App>(std::move(config), std::move(store), api_key_directory(), std::move(clock));
  // The market's offer book, rebuilt on a thread of its own, reads the schedules: kept in that order,
  // so the book (and its thread) goes first.
  auto& schedules = app->keep(std::make_unique<ScheduleCache>());
  auto& offers = app->keep(std::make_unique<OfferCache>(
      std::chrono::milliseconds(app->config().market_search_wait_ms),
      OfferCache::store_loader(app->config().allow_simulated_offers),
      [&metrics = app->metrics()](double seconds) { metrics.observe_offer_reload(seconds); }));
  register_system_api(*app);
  register_auth_api(*app);
  register_applications_api(*app);
  register_provider_api(*app);
  register_agent_api(*app, offers, schedules);
  register_bench_net_api(*app);
  register_benchmarks_api(*app);
  register_market_api(*app, offers, schedules);
  register_billing_api(*app);
  register_reliability_api(*app);
  register_payouts_api(*app);
  // The agents' rentals long polls: answered (and their thread stopped) before the store goes.
  auto& polls = app->keep(std::make_unique<rentals::AgentPolls>([&store = app->store()](const std::vector<std::string>& ids) {
    return store.transact([&](store::Tx& tx) { return rentals::versions(tx, ids); }, store::TxMode::read);
  }));
  app->on_drain([&polls] { polls.release(); });
  register_rentals_api(*app, offers, schedules, polls);
  register_openapi_api(*app);
  return app;
}

}  // namespace gpunex::server
