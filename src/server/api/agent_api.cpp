// The agent's endpoints (/v1/agent/register, /v1/agent/heartbeat) and the
// provider's view of its machines (/v1/provider/machines[/{id}]).

#include "server/agent_protocol.hpp"
#include "server/api/handlers.hpp"
#include "server/app.hpp"
#include "server/benchmarks.hpp"
#include "server/machines.hpp"

namespace gpunex::server {

using core::Error;
using core::ErrorCode;

namespace {

MachineSettings settings_of(const Config& c) {
  MachineSettings s;
  s.heartbeat_interval_s = c.heartbeat_interval_s;
  s.offline_after_missed = c.offline_after_missed;
  s.telemetry_retention_days = c.telemetry_retention_days;
  return s;
}

//! The API key's provider, inside the request's transaction; a key revoked since authentication is refused.
core::Result<std::string> agent_provider(Ctx& ctx, store::Tx& tx) {
  std::string id = provider_id_for_api_key(tx, ctx.principal->api_key_id);
  if (id.empty()) {
    return Error::make(ErrorCode::unauthenticated, "API key is invalid or revoked").with_code("invalid_api_key");
  }
  return id;
}

std::optional<http::Response> require_api_key(Ctx& ctx) {
  if (ctx.principal != nullptr && ctx.principal->via == Principal::Via::api_key) return std::nullopt;
  return http::Response::error(
      Error::make(ErrorCode::forbidden, "agent endpoints take a provider API key (Authorization: Bearer gpx_...)")
          .with_code("api_key_required"));
}

template <class Parse, class Apply>
http::Response agent_call(Ctx& ctx, Parse parse, Apply apply) {
  if (auto refused = require_api_key(ctx)) return *refused;
  auto body = ctx.json_body();
  if (!body) return http::Response::error(body.error());
  auto req = parse(*body);
  if (!req) return http::Response::error(req.error());
  const auto settings = settings_of(ctx.config());
  const auto now = store::now_ms();
  auto out = ctx.store().transact([&](store::Tx& tx) -> core::Result<nlohmann::json> {
    auto provider = agent_provider(ctx, tx);
    if (!provider) return std::move(provider).error();
    return apply(tx, *provider, *req, settings, now);
  });
  if (!out) return http::Response::error(out.error());
  return http::Response::json(200, *out);
}

http::Response agent_register(Ctx& ctx) {
  return agent_call(ctx, parse_register_request, register_machine);
}
http::Response agent_heartbeat(Ctx& ctx) {
  const auto bench = benchmark_settings(ctx.config());
  // The reply carries the commands: a benchmark run the server wants (server/benchmarks.hpp).
  return agent_call(ctx, parse_heartbeat_request,
                    [&](store::Tx& tx, const std::string& provider, const HeartbeatRequest& req,
                        const MachineSettings& s, std::int64_t now) -> core::Result<nlohmann::json> {
                      auto reply = record_heartbeat(tx, provider, req, s, now);
                      if (!reply) return reply;
                      auto cmds = benchmark_commands(tx, req.machine_id, bench, now);
                      if (!cmds.empty()) (*reply)["commands"] = std::move(cmds);
                      return reply;
                    });
}

http::Response provider_machines(Ctx& ctx) {
  auto page = page_params(ctx.req);
  if (!page) return http::Response::error(page.error());
  auto out = ctx.store().transact(
      [&](store::Tx& tx) -> core::Result<nlohmann::json> {
        const std::string pid = caller_provider(ctx, tx);
        if (pid.empty()) return not_a_provider();
        return list_machines(tx, pid, *page);
      },
      store::TxMode::read);
  if (!out) return http::Response::error(out.error());
  return http::Response::json(200, *out);
}

http::Response provider_machine(Ctx& ctx) {
  const std::string id = ctx.req.param("id");
  const auto now = store::now_ms();
  auto out = ctx.store().transact(
      [&](store::Tx& tx) -> core::Result<nlohmann::json> {
        const std::string pid = caller_provider(ctx, tx);
        if (pid.empty()) return not_a_provider();
        return machine_detail(tx, pid, id, now);
      },
      store::TxMode::read);
  if (!out) return http::Response::error(out.error());
  return http::Response::json(200, *out);
}

http::Response install_script(Ctx& ctx) {
  http::Response r;
  r.content_type = "text/x-shellscript; charset=utf-8";
  r.body = agent_installer(ctx.config().base_url());
  return r;
}

}  // namespace

void register_agent_api(App& app) {
  // Sequence numbers make agent messages idempotent; Idempotency-Key replay is not needed here.
  auto agent = RouteOptions::signed_in().no_idempotency().api_key_allowed();
  app.route(http::Method::post, "/v1/agent/register", agent, agent_register);
  app.route(http::Method::post, "/v1/agent/heartbeat", agent, agent_heartbeat);
  auto provider = RouteOptions::for_roles({"provider"}).api_key_allowed();
  app.route(http::Method::get, "/agent/install.sh", RouteOptions::public_route(), install_script);
  app.route(http::Method::get, "/v1/provider/machines", provider, provider_machines);
  app.route(http::Method::get, "/v1/provider/machines/{id}", provider, provider_machine);
}

}  // namespace gpunex::server
