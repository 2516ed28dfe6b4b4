// One HTTP/1.1 connection of http::Server (Boost.Beast), plain or TLS: read a header, plan and read
// the body, run the handler, write the answer, keep the connection alive or close it politely.

#include <array>
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "server/http/beast_message.hpp"
#include "server/http/server_core.hpp"

namespace gpunex::http {

namespace {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = boost::asio::ip::tcp;
using detail::make_error;
using detail::WireResponse;

// Bytes asked of each socket read while a body streams in. Beast's own read loop asks only for the
// buffer's spare capacity, which stays near the 4 KiB that the header read reserved: a system call and
// a handler per 4 KiB. Counted bodies (large uploads) get bigger reads still.
constexpr std::size_t body_read_size = 64 * 1024;
constexpr std::size_t counted_body_read_size = 512 * 1024;
// How long a closing connection drains what the client still sends, so that
// our last response is not destroyed by a TCP reset.
constexpr std::chrono::seconds linger_time{1};

// The streams of a connection, on its I/O thread's loop (ConnectionExecutor).
using PlainStream = beast::basic_stream<tcp, ConnectionExecutor>;
using TlsStream = beast::ssl_stream<PlainStream>;

std::string peer_ip(const ConnectionSocket& socket) {
  beast::error_code ec;
  auto ep = socket.remote_endpoint(ec);
  if (ec) return {};
  auto addr = ep.address();
  if (addr.is_v6() && addr.to_v6().is_v4_mapped()) {
    return net::ip::make_address_v4(net::ip::v4_mapped, addr.to_v6()).to_string();
  }
  return addr.to_string();
}

// One connection. Stream is PlainStream or TlsStream. Every step runs on the connection's loop, one
// at a time; each asynchronous step holds the session alive.
template <class Stream>
class Session : public SessionBase, public std::enable_shared_from_this<Session<Stream>> {
  static constexpr bool is_tls = !std::is_same_v<Stream, PlainStream>;

 public:
  template <class... Args>
  Session(ServerCore& server, std::string ip, ConnectionSocket&& socket, Args&&... args)
      : server_(server), remote_ip_(std::move(ip)), stream_(std::move(socket), std::forward<Args>(args)...) {}

  ~Session() override {
    server_.remove_session(this);
    server_.release_connection(remote_ip_);
  }

  void run() {
    server_.add_session(this, this->weak_from_this());
    // Start on the connection's loop: everything after runs there too.
    net::dispatch(stream_.get_executor(), [self = this->shared_from_this()] { self->start(); });
  }

  void request_stop() override {
    net::post(stream_.get_executor(), [self = this->shared_from_this()] {
      if (self->waiting_) self->lowest().close();
    });
  }

 private:
  PlainStream& lowest() { return beast::get_lowest_layer(stream_); }

  // Reading a request.
  void start();
  void wait_for_request();
  void read_header();
  void on_header(beast::error_code ec);
  void read_body();
  void parse_body();
  void on_read_error(beast::error_code ec);

  // Answering it.
  void identify(Request& req) const;
  void handle();
  void respond(Response r, bool keep_alive, unsigned version, bool head, const std::string& request_id);
  void send(WireResponse&& res);

  // Closing the connection.
  void close();
  void drain();

