#pragma once
// The control plane's request pipeline: request id, rate limits, authentication
// (session cookie with CSRF check, bearer session token, provider API key),
// role checks, idempotency keys, metrics and the access log, around the route
// handlers that the api/ files register (api/routes.cpp builds the App with
// them all). A handler answers at once, or (an asynchronous route) hands its
// store work to the group commit and answers when that commits.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "server/platform/accounts.hpp"
#include "server/platform/api_key_auth.hpp"
#include "server/platform/api_key_cache.hpp"
#include "server/platform/config.hpp"
#include "server/platform/group_commit.hpp"
#include "server/http/http.hpp"
#include "server/platform/metrics.hpp"
#include "server/platform/rate_limit.hpp"
#include "server/platform/work_queue.hpp"
#include "store/store.hpp"
#include "util/clock.hpp"

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

//! What the API document (GET /v1/openapi.json) says of a route beyond what RouteOptions already tells
//! (its path, method and who may call it). Written beside the route, so the two cannot part.
struct RouteDoc {
  std::string summary = {};
  //! The JSON Schema of the request body; null: the route takes none (or not JSON).
  nlohmann::json body = nullptr;
  //! Whether the route also takes no body at all (an empty one reads as its defaults), so the document
  //! does not mark the request body required.
  bool body_optional = false;
  //! The query parameters it reads.
  std::vector<std::string> query = {};
  //! Not part of the API: the dashboard's files, left out of the document.
  bool internal = false;
  //! The success answers: status -> the JSON Schema of the body (null: no JSON body). When any are
  //! listed, the document lists exactly these plus 4XX and 5XX (the one Error body), and the API
  //! scenarios fail on any other status or a body that does not match; when none are, "2XX" undescribed.
  std::vector<std::pair<int, nlohmann::json>> responses = {};
};

struct RouteOptions {
  Access access = Access::user;
  //! When non-empty, the caller needs one of these roles (admin passes every role check).
  std::vector<std::string> roles;
  //! Whether the Idempotency-Key header replays stored responses. Off for login and logout, which
  //! need no replay.
  bool idempotent = true;
  //! For answers that carry a secret (a new API key): the stored answer is sealed under a key derived
  //! from the Idempotency-Key and its row named by the key's hash, so the store alone never reveals
  //! the secret, while the client holding the Idempotency-Key gets the first answer again. The request's
  //! hash is keyed with the Idempotency-Key too, for bodies that hold a secret (signup's password). Only as
  //! strong as the Idempotency-Key is hard to guess: clients send a random one (a UUID).
  bool sealed_replay = false;
  //! Counted against the per-address auth rate limit.
  bool auth_rate_limited = false;
  //! Whether a provider API key (Bearer gpx_...) may call this route. Off by default: keys are for
  //! the agent and provider automation; account and session endpoints (logout, applications,
  //! review, key creation) need a logged-in session and answer 403 api_key_not_allowed.
  bool allow_api_key = false;
  //! The agent's endpoints: only a provider API key may call them (403 api_key_required for a session).
  bool api_key_only = false;
  //! When set, the request body is counted (Request::body_length) and discarded as it streams in, up to
  //! this many bytes, instead of kept in Request::body under the server's body limit.
  std::optional<std::uint64_t> counted_body_limit;
  //! When set, the request body is kept under this limit instead of the server's body limit (for the
  //! callers the route admits, checked before the body is read).
  std::optional<std::uint64_t> kept_body_limit;
  //! Run on the slow-work threads (App::slow_work), not an I/O thread: for handlers that hash passwords
  //! (argon2). When its queue is full the answer is 503 busy at once.
  bool off_io_threads = false;

  static RouteOptions public_route() {
    RouteOptions o;
    o.access = Access::anyone;
    return o;
  }
  static RouteOptions signed_in() { return RouteOptions{}; }
  static RouteOptions for_roles(std::vector<std::string> roles) {
    RouteOptions o;
    o.roles = std::move(roles);
    return o;
  }
  RouteOptions& no_idempotency() { idempotent = false; return *this; }
  RouteOptions& sealed_idempotency() { sealed_replay = true; return *this; }
  RouteOptions& rate_limited() { auth_rate_limited = true; return *this; }
  RouteOptions& api_key_allowed() { allow_api_key = true; return *this; }
  RouteOptions& agent_key_only() {
    allow_api_key = api_key_only = true;
    return *this;
  }
  RouteOptions& slow_work() { off_io_threads = true; return *this; }
  RouteOptions& counted_body(std::uint64_t limit) {
    counted_body_limit = limit;
    return *this;
  }
  RouteOptions& large_body(std::uint64_t limit) {
    kept_body_limit = limit;
    return *this;
  }
  //! A copy with this documentation: options shared by several routes stay as they are.
  RouteOptions doc(RouteDoc d) const {
    RouteOptions o = *this;
    o.documentation = std::move(d);
    return o;
  }
  RouteDoc documentation;
};

