// The reliability score of a provider's machine (issue 17): GET /v1/provider/machines/{id}/reliability,
// what the dashboard's Performance tab shows; and the provider's over all of their machines (issue 20, the
// API contract): GET /v1/provider/reliability. The rentals' outcomes reach the reliability area from
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
  return respond_as_provider(
      ctx,
      [&](store::Tx& tx, const std::string& pid) {
        return reliability::machine_reliability(tx, pid, id, rentals::reliability_jobs, settings, now);
      },
      store::TxMode::read);
}

http::Response provider_reliability(Ctx& ctx) {
  const auto settings = reliability::settings_of(ctx.config());
  const auto now = ctx.now_ms();
  return respond_as_provider(
      ctx,
      [&](store::Tx& tx, const std::string& pid) {
        return reliability::provider_reliability(tx, pid, rentals::reliability_jobs, settings, now);
      },
      store::TxMode::read);
}

}  // namespace

void register_reliability_api(App& app) {
  namespace oa = openapi;
  const auto share = oa::nullable(oa::number());
  const auto event = oa::record({{"kind", oa::text(1)},
                                 {"at", oa::timestamp()},
                                 {"day", oa::text(10, 10)},
                                 {"text", oa::text()},
                                 {"what_to_do", oa::text()},
                                 {"points", oa::number()}},
                                {"kind", "at", "day", "text", "what_to_do", "points"});
  const auto part = oa::record({{"value", oa::number()}, {"weight", oa::number()}}, {"value", "weight"});
  auto provider = RouteOptions::for_roles({"provider"}).api_key_allowed();
  app.route(http::Method::get, "/v1/provider/machines/{id}/reliability",
            provider.doc({.summary = "A machine's reliability score and its parts",
                          .responses = {{200, oa::record({{"machine_id", oa::text(1)},
                                                          {"hostname", oa::text()},
                                                          {"at", oa::timestamp()},
                                                          {"timezone", oa::text()},
                                                          {"state", oa::one_of({"new", "scored"})},
                                                          {"is_new", oa::boolean()},
                                                          {"score", oa::number()},
                                                          {"prior", oa::number()},
                                                          {"formula_score", oa::number()},
                                                          {"alert_below", oa::number()},
                                                          {"parts", oa::record({{"uptime", part},
                                                                                {"job_completion", part},
                                                                                {"stability", part}},
                                                                               {"uptime", "job_completion", "stability"})},
                                                          {"window", oa::record({{"days", oa::number()}}, {"days"})},
                                                          {"history", oa::array(oa::any_object())},
                                                          {"events", oa::array(event)},
                                                          {"recovery", oa::any_object()}},
                                                         {"machine_id", "state", "is_new", "score", "parts", "window",
                                                          "history", "events", "recovery"})}}}),
            machine_reliability);
  app.route(http::Method::get, "/v1/provider/reliability",
            provider.doc(
                {.summary = "My reliability over all my machines: each figure the GPU-weighted mean of theirs",
                 .responses = {{200, oa::record(
                                         {{"provider_id", oa::text(1)},
                                          {"at", oa::timestamp()},
                                          {"state", oa::one_of({"scored", "new", "no_machines"})},
                                          {"score", share},
                                          {"uptime", share},
                                          {"job_completion", share},
                                          {"benchmark_stability", share},
                                          {"weighting", oa::one_of({"gpu_count"})},
                                          {"window_days", oa::number()},
                                          {"prior", oa::number()},
                                          {"alert_below", oa::number()},
                                          {"machines", oa::array(oa::record({{"machine_id", oa::text(1)},
                                                                             {"hostname", oa::text()},
                                                                             {"gpus", oa::integer(0, 1024)},
                                                                             {"state", oa::one_of({"new", "scored"})},
                                                                             {"score", oa::number()},
                                                                             {"uptime", oa::number()},
                                                                             {"job_completion", oa::number()},
                                                                             {"benchmark_stability", oa::number()},
                                                                             {"counted", oa::boolean()}},
                                                                            {"machine_id", "gpus", "state", "score", "counted"}))},
                                          {"events", oa::array(oa::all_of({event, oa::record({{"machine_id", oa::text(1)}},
                                                                                             {"machine_id"})}))}},
                                         {"provider_id", "state", "score", "uptime", "job_completion",
                                          "benchmark_stability", "window_days", "machines", "events"})}}}),
            provider_reliability);
}

}  // namespace gpunex::server
