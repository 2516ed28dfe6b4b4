// The Boost.Beast HTTP/1.1 server behind http::Server. Beast stays in this one
// translation unit: it is slow to compile and nothing else needs it.

#include <algorithm>
#include <atomic>
#include <cctype>
#include <condition_variable>
#include <exception>
#include <limits>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_map>

#include <openssl/ssl.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "server/http/http.hpp"

namespace gpunex::http {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = boost::asio::ip::tcp;

namespace {

constexpr std::uint32_t header_limit = 16 * 1024;
// Bytes asked of each socket read while a body streams in. Beast's own read loop asks only for the
// buffer's spare capacity, which stays near the 4 KiB that the header read reserved: a system call and
// a handler per 4 KiB. Counted bodies (large uploads) get bigger reads still.
constexpr std::size_t body_read_size = 64 * 1024;
constexpr std::size_t counted_body_read_size = 512 * 1024;
// How long a closing connection drains what the client still sends, so that
// our last response is not destroyed by a TCP reset.
constexpr std::chrono::seconds linger_time{1};

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Header names and values from handlers must not smuggle in new lines.
bool safe_header(std::string_view name, std::string_view value) {
  auto bad = [](char c) { return c == '\r' || c == '\n' || c == '\0'; };
  return !name.empty() && std::none_of(name.begin(), name.end(), bad) &&
         std::none_of(value.begin(), value.end(), bad);
}

// A client's request id is kept only when it is short and plain.
bool valid_request_id(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  return std::all_of(id.begin(), id.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == ':';
  });
}

std::string new_request_id() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char digits[] = "0123456789abcdef";
  std::string id(16, '0');
  auto v = rng();
  for (auto& c : id) {
    c = digits[v & 0xF];
    v >>= 4;
  }
  return id;
}

std::string peer_ip(const tcp::socket& socket) {
  beast::error_code ec;
  auto ep = socket.remote_endpoint(ec);
  if (ec) return {};
  auto addr = ep.address();
  if (addr.is_v6() && addr.to_v6().is_v4_mapped()) {
    return net::ip::make_address_v4(net::ip::v4_mapped, addr.to_v6()).to_string();
  }
  return addr.to_string();
}

// A request body: kept in a string (under ServerOptions::body_limit), or only counted and discarded as it
// streams in (ServerOptions::body_plan), so a large upload never sits in memory.
struct RequestBody {
  struct value_type {
    std::string bytes;
    std::uint64_t length = 0;
    bool keep = true;
  };

  class reader {
   public:
    template <bool isRequest, class Fields>
    reader(bhttp::header<isRequest, Fields>&, value_type& body) : body_(body) {}

    void init(const boost::optional<std::uint64_t>& length, beast::error_code& ec) {
      ec = {};
      if (!body_.keep || !length) return;
      if (*length > body_.bytes.max_size()) {
        ec = bhttp::error::buffer_overflow;
        return;
      }
      body_.bytes.reserve(static_cast<std::size_t>(*length));
    }

    template <class ConstBufferSequence>
    std::size_t put(const ConstBufferSequence& buffers, beast::error_code& ec) {
      ec = {};
      const std::size_t n = net::buffer_size(buffers);
      body_.length += n;
      if (!body_.keep) return n;
      const std::size_t old = body_.bytes.size();
      if (n > body_.bytes.max_size() - old) {
        ec = bhttp::error::buffer_overflow;
        return 0;
      }
      body_.bytes.resize(old + n);
      net::buffer_copy(net::buffer(body_.bytes.data() + old, n), buffers);
      return n;
    }

    void finish(beast::error_code& ec) { ec = {}; }

   private:
    value_type& body_;
  };
};

// A response body: bytes the message owns, or a view into memory that a shared owner keeps alive
// (Response::shared_body), which goes to the socket without a copy.
struct ResponseBody {
  struct value_type {
    std::string owned;
    std::shared_ptr<const void> owner;
    std::string_view shared;

    std::string_view bytes() const { return owner ? shared : std::string_view(owned); }
    void clear() {
      owned.clear();
      owner.reset();
      shared = {};
    }
  };

  static std::uint64_t size(const value_type& body) { return body.bytes().size(); }

  class writer {
   public:
    using const_buffers_type = net::const_buffer;

    template <bool isRequest, class Fields>
    writer(const bhttp::header<isRequest, Fields>&, const value_type& body) : body_(body) {}

    void init(beast::error_code& ec) { ec = {}; }

