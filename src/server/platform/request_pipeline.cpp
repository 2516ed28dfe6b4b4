#include "server/platform/request_pipeline.hpp"

#include <algorithm>
#include <chrono>
#include <future>
#include <stdexcept>
#include <thread>

#include "core/api_key.hpp"
#include "core/json_reader.hpp"
#include "server/platform/platform_repo.hpp"
#include "store/nul_in_text.hpp"
#include "util/crypto.hpp"
#include "util/log.hpp"

namespace gpunex::server {

using core::Error;
using core::ErrorCode;

namespace {

//! How long the group commit gathers requests (heartbeats) into one transaction: at 1,333 heartbeats/s
//! (20,000 agents every 15 s) about 7 a commit instead of 1, for at most this much more latency.
constexpr std::chrono::milliseconds kGroupCommitLinger{5};

//! One writer for SQLite (it has one write lock); on PostgreSQL, batches side by side on half the pool.
std::size_t group_commit_writers(const store::Store& store, const Config& config) {
  if (store.dialect() != store::Dialect::postgres) return 1;
  return static_cast<std::size_t>(std::max(1, config.db_pool_size / 2));
}

}  // namespace

store::Store& Ctx::store() { return app.store(); }
const Config& Ctx::config() { return app.config(); }
std::int64_t Ctx::now_ms() const { return app.clock().now_ms(); }

core::Result<nlohmann::json> Ctx::json_body() const { return core::parse_json_object(req.body); }

namespace {

LoginThrottle::Settings login_throttle_settings(const Config& c) {
  LoginThrottle::Settings s;
  s.free_per_address = c.login_free_failures;
  s.free_per_account = c.login_free_failures;
  s.free_per_pair = std::min(c.login_free_failures, 3);
  return s;
}

int slow_work_threads(const Config& c) {
  if (c.password_threads > 0) return c.password_threads;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / 2);
}

}  // namespace

App::App(Config config, std::unique_ptr<store::Store> store, std::unique_ptr<const ApiKeyDirectory> api_keys,
         std::shared_ptr<util::Clock> clock)
    : config_(std::move(config)),
      clock_(std::move(clock)),
      store_(std::move(store)),
      auth_limiter_(config_.auth_rate_limit_per_minute, std::chrono::seconds(60)),
      login_throttle_(login_throttle_settings(config_)),
      api_key_directory_(std::move(api_keys)),
      group_commit_(
          *store_, [this](std::size_t requests) { metrics_.observe_group_commit(requests); },
          group_commit_writers(*store_, config_), 512, 16384, kGroupCommitLinger),
      slow_work_(slow_work_threads(config_), static_cast<std::size_t>(config_.password_queue)) {
  store_->set_observer([this](std::string_view op, double s) { metrics_.observe_store(op, s); });
  if (!clock_) clock_ = clock_for(config_);
  // Only a server configured with a test clock offers POST /v1/test/clock, even if a test hands in
  // a settable clock of its own.
  if (config_.test_clock_start_ms) test_clock_ = std::dynamic_pointer_cast<util::SettableClock>(clock_);
  change_feed_ = store_->listen({
      .on_change = [this](std::string_view topic) { on_store_change(topic); },
      .on_missed = [this] { api_keys_.invalidate_all(); },
      .on_state =
          [](bool listening, const std::string& detail) {
            if (listening) {
              util::log_event("info", "listening for other replicas' changes", {{"channel", store::kChangeChannel}});
            } else {
              util::log_event("warn", "not hearing other replicas' changes; emptying caches until heard again",
                              {{"error", detail}});
            }
          },
  });
}

void App::on_store_change(std::string_view topic) {
  constexpr std::string_view kApiKey = "api_key:";
  if (topic.substr(0, kApiKey.size()) == kApiKey) api_keys_.invalidate_key(std::string(topic.substr(kApiKey.size())));
}

App::~App() {
  change_feed_.reset();  // its thread calls into the caches
  slow_work_.stop();  // its jobs use the store
  stop_background();
  while (!kept_.empty()) kept_.pop_back();
}

void App::stop_background() {
  group_commit_.stop();
  while (!stops_.empty()) {
    auto stop = std::move(stops_.back());
    stops_.pop_back();
    stop();
  }
}

