#include "server/http/http.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

namespace {

using gpunex::core::ErrorCode;
using gpunex::http::AsyncHandler;
using gpunex::http::BodyPlan;
using gpunex::http::Method;
using gpunex::http::Reply;
using gpunex::http::Request;
using gpunex::http::Response;
using gpunex::http::Router;
using gpunex::http::Server;
using gpunex::http::ServerOptions;
using namespace std::chrono_literals;

Response text(std::string body) {
  Response r;
  r.content_type = "text/plain";
  r.body = std::move(body);
  return r;
}

// ---------------------------------------------------------------- router

Router make_router() {
  Router r;
  r.add(Method::get, "/v1/applications/{id}", [](Request&) { return text("get app"); });
  r.add(Method::patch, "/v1/applications/{id}", [](Request&) { return text("patch app"); });
  r.add(Method::post, "/v1/applications/{id}/submit", [](Request&) { return text("submit"); });
  r.add(Method::get, "/v1/{x}/applications", [](Request&) { return text("param"); });
  r.add(Method::get, "/v1/review/applications", [](Request&) { return text("exact"); });
  r.add(Method::get, "/", [](Request&) { return text("root"); });
  return r;
}

std::string call(const Router::Match& m) {
  Request req;
  return (*m.handler)(req).body;
}

TEST(Router, MatchesParamsAndDecodesThem) {
  auto r = make_router();
  auto m = r.match(Method::post, "/v1/applications/a%20b%2Fc/submit");
  ASSERT_EQ(m.kind, Router::MatchKind::found);
  EXPECT_EQ(call(m), "submit");
  EXPECT_EQ(m.pattern, "/v1/applications/{id}/submit");
  EXPECT_EQ(m.params.at("id"), "a b/c");

  auto root = r.match(Method::get, "/");
  ASSERT_EQ(root.kind, Router::MatchKind::found);
  EXPECT_EQ(call(root), "root");
}

TEST(Router, ExactSegmentBeatsParameter) {
  auto r = make_router();
  auto exact = r.match(Method::get, "/v1/review/applications");
  ASSERT_EQ(exact.kind, Router::MatchKind::found);
  EXPECT_EQ(call(exact), "exact");
  EXPECT_TRUE(exact.params.empty());

  auto param = r.match(Method::get, "/v1/other/applications");
  ASSERT_EQ(param.kind, Router::MatchKind::found);
  EXPECT_EQ(call(param), "param");
  EXPECT_EQ(param.params.at("x"), "other");
}

TEST(Router, NotFoundVersusMethodNotAllowed) {
  auto r = make_router();
  EXPECT_EQ(r.match(Method::get, "/v1/nothing").kind, Router::MatchKind::not_found);
  // A trailing slash is a different path; an empty segment is no parameter.
  EXPECT_EQ(r.match(Method::get, "/v1/applications/7/").kind, Router::MatchKind::not_found);
  EXPECT_EQ(r.match(Method::get, "/v1/applications/").kind, Router::MatchKind::not_found);
  EXPECT_EQ(r.match(Method::get, "/v1/applications/%zz").kind, Router::MatchKind::not_found);

  auto m = r.match(Method::del, "/v1/applications/7");
  ASSERT_EQ(m.kind, Router::MatchKind::method_not_allowed);
  EXPECT_EQ(m.allowed, (std::vector<Method>{Method::get, Method::head, Method::patch}));

  auto post_only = r.match(Method::get, "/v1/applications/7/submit");
  ASSERT_EQ(post_only.kind, Router::MatchKind::method_not_allowed);
  EXPECT_EQ(post_only.allowed, (std::vector<Method>{Method::post}));
}

TEST(Router, HeadUsesGetRoute) {
  auto r = make_router();
  auto m = r.match(Method::head, "/v1/applications/9");
  ASSERT_EQ(m.kind, Router::MatchKind::found);
  EXPECT_EQ(call(m), "get app");
  EXPECT_EQ(r.match(Method::head, "/v1/applications/9/submit").kind,
            Router::MatchKind::method_not_allowed);
}

TEST(Method, RoundTrips) {
  for (auto m : {Method::get, Method::head, Method::post, Method::put, Method::patch, Method::del,
                 Method::options}) {
    EXPECT_EQ(gpunex::http::parse_method(gpunex::http::method_name(m)), m);
  }
  EXPECT_EQ(gpunex::http::parse_method("get"), Method::other);
  EXPECT_EQ(gpunex::http::parse_method("BREW"), Method::other);
}

// ------------------------------------------------------- parsing helpers

TEST(PercentDecode, DecodesAndRejectsBadEscapes) {
  using gpunex::http::percent_decode;
  EXPECT_EQ(percent_decode("a%20b%2f%C3%A9", false), "a b/\xC3\xA9");
  EXPECT_EQ(percent_decode("a+b", false), "a+b");
  EXPECT_EQ(percent_decode("a+b", true), "a b");
  EXPECT_EQ(percent_decode("", false), "");
  EXPECT_FALSE(percent_decode("%", false));
  EXPECT_FALSE(percent_decode("%2", false));
  EXPECT_FALSE(percent_decode("abc%", false));
  EXPECT_FALSE(percent_decode("%g0", false));
  EXPECT_FALSE(percent_decode("%0x", false));
}

TEST(ParseQuery, SplitsDecodesAndLastWins) {
  auto q = gpunex::http::parse_query("a=1&b=x%20y&c&d=p+q&a=2&&bad=%zz&=novalue");
  EXPECT_EQ(q.at("a"), "2");
  EXPECT_EQ(q.at("b"), "x y");
  EXPECT_EQ(q.at("c"), "");
  EXPECT_EQ(q.at("d"), "p q");
  EXPECT_EQ(q.count("bad"), 0u);
  EXPECT_EQ(q.size(), 4u);
  EXPECT_TRUE(gpunex::http::parse_query("").empty());
  // The first name given twice is reported, for the API to refuse.
  std::string repeated;
  gpunex::http::parse_query("state=running&limit=5&state=ended&limit=6", &repeated);
  EXPECT_EQ(repeated, "state");
  std::string none;
  gpunex::http::parse_query("state=running,ended&limit=5", &none);
  EXPECT_EQ(none, "");
}

TEST(RequestHelpers, HeaderCookieQueryParam) {
  Request req;
  req.headers.emplace("cookie", "a=1; session=\"abc\";  b = two ;flag");
  req.headers.emplace("x-thing", "first");
  req.headers.emplace("x-thing", "second");
  req.query = gpunex::http::parse_query("limit=10");
  req.params["id"] = "42";
  EXPECT_EQ(req.header("X-Thing"), "first");
  EXPECT_EQ(req.header("missing"), "");
  EXPECT_EQ(req.cookie("a"), "1");
  EXPECT_EQ(req.cookie("session"), "abc");
  EXPECT_EQ(req.cookie("b"), "two");
  EXPECT_FALSE(req.cookie("flag"));
  EXPECT_FALSE(req.cookie("c"));
  EXPECT_EQ(req.query_param("limit"), "10");
  EXPECT_FALSE(req.query_param("cursor"));
  EXPECT_EQ(req.param("id"), "42");
  EXPECT_EQ(req.param("nope"), "");
}

TEST(ResponseError, HasTheApiShape) {
  auto r = Response::error(ErrorCode::missing_field, "email is required", "gpus[0].model");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.content_type, "application/json");
  auto j = nlohmann::json::parse(r.body);
  EXPECT_EQ(j, nlohmann::json::parse(R"({"error":{"code":"missing_field","message":"email is required",
                   "field":"gpus[0].model",
                   "fields":[{"field":"gpus[0].model","message":"email is required","code":"missing_field"}]}})"));

  auto nf = Response::error(ErrorCode::not_found, "no such thing");
  EXPECT_EQ(nf.status, 404);
  EXPECT_TRUE(nlohmann::json::parse(nf.body)["error"]["field"].is_null());
  EXPECT_FALSE(nlohmann::json::parse(nf.body)["error"].contains("fields"));

  auto detail = Response::error(
      gpunex::core::Error::make(ErrorCode::conflict, "taken", "email").with_code("email_taken"));
  EXPECT_EQ(detail.status, 409);
  EXPECT_EQ(nlohmann::json::parse(detail.body)["error"]["code"], "email_taken");

  // Several invalid fields: the first leads (code, message, field), and every one is listed.
  gpunex::core::ErrorList list;
  list.add(gpunex::core::Error::make(ErrorCode::missing_field, "Full name is required", "full_name"));
  list.add(gpunex::core::Error::make(ErrorCode::invalid_field, "GPU 1: number of GPUs must be between 1 and 1,024",
                                     "gpus[0].count"));
  auto many = Response::error(list.status().error());
  EXPECT_EQ(many.status, 400);
  EXPECT_EQ(nlohmann::json::parse(many.body), nlohmann::json::parse(R"({"error":{"code":"missing_field",
      "message":"Full name is required","field":"full_name","fields":[
      {"field":"full_name","message":"Full name is required","code":"missing_field"},
      {"field":"gpus[0].count","message":"GPU 1: number of GPUs must be between 1 and 1,024","code":"invalid_field"}]}})"));

  auto ok = Response::json(201, {{"id", 1}});
  EXPECT_EQ(ok.status, 201);
  EXPECT_EQ(ok.body, R"({"id":1})");
}

