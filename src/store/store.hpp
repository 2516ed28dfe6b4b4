#pragma once
// The store: one interface over SQLite and PostgreSQL. Callers write one
// portable SQL dialect ('?' placeholders, INSERT ... ON CONFLICT, RETURNING,
// BIGINT epoch-millisecond times, BIGINT micro-USDC money, TEXT ids) and run
// every request's work inside one transaction with Store::transact().
//
// Failures of the database itself (connection lost, disk full, a constraint
// the caller did not expect) are exceptions: they end the request and are
// turned into a 5xx once, at the HTTP edge.

#include <chrono>
#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace gpunex::store {

//! A parameter or column value. Booleans are stored as 0/1 BIGINT.
using Value = std::variant<std::nullptr_t, std::int64_t, double, std::string>;

//! One result row; typed getters convert where the driver returned text.
class Row {
 public:
  explicit Row(std::vector<Value> values) : values_(std::move(values)) {}
  std::size_t size() const { return values_.size(); }
  bool is_null(std::size_t i) const;
  std::int64_t i64(std::size_t i) const;
  double f64(std::size_t i) const;
  std::string str(std::size_t i) const;
  bool boolean(std::size_t i) const { return i64(i) != 0; }
  std::optional<std::int64_t> opt_i64(std::size_t i) const;
  std::optional<std::string> opt_str(std::size_t i) const;
  std::optional<double> opt_f64(std::size_t i) const;
  const Value& raw(std::size_t i) const { return values_.at(i); }

 private:
  std::vector<Value> values_;
};

using Params = std::vector<Value>;

//! A database failure that ends the request (answered 500 / 503).
class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

//! A unique or primary-key constraint refused a write the caller did not guard with ON CONFLICT.
class UniqueViolation : public StoreError {
 public:
  using StoreError::StoreError;
};

//! The store could not be reached or timed out waiting for a lock (answered 503).
class StoreUnavailable : public StoreError {
 public:
  using StoreError::StoreError;
};

enum class Dialect { sqlite, postgres };

//! The work of one transaction, on one connection.
class Tx {
 public:
  virtual ~Tx() = default;
  //! Runs a statement and returns every row it produced.
  virtual std::vector<Row> query(std::string_view sql, const Params& params = {}) = 0;
  //! Runs a statement and returns the number of rows it changed.
  virtual std::int64_t exec(std::string_view sql, const Params& params = {}) = 0;
  //! Runs several ';'-separated statements without parameters (migrations).
  virtual void exec_script(std::string_view sql) = 0;
  virtual Dialect dialect() const = 0;

  //! The first row, or nothing.
  std::optional<Row> query_one(std::string_view sql, const Params& params = {});
};

//! " IN (?, ?, ...)" with `n` placeholders, for a list of values; " IN (NULL)" (matches nothing) for none.
std::string in_list(std::size_t n);

enum class TxMode {
  read,   // reads only, all from one snapshot (SQLite: BEGIN DEFERRED; PostgreSQL: REPEATABLE READ READ ONLY)
  write,  // may write (SQLite: BEGIN IMMEDIATE, so writers queue on the busy timeout instead of deadlocking)
};

namespace detail {
inline thread_local const std::function<void(Tx&)>* commit_check = nullptr;
}  // namespace detail

//! While one lives, every write transaction this thread is about to commit runs `check` last, inside the
//! transaction; a check that throws rolls the transaction back. The request pipeline's idempotency fence
//! (a request's first commit marks its Idempotency-Key, and one whose key another attempt took over
//! commits nothing).
class ScopedCommitCheck {
 public:
  explicit ScopedCommitCheck(std::function<void(Tx&)> check) : prev_(detail::commit_check), check_(std::move(check)) {
    detail::commit_check = &check_;
  }
  ~ScopedCommitCheck() { detail::commit_check = prev_; }
  ScopedCommitCheck(const ScopedCommitCheck&) = delete;
  ScopedCommitCheck& operator=(const ScopedCommitCheck&) = delete;

 private:
  const std::function<void(Tx&)>* prev_;
  std::function<void(Tx&)> check_;
};

//! Latency observer, called after each statement with the first word of the SQL ("select", "insert", ...).
using StoreObserver = std::function<void(std::string_view op, double seconds)>;

struct StoreOptions {
  int pool_size = 8;
  std::chrono::milliseconds busy_timeout{5000};
  //! Off: a SQLite file that does not exist is an error, not a new empty database (operator commands:
  //! a mistyped --db must not credit an account in a store no server uses). PostgreSQL never creates one.
  bool create_missing = true;
};

