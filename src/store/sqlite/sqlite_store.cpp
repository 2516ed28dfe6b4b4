// The SQLite driver: a pool of connections in WAL mode, prepared statements
// cached per connection, BEGIN IMMEDIATE for writers so they queue on the busy
// timeout instead of failing on a lock upgrade, and WAL checkpoints on a thread
// of their own so that no commit waits for the copy into the database file and
// its fsync.

#include "store/sqlite/sqlite_store.hpp"

#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "store/driver_util.hpp"
#include "store/nul_in_text.hpp"

namespace gpunex::store {

namespace {

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
struct StmtFinalizer {
  void operator()(sqlite3_stmt* stmt) const { sqlite3_finalize(stmt); }
};
using DbPtr = std::unique_ptr<sqlite3, DbCloser>;
using StmtPtr = std::unique_ptr<sqlite3_stmt, StmtFinalizer>;

constexpr std::size_t kStatementCacheLimit = 256;
// Reads of the database file through a memory map instead of read() into each connection's page cache.
// (A large page cache instead costs a scan of its hash table at every commit in SQLite 3.40.)
constexpr std::int64_t kMmapBytes = 256LL << 20;
// WAL frames (pages) after which a commit asks the checkpointer for a pass; a pass that leaves the log
// this many times larger (it could not start over, say under constant writes) is followed by a RESTART
// checkpoint, which waits for the writers of the moment once.
constexpr int kCheckpointFrames = 4000;
constexpr int kRestartFactor = 4;

//! Hashes and compares SQL text without copying it (the statement cache is looked up per statement).
struct SqlHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

[[noreturn]] void throw_sqlite(sqlite3* db, int rc, std::string_view sql) {
  std::string msg = std::string("sqlite: ") + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  if (!sql.empty()) msg += " [" + detail::sql_excerpt(sql) + "]";
  if (rc == SQLITE_CONSTRAINT_UNIQUE || rc == SQLITE_CONSTRAINT_PRIMARYKEY) throw UniqueViolation(msg);
  int primary = rc & 0xff;
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) throw StoreUnavailable(msg);
  throw StoreError(msg);
}

//! One sqlite3 handle and its statement cache (destroyed before the handle).
class SqliteConnection {
 public:
  SqliteConnection(const std::string& path, const StoreOptions& options) {
    configure_sqlite_library();
    sqlite3* raw = nullptr;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI;
    int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
    db_.reset(raw);
    if (rc != SQLITE_OK) {
      std::string msg = "store: cannot open SQLite database " + path + ": " +
                        (raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc));
      throw StoreUnavailable(msg);
    }
    sqlite3_extended_result_codes(raw, 1);
    sqlite3_busy_timeout(raw, static_cast<int>(options.busy_timeout.count()));
    wal_ = pragma_text("PRAGMA journal_mode=WAL") == "wal";  // a memory database stays "memory"
    exec_raw("PRAGMA foreign_keys=ON");
    exec_raw("PRAGMA synchronous=NORMAL");
    exec_raw("PRAGMA mmap_size=" + std::to_string(kMmapBytes));
  }

  sqlite3* db() const { return db_.get(); }
  //! Whether the database is in WAL mode (a file; not ":memory:").
  bool wal() const { return wal_; }

