// Prices, price recommendations and availability schedules (issue 6):
// /v1/provider/prices, /v1/provider/price-recommendations,
// /v1/provider/machines/{id}/schedule, and the public /v1/marketplace/offers.

#include <algorithm>
#include <charconv>
#include <optional>

#include "core/gpu_catalog.hpp"
#include "core/json_reader.hpp"
#include "core/ledger.hpp"
#include "core/marketplace.hpp"
#include "core/money.hpp"
#include "core/price_recommendation.hpp"
#include "core/schedule.hpp"
#include "server/api/handlers.hpp"
#include "server/api/openapi.hpp"
#include "server/api/routes.hpp"
#include "server/fleet/schedules.hpp"
#include "server/market/offer_cache.hpp"
#include "server/market/prices.hpp"
#include "server/onboarding/gpu_catalog.hpp"
#include "server/onboarding/providers.hpp"
#include "server/platform/paging.hpp"
#include "server/platform/request_pipeline.hpp"
#include "server/rentals/rentals.hpp"

namespace gpunex::server {

using core::Error;
using core::ErrorCode;
using http::Method;
using http::Response;

namespace {

//! PUT /v1/provider/prices/{model} {usdc_per_gpu_hour}.
core::Result<core::MicroUsdc> read_price(const nlohmann::json& body) {
  core::ObjectReader r(body, "", "", {{"usdc_per_gpu_hour", {"price per GPU-hour", ""}}});
  const auto* raw = r.required_value("usdc_per_gpu_hour");
  r.describe_field("usdc_per_gpu_hour",
                   {{"type", "string"}, {"description", "A decimal USDC string such as \"2.50\"."}});
  std::optional<core::MicroUsdc> rate;
  if (raw && !raw->is_string()) {
    // A JSON number is a binary float: money travels as a decimal string.
    r.invalid("usdc_per_gpu_hour", "must be a decimal string such as \"2.50\"", "invalid_amount");
  } else if (raw) {
    auto parsed = core::parse_rate(raw->get<std::string>(), r.name_of("usdc_per_gpu_hour"));
    if (parsed) {
      rate = *parsed;
    } else {
      Error e = std::move(parsed).error();
      e.field = "usdc_per_gpu_hour";
      r.fail(std::move(e));
    }
  }
  if (auto s = r.finish(); !s) return std::move(s).error();
  return *rate;
}

//! A rate as the provider sees it: with what they receive of each GPU-hour after the platform's commission.
nlohmann::json provider_price(const PriceRow& row, core::ledger::BasisPoints commission) {
  auto j = row.to_json();
  j["commission_pct"] = static_cast<double>(commission) / 100.0;
  j["provider_receives_per_gpu_hour"] = core::format_usdc(core::ledger::provider_share(row.usdc_micro, commission));
  return j;
}

Response put_price(Ctx& ctx) {
  auto rate = ctx.read_body(read_price);
  if (!rate) return Response::error(rate.error());
  const std::string model = ctx.req.param("model");
  return respond(ctx, [&](store::Tx& tx) -> core::Result<nlohmann::json> {
    auto p = provider_of_user(tx, ctx.principal->user.id);
    if (!p) return std::move(p).error();
    auto row = set_price(tx, *p, model, *rate, ctx.principal->user.id, ctx.now_ms());
    if (!row) return std::move(row).error();
    return provider_price(*row, static_cast<core::ledger::BasisPoints>(ctx.config().commission_bp));
  });
}

Response list_prices(Ctx& ctx) {
  auto page = page_params(ctx.req);
  if (!page) return Response::error(page.error());
  return respond(
      ctx,
      [&](store::Tx& tx) -> core::Result<nlohmann::json> {
        auto p = provider_of_user(tx, ctx.principal->user.id);
        if (!p) return std::move(p).error();
        auto items = nlohmann::json::array();
        for (const auto& row : current_prices(tx, p->id)) {
          items.push_back(provider_price(row, static_cast<core::ledger::BasisPoints>(ctx.config().commission_bp)));
        }
        return page_of(items, *page, "model");
      },
      store::TxMode::read);
}

Response price_history_handler(Ctx& ctx) {
  auto page = page_params(ctx.req);
  if (!page) return Response::error(page.error());
  return respond(
      ctx,
      [&](store::Tx& tx) -> core::Result<nlohmann::json> {
        auto p = provider_of_user(tx, ctx.principal->user.id);
        if (!p) return std::move(p).error();
        auto items = nlohmann::json::array();
        for (const auto& row : price_history(tx, p->id, ctx.req.param("model"))) items.push_back(row.to_json());
        if (items.empty()) return Error::make(ErrorCode::not_found, "no price set for this model");
        auto j = page_of(items, *page, "started_at");
        if (!j) return std::move(j).error();
        (*j)["current"] = items.front();
        return std::move(*j);
      },
      store::TxMode::read);
}

Response recommendation(Ctx& ctx) {
  const auto model_text = ctx.req.query_param("model");
  if (!model_text || model_text->empty())
    return Response::error(Error::make(ErrorCode::missing_field, "model is required (?model=H100-SXM)", "model"));
  const auto region_param = ctx.req.query_param("region");
  return respond(
      ctx,
      [&](store::Tx& tx) -> core::Result<nlohmann::json> {
        auto p = provider_of_user(tx, ctx.principal->user.id);
        if (!p) return std::move(p).error();
        auto model = catalog_id_named(tx, *model_text, "model");
        if (!model) return std::move(model).error();
        const auto now = ctx.now_ms();
        // Without ?region=, the provider's own region for this model.
        const std::string region =
            region_param && !region_param->empty() ? *region_param : current_market_profile(tx, *p, *model).region;
        const auto& config = ctx.config().recommendation;
        const auto rec = core::recommend_price(
            recommendation_input(tx, *model, region, now, config, ctx.config().allow_simulated_offers), config);
        if (!rec)
          return Error::make(ErrorCode::not_found,
                             "no price to recommend for " + *model + ": fewer than " +
                                 std::to_string(config.min_listings) + " providers listed it in the last " +
                                 std::to_string(config.window_days) +
                                 " days and the catalog has no reference price for it. Set your own rate (the "
                                 "Pricing page, or PUT /v1/provider/prices/" + *model +
                                 "); recommendations start once enough providers list the model.",
                             "model")
              .with_code("no_price_basis");
        return nlohmann::json{{"model", *model},
                              {"region", region},
                              {"recommended", core::format_usdc(rec->recommended)},
                              {"p25", core::format_usdc(rec->p25)},
                              {"p75", core::format_usdc(rec->p75)},
                              {"basis", core::basis_name(rec->basis)},
                              {"listings", rec->listings},
                              {"window_days", config.window_days},
                              {"median", core::format_usdc(rec->median)}};
      },
      store::TxMode::read);
}

Response put_schedule(Ctx& ctx) {
  // The body is validated before the machine is looked up, so bad input answers 400 naming the
  // field whatever the machine.
  auto schedule = ctx.read_body([](const nlohmann::json& body) { return core::parse_schedule(body); });
  if (!schedule) return Response::error(schedule.error());
  const std::string machine_id = ctx.req.param("id");
  return respond(ctx, [&](store::Tx& tx) -> core::Result<nlohmann::json> {
    auto p = provider_of_user(tx, ctx.principal->user.id);
    if (!p) return std::move(p).error();
    const auto owner = machine_owner(tx, machine_id);
    if (!owner || *owner != p->id) return Error::make(ErrorCode::not_found, "no such machine");
    const auto now = ctx.now_ms();
    const auto before = load_schedule(tx, machine_id).value_or(core::always_available());
    save_schedule(tx, p->id, machine_id, *schedule, now);
    auto j = schedule_json(machine_id, *schedule, now);
    // What it means for the rentals running there, which the provider decides it with.
    const auto effect = rentals::tell_schedule_change(tx, machine_id, before, *schedule, ctx.config().base_url(), now);
    j["running_rentals"] = effect.running;
    j["running_rentals_note"] = nullptr;
    if (effect.running > 0) {
      const auto n = [](std::size_t k) { return std::to_string(k) + (k == 1 ? " rental" : " rentals"); };
      std::string note = n(effect.running) +
                         " running on this machine: availability you narrow stops none of them "
                         "(each runs on until the end of availability it was rented with; no new rentals outside "
                         "your windows meanwhile)";
      if (effect.stopped_by_maintenance > 0) {
        note += "; maintenance stops " + n(effect.stopped_by_maintenance) + " from " +
                util::rfc3339(*effect.first_stop_ms) +
                " (the customers are told now), which counts against job completion as a stop by hand does";
      }
      j["running_rentals_note"] = note;
    }
    return j;
  });
}

Response get_schedule(Ctx& ctx) {
  const std::string machine_id = ctx.req.param("id");
  return respond(
      ctx,
      [&](store::Tx& tx) -> core::Result<nlohmann::json> {
        auto p = provider_of_user(tx, ctx.principal->user.id);
        if (!p) return std::move(p).error();
        const auto owner = machine_owner(tx, machine_id);
        if (!owner || *owner != p->id) return Error::make(ErrorCode::not_found, "no such machine");
        const auto s = load_schedule(tx, machine_id).value_or(core::always_available());
        return schedule_json(machine_id, s, ctx.now_ms());
      },
      store::TxMode::read);
}

//! A query parameter that must be a number in [min, max]; the error names the parameter.
core::Result<std::optional<double>> number_param(const http::Request& req, const char* name, double min, double max) {
  const auto v = req.query_param(name);
  if (!v || v->empty()) return std::optional<double>{};
  double d = 0;
  const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), d);
  if (ec != std::errc{} || end != v->data() + v->size() || !(d >= min && d <= max))
    return Error::make(ErrorCode::invalid_field,
                       std::string(name) + " must be a number from " + std::to_string(static_cast<int>(min)) + " to " +
                           std::to_string(static_cast<int>(max)),
                       name);
  return std::optional<double>{d};
}