    boost::optional<std::pair<const_buffers_type, bool>> get(beast::error_code& ec) {
      ec = {};
      const std::string_view b = body_.bytes();
      return {{const_buffers_type(b.data(), b.size()), false}};
    }

   private:
    const value_type& body_;
  };
};

using BeastRequest = bhttp::request<RequestBody>;
using BeastResponse = bhttp::response<ResponseBody>;

BeastResponse make_error(unsigned version, core::ErrorCode code, std::string message) {
  Response r = Response::error(code, std::move(message));
  BeastResponse res{static_cast<bhttp::status>(r.status), version};
  res.set(bhttp::field::server, "gpunex");
  res.set(bhttp::field::content_type, r.content_type);
  res.body().owned = std::move(r.body);
  res.keep_alive(false);
  res.prepare_payload();
  return res;
}

// A Beast request header as a Request (method, target, path, query, headers; no body).
core::Result<Request> request_from_header(const bhttp::request_header<>& msg) {
  Request req;
  req.method = parse_method(std::string_view(msg.method_string().data(), msg.method_string().size()));
  req.target = std::string(msg.target());
  for (const auto& f : msg) {
    req.headers.emplace(lower(std::string_view(f.name_string().data(), f.name_string().size())),
                        std::string(f.value()));
  }
  std::string_view target = req.target;
  auto q = target.find('?');
  req.raw_path = std::string(target.substr(0, q));
  if (q != std::string_view::npos) req.query = parse_query(target.substr(q + 1));
  auto decoded = percent_decode(req.raw_path, false);
  if (!decoded || req.raw_path.empty() || req.raw_path.front() != '/') {
    return core::Error::make(core::ErrorCode::bad_request, "bad request target");
  }
  req.path = std::move(*decoded);
  return req;
}

// Turns a parsed Beast message into a Request (the header's parts and the body).
core::Result<Request> request_from_message(BeastRequest&& msg) {
  auto req = request_from_header(msg);
  if (!req) return req;
  req->body_length = msg.body().length;
  req->body = std::move(msg.body().bytes);
  return req;
}

}  // namespace

core::Result<Request> parse_raw_request(std::string_view raw, std::size_t body_limit) {
  bhttp::request_parser<RequestBody> parser;
  parser.header_limit(16 * 1024);
  parser.body_limit(body_limit);
  parser.eager(true);
  beast::error_code ec;
  std::size_t offset = 0;
  while (!ec && !parser.is_done() && offset < raw.size()) {
    std::size_t used = parser.put(net::buffer(raw.data() + offset, raw.size() - offset), ec);
    if (used == 0) break;
    offset += used;
  }
  if (ec == bhttp::error::need_more) ec = {};
  if (!ec && !parser.is_done() && parser.got_some()) parser.put_eof(ec);
  if (ec || !parser.is_done()) {
    return core::Error::make(core::ErrorCode::bad_request, "malformed HTTP request");
  }
  return request_from_message(parser.release());
}

// What stop() needs from a session, independent of the stream type.
class SessionBase {
 public:
  virtual ~SessionBase() = default;
  //! Closes the connection if it is between requests; otherwise it closes after its response.
  virtual void request_stop() = 0;
};

// All server state. Not Server::Impl itself: the sessions below must name it,
// and Impl is private to Server.
struct ServerCore {
  ServerCore(ServerOptions options, AsyncHandler handler)
      : options_(std::move(options)),
        handler_(std::move(handler)),
        threads_count_(options_.threads > 0 ? options_.threads
                                            : std::max(1, static_cast<int>(std::thread::hardware_concurrency()))),
        ioc_(threads_count_),
        acceptor_(net::make_strand(ioc_)),
        retry_timer_(acceptor_.get_executor()) {}

  void do_accept();
  void on_accept(beast::error_code ec, tcp::socket socket);

  void add_session(SessionBase* s, std::weak_ptr<SessionBase> w) {
    std::lock_guard lock(sessions_mutex_);
    sessions_.emplace(s, std::move(w));
  }
  void remove_session(SessionBase* s) {
    std::lock_guard lock(sessions_mutex_);
    sessions_.erase(s);
    if (sessions_.empty()) sessions_cv_.notify_all();
  }

  ServerOptions options_;
  AsyncHandler handler_;
  int threads_count_;
  std::atomic<bool> stopping_{false};

