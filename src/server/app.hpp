#pragma once
// The control plane's request pipeline: request id, rate limits, authentication
// (session cookie with CSRF check, bearer session token, provider API key),
// role checks, idempotency keys, metrics and the access log, around the route
// handlers that the api/ files register.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "server/accounts.hpp"
#include "server/config.hpp"
#include "server/market.hpp"
#include "server/http/http.hpp"
#include "server/metrics.hpp"
#include "server/rate_limit.hpp"
#include "store/store.hpp"

namespace gpunex::server {

//! Who is calling, once authenticated.
struct Principal {
  enum class Via { session_cookie, session_bearer, api_key };
  User user;
  Via via = Via::session_bearer;
  std::string session_token_hash;  // sessions only
  std::string csrf_token;          // sessions only
  std::string api_key_id;          // API keys only
};

//! Who may call a route.
enum class Access {
  anyone,  // no authentication needed (a valid one is still recognised)
  user,    // any signed-in account
};

struct RouteOptions {
  Access access = Access::user;
  //! When non-empty, the caller needs one of these roles (admin passes every role check).
  std::vector<std::string> roles;
  //! Whether the Idempotency-Key header replays stored responses. Off for responses that carry
  //! secrets (login tokens, API keys): those are never stored.
  bool idempotent = true;
  //! Counted against the per-address auth rate limit.
  bool auth_rate_limited = false;
  //! Whether a provider API key (Bearer gpx_...) may call this route. Off by default: keys are for
  //! the agent and provider automation; account and session endpoints (logout, applications,
  //! review, key creation) need a logged-in session and answer 403 api_key_not_allowed.
  bool allow_api_key = false;

  static RouteOptions public_route() { return RouteOptions{Access::anyone, {}, true, false}; }
  static RouteOptions signed_in() { return RouteOptions{Access::user, {}, true, false}; }
  static RouteOptions for_roles(std::vector<std::string> roles) { return RouteOptions{Access::user, std::move(roles), true, false}; }
  RouteOptions& no_idempotency() { idempotent = false; return *this; }
  RouteOptions& rate_limited() { auth_rate_limited = true; return *this; }
  RouteOptions& api_key_allowed() { allow_api_key = true; return *this; }
};

class App;

//! Everything a handler needs for one request.
struct Ctx {
  http::Request& req;
  const Principal* principal;  // null when anonymous
  App& app;

  store::Store& store();
  const Config& config();
  //! The request body as a JSON object, or a 400 naming what is wrong.
  core::Result<nlohmann::json> json_body() const;
};

using ApiHandler = std::function<http::Response(Ctx&)>;

class App {
 public:
  App(Config config, std::unique_ptr<store::Store> store);

  void route(http::Method method, std::string pattern, RouteOptions options, ApiHandler handler);
  //! The root handler given to http::Server.
  http::Response handle(http::Request& req);

  store::Store& store() { return *store_; }
  //! Records the port actually bound (listen port 0), so base_url() in mails names the real one.
  //! Called once, right after the server starts and before its address is published.
  void set_bound_port(std::uint16_t port);
  const Config& config() const { return config_; }
  Metrics& metrics() { return metrics_; }
  RateLimiter& login_failures() { return login_failures_; }
  ScheduleCache& schedule_cache() { return schedule_cache_; }
  OfferCache& offer_cache() { return offer_cache_; }

 private:
  http::Response dispatch(http::Request& req, const RouteOptions& options, const ApiHandler& handler);
  core::Result<std::optional<Principal>> authenticate(const http::Request& req);
  core::Result<std::optional<Principal>> authenticate_api_key(const std::string& key);

  Config config_;
  std::unique_ptr<store::Store> store_;
  Metrics metrics_;
  RateLimiter auth_limiter_;
  RateLimiter login_failures_;
  ScheduleCache schedule_cache_;
  OfferCache offer_cache_;
  http::Router router_;
};

//! Session cookie names.
inline constexpr const char* kSessionCookie = "gpunex_session";
inline constexpr const char* kCsrfCookie = "gpunex_csrf";

void register_system_api(App& app);
void register_auth_api(App& app);
void register_applications_api(App& app);
void register_provider_api(App& app);
void register_agent_api(App& app);
void register_bench_net_api(App& app);
void register_benchmarks_api(App& app);
void register_market_api(App& app);
void register_web(App& app);

//! Builds the App with every route registered.
std::unique_ptr<App> make_app(Config config, std::unique_ptr<store::Store> store);

}  // namespace gpunex::server
