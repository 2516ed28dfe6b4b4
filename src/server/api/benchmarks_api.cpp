// Benchmarks: the agent's results (POST /v1/agent/benchmarks), the provider's
// view per machine and the rate-limited re-run button.

#include "core/benchmark_report.hpp"
#include "server/api/handlers.hpp"
#include "server/api/openapi.hpp"
#include "server/api/routes.hpp"
#include "server/fleet/benchmarks.hpp"
#include "server/fleet/challenges.hpp"
#include "server/fleet/machines.hpp"
#include "server/platform/request_pipeline.hpp"

namespace gpunex::server {

using core::Error;
using core::ErrorCode;

namespace {

BenchmarkSettings settings_of(const Config& c) { return benchmark_settings(c); }

http::Response agent_benchmarks(Ctx& ctx) {
  const auto settings = settings_of(ctx.config());
  const auto now = ctx.now_ms();
  auto out = ctx.store().transact([&](store::Tx& tx) -> core::Result<nlohmann::json> {
    const std::string pid = provider_id_for_api_key(tx, ctx.principal->api_key_id);
    if (pid.empty()) {
      return Error::make(ErrorCode::unauthenticated, "API key is invalid or revoked").with_code("invalid_api_key");
    }
    return record_benchmark_run(tx, pid, ctx.req.body, settings, now);
  });
  if (!out) return http::Response::error(out.error());
  return http::Response::json(200, *out);
}

http::Response provider_benchmarks(Ctx& ctx) {
  const std::string id = ctx.req.param("id");
  auto out = ctx.store().transact(
      [&](store::Tx& tx) -> core::Result<nlohmann::json> {
        const std::string pid = caller_provider(ctx, tx);
        if (pid.empty()) return not_a_provider();
        return machine_benchmarks(tx, pid, id);
      },
      store::TxMode::read);
  if (!out) return http::Response::error(out.error());
  return http::Response::json(200, *out);
}

http::Response rerun(Ctx& ctx) {
  const std::string id = ctx.req.param("id");
  const auto settings = settings_of(ctx.config());
  const auto now = ctx.now_ms();
  auto out = ctx.store().transact([&](store::Tx& tx) -> core::Result<nlohmann::json> {
    const std::string pid = caller_provider(ctx, tx);
    if (pid.empty()) return not_a_provider();
    return request_benchmark_rerun(tx, pid, id, settings, now);
  });
  if (!out) return http::Response::error(out.error());
  return http::Response::json(202, *out);
}

http::Response agent_challenges(Ctx& ctx) {
  const auto settings = settings_of(ctx.config());
  // The time of arrival, taken before the transaction waits for the write lock: the agent is not late for it.
  const auto now = ctx.now_ms();
  // The checked parse every body takes (nesting stops at 32 levels, a field given twice or holding a NUL
  // is refused): this body may be 16 MiB, and a plain parse of one of nested brackets took 630 MB.
  const auto json = ctx.json_body();
  if (!json) return http::Response::error(json.error());
  auto answer = protocol::parse_challenge_answer(*json);
  if (!answer) return http::Response::error(answer.error());
  const auto provider = [&](store::Tx& tx) { return provider_id_for_api_key(tx, ctx.principal->api_key_id); };
  // Opened GEMM rows are checked in a read transaction first: O(n²), not under the write lock.
  std::optional<core::challenge::Outcome> prejudged;
  if (answer->opened) {
    prejudged = ctx.store().transact(
        [&](store::Tx& tx) -> std::optional<core::challenge::Outcome> {
          const auto pid = provider(tx);
          return pid.empty() ? std::nullopt : judge_opening(tx, pid, *answer);
        },
        store::TxMode::read);
  }
  auto out = ctx.store().transact([&](store::Tx& tx) -> core::Result<nlohmann::json> {
    const std::string pid = provider(tx);
    if (pid.empty()) {
      return Error::make(ErrorCode::unauthenticated, "API key is invalid or revoked").with_code("invalid_api_key");
    }
    return answer_challenge(tx, pid, *answer, settings.challenges, now, prejudged);
  });
  if (!out) return http::Response::error(out.error());
  return http::Response::json(200, *out);
}

http::Response admin_flagged(Ctx& ctx) {
  auto out = ctx.store().transact([&](store::Tx& tx) { return flagged_providers(tx); }, store::TxMode::read);
  return http::Response::json(200, nlohmann::json{{"providers", std::move(out)}});
}

}  // namespace

void register_benchmarks_api(App& app) {
  namespace oa = openapi;
  const auto gpu_result = oa::record({{"uuid", oa::text(1)},
                                      {"model", oa::nullable(oa::text())},
                                      {"listed", oa::boolean()},
                                      {"perf_score", oa::nullable(oa::number())},
                                      {"quality_ratio", oa::nullable(oa::number())},
                                      {"failures", oa::array(oa::any_object())}},
                                     {"uuid", "listed", "perf_score", "quality_ratio", "failures"});
  app.route(
      http::Method::post, "/v1/agent/benchmarks",
      RouteOptions::signed_in().no_idempotency().agent_key_only().doc(
          {.summary = "Agent: a benchmark run's results",
           .body = openapi::body_of([](const nlohmann::json& b) { return core::bench::read_run_report(b); }),
           .responses = {{200,
                          oa::record({{"run_id", oa::text(1)},
                                      {"reason", oa::text(1)},
                                      {"gpus", oa::array(gpu_result)},
                                      {"machine_failures", oa::array(oa::any_object())},
                                      {"challenges", oa::array(oa::record({{"id", oa::text(1)},
                                                                           {"kind", oa::one_of({"gemm", "vram"})},
                                                                           {"gpu_uuid", oa::text(1)},
                                                                           {"allowed_s", oa::number()}},
                                                                          {"id", "kind", "gpu_uuid", "allowed_s"}))}},
                                     {"run_id", "gpus", "machine_failures", "challenges"})}}}),
      agent_benchmarks);
  // Off the I/O threads (checking opened rows is O(n²)), and with room for kMaxOpenedRows rows in full.
  app.route(http::Method::post, "/v1/agent/challenges",
            RouteOptions::signed_in()
                .no_idempotency()
                .agent_key_only()
                .slow_work()
                .large_body(protocol::kMaxChallengeBody)
                .doc({.summary = "Agent: a benchmark challenge's answer",
                      .body = openapi::body_of(protocol::parse_challenge_answer),
                      .responses = {{200, oa::any_object()}}}),
            agent_challenges);
  app.route(http::Method::get, "/v1/admin/providers/flagged",
            RouteOptions::for_roles({"admin"}).doc(
                {.summary = "Providers flagged for review (failed challenges)",
                 .responses = {{200, oa::record({{"providers", oa::array(oa::any_object())}}, {"providers"})}}}),
            admin_flagged);
  auto provider = RouteOptions::for_roles({"provider"}).api_key_allowed();
  app.route(
      http::Method::get, "/v1/provider/machines/{id}/benchmarks",
      provider.doc(
          {.summary = "A machine's benchmark runs",
           .responses = {{200, oa::record(
                                   {{"machine_id", oa::text(1)},
                                    {"machine", oa::nullable(oa::record({{"run_id", oa::text(1)},
                                                                         {"at_ms", oa::number()},
                                                                         {"figures", oa::any_object()},
                                                                         {"failures", oa::array(oa::any_object())}},
                                                                        {"run_id", "at_ms", "figures", "failures"}))},
                                    {"gpus", oa::array(oa::record({{"uuid", oa::text(1)},
                                                                   {"index", oa::integer(0, 1024)},
                                                                   {"model", oa::nullable(oa::text())},
                                                                   {"benchmarked", oa::boolean()},
                                                                   {"listed", oa::boolean()},
                                                                   {"history", oa::array(oa::any_object())}},
                                                                  {"uuid", "index", "benchmarked", "listed"}))},
                                    {"runs", oa::array(oa::record({{"id", oa::text(1)},
                                                                   {"status", oa::text(1)},
                                                                   {"reason", oa::text(1)},
                                                                   {"simulated", oa::boolean()}},
                                                                  {"id", "status", "reason"}))}},
                                   {"machine_id", "gpus", "runs"})}}}),
      provider_benchmarks);
  app.route(http::Method::post, "/v1/provider/machines/{id}/benchmarks/run",
            provider.doc({.summary = "Ask for a new benchmark run (delivered once the machine's rentals end)",
                          .responses = {{202, oa::record({{"run_id", oa::text(1)},
                                                          {"status", oa::one_of({"requested"})},
                                                          {"waits_for_rentals", oa::nullable(oa::text())}},
                                                         {"run_id", "status", "waits_for_rentals"})}}}),
            rerun);
}

}  // namespace gpunex::server
