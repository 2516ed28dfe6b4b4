// Renting GPUs (issue #16): the customer's POST /v1/rentals and their rentals, the provider's view
// of the rentals on their machines, and the agent's side (protocol/rentals.hpp): the long poll for
// a machine's rentals and the rental events, which settle a rental into the ledger as it ends.

#include <algorithm>
#include <chrono>
#include <functional>

#include "core/marketplace.hpp"
#include "core/text.hpp"
#include "protocol/rentals.hpp"
#include "server/api/handlers.hpp"
#include "server/api/openapi.hpp"
#include "server/api/routes.hpp"
#include "server/billing/settlement.hpp"
#include "server/fleet/machines.hpp"
#include "server/market/offers.hpp"
#include "server/onboarding/gpu_catalog.hpp"
#include "server/rentals/agent_polls.hpp"
#include "server/rentals/rentals.hpp"
#include "util/log.hpp"
#include "util/time.hpp"

namespace gpunex::server {

namespace {

using core::Error;
using core::ErrorCode;
using http::Response;
namespace rental = core::rental;

Error rental_not_found() {
  return Error::make(ErrorCode::not_found, "no such rental of yours", "id").with_code("rental_not_found");
}

//! The offers the request may be placed on, best first, from the marketplace's book (so a rental
//! goes where the marketplace ranks first); the transaction then checks each one's free GPUs.
core::Result<std::vector<rentals::Candidate>> candidates_for(Ctx& ctx, const rentals::CreateRequest& req,
                                                             OfferCache& offers, ScheduleCache& schedules) {
  core::OfferFilter filter;
  filter.region = req.request.region;
  filter.max_price = req.request.max_price;
  filter.min_reliability = req.request.min_reliability;
  if (req.model_text) {
    const auto catalog = ctx.store().transact([](store::Tx& tx) { return list_models(tx); }, store::TxMode::read);
    filter.models.emplace();
    for (const auto& m : catalog) {
      if (core::model_filter_matches(*req.model_text, m)) filter.models->push_back(m.id);
    }
    if (filter.models->empty()) {
      return Error::make(ErrorCode::invalid_field, "no GPU model matches \"" + *req.model_text + "\"", req.model_field)
          .with_code("unknown_model");
    }
  }
  const core::UtcTime now{std::chrono::seconds{ctx.now_ms() / 1000}};
  const auto book = offers.book(ctx.store(), schedules, ctx.app.config().rank, now);
  std::vector<rentals::Candidate> out;
  for (const auto& offer : book->search(filter).items) {
    if (req.request.machine_id && offer.candidate.machine_id != *req.request.machine_id) continue;
    if (offer.candidate.gpu_count_available < req.request.gpu_count) continue;
    out.push_back({offer.candidate.machine_id, offer.candidate.model});
  }
  if (out.empty() && req.request.machine_id) {
    const bool known = ctx.store().transact(
        [&](store::Tx& tx) { return MachinesRepo(tx).find(*req.request.machine_id).has_value(); }, store::TxMode::read);
    if (!known) {
      return Error::make(ErrorCode::not_found,
                         "no machine " + *req.request.machine_id + " (its id is in the marketplace's offers)",
                         "machine_id")
          .with_code("unknown_machine");
    }
    if (filter.models) {
      // A model the machine does not have at all is a wrong request, not a busy machine to wait for (one
      // whose GPUs of the model are all rented is busy: read from its GPUs, not from its free offers).
      std::vector<std::string> offered;
      for (const auto& g :
           ctx.store().transact([&](store::Tx& tx) { return MachinesRepo(tx).present_gpus(*req.request.machine_id); },
                                store::TxMode::read)) {
        if (g.model && std::find(offered.begin(), offered.end(), *g.model) == offered.end())
          offered.push_back(*g.model);
      }
      const bool wanted = std::any_of(offered.begin(), offered.end(), [&](const std::string& m) {
        return std::find(filter.models->begin(), filter.models->end(), m) != filter.models->end();
      });
      if (!offered.empty() && !wanted) {
        std::string list;
        for (const auto& m : offered) list += (list.empty() ? "" : ", ") + m;
        return Error::make(ErrorCode::invalid_field,
                           "machine " + *req.request.machine_id + " has " + list + ", not \"" + *req.model_text +
                               "\" (leave the model out to rent what it offers)",
                           req.model_field)
            .with_code("model_not_offered");
      }
    }
    return Error::make(ErrorCode::conflict,
                       "machine " + *req.request.machine_id + " has no offer with " +
                           std::to_string(req.request.gpu_count) + " free GPU(s) matching the request now",
                       "machine_id")
        .with_code("no_gpus_available");
  }
  return out;
}

Response create_rental(Ctx& ctx, OfferCache& offers, ScheduleCache& schedules, rentals::AgentPolls& polls) {
  auto req = ctx.read_body(rentals::read_create_request);
  if (!req) return Response::error(req.error());
  auto candidates = candidates_for(ctx, *req, offers, schedules);
  if (!candidates) return Response::error(candidates.error());
  const auto commission = static_cast<core::ledger::BasisPoints>(ctx.config().commission_bp);
  // A GPU another rental took between the offer book and this transaction: try again, afresh.
  for (int attempt = 0;; ++attempt) {
    const auto now = ctx.now_ms();
    auto row = ctx.store().transact([&](store::Tx& tx) {
      const std::string& customer = ctx.principal->user.id;
      // One rental placed at a time per customer (PostgreSQL; SQLite's writers run one at a time): two at
      // once would each find the balance free of the other's first hour.
      if (tx.dialect() == store::Dialect::postgres)
        tx.query("SELECT id FROM users WHERE id = ? FOR UPDATE", {customer});
      const auto money = billing::starting_balance(tx, customer, now);
      return rentals::create(tx, customer, *req, *candidates, money.available, money.held, commission, now);
    });
    if (!row && row.error().detail_code == "gpus_taken" && attempt < 4) continue;
    if (!row) return Response::error(row.error());
    polls.ring(row->machine_id);
    // Read back as every other answer reads a rental: with its machine's host and whether it is online.
    const auto made =
        ctx.store().transact([&](store::Tx& tx) { return rentals::find(tx, row->id); }, store::TxMode::read);
    return Response::json(201, rentals::customer_json(made ? *made : *row, now));
  }
}

//! The rental lists' `state` query: one state or several, comma-separated (`running`,
//! `requested,starting,running`, spaces allowed); absent or empty: every state. Answers the names kept.
core::Result<std::vector<std::string>> state_filter(const http::Request& req) {
  std::vector<std::string> states;
  const auto text = req.query_param("state").value_or("");
  for (std::size_t at = 0; at < text.size();) {
    const auto comma = std::min(text.find(',', at), text.size());
    auto state = rental::parse_state(core::trim(text.substr(at, comma - at)));
    if (!state) {
      return core::Error::make(core::ErrorCode::invalid_field,
                               "state: " + state.error().message +
                                   "; give requested, starting, running, stopping or ended (several: comma-separated)",
                               "state");
    }
    states.emplace_back(rental::to_string(*state));
    at = comma + 1;
  }
  return states;
}

//! The list filter of `states` (state_filter): none when every state is wanted.
std::function<bool(const nlohmann::json&)> state_kept(const std::vector<std::string>& states) {
  if (states.empty()) return {};
  return [states](const nlohmann::json& item) {
    return std::find(states.begin(), states.end(), item.value("state", std::string{})) != states.end();
  };
}

//! The caller's own rental, or 404 (another customer's rental is not told apart from none).
core::Result<rentals::RentalRow> own_rental(Ctx& ctx, store::Tx& tx) {
  auto r = rentals::find(tx, ctx.req.param("id"));
  if (!r || r->customer_id != ctx.principal->user.id) return rental_not_found();
  return *r;
}

//! A rental on one of the caller's machines, or 404.
core::Result<rentals::RentalRow> provider_rental(Ctx& ctx, store::Tx& tx) {
  const std::string pid = caller_provider(ctx, tx);
  if (pid.empty()) return not_a_provider();
  auto r = rentals::find(tx, ctx.req.param("id"));
  if (!r || r->provider_id != pid) return rental_not_found();
  return *r;
}

template <class Find>
Response stop_rental(Ctx& ctx, rentals::AgentPolls& polls, Find find, rental::EndReason reason,
                     nlohmann::json (*view)(const rentals::RentalRow&, std::int64_t)) {
  const auto now = ctx.now_ms();
  std::string machine;
  auto out = respond(ctx, [&](store::Tx& tx) -> core::Result<nlohmann::json> {
    auto r = find(ctx, tx);
    if (!r) return std::move(r).error();
    auto after = rentals::stop(tx, *r, reason, now);
    const bool ended_now = after.state == rental::State::ended && r->state != rental::State::ended;
    if (ended_now) billing::settle(tx, after, now);
    const auto settled = *rentals::find(tx, after.id);  // read once, after the settlement, for both uses
    if (ended_now) rentals::tell_customer_ended(tx, settled, ctx.config().base_url(), now);
    machine = after.machine_id;
    return view(settled, now);
  });
  if (!machine.empty()) polls.ring(machine);
  return out;
}

Response rental_logs(Ctx& ctx) {
  return respond(
      ctx,
      [&](store::Tx& tx) -> core::Result<nlohmann::json> {
        auto r = own_rental(ctx, tx);
        if (!r) return std::move(r).error();
        return nlohmann::json{
            {"rental_id", r->id},
            {"state", rental::to_string(r->state)},  // an ended one writes no more
            {"logs", r->logs},
            {"updated_at", r->logs_at_ms ? nlohmann::json(util::rfc3339(*r->logs_at_ms)) : nlohmann::json(nullptr)}};
      },
      store::TxMode::read);
}

// ---- the agent's side ----

//! GET /v1/agent/rentals?machine_id=&known=&wait_s=[&blocked=]: answered at once when the machine's rentals are
//! not what the agent knows (or wait_s is 0), else when they change or wait_s passes.
void agent_rentals_poll(Ctx& ctx, const http::Reply& reply, rentals::AgentPolls& polls) {
  if (auto refused = require_agent_key(ctx)) return reply(*refused);
  const auto machine = ctx.req.query_param("machine_id");
  if (!machine || machine->empty() || machine->size() > 64) {
    return reply(Response::error(Error::make(ErrorCode::missing_field, "machine_id is required", "machine_id")));
  }
  const std::string known = ctx.req.query_param("known").value_or("");
  int wait_s = 25;
  if (const auto w = ctx.req.query_param("wait_s"); w && !w->empty()) {
    try {
      wait_s = std::stoi(*w);
    } catch (const std::exception&) {
      wait_s = -1;
    }
    if (wait_s < 0 || wait_s > protocol::kMaxWaitS) {
      return reply(Response::error(Error::make(ErrorCode::invalid_field,
                                               "wait_s must be 0 to " + std::to_string(protocol::kMaxWaitS), "wait_s")));
    }
  }
  auto blocked = protocol::parse_blocked(ctx.req.query_param(protocol::kBlockedParam));
  if (!blocked) return reply(Response::error(blocked.error()));
  store::Store& store = ctx.store();
  // The machine's rentals and, read in the same transaction when asked, the readiness last stored for it (the
  // first read compares it with the agent's word; a long poll's later read has no use for it).
  struct Seen {
    protocol::AgentRentals rentals;
    std::optional<std::string> blocked;
  };
  auto read = [&store, key = ctx.principal->api_key_id, machine = *machine](bool with_blocked) -> core::Result<Seen> {
    return store.transact(
        [&](store::Tx& tx) -> core::Result<Seen> {
          auto provider = agent_key_provider(tx, key);
          if (!provider) return std::move(provider).error();
          auto rentals = rentals::agent_rentals(tx, *provider, machine);
          if (!rentals) return std::move(rentals).error();
          Seen seen{std::move(*rentals), {}};
          if (with_blocked) seen.blocked = MachinesRepo(tx).rentals_blocked(machine);
          return seen;
        },
        store::TxMode::read);
  };
  auto now = read(true);
  if (!now) return reply(Response::error(now.error()));
  // What the agent says of its readiness is kept on the machine (a blocked machine's GPUs are not
  // offered), written only when it changed: most polls write nothing.
  if (now->blocked != *blocked) {
    auto noted = store.transact([&](store::Tx& tx) -> core::Status {
      MachinesRepo(tx).set_rentals_blocked(*machine, *blocked);
      return core::ok_status();
    });
    if (!noted) return reply(Response::error(noted.error()));
    util::log_event(*blocked ? "warn" : "info",
                    *blocked ? "a machine's agent cannot run rentals: its GPUs are not offered"
                             : "a machine's agent can run rentals again",
                    {{"machine", *machine}, {"why", blocked->value_or("")}});
  }
  if (wait_s == 0 || now->rentals.version != known) return reply(Response::json(200, now->rentals.to_json()));
  polls.wait(*machine, known, rentals::AgentPolls::Clock::now() + std::chrono::seconds(wait_s), [read, reply] {
    auto later = read(false);
    reply(later ? Response::json(200, later->rentals.to_json()) : Response::error(later.error()));
  });
}

Response agent_rental_events(Ctx& ctx, rentals::AgentPolls& polls) {
  if (auto refused = require_agent_key(ctx)) return *refused;
  auto req = ctx.read_body(protocol::parse_rental_events);
  if (!req) return Response::error(req.error());
  const auto now = ctx.now_ms();
  auto out = respond(ctx, [&](store::Tx& tx) -> core::Result<nlohmann::json> {
    auto provider = agent_key_provider(tx, ctx.principal->api_key_id);
    if (!provider) return std::move(provider).error();
    auto outcome = rentals::apply_events(tx, *provider, *req, now);
    if (!outcome) return std::move(outcome).error();
    // A rental that ended is settled in the same transaction: its last seconds are never lost.
    for (const auto& id : outcome->ended) {
      billing::settle(tx, *rentals::find(tx, id), now);
      rentals::tell_customer_ended(tx, *rentals::find(tx, id), ctx.config().base_url(), now);
    }
    return nlohmann::json{{"applied", outcome->applied}, {"duplicate", outcome->duplicate}};
  });
  polls.ring(req->machine_id);
  return out;
}

}  // namespace

void register_rentals_api(App& app, OfferCache& offers, ScheduleCache& schedules, rentals::AgentPolls& polls) {
  const auto customer = RouteOptions::signed_in();
  namespace oa = openapi;
  const auto when = oa::nullable(oa::timestamp());
  const auto state = oa::one_of({"requested", "starting", "running", "stopping", "ended"});
  const auto rental = oa::component(
      "Rental", oa::record({{"id", oa::text(1)},
                            {"state", state},
                            {"machine_id", oa::text(1)},
                            {"model", oa::text(1)},
                            {"gpu_count", oa::integer(1, 1024)},
                            {"gpus", oa::array(oa::text())},
                            {"usdc_per_gpu_hour", oa::money()},
                            {"cost_per_hour", oa::money()},
                            {"image", oa::text()},
                            {"command", oa::array(oa::text())},
                            {"env_names", oa::array(oa::text())},
                            {"host", oa::nullable(oa::text(1))},
                            {"ports", oa::array(oa::record({{"container_port", oa::integer(1, 65535)},
                                                            {"host_port", oa::nullable(oa::integer(1, 65535))},
                                                            {"address", oa::nullable(oa::text(1))}},
                                                           {"container_port", "host_port", "address"}))},
                            {"ssh", oa::nullable(oa::text(1))},
                            {"machine_online", oa::boolean()},
                            {"max_hours", oa::nullable(oa::number())},
                            {"available_until", when},
                            {"created_at", oa::timestamp()},
                            {"running_since", when},
                            {"ended_at", when},
                            {"stop_requested", oa::nullable(oa::text())},
                            {"stop_requested_at", when},
                            {"end_reason", oa::nullable(oa::text())},
                            {"end_text", oa::nullable(oa::text())},
                            {"exit_code", oa::nullable(oa::number())},
                            {"oom", oa::boolean()},
                            {"error", oa::nullable(oa::text())},
                            {"seconds_metered", oa::integer(0, 1LL << 53)},
                            {"cost_so_far", oa::money()},
                            {"settled", oa::money()}},
                           {"id", "state", "machine_id", "model", "gpu_count", "gpus", "usdc_per_gpu_hour", "image",
                            "created_at", "running_since", "ended_at", "end_reason", "cost_so_far"}));
  const auto provider_rental_schema = oa::record({{"id", oa::text(1)},
                                           {"machine_id", oa::text(1)},
                                           {"model", oa::text(1)},
                                           {"gpus", oa::array(oa::text())},
                                           {"state", state},
                                           {"usdc_per_gpu_hour", oa::money()},
                                           {"earnings_per_hour", oa::money()},
                                           {"earned_so_far", oa::money()},
                                           {"created_at", oa::timestamp()},
                                           {"running_since", when},
                                           {"ended_at", when},
                                           {"end_reason", oa::nullable(oa::text())},
                                           {"provider_side", oa::nullable(oa::boolean())}},
                                          {"id", "machine_id", "model", "state", "usdc_per_gpu_hour", "earned_so_far",
                                           "created_at"});
  app.route(http::Method::post, "/v1/rentals",
            customer.doc({.summary = "Start a rental",
                          .body = openapi::body_of(rentals::read_create_request),
                          .responses = {{201, rental}}}),
            [&](Ctx& ctx) { return create_rental(ctx, offers, schedules, polls); });
  app.route(
      http::Method::get, "/v1/rentals",
      customer.doc(
          {.summary = "My rentals", .query = {"state", "limit", "cursor"}, .responses = {{200, oa::page(rental)}}}),
      [](Ctx& ctx) {
        const auto now = ctx.now_ms();
        const auto states = state_filter(ctx.req);
        if (!states) return http::Response::error(states.error());
        return list_response(
            ctx,
            [&](store::Tx& tx) {
              auto items = nlohmann::json::array();
              for (const auto& r : rentals::list_for_customer(tx, ctx.principal->user.id)) {
                items.push_back(rentals::customer_json(r, now));
              }
              return items;
            },
            core::kDefaultPageLimit, state_kept(*states));
      });
  app.route(http::Method::get, "/v1/rentals/{id}", customer.doc({.summary = "One of my rentals", .responses = {{200, rental}}}), [](Ctx& ctx) {
    const auto now = ctx.now_ms();
    return respond(
        ctx,
        [&](store::Tx& tx) -> core::Result<nlohmann::json> {
          auto r = own_rental(ctx, tx);
          if (!r) return std::move(r).error();
          return rentals::customer_json(*r, now);
        },
        store::TxMode::read);
  });
  app.route(http::Method::post, "/v1/rentals/{id}/stop", customer.doc({.summary = "Stop my rental", .responses = {{200, rental}}}), [&](Ctx& ctx) {
    return stop_rental(ctx, polls, own_rental, rental::EndReason::customer_stopped, rentals::customer_json);
  });
  app.route(http::Method::get, "/v1/rentals/{id}/logs",
            customer.doc({.summary = "My rental's logs",
                          .responses = {{200, oa::closed_record({{"rental_id", oa::text(1)},
                                                                 {"state", oa::text(1)},
                                                                 {"logs", oa::text()},
                                                                 {"updated_at", when}},
                                                                {"rental_id", "state", "logs", "updated_at"})}}}),
            rental_logs);

  const auto provider = RouteOptions::for_roles({"provider"}).api_key_allowed();
  app.route(http::Method::get, "/v1/provider/rentals",
            provider.doc({.summary = "Rentals on my machines",
                          .query = {"state", "limit", "cursor"},
                          .responses = {{200, oa::page(provider_rental_schema)}}}),
            [](Ctx& ctx) {
              const auto now = ctx.now_ms();
              const auto states = state_filter(ctx.req);
              if (!states) return http::Response::error(states.error());
              return provider_list_response(
                  ctx,
                  [&](store::Tx& tx, const std::string& pid) {
                    auto items = nlohmann::json::array();
                    for (const auto& r : rentals::list_for_provider(tx, pid)) {
                      items.push_back(rentals::provider_json(r, now));
                    }
                    return items;
                  },
                  core::kDefaultPageLimit, state_kept(*states));
            });
  app.route(http::Method::post, "/v1/provider/rentals/{id}/stop",
            provider.doc({.summary = "Stop a rental on my machine", .responses = {{200, provider_rental_schema}}}), [&](Ctx& ctx) {
    return stop_rental(ctx, polls, provider_rental, rental::EndReason::provider_stopped, rentals::provider_json);
  });

  // Sequence numbers make agent messages idempotent; Idempotency-Key replay is not needed here.
  auto agent = RouteOptions::signed_in().no_idempotency().agent_key_only();
  app.route_async(http::Method::get, std::string(protocol::kAgentRentalsPath),
                  agent.doc({.summary = "Agent: its machine's rentals (a long poll)",
                             .query = {"machine_id", "known", "wait_s", "blocked"},
                             .responses = {{200, oa::any_object()}}}),
                  [&](Ctx& ctx, http::Reply reply) { agent_rentals_poll(ctx, reply, polls); });
  app.route(http::Method::post, std::string(protocol::kRentalEventsPath),
            agent.doc({.summary = "Agent: rental events (starting, running, ended, logs)",
                       .body = openapi::body_of(protocol::parse_rental_events),
                       .responses = {{200, oa::any_object()}}}),
            [&](Ctx& ctx) { return agent_rental_events(ctx, polls); });
}

}  // namespace gpunex::server