//! One registered route, as the API document reads it.
struct RouteInfo {
  http::Method method;
  std::string pattern;
  RouteOptions options;
};

class App;

//! Everything a handler needs for one request.
struct Ctx {
  http::Request& req;
  const Principal* principal;  // null when anonymous
  App& app;

  store::Store& store();
  const Config& config();
  //! The server's clock (settable in a server started with a test clock).
  std::int64_t now_ms() const;
  //! The request body as a JSON object, or a 400 naming what is wrong.
  core::Result<nlohmann::json> json_body() const;
  //! The body read by `read`, the route's parser (the one its API document's body schema is described
  //! from, openapi::body_of): what it answers, or the body's JSON error.
  template <class Read>
  auto read_body(Read&& read) const -> std::invoke_result_t<Read, const nlohmann::json&> {
    auto body = json_body();
    if (!body) return std::move(body).error();
    return std::forward<Read>(read)(*body);
  }
};

using ApiHandler = std::function<http::Response(Ctx&)>;
//! A handler that answers later, through `reply`, from another thread (after a group commit). Ctx and the
//! request it names are valid only during the call: the work must copy what it needs.
using AsyncApiHandler = std::function<void(Ctx&, http::Reply reply)>;

//! The answer for a request that an exception ended (logged with the request id): 503 with Retry-After
//! when the store is unavailable, else 500.
http::Response failure_response(const std::exception_ptr& failure, const std::string& request_id);

class App {
 public:
  //! `api_keys`: the provider API keys a bearer gpx_... token is looked up in (onboarding's); null, none
  //! authenticates. `clock` null: the system clock, or a SettableClock when the config names a test clock.
  App(Config config, std::unique_ptr<store::Store> store, std::unique_ptr<const ApiKeyDirectory> api_keys,
      std::shared_ptr<util::Clock> clock = nullptr);
  //! Stops the group commit, then destroys what keep() holds, the last kept first.
  ~App();
  App(const App&) = delete;
  App& operator=(const App&) = delete;

  void route(http::Method method, std::string pattern, RouteOptions options, ApiHandler handler);
  //! An asynchronous route. Idempotency-Key replay is not offered there (options must say no_idempotency()).
  void route_async(http::Method method, std::string pattern, RouteOptions options, AsyncApiHandler handler);
  //! The root handler given to http::Server: answers through `reply`, now or from the group commit's thread.
  void handle(http::Request& req, http::Reply reply);
  //! The same, waiting for the answer (the fuzzer; tests driving the pipeline in-process).
  http::Response handle(http::Request& req);
  //! Answers what the group commit still holds and stops its thread, then runs the stops added with
  //! on_stop (last added first): call after the HTTP server has stopped (its requests in flight are
  //! answered while it drains) and before it is destroyed. ~App calls it too. Idempotent.
  void stop_background();
  //! Something to stop after the group commit (a buffer its work fills, written out at the stop).
  void on_stop(std::function<void()> stop) { stops_.push_back(std::move(stop)); }
  //! Something to answer as the HTTP server drains (http::ServerOptions::on_draining): requests parked
  //! until an event (the agents' rentals long polls), so a shutdown does not wait out its grace for them.
  void on_drain(std::function<void()> drain) { drains_.push_back(std::move(drain)); }
  //! Runs the on_drain callbacks, first added first.
  void drain() {
    for (auto& d : drains_) d();
  }
  //! For http::ServerOptions::body_plan: a route with a counted body (large uploads) admits the caller
  //! (authentication, roles) from the header, before any of the body is read; others keep their body.
  http::BodyPlan body_plan(const http::Request& head);

  //! Every route, in the order registered.
  const std::vector<RouteInfo>& route_table() const { return route_table_; }