//! What a ChangeFeed tells its owner, on the feed's own thread.
struct ChangeHandlers {
  //! A change another process (or this one) committed, as the topic given to notify_change().
  std::function<void(std::string_view topic)> on_change;
  //! Changes may have been missed (the feed was not listening): forget everything cached. Called when
  //! listening starts or starts again, and every retry interval while it cannot listen (the fallback poll).
  std::function<void()> on_missed;
  //! Told when listening starts (true) or stops (false, with libpq's reason): for the logs. May be empty.
  std::function<void(bool listening, const std::string& detail)> on_state;
};

//! Listens for notify_change() of every process on the same database until destroyed.
class ChangeFeed {
 public:
  virtual ~ChangeFeed() = default;
  //! Whether notifications arrive now (false while reconnecting).
  virtual bool listening() const = 0;
};

class Store {
 public:
  virtual ~Store() = default;
  virtual Dialect dialect() const = 0;
  //! A short description for logs, with no password ("sqlite:var/gpunex.db", "postgresql://host:5432/db").
  virtual std::string describe() const = 0;
  void set_observer(StoreObserver observer) { observer_ = std::move(observer); }
  //! Starts listening for the changes notify_change() announces, on a connection and thread of its own
  //! that reconnect by themselves (retrying every `retry`). Null where one process owns the database
  //! (SQLite): there the process that changes something tells its own caches directly.
  virtual std::unique_ptr<ChangeFeed> listen(ChangeHandlers /*handlers*/,
                                             std::chrono::milliseconds /*retry*/ = std::chrono::milliseconds{500}) {
    return nullptr;
  }

  //! Runs fn(Tx&) in one transaction. Commits when fn returns normally, unless it returns a falsy
  //! result (a Result holding an Error, or false): then rolls back and returns that value. Any
  //! exception rolls back and propagates.
  template <class F>
  auto transact(F&& fn, TxMode mode = TxMode::write) -> std::invoke_result_t<F, Tx&> {
    using R = std::invoke_result_t<F, Tx&>;
    const auto checked = [mode](Tx& tx, bool commit) {
      if (commit && mode == TxMode::write && detail::commit_check != nullptr) (*detail::commit_check)(tx);
      return commit;
    };
    if constexpr (std::is_void_v<R>) {
      run_in_tx(mode, [&](Tx& tx) {
        fn(tx);
        return checked(tx, true);
      });
    } else {
      std::optional<R> out;
      run_in_tx(mode, [&](Tx& tx) {
        out.emplace(fn(tx));
        if constexpr (std::is_same_v<R, bool>) {
          return checked(tx, *out);
        } else if constexpr (requires { { out->ok() } -> std::convertible_to<bool>; }) {
          return checked(tx, static_cast<bool>(out->ok()));
        } else {
          return checked(tx, true);  // an int, optional or pointer is a value, never a reason to roll back
        }
      });
      return std::move(*out);
    }
  }

 protected:
  //! Begins a transaction, calls body, commits if it returned true, else rolls back.
  //! Retries are not done here: a failure to begin or commit throws StoreError.
  virtual void run_in_tx(TxMode mode, const std::function<bool(Tx&)>& body) = 0;
  StoreObserver observer_;
};

//! Opens "sqlite:PATH" (":memory:" allowed) or a "postgresql://" / "postgres://" URL.
//! Throws StoreError with a clear message on a bad URL or a failed connection.
std::unique_ptr<Store> open_store(const std::string& url, const StoreOptions& options = {});

//! Applies every migration not yet recorded, in order, inside one transaction
//! (serialised across replicas). Returns the schema version reached.
int migrate(Store& store);

//! The PostgreSQL channel notify_change() sends on and ChangeFeed listens to.
inline constexpr const char* kChangeChannel = "gpunex_invalidate";

//! Tells every replica's ChangeFeed that what `topic` names changed ("api_key:ID"): sent only if, and
//! when, `tx` commits (PostgreSQL's pg_notify). Nothing on SQLite, which one process owns.
void notify_change(Tx& tx, std::string_view topic);

//! A named lease, so that a singleton worker runs on one replica at a time.
//! Taken by a conditional upsert: succeeds if the lease is free, expired, or
//! already held by `holder` (which extends it).
bool try_take_lease(Tx& tx, std::string_view name, std::string_view holder, std::int64_t now_ms,
                    std::int64_t ttl_ms);
//! Gives a lease back early if `holder` holds it.
void release_lease(Tx& tx, std::string_view name, std::string_view holder);

}  // namespace gpunex::store