void App::set_bound_port(std::uint16_t port) {
  config_.listen = config_.listen.substr(0, config_.listen.rfind(':') + 1) + std::to_string(port);
}

void App::route(http::Method method, std::string pattern, RouteOptions options, ApiHandler handler) {
  const auto counted = options.counted_body_limit;
  route_table_.push_back(RouteInfo{method, pattern, options});
  router_.add(method, std::move(pattern), {}, counted);
  routes_.push_back(AppRoute{std::move(options), std::move(handler), {}});
}

void App::route_async(http::Method method, std::string pattern, RouteOptions options, AsyncApiHandler handler) {
  if (options.idempotent) throw std::logic_error("an asynchronous route cannot replay Idempotency-Key: " + pattern);
  const auto counted = options.counted_body_limit;
  route_table_.push_back(RouteInfo{method, pattern, options});
  router_.add(method, std::move(pattern), {}, counted);
  routes_.push_back(AppRoute{std::move(options), {}, std::move(handler)});
}

http::Response failure_response(const std::exception_ptr& failure, const std::string& request_id) {
  try {
    std::rethrow_exception(failure);
  } catch (const store::NulInText&) {
    // A value no handler refused reached the store with a NUL in it: the client's mistake, not ours.
    return http::Response::error(
        Error::make(ErrorCode::invalid_field, "a text value holds a NUL character").with_code("nul_in_text"));
  } catch (const store::StoreUnavailable& e) {
    util::log_event("error", "store unavailable", {{"request_id", request_id}, {"error", e.what()}});
    auto resp = http::Response::error(ErrorCode::unavailable, "the store is busy or unreachable; retry shortly");
    resp.header("Retry-After", "1");
    return resp;
  } catch (const std::exception& e) {
    util::log_event("error", "request failed", {{"request_id", request_id}, {"error", e.what()}});
  } catch (...) {
    util::log_event("error", "request failed", {{"request_id", request_id}, {"error", "unknown exception"}});
  }
  return http::Response::error(ErrorCode::internal, "internal error (request id " + request_id + ")");
}

http::BodyPlan App::body_plan(const http::Request& head) {
  const auto match = router_.match(head);
  if (match.kind != http::Router::MatchKind::found) return {};
  const auto& options = routes_.at(match.index).options;
  if (!match.counted_body_limit && !options.kept_body_limit) return {};
  // Only a caller the route admits may send it a large body; dispatch() admits again with the body in.
  http::Request req = head;
  std::optional<Principal> principal;
  try {
    if (auto refusal = admit(req, options, principal)) {
      refusal->header("X-Request-Id", head.request_id);
      return {std::nullopt, std::move(*refusal), std::nullopt};
    }
  } catch (...) {
    return {std::nullopt, failure_response(std::current_exception(), head.request_id), std::nullopt};
  }
  return {match.counted_body_limit, std::nullopt, options.kept_body_limit};
}

namespace {

bool is_mutation(http::Method m) {
  return m == http::Method::post || m == http::Method::put || m == http::Method::patch || m == http::Method::del;
}

bool sane_request_id(const std::string& id) {
  if (id.empty() || id.size() > 64) return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  });
}

std::string bearer_token(const http::Request& req) {
  auto h = req.header("authorization");
  constexpr std::string_view prefix = "Bearer ";
  if (h.size() > prefix.size() && std::equal(prefix.begin(), prefix.end(), h.begin(), [](char a, char b) {
        return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
      })) {
    return h.substr(prefix.size());
  }
  return {};
}

std::string lower_ascii(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

//! Whether the body is declared JSON: "application/json" (or a merge patch's
//! "application/merge-patch+json"), parameters (charset) allowed. A browser
//! sends a cross-site form or a simple fetch only as text/plain, form-urlencoded or multipart, so an
//! API that takes nothing else cannot be posted to from another site without a CORS preflight.
bool declares_json(const http::Request& req) {
  const std::string type = lower_ascii(req.header("content-type"));
  const auto end = type.find(';');
  std::string media = type.substr(0, end);
  while (!media.empty() && media.back() == ' ') media.pop_back();
  return media == "application/json" || media == "application/merge-patch+json";
}

//! "scheme://host[:port]" of an Origin header or a URL, lower-cased; "" when it is not one.
std::string origin_of(std::string_view url) {
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) return {};
  const auto path = url.find('/', scheme_end + 3);
  return lower_ascii(url.substr(0, path));
}

}  // namespace