// ------------------------------------------------- a tiny blocking client

struct HttpReply {
  int status = 0;
  std::multimap<std::string, std::string> headers;  // lower-case names
  std::string body;
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
};

class Client {
 public:
  explicit Client(std::uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd_ < 0) throw std::runtime_error("socket");
    timeval tv{5, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd_);
      throw std::runtime_error("connect");
    }
  }
  ~Client() { ::close(fd_); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  void send(const std::string& data) {
    std::size_t off = 0;
    while (off < data.size()) {
      auto n = ::send(fd_, data.data() + off, data.size() - off, MSG_NOSIGNAL);
      if (n <= 0) throw std::runtime_error("send");
      off += static_cast<std::size_t>(n);
    }
  }

  //! Reads one response; head: a reply to HEAD (no body whatever Content-Length says).
  std::optional<HttpReply> read(bool head = false) {
    std::size_t end;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (!fill()) return std::nullopt;
    }
    HttpReply r;
    std::string head_text = buf_.substr(0, end);
    buf_.erase(0, end + 4);
    auto line_end = head_text.find("\r\n");
    std::string status_line = head_text.substr(0, line_end);
    r.status = std::stoi(status_line.substr(9, 3));
    std::size_t pos = line_end == std::string::npos ? head_text.size() : line_end + 2;
    while (pos < head_text.size()) {
      auto next = head_text.find("\r\n", pos);
      if (next == std::string::npos) next = head_text.size();
      std::string line = head_text.substr(pos, next - pos);
      auto colon = line.find(':');
      std::string name = line.substr(0, colon);
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      std::string value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.erase(0, 1);
      r.headers.emplace(name, value);
      pos = next + 2;
    }
    std::size_t length = head ? 0 : std::stoul(r.header("content-length").empty() ? "0" : r.header("content-length"));
    while (buf_.size() < length) {
      if (!fill()) return std::nullopt;
    }
    r.body = buf_.substr(0, length);
    buf_.erase(0, length);
    return r;
  }

  //! True when the server closes the connection within the timeout.
  bool closed_within(std::chrono::milliseconds timeout) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return false;
    char c;
    return ::recv(fd_, &c, 1, 0) <= 0;
  }

 private:
  bool fill() {
    char tmp[4096];
    auto n = ::recv(fd_, tmp, sizeof tmp, 0);
    if (n <= 0) return false;
    buf_.append(tmp, static_cast<std::size_t>(n));
    return true;
  }

  int fd_ = -1;
  std::string buf_;
};

