// /healthz (liveness), /readyz (readiness) and /metrics.

#include "server/api/openapi.hpp"
#include "server/api/routes.hpp"
#include "server/fleet/machines_repo.hpp"
#include "server/platform/platform_repo.hpp"
#include "server/platform/request_pipeline.hpp"
#include "store/migrations.hpp"
#include "util/crypto.hpp"
#include "util/log.hpp"
#include "util/time.hpp"

namespace gpunex::server {

namespace {

// Liveness: the process is serving requests. Answered from memory, never from the store, so a
// slow or unreachable database does not get a healthy process restarted.
http::Response healthz(Ctx&) { return http::Response::json(200, {{"status", "ok"}}); }

// Readiness: the store answers and its schema is at least the one this binary was built for. A load
// balancer sends traffic only while this is 200; 503 says why not. A newer schema is a rolling upgrade
// under way (a newer replica migrated the shared database): migrations only add, so this replica still
// serves, ready, and says to upgrade it; were it unready, an active-check balancer would leave the first
// upgraded replica alone with all the traffic. A change feed that is reconnecting does not make a
// replica unready: its caches fall back to polling meanwhile.
http::Response readyz(Ctx& ctx) {
  const int expected = store::migrations().empty() ? 0 : store::migrations().back().version;
  std::int64_t applied = 0;
  try {
    applied = ctx.store().transact([](store::Tx& tx) { return platform_repo::applied_schema_version(tx); },
                                   store::TxMode::read);
  } catch (const std::exception& e) {
    // The store's words (host names, ports, libpq's text) go to the log, not to this public route.
    util::log_event("warn", "not ready: the store does not answer", {{"error", e.what()}});
    return http::Response::json(503, {{"status", "unavailable"}, {"reason", "store unavailable"}});
  }
  if (applied < expected) {
    return http::Response::json(
        503, {{"status", "unavailable"},
              {"reason", "schema version " + std::to_string(applied) + ", this server needs " +
                             std::to_string(expected)},
              {"schema_version", applied},
              {"expected_schema_version", expected}});
  }
  nlohmann::json ready = {{"status", "ready"}, {"schema_version", applied}};
  if (applied > expected) {
    ready["expected_schema_version"] = expected;
    ready["note"] = "the database schema (" + std::to_string(applied) + ") is newer than this build's (" +
                    std::to_string(expected) + "): a newer replica migrated it; upgrade this one";
  }
  // Replicas only: whether other replicas' changes are heard now, or caches are emptied on a poll meanwhile.
  if (const auto* feed = ctx.app.change_feed()) ready["change_feed"] = feed->listening() ? "listening" : "polling";
  return http::Response::json(200, ready);
}

bool is_loopback(const std::string& ip) { return ip.rfind("127.", 0) == 0 || ip == "::1" || ip == "::ffff:127.0.0.1"; }

// Operators scrape from the host itself or sign in as admin; other callers learn nothing about traffic.
http::Response metrics(Ctx& ctx) {
  // A proxy on this host makes every request loopback: a proxied request needs the token or an admin.
  const auto& token = ctx.config().metrics_token;
  const std::string auth = ctx.req.header("authorization");
  const bool token_ok = !token.empty() && util::equal_constant_time(auth, "Bearer " + token);
  const bool local = token.empty() && is_loopback(ctx.req.remote_ip) && !ctx.req.proxied;
  if (!token_ok && !local && !(ctx.principal && ctx.principal->user.has_role(core::Role::admin))) {
    return http::Response::error(core::ErrorCode::forbidden, "metrics are served with the metrics token, to admins, or to loopback callers not behind a proxy");
  }
  http::Response r;
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  r.body = ctx.app.metrics().render();
  // The store's side, read at the scrape: what waits to be mailed, and the fleet (every replica says the same).
  const auto now = ctx.now_ms();
  struct StoreFigures {
    platform_repo::OutboxBacklog outbox;
    FleetCounts fleet;
  };
  const auto f = ctx.store().transact(
      [](store::Tx& tx) {
        return StoreFigures{platform_repo::outbox_backlog(tx), MachinesRepo(tx).fleet_counts()};
      },
      store::TxMode::read);
  const auto gauge = [&](const char* name, const char* help, const std::string& samples) {
    r.body += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " gauge\n" + samples;
  };
  gauge("gpunex_outbox_pending", "Mails queued and not sent yet (retrying ones included, given-up ones not).",
        "gpunex_outbox_pending " + std::to_string(f.outbox.pending) + "\n");
  gauge("gpunex_outbox_oldest_pending_seconds", "How long the oldest unsent mail has waited (0: none waits).",
        "gpunex_outbox_oldest_pending_seconds " +
            std::to_string(
                f.outbox.oldest_created_ms ? std::max<std::int64_t>(0, now - *f.outbox.oldest_created_ms) / 1000 : 0) +
            "\n");
  gauge("gpunex_machines", "Providers' machines (removed ones aside), by status.",
        "gpunex_machines{status=\"online\"} " + std::to_string(f.fleet.online) +
            "\ngpunex_machines{status=\"offline\"} " + std::to_string(f.fleet.machines - f.fleet.online) + "\n");
  gauge("gpunex_gpus", "GPUs present on providers' machines, and how many of them are listed.",
        "gpunex_gpus{listed=\"true\"} " + std::to_string(f.fleet.listed) + "\ngpunex_gpus{listed=\"false\"} " +
            std::to_string(f.fleet.gpus - f.fleet.listed) + "\n");
  return r;
}

// Tests only (a server started with test_clock and enable_test_clock): moves the server's clock
// forward by {"advance_seconds": N}, or to {"now": RFC 3339}; answers the time it now reads.
http::Response move_test_clock(Ctx& ctx) {
  auto body = ctx.json_body();
  if (!body) return http::Response::error(body.error());
  auto* clock = ctx.app.test_clock();
  if (auto it = body->find("advance_seconds"); it != body->end()) {
    constexpr std::int64_t kMaxAdvanceS = 10LL * 366 * 86'400;  // ten years a move keeps the arithmetic safe
    if (!it->is_number_integer() || it->get<std::int64_t>() < 0 || it->get<std::int64_t>() > kMaxAdvanceS) {
      return http::Response::error(core::Error::make(
          core::ErrorCode::invalid_field, "advance_seconds must be a whole number of seconds, from 0 to ten years",
          "advance_seconds"));
    }
    clock->advance(it->get<std::int64_t>() * 1000);
  } else if (auto at = body->find("now"); at != body->end()) {
    auto ms = at->is_string() ? util::parse_rfc3339(at->get<std::string>()) : std::nullopt;
    if (!ms) {
      return http::Response::error(
          core::Error::make(core::ErrorCode::invalid_field, "now must be an RFC 3339 time", "now"));
    }
    clock->set(*ms);
  }
  return http::Response::json(200, {{"now", util::rfc3339(clock->now_ms())}});
}

}  // namespace

void register_system_api(App& app) {
  namespace oa = openapi;
  app.route(http::Method::get, "/healthz",
            RouteOptions::public_route().doc(
                {.summary = "Liveness: 200 while the process serves",
                 .responses = {{200, oa::closed_record({{"status", oa::one_of({"ok"})}}, {"status"})}}}),
            healthz);
  app.route(
      http::Method::get, "/readyz",
      RouteOptions::public_route().doc(
          {.summary =
               "Readiness: 200 when the store answers with the schema this server needs (or a newer one), else 503",
           .responses = {{200, oa::record({{"status", oa::one_of({"ready"})},
                                           {"schema_version", oa::number()},
                                           {"expected_schema_version", oa::number()},
                                           {"note", oa::text()},
                                           {"change_feed", oa::one_of({"listening", "polling"})}},
                                          {"status", "schema_version"})},
                         {503, oa::record({{"status", oa::one_of({"unavailable"})}, {"reason", oa::text()}},
                                          {"status", "reason"})}}}),
      readyz);
  app.route(
      http::Method::get, "/metrics",
      RouteOptions::public_route().doc(
          {.summary = "Prometheus metrics (text format): with the metrics token (Authorization: Bearer), to admins, "
                      "or, with no token set, to loopback callers not behind a proxy; 403 to anyone else",
           .responses = {{200, nullptr}}}),
      metrics);
  if (app.test_clock()) {
    app.route(
        http::Method::post, "/v1/test/clock",
        RouteOptions::for_roles({"admin"}).no_idempotency().doc(
            {.summary = "Move the test clock (servers started with a test clock only)",
             // Read by hand, not by an ObjectReader (a test-only route: other members are ignored).
             .body = openapi::record(
                 {{"advance_seconds", openapi::integer(0, 10LL * 366 * 86'400)}, {"now", openapi::timestamp()}}, {})}),
        move_test_clock);
  }
}

}  // namespace gpunex::server