std::optional<http::Response> App::refuse_cross_site(const http::Request& req) const {
  // Requests with an Authorization header are not a browser's ambient credential; only cookie
  // sessions and the anonymous login and signup (login CSRF) need proof of the page they came from.
  if (!is_mutation(req.method) || !req.header("authorization").empty()) return std::nullopt;
  const auto forbid = [](std::string why) {
    return http::Response::error(Error::make(ErrorCode::forbidden, std::move(why)).with_code("cross_site_request"));
  };
  const std::string site = lower_ascii(req.header("sec-fetch-site"));
  if (!site.empty() && site != "same-origin" && site != "none") {
    return forbid("this request came from another site (Sec-Fetch-Site: " + site + ")");
  }
  const std::string origin = lower_ascii(req.header("origin"));
  if (origin.empty()) return std::nullopt;  // not a browser (CLI, curl), or a browser too old to say
  const std::string host = lower_ascii(req.header("host"));
  const bool ours = origin == origin_of(config_.base_url()) || (!host.empty() && (origin == "http://" + host ||
                                                                                   origin == "https://" + host));
  if (!ours) return forbid("this request came from another site (Origin: " + origin + ")");
  return std::nullopt;
}

void App::resolve_client(http::Request& req) const {
  const std::string forwarded = req.header("x-forwarded-for");
  req.proxied = !forwarded.empty();
  if (forwarded.empty() || !config_.is_trusted_proxy(req.remote_ip)) return;
  // Each proxy appends the address it heard from: the client is the last one no trusted proxy added.
  std::string_view rest = forwarded;
  while (!rest.empty()) {
    const auto comma = rest.rfind(',');
    std::string_view one = comma == std::string_view::npos ? rest : rest.substr(comma + 1);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(0, comma);
    while (!one.empty() && one.front() == ' ') one.remove_prefix(1);
    while (!one.empty() && one.back() == ' ') one.remove_suffix(1);
    if (one.empty() || one.size() > 64) break;
    req.remote_ip = std::string(one);
    if (!config_.is_trusted_proxy(one)) break;
  }
  std::string proto = lower_ascii(req.header("x-forwarded-proto"));
  if (const auto comma = proto.rfind(','); comma != std::string::npos) proto = proto.substr(comma + 1);
  while (!proto.empty() && proto.front() == ' ') proto.erase(0, 1);
  req.forwarded_https = proto == "https";
}

core::Result<std::optional<Principal>> App::authenticate(const http::Request& req) {
  std::string token = bearer_token(req);
  if (token.rfind(kApiKeyPrefix, 0) == 0) return authenticate_api_key(token);
  Principal::Via via = Principal::Via::session_bearer;
  if (token.empty()) {
    auto c = req.cookie(kSessionCookie);
    if (!c || c->empty()) return std::optional<Principal>{};
    token = *c;
    via = Principal::Via::session_cookie;
  }
  auto info = store_->transact([&](store::Tx& tx) { return find_session(tx, token, clock_->now_ms()); },
                               store::TxMode::read);
  if (!info) {
    return Error::make(ErrorCode::unauthenticated, "session is invalid or has expired; log in again")
        .with_code("invalid_session");
  }
  Principal p;
  p.user = std::move(info->user);
  p.via = via;
  p.session_token_hash = info->token_hash;
  p.csrf_token = info->csrf_token;
  return std::optional<Principal>(std::move(p));
}