//! The server closes `c` after about one second: the timeout under test, set to 1 s.
void expect_closed_after_about_1s(Client& c) {
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(c.closed_within(4000ms));
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(waited, 800ms);
  EXPECT_LE(waited, 3000ms);
}

std::string get(const std::string& path, const std::string& extra = "") {
  return "GET " + path + " HTTP/1.1\r\nHost: test\r\n" + extra + "\r\n";
}

// The server's timeouts are Asio timers. A timer waited on once its deadline has passed (a byte that
// arrived just after a session's header deadline, a worker that ran late) fires at once. The clock guard
// runs this suite under libfaketime, which broke exactly this until scripts/moved-clock.sh preloaded
// tests/support/timerfd_passthrough.cpp; this test is what fails there if it stops doing so.
TEST(AsioTimer, AlreadyDueFires) {
  boost::asio::io_context io;
  boost::asio::steady_timer timer(io);
  timer.expires_at(std::chrono::steady_clock::now() - std::chrono::seconds(1));
  bool fired = false;
  timer.async_wait([&fired](boost::system::error_code ec) { fired = !ec; });
  io.run_for(std::chrono::seconds(3));
  EXPECT_TRUE(fired);
}

// ---------------------------------------------------------------- server

class ServerTest : public ::testing::Test {
 protected:
  void start(ServerOptions opts = {}) {
    opts.host = "127.0.0.1";
    opts.port = 0;
    opts.threads = 2;
    router_.add(Method::get, "/hello", [this](Request& req) {
      last_ip_ = req.remote_ip;
      Response r = text("hello " + req.query_param("name").value_or("world"));
      r.header("Set-Cookie", "a=1; Path=/").header("Set-Cookie", "b=2; Path=/");
      return r;
    });
    router_.add(Method::get, "/items/{id}", [](Request& req) {
      return Response::json(200, {{"id", req.param("id")}, {"path", req.path}});
    });
    router_.add(Method::post, "/echo", [](Request& req) { return text(req.body); });
    router_.add(
        Method::post, "/count",
        [](Request& req) {
          return Response::json(200, {{"length", req.body_length}, {"kept", req.body.size()}});
        },
        kCountedLimit);
    router_.add(Method::get, "/shared", [](Request&) {
      static const auto owner = std::make_shared<const std::string>("shared bytes, not all sent");
      Response r;
      r.content_type = "text/plain";
      r.body = "ignored";
      r.shared_body(owner, std::string_view(*owner).substr(0, 12));
      return r;
    });
    router_.add(Method::get, "/throw", [](Request&) -> Response {
      throw std::runtime_error("secret detail");
    });
    router_.add(Method::get, "/slow", [this](Request&) {
      slow_entered_ = true;
      std::this_thread::sleep_for(300ms);
      return text("slow done");
    });
    opts.body_plan = [this](const Request& head) {
      if (head.path == "/count" && head.header("x-refuse") == "yes") {
        return BodyPlan{std::nullopt, Response::error(ErrorCode::unauthenticated, "refused before the body"), std::nullopt};
      }
      return BodyPlan{router_.match(head).counted_body_limit, std::nullopt, std::nullopt};
    };
    server_ = std::make_unique<Server>(opts, [this](Request& req) {
      auto m = router_.match(req);
      if (m.kind == Router::MatchKind::not_found) return Response::error(ErrorCode::not_found, "no route");
      if (m.kind == Router::MatchKind::method_not_allowed) {
        return Response::error(ErrorCode::method_not_allowed, "method not allowed");
      }
      req.params = m.params;
      return (*m.handler)(req);
    });
    port_ = server_->start();
    ASSERT_NE(port_, 0);
  }
  void TearDown() override {
    if (server_) server_->stop();
  }