  //! The first column of a pragma's first row, as text.
  std::string pragma_text(const char* sql) {
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(db_.get(), sql, -1, &raw, nullptr) != SQLITE_OK) {
      throw_sqlite(db_.get(), sqlite3_extended_errcode(db_.get()), sql);
    }
    StmtPtr stmt(raw);
    const int rc = sqlite3_step(raw);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) throw_sqlite(db_.get(), sqlite3_extended_errcode(db_.get()), sql);
    const auto* text = rc == SQLITE_ROW ? reinterpret_cast<const char*>(sqlite3_column_text(raw, 0)) : nullptr;
    return text ? std::string(text) : std::string();
  }

  //! Runs statements with no parameters and no rows wanted, mapping failures to store exceptions.
  void exec_raw(std::string_view sql) {
    std::string text(sql);
    char* err = nullptr;
    int rc = sqlite3_exec(db_.get(), text.c_str(), nullptr, nullptr, &err);
    sqlite3_free(err);  // the same text is available from sqlite3_errmsg
    if (rc != SQLITE_OK) throw_sqlite(db_.get(), sqlite3_extended_errcode(db_.get()), sql);
  }

  //! A prepared statement for sql, from the cache when it was prepared before.
  sqlite3_stmt* prepare(std::string_view sql) {
    if (auto it = cache_.find(sql); it != cache_.end()) return it->second.get();
    std::string key(sql);
    sqlite3_stmt* raw = nullptr;
    const char* tail = nullptr;
    int rc = sqlite3_prepare_v3(db_.get(), key.data(), static_cast<int>(key.size()), SQLITE_PREPARE_PERSISTENT,
                                &raw, &tail);
    StmtPtr stmt(raw);
    if (rc != SQLITE_OK) throw_sqlite(db_.get(), sqlite3_extended_errcode(db_.get()), sql);
    if (!stmt) throw StoreError("sqlite: empty statement [" + detail::sql_excerpt(sql) + "]");
    for (const char* p = tail; p && *p; ++p) {
      if (*p != ' ' && *p != '\n' && *p != '\t' && *p != '\r' && *p != ';') {
        throw StoreError("sqlite: one statement expected (use exec_script for several) [" +
                         detail::sql_excerpt(sql) + "]");
      }
    }
    if (cache_.size() >= kStatementCacheLimit) cache_.clear();
    return cache_.emplace(std::move(key), std::move(stmt)).first->second.get();
  }

  //! True while a transaction is open on this connection.
  bool in_transaction() const { return sqlite3_get_autocommit(db_.get()) == 0; }

  //! Rolls back without throwing; false if the connection is left in an unknown state.
  bool rollback_quietly() noexcept {
    if (!in_transaction()) return true;
    sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
    return !in_transaction();
  }

 private:
  DbPtr db_;
  bool wal_ = false;
  std::unordered_map<std::string, StmtPtr, SqlHash, std::equal_to<>> cache_;
};

//! Runs WAL checkpoints on its own thread and connection when commits have grown the log (the WAL hook
//! calls request()). PASSIVE checkpoints never block writers; SQLite starts the log over at the first
//! commit after a pass that caught up.
class Checkpointer {
 public:
  explicit Checkpointer(std::unique_ptr<SqliteConnection> conn) : conn_(std::move(conn)), thread_([this] { loop(); }) {}
  ~Checkpointer() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  //! The WAL hook of every pooled connection: called after each commit with the frames in the log.
  static int on_commit(void* self, sqlite3* /*db*/, const char* /*schema*/, int frames) {
    if (frames >= kCheckpointFrames) static_cast<Checkpointer*>(self)->request();
    return SQLITE_OK;
  }

 private:
  void request() {
    if (requested_.exchange(true)) return;
    std::lock_guard lock(mu_);
    cv_.notify_one();
  }

  void loop() {
    for (;;) {
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stopping_ || requested_.load(); });
        if (stopping_) return;
      }
      requested_ = false;
      int log = 0;
      int done = 0;
      // Failures (busy, I/O) are left for the next request: the log only grows meanwhile.
      sqlite3_wal_checkpoint_v2(conn_->db(), nullptr, SQLITE_CHECKPOINT_PASSIVE, &log, &done);
      if (log >= kRestartFactor * kCheckpointFrames) {
        sqlite3_wal_checkpoint_v2(conn_->db(), nullptr, SQLITE_CHECKPOINT_RESTART, &log, &done);
      }
      // A pass per few commits at most, however often they ask.
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(50), [&] { return stopping_; });
    }
  }

  std::unique_ptr<SqliteConnection> conn_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<bool> requested_{false};
  bool stopping_ = false;
  std::thread thread_;
};

//! Resets a cached statement and drops its bindings when a call ends.
class StatementReset {
 public:
  explicit StatementReset(sqlite3_stmt* stmt) : stmt_(stmt) {}
  StatementReset(const StatementReset&) = delete;
  StatementReset& operator=(const StatementReset&) = delete;
  ~StatementReset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }

 private:
  sqlite3_stmt* stmt_;
};

class SqliteTx final : public Tx {
 public:
  SqliteTx(SqliteConnection& conn, const StoreObserver& observer, TxMode mode)
      : conn_(conn), observer_(observer), read_only_(mode == TxMode::read) {}

