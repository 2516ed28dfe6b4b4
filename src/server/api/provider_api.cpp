// Provider self-service (/v1/provider/profile, /v1/provider/api-keys with the approval key's
// one-time reveal), the GPU catalog (/v1/catalog/gpus) and the in-app notifications
// (/v1/notifications).

#include "core/json_reader.hpp"
#include "server/api/handlers.hpp"
#include "server/api/openapi.hpp"
#include "server/api/routes.hpp"
#include "server/platform/request_pipeline.hpp"
#include "server/onboarding/gpu_catalog.hpp"
#include "server/platform/notifications.hpp"
#include "server/platform/paging.hpp"
#include "server/onboarding/providers.hpp"
#include "util/time.hpp"

namespace gpunex::server {

using core::Error;
using core::ErrorCode;
using http::Method;
using http::Response;

namespace {

Response profile(Ctx& ctx) {
  auto r = ctx.store().transact(
      [&](store::Tx& tx) -> core::Result<nlohmann::json> {
        auto p = provider_of_user(tx, ctx.principal->user.id);
        if (!p) return std::move(p).error();
        auto j = p->to_json();
        j["via"] = ctx.principal->via == Principal::Via::api_key ? "api_key" : "session";
        return j;
      },
      store::TxMode::read);
  if (!r) return Response::error(r.error());
  return Response::json(200, *r);
}

Response list_keys(Ctx& ctx) {
  auto page = page_params(ctx.req);
  if (!page) return Response::error(page.error());
  auto r = ctx.store().transact(
      [&](store::Tx& tx) -> core::Result<nlohmann::json> {
        auto p = provider_of_user(tx, ctx.principal->user.id);
        if (!p) return std::move(p).error();
        return page_of(list_api_keys(tx, p->id, ctx.now_ms()), *page);
      },
      store::TxMode::read);
  if (!r) return Response::error(r.error());
  return Response::json(200, *r);
}

//! POST /v1/provider/api-keys {revoke?}: the id of a key to revoke as the new one is made.
core::Result<std::optional<std::string>> read_key_request(const nlohmann::json& body) {
  core::ObjectReader r(body);
  auto revoke = r.optional_line("revoke", 64);
  if (auto s = r.finish(); !s) return std::move(s).error();
  return revoke;
}

Response create_key(Ctx& ctx) {
  std::optional<std::string> revoke;
  if (!ctx.req.body.empty()) {
    auto read = ctx.read_body(read_key_request);
    if (!read) return Response::error(read.error());
    revoke = std::move(*read);
  }
  auto r = ctx.store().transact([&](store::Tx& tx) -> core::Result<nlohmann::json> {
    auto p = provider_of_user(tx, ctx.principal->user.id);
    if (!p) return std::move(p).error();
    const auto now = ctx.now_ms();
    nlohmann::json out;
    if (revoke) {
      auto revoked = revoke_api_key(tx, p->id, *revoke, now);
      if (!revoked) return Error::make(ErrorCode::not_found, "no such API key to revoke", "revoke");
      out["revoked"] = *revoked;
    }
    auto k = create_api_key(tx, p->id, now);
    out["id"] = k.id;
    out["api_key"] = k.key;
    out["prefix"] = k.prefix;
    out["created_at"] = util::rfc3339(now);
    out["provider_id"] = p->id;
    return out;
  });
  // A key revoked (committed) is refused from now on, also where this process had it cached.
  if (revoke) ctx.app.api_keys().invalidate_all();
  if (!r) return Response::error(r.error());
  return Response::json(201, *r);
}

Response delete_key(Ctx& ctx) {
  auto r = ctx.store().transact([&](store::Tx& tx) -> core::Result<nlohmann::json> {
    auto p = provider_of_user(tx, ctx.principal->user.id);
    if (!p) return std::move(p).error();
    return revoke_api_key(tx, p->id, ctx.req.param("id"), ctx.now_ms());
  });
  ctx.app.api_keys().invalidate_all();  // before answering: the revoked key is refused from now on
  if (!r) return Response::error(r.error());
  return Response::json(200, *r);
}

Response reveal_key(Ctx& ctx) {
  auto r = ctx.store().transact([&](store::Tx& tx) -> core::Result<nlohmann::json> {
    auto p = provider_of_user(tx, ctx.principal->user.id);
    if (!p) return std::move(p).error();
    return reveal_api_key(tx, p->id, ctx.principal->user.id, ctx.req.param("id"), ctx.config().server_secret,
                          ctx.now_ms());
  });
  if (!r) return Response::error(r.error());
  return Response::json(200, *r);
}

Response catalog(Ctx& ctx) {
  return list_response(
      ctx,
      [](store::Tx& tx) {
        nlohmann::json items = nlohmann::json::array();
        for (const auto& m : list_models(tx)) items.push_back(core::to_json(m));
        return items;
      },
      100);
}

Response catalog_one(Ctx& ctx) {
  auto m =
      ctx.store().transact([&](store::Tx& tx) { return find_model(tx, ctx.req.param("id")); }, store::TxMode::read);
  if (!m) return Response::error(ErrorCode::not_found, "no such GPU model");
  return Response::json(200, core::to_json(*m));
}

Response notifications(Ctx& ctx) {
  auto page = page_params(ctx.req);
  if (!page) return Response::error(page.error());
  auto j = ctx.store().transact([&](store::Tx& tx) { return list_notifications(tx, ctx.principal->user.id, *page); },
                                store::TxMode::read);
  if (!j) return Response::error(j.error());
  return Response::json(200, *j);
}

Response read_notification(Ctx& ctx) {
  bool ok = ctx.store().transact([&](store::Tx& tx) {
    return mark_notification_read(tx, ctx.principal->user.id, ctx.req.param("id"), ctx.now_ms());
  });
  if (!ok) return Response::error(ErrorCode::not_found, "no such notification");
  return Response::json(200, {{"id", ctx.req.param("id")}, {"read", true}});
}

}  // namespace

void register_provider_api(App& app) {
  // An API key may read its provider's profile and keys (what an agent needs); creating and
  // revoking keys needs a logged-in session, so a leaked key cannot mint new ones.
  namespace oa = openapi;
  const auto when = oa::nullable(oa::timestamp());
  const auto figure = oa::nullable(oa::number());
  const auto gpu_model = oa::component(
      "GpuModel", oa::record({{"id", oa::text(1)},
                              {"name", oa::text(1)},
                              {"builtin", oa::boolean()},
                              {"vram_gib", oa::number()},
                              {"mem_bw_gbs", figure},
                              {"fp32_tflops", figure},
                              {"fp16_tflops", figure},
                              {"fp16_tensor_tflops", figure},
                              {"bf16_tensor_tflops", figure},
                              {"fp8_tensor_tflops", figure},
                              {"tdp_w", figure},
                              {"pcie_gen", figure},
                              {"compute_capability", oa::nullable(oa::text())},
                              {"nvml_name_pattern", oa::nullable(oa::text())}},
                             {"id", "name", "builtin", "vram_gib"}));
  // A key as lists and revocations show it: never its value.
  const auto key = oa::record({{"id", oa::text(1)},
                               {"prefix", oa::text(1)},
                               {"active", oa::boolean()},
                               {"created_at", oa::timestamp()},
                               {"last_used_at", when},
                               {"revoked_at", when},
                               {"reveal", oa::nullable(oa::any_object())}},
                              {"id", "prefix", "active", "revoked_at"});
  const auto new_key = oa::record({{"id", oa::text(1)},
                                   {"api_key", oa::text(1)},
                                   {"prefix", oa::text(1)},
                                   {"created_at", oa::timestamp()},
                                   {"provider_id", oa::text(1)},
                                   {"revoked", key}},
                                  {"id", "api_key", "prefix", "created_at", "provider_id"});
  const auto notification = oa::record({{"id", oa::text(1)},
                                        {"kind", oa::text(1)},
                                        {"title", oa::text()},
                                        {"body", oa::text()},
                                        {"link", oa::nullable(oa::text())},
                                        {"created_at", oa::timestamp()},
                                        {"read_at", when}},
                                       {"id", "kind", "title", "body", "created_at", "read_at"});
  app.route(Method::get, "/v1/provider/profile",
            RouteOptions::for_roles({"provider"}).api_key_allowed().doc(
                {.summary = "My provider profile",
                 .responses = {{200, oa::closed_record({{"provider_id", oa::text(1)},
                                                        {"user_id", oa::text(1)},
                                                        {"application_id", oa::text()},
                                                        {"tier", oa::one_of({"community", "enterprise"})},
                                                        {"created_at", oa::timestamp()},
                                                        {"via", oa::one_of({"api_key", "session"})}},
                                                       {"provider_id", "user_id", "application_id", "tier",
                                                        "created_at", "via"})}}}),
            profile);
  app.route(Method::get, "/v1/provider/api-keys",
            RouteOptions::for_roles({"provider"}).api_key_allowed().doc(
                {.summary = "My API keys (never their values)", .query = {"limit", "cursor"}, .responses = {{200, oa::page(key)}}}),
            list_keys);
  app.route(
      Method::post, "/v1/provider/api-keys",
      RouteOptions::for_roles({"provider"})
          .sealed_idempotency()
          .doc({.summary = "Create an API key (shown once); with revoke, rotate: revoke that key in the same step",
                .body = openapi::body_of(read_key_request),
                .body_optional = true,  // no body: a new key, revoking none
                .responses = {{201, new_key}}}),
      create_key);
  app.route(Method::del, "/v1/provider/api-keys/{id}",
            RouteOptions::for_roles({"provider"}).doc({.summary = "Revoke an API key", .responses = {{200, key}}}), delete_key);
  // The key issued at approval, once, to its owner's session; the answer is a secret, so never replayed.
  app.route(Method::post, "/v1/provider/api-keys/{id}/reveal", RouteOptions::for_roles({"provider"}).no_idempotency().doc(
                {.summary = "Reveal, once, the API key issued at approval",
                 .responses = {{200, oa::record({{"id", oa::text(1)},
                                                 {"api_key", oa::text(1)},
                                                 {"prefix", oa::text(1)},
                                                 {"provider_id", oa::text(1)},
                                                 {"revealed_at", oa::timestamp()}},
                                                {"id", "api_key", "prefix", "provider_id", "revealed_at"})}}}),
            reveal_key);
  app.route(
      Method::get, "/v1/catalog/gpus",
      RouteOptions::public_route().doc(
          {.summary = "The GPU catalog", .query = {"limit", "cursor"}, .responses = {{200, oa::page(gpu_model)}}}),
      catalog);
  app.route(Method::get, "/v1/catalog/gpus/{id}",
            RouteOptions::public_route().doc({.summary = "One GPU model of the catalog", .responses = {{200, gpu_model}}}),
            catalog_one);
  app.route(Method::get, "/v1/notifications",
            RouteOptions::signed_in().doc(
                {.summary = "My notifications", .query = {"limit", "cursor"}, .responses = {{200, oa::page(notification)}}}),
            notifications);
  app.route(Method::post, "/v1/notifications/{id}/read",
            RouteOptions::signed_in().doc(
                {.summary = "Mark a notification read",
                 .responses = {{200, oa::closed_record({{"id", oa::text(1)}, {"read", oa::boolean()}}, {"id", "read"})}}}),
            read_notification);
}

}  // namespace gpunex::server
