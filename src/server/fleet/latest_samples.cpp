#include "server/fleet/latest_samples.hpp"

#include <exception>
#include <utility>
#include <vector>

#include "server/fleet/machines_repo.hpp"
#include "util/log.hpp"

namespace gpunex::server {

void LatestSamples::put(const std::string& machine_id, const std::string& uuid, std::int64_t at_ms, std::string text) {
  std::lock_guard lock(mu_);
  auto& gpus = by_machine_[machine_id];
  auto [it, added] = gpus.try_emplace(uuid, Sample{at_ms, {}});
  if (added) {
    ++count_;
  } else if (it->second.at_ms > at_ms) {
    return;  // a newer sample is pending: this one came late
  }
  it->second.at_ms = at_ms;
  it->second.text = std::move(text);
}

LatestSamples::OfMachine LatestSamples::pending_of(const std::string& machine_id) const {
  std::lock_guard lock(mu_);
  auto it = by_machine_.find(machine_id);
  return it == by_machine_.end() ? OfMachine{} : it->second;
}

std::size_t LatestSamples::pending() const {
  std::lock_guard lock(mu_);
  return count_;
}

void LatestSamples::restore(std::map<std::string, OfMachine> samples) {
  for (auto& [machine_id, gpus] : samples) {
    for (auto& [uuid, s] : gpus) put(machine_id, uuid, s.at_ms, std::move(s.text));
  }
}

std::size_t LatestSamples::flush(store::Store& store, std::size_t rows_per_tx) {
  std::map<std::string, OfMachine> taken;
  {
    std::lock_guard lock(mu_);
    taken.swap(by_machine_);
    count_ = 0;
  }
  std::vector<LatestSampleRow> rows;
  std::size_t written = 0;
  auto it = taken.begin();
  try {
    while (it != taken.end()) {
      // Whole machines per transaction, in key order (replicas flushing at once take row locks in the
      // same order on PostgreSQL).
      rows.clear();
      auto end = it;
      for (; end != taken.end() && (rows.empty() || rows.size() + end->second.size() <= rows_per_tx); ++end) {
        for (const auto& [uuid, s] : end->second) rows.push_back({&end->first, &uuid, s.at_ms, &s.text});
      }
      store.transact([&](store::Tx& tx) { MachinesRepo(tx).store_latest_samples(rows); });
      written += rows.size();
      it = taken.erase(it, end);
    }
  } catch (...) {
    restore(std::move(taken));
    throw;
  }
  return written;
}

void LatestSamples::start(store::Store& store, std::chrono::milliseconds every) {
  std::lock_guard lock(run_mu_);
  if (flusher_.joinable() || stopping_) return;
  store_ = &store;
  flusher_ = std::thread([this, every] {
    std::unique_lock lock(run_mu_);
    while (!run_cv_.wait_for(lock, every, [this] { return stopping_; })) {
      lock.unlock();
      try {
        flush(*store_);
      } catch (const std::exception& e) {
        util::log_event("warn", "latest telemetry samples not written; kept for the next flush",
                        {{"error", e.what()}, {"pending", pending()}});
      }
      lock.lock();
    }
  });
}

void LatestSamples::stop() {
  {
    std::lock_guard lock(run_mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  run_cv_.notify_all();
  if (flusher_.joinable()) flusher_.join();
  if (store_ == nullptr) return;
  try {
    flush(*store_);
  } catch (const std::exception& e) {
    util::log_event("error", "latest telemetry samples lost at stop", {{"error", e.what()}, {"pending", pending()}});
  }
}

}  // namespace gpunex::server