  // Declared before ioc_: sessions destroyed with the io_context still use them.
  std::mutex sessions_mutex_;
  std::condition_variable sessions_cv_;
  std::unordered_map<SessionBase*, std::weak_ptr<SessionBase>> sessions_;
  std::optional<ssl::context> tls_;

  net::io_context ioc_;
  tcp::acceptor acceptor_;
  net::steady_timer retry_timer_;
  std::vector<std::thread> threads_;

  std::mutex state_mutex_;  // serialises start() and stop()
  std::condition_variable state_cv_;
  bool started_ = false;
  bool stopped_ = false;
};

struct Server::Impl : ServerCore {
  using ServerCore::ServerCore;
};

namespace {

// One connection. Stream is beast::tcp_stream or beast::ssl_stream<beast::tcp_stream>.
template <class Stream>
class Session : public SessionBase, public std::enable_shared_from_this<Session<Stream>> {
  static constexpr bool is_tls = !std::is_same_v<Stream, beast::tcp_stream>;

 public:
  template <class... Args>
  Session(ServerCore& server, tcp::socket&& socket, Args&&... args)
      : server_(server), remote_ip_(peer_ip(socket)), stream_(std::move(socket), std::forward<Args>(args)...) {}

  ~Session() override { server_.remove_session(this); }

  void run() {
    server_.add_session(this, this->weak_from_this());
    // Start on the connection's strand: everything after runs there too.
    net::dispatch(stream_.get_executor(), [self = this->shared_from_this()] { self->start(); });
  }

  void request_stop() override {
    net::post(stream_.get_executor(), [self = this->shared_from_this()] {
      if (self->waiting_) self->lowest().close();
    });
  }

 private:
  beast::tcp_stream& lowest() { return beast::get_lowest_layer(stream_); }

  void start() {
    if constexpr (is_tls) {
      lowest().expires_after(server_.options_.header_timeout);
      stream_.async_handshake(ssl::stream_base::server,
                              [self = this->shared_from_this()](beast::error_code ec) {
                                if (ec) return self->lowest().close();
                                self->wait_for_request();
                              });
    } else {
      wait_for_request();
    }
  }

  // Waits for the first byte of the next request: the idle (keep-alive) phase.
  void wait_for_request() {
    waiting_ = true;
    if (server_.stopping_) return lowest().close();
    if (buffer_.size() > 0) return read_header();  // pipelined bytes already here
    lowest().expires_after(served_ == 0 ? server_.options_.header_timeout
                                        : server_.options_.idle_timeout);
    stream_.async_read_some(buffer_.prepare(4096), [self = this->shared_from_this()](
                                                       beast::error_code ec, std::size_t n) {
      if (ec) return self->lowest().close();
      self->buffer_.commit(n);
      self->read_header();
    });
  }

  void read_header() {
    parser_.emplace();
    parser_->header_limit(header_limit);
    // No limit until on_header knows the route: a counted body may be larger than body_limit.
    parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
    lowest().expires_after(server_.options_.header_timeout);
    bhttp::async_read_header(stream_, buffer_, *parser_,
                             [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                               self->on_header(ec);
                             });
  }

  void on_header(beast::error_code ec) {
    if (ec) return on_read_error(ec);
    waiting_ = false;
    auto& req = parser_->get();
    if (parser_->is_done()) return handle();
    std::optional<std::uint64_t> counted;
    if (server_.options_.body_plan) {
      // A bad target is left to handle(), which answers it.
      if (auto head = request_from_header(req)) {
        head->tls = is_tls;
        head->remote_ip = remote_ip_;
        auto id = head->header("x-request-id");
        head->request_id = valid_request_id(id) ? id : new_request_id();
        auto plan = server_.options_.body_plan(*head);
        if (plan.refuse) {
          return respond(std::move(*plan.refuse), /*keep_alive=*/false, req.version(), false, head->request_id);
        }
        counted = plan.counted_limit;
      }
    }
    const std::uint64_t limit = counted.value_or(server_.options_.body_limit);
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

  void read_body() {
    parser_->eager(true);
    lowest().expires_after(server_.options_.read_timeout);
    parse_body();
  }

  // Feeds what the buffer holds to the parser, then reads more until the body is complete.
  void parse_body() {
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

  void on_read_error(beast::error_code ec) {
    if (ec == bhttp::error::body_limit) {
      return send(make_error(11, core::ErrorCode::payload_too_large, "request body too large"));
    }
    if (ec == bhttp::error::header_limit) {
      return send(make_error(11, core::ErrorCode::bad_request, "request header too large"));
    }
    // The peer went away, timed out, or we closed it: nothing to answer.
    if (ec == bhttp::error::end_of_stream || ec == net::error::eof ||
        ec == beast::error::timeout || ec == net::error::operation_aborted ||
        ec == net::error::connection_reset || ec == net::error::bad_descriptor ||
        ec == bhttp::error::partial_message || ec.category() == net::error::get_ssl_category() ||
        ec == net::ssl::error::stream_truncated) {
      return lowest().close();
    }
    send(make_error(11, core::ErrorCode::bad_request, "malformed HTTP request"));
  }

  // Parses the Beast request into a Request and runs the handler, which answers now or later.
  void handle() {
    auto& msg = parser_->get();
    ++served_;
    const bool keep_alive = msg.keep_alive();
    const unsigned version = msg.version();
    auto parsed = request_from_message(std::move(msg));
    if (!parsed) return send(make_error(version, core::ErrorCode::bad_request, parsed.error().message));
    Request req = std::move(*parsed);
    req.tls = is_tls;
    req.remote_ip = remote_ip_;
    auto id = req.header("x-request-id");
    req.request_id = valid_request_id(id) ? id : new_request_id();

    // The reply may come from another thread: it hops onto this connection's strand (at once when the
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
        res.keep_alive(keep_alive && !server_.stopping_);
        send(std::move(res));
      }
    }
  }