  static constexpr std::uint64_t kCountedLimit = 64 * 1024;
  Router router_;
  std::unique_ptr<Server> server_;
  std::uint16_t port_ = 0;
  std::string last_ip_;
  std::atomic<bool> slow_entered_{false};
};

TEST_F(ServerTest, GetReturnsHandlerBodyAndHeaders) {
  start();
  Client c(port_);
  c.send(get("/hello?name=a%20b"));
  auto r = c.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello a b");
  EXPECT_EQ(r->header("content-type"), "text/plain");
  EXPECT_EQ(r->header("server"), "gpunex");
  EXPECT_EQ(r->headers.count("set-cookie"), 2u);
  EXPECT_FALSE(r->header("x-request-id").empty());
  EXPECT_EQ(last_ip_, "127.0.0.1");

  Client c2(port_);
  c2.send(get("/items/x%2Fy"));
  auto j = c2.read();
  ASSERT_TRUE(j);
  EXPECT_EQ(j->status, 200);
  EXPECT_EQ(nlohmann::json::parse(j->body), nlohmann::json::parse(R"({"id":"x/y","path":"/items/x/y"})"));
}

TEST_F(ServerTest, KeepAliveServesTwoRequestsOnOneConnection) {
  start();
  Client c(port_);
  c.send(get("/hello?name=one"));
  auto r1 = c.read();
  ASSERT_TRUE(r1);
  EXPECT_EQ(r1->body, "hello one");
  c.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello");
  auto r2 = c.read();
  ASSERT_TRUE(r2);
  EXPECT_EQ(r2->body, "hello");
  // Connection: close is honoured.
  c.send(get("/hello", "Connection: close\r\n"));
  auto r3 = c.read();
  ASSERT_TRUE(r3);
  EXPECT_EQ(r3->status, 200);
  EXPECT_TRUE(c.closed_within(2000ms));
}