core::Result<std::optional<Principal>> App::authenticate_api_key(const std::string& key) {
  const auto now = clock_->now_ms();
  const std::string key_hash = util::sha256_hex(key);
  auto entry = api_keys_.find(key_hash);
  if (!entry && api_key_directory_) {
    const auto generation = api_keys_.generation();
    entry = store_->transact(
        [&](store::Tx& tx) -> std::optional<ApiKeyCache::Entry> {
          auto k = api_key_directory_->find_by_hash(tx, key_hash);
          if (!k) return std::nullopt;
          auto u = find_user(tx, k->user_id);
          if (!u) return std::nullopt;
          return ApiKeyCache::Entry{std::move(*k), std::move(*u)};
        },
        store::TxMode::read);
    if (entry) api_keys_.put(key_hash, *entry, generation);
  }
  if (!entry) {
    return Error::make(ErrorCode::unauthenticated, "API key is invalid or revoked").with_code("invalid_api_key");
  }
  if (core::api_key_use_due(entry->key.last_used_at_ms, now)) {
    const std::string& key_id = entry->key.key_id;
    store_->transact([&](store::Tx& tx) { api_key_directory_->record_use(tx, key_id, now); });
    api_keys_.note_used(key_hash, now);
  }
  Principal p;
  p.user = std::move(entry->user);
  p.via = Principal::Via::api_key;
  p.api_key_id = entry->key.key_id;
  return std::optional<Principal>(std::move(p));
}

namespace {

//! A query parameter the route does not read (its RouteDoc::query, what the API document lists) is refused, so
//! that `GET /v1/rentals?status=running` is not answered with every rental as if a filter had been applied;
//! so is one given twice, which would be read as its last value alone.
//! The dashboard's files (internal) take any, as browsers add their own.
std::optional<http::Response> unknown_query_parameter(const http::Request& req, const RouteDoc& doc) {
  if (doc.internal) return std::nullopt;
  // `?state=running&state=ended` would be answered as the last alone: a list goes in one, comma-separated.
  if (!req.repeated_query.empty()) {
    return http::Response::error(Error::make(ErrorCode::invalid_field,
                                             "query parameter \"" + req.repeated_query +
                                                 "\" is given more than once: give it once (a list of states "
                                                 "goes in one, comma-separated: state=running,ended)",
                                             req.repeated_query)
                                     .with_code("repeated_parameter"));
  }
  for (const auto& [name, value] : req.query) {
    if (std::find(doc.query.begin(), doc.query.end(), name) != doc.query.end()) continue;
    std::string takes;
    for (const auto& q : doc.query) takes += (takes.empty() ? "" : ", ") + q;
    return http::Response::error(Error::make(
        ErrorCode::unknown_field,
        "unknown query parameter \"" + name + "\": " + req.route + (takes.empty() ? " takes none" : " takes " + takes),
        name));
  }
  return std::nullopt;
}

//! A body sent to a route that takes none (no RouteDoc::body: `POST /v1/rentals/{id}/stop`) is refused
//! unless it is empty or `{}`, so that `{"force": true}` is not taken as if it had been read.
std::optional<http::Response> unexpected_body(const http::Request& req, const RouteOptions& options) {
  const auto& doc = options.documentation;
  if (doc.internal || !doc.body.is_null() || options.counted_body_limit || !is_mutation(req.method))
    return std::nullopt;
  if (req.body.find_first_not_of(" \t\r\n") == std::string::npos) return std::nullopt;
  // The checked parse every body takes (its nesting is limited): this runs before any handler.
  const auto parsed = core::parse_json_object(req.body);
  if (parsed && parsed->empty()) return std::nullopt;
  const std::string field = parsed ? parsed->begin().key() : "";
  return http::Response::error(Error::make(ErrorCode::unknown_field,
                                           (field.empty() ? std::string("a body") : "unknown field \"" + field + "\"") +
                                               ": " + req.route + " takes no request body (send none, or {})",
                                           field));
}

}  // namespace

