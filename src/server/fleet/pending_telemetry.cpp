#include "server/fleet/pending_telemetry.hpp"

#include <algorithm>
#include <exception>
#include <utility>
#include <vector>

#include "util/log.hpp"

namespace gpunex::server {

void add_telemetry_sums(TelemetrySums& into, const TelemetrySums& from) {
  into.samples += from.samples;
  into.errors += from.errors;
  into.temp_n += from.temp_n;
  into.temp_sum += from.temp_sum;
  into.temp_max = std::max(into.temp_max, from.temp_max);
  into.power_n += from.power_n;
  into.power_sum += from.power_sum;
  into.power_max = std::max(into.power_max, from.power_max);
  into.util_n += from.util_n;
  into.util_sum += from.util_sum;
  into.util_max = std::max(into.util_max, from.util_max);
  into.mem_used_max = std::max(into.mem_used_max, from.mem_used_max);
  into.throttled += from.throttled;
  into.ecc_uncorrected_max = std::max(into.ecc_uncorrected_max, from.ecc_uncorrected_max);
}

TelemetrySums minute_sums(const MinuteSample& s, std::int64_t minute_ms) {
  TelemetrySums t;
  t.at_ms = minute_ms;
  t.samples = 1;
  t.errors = s.errors;
  t.temp_n = s.temp_n;
  t.temp_sum = t.temp_max = s.temp;
  t.power_n = s.power_n;
  t.power_sum = t.power_max = s.power;
  t.util_n = s.util_n;
  t.util_sum = t.util_max = s.util;
  t.mem_used_max = s.mem_used;
  t.throttled = s.throttled;
  t.ecc_uncorrected_max = s.ecc_uncorrected;
  return t;
}

std::string PendingTelemetry::Sample::text() const {
  if (const auto* given = std::get_if<std::string>(&readings)) return *given;
  return std::get<std::shared_ptr<const protocol::TelemetrySample>>(readings)->readings_text();  // never null
}

void PendingTelemetry::put_latest(Gpu& gpu, Sample sample) {
  if (!gpu.latest) {
    ++count_;
  } else if (gpu.latest->at_ms > sample.at_ms) {
    return;  // a newer sample is pending: this one came late
  }
  gpu.latest = std::move(sample);
}

void PendingTelemetry::add_sums(Gpu& gpu, const TelemetrySums& s) {
  // Minutes stay in order; a heartbeat's sample is nearly always for the newest one.
  auto it = std::find_if(gpu.minutes.rbegin(), gpu.minutes.rend(),
                         [&](const TelemetrySums& m) { return m.at_ms <= s.at_ms; });
  if (it != gpu.minutes.rend() && it->at_ms == s.at_ms) {
    add_telemetry_sums(*it, s);
    return;
  }
  gpu.minutes.insert(it.base(), s);
  ++count_;
}

void PendingTelemetry::put(const std::string& machine_id, const std::string& uuid, std::int64_t at_ms,
                           Readings readings) {
  std::lock_guard lock(mu_);
  put_latest(by_machine_[machine_id][uuid], Sample{at_ms, std::move(readings)});
}

void PendingTelemetry::put_samples(const std::string& machine_id, std::vector<Reading> readings) {
  std::lock_guard lock(mu_);
  OfMachine& gpus = by_machine_[machine_id];
  for (Reading& r : readings) {
    auto it = gpus.find(r.uuid);
    if (it == gpus.end()) it = gpus.emplace(std::string(r.uuid), Gpu{}).first;
    Gpu& gpu = it->second;
    put_latest(gpu, Sample{r.at_ms, std::move(r.readings)});
    add_sums(gpu, minute_sums(r.sums, r.minute_ms));
  }
}

void PendingTelemetry::put_sample(const std::string& machine_id, const std::string& uuid, std::int64_t at_ms,
                                  Readings readings, std::int64_t minute_ms, const MinuteSample& s) {
  std::vector<Reading> one;
  one.push_back(Reading{uuid, at_ms, std::move(readings), minute_ms, s});
  put_samples(machine_id, std::move(one));
}

PendingTelemetry::OfMachine PendingTelemetry::pending_of(const std::string& machine_id) const {
  std::lock_guard lock(mu_);
  auto it = by_machine_.find(machine_id);
  return it == by_machine_.end() ? OfMachine{} : it->second;
}

std::size_t PendingTelemetry::pending() const {
  std::lock_guard lock(mu_);
  return count_;
}

void PendingTelemetry::restore(std::unordered_map<std::string, OfMachine> taken) {
  std::lock_guard lock(mu_);
  for (auto& [machine_id, gpus] : taken) {
    for (auto& [uuid, g] : gpus) {
      Gpu& into = by_machine_[machine_id][uuid];
      if (g.latest) put_latest(into, std::move(*g.latest));
      for (const auto& m : g.minutes) add_sums(into, m);
    }
  }
}

std::size_t PendingTelemetry::flush(store::Store& store, std::size_t rows_per_tx, std::int64_t open_from_ms) {
  std::unordered_map<std::string, OfMachine> taken;
  {
    std::lock_guard lock(mu_);
    taken.swap(by_machine_);
    count_ = 0;
  }
  {  // The minutes in progress go back at once (this replica's readers miss them only meanwhile).
    std::unordered_map<std::string, OfMachine> open;
    for (auto& [machine_id, gpus] : taken) {
      for (auto& [uuid, g] : gpus) {
        auto from = std::find_if(g.minutes.begin(), g.minutes.end(),
                                 [&](const TelemetrySums& m) { return m.at_ms >= open_from_ms; });
        if (from == g.minutes.end()) continue;
        auto& kept = open[machine_id][uuid].minutes;
        kept.assign(std::make_move_iterator(from), std::make_move_iterator(g.minutes.end()));
        g.minutes.erase(from, g.minutes.end());
      }
    }
    if (!open.empty()) restore(std::move(open));
  }
  const auto rows_of = [](const OfMachine& gpus) {
    std::size_t n = 0;
    for (const auto& [uuid, g] : gpus) n += (g.latest ? 1 : 0) + g.minutes.size();
    return n;
  };
  // Whole machines per transaction, in key order (replicas flushing at once take row locks in the same
  // order on PostgreSQL).
  std::vector<decltype(taken)::iterator> order;
  order.reserve(taken.size());
  for (auto it = taken.begin(); it != taken.end(); ++it) order.push_back(it);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a->first < b->first; });
  std::vector<LatestSampleRow> latest;
  std::vector<std::string> texts;  // the latest rows' samples as text (reserved: the rows point into it)
  std::vector<MinuteSumsRow> minutes;
  std::size_t written = 0;
  std::size_t next = 0;
  try {
    while (next < order.size()) {
      latest.clear();
      texts.clear();
      minutes.clear();
      std::size_t rows = 0;
      std::size_t end = next;
      for (; end < order.size() && (rows == 0 || rows + rows_of(order[end]->second) <= rows_per_tx); ++end) {
        rows += rows_of(order[end]->second);
      }
      texts.reserve(rows);
      for (std::size_t i = next; i < end; ++i) {
        const auto& [machine_id, gpus] = *order[i];
        for (const auto& [uuid, g] : gpus) {
          if (g.latest) {
            texts.push_back(g.latest->text());
            latest.push_back({&machine_id, &uuid, g.latest->at_ms, &texts.back()});
          }
          for (const auto& m : g.minutes) minutes.push_back({&machine_id, &uuid, &m});
        }
      }
      store.transact([&](store::Tx& tx) {
        MachinesRepo repo(tx);
        repo.store_latest_samples(latest);
        repo.add_minute_sums(minutes);
      });
      written += rows;
      for (; next < end; ++next) taken.erase(order[next]);  // the other iterators stay valid
    }
  } catch (...) {
    restore(std::move(taken));
    throw;
  }
  return written;
}

void PendingTelemetry::start(store::Store& store, std::chrono::milliseconds every, const util::Clock& clock) {
  std::lock_guard lock(run_mu_);
  if (flusher_.joinable() || stopping_) return;
  store_ = &store;
  flusher_ = std::thread([this, every, &clock] {
    std::unique_lock lock(run_mu_);
    while (!run_cv_.wait_for(lock, every, [this] { return stopping_; })) {
      lock.unlock();
      try {
        flush(*store_, kRowsPerTx, minute_of(clock.now_ms()));
      } catch (const std::exception& e) {
        util::log_event("warn", "pending telemetry not written; kept for the next flush",
                        {{"error", e.what()}, {"pending", pending()}});
      }
      lock.lock();
    }
  });
}

void PendingTelemetry::stop() {
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
    util::log_event("error", "pending telemetry lost at stop", {{"error", e.what()}, {"pending", pending()}});
  }
}

}  // namespace gpunex::server
