#pragma once
// Since when a worker has been watching without a break. The platform's own outage (every replica
// stopped, the store unreachable) must not read as the providers' machines going quiet: a worker that
// was not running saw nothing, so what it judges from silence (a machine offline, a rental's agent
// lost) counts only from when it started watching again.

#include <chrono>
#include <cstdint>
#include <optional>

namespace gpunex::server::workers {

class Watching {
 public:
  using Steady = std::chrono::steady_clock;
  //! A break is longer than `max_gap` of real time between rounds that succeeded.
  explicit Watching(std::chrono::milliseconds max_gap) : max_gap_(max_gap) {}

  //! At the start of a round at clock time `now_ms` (`steady` its real time): the clock time this
  //! stretch of watching began. A new stretch begins at the first round, and at a round after a break:
  //! rounds that failed (the store down), or the worker's lease held by another replica meanwhile.
  std::int64_t begin(std::int64_t now_ms, Steady::time_point steady = Steady::now()) {
    fresh_ = !since_ms_ || !last_ok_ || steady - *last_ok_ > max_gap_;
    if (fresh_) since_ms_ = now_ms;
    return *since_ms_;
  }
  //! Whether the round begun last started a new stretch.
  bool fresh() const { return fresh_; }
  //! The round begun last succeeded (`steady` its real time).
  void done(Steady::time_point steady = Steady::now()) { last_ok_ = steady; }

 private:
  std::chrono::milliseconds max_gap_;
  std::optional<std::int64_t> since_ms_;
  std::optional<Steady::time_point> last_ok_;
  bool fresh_ = true;
};

}  // namespace gpunex::server::workers