  ServerCore& server_;
  std::string remote_ip_;
  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<detail::RequestBody>> parser_;
  WireResponse response_;
  std::string response_head_;  // response_'s header block, as written
  std::array<char, 4096> drain_buf_{};
  std::size_t served_ = 0;
  bool waiting_ = true;  // between requests: stop() may close it at once
};

template <class Stream>
void Session<Stream>::start() {
  if constexpr (is_tls) {
    lowest().expires_after(server_.options_.header_timeout);
    stream_.async_handshake(ssl::stream_base::server, [self = this->shared_from_this()](beast::error_code ec) {
      if (ec) return self->lowest().close();
      self->wait_for_request();
    });
  } else {
    wait_for_request();
  }
}

// Waits for the first byte of the next request: the idle (keep-alive) phase.
template <class Stream>
void Session<Stream>::wait_for_request() {
  waiting_ = true;
  if (server_.stopping_) return lowest().close();
  if (buffer_.size() > 0) return read_header();  // pipelined bytes already here
  lowest().expires_after(served_ == 0 ? server_.options_.header_timeout : server_.options_.idle_timeout);
  stream_.async_read_some(buffer_.prepare(4096),
                          [self = this->shared_from_this()](beast::error_code ec, std::size_t n) {
                            if (ec) return self->lowest().close();
                            self->buffer_.commit(n);
                            self->read_header();
                          });
}

template <class Stream>
void Session<Stream>::read_header() {
  parser_.emplace();
  parser_->header_limit(detail::header_limit);
  // No limit until on_header knows the route: a counted body may be larger than body_limit.
  parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
  lowest().expires_after(server_.options_.header_timeout);
  bhttp::async_read_header(
      stream_, buffer_, *parser_,
      [self = this->shared_from_this()](beast::error_code ec, std::size_t) { self->on_header(ec); });
}

// The header is in: the body plan says whether the route refuses the request, and whether its body is
// kept (under body_limit) or only counted; then 100 Continue when asked, and the body.
template <class Stream>
void Session<Stream>::on_header(beast::error_code ec) {
  if (ec) return on_read_error(ec);
  waiting_ = false;
  auto& req = parser_->get();
  if (parser_->is_done()) return handle();
  std::optional<std::uint64_t> counted, kept;
  if (server_.options_.body_plan) {
    // A bad target is left to handle(), which answers it.
    if (auto head = detail::request_from_header(req)) {
      identify(*head);
      auto plan = server_.options_.body_plan(*head);
      if (plan.refuse) {
        return respond(std::move(*plan.refuse), /*keep_alive=*/false, req.version(), false, head->request_id);
      }
      counted = plan.counted_limit;
      kept = plan.kept_limit;
    }
  }
  const std::uint64_t limit = counted.value_or(kept.value_or(server_.options_.body_limit));
  if (parser_->content_length().value_or(0) > limit) return on_read_error(bhttp::error::body_limit);
  parser_->body_limit(limit);  // before any body octet: chunked bodies are checked as they arrive
  req.body().keep = !counted;
  if (beast::iequals(req[bhttp::field::expect], "100-continue")) {
    static constexpr std::string_view continue_line = "HTTP/1.1 100 Continue\r\n\r\n";
    lowest().expires_after(server_.options_.read_timeout);
    return net::async_write(stream_, net::buffer(continue_line.data(), continue_line.size()),
                            [self = this->shared_from_this()](beast::error_code ec2, std::size_t) {
                              if (ec2) return self->lowest().close();
                              self->read_body();
                            });
  }
  read_body();
}

template <class Stream>
void Session<Stream>::read_body() {
  parser_->eager(true);
  lowest().expires_after(server_.options_.read_timeout);
  parse_body();
}

// Feeds what the buffer holds to the parser, then reads more until the body is complete.
template <class Stream>
void Session<Stream>::parse_body() {
  while (buffer_.size() > 0 && !parser_->is_done()) {
    beast::error_code ec;
    const std::size_t used = parser_->put(buffer_.data(), ec);
    buffer_.consume(used);
    if (ec == bhttp::error::need_more) break;
    if (ec) return on_read_error(ec);
    if (used == 0) break;
  }
  if (parser_->is_done()) return handle();
  const bool counted = !parser_->get().body().keep;
  stream_.async_read_some(buffer_.prepare(counted ? counted_body_read_size : body_read_size),
                          [self = this->shared_from_this()](beast::error_code ec, std::size_t n) {
                            if (ec == net::error::eof) ec = bhttp::error::partial_message;
                            if (ec) return self->on_read_error(ec);
                            self->buffer_.commit(n);
                            self->parse_body();
                          });
}

template <class Stream>
void Session<Stream>::on_read_error(beast::error_code ec) {
  if (ec == bhttp::error::body_limit) {
    return send(make_error(11, core::ErrorCode::payload_too_large, "request body too large"));
  }
  if (ec == bhttp::error::header_limit) {
    return send(make_error(11, core::ErrorCode::bad_request, "request header too large"));
  }
  // The peer went away, timed out, or we closed it: nothing to answer.
  if (ec == bhttp::error::end_of_stream || ec == net::error::eof || ec == beast::error::timeout ||
      ec == net::error::operation_aborted || ec == net::error::connection_reset || ec == net::error::bad_descriptor ||
      ec == bhttp::error::partial_message || ec.category() == net::error::get_ssl_category() ||
      ec == net::ssl::error::stream_truncated) {
    return lowest().close();
  }
  send(make_error(11, core::ErrorCode::bad_request, "malformed HTTP request"));
}

// What the connection knows of a request: TLS or not, the peer, and its request id (the client's
// when short and plain, else a new one).
template <class Stream>
void Session<Stream>::identify(Request& req) const {
  req.tls = is_tls;
  req.remote_ip = remote_ip_;
  auto id = req.header("x-request-id");
  req.request_id = detail::valid_request_id(id) ? id : detail::new_request_id();
}

// Parses the Beast request into a Request and runs the handler, which answers now or later.
template <class Stream>
void Session<Stream>::handle() {
  auto& msg = parser_->get();
  ++served_;
  const bool keep_alive = msg.keep_alive();
  const unsigned version = msg.version();
  auto parsed = detail::request_from_message(std::move(msg));
  if (!parsed) return send(make_error(version, core::ErrorCode::bad_request, parsed.error().message));
  Request req = std::move(*parsed);
  identify(req);

  // The reply may come from another thread: it hops onto this connection's loop (at once when the
  // handler answers inline, which is already there).
  auto replied = std::make_shared<std::atomic<bool>>(false);
  Reply reply = [self = this->shared_from_this(), replied, keep_alive, version, head = req.method == Method::head,
                 request_id = req.request_id](Response r) {
    if (replied->exchange(true)) return;
    net::dispatch(self->stream_.get_executor(),
                  [self, r = std::move(r), keep_alive, version, head, request_id]() mutable {
                    self->respond(std::move(r), keep_alive, version, head, request_id);
                  });
  };
  try {
    server_.handler_(req, reply);
  } catch (...) {
    // Never leak what went wrong to the client; the connection stays usable.
    if (!replied->exchange(true)) {
      auto res = make_error(version, core::ErrorCode::internal, "internal error");
      res.keep_alive = keep_alive;
      send(std::move(res));
    }
  }
}

// Turns the handler's Response into the answer and writes it.
template <class Stream>
void Session<Stream>::respond(Response r, bool keep_alive, unsigned version, bool head, const std::string& request_id) {
  WireResponse res;
  try {
    res = detail::to_wire(std::move(r), version, request_id, keep_alive, head);
  } catch (...) {
    res = make_error(version, core::ErrorCode::internal, "internal error");
    res.keep_alive = keep_alive;
  }
  send(std::move(res));
}

template <class Stream>
void Session<Stream>::send(WireResponse&& res) {
  waiting_ = false;
  if (server_.stopping_) res.keep_alive = false;
  response_ = std::move(res);
  response_head_ = response_.header_block();
  const std::array<net::const_buffer, 2> bytes{
      net::buffer(response_head_),
      response_.send_body ? net::buffer(response_.body().data(), response_.body().size()) : net::const_buffer()};
  lowest().expires_after(server_.options_.read_timeout);
  net::async_write(stream_, bytes, [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
    if (ec) return self->lowest().close();
    if (!self->response_.keep_alive) return self->close();
    self->response_ = {};
    // A large body's read buffer is not kept for the rest of the connection.
    if (self->buffer_.size() == 0 && self->buffer_.capacity() > body_read_size) {
      self->buffer_.shrink_to_fit();
    }
    self->wait_for_request();
  });
}

// Ends the connection politely: TLS close_notify, or a half-close that drains
// the client's unread bytes so it still receives our last response.
template <class Stream>
void Session<Stream>::close() {
  if constexpr (is_tls) {
    lowest().expires_after(linger_time);
    stream_.async_shutdown([self = this->shared_from_this()](beast::error_code) { self->lowest().close(); });
  } else {
    beast::error_code ec;
    lowest().socket().shutdown(ConnectionSocket::shutdown_send, ec);
    if (ec) return lowest().close();
    lowest().expires_after(linger_time);
    drain();
  }
}

template <class Stream>
void Session<Stream>::drain() {
  lowest().async_read_some(net::buffer(drain_buf_),
                           [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                             if (ec) return self->lowest().close();
                             self->drain();
                           });
}

}  // namespace

void start_session(ServerCore& server, ConnectionSocket socket) {
  std::string ip = peer_ip(socket);
  if (auto cap = server.reserve_connection(ip)) {
    server.report_refusal(ip, *cap);
    beast::error_code ignored;
    socket.close(ignored);
    return;
  }
  // From here the session owns the slot and gives it back when it ends.
  if (auto tls = server.current_tls()) {
    std::make_shared<Session<TlsStream>>(server, std::move(ip), std::move(socket), *tls)->run();
  } else {
    std::make_shared<Session<PlainStream>>(server, std::move(ip), std::move(socket))->run();
  }
}

}  // namespace gpunex::http
