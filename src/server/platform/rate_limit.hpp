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

}  // namespace gpunex::server
