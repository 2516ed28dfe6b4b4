#include "server/platform/rate_limit.hpp"

#include <algorithm>
#include <cstdint>

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

namespace {
std::string pair_key(const std::string& account, const std::string& address) { return address + "\n" + account; }
}  // namespace

std::chrono::seconds LoginThrottle::left(const Counts& m, const std::string& key, int free, std::chrono::seconds cap,
                                         Clock::time_point now) const {
  auto it = m.find(key);
  if (it == m.end() || it->second.failures <= free) return std::chrono::seconds(0);
  // 1 s after the first failure past the allowance, then 2, 4, 8 ... up to the cap.
  const int over = std::min(it->second.failures - free - 1, 30);
  const auto wait = std::min(std::chrono::seconds(std::int64_t{1} << over), cap);
  const auto until = it->second.last + wait;
  if (until <= now) return std::chrono::seconds(0);
  return std::chrono::ceil<std::chrono::seconds>(until - now);
}

std::chrono::seconds LoginThrottle::wait(const std::string& account, const std::string& address,
                                         Clock::time_point now) {
  std::lock_guard lock(mu_);
  const auto pair = pair_key(account, address);
  auto w = std::max(left(pairs_, pair, settings_.free_per_pair, settings_.max_wait, now),
                    left(addresses_, address, settings_.free_per_address, settings_.max_wait, now));
  // The account's count holds back only an address that has failed on it: a fresh client goes ahead.
  if (pairs_.count(pair) != 0) {
    w = std::max(w, left(accounts_, account, settings_.free_per_account, settings_.max_account_wait, now));
  }
  return w;
}

void LoginThrottle::bump(Counts& m, const std::string& key, Clock::time_point now) {
  auto& c = m[key];
  ++c.failures;
  c.last = now;
}

void LoginThrottle::sweep(Counts& m, Clock::time_point now) {
  const bool full = m.size() > settings_.max_entries;
  for (auto it = m.begin(); it != m.end();) {
    const auto idle = now - it->second.last;
    // When full, a count whose wait is over goes too (a flood of made-up accounts cannot grow it forever).
    const bool drop = idle >= settings_.forget_after || (full && idle >= settings_.max_wait);
    it = drop ? m.erase(it) : std::next(it);
  }
}

void LoginThrottle::failed(const std::string& account, const std::string& address, Clock::time_point now) {
  std::lock_guard lock(mu_);
  const bool full = pairs_.size() > settings_.max_entries || addresses_.size() > settings_.max_entries ||
                    accounts_.size() > settings_.max_entries;
  if (full || now - last_sweep_ >= std::chrono::minutes(10)) {
    last_sweep_ = now;
    sweep(pairs_, now);
    sweep(addresses_, now);
    sweep(accounts_, now);
  }
  bump(pairs_, pair_key(account, address), now);
  bump(addresses_, address, now);
  bump(accounts_, account, now);
}

void LoginThrottle::succeeded(const std::string& account, const std::string& address) {
  std::lock_guard lock(mu_);
  pairs_.erase(pair_key(account, address));
  accounts_.erase(account);
}

}  // namespace gpunex::server