TEST_F(ServerTest, NotFoundIsJsonError) {
  start();
  Client c(port_);
  c.send(get("/nope"));
  auto r = c.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(nlohmann::json::parse(r->body)["error"]["code"], "not_found");
}

TEST_F(ServerTest, BodyOverLimitIs413) {
  ServerOptions o;
  o.body_limit = 1024;
  start(o);
  {
    Client c(port_);
    c.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5000\r\n\r\n" + std::string(5000, 'x'));
    auto r = c.read();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 413);
    EXPECT_EQ(r->header("content-type"), "application/json");
    EXPECT_EQ(nlohmann::json::parse(r->body)["error"]["code"], "payload_too_large");
    EXPECT_TRUE(c.closed_within(2000ms));
  }
  {
    // Chunked: the limit is only hit while reading the body.
    Client c(port_);
    c.send("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n7d0\r\n" +
           std::string(2000, 'y') + "\r\n0\r\n\r\n");
    auto r = c.read();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 413);
    EXPECT_EQ(nlohmann::json::parse(r->body)["error"]["code"], "payload_too_large");
  }
  {
    Client c(port_);  // within the limit still works
    c.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1024\r\n\r\n" + std::string(1024, 'z'));
    auto r = c.read();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body.size(), 1024u);
  }
}

TEST_F(ServerTest, CountedBodyIsCountedNotKeptUpToItsOwnLimit) {
  ServerOptions o;
  o.body_limit = 1024;
  start(o);
  {
    Client c(port_);
    // Far over body_limit, under the route's counted limit; then a chunked one on the same connection.
    c.send("POST /count HTTP/1.1\r\nHost: t\r\nContent-Length: 50000\r\n\r\n" + std::string(50000, 'x'));
    auto r = c.read();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(nlohmann::json::parse(r->body), nlohmann::json::parse(R"({"length":50000,"kept":0})"));
    c.send("POST /count HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nbb8\r\n" + std::string(3000, 'y') +
           "\r\nbb8\r\n" + std::string(3000, 'y') + "\r\n0\r\n\r\n" + get("/hello"));
    auto chunked = c.read();
    ASSERT_TRUE(chunked);
    EXPECT_EQ(nlohmann::json::parse(chunked->body)["length"], 6000);
    auto next = c.read();  // pipelined behind the body: still parsed as its own request
    ASSERT_TRUE(next);
    EXPECT_EQ(next->body, "hello world");
  }
  {
    Client c(port_);
    c.send("POST /count HTTP/1.1\r\nHost: t\r\nContent-Length: 70000\r\n\r\n");
    auto r = c.read();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 413);
  }
  {
    Client c(port_);  // chunked over the counted limit: refused while it streams in
    std::string body;
    for (int i = 0; i < 20; ++i) body += "1000\r\n" + std::string(4096, 'z') + "\r\n";
    c.send("POST /count HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n" + body);
    auto r = c.read();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 413);
  }
  {
    Client c(port_);  // other routes keep body_limit
    c.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5000\r\n\r\n" + std::string(5000, 'x'));
    auto r = c.read();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 413);
  }
}