  // Turns the handler's Response into the Beast message and writes it.
  void respond(Response r, bool keep_alive, unsigned version, bool head, const std::string& request_id) {
    BeastResponse res;
    try {
      res.result(static_cast<unsigned>(r.status));
      res.version(version);
      res.set(bhttp::field::server, "gpunex");
      if (!r.content_type.empty()) res.set(bhttp::field::content_type, r.content_type);
      bool has_request_id = false;
      for (const auto& [name, value] : r.headers) {
        if (!safe_header(name, value)) continue;
        if (beast::iequals(name, "x-request-id")) has_request_id = true;
        res.insert(name, value);
      }
      if (!has_request_id) res.set("X-Request-Id", request_id);
      res.body().owned = std::move(r.body);
      res.body().owner = std::move(r.body_owner);
      res.body().shared = r.shared;
      // These statuses carry no body (and Beast refuses to frame one).
      if (r.status < 200 || r.status == 204 || r.status == 304) res.body().clear();
      res.keep_alive(keep_alive && !server_.stopping_);
      res.prepare_payload();
    } catch (...) {
      res = make_error(version, core::ErrorCode::internal, "internal error");
      res.keep_alive(keep_alive && !server_.stopping_);
    }
    // HEAD: the GET's Content-Length, no body.
    if (head) res.body().clear();
    send(std::move(res));
  }

  void send(BeastResponse&& res) {
    waiting_ = false;
    if (server_.stopping_) res.keep_alive(false);
    response_ = std::move(res);
    lowest().expires_after(server_.options_.read_timeout);
    bhttp::async_write(stream_, response_,
                       [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                         if (ec) return self->lowest().close();
                         if (!self->response_.keep_alive()) return self->close();
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
  void close() {
    if constexpr (is_tls) {
      lowest().expires_after(linger_time);
      stream_.async_shutdown([self = this->shared_from_this()](beast::error_code) {
        self->lowest().close();
      });
    } else {
      beast::error_code ec;
      lowest().socket().shutdown(tcp::socket::shutdown_send, ec);
      if (ec) return lowest().close();
      lowest().expires_after(linger_time);
      drain();
    }
  }

  void drain() {
    lowest().async_read_some(net::buffer(drain_buf_),
                             [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                               if (ec) return self->lowest().close();
                               self->drain();
                             });
  }

  ServerCore& server_;
  std::string remote_ip_;
  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<RequestBody>> parser_;
  BeastResponse response_;
  std::array<char, 4096> drain_buf_{};
  std::size_t served_ = 0;
  bool waiting_ = true;  // between requests: stop() may close it at once
};

}  // namespace

void ServerCore::do_accept() {
  acceptor_.async_accept(net::make_strand(ioc_),
                         [this](beast::error_code ec, tcp::socket socket) { on_accept(ec, std::move(socket)); });
}

void ServerCore::on_accept(beast::error_code ec, tcp::socket socket) {
  if (stopping_ || !acceptor_.is_open()) return;
  if (ec) {
    // Out of descriptors and the like: back off instead of spinning.
    retry_timer_.expires_after(std::chrono::milliseconds(100));
    retry_timer_.async_wait([this](beast::error_code e) {
      if (!e) do_accept();
    });
    return;
  }
  beast::error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  if (tls_) {
    std::make_shared<Session<beast::ssl_stream<beast::tcp_stream>>>(*this, std::move(socket), *tls_)->run();
  } else {
    std::make_shared<Session<beast::tcp_stream>>(*this, std::move(socket))->run();
  }
  do_accept();
}

Server::Server(ServerOptions options, Handler handler)
    : Server(std::move(options),
             AsyncHandler([handler = std::move(handler)](Request& req, const Reply& reply) { reply(handler(req)); })) {}

Server::Server(ServerOptions options, AsyncHandler handler)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handler))) {}

