#pragma once
// Small shapes that API handlers share: one store transaction answered as JSON, a list answered a
// page at a time, and the signed-in user's password asked again under the login throttle.

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "server/fleet/machines.hpp"
#include "server/onboarding/providers.hpp"
#include "server/platform/paging.hpp"
#include "server/platform/platform_repo.hpp"
#include "server/platform/request_pipeline.hpp"
#include "store/store.hpp"
#include "util/crypto.hpp"

namespace gpunex::server {

//! Runs fn(tx) -> Result<json> in one transaction and answers 200 with it, or the error.
template <class F>
http::Response respond(Ctx& ctx, F&& fn, store::TxMode mode = store::TxMode::write) {
  auto r = ctx.store().transact([&](store::Tx& tx) -> core::Result<nlohmann::json> { return fn(tx); }, mode);
  if (!r) return http::Response::error(r.error());
  return http::Response::json(200, *r);
}

//! A list built whole in one read transaction (items_of(tx) -> an ordered JSON array of objects
//! with an "id", or an error), answered a page at a time as ?limit=&cursor= ask; with `keep`, only the
//! items it keeps (a filter), the cursor still found among them all (paging.hpp).
template <class F>
http::Response list_response(Ctx& ctx, F&& items_of, std::size_t default_limit = 50,
                             const std::function<bool(const nlohmann::json&)>& keep = {}) {
  auto page = page_params(ctx.req, default_limit);
  if (!page) return http::Response::error(page.error());
  auto items = ctx.store().transact([&](store::Tx& tx) -> core::Result<nlohmann::json> { return items_of(tx); },
                                    store::TxMode::read);
  if (!items) return http::Response::error(items.error());
  auto j = keep ? page_of(*items, *page, keep) : page_of(*items, *page);
  if (!j) return http::Response::error(j.error());
  return http::Response::json(200, *j);
}

//! list_response() for the caller's own provider data: items_of(tx, provider_id), or 403 not_a_provider.
template <class F>
http::Response provider_list_response(Ctx& ctx, F&& items_of, std::size_t default_limit = 50,
                                      const std::function<bool(const nlohmann::json&)>& keep = {});

//! The provider the caller acts for (a key's provider, or the signed-in provider's own); "" when none.
inline std::string caller_provider(Ctx& ctx, store::Tx& tx) {
  if (ctx.principal->via == Principal::Via::api_key) {
    return provider_of_api_key(tx, ctx.principal->api_key_id).value_or(std::string());
  }
  auto p = find_provider_by_user(tx, ctx.principal->user.id);
  return p ? p->id : std::string();
}

//! 403 api_key_required unless the caller authenticated with a provider API key: the agent's endpoints.
inline std::optional<http::Response> require_agent_key(Ctx& ctx) {
  if (ctx.principal != nullptr && ctx.principal->via == Principal::Via::api_key) return std::nullopt;
  return http::Response::error(
      core::Error::make(core::ErrorCode::forbidden,
                        "agent endpoints take a provider API key (Authorization: Bearer gpx_...)")
          .with_code("api_key_required"));
}

//! The provider of API key `key_id`, read inside the request's transaction: a key revoked since
//! authentication is refused (401 invalid_api_key).
inline core::Result<std::string> agent_key_provider(store::Tx& tx, const std::string& key_id) {
  std::string id = provider_id_for_api_key(tx, key_id);
  if (id.empty()) {
    return core::Error::make(core::ErrorCode::unauthenticated, "API key is invalid or revoked")
        .with_code("invalid_api_key");
  }
  return id;
}

//! 403 not_a_provider: the caller has no provider to act for.
inline core::Error not_a_provider() {
  return core::Error::make(core::ErrorCode::forbidden, "only providers have machines; apply to provide GPUs first")
      .with_code("not_a_provider");
}

//! fn(tx, provider_id) for the caller's own provider, as a transaction's work: 403 not_a_provider when
//! the caller has none. What respond_as_provider() and provider_list_response() run.
template <class F>
auto for_caller_provider(Ctx& ctx, F& fn) {
  return [&ctx, &fn](store::Tx& tx) -> core::Result<nlohmann::json> {
    const std::string pid = caller_provider(ctx, tx);
    if (pid.empty()) return not_a_provider();
    return fn(tx, pid);
  };
}

//! respond() for the caller's own provider data: fn(tx, provider_id), or 403 not_a_provider.
template <class F>
http::Response respond_as_provider(Ctx& ctx, F&& fn, store::TxMode mode = store::TxMode::write) {
  return respond(ctx, for_caller_provider(ctx, fn), mode);
}

template <class F>
http::Response provider_list_response(Ctx& ctx, F&& items_of, std::size_t default_limit,
                                      const std::function<bool(const nlohmann::json&)>& keep) {
  return list_response(ctx, for_caller_provider(ctx, items_of), default_limit, keep);
}

//! 429 with Retry-After: the login throttle holds this account and address back for `wait`.
inline http::Response must_wait(const std::string& what, std::chrono::seconds wait) {
  auto refused = http::Response::error(
      core::Error::make(core::ErrorCode::rate_limited,
                        "too many " + what + "; wait " + std::to_string(wait.count()) + " s before trying again")
          .with_code("too_many_failed_logins"));
  refused.header("Retry-After", std::to_string(wait.count()));
  return refused;
}

//! The signed-in user's password asked again before a change a stolen session must not make alone (a new
//! e-mail address, a new payout destination), under the login throttle as a login is: nullopt when it is
//! right; `wrong` when not (counted as a failed login); 429 with Retry-After, the password not even
//! checked, while this account and address must wait. Call it outside a transaction: the hash is slow.
inline std::optional<http::Response> recheck_password(Ctx& ctx, const std::string& password, core::Error wrong) {
  const std::string& email = ctx.principal->user.email;
  const std::string& ip = ctx.req.remote_ip;
  auto& throttle = ctx.app.login_throttle();
  if (const auto wait = throttle.wait(email, ip); wait.count() > 0) return must_wait("wrong passwords", wait);
  const auto creds = ctx.store().transact([&](store::Tx& tx) { return platform_repo::find_credentials(tx, email); },
                                          store::TxMode::read);
  if (!creds || !util::verify_password(password, creds->password_hash)) {
    throttle.failed(email, ip);
    return http::Response::error(std::move(wrong));
  }
  throttle.succeeded(email, ip);
  return std::nullopt;
}

}  // namespace gpunex::server