core::Result<core::OfferFilter> offer_filter(const http::Request& req) {
  core::OfferFilter f;
  const auto text = [&](const char* name) -> std::optional<std::string> {
    auto v = req.query_param(name);
    if (!v || v->empty()) return std::nullopt;
    return v;
  };
  f.region = text("region");
  auto vram = number_param(req, "min_vram_gb", 0, 100000);
  if (!vram) return std::move(vram).error();
  f.min_vram_gb = *vram;
  auto rel = number_param(req, "min_reliability", 0, 100);
  if (!rel) return std::move(rel).error();
  f.min_reliability = *rel;
  if (auto price = text("max_price")) {
    auto p = core::parse_usdc(*price, "Max price");
    if (!p) {
      Error e = std::move(p).error();
      e.field = "max_price";
      return e;
    }
    // No offer is free (a rate must be above 0): a max price of 0 would match none, as renting refuses it.
    if (*p <= 0) return Error::make(ErrorCode::invalid_field, "Max price must be above 0", "max_price");
    f.max_price = *p;
  }
  if (auto tier = text("tier")) {
    f.tier = core::parse_tier(*tier);
    if (!f.tier) return Error::make(ErrorCode::invalid_field, "tier must be community or enterprise", "tier");
  }
  if (auto sort = text("sort")) {
    auto s = core::parse_offer_sort(*sort);
    if (!s) return Error::make(ErrorCode::invalid_field, "sort must be rank, price or perf", "sort");
    f.sort = *s;
  }
  return f;
}