// body_plan's refusal is the answer as soon as the header is in: none of the body is awaited.
TEST_F(ServerTest, BodyPlanRefusalAnswersBeforeTheBody) {
  start();
  Client c(port_);
  c.send("POST /count HTTP/1.1\r\nHost: t\r\nX-Refuse: yes\r\nContent-Length: 1000000\r\n\r\n");
  auto r = c.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(nlohmann::json::parse(r->body)["error"]["message"], "refused before the body");
  EXPECT_FALSE(r->header("x-request-id").empty());
  EXPECT_TRUE(c.closed_within(2000ms));

  Client ok(port_);  // without the header the same request is counted as usual
  ok.send("POST /count HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc");
  auto o = ok.read();
  ASSERT_TRUE(o);
  EXPECT_EQ(o->status, 200);
  EXPECT_EQ(nlohmann::json::parse(o->body)["length"], 3);
}

TEST_F(ServerTest, SharedBodyIsSentInsteadOfBody) {
  start();
  Client c(port_);
  c.send(get("/shared"));
  auto r = c.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "shared bytes");
  c.send("HEAD /shared HTTP/1.1\r\nHost: t\r\n\r\n");
  auto h = c.read(/*head=*/true);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->header("content-length"), "12");
  c.send(get("/hello"));
  auto g = c.read();
  ASSERT_TRUE(g);
  EXPECT_EQ(g->body, "hello world");
}

TEST_F(ServerTest, MalformedRequestIs400) {
  start();
  Client c(port_);
  c.send("THIS IS NOT HTTP\r\n\r\n");
  auto r = c.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  auto j = nlohmann::json::parse(r->body);
  EXPECT_EQ(j["error"]["code"], "bad_request");
  EXPECT_TRUE(j["error"]["field"].is_null());
  EXPECT_TRUE(c.closed_within(2000ms));

  Client bad_path(port_);
  bad_path.send(get("/items/%zz"));
  auto r2 = bad_path.read();
  ASSERT_TRUE(r2);
  EXPECT_EQ(r2->status, 400);
}

TEST_F(ServerTest, ThrowingHandlerIs500WithoutDetail) {
  start();
  {
    Client c(port_);
    c.send(get("/throw"));
    auto r = c.read();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 500);
    EXPECT_EQ(nlohmann::json::parse(r->body),
              nlohmann::json::parse(R"({"error":{"code":"internal","message":"internal error","field":null}})"));
    EXPECT_EQ(r->body.find("secret"), std::string::npos);
  }
  Client c(port_);
  c.send(get("/hello"));
  auto r = c.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(ServerTest, HeadHasContentLengthButNoBody) {
  start();
  Client c(port_);
  c.send("HEAD /hello HTTP/1.1\r\nHost: t\r\n\r\n");
  auto h = c.read(/*head=*/true);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  EXPECT_EQ(h->header("content-length"), std::to_string(std::string("hello world").size()));
  // Had the server sent a body, it would now be read as the next status line.
  c.send(get("/hello"));
  auto g = c.read();
  ASSERT_TRUE(g);
  EXPECT_EQ(g->status, 200);
  EXPECT_EQ(g->body, "hello world");
}

TEST_F(ServerTest, IdleConnectionClosesAfterIdleTimeout) {
  ServerOptions o;
  o.idle_timeout = 1s;
  start(o);
  Client c(port_);
  c.send(get("/hello"));
  ASSERT_TRUE(c.read());
  expect_closed_after_about_1s(c);
}

