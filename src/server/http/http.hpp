#pragma once
// HTTP types shared by the server, the router and the API handlers. Handlers
// are plain synchronous functions Request -> Response that the Beast server
// runs on its I/O threads, or asynchronous ones that answer later through a
// Reply, so that slow work (a group commit) does not hold an I/O thread.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"

namespace gpunex::http {

enum class Method { get, head, post, put, patch, del, options, other };

Method parse_method(std::string_view name);
std::string_view method_name(Method m);

//! An incoming request, after parsing. Header names are lower-case.
struct Request {
  Method method = Method::get;
  std::string target;  // as sent: path and query
  std::string path;    // percent-decoded path without the query
  std::string raw_path;  // the path as sent (still percent-encoded): what Router::match takes
  std::map<std::string, std::string, std::less<>> query;    // decoded query parameters (last one wins)
  std::string repeated_query;  // the first query parameter given more than once (refused by the API), or ""
  std::multimap<std::string, std::string, std::less<>> headers;
  std::string body;
  //! Bytes of body received: body.size(), or the count of a counted body (one that is discarded as it
  //! streams in; see Router::add).
  std::uint64_t body_length = 0;
  std::string remote_ip;  // the client's: a trusted proxy's X-Forwarded-For (App::resolve_client), else the peer's
  bool tls = false;
  bool forwarded_https = false;  // a trusted proxy says the client spoke HTTPS to it
  bool proxied = false;          // the request came through a proxy (X-Forwarded-For present)
  std::map<std::string, std::string, std::less<>> params;   // path parameters filled by the router
  std::string route;       // the matched route pattern, e.g. "/v1/applications/{id}"
  std::string request_id;  // X-Request-Id, taken from the client or generated

  //! First value of a header (name in any case), or "".
  std::string header(std::string_view name) const;
  //! A cookie from the Cookie header.
  std::optional<std::string> cookie(std::string_view name) const;
  std::optional<std::string> query_param(std::string_view name) const;
  std::string param(std::string_view name) const;
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  //! When set, the body is `shared` (memory that body_owner keeps alive), sent without a copy, and `body`
  //! is ignored: for large immutable payloads.
  std::shared_ptr<const void> body_owner;
  std::string_view shared;

  //! Sends `bytes`, kept alive by `owner`, as the body instead of a copy in `body`.
  Response& shared_body(std::shared_ptr<const void> owner, std::string_view bytes) {
    body_owner = std::move(owner);
    shared = bytes;
    return *this;
  }
  //! The body's bytes, however they are held.
  std::string_view body_bytes() const { return body_owner ? shared : std::string_view(body); }

  //! A JSON response.
  static Response json(int status, const nlohmann::json& body);
  //! The API error shape: {"error": {"code", "message", "field"}} with the code's HTTP status.
  static Response error(const core::Error& e);
  static Response error(core::ErrorCode code, std::string message,
                        std::optional<std::string> field = std::nullopt);
  Response& header(std::string name, std::string value) {
    headers.emplace_back(std::move(name), std::move(value));
    return *this;
  }
};

using Handler = std::function<Response(Request&)>;

//! Answers a request: call it exactly once, from any thread; the connection writes the response on its own
//! event loop. Later calls are ignored.
using Reply = std::function<void(Response)>;
//! A handler that may answer after it returns. The Request is valid only during the call. A handler that
//! throws before replying is answered 500.
using AsyncHandler = std::function<void(Request&, Reply)>;

//! Parses one complete HTTP/1.1 request from bytes (the fuzzer's entry; the server parses incrementally).
core::Result<Request> parse_raw_request(std::string_view raw, std::size_t body_limit);

//! Splits "a=1&b=x%20y" into decoded pairs.
//! The decoded parameters of a query string, the last of a repeated name winning; `repeated`, when given,
//! gets the first name given more than once (left as it was when none is).
std::map<std::string, std::string, std::less<>> parse_query(std::string_view query, std::string* repeated = nullptr);
//! Percent-decodes; '+' becomes a space only when form is true. Returns nullopt on a bad escape.
std::optional<std::string> percent_decode(std::string_view s, bool form);

//! Maps (method, path) to a handler, with "{name}" path parameters.
class Router {
 public:
  //! With counted_body_limit, the route's request bodies are counted (Request::body_length) and
  //! discarded as they stream in, up to that many bytes, instead of kept under the server's body_limit.
  void add(Method method, std::string pattern, Handler handler,
           std::optional<std::uint64_t> counted_body_limit = std::nullopt);