Response offers(Ctx& ctx, OfferCache& cache, ScheduleCache& schedules) {
  auto filter = offer_filter(ctx.req);
  if (!filter) return Response::error(filter.error());
  // ?model= names catalog models the way a customer writes them ("rtx 4090", "4090", "RTX4090",
  // "A100"): the answer says which models it matched, and when it matched none, which exist.
  nlohmann::json matched_models = nullptr;
  nlohmann::json known_models = nullptr;
  if (const auto model = ctx.req.query_param("model"); model && !model->empty()) {
    if (model->size() > 100)
      return Response::error(Error::make(ErrorCode::invalid_field, "model must be at most 100 characters", "model"));
    const auto catalog =
        ctx.store().transact([](store::Tx& tx) { return list_models(tx); }, store::TxMode::read);
    filter->models.emplace();
    for (const auto& m : catalog) {
      if (core::model_filter_matches(*model, m)) filter->models->push_back(m.id);
    }
    matched_models = *filter->models;
    if (filter->models->empty()) {
      known_models = nlohmann::json::array();
      for (const auto& m : catalog) known_models.push_back({{"id", m.id}, {"name", m.name}});
    }
  }
  auto limit = number_param(ctx.req, "limit", 1, static_cast<double>(core::kMaxOffersPageLimit));
  if (!limit) return Response::error(limit.error());
  const auto page = static_cast<std::size_t>(limit->value_or(core::kDefaultPageLimit));
  // The cursor names the last offer of the page before (core::OfferCursor); a number is an offset, as
  // servers before it gave (a client paging through a rolling upgrade).
  std::optional<core::OfferCursor> after;
  std::size_t from = 0;
  if (const auto cursor = ctx.req.query_param("cursor"); cursor && !cursor->empty()) {
    if (std::all_of(cursor->begin(), cursor->end(), [](char c) { return c >= '0' && c <= '9'; })) {
      auto offset = number_param(ctx.req, "cursor", 0, 1e9);
      if (!offset) return Response::error(offset.error());
      from = static_cast<std::size_t>(offset->value_or(0));
    } else {
      after = core::parse_offer_cursor(*cursor);
      if (!after) {
        return Response::error(Error::make(ErrorCode::invalid_field,
                                           "cursor is not one this list gave: pass next_cursor as it came", "cursor"));
      }
      if (after->sort != filter->sort) {
        return Response::error(Error::make(ErrorCode::invalid_field,
                                           "cursor is from a search sorted by " +
                                               std::string(core::offer_sort_name(after->sort)) +
                                               ": keep the sort while paging",
                                           "cursor"));
      }
    }
  }
  const core::UtcTime now{std::chrono::seconds{ctx.now_ms() / 1000}};
  const auto book = cache.book(ctx.store(), schedules, ctx.app.config().rank, now);
  auto found = after ? book->search(*filter, *after, page) : book->search(*filter, from, page);
  auto items = nlohmann::json::array();
  for (auto& offer : found.items) {
    core::fill_available_until(offer, now);
    items.push_back(core::to_json(offer));
  }
  nlohmann::json next = nullptr;
  if (found.next) next = core::format_offer_cursor(*found.next);
  nlohmann::json out = {{"items", std::move(items)}, {"next_cursor", next}, {"total", found.total}};
  if (!matched_models.is_null()) out["matched_models"] = std::move(matched_models);
  if (!known_models.is_null()) {
    out["known_models"] = std::move(known_models);
    out["message"] = "no GPU model matches \"" + *ctx.req.query_param("model") +
                     "\"; known_models lists the catalog (filter by id or name, e.g. \"H100\" or \"rtx 4090\")";
  }
  return Response::json(200, out);
}

}  // namespace