TEST_F(ServerTest, HalfHeaderIsCutOffAfterHeaderTimeout) {
  ServerOptions o;
  o.header_timeout = 1s;
  o.read_timeout = 30s;
  o.idle_timeout = 30s;
  start(o);
  Client c(port_);
  c.send("GET /hello HTTP/1.1\r\nHost: test\r\nX-Half: ");  // and nothing more
  expect_closed_after_about_1s(c);
  // A client that trickles its header byte by byte does not get a fresh timeout per byte.
  Client slow(port_);
  const auto t0 = std::chrono::steady_clock::now();
  bool closed = false;
  for (char ch : std::string("GET /hello HTTP/1.1\r\nHost: test\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")) {
    try {
      slow.send(std::string(1, ch));
    } catch (const std::runtime_error&) {
      closed = true;
      break;
    }
    if (slow.closed_within(200ms)) {
      closed = true;
      break;
    }
  }
  EXPECT_TRUE(closed);
  EXPECT_LE(std::chrono::steady_clock::now() - t0, 3000ms);
}

TEST_F(ServerTest, StalledBodyIsCutOffAfterReadTimeout) {
  ServerOptions o;
  o.header_timeout = 30s;
  o.read_timeout = 1s;
  o.idle_timeout = 30s;
  start(o);
  Client c(port_);
  c.send("POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: 100\r\n\r\n" + std::string(10, 'x'));
  expect_closed_after_about_1s(c);
  // The same body sent whole in time is answered.
  Client ok(port_);
  ok.send("POST /echo HTTP/1.1\r\nHost: test\r\nContent-Length: 10\r\n\r\n" + std::string(10, 'y'));
  auto r = ok.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, std::string(10, 'y'));
}

TEST_F(ServerTest, StopLetsRequestInFlightFinish) {
  start();
  Client idle(port_);
  idle.send(get("/hello"));
  ASSERT_TRUE(idle.read());

  Client c(port_);
  c.send(get("/slow"));
  while (!slow_entered_) std::this_thread::sleep_for(5ms);
  auto t0 = std::chrono::steady_clock::now();
  auto reply = std::async(std::launch::async, [&c] { return c.read(); });
  server_->stop();
  auto r = reply.get();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "slow done");
  EXPECT_EQ(r->header("connection"), "close");
  // The idle connection was closed rather than waited for (grace is 10 s).
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
  EXPECT_TRUE(idle.closed_within(100ms));
  server_->stop();  // twice is fine
  server_->wait();
}

TEST_F(ServerTest, NoContentResponseHasNoBody) {
  router_.add(Method::del, "/gone", [](Request&) {
    Response r = text("ignored");
    r.status = 204;
    return r;
  });
  router_.add(Method::get, "/bad-status", [](Request&) {
    Response r = text("x");
    r.status = 1000;
    return r;
  });
  start();
  Client c(port_);
  c.send("DELETE /gone HTTP/1.1\r\nHost: t\r\n\r\n");
  auto r = c.read();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 204);
  EXPECT_EQ(r->body, "");
  c.send(get("/bad-status"));  // an impossible status is the handler's bug: 500
  auto bad = c.read();
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 500);
  c.send(get("/hello"));  // and the connection is still usable
  auto ok = c.read();
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->body, "hello world");
}

TEST(ServerHost, BindsLocalhostByName) {
  ServerOptions o;
  o.host = "localhost";
  o.port = 0;
  o.threads = 1;
  Server server(o, [](Request&) { return text("named"); });
  auto port = server.start();
  namespace net = boost::asio;
  net::io_context ioc;
  net::ip::tcp::resolver resolver(ioc);
  net::ip::tcp::socket socket(ioc);
  net::connect(socket, resolver.resolve("localhost", std::to_string(port)));
  std::string req = "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  net::write(socket, net::buffer(req));
  std::string reply;
  boost::system::error_code ec;
  net::read(socket, net::dynamic_buffer(reply), ec);
  EXPECT_EQ(ec, net::error::eof);
  EXPECT_EQ(reply.rfind("HTTP/1.1 200", 0), 0u) << reply;
  EXPECT_EQ(reply.substr(reply.size() - 5), "named");
}