  store::Store& store() { return *store_; }
  //! Records the port actually bound (listen port 0), so base_url() in mails names the real one.
  //! Called once, right after the server starts and before its address is published.
  void set_bound_port(std::uint16_t port);
  const Config& config() const { return config_; }
  //! Every rule that compares with the time reads it here.
  const util::Clock& clock() const { return *clock_; }
  //! The settable clock when the server runs on a test clock (config test_clock), else null.
  util::SettableClock* test_clock() const { return test_clock_.get(); }
  Metrics& metrics() { return metrics_; }
  //! Failed logins per account and per client address (growing waits, never a lockout).
  LoginThrottle& login_throttle() { return login_throttle_; }
  //! The agents' heartbeats commit here, many per transaction.
  GroupCommit& group_commit() { return group_commit_; }
  //! Call invalidate_all() after revoking a key, before answering (other replicas hear of it through
  //! the store's change feed: the revoke must store::notify_change("api_key:ID") in its transaction).
  ApiKeyCache& api_keys() { return api_keys_; }
  //! The store's change feed, which hears other replicas' changes; null where there are none (SQLite).
  const store::ChangeFeed* change_feed() const { return change_feed_.get(); }
  //! Keeps an area's state that its handlers use (the market's offer book, which has a thread) for
  //! as long as the App: destroyed after the group commit stops, before the store, metrics and clock
  //! it may use, the last kept first.
  template <class T>
  T& keep(std::unique_ptr<T> state) {
    T& kept = *state;
    kept_.push_back(std::move(state));
    return kept;
  }

 private:
  struct AppRoute {
    RouteOptions options;
    ApiHandler handler;  // one of the two
    AsyncApiHandler async_handler;
  };
  //! What the access log and metrics need once the answer is known, possibly on another thread.
  struct Completion {
    std::chrono::steady_clock::time_point started;
    http::Method method;
    std::string route;
    std::string path;
    std::string request_id;
    std::string remote_ip;
    bool https = false;  // the client spoke HTTPS (to us, or to a trusted proxy): HSTS
    std::size_t bytes_in = 0;
    http::Reply reply;
    std::atomic<bool> finished{false};
  };
  void finish(Completion& c, http::Response resp);
  void dispatch(http::Request& req, const AppRoute& route, const http::Reply& done);
  //! A state change a browser may have sent from another site (Origin or Sec-Fetch-Site says so) with
  //! its ambient cookie, or to log the victim into the attacker's account (login CSRF): refused.
  std::optional<http::Response> refuse_cross_site(const http::Request& req) const;
  //! Behind a trusted proxy (Config::trusted_proxies): the client's address from X-Forwarded-For and
  //! whether it spoke HTTPS from X-Forwarded-Proto. Headers from anyone else are not believed.
  void resolve_client(http::Request& req) const;
  //! Rate limit, authentication, CSRF and role checks: the refusal, if any; else the caller (or nobody).
  std::optional<http::Response> admit(http::Request& req, const RouteOptions& options,
                                      std::optional<Principal>& principal);
  //! A synchronous handler, with Idempotency-Key replay where the route offers it.
  http::Response run_with_idempotency(Ctx& ctx, const RouteOptions& options, const ApiHandler& handler);
  core::Result<std::optional<Principal>> authenticate(const http::Request& req);
  core::Result<std::optional<Principal>> authenticate_api_key(const std::string& key);
  //! A change another replica (or this one) committed, from the store's change feed.
  void on_store_change(std::string_view topic);

  Config config_;
  std::shared_ptr<util::Clock> clock_;
  std::shared_ptr<util::SettableClock> test_clock_;
  std::unique_ptr<store::Store> store_;
  Metrics metrics_;
  RateLimiter auth_limiter_;
  LoginThrottle login_throttle_;
  std::unique_ptr<const ApiKeyDirectory> api_key_directory_;
  ApiKeyCache api_keys_;
  std::unique_ptr<store::ChangeFeed> change_feed_;  // after what it invalidates; stopped first in ~App
  http::Router router_;
  std::vector<AppRoute> routes_;  // routes_[i] is router_'s route i
  std::vector<RouteInfo> route_table_;  // route_table_[i] describes routes_[i]
  std::vector<std::shared_ptr<void>> kept_;  // keep(): shared_ptr<void> only erases the type, one owner each
  GroupCommit group_commit_;      // its thread uses the store and the metrics
  std::vector<std::function<void()>> stops_;  // on_stop
  std::vector<std::function<void()>> drains_;  // on_drain
  WorkQueue slow_work_;           // RouteOptions::off_io_threads handlers; stopped first
};

//! Deletes the Idempotency-Key rows made before `now_ms - retention_ms` (a repeat after that runs the
//! request again), and those still "in progress" after `abandoned_ms` (their request died with its
//! server, so a retry is not refused as in progress for ever). Returns how many went.
std::int64_t prune_idempotency_keys(store::Tx& tx, std::int64_t now_ms, std::int64_t retention_ms,
                                    std::int64_t abandoned_ms = 3'600'000);

//! Session cookie names.
inline constexpr const char* kSessionCookie = "gpunex_session";
inline constexpr const char* kCsrfCookie = "gpunex_csrf";

//! The clock a server with this config runs on: a SettableClock at test_clock when set, else the system clock.
std::shared_ptr<util::Clock> clock_for(const Config& config);

}  // namespace gpunex::server
