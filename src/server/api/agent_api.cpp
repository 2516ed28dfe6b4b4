// The agent's endpoints (/v1/agent/register, /v1/agent/heartbeat) and the
// provider's view of its machines (/v1/provider/machines[/{id}]).

#include <algorithm>
#include <set>

#include "core/marketplace.hpp"
#include "core/schedule.hpp"
#include "protocol/heartbeat.hpp"
#include "protocol/register.hpp"
#include "server/api/handlers.hpp"
#include "server/api/openapi.hpp"
#include "server/api/routes.hpp"
#include "server/fleet/benchmarks.hpp"
#include "server/fleet/machines.hpp"
#include "server/fleet/schedules.hpp"
#include "server/market/prices.hpp"
#include "server/platform/request_pipeline.hpp"
#include "server/rentals/rentals.hpp"
#include "util/time.hpp"

namespace gpunex::server {

namespace {

template <class Parse, class Apply>
http::Response agent_call(Ctx& ctx, Parse parse, Apply apply) {
  if (auto refused = require_agent_key(ctx)) return *refused;
  auto req = ctx.read_body(parse);
  if (!req) return http::Response::error(req.error());
  const auto settings = machine_settings(ctx.config());
  const auto now = ctx.now_ms();
  auto out = ctx.store().transact([&](store::Tx& tx) -> core::Result<nlohmann::json> {
    auto provider = agent_key_provider(tx, ctx.principal->api_key_id);
    if (!provider) return std::move(provider).error();
    return apply(tx, *provider, *req, settings, now);
  });
  if (!out) return http::Response::error(out.error());
  return http::Response::json(200, *out);
}

http::Response agent_register(Ctx& ctx) {
  return agent_call(
      ctx, protocol::parse_register_request,
      [seen_from = ctx.req.remote_ip](store::Tx& tx, const std::string& provider, const protocol::RegisterRequest& req,
                                      const MachineSettings& settings, std::int64_t now) {
        return register_machine(tx, provider, req, settings, now, seen_from);
      });
}
//! A heartbeat is parsed here, on the I/O thread, and stored by the group commit with the heartbeats of
//! other agents in one transaction; the reply is sent once that transaction has committed.
void agent_heartbeat(Ctx& ctx, const http::Reply& reply, PendingTelemetry& latest, KnownGpus& known) {
  if (auto refused = require_agent_key(ctx)) return reply(*refused);
  // Without a JSON tree unless the body has a fault to name (protocol/heartbeat_reader.cpp).
  auto req = protocol::read_heartbeat_request(ctx.req.body);
  if (!req) return reply(http::Response::error(req.error()));
  std::string machine_id = req->machine_id;  // orders the batch
  // A bogus machine id or GPU is refused before the batch writes, so it cannot make the batch roll back
  // and run again (an agent sending them would multiply the store's work).
  // The group commit runs the check and then the work in one transaction, nothing in between: the work
  // takes the machine the check read instead of reading the key, the machine and its GPUs again.
  auto checked = std::make_shared<std::optional<CheckedMachine>>();
  auto shared_req = std::make_shared<const protocol::HeartbeatRequest>(std::move(*req));
  const auto now = ctx.now_ms();
  const auto bench = benchmark_settings(ctx.config());
  // On PostgreSQL the check's read asks whether the machine has benchmark work, for the work below: a round
  // trip fewer. SQLite has no round trips, and there the one statement was slower than two (bench/README.md,
  // heartbeat path (6)).
  std::optional<HeartbeatWorkQuestion> work_question;
  if (ctx.store().dialect() == store::Dialect::postgres) {
    work_question = heartbeat_work_question(shared_req->machine_id, bench, now);
  }
  auto check = [key_id = ctx.principal->api_key_id, req = shared_req, checked, &known,
                work_question = std::move(work_question)](store::Tx& tx) -> core::Status {
    checked->reset();
    // The key is checked again inside the transaction, in the machine's read: one revoked since
    // authentication is refused. When that read finds nothing, a dead key is answered 401, before the 404.
    auto machine = check_heartbeat_of_key(tx, key_id, *req, &known, work_question ? &*work_question : nullptr);
    if (!machine && machine.error().code == core::ErrorCode::not_found) {
      if (auto provider = agent_key_provider(tx, key_id); !provider) return std::move(provider).error();
    }
    if (!machine) return std::move(machine).error();
    *checked = std::move(*machine);
    return core::ok_status();
  };
  auto work = [key_id = ctx.principal->api_key_id, shared_req, checked, &latest,
               settings = machine_settings(ctx.config()), bench, now,
               &app = ctx.app](store::Tx& tx) -> core::Result<nlohmann::json> {
    const auto& req = *shared_req;
    std::optional<CheckedMachine> machine = std::exchange(*checked, std::nullopt);
    core::Result<nlohmann::json> out = core::Error::make(core::ErrorCode::internal, "not run");
    const std::optional<bool> has_benchmark_work = machine ? machine->benchmark_work : std::nullopt;
    if (machine) {
      out = record_checked_heartbeat(tx, *machine, shared_req, settings, now, &latest);
    } else {  // not checked just before (GroupCommit always checks first): the whole check here
      auto provider = agent_key_provider(tx, key_id);
      if (!provider) return std::move(provider).error();
      out = record_heartbeat(tx, *provider, req, settings, now, &latest);
    }
    if (!out) return out;
    // A rented GPU that stopped answering stops its rental (gpu_failure, the provider's side). A
    // replayed heartbeat (duplicate) stored nothing and stops nothing.
    if (!out->value("duplicate", false)) {
      for (const auto& e : req.events) {
        if (e.type == protocol::kGpuLost) {
          rentals::stop_for_lost_gpu(tx, req.machine_id, e.uuid, app.config().base_url(), now);
        }
      }
    }
    // The reply carries the commands: a benchmark run the server wants (server/fleet/benchmarks.hpp).
    auto cmds = benchmark_commands(tx, req.machine_id, bench, now, has_benchmark_work);
    if (!cmds.empty()) (*out)["commands"] = std::move(cmds);
    return out;
  };
  ctx.app.group_commit().submit(
      std::move(work),
      [reply, request_id = ctx.req.request_id](GroupCommit::Outcome o) {
        if (o.failure) return reply(failure_response(o.failure, request_id));
        reply(o.result ? http::Response::json(200, *o.result) : http::Response::error(o.result.error()));
      },
      std::move(machine_id), std::move(check));
}

//! Where each of the provider's `machines` stands on the marketplace: `offered` when `book` (the
//! marketplace now) shows any of its GPUs, else `not_offered_reason` says why, from the machine's own facts
//! (core::not_offered_reason). The list and the detail page say it alike.
void tell_offered(store::Tx& tx, const std::string& provider_id, std::vector<nlohmann::json*> machines,
                  const core::OfferBook& book, bool allow_simulated, std::int64_t now_ms) {
  std::optional<std::set<std::string>> priced;
  for (nlohmann::json* m : machines) {
    const std::string id = m->value("id", std::string());
    const bool offered = book.offers_machine(id);
    (*m)["offered"] = offered;
    (*m)["not_offered_reason"] = nullptr;
    if (offered) continue;
    if (!priced) {
      priced.emplace();
      for (const auto& p : current_prices(tx, provider_id)) priced->insert(p.model);
    }
    core::MachineOfferFacts f;
    f.online = m->value("status", std::string()) == core::machine_status_name(core::MachineStatus::online);
    if (const auto blocked = m->find("rentals_blocked"); blocked != m->end() && blocked->is_string()) {
      f.rentals_blocked = blocked->get<std::string>();
    }
    f.simulated_hidden = m->value("simulated", false) && !allow_simulated;
    if (const auto schedule = load_schedule(tx, id)) {
      f.available_now = core::is_available(*schedule, core::UtcTime{std::chrono::seconds{now_ms / 1000}});
    }
    const auto allocated = rentals::allocated_uuids(tx, id);
    std::set<std::string> unpriced;
    for (const auto& g : m->value("gpus", nlohmann::json::array())) {
      if (!g.value("present", false) || !g.value("listed", false) || !g["model"].is_string()) continue;
      const auto model = g["model"].get<std::string>();
      f.listed_models.push_back(model);
      if (!priced->contains(model)) {
        unpriced.insert(model);
      } else if (std::find(allocated.begin(), allocated.end(), g.value("uuid", std::string())) == allocated.end()) {
        ++f.listed_free;
      }
    }
    f.unpriced_models.assign(unpriced.begin(), unpriced.end());
    (*m)["not_offered_reason"] = core::not_offered_reason(f);
  }
}

http::Response provider_machines(Ctx& ctx, const PendingTelemetry& latest, OfferCache& offers,
                                 ScheduleCache& schedules) {
  auto page = page_params(ctx.req);
  if (!page) return http::Response::error(page.error());
  const auto now = ctx.now_ms();
  const auto book =
      offers.book(ctx.store(), schedules, ctx.app.config().rank, core::UtcTime{std::chrono::seconds{now / 1000}});
  auto out = ctx.store().transact(
      [&](store::Tx& tx) -> core::Result<nlohmann::json> {
        const std::string pid = caller_provider(ctx, tx);
        if (pid.empty()) return not_a_provider();
        auto list = list_machines(tx, pid, *page, now, &latest);
        if (!list) return list;
        std::vector<nlohmann::json*> machines;
        for (auto& m : (*list)["items"]) machines.push_back(&m);
        tell_offered(tx, pid, machines, *book, ctx.app.config().allow_simulated_offers, now);
        return list;
      },
      store::TxMode::read);
  if (!out) return http::Response::error(out.error());
  return http::Response::json(200, *out);
}

//! GET /v1/admin/machines[?status=online|offline]: every provider's machines, a page by id (read by its key,
//! not built whole), each with its owner, whether it is heard from, its GPUs listed and rented; and the
//! whole fleet's counts, whatever the page and the filter.
http::Response fleet_machines(Ctx& ctx) {
  auto page = page_params(ctx.req);
  if (!page) return http::Response::error(page.error());
  std::optional<core::MachineStatus> status;
  if (const auto text = ctx.req.query_param("status")) {
    status = core::parse_machine_status(*text);
    if (!status) {
      return http::Response::error(
          core::Error::make(core::ErrorCode::invalid_field, "status must be online or offline", "status"));
    }
  }
  auto out = ctx.store().transact(
      [&](store::Tx& tx) -> core::Result<nlohmann::json> {
        MachinesRepo repo(tx);
        if (page->after && !repo.find(*page->after)) {
          return core::Error::make(core::ErrorCode::invalid_field, "cursor does not name an item of this list",
                                   "cursor");
        }
        const auto rows = repo.fleet_page(status, page->after, static_cast<std::int64_t>(page->limit) + 1);
        const bool more = rows.size() > page->limit;
        const std::size_t shown = std::min(rows.size(), page->limit);
        std::vector<std::string> ids;
        for (std::size_t i = 0; i < shown; ++i) ids.push_back(rows[i].id);
        const auto rented = rentals::rented_gpus(tx, ids);
        auto items = nlohmann::json::array();
        for (std::size_t i = 0; i < shown; ++i) {
          const auto& m = rows[i];
          auto models = nlohmann::json::array();
          for (const auto& [model, count] : m.models) models.push_back({{"model", model}, {"count", count}});
          const auto r = rented.find(m.id);
          items.push_back({{"id", m.id},
                           {"hostname", m.hostname},
                           {"provider_id", m.provider_id},
                           {"provider_email", m.provider_email},
                           {"status", core::machine_status_name(m.status)},
                           {"simulated", m.simulated},
                           {"agent_version", m.agent_version},
                           {"driver_version", m.driver_version},
                           {"last_seen", util::rfc3339_or_null(m.last_seen_ms)},
                           {"rentals_blocked", m.rentals_blocked ? nlohmann::json(*m.rentals_blocked) : nullptr},
                           {"gpus", std::move(models)},
                           {"gpu_count", m.gpus},
                           {"gpus_listed", m.listed},
                           {"gpus_rented", r == rented.end() ? 0 : r->second}});
        }
        const auto c = repo.fleet_counts();
        return nlohmann::json{{"items", std::move(items)},
                              {"next_cursor", more ? nlohmann::json(rows[shown - 1].id) : nlohmann::json(nullptr)},
                              {"summary",
                               {{"machines", c.machines},
                                {"online", c.online},
                                {"offline", c.machines - c.online},
                                {"gpus", c.gpus},
                                {"gpus_listed", c.listed},
                                {"gpus_rented", rentals::rented_gpus_total(tx)}}}};
      },
      store::TxMode::read);
  if (!out) return http::Response::error(out.error());
  return http::Response::json(200, *out);
}

http::Response provider_machine(Ctx& ctx, const PendingTelemetry& latest, OfferCache& offers,
                                ScheduleCache& schedules) {
  const std::string id = ctx.req.param("id");
  const auto now = ctx.now_ms();
  const auto book =
      offers.book(ctx.store(), schedules, ctx.app.config().rank, core::UtcTime{std::chrono::seconds{now / 1000}});
  auto out = ctx.store().transact(
      [&](store::Tx& tx) -> core::Result<nlohmann::json> {
        const std::string pid = caller_provider(ctx, tx);
        if (pid.empty()) return not_a_provider();
        auto detail = machine_detail(tx, pid, id, now, &latest);
        if (detail) tell_offered(tx, pid, {&*detail}, *book, ctx.app.config().allow_simulated_offers, now);
        return detail;
      },
      store::TxMode::read);
  if (!out) return http::Response::error(out.error());
  return http::Response::json(200, *out);
}

http::Response remove_provider_machine(Ctx& ctx) {
  const std::string id = ctx.req.param("id");
  const auto now = ctx.now_ms();
  auto out = ctx.store().transact([&](store::Tx& tx) -> core::Result<nlohmann::json> {
    const std::string pid = caller_provider(ctx, tx);
    if (pid.empty()) return not_a_provider();
    return remove_machine(tx, pid, id, now);
  });
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

void register_agent_api(App& app, OfferCache& offers, ScheduleCache& schedules) {
  // Sequence numbers make agent messages idempotent; Idempotency-Key replay is not needed here.
  auto agent = RouteOptions::signed_in().no_idempotency().agent_key_only();
  // Each GPU's latest sample and its minutes' sums, written in batches (server/fleet/pending_telemetry.hpp);
  // the rest at the stop.
  auto& latest = app.keep(std::make_unique<PendingTelemetry>());
  latest.start(app.store(), std::chrono::seconds(app.config().telemetry_flush_s), app.clock());
  app.on_stop([&latest] { latest.stop(); });
  // The GPUs each machine registered, as heartbeats' checks have read them (server/fleet/machines.hpp).
  auto& known = app.keep(std::make_unique<KnownGpus>());
  namespace oa = openapi;
  const auto figure = oa::nullable(oa::number());
  const auto gpu = oa::record({{"uuid", oa::text(1)},
                               {"index", oa::integer(0, 1024)},
                               {"name", oa::text()},
                               {"model", oa::nullable(oa::text())},
                               {"memory_mib", oa::integer(0, 1LL << 40)},
                               {"present", oa::boolean()},
                               {"latest", oa::nullable(oa::any_object())},
                               {"benchmarked", oa::boolean()},
                               {"listed", oa::boolean()},
                               {"perf_score", figure},
                               {"quality_ratio", figure},
                               {"delist_reason", oa::nullable(oa::text())},
                               {"awaiting_challenges", oa::boolean()}},
                              {"uuid", "index", "name", "model", "memory_mib", "present", "benchmarked", "listed",
                               "perf_score", "quality_ratio", "delist_reason", "awaiting_challenges"});
  const auto machine = oa::component("Machine", oa::record({{"id", oa::text(1)},
                                                            {"status", oa::one_of({"online", "offline"})},
                                                            {"last_seen_at", oa::nullable(oa::timestamp())},
                                                            {"simulated", oa::boolean()},
                                                            {"hostname", oa::text()},
                                                            {"created_at", oa::timestamp()},
                                                            {"driver_version", oa::text()},
                                                            {"cuda_version", oa::text()},
                                                            {"agent_version", oa::text()},
                                                            {"rentals_blocked", oa::nullable(oa::text())},
                                                            {"public_host", oa::nullable(oa::text())},
                                                            {"host", oa::any_object()},
                                                            {"gpus", oa::array(gpu)},
                                                            {"removed_at", oa::nullable(oa::timestamp())},
                                                            {"offered", oa::boolean()},
                                                            {"not_offered_reason", oa::nullable(oa::text(1))}},
                                                           {"id", "status", "last_seen_at", "simulated", "hostname",
                                                            "created_at", "gpus", "offered", "not_offered_reason"}));
  app.route(
      http::Method::post, "/v1/agent/register",
      agent.doc({.summary = "Agent: register a machine and its GPUs",
                 .body = openapi::body_of(protocol::parse_register_request),
                 .responses = {{200, oa::record({{"machine_id", oa::text(1)}, {"heartbeat_interval_s", oa::number()}},
                                                {"machine_id", "heartbeat_interval_s"})}}}),
      agent_register);
  app.route_async(
      http::Method::post, "/v1/agent/heartbeat",
      agent.doc({.summary = "Agent: heartbeat with telemetry; answers commands",
                 .body = openapi::body_of(protocol::parse_heartbeat_request),
                 .responses = {{200, oa::record({{"commands", oa::array(oa::any_object())},
                                                 {"heartbeat_interval_s", oa::number()}},
                                                {"commands"})}}}),
      [&latest, &known](Ctx& ctx, const http::Reply& reply) { agent_heartbeat(ctx, reply, latest, known); });
  auto provider = RouteOptions::for_roles({"provider"}).api_key_allowed();
  const auto count = oa::integer(0, 1LL << 40);
  app.route(
      http::Method::get, "/v1/admin/machines",
      RouteOptions::for_roles({"admin"}).doc(
          {.summary = "Every provider's machines (the operator's fleet view), with the fleet's counts",
           .query = {"status", "limit", "cursor"},
           .responses = {{200, oa::all_of(
                                   {oa::page(oa::closed_record(
                                        {{"id", oa::text(1)},
                                         {"hostname", oa::text()},
                                         {"provider_id", oa::text(1)},
                                         {"provider_email", oa::text(1)},
                                         {"status", oa::one_of({"online", "offline"})},
                                         {"simulated", oa::boolean()},
                                         {"agent_version", oa::text()},
                                         {"driver_version", oa::text()},
                                         {"last_seen", oa::nullable(oa::timestamp())},
                                         {"rentals_blocked", oa::nullable(oa::text())},
                                         {"gpus", oa::array(oa::closed_record(
                                                      {{"model", oa::text(1)}, {"count", count}}, {"model", "count"}))},
                                         {"gpu_count", count},
                                         {"gpus_listed", count},
                                         {"gpus_rented", count}},
                                        {"id", "hostname", "provider_id", "provider_email", "status", "simulated",
                                         "agent_version", "driver_version", "last_seen", "rentals_blocked", "gpus",
                                         "gpu_count", "gpus_listed", "gpus_rented"})),
                                    oa::record({{"summary", oa::closed_record({{"machines", count},
                                                                               {"online", count},
                                                                               {"offline", count},
                                                                               {"gpus", count},
                                                                               {"gpus_listed", count},
                                                                               {"gpus_rented", count}},
                                                                              {"machines", "online", "offline", "gpus",
                                                                               "gpus_listed", "gpus_rented"})}},
                                               {"summary"})})}}}),
      fleet_machines);
  app.route(http::Method::get, "/agent/install.sh",
            RouteOptions::public_route().doc(
                {.summary = "The agent installer, with this server's URL filled in", .responses = {{200, nullptr}}}),
            install_script);
  app.route(
      http::Method::get, "/v1/provider/machines",
      provider.doc({.summary = "My machines", .query = {"limit", "cursor"}, .responses = {{200, oa::page(machine)}}}),
      [&latest, &offers, &schedules](Ctx& ctx) { return provider_machines(ctx, latest, offers, schedules); });
  app.route(http::Method::get, "/v1/provider/machines/{id}",
            provider.doc({.summary = "One of my machines",
                          .responses = {{200, oa::all_of({machine, oa::record({{"events", oa::array(oa::any_object())}},
                                                                              {"events"})})}}}),
            [&latest, &offers, &schedules](Ctx& ctx) { return provider_machine(ctx, latest, offers, schedules); });
  app.route(http::Method::del, "/v1/provider/machines/{id}",
            provider.doc({.summary = "Remove one of my machines (offline, no live rental): out of my list, the fleet "
                                     "and reliability; its agent heard again brings it back",
                          .responses = {{200, oa::record({{"id", oa::text(1)}, {"removed_at", oa::timestamp()}},
                                                         {"id", "removed_at"})}}}),
            remove_provider_machine);
}

}  // namespace gpunex::server
