#pragma once
// Pieces shared by the SQLite and PostgreSQL drivers: the connection pool and
// the per-statement observer hook. Internal to src/store; not for callers.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "store/store.hpp"

namespace gpunex::store::detail {

//! The lower-cased first keyword of a statement ("select", "insert", ...), for the observer.
std::string first_keyword(std::string_view sql);

//! The first 80 characters of a statement, for error messages.
std::string sql_excerpt(std::string_view sql);

//! Times one statement and reports it to the observer when it ends, even by an exception.
class StatementTimer {
 public:
  StatementTimer(const StoreObserver& observer, std::string_view sql)
      : observer_(observer), sql_(sql), start_(std::chrono::steady_clock::now()) {}
  StatementTimer(const StatementTimer&) = delete;
  StatementTimer& operator=(const StatementTimer&) = delete;
  ~StatementTimer();

 private:
  const StoreObserver& observer_;
  std::string_view sql_;
  std::chrono::steady_clock::time_point start_;
};

//! A bounded pool of connections; each checked-out connection is used by one thread at a time.
template <class C>
class ConnectionPool {
 public:
  using Factory = std::function<std::unique_ptr<C>()>;

  //! A checked-out connection, handed back (or dropped, if discarded) when it goes out of scope.
  class Handle {
   public:
    Handle(ConnectionPool& pool, std::unique_ptr<C> conn) : pool_(&pool), conn_(std::move(conn)) {}
    Handle(Handle&& other) noexcept
        : pool_(other.pool_), conn_(std::move(other.conn_)), broken_(other.broken_) {}
    Handle& operator=(Handle&&) = delete;
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    ~Handle() {
      if (conn_) pool_->give_back(std::move(conn_), !broken_);
    }
    C& operator*() const { return *conn_; }
    C* operator->() const { return conn_.get(); }
    //! Drops the connection instead of returning it: it is in an unknown state.
    void discard() { broken_ = true; }

   private:
    ConnectionPool* pool_;
    std::unique_ptr<C> conn_;
    bool broken_ = false;
  };

  ConnectionPool(std::size_t capacity, std::chrono::milliseconds wait, Factory factory)
      : capacity_(capacity == 0 ? 1 : capacity), wait_(wait), factory_(std::move(factory)) {}

  //! Takes an idle connection, opens a new one below capacity, or waits; throws StoreUnavailable on timeout.
  Handle acquire() {
    std::unique_lock lock(mutex_);
    bool ready = cv_.wait_for(lock, wait_, [&] { return !idle_.empty() || open_ < capacity_; });
    if (!ready) throw StoreUnavailable("store: timed out waiting for a free database connection");
    if (!idle_.empty()) {
      auto conn = std::move(idle_.back());
      idle_.pop_back();
      return Handle(*this, std::move(conn));
    }
    ++open_;
    lock.unlock();
    try {
      return Handle(*this, factory_());
    } catch (...) {
      lock.lock();
      --open_;
      cv_.notify_one();
      throw;
    }
  }

 private:
  void give_back(std::unique_ptr<C> conn, bool keep) {
    std::unique_ptr<C> dropped;
    {
      std::lock_guard lock(mutex_);
      if (keep) {
        idle_.push_back(std::move(conn));
      } else {
        dropped = std::move(conn);
        --open_;
      }
    }
    cv_.notify_one();
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<C>> idle_;
  std::size_t open_ = 0;
  std::size_t capacity_;
  std::chrono::milliseconds wait_;
  Factory factory_;
};

//! Runs a transaction body on a pool handle whose connection has begun a transaction. Rolls back
//! (dropping the connection if even that fails) when the body throws (rethrown) or returns false.
//! Returns whether the caller should commit.
template <class Handle, class TxT, class Body>
bool run_body_or_roll_back(Handle& conn, TxT& tx, const Body& body) {
  bool commit = false;
  try {
    commit = body(tx);
  } catch (...) {
    if (!conn->rollback_quietly()) conn.discard();
    throw;
  }
  if (!commit && !conn->rollback_quietly()) conn.discard();
  return commit;
}

}  // namespace gpunex::store::detail