std::optional<http::Response> App::admit(http::Request& req, const RouteOptions& options,
                                         std::optional<Principal>& principal) {
  if (auto refused = refuse_cross_site(req)) return refused;
  if (is_mutation(req.method) && !options.counted_body_limit && !req.body.empty() && !declares_json(req)) {
    return http::Response::error(ErrorCode::unsupported_media_type,
                                 "the request body must be sent as Content-Type: application/json");
  }
  if (options.auth_rate_limited && !auth_limiter_.allow(req.remote_ip)) {
    auto r = http::Response::error(ErrorCode::rate_limited, "too many requests from this address; try again later");
    r.header("Retry-After", std::to_string(auth_limiter_.retry_after_s(req.remote_ip)));
    return r;
  }
  auto auth = authenticate(req);
  if (auth.ok()) {
    principal = std::move(*auth);
  } else if (options.access != Access::anyone) {
    return http::Response::error(auth.error());
  }
  if (options.access == Access::user && !principal) {
    return http::Response::error(ErrorCode::unauthenticated, "log in first");
  }
  if (principal && principal->via == Principal::Via::api_key && !options.allow_api_key) {
    return http::Response::error(Error::make(ErrorCode::forbidden,
                                             "a provider API key cannot be used here; log in with a session")
                                     .with_code("api_key_not_allowed"));
  }
  if (options.api_key_only && principal && principal->via != Principal::Via::api_key) {
    return http::Response::error(
        Error::make(ErrorCode::forbidden, "agent endpoints take a provider API key (Authorization: Bearer gpx_...)")
            .with_code("api_key_required"));
  }
  if (principal && principal->via == Principal::Via::session_cookie && is_mutation(req.method)) {
    // A cookie travels with any request the browser makes; the CSRF header proves the page is ours.
    if (!util::equal_constant_time(req.header("x-csrf-token"), principal->csrf_token)) {
      return http::Response::error(Error::make(ErrorCode::forbidden, "missing or wrong X-CSRF-Token header")
                                       .with_code("csrf_failed"));
    }
  }
  if (auto unknown = unknown_query_parameter(req, options.documentation)) return unknown;
  if (auto unexpected = unexpected_body(req, options)) return unexpected;
  if (!options.roles.empty()) {
    bool allowed = principal && (principal->user.has_role(core::Role::admin) ||
                                 std::any_of(options.roles.begin(), options.roles.end(),
                                             [&](const std::string& r) { return principal->user.has_role(r); }));
    if (!allowed) return http::Response::error(ErrorCode::forbidden, "your account lacks the role for this");
  }

  return std::nullopt;
}

void App::dispatch(http::Request& req, const AppRoute& route, const http::Reply& done) {
  std::optional<Principal> principal;
  if (auto refused = admit(req, route.options, principal)) return done(std::move(*refused));
  if (route.options.off_io_threads && route.handler) {
    // The request lives only as long as this call: the job takes it, and who sent it, along.
    struct Job {
      http::Request req;
      std::optional<Principal> principal;
    };
    auto job = std::make_shared<Job>(Job{std::move(req), std::move(principal)});
    const bool queued = slow_work_.submit([this, job, &route, done] {
      Ctx ctx{job->req, job->principal ? &*job->principal : nullptr, *this};
      try {
        done(run_with_idempotency(ctx, route.options, route.handler));
      } catch (...) {
        done(failure_response(std::current_exception(), job->req.request_id));
      }
    });
    if (!queued) {
      auto busy = http::Response::error(
          Error::make(ErrorCode::unavailable, "the server is busy checking passwords; try again in a moment")
              .with_code("busy"));
      busy.header("Retry-After", "1");
      done(std::move(busy));
    }
    return;
  }
  Ctx ctx{req, principal ? &*principal : nullptr, *this};
  if (route.async_handler) return route.async_handler(ctx, done);
  done(run_with_idempotency(ctx, route.options, route.handler));
}

std::int64_t prune_idempotency_keys(store::Tx& tx, std::int64_t now_ms, std::int64_t retention_ms,
                                    std::int64_t abandoned_ms) {
  return platform_repo::delete_old_idempotency_keys(tx, now_ms - retention_ms, now_ms - abandoned_ms);
}

namespace {
//! Thrown inside a handler's transaction when another attempt took its Idempotency-Key over.
struct IdempotencyTakenOver : std::runtime_error {
  IdempotencyTakenOver() : std::runtime_error("the Idempotency-Key was taken over by another attempt") {}
};
}  // namespace

