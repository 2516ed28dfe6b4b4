// http::Server: binds, accepts connections and hands each to a session (session.cpp), and stops
// with a grace period for requests in flight. Boost.Beast stays inside http/'s .cpp files: it is
// slow to compile and nothing outside needs it.

#include <chrono>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <openssl/ssl.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>

#include "server/http/http.hpp"
#include "server/http/server_core.hpp"

namespace gpunex::http {

namespace beast = boost::beast;
namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = boost::asio::ip::tcp;

struct Server::Impl : ServerCore {
  using ServerCore::ServerCore;
};

void ServerCore::do_accept() {
  acceptor_.async_accept(next_loop(),
                         [this](beast::error_code ec, ConnectionSocket socket) { on_accept(ec, std::move(socket)); });
}

void ServerCore::on_accept(beast::error_code ec, ConnectionSocket socket) {
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
  start_session(*this, std::move(socket));
  do_accept();
}

Server::Server(ServerOptions options, Handler handler)
    : Server(std::move(options),
             AsyncHandler([handler = std::move(handler)](Request& req, const Reply& reply) { reply(handler(req)); })) {}

Server::Server(ServerOptions options, AsyncHandler handler)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handler))) {}

Server::~Server() { stop(); }

namespace {

// A server context for TLS 1.2 and later with the certificate chain and key of `files`. Throws when
// either cannot be read or they do not belong together.
std::shared_ptr<ssl::context> make_tls_context(const TlsOptions& files) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                   ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 | ssl::context::single_dh_use);
  if (SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION) != 1) {
    throw std::runtime_error("cannot require TLS 1.2");
  }
  ctx->use_certificate_chain_file(files.cert_file);
  ctx->use_private_key_file(files.key_file, ssl::context::pem);
  if (SSL_CTX_check_private_key(ctx->native_handle()) != 1) {
    throw std::runtime_error("the key is not the certificate's");
  }
  return ctx;
}

}  // namespace

bool Server::reload_tls() {
  auto& s = *impl_;
  if (!s.options_.tls) return false;
  auto fresh = make_tls_context(*s.options_.tls);
  std::lock_guard lock(s.tls_mutex_);
  s.tls_made_.push_back(fresh);
  s.tls_ = std::move(fresh);
  return true;
}

std::uint16_t Server::start() {
  auto& s = *impl_;
  std::lock_guard lock(s.state_mutex_);
  if (s.started_ || s.stopped_) throw std::logic_error("http::Server::start called twice");

  if (s.options_.tls) {
    s.tls_ = make_tls_context(*s.options_.tls);
    s.tls_made_.push_back(s.tls_);
  }

  tcp::resolver resolver(*s.loops_.front());
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
  for (auto& loop : s.loops_) {
    s.loops_kept_.push_back(net::make_work_guard(*loop));
    s.threads_.emplace_back([&loop = *loop] {
      for (;;) {
        try {
          loop.run();
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

  // Stop accepting (on the acceptor's loop), then close idle connections.
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
  if (s.options_.on_draining) s.options_.on_draining();

  {
    std::unique_lock g(s.sessions_mutex_);
    s.sessions_cv_.wait_for(g, s.options_.shutdown_grace, [&s] { return s.sessions_.empty(); });
  }
  s.loops_kept_.clear();
  for (auto& loop : s.loops_) loop->stop();
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