  enum class MatchKind { found, method_not_allowed, not_found };
  struct Match {
    MatchKind kind = MatchKind::not_found;
    const Handler* handler = nullptr;
    std::size_t index = 0;  // the route's position in the order of add()
    std::string pattern;
    std::map<std::string, std::string, std::less<>> params;
    std::vector<Method> allowed;  // for 405's Allow header
    std::optional<std::uint64_t> counted_body_limit;
  };
  //! Takes the raw (still encoded) path, e.g. Request::raw_path: segments are split
  //! before decoding so an encoded '/' stays inside a parameter.
  Match match(Method method, std::string_view path) const;
  //! match(req.method, req.raw_path).
  Match match(const Request& req) const { return match(req.method, req.raw_path); }

 private:
  struct Route {
    Method method;
    std::string pattern;
    std::vector<std::string> segments;
    Handler handler;
    std::optional<std::uint64_t> counted_body_limit;
  };
  std::vector<Route> routes_;
};

struct TlsOptions {
  std::string cert_file;
  std::string key_file;
};

//! What the server does with a request's body, decided once the header is in (ServerOptions::body_plan).
struct BodyPlan {
  //! Set: the body is counted (Request::body_length) and discarded as it streams in, up to this many
  //! bytes, instead of kept in Request::body under body_limit.
  std::optional<std::uint64_t> counted_limit;
  //! Set: this is the answer, sent before any of the body is read; the connection then closes.
  std::optional<Response> refuse;
  //! Set: the body is kept, under this limit instead of body_limit (a route that takes large answers).
  std::optional<std::uint64_t> kept_limit;
};

struct ServerOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8080;
  //! I/O threads, each with its own event loop and its share of the connections (0: one per core). A
  //! handler that blocks (a store transaction) holds up the other connections of its loop meanwhile.
  int threads = 0;
  std::size_t body_limit = 1 << 20;               // bytes; larger bodies get 413
  //! Asked once the header of a request with a body is in, with the request so far (no body yet).
  //! Unset: every body is kept under body_limit.
  std::function<BodyPlan(const Request& head)> body_plan;
  std::chrono::seconds header_timeout{10};        // to receive the whole header
  std::chrono::seconds read_timeout{30};          // to receive the body
  std::chrono::seconds idle_timeout{60};          // keep-alive between requests
  std::chrono::seconds shutdown_grace{10};        // how long stop() waits for requests in flight
  //! Called by stop() once it accepts no more and has asked every connection to close after its request:
  //! answer now the requests that wait on something (long polls), or stop() waits out the grace for them.
  std::function<void()> on_draining;
  std::optional<TlsOptions> tls;
  //! Open connections allowed in all and from one client address (0: no cap); a connection over a cap
  //! is closed at once, so one client holding idle connections cannot take every slot.
  std::size_t max_connections = 0;
  std::size_t max_connections_per_ip = 0;
  //! Told when a cap refuses a connection (at most once a second per cap): address, "total" or
  //! "per address", the cap.
  std::function<void(const std::string& ip, std::string_view cap, std::size_t limit)> on_connection_refused;
};

//! The asynchronous HTTP/1.1 server (Boost.Beast).
class Server {
 public:
  Server(ServerOptions options, Handler handler);
  Server(ServerOptions options, AsyncHandler handler);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  //! Binds and starts the I/O threads; returns the bound port (useful with port 0). Throws on failure.
  std::uint16_t start();
  //! Stops accepting, lets requests in flight finish (up to shutdown_grace), then stops the threads.
  //! Idempotent and thread-safe; call it from outside the handlers (a handler would wait out the grace).
  void stop();
  //! Blocks until stop() has completed.
  void wait();
  //! Reads the TLS certificate and key files again (a renewed certificate): connections accepted from
  //! now on use them, those open keep theirs. False without TLS; throws, keeping the files read before,
  //! when the new ones cannot be read or do not belong together.
  bool reload_tls();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpunex::http