http::Response App::run_with_idempotency(Ctx& ctx, const RouteOptions& options, const ApiHandler& handler) {
  const http::Request& req = ctx.req;
  const Principal* principal = ctx.principal;
  std::string idem_key = req.header("idempotency-key");
  if (!options.idempotent || idem_key.empty() || !is_mutation(req.method)) return handler(ctx);

  // Idempotency: reserve the key, run once, store the answer; a repeat replays it.
  if (idem_key.size() > 255) {
    return http::Response::error(ErrorCode::invalid_field, "Idempotency-Key must be at most 255 characters",
                                 "Idempotency-Key");
  }
  const std::string scope = principal != nullptr ? principal->user.id : "ip:" + req.remote_ip;
  // A sealed route stores neither the key nor the answer in clear (RouteOptions::sealed_replay).
  constexpr std::string_view kSealContext = "gpunex idempotent answer";
  const std::string row_key =
      options.sealed_replay ? "sealed:" + util::secret_hash_hex(kSealContext, idem_key) : idem_key;
  // A sealed route's body may hold a secret (signup's password): its hash is keyed with the
  // Idempotency-Key, which the store never holds, so the stored hash cannot be guessed offline.
  // A JSON body is compared as JSON (keys in order, no white space): a retry that writes the same request
  // with other spacing or key order is the same request, not a reused key.
  const auto parsed = core::parse_json_object(req.body);
  const std::string request_text =
      std::string(http::method_name(req.method)) + " " + req.path + "\n" + (parsed ? parsed->dump() : req.body);
  const std::string req_hash = options.sealed_replay
                                   ? util::secret_hash_hex("gpunex idempotent request", idem_key + "\n" + request_text)
                                   : util::sha256_hex(request_text);
  // The reservation's time is this attempt's token (platform_repo::IdempotencyRecord).
  std::int64_t reserved_at = clock_->now_ms();
  const std::int64_t takeover_ms = static_cast<std::int64_t>(config_.idempotency_takeover_s) * 1000;
  auto prior = store_->transact([&](store::Tx& tx) -> std::optional<platform_repo::IdempotencyRecord> {
    auto record = platform_repo::find_idempotency_key(tx, scope, row_key);
    // An attempt that committed nothing for idempotency_takeover_s died with its replica, or is slow: this
    // one takes the key over. Should the first go on after all, its commits are refused (the fence below).
    if (record && record->status == 0 && record->request_hash == req_hash &&
        record->reserved_at <= reserved_at - takeover_ms &&
        platform_repo::take_over_idempotency_key(tx, scope, row_key, record->reserved_at, reserved_at)) {
      return std::nullopt;
    }
    if (record) return record;
    platform_repo::reserve_idempotency_key(tx, scope, row_key, req_hash, reserved_at);
    return std::nullopt;
  });
  if (prior) {
    if (prior->request_hash != req_hash) {
      return http::Response::error(
          Error::make(ErrorCode::unprocessable, "this Idempotency-Key was used for a different request",
                      "Idempotency-Key")
              .with_code("idempotency_key_reused"));
    }
    if (prior->in_progress()) {
      return http::Response::error(
          Error::make(ErrorCode::conflict, "a request with this Idempotency-Key is still in progress",
                      "Idempotency-Key")
              .with_code("idempotency_in_progress"));
    }
    http::Response replay;
    replay.status = prior->status;
    if (options.sealed_replay) {
      auto body = util::unseal(kSealContext, idem_key, prior->body);
      if (!body) throw std::runtime_error("a sealed idempotent answer does not open with its key");
      replay.body = std::move(*body);
    } else {
      replay.body = std::move(prior->body);
    }
    replay.header("Idempotent-Replayed", "true");
    return replay;
  }
  http::Response resp;
  bool committed = false;  // whether the handler wrote anything
  try {
    // Each transaction the handler commits marks the key as committed, and only while this attempt owns it.
    store::ScopedCommitCheck fence([&](store::Tx& tx) {
      if (!platform_repo::fence_idempotency_key(tx, scope, row_key, reserved_at)) throw IdempotencyTakenOver();
      committed = true;
    });
    resp = handler(ctx);
  } catch (const IdempotencyTakenOver&) {
    return http::Response::error(Error::make(ErrorCode::conflict,
                                             "another attempt of the request with this Idempotency-Key took it over",
                                             "Idempotency-Key")
                                     .with_code("idempotency_in_progress"));
  } catch (...) {
    store_->transact([&](store::Tx& tx) { platform_repo::release_idempotency_key(tx, scope, row_key, reserved_at); });
    throw;
  }
  store_->transact([&](store::Tx& tx) {
    // A refusal that wrote nothing (402 too little balance, 409 no GPU free now, a 400) is not kept: the
    // retry is asked again, and answers as things stand then (credit added, a GPU freed). Only what did
    // something is replayed, so that it is never done twice.
    if (resp.status >= 500 || (resp.status >= 400 && !committed)) {
      platform_repo::release_idempotency_key(tx, scope, row_key, reserved_at);
    } else {
      const std::string stored = options.sealed_replay ? util::seal(kSealContext, idem_key, resp.body_bytes())
                                                       : std::string(resp.body_bytes());
      platform_repo::complete_idempotency_key(tx, scope, row_key, reserved_at, resp.status, stored);
    }
  });
  return resp;
}