  std::vector<Row> query(std::string_view sql, const Params& params) override {
    detail::StatementTimer timer(observer_, sql);
    sqlite3_stmt* stmt = start(sql, params);
    StatementReset reset(stmt);
    std::vector<Row> rows;
    int columns = sqlite3_column_count(stmt);
    for (;;) {
      int rc = sqlite3_step(stmt);
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) throw_sqlite(conn_.db(), sqlite3_extended_errcode(conn_.db()), sql);
      std::vector<Value> values;
      values.reserve(static_cast<std::size_t>(columns));
      for (int c = 0; c < columns; ++c) values.push_back(column(stmt, c));
      rows.emplace_back(std::move(values));
    }
    return rows;
  }

  std::int64_t exec(std::string_view sql, const Params& params) override {
    detail::StatementTimer timer(observer_, sql);
    sqlite3_stmt* stmt = start(sql, params);
    StatementReset reset(stmt);
    for (;;) {
      int rc = sqlite3_step(stmt);
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) throw_sqlite(conn_.db(), sqlite3_extended_errcode(conn_.db()), sql);
    }
    return sqlite3_changes64(conn_.db());
  }

  void exec_script(std::string_view sql) override {
    detail::StatementTimer timer(observer_, sql);
    if (!read_only_) return conn_.exec_raw(sql);
    // In a read transaction each statement is prepared and checked before it runs.
    std::string text(sql);
    const char* next = text.c_str();
    while (next && *next) {
      sqlite3_stmt* raw = nullptr;
      const char* tail = nullptr;
      if (sqlite3_prepare_v2(conn_.db(), next, -1, &raw, &tail) != SQLITE_OK) {
        throw_sqlite(conn_.db(), sqlite3_extended_errcode(conn_.db()), sql);
      }
      StmtPtr stmt(raw);
      next = tail;
      if (!stmt) continue;  // whitespace or a comment
      refuse_write(raw, sql);
      for (int rc = sqlite3_step(raw); rc != SQLITE_DONE; rc = sqlite3_step(raw)) {
        if (rc != SQLITE_ROW) throw_sqlite(conn_.db(), sqlite3_extended_errcode(conn_.db()), sql);
      }
    }
  }

  Dialect dialect() const override { return Dialect::sqlite; }

 private:
  //! A read transaction cannot write: a write there would fail only now and then (when another writer
  //! committed since it began), so it fails every time, in every test. Checked per statement rather than
  //! with PRAGMA query_only, which expires every prepared statement of the connection each time it is
  //! switched: every cached statement was compiled again in the next transaction.
  //! A pragma that only asks ("PRAGMA journal_mode", no "= value") counts as a read, although SQLite
  //! cannot say so for those that could also set.
  void refuse_write(sqlite3_stmt* stmt, std::string_view sql) const {
    if (!read_only_ || sqlite3_stmt_readonly(stmt)) return;
    const std::string_view text = sqlite3_sql(stmt) ? std::string_view(sqlite3_sql(stmt)) : sql;
    const auto start = text.find_first_not_of(" \t\r\n");
    const bool pragma_query = start != std::string_view::npos && text.size() - start >= 6 &&
                              sqlite3_strnicmp(text.data() + start, "PRAGMA", 6) == 0 &&
                              text.find('=') == std::string_view::npos;
    if (!pragma_query) {
      throw StoreError("sqlite: a read transaction cannot write [" + detail::sql_excerpt(sql) + "]");
    }
  }

  sqlite3_stmt* start(std::string_view sql, const Params& params) {
    sqlite3_stmt* stmt = conn_.prepare(sql);
    refuse_write(stmt, sql);
    int expected = sqlite3_bind_parameter_count(stmt);
    if (expected != static_cast<int>(params.size())) {
      throw StoreError("sqlite: statement takes " + std::to_string(expected) + " parameters, got " +
                       std::to_string(params.size()) + " [" + detail::sql_excerpt(sql) + "]");
    }
    for (std::size_t i = 0; i < params.size(); ++i) {
      int index = static_cast<int>(i) + 1;
      int rc = std::visit(
          [&](const auto& v) -> int {
            using V = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<V, std::nullptr_t>) {
              return sqlite3_bind_null(stmt, index);
            } else if constexpr (std::is_same_v<V, std::int64_t>) {
              return sqlite3_bind_int64(stmt, index, v);
            } else if constexpr (std::is_same_v<V, double>) {
              return sqlite3_bind_double(stmt, index, v);
            } else {
              if (v.find('\0') != std::string::npos) {
                sqlite3_clear_bindings(stmt);
                throw NulInText("a text parameter holds a NUL byte [" + detail::sql_excerpt(sql) + "]");
              }
              // The caller's params outlive the statement, and StatementReset clears the binding.
              return sqlite3_bind_text64(stmt, index, v.data(), v.size(), SQLITE_STATIC, SQLITE_UTF8);
            }
          },
          params[i]);
      if (rc != SQLITE_OK) {
        sqlite3_clear_bindings(stmt);
        throw_sqlite(conn_.db(), rc, sql);
      }
    }
    return stmt;
  }

  static Value column(sqlite3_stmt* stmt, int c) {
    switch (sqlite3_column_type(stmt, c)) {
      case SQLITE_INTEGER: return std::int64_t{sqlite3_column_int64(stmt, c)};
      case SQLITE_FLOAT: return sqlite3_column_double(stmt, c);
      case SQLITE_NULL: return nullptr;
      case SQLITE_BLOB: {
        const auto* data = static_cast<const char*>(sqlite3_column_blob(stmt, c));
        auto size = static_cast<std::size_t>(sqlite3_column_bytes(stmt, c));
        return data ? std::string(data, size) : std::string();
      }
      default: {
        const auto* data = reinterpret_cast<const char*>(sqlite3_column_text(stmt, c));
        auto size = static_cast<std::size_t>(sqlite3_column_bytes(stmt, c));
        return data ? std::string(data, size) : std::string();
      }
    }
  }

  SqliteConnection& conn_;
  const StoreObserver& observer_;
  bool read_only_;
};