Server::~Server() { stop(); }

std::uint16_t Server::start() {
  auto& s = *impl_;
  std::lock_guard lock(s.state_mutex_);
  if (s.started_ || s.stopped_) throw std::logic_error("http::Server::start called twice");

  if (s.options_.tls) {
    s.tls_.emplace(ssl::context::tls_server);
    s.tls_->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                        ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                        ssl::context::single_dh_use);
    if (SSL_CTX_set_min_proto_version(s.tls_->native_handle(), TLS1_2_VERSION) != 1) {
      throw std::runtime_error("cannot require TLS 1.2");
    }
    s.tls_->use_certificate_chain_file(s.options_.tls->cert_file);
    s.tls_->use_private_key_file(s.options_.tls->key_file, ssl::context::pem);
  }

  tcp::resolver resolver(s.ioc_);
  auto results = resolver.resolve(s.options_.host, std::to_string(s.options_.port),
                                  tcp::resolver::passive | tcp::resolver::numeric_service);
  if (results.empty()) throw std::runtime_error("cannot resolve " + s.options_.host);
  tcp::endpoint endpoint = results.begin()->endpoint();
  try {
    s.acceptor_.open(endpoint.protocol());
    s.acceptor_.set_option(net::socket_base::reuse_address(true));
    s.acceptor_.bind(endpoint);
    s.acceptor_.listen(net::socket_base::max_listen_connections);
  } catch (...) {
    beast::error_code ignored;
    s.acceptor_.close(ignored);  // so that a later start() can try again
    throw;
  }
  auto port = s.acceptor_.local_endpoint().port();

  s.do_accept();
  s.threads_.reserve(static_cast<std::size_t>(s.threads_count_));
  for (int i = 0; i < s.threads_count_; ++i) {
    s.threads_.emplace_back([&s] {
      for (;;) {
        try {
          s.ioc_.run();
          return;
        } catch (...) {
          // A throwing completion handler must not take the whole server down.
        }
      }
    });
  }
  s.started_ = true;
  return port;
}

void Server::stop() {
  auto& s = *impl_;
  std::unique_lock lock(s.state_mutex_);
  if (s.stopped_) return;
  s.stopped_ = true;
  if (!s.started_) {
    s.state_cv_.notify_all();
    return;
  }
  s.stopping_ = true;

  // Stop accepting (on the acceptor's strand), then close idle connections.
  net::post(s.acceptor_.get_executor(), [&s] {
    beast::error_code ec;
    s.acceptor_.close(ec);
    s.retry_timer_.cancel();
  });
  std::vector<std::shared_ptr<SessionBase>> live;
  {
    std::lock_guard g(s.sessions_mutex_);
    for (auto& [ptr, weak] : s.sessions_) {
      if (auto p = weak.lock()) live.push_back(std::move(p));
    }
  }
  for (auto& p : live) p->request_stop();
  live.clear();  // our references must not keep sessions alive

  {
    std::unique_lock g(s.sessions_mutex_);
    s.sessions_cv_.wait_for(g, s.options_.shutdown_grace, [&s] { return s.sessions_.empty(); });
  }
  s.ioc_.stop();
  auto self = std::this_thread::get_id();
  for (auto& t : s.threads_) {
    // Called from a handler on an I/O thread: that thread cannot join itself.
    if (t.get_id() == self) {
      t.detach();
    } else if (t.joinable()) {
      t.join();
    }
  }
  s.threads_.clear();
  s.state_cv_.notify_all();
}

void Server::wait() {
  auto& s = *impl_;
  std::unique_lock lock(s.state_mutex_);
  s.state_cv_.wait(lock, [&s] { return s.stopped_ && s.threads_.empty(); });
}

}  // namespace gpunex::http
