// The PostgreSQL driver: libpq connections in a pool, '?' placeholders
// rewritten to $n, statements prepared once per connection, parameters sent as
// text, results typed by column OID; and the change feed, a LISTEN connection
// of its own.

#include "store/postgres/postgres_store.hpp"

#include <fcntl.h>
#include <libpq-fe.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stop_token>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "store/driver_util.hpp"
#include "store/nul_in_text.hpp"

namespace gpunex::store {

namespace {

struct ConnCloser {
  void operator()(PGconn* conn) const { PQfinish(conn); }
};
struct ResultClearer {
  void operator()(PGresult* res) const { PQclear(res); }
};
using ConnPtr = std::unique_ptr<PGconn, ConnCloser>;
using ResultPtr = std::unique_ptr<PGresult, ResultClearer>;

// Type OIDs from pg_type.h (stable across versions).
constexpr Oid kBoolOid = 16;
constexpr Oid kInt8Oid = 20;
constexpr Oid kInt2Oid = 21;
constexpr Oid kInt4Oid = 23;
constexpr Oid kFloat4Oid = 700;
constexpr Oid kFloat8Oid = 701;
constexpr Oid kNumericOid = 1700;

std::string trim_message(const char* raw) {
  std::string s = raw ? raw : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

//! Rewrites '?' placeholders to $1..$n, leaving quoted text, identifiers and comments alone.
std::string to_numbered_params(std::string_view sql, std::size_t& count) {
  std::string out;
  out.reserve(sql.size() + 16);
  count = 0;
  std::size_t i = 0;
  auto copy_until = [&](std::string_view close) {
    auto end = sql.find(close, i);
    end = end == std::string_view::npos ? sql.size() : end + close.size();
    out.append(sql.substr(i, end - i));
    i = end;
  };
  while (i < sql.size()) {
    char c = sql[i];
    if (c == '\'') {
      out += c;
      ++i;
      copy_until("'");  // '' inside a literal is two literals back to back: same result
    } else if (c == '"') {
      out += c;
      ++i;
      copy_until("\"");
    } else if (sql.substr(i, 2) == "--") {
      copy_until("\n");
    } else if (sql.substr(i, 2) == "/*") {
      copy_until("*/");
    } else if (c == '?') {
      out += '$';
      out += std::to_string(++count);
      ++i;
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

Value convert(const PGresult* res, int row, int col) {
  if (PQgetisnull(res, row, col)) return nullptr;
  const char* text = PQgetvalue(res, row, col);
  auto size = static_cast<std::size_t>(PQgetlength(res, row, col));
  const char* end = text + size;
  switch (PQftype(res, col)) {
    case kBoolOid: return std::int64_t{text[0] == 't' ? 1 : 0};
    case kInt8Oid:
    case kInt2Oid:
    case kInt4Oid: {
      std::int64_t n = 0;
      auto [p, ec] = std::from_chars(text, end, n);
      if (ec == std::errc() && p == end) return n;
      return std::string(text, size);
    }
    case kNumericOid: {
      // A whole numeric (SUM of BIGINT money) stays exact, as SQLite returns it.
      std::int64_t n = 0;
      auto [p, ec] = std::from_chars(text, end, n);
      if (ec == std::errc() && p == end) return n;
      [[fallthrough]];
    }
    case kFloat4Oid:
    case kFloat8Oid: {
      double d = 0;
      auto [p, ec] = std::from_chars(text, end, d);
      if (ec == std::errc() && p == end) return d;
      return std::string(text, size);
    }
    default: return std::string(text, size);
  }
}

//! One libpq connection; `broken` once the server connection is lost.
class PgConnection {
  static constexpr std::size_t kPreparedLimit = 512;

 public:
  PgConnection(const std::string& url, const std::string& described) {
    conn_.reset(PQconnectdb(url.c_str()));
    if (!conn_) throw StoreUnavailable("postgres: out of memory connecting to " + described);
    if (PQstatus(conn_.get()) != CONNECTION_OK) {
      throw StoreUnavailable("postgres: cannot connect to " + described + ": " +
                             trim_message(PQerrorMessage(conn_.get())));
    }
    PQsetClientEncoding(conn_.get(), "UTF8");
    // Server notices ("drop cascades to ...") would otherwise go to stderr, outside the logs.
    PQsetNoticeProcessor(conn_.get(), [](void*, const char*) {}, nullptr);
  }

  PGconn* get() const { return conn_.get(); }
  bool healthy() const { return PQstatus(conn_.get()) == CONNECTION_OK; }
  bool idle() const { return PQtransactionStatus(conn_.get()) == PQTRANS_IDLE; }

  //! Checks a result, throwing the store exception that its SQLSTATE calls for.
  ResultPtr check(ResultPtr res, std::string_view sql) const {
    auto status = res ? PQresultStatus(res.get()) : PGRES_FATAL_ERROR;
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return res;
    std::string message = trim_message(res ? PQresultErrorMessage(res.get()) : PQerrorMessage(conn_.get()));
    if (message.empty()) message = trim_message(PQerrorMessage(conn_.get()));
    std::string msg = "postgres: " + message;
    if (!sql.empty()) msg += " [" + detail::sql_excerpt(sql) + "]";
    const char* state = res ? PQresultErrorField(res.get(), PG_DIAG_SQLSTATE) : nullptr;
    std::string_view sqlstate = state ? state : "";
    if (sqlstate == "23505") throw UniqueViolation(msg);
    // Lost connections, and the lock waits a retry would get past.
    if (!healthy() || sqlstate.substr(0, 2) == "08" || sqlstate == "40001" || sqlstate == "40P01" ||
        sqlstate == "55P03" || sqlstate == "57P01") {
      throw StoreUnavailable(msg);
    }
    throw StoreError(msg);
  }

  //! Runs a command with no parameters (BEGIN, COMMIT, scripts).
  ResultPtr exec_simple(std::string_view sql) {
    std::string text(sql);
    return check(ResultPtr(PQexec(conn_.get(), text.c_str())), sql);
  }

  //! The name of a server-side prepared statement for text with these parameter types, preparing it on
  //! first use: the server then parses and plans it once per connection instead of on every call.
  const std::string& prepared(const std::string& text, const std::vector<Oid>& types, std::string_view sql) {
    std::string key(reinterpret_cast<const char*>(types.data()), types.size() * sizeof(Oid));
    key += text;
    if (auto it = prepared_.find(key); it != prepared_.end()) return it->second;
    if (prepared_.size() >= kPreparedLimit) {
      exec_simple("DEALLOCATE ALL");
      prepared_.clear();
    }
    std::string name = "gpx" + std::to_string(next_prepared_++);
    check(ResultPtr(PQprepare(conn_.get(), name.c_str(), text.c_str(), static_cast<int>(types.size()), types.data())),
          sql);
    return prepared_.emplace(std::move(key), std::move(name)).first->second;
  }

  //! Rolls back without throwing; false if the connection should not be reused.
  bool rollback_quietly() noexcept {
    if (!healthy()) return false;
    if (idle()) return true;
    ResultPtr res(PQexec(conn_.get(), "ROLLBACK"));
    return healthy() && idle();
  }

 private:
  ConnPtr conn_;
  std::unordered_map<std::string, std::string> prepared_;  // types + text -> statement name
  std::uint64_t next_prepared_ = 0;
};

class PgTx final : public Tx {
 public:
  PgTx(PgConnection& conn, const StoreObserver& observer) : conn_(conn), observer_(observer) {}

  std::vector<Row> query(std::string_view sql, const Params& params) override {
    detail::StatementTimer timer(observer_, sql);
    auto res = run(sql, params);
    int nrows = PQntuples(res.get());
    int ncols = PQnfields(res.get());
    std::vector<Row> rows;
    rows.reserve(static_cast<std::size_t>(nrows));
    for (int r = 0; r < nrows; ++r) {
      std::vector<Value> values;
      values.reserve(static_cast<std::size_t>(ncols));
      for (int c = 0; c < ncols; ++c) values.push_back(convert(res.get(), r, c));
      rows.emplace_back(std::move(values));
    }
    return rows;
  }

  std::int64_t exec(std::string_view sql, const Params& params) override {
    detail::StatementTimer timer(observer_, sql);
    auto res = run(sql, params);
    const char* tuples = PQcmdTuples(res.get());
    std::int64_t n = 0;
    if (tuples && *tuples) std::from_chars(tuples, tuples + std::char_traits<char>::length(tuples), n);
    return n;
  }

  void exec_script(std::string_view sql) override {
    detail::StatementTimer timer(observer_, sql);
    conn_.exec_simple(sql);
  }

  Dialect dialect() const override { return Dialect::postgres; }

 private:
  ResultPtr run(std::string_view sql, const Params& params) {
    std::size_t count = 0;
    std::string text = to_numbered_params(sql, count);
    if (count != params.size()) {
      throw StoreError("postgres: statement takes " + std::to_string(count) + " parameters, got " +
                       std::to_string(params.size()) + " [" + detail::sql_excerpt(sql) + "]");
    }
    std::vector<std::string> storage(params.size());
    std::vector<const char*> values(params.size(), nullptr);
    std::vector<Oid> types(params.size(), 0);
    for (std::size_t i = 0; i < params.size(); ++i) {
      const Value& v = params[i];
      if (const auto* n = std::get_if<std::int64_t>(&v)) {
        storage[i] = std::to_string(*n);
        types[i] = kInt8Oid;  // so "SELECT ?" and "? + 1" come back as integers
      } else if (const auto* d = std::get_if<double>(&v)) {
        char buf[40];
        std::snprintf(buf, sizeof buf, "%.17g", *d);
        storage[i] = buf;
        types[i] = kFloat8Oid;
      } else if (const auto* s = std::get_if<std::string>(&v)) {
        if (s->find('\0') != std::string::npos) {
          throw NulInText("a text parameter holds a NUL byte [" + detail::sql_excerpt(sql) + "]");
        }
        storage[i] = *s;  // type left to the server (unknown), as with a quoted literal
      } else {
        continue;  // NULL: values[i] stays nullptr
      }
      values[i] = storage[i].c_str();
    }
    // Plain statements are prepared once per connection; anything else (DDL, locks) runs unnamed.
    const std::string kind = detail::first_keyword(sql);
    if (kind == "select" || kind == "insert" || kind == "update" || kind == "delete" || kind == "with") {
      const std::string& name = conn_.prepared(text, types, sql);
      return conn_.check(ResultPtr(PQexecPrepared(conn_.get(), name.c_str(), static_cast<int>(params.size()),
                                                  values.data(), nullptr, nullptr, 0)),
                         sql);
    }
    ResultPtr res(PQexecParams(conn_.get(), text.c_str(), static_cast<int>(params.size()), types.data(),
                               values.data(), nullptr, nullptr, 0));
    return conn_.check(std::move(res), sql);
  }

  PgConnection& conn_;
  const StoreObserver& observer_;
};

//! "postgresql://user@host:port/db", from the parsed connection options: never the password.
std::string describe_url(const std::string& url) {
  char* err = nullptr;
  PQconninfoOption* options = PQconninfoParse(url.c_str(), &err);
  if (!options) {
    std::string msg = trim_message(err);
    PQfreemem(err);
    throw StoreError("store: invalid PostgreSQL URL: " + msg);
  }
  std::string user, host, port, dbname;
  for (PQconninfoOption* o = options; o->keyword; ++o) {
    if (!o->val) continue;
    std::string_view key = o->keyword;
    if (key == "user") user = o->val;
    if (key == "host") host = o->val;
    if (key == "hostaddr" && host.empty()) host = o->val;
    if (key == "port") port = o->val;
    if (key == "dbname") dbname = o->val;
  }
  PQconninfoFree(options);
  std::string out = "postgresql://";
  if (!user.empty()) out += user + "@";
  out += host.empty() ? "localhost" : host;
  if (!port.empty()) out += ":" + port;
  out += "/" + dbname;
  return out;
}

//! LISTENs on kChangeChannel on a connection and thread of its own. A lost connection is reported
//! (on_state, on_missed) and made again every `retry`, calling on_missed each time: while nothing
//! can be heard, the owner's caches are emptied that often instead (the fallback poll).
class PgChangeFeed final : public ChangeFeed {
 public:
  PgChangeFeed(std::string url, ChangeHandlers handlers, std::chrono::milliseconds retry)
      : url_(std::move(url)), handlers_(std::move(handlers)), retry_(retry) {
    if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) throw StoreError("postgres: cannot make the change feed's pipe");
    thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
  }

  ~PgChangeFeed() override {
    thread_.request_stop();
    char c = 0;
    [[maybe_unused]] auto n = ::write(wake_[1], &c, 1);  // out of poll() at once
    thread_.join();
    ::close(wake_[0]);
    ::close(wake_[1]);
  }

  PgChangeFeed(const PgChangeFeed&) = delete;
  PgChangeFeed& operator=(const PgChangeFeed&) = delete;

  bool listening() const override { return listening_.load(); }

 private:
  //! A connection that LISTENs, or null with `error` set.
  ConnPtr connect(std::string& error) const {
    // Keepalives, so a peer that vanished without closing the socket is noticed within about 25 s.
    const char* keys[] = {"dbname", "connect_timeout", "keepalives", "keepalives_idle", "keepalives_interval",
                          "keepalives_count", nullptr};
    const char* values[] = {url_.c_str(), "3", "1", "10", "5", "3", nullptr};
    ConnPtr conn(PQconnectdbParams(keys, values, /*expand_dbname=*/1));
    if (!conn) {
      error = "out of memory";
      return nullptr;
    }
    if (PQstatus(conn.get()) != CONNECTION_OK) {
      error = trim_message(PQerrorMessage(conn.get()));
      return nullptr;
    }
    PQsetNoticeProcessor(conn.get(), [](void*, const char*) {}, nullptr);
    const std::string listen = std::string("LISTEN ") + kChangeChannel;
    ResultPtr res(PQexec(conn.get(), listen.c_str()));
    if (!res || PQresultStatus(res.get()) != PGRES_COMMAND_OK) {
      error = trim_message(PQerrorMessage(conn.get()));
      return nullptr;
    }
    return conn;
  }

  void run(std::stop_token stop) {
    bool report_failure = true;  // once per outage, not on every retry
    while (!stop.stop_requested()) {
      std::string error;
      ConnPtr conn = connect(error);
      if (!conn) {
        if (report_failure) tell_state(false, error);
        report_failure = false;
        tell_missed();
        wait_for_wake(static_cast<int>(retry_.count()));
        continue;
      }
      listening_ = true;
      tell_state(true, "");
      tell_missed();  // whatever committed before LISTEN took effect went unheard
      error = pump(conn.get(), stop);
      listening_ = false;
      if (stop.stop_requested()) return;
      tell_state(false, error);
      report_failure = false;
      tell_missed();
    }
  }

  //! Hands on every notification until the connection fails (its reason) or a stop is asked ("").
  std::string pump(PGconn* conn, const std::stop_token& stop) {
    while (!stop.stop_requested()) {
      pollfd fds[2] = {{PQsocket(conn), POLLIN, 0}, {wake_[0], POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        return "poll failed";
      }
      if (fds[1].revents != 0) {
        drain_wake();
        continue;
      }
      if (PQconsumeInput(conn) == 0) return trim_message(PQerrorMessage(conn));
      while (PGnotify* n = PQnotifies(conn)) {
        const std::string topic = n->extra ? n->extra : "";
        PQfreemem(n);
        if (handlers_.on_change) guarded([&] { handlers_.on_change(topic); });
      }
      if (PQstatus(conn) != CONNECTION_OK) return "connection lost";
    }
    return "";
  }

  void wait_for_wake(int timeout_ms) {
    pollfd fd{wake_[0], POLLIN, 0};
    if (::poll(&fd, 1, timeout_ms) > 0) drain_wake();
  }

  void drain_wake() {
    char buf[16];
    while (::read(wake_[0], buf, sizeof buf) > 0) {
    }
  }

  void tell_missed() {
    if (handlers_.on_missed) guarded([&] { handlers_.on_missed(); });
  }

  void tell_state(bool listening, const std::string& detail) {
    if (handlers_.on_state) guarded([&] { handlers_.on_state(listening, detail); });
  }

  //! A handler that throws must not end the process from this thread; the feed carries on.
  template <class F>
  static void guarded(F&& f) noexcept {
    try {
      f();
    } catch (...) {
    }
  }

  const std::string url_;
  const ChangeHandlers handlers_;
  const std::chrono::milliseconds retry_;
  int wake_[2] = {-1, -1};
  std::atomic<bool> listening_{false};
  std::jthread thread_;  // last: started once the rest is ready
};

class PgStore final : public Store {
 public:
  PgStore(const std::string& url, const StoreOptions& options)
      : url_(url),
        described_(describe_url(url)),
        pool_(static_cast<std::size_t>(options.pool_size), options.busy_timeout,
              [url, described = described_] { return std::make_unique<PgConnection>(url, described); }) {
    auto first = pool_.acquire();  // connect one now, so a bad URL or server fails here
  }

  Dialect dialect() const override { return Dialect::postgres; }
  std::string describe() const override { return described_; }
  std::unique_ptr<ChangeFeed> listen(ChangeHandlers handlers, std::chrono::milliseconds retry) override {
    return std::make_unique<PgChangeFeed>(url_, std::move(handlers), retry);
  }

 protected:
  void run_in_tx(TxMode mode, const std::function<bool(Tx&)>& body) override {
    for (int attempt = 0;; ++attempt) {
      auto conn = pool_.acquire();
      bool usable = conn->healthy() && conn->idle();
      if (usable) {
        try {
          detail::StatementTimer timer(observer_, "begin");
          // As on SQLite, a read transaction cannot write: a write there is a bug every test shows. And as on
          // SQLite, it reads one snapshot: under READ COMMITTED each statement of a page's reads saw the
          // latest commit, so a page could show a benchmark run completed beside its GPU's listing from
          // before the run (CI, api_postgres). REPEATABLE READ READ ONLY never fails to serialize.
          conn->exec_simple(mode == TxMode::write ? "BEGIN" : "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
        } catch (const StoreError&) {
          usable = conn->healthy();
          if (usable) throw;  // the server refused BEGIN itself: nothing to retry
        }
      }
      if (usable) {
        run_body(conn, body);
        return;
      }
      // Dropped while idle in the pool (a server restart): nothing ran yet, so retry once on a fresh one.
      conn.discard();
      if (attempt >= 1) throw StoreUnavailable("postgres: connection to " + described_ + " lost");
    }
  }

 private:
  using Handle = detail::ConnectionPool<PgConnection>::Handle;

  void run_body(Handle& conn, const std::function<bool(Tx&)>& body) {
    PgTx tx(*conn, observer_);
    if (!detail::run_body_or_roll_back(conn, tx, body)) return;
    try {
      detail::StatementTimer timer(observer_, "commit");
      auto res = conn->exec_simple("COMMIT");
      // COMMIT of a transaction an earlier (caught) error aborted answers "ROLLBACK", not an error.
      if (std::string_view(PQcmdStatus(res.get())) == "ROLLBACK") {
        throw StoreError("postgres: transaction was aborted by an earlier error and rolled back");
      }
    } catch (...) {
      if (!conn->rollback_quietly()) conn.discard();
      throw;
    }
  }

  std::string url_;
  std::string described_;
  detail::ConnectionPool<PgConnection> pool_;
};

}  // namespace

std::unique_ptr<Store> open_postgres_store(const std::string& url, const StoreOptions& options) {
  return std::make_unique<PgStore>(url, options);
}

}  // namespace gpunex::store