void App::handle(http::Request& req, http::Reply reply) {
  const auto started = std::chrono::steady_clock::now();
  std::string rid = req.header("x-request-id");
  req.request_id = sane_request_id(rid) ? rid : util::buffered_random_token(12);
  resolve_client(req);

  auto match = router_.match(req);
  auto completion = std::make_shared<Completion>();
  completion->started = started;
  completion->method = req.method;
  completion->route = match.pattern;
  completion->path = req.path;
  completion->request_id = req.request_id;
  completion->remote_ip = req.remote_ip;
  completion->https = req.tls || req.forwarded_https;
  completion->bytes_in = std::max<std::uint64_t>(req.body_length, req.body.size());
  completion->reply = std::move(reply);
  const http::Reply done = [this, completion](http::Response resp) { finish(*completion, std::move(resp)); };
  try {
    switch (match.kind) {
      case http::Router::MatchKind::found:
        req.params = std::move(match.params);
        req.route = match.pattern;
        dispatch(req, routes_.at(match.index), done);
        break;
      case http::Router::MatchKind::method_not_allowed: {
        auto resp = http::Response::error(ErrorCode::method_not_allowed, std::string(http::method_name(req.method)) +
                                                                             " is not allowed on " + req.path);
        std::string allow;
        for (auto m : match.allowed) allow += (allow.empty() ? "" : ", ") + std::string(http::method_name(m));
        resp.header("Allow", allow);
        completion->route = "(method not allowed)";
        done(std::move(resp));
        break;
      }
      case http::Router::MatchKind::not_found:
        completion->route = "(not found)";
        done(http::Response::error(ErrorCode::not_found, "no such endpoint: " + req.path));
        break;
    }
  } catch (...) {
    done(failure_response(std::current_exception(), req.request_id));  // ignored if already answered
  }
}

void App::finish(Completion& c, http::Response resp) {
  if (c.finished.exchange(true)) return;
  resp.header("X-Request-Id", c.request_id);
  resp.header("X-Content-Type-Options", "nosniff");
  resp.header("X-Frame-Options", "DENY");
  resp.header("Referrer-Policy", "no-referrer");
  if (c.https) resp.header("Strict-Transport-Security", "max-age=31536000");
  if (resp.content_type.rfind("application/json", 0) == 0) resp.header("Cache-Control", "no-store");

  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - c.started).count();
  metrics_.observe_request(http::method_name(c.method), c.route, resp.status, seconds);
  if (config_.access_log) {
    util::log_event("info", "request",
                    {{"request_id", c.request_id},
                     {"method", http::method_name(c.method)},
                     {"path", c.path},
                     {"route", c.route},
                     {"status", resp.status},
                     {"duration_ms", seconds * 1000.0},
                     {"remote_ip", c.remote_ip},
                     {"bytes_in", c.bytes_in},
                     {"bytes_out", resp.body_bytes().size()}});
  }
  c.reply(std::move(resp));
}

http::Response App::handle(http::Request& req) {
  std::promise<http::Response> answer;
  auto out = answer.get_future();
  handle(req, [&answer](http::Response resp) { answer.set_value(std::move(resp)); });
  return out.get();
}

std::shared_ptr<util::Clock> clock_for(const Config& config) {
  if (config.test_clock_start_ms) return std::make_shared<util::SettableClock>(*config.test_clock_start_ms);
  return std::make_shared<util::SystemClock>();
}

}  // namespace gpunex::server