// Each I/O thread runs its own event loop and the connections are dealt to them in turn: every loop
// serves its connections (a loop with no connection yet must not have ended), and an answer given later
// from a thread of the handler's own reaches the connection on its loop.
TEST(ServerLoops, EveryLoopServesItsConnectionsAndAnswersFromOtherThreads) {
  ServerOptions o;
  o.host = "127.0.0.1";
  o.port = 0;
  o.threads = 3;
  std::mutex mu;
  std::set<std::thread::id> io_threads;
  std::vector<std::thread> answerers;
  Server server(o, AsyncHandler([&](Request& req, Reply reply) {
                  std::lock_guard lock(mu);
                  io_threads.insert(std::this_thread::get_id());
                  if (req.path != "/later") return reply(text("now"));
                  answerers.emplace_back([reply = std::move(reply)] {
                    std::this_thread::sleep_for(20ms);
                    reply(text("later"));
                  });
                }));
  const auto port = server.start();
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < 7; ++i) clients.push_back(std::make_unique<Client>(port));  // all open at once
  for (std::size_t i = 0; i < clients.size(); ++i) {
    const bool later = i % 2 == 1;
    clients[i]->send(get(later ? "/later" : "/now"));
    auto r = clients[i]->read();
    ASSERT_TRUE(r) << "connection " << i << " was not answered";
    EXPECT_EQ(r->body, later ? "later" : "now");
    clients[i]->send(get("/now"));  // and it stays usable after an answer from elsewhere
    auto again = clients[i]->read();
    ASSERT_TRUE(again) << "connection " << i;
    EXPECT_EQ(again->body, "now");
  }
  EXPECT_EQ(io_threads.size(), 3u);  // seven connections, dealt in turn: each loop served some
  server.stop();
  for (auto& t : answerers) t.join();
}

TEST(ServerHost, BadHostThrowsAndStopIsStillSafe) {
  ServerOptions o;
  o.host = "203.0.113.7";  // TEST-NET-3: not an address of this machine
  o.port = 0;
  Server server(o, [](Request&) { return text(""); });
  EXPECT_THROW(server.start(), std::exception);
  server.stop();
  server.wait();
}

// ------------------------------------------------------------------- TLS

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "gpunex-http-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

TEST(ServerTls, ServesOneRequestOverTls) {
  if (std::system("command -v openssl >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "the openssl command-line tool is not installed";
  }
  TempDir dir;
  auto cert = (dir.path() / "cert.pem").string();
  auto key = (dir.path() / "key.pem").string();
  std::string cmd = "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
                    "-subj /CN=localhost -keyout '" + key + "' -out '" + cert + "' >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "openssl could not make a certificate";

  ServerOptions o;
  o.host = "127.0.0.1";
  o.port = 0;
  o.threads = 1;
  o.tls = gpunex::http::TlsOptions{cert, key};
  Server server(o, [](Request& req) {
    return Response::json(200, {{"tls", req.tls}, {"path", req.path}});
  });
  auto port = server.start();

  namespace net = boost::asio;
  net::io_context ioc;
  net::ssl::context ctx(net::ssl::context::tls_client);
  ctx.set_verify_mode(net::ssl::verify_none);
  net::ssl::stream<net::ip::tcp::socket> stream(ioc, ctx);
  stream.next_layer().connect({net::ip::make_address("127.0.0.1"), port});
  stream.handshake(net::ssl::stream_base::client);
  std::string req = "GET /secure HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
  net::write(stream, net::buffer(req));
  std::string reply;
  boost::system::error_code ec;
  char buf[4096];
  for (;;) {
    auto n = stream.read_some(net::buffer(buf), ec);
    reply.append(buf, n);
    if (ec) break;
  }
  EXPECT_TRUE(ec == net::error::eof || ec == net::ssl::error::stream_truncated) << ec.message();
  ASSERT_EQ(reply.rfind("HTTP/1.1 200", 0), 0u) << reply;
  auto body = reply.substr(reply.find("\r\n\r\n") + 4);
  EXPECT_EQ(nlohmann::json::parse(body), nlohmann::json::parse(R"({"tls":true,"path":"/secure"})"));
  server.stop();
}

}  // namespace
