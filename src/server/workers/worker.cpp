#include "server/workers/worker.hpp"

#include <algorithm>

#include "util/crypto.hpp"
#include "util/log.hpp"

namespace gpunex::server::workers {

Worker::Worker(store::Store& store, const util::Clock& clock, std::string name, std::chrono::milliseconds interval,
               std::function<void()> work, std::chrono::milliseconds lease_ttl, std::function<void()> on_failed)
    : store_(store),
      clock_(clock),
      name_(std::move(name)),
      holder_(util::new_id("wrk")),
      interval_(interval),
      lease_ttl_(lease_ttl),
      work_(std::move(work)),
      on_failed_(std::move(on_failed)) {}

Worker::~Worker() { stop(); }

void Worker::start() {
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { loop(); });
}

void Worker::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Worker::poke() {
  {
    std::lock_guard lock(mu_);
    poked_ = true;
  }
  cv_.notify_all();
}

void Worker::loop() {
  // The lease outlives a few rounds, so a crashed replica's work is picked up by another within that time.
  const std::int64_t ttl_ms = lease_outlives(lease_ttl_, interval_).count();
  bool held = false;
  while (true) {
    {
      std::unique_lock lock(mu_);
      if (stopping_) break;
    }
    try {
      held = store_.transact([&](store::Tx& tx) { return store::try_take_lease(tx, name_, holder_, clock_.now_ms(), ttl_ms); });
      if (held) work_();
    } catch (const std::exception& e) {
      util::log_event("error", "worker round failed", {{"worker", name_}, {"error", e.what()}});
      if (on_failed_) on_failed_();
    }
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, interval_, [&] { return stopping_ || poked_; });
    poked_ = false;
    if (stopping_) break;
  }
  if (held) {
    try {
      store_.transact([&](store::Tx& tx) { store::release_lease(tx, name_, holder_); });
    } catch (const std::exception& e) {
      util::log_event("warn", "worker could not release its lease", {{"worker", name_}, {"error", e.what()}});
    }
  }
}

}  // namespace gpunex::server::workers