void register_market_api(App& app, OfferCache& offer_cache, ScheduleCache& schedules) {
  // Prices and schedules are provider automation too: an API key may set them.
  const auto provider = [] { return RouteOptions::for_roles({"provider"}).api_key_allowed(); };
  namespace oa = openapi;
  const auto price = oa::component("Price", oa::record({{"model", oa::text(1)},
                                                        {"region", oa::text()},
                                                        {"usdc_per_gpu_hour", oa::money()},
                                                        {"started_at", oa::timestamp()},
                                                        {"commission_pct", oa::number()},
                                                        {"provider_receives_per_gpu_hour", oa::money()}},
                                                       {"model", "usdc_per_gpu_hour", "started_at"}));
  const auto window = oa::closed_record({{"days", oa::array(oa::text(3, 3))}, {"start", oa::text(5, 5)}, {"end", oa::text(5, 5)}},
                                        {"days", "start", "end"});
  const auto schedule = oa::record({{"machine_id", oa::text(1)},
                                    {"timezone", oa::text(1)},
                                    {"always", oa::boolean()},
                                    {"windows", oa::array(window)},
                                    {"maintenance", oa::array(oa::any_object())},
                                    {"available_now", oa::boolean()},
                                    {"available_until", oa::nullable(oa::timestamp())},
                                    {"next_window_start", oa::nullable(oa::timestamp())}},
                                   {"machine_id", "timezone", "always", "windows", "maintenance", "available_now"});
  const auto offer = oa::component(
      "Offer", oa::record({{"machine_id", oa::text(1)},
                           {"model", oa::text(1)},
                           {"gpu_count_available", oa::integer(1, 1024)},
                           {"usdc_per_gpu_hour", oa::money()},
                           {"perf_score", oa::nullable(oa::number())},
                           {"reliability", oa::number()},
                           {"reliability_is_prior", oa::boolean()},
                           {"tier", oa::one_of({"community", "enterprise"})},
                           {"location", oa::record({{"city", oa::text()}, {"country", oa::text()}, {"region", oa::text()}},
                                                   {"region"})},
                           {"vram_gb", oa::number()},
                           {"simulated", oa::boolean()},
                           {"available_until", oa::nullable(oa::timestamp())},
                           {"rank", oa::number()},
                           {"rank_explanation", oa::any_object()}},
                          {"machine_id", "model", "gpu_count_available", "usdc_per_gpu_hour", "perf_score",
                           "reliability", "tier", "location", "simulated", "rank", "rank_explanation"}));
  app.route(Method::put, "/v1/provider/prices/{model}",
            provider().doc({.summary = "Set my rate for a GPU model",
                            .body = openapi::body_of(read_price),
                            .responses = {{200, price}}}),
            put_price);
  app.route(Method::get, "/v1/provider/prices",
            provider().doc({.summary = "My rates", .query = {"limit", "cursor"}, .responses = {{200, oa::page(price)}}}),
            list_prices);
  app.route(Method::get, "/v1/provider/prices/{model}",
            provider().doc({.summary = "A model's rate history",
                            .query = {"limit", "cursor"},
                            .responses = {{200, oa::all_of({oa::page(price), oa::record({{"current", price}}, {"current"})})}}}),
            price_history_handler);
  app.route(Method::get, "/v1/provider/price-recommendations",
            provider().doc({.summary = "A recommended rate from the market",
                            .query = {"model", "region"},
                            .responses = {{200, oa::closed_record({{"model", oa::text(1)},
                                                                   {"region", oa::text()},
                                                                   {"recommended", oa::money()},
                                                                   {"p25", oa::money()},
                                                                   {"p75", oa::money()},
                                                                   {"median", oa::money()},
                                                                   {"basis", oa::one_of({"regional", "global", "catalog"})},
                                                                   {"listings", oa::integer(0, 1LL << 31)},
                                                                   {"window_days", oa::integer(0, 1LL << 31)}},
                                                                  {"model", "region", "recommended", "p25", "p75", "median",
                                                                   "basis", "listings", "window_days"})}}}),
            recommendation);
  app.route(
      Method::put, "/v1/provider/machines/{id}/schedule",
      provider().doc(
          {.summary = "Set a machine's availability schedule",
           .body = openapi::body_of([](const nlohmann::json& b) { return core::parse_schedule(b); }),
           .responses = {{200, oa::all_of({schedule, oa::record({{"running_rentals", oa::integer(0, 1LL << 31)},
                                                                 {"running_rentals_note", oa::nullable(oa::text())}},
                                                                {"running_rentals", "running_rentals_note"})})}}}),
      put_schedule);
  app.route(Method::get, "/v1/provider/machines/{id}/schedule",
            provider().doc({.summary = "A machine's availability schedule", .responses = {{200, schedule}}}), get_schedule);
  app.route(Method::get, "/v1/marketplace/offers",
            RouteOptions::public_route().doc(
                {.summary = "Offers visible now",
                 .query = {"model", "region", "min_vram_gb", "max_price", "min_reliability", "tier", "sort", "limit", "cursor"},
                 .responses = {{200, oa::all_of({oa::page(offer),
                                                 oa::record({{"total", oa::integer(0, 1LL << 31)},
                                                             {"matched_models", oa::array(oa::text())}},
                                                            {"total"})})}}}),
            [&offer_cache, &schedules](Ctx& ctx) { return offers(ctx, offer_cache, schedules); });
}

}  // namespace gpunex::server
