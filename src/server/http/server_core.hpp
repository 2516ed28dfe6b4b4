#pragma once
// Internal to http/: the state behind http::Server that the server (server.cpp) and its connections
// (session.cpp) share. Boost.Asio types: include this only from http/'s .cpp files.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>

#include "server/http/http.hpp"

namespace gpunex::http {

//! A connection's executor: the event loop (io_context) of the one I/O thread it lives on. One thread
//! runs each loop, so a connection's steps never run at once and need no strand; and no I/O thread hands
//! a ready socket to another, as threads sharing one io_context do (a futex wake and a context switch
//! per request, which left the cores half idle under load: bench/http.sh). A concrete type rather
//! than Asio's type-erased any_io_executor, whose copies and queries cost every asynchronous step.
using ConnectionExecutor = boost::asio::io_context::executor_type;
using ConnectionSocket = boost::asio::basic_stream_socket<boost::asio::ip::tcp, ConnectionExecutor>;

// What stop() needs from a session, independent of the stream type.
class SessionBase {
 public:
  virtual ~SessionBase() = default;
  //! Closes the connection if it is between requests; otherwise it closes after its response.
  virtual void request_stop() = 0;
};

// All server state. Not Server::Impl itself: the sessions must name it, and Impl is private to Server.
struct ServerCore {
  ServerCore(ServerOptions options, AsyncHandler handler)
      : options_(std::move(options)),
        handler_(std::move(handler)),
        threads_count_(options_.threads > 0 ? options_.threads
                                            : std::max(1, static_cast<int>(std::thread::hardware_concurrency()))),
        loops_(make_loops(threads_count_)),
        acceptor_(loops_.front()->get_executor()),
        retry_timer_(acceptor_.get_executor()) {}

  void do_accept();
  //! The loop of the next accepted connection: each in turn.
  ConnectionExecutor next_loop() { return loops_[next_loop_++ % loops_.size()]->get_executor(); }
  void on_accept(boost::beast::error_code ec, ConnectionSocket socket);

  void add_session(SessionBase* s, std::weak_ptr<SessionBase> w) {
    std::lock_guard lock(sessions_mutex_);
    sessions_.emplace(s, std::move(w));
  }
  //! Takes a connection slot for `ip`, or says which cap refuses it.
  std::optional<std::string_view> reserve_connection(const std::string& ip) {
    std::lock_guard lock(connections_mutex_);
    if (options_.max_connections > 0 && connections_total_ >= options_.max_connections) return "total";
    auto& mine = connections_per_ip_[ip];
    if (options_.max_connections_per_ip > 0 && mine >= options_.max_connections_per_ip) return "per address";
    ++mine;
    ++connections_total_;
    return std::nullopt;
  }
  void release_connection(const std::string& ip) {
    std::lock_guard lock(connections_mutex_);
    auto it = connections_per_ip_.find(ip);
    if (it != connections_per_ip_.end() && --it->second == 0) connections_per_ip_.erase(it);
    --connections_total_;
  }
  //! Reports a refusal to on_connection_refused, once a second per cap, so a flood is one line a second.
  void report_refusal(const std::string& ip, std::string_view cap) {
    if (!options_.on_connection_refused) return;
    auto& last = cap == "total" ? last_total_refusal_ : last_ip_refusal_;
    const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
    auto before = last.load();
    if (now - before < std::chrono::steady_clock::duration(std::chrono::seconds(1)).count()) return;
    if (!last.compare_exchange_strong(before, now)) return;
    options_.on_connection_refused(ip, cap, cap == "total" ? options_.max_connections : options_.max_connections_per_ip);
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
  // The TLS context new connections take; reload_tls() swaps in a new one. Every context made stays
  // alive until the server is destroyed (a few per certificate renewal): a session's stream was built
  // from one, and nothing tracks which sessions still use it.
  std::shared_ptr<boost::asio::ssl::context> current_tls() const {
    std::lock_guard lock(tls_mutex_);
    return tls_;
  }
  mutable std::mutex tls_mutex_;
  std::shared_ptr<boost::asio::ssl::context> tls_;
  std::vector<std::shared_ptr<boost::asio::ssl::context>> tls_made_;
  std::mutex connections_mutex_;
  std::unordered_map<std::string, std::size_t> connections_per_ip_;
  std::size_t connections_total_ = 0;
  std::atomic<std::chrono::steady_clock::rep> last_total_refusal_{0};
  std::atomic<std::chrono::steady_clock::rep> last_ip_refusal_{0};

  // One event loop per I/O thread (concurrency hint 1: Asio skips the hand-offs between threads).
  // The acceptor lives on the first; only its handlers touch next_loop_.
  static std::vector<std::unique_ptr<boost::asio::io_context>> make_loops(int n) {
    std::vector<std::unique_ptr<boost::asio::io_context>> loops;
    for (int i = 0; i < n; ++i) loops.push_back(std::make_unique<boost::asio::io_context>(1));
    return loops;
  }
  std::vector<std::unique_ptr<boost::asio::io_context>> loops_;
  // Keeps each loop's run() going while it has no connection yet (run() returns when out of work).
  std::vector<boost::asio::executor_work_guard<ConnectionExecutor>> loops_kept_;
  std::size_t next_loop_ = 0;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer retry_timer_;
  std::vector<std::thread> threads_;

  std::mutex state_mutex_;  // serialises start() and stop()
  std::condition_variable state_cv_;
  bool started_ = false;
  bool stopped_ = false;
};

//! Serves one accepted connection until it closes (over TLS when the server has a TLS context); the
//! session keeps itself alive and registers with `server` so stop() can reach it.
void start_session(ServerCore& server, ConnectionSocket socket);

}  // namespace gpunex::http