//! The write turn of this process's threads, taken in arrival order before BEGIN IMMEDIATE. SQLite's
//! own wait for its write lock sleeps and retries (1, 2, 5, 10... ms), so a thread that writes in a loop
//! (a worker's chunks) wins the lock again and again while the heartbeats' group commit sleeps; here the
//! next writer in line gets it as soon as it is free. (Other processes still meet the busy timeout.)
class WriteTurns {
 public:
  void lock() {
    std::unique_lock lock(mu_);
    if (owner_ == std::this_thread::get_id()) {
      throw StoreError("sqlite: a write transaction inside another on the same thread would wait for itself");
    }
    const std::uint64_t ticket = next_++;
    cv_.wait(lock, [&] { return serving_ == ticket; });
    owner_ = std::this_thread::get_id();
  }
  void unlock() {
    {
      std::lock_guard lock(mu_);
      ++serving_;
      owner_ = std::thread::id();
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::uint64_t next_ = 0;
  std::uint64_t serving_ = 0;
  std::thread::id owner_;
};

class SqliteStore final : public Store {
 public:
  SqliteStore(const std::string& path, const StoreOptions& options)
      : path_(path),
        // A private ":memory:" database exists per connection, so it gets exactly one.
        pool_(path == ":memory:" ? 1 : static_cast<std::size_t>(options.pool_size), options.busy_timeout,
              [this, path, options] {
                auto conn = std::make_unique<SqliteConnection>(path, options);
                // Replaces SQLite's checkpoint inside the committing call (wal_autocheckpoint).
                if (checkpointer_) sqlite3_wal_hook(conn->db(), &Checkpointer::on_commit, checkpointer_.get());
                return conn;
              }) {
    auto conn = std::make_unique<SqliteConnection>(path, options);  // opened now, so a bad path fails here
    if (conn->wal()) checkpointer_ = std::make_unique<Checkpointer>(std::move(conn));
  }

  Dialect dialect() const override { return Dialect::sqlite; }
  std::string describe() const override { return "sqlite:" + path_; }

 protected:
  void run_in_tx(TxMode mode, const std::function<bool(Tx&)>& body) override {
    std::unique_lock<WriteTurns> turn(write_turns_, std::defer_lock);
    std::optional<detail::StatementTimer> timer(std::in_place, observer_, "begin");  // the wait for the turn too
    if (mode == TxMode::write) turn.lock();
    auto conn = pool_.acquire();
    if (conn->in_transaction() && !conn->rollback_quietly()) {
      conn.discard();
      throw StoreError("sqlite: connection left inside a transaction");
    }
    // A read transaction cannot write: SqliteTx refuses each statement that would.
    conn->exec_raw(mode == TxMode::write ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED");
    timer.reset();
    SqliteTx tx(*conn, observer_, mode);
    if (!detail::run_body_or_roll_back(conn, tx, body)) return;
    try {
      detail::StatementTimer timer(observer_, "commit");
      conn->exec_raw("COMMIT");
    } catch (...) {
      if (!conn->rollback_quietly()) conn.discard();
      throw;
    }
  }

 private:
  std::string path_;
  WriteTurns write_turns_;
  std::unique_ptr<Checkpointer> checkpointer_;  // before pool_: its connections' hook points here
  detail::ConnectionPool<SqliteConnection> pool_;
};

}  // namespace

void configure_sqlite_library() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Fails (SQLITE_MISUSE, harmless) only if something opened a connection before: then SQLite keeps
    // its defaults.
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  });
}

std::unique_ptr<Store> open_sqlite_store(const std::string& path, const StoreOptions& options) {
  return std::make_unique<SqliteStore>(path, options);
}

}  // namespace gpunex::store
