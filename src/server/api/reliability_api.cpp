// The reliability score of a provider's machine (issue 17): GET /v1/provider/machines/{id}/reliability,
// what the dashboard's Performance tab shows. The rentals' outcomes reach the reliability area from
// here (rentals/ comes after it): rentals::reliability_jobs is its JobSource.

#include "server/api/handlers.hpp"
#include "server/api/openapi.hpp"
#include "server/api/routes.hpp"
#include "server/reliability/reliability.hpp"
#include "server/rentals/rentals.hpp"

namespace gpunex::server {

namespace {

http::Response machine_reliability(Ctx& ctx) {
  const std::string id = ctx.req.param("id");
  const auto settings = reliability::settings_of(ctx.config());
  const auto now = ctx.now_ms();
  return respond(
      ctx,
      [&](store::Tx& tx) -> core::Result<nlohmann::json> {
        const std::string pid = caller_provider(ctx, tx);
        if (pid.empty()) return not_a_provider();
        return reliability::machine_reliability(tx, pid, id, rentals::reliability_jobs, settings, now);
      },
      store::TxMode::read);
}

}  // namespace

void register_reliability_api(App& app) {
  auto provider = RouteOptions::for_roles({"provider"}).api_key_allowed();
  app.route(http::Method::get, "/v1/provider/machines/{id}/reliability",
            provider.doc({.summary = "A machine's reliability score and its parts"}), machine_reliability);
}

}  // namespace gpunex::server
