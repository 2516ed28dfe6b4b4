#include "server/platform/rate_limit.hpp"

namespace gpunex::server {

void RateLimiter::prune(std::deque<Clock::time_point>& q, Clock::time_point now) const {
  while (!q.empty() && now - q.front() >= window_) q.pop_front();
}

void RateLimiter::maybe_sweep(Clock::time_point now) {
  // Forget idle addresses now and then so the map does not grow without bound.
  if (now - last_sweep_ < window_) return;
  last_sweep_ = now;
  for (auto it = hits_.begin(); it != hits_.end();) {
    prune(it->second, now);
    it = it->second.empty() ? hits_.erase(it) : std::next(it);
  }
}

bool RateLimiter::allow(const std::string& key, Clock::time_point now) {
  std::lock_guard lock(mu_);
  maybe_sweep(now);
  auto& q = hits_[key];
  prune(q, now);
  if (static_cast<int>(q.size()) >= limit_) return false;
  q.push_back(now);
  return true;
}

bool RateLimiter::exhausted(const std::string& key, Clock::time_point now) {
  std::lock_guard lock(mu_);
  auto it = hits_.find(key);
  if (it == hits_.end()) return false;
  prune(it->second, now);
  return static_cast<int>(it->second.size()) >= limit_;
}

void RateLimiter::record(const std::string& key, Clock::time_point now) {
  std::lock_guard lock(mu_);
  maybe_sweep(now);
  auto& q = hits_[key];
  prune(q, now);
  q.push_back(now);
}

int RateLimiter::retry_after_s(const std::string& key, Clock::time_point now) {
  std::lock_guard lock(mu_);
  auto it = hits_.find(key);
  if (it == hits_.end() || it->second.empty()) return 1;
  auto left = std::chrono::duration_cast<std::chrono::seconds>(window_ - (now - it->second.front())).count();
  return left < 1 ? 1 : static_cast<int>(left) + 1;
}

}  // namespace gpunex::server
