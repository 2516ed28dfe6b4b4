// /healthz and /metrics.

#include "server/app.hpp"

namespace gpunex::server {

namespace {

http::Response healthz(Ctx& ctx) {
  try {
    ctx.store().transact([](store::Tx& tx) { tx.query("SELECT 1"); }, store::TxMode::read);
  } catch (const store::StoreError&) {
    return http::Response::json(503, {{"status", "unavailable"}, {"store", "unreachable"}});
  }
  return http::Response::json(200, {{"status", "ok"}});
}

bool is_loopback(const std::string& ip) { return ip.rfind("127.", 0) == 0 || ip == "::1" || ip == "::ffff:127.0.0.1"; }

// Operators scrape from the host itself or sign in as admin; other callers learn nothing about traffic.
http::Response metrics(Ctx& ctx) {
  if (!is_loopback(ctx.req.remote_ip) && !(ctx.principal && ctx.principal->user.has_role("admin"))) {
    return http::Response::error(core::ErrorCode::forbidden, "metrics are served to loopback or admin callers");
  }
  http::Response r;
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  r.body = ctx.app.metrics().render();
  return r;
}

}  // namespace

void register_system_api(App& app) {
  app.route(http::Method::get, "/healthz", RouteOptions::public_route(), healthz);
  app.route(http::Method::get, "/metrics", RouteOptions::public_route(), metrics);
}

}  // namespace gpunex::server
