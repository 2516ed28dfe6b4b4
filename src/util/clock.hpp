#pragma once
// The wall clock, behind an interface so that the server can be run through simulated days:
// SystemClock in production, SettableClock in tests (and in a server started with a test clock).
// Durations and timeouts use std::chrono::steady_clock directly; this is the calendar time that
// rules compare with (heartbeat ages, schedules, expiries, leases, the payout calendar).

#include <atomic>
#include <cstdint>

namespace gpunex::util {

//! The system's wall clock now: milliseconds since the Unix epoch, UTC. For the programs that carry no
//! Clock (the agent); the server reads the time through its Clock.
std::int64_t system_now_ms();

class Clock {
 public:
  virtual ~Clock() = default;
  //! Milliseconds since the Unix epoch, UTC.
  virtual std::int64_t now_ms() const = 0;
};

class SystemClock final : public Clock {
 public:
  std::int64_t now_ms() const override;
};

//! A clock that stands still until moved. Safe to read and move from any thread.
class SettableClock final : public Clock {
 public:
  explicit SettableClock(std::int64_t start_ms) : now_ms_(start_ms) {}
  std::int64_t now_ms() const override { return now_ms_.load(std::memory_order_relaxed); }
  void set(std::int64_t ms) { now_ms_.store(ms, std::memory_order_relaxed); }
  void advance(std::int64_t ms) { now_ms_.fetch_add(ms, std::memory_order_relaxed); }

 private:
  std::atomic<std::int64_t> now_ms_;
};

}  // namespace gpunex::util
