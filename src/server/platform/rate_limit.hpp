#pragma once
// A sliding-window counter per key (a client address), kept in memory on each
// replica: the limits guard one process's CPU and slow down password guessing.

#include <chrono>
#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>

namespace gpunex::server {

class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  RateLimiter(int limit, std::chrono::seconds window) : limit_(limit), window_(window) {}

  //! Records one event for key and says whether it is within the limit.
  bool allow(const std::string& key, Clock::time_point now = Clock::now());
  //! Whether key has already reached the limit (records nothing).
  bool exhausted(const std::string& key, Clock::time_point now = Clock::now());
  //! Records one event for key without checking.
  void record(const std::string& key, Clock::time_point now = Clock::now());
  //! Seconds until the oldest event of key leaves the window (for Retry-After).
  int retry_after_s(const std::string& key, Clock::time_point now = Clock::now());

 private:
  void prune(std::deque<Clock::time_point>& q, Clock::time_point now) const;
  void maybe_sweep(Clock::time_point now);
  int limit_;
  std::chrono::seconds window_;
  std::mutex mu_;
  std::unordered_map<std::string, std::deque<Clock::time_point>> hits_;
  Clock::time_point last_sweep_{};
};

//! Failed logins (issue #19), counted per (account, client address), per client address and per account.
//! Past a free allowance each failure doubles the wait before that count's next attempt, up to a cap;
//! nothing is ever locked for good. The account's own count delays only addresses that have failed on
//! it themselves, so a stranger's failures never stop the owner signing in from another client.
class LoginThrottle {
 public:
  using Clock = std::chrono::steady_clock;
  struct Settings {
    int free_per_pair = 3;       // failures on one account from one address before waits begin
    int free_per_address = 10;   // failures from one address, on any accounts
    int free_per_account = 10;   // failures on one account, from any addresses
    std::chrono::seconds max_wait{900};          // the longest wait an address earns
    std::chrono::seconds max_account_wait{60};   // the longest wait an account's count imposes
    std::chrono::seconds forget_after{86400};    // a count with no failure this long is dropped
    std::size_t max_entries = 200000;            // per map; beyond it, counts with no wait left are dropped
  };
  explicit LoginThrottle(Settings settings) : settings_(settings) {}

  //! How long `address` must wait before it may try `account` again (zero: go ahead).
  std::chrono::seconds wait(const std::string& account, const std::string& address, Clock::time_point now = Clock::now());
  //! Records one failed attempt.
  void failed(const std::string& account, const std::string& address, Clock::time_point now = Clock::now());
  //! A successful login clears the account's counts (the address's own count stays).
  void succeeded(const std::string& account, const std::string& address);

 private:
  struct Count {
    int failures = 0;
    Clock::time_point last{};
  };
  using Counts = std::unordered_map<std::string, Count>;
  std::chrono::seconds left(const Counts& m, const std::string& key, int free, std::chrono::seconds cap,
                            Clock::time_point now) const;
  void bump(Counts& m, const std::string& key, Clock::time_point now);
  void sweep(Counts& m, Clock::time_point now);
  Settings settings_;
  std::mutex mu_;
  Counts pairs_, addresses_, accounts_;
  Clock::time_point last_sweep_{};
};

}  // namespace gpunex::server
