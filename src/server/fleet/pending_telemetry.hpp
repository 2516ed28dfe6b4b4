#pragma once
// Telemetry held in memory and written in batches: each GPU's newest sample (telemetry_latest) and its
// per-minute aggregates (telemetry_minute, the charts).
//
// Every heartbeat carries a sample per GPU. Each one used to be two upserts in the heartbeat's own
// transaction: the latest sample's, about a fifth of the server's CPU per heartbeat, for a value the next
// heartbeat replaces 15 s later; and the minute's, about 6% more, for sums that four heartbeats in a row add
// to (bench/README.md). Both are shown, never counted: presence (the reliability score), events and the seq stay in the
// heartbeat's transaction. So they wait here and are written every flush interval, in key order, many rows
// to a statement:
// - a minute's sums are written once, when the minute has ended: the flush keeps the minute in progress
//   pending, as heartbeats still add to it. Written at every flush, a minute was split across two of them
//   (the flush runs at any second of the minute): an INSERT, then an UPDATE of the same row, a dead row
//   for vacuum (bench/README.md, heartbeat path (10));
// - this replica's own readers see them at once (overlay: a pending sample newer than the stored one
//   wins; pending sums are added to the stored ones), another replica's samples within one flush interval
//   and its minutes within one flush interval after they ended;
// - a replica that crashes loses at most one interval of samples (the next heartbeat replaces them), and
//   of the charts the minutes that ended since the last flush and the minute in progress; a clean stop
//   writes them all;
// - a write that fails keeps them pending for the next flush (a newer sample put meanwhile wins, sums put
//   meanwhile are added). A commit whose outcome the store cannot tell (the connection lost while
//   committing) is retried too, so its sums may then be counted twice;
// - a heartbeat puts its telemetry inside its transaction (a replayed seq puts none); should that
//   transaction fail after all, its telemetry may still be shown: they are the agent's readings all the same.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <variant>
#include <vector>

#include "protocol/heartbeat.hpp"
#include "server/fleet/machines_repo.hpp"
#include "store/store.hpp"
#include "util/clock.hpp"

namespace gpunex::server {

//! The minute that telemetry or presence at `ms` counts in: its first millisecond.
constexpr std::int64_t minute_of(std::int64_t ms) {
  return ms - (ms % 60'000);
}

class PendingTelemetry {
 public:
  //! A sample's readings: as JSON text, or the agent's sample itself (a pointer into the heartbeat that
  //! carried it, which it keeps alive), formatted only when read. A GPU's pending sample is replaced by the
  //! next heartbeat's, so of the four a 60 s flush interval sees, three were never formatted (their text
  //! was 4% of the server's CPU per heartbeat, bench/README.md heartbeat path (7)).
  using Readings = std::variant<std::string, std::shared_ptr<const protocol::TelemetrySample>>;
  struct Sample {
    std::int64_t at_ms = 0;
    Readings readings;
    //! protocol::TelemetrySample::readings_text(), or the text given.
    std::string text() const;
  };
  //! What waits for one GPU: its newest sample, and its minutes' sums (at_ms = the minute), oldest first.
  struct Gpu {
    std::optional<Sample> latest;
    std::vector<TelemetrySums> minutes;
  };
  //! A machine's GPUs by uuid.
  using OfMachine = std::map<std::string, Gpu, std::less<>>;

  //! The most rows a flush writes in one transaction.
  static constexpr std::size_t kRowsPerTx = 4096;

  PendingTelemetry() = default;
  ~PendingTelemetry() { stop(); }
  PendingTelemetry(const PendingTelemetry&) = delete;
  PendingTelemetry& operator=(const PendingTelemetry&) = delete;

  //! Keeps the sample as the GPU's latest unless one at least as new is pending (no minute's sums).
  void put(const std::string& machine_id, const std::string& uuid, std::int64_t at_ms, Readings readings);
  //! A heartbeat's sample of one GPU.
  struct Reading {
    std::string_view uuid;  // valid for the call
    std::int64_t at_ms = 0;
    Readings readings;
    std::int64_t minute_ms = 0;
    MinuteSample sums;
  };
  //! A heartbeat's samples of the machine's GPUs: each kept as its GPU's latest unless one at least as
  //! new is pending, and added to the pending sums of its minute. One lookup of the machine for them all.
  void put_samples(const std::string& machine_id, std::vector<Reading> readings);
  //! put_samples for one GPU.
  void put_sample(const std::string& machine_id, const std::string& uuid, std::int64_t at_ms, Readings readings,
                  std::int64_t minute_ms, const MinuteSample& s);
  //! The machine's telemetry not written yet, by uuid.
  OfMachine pending_of(const std::string& machine_id) const;
  //! Pending rows: latest samples plus minutes.
  std::size_t pending() const;

  //! Writes everything pending, in transactions of at most `rows_per_tx` rows so that a long flush does
  //! not hold the store's writer from the heartbeats; a stored sample newer than a pending one is kept,
  //! pending sums are added to the stored ones. The sums of minutes at or after `open_from_ms` (the
  //! minute in progress) stay pending. Returns how many rows were written. Throws what the store threw;
  //! what was not written stays pending.
  std::size_t flush(store::Store& store, std::size_t rows_per_tx = kRowsPerTx,
                    std::int64_t open_from_ms = std::numeric_limits<std::int64_t>::max());

  //! Flushes every `every` on a thread of its own until stop(), keeping the minute in progress by `clock`
  //! (which must outlive the thread). Errors are logged and retried next time.
  void start(store::Store& store, std::chrono::milliseconds every, const util::Clock& clock);
  //! Ends the thread, then writes what is pending. Idempotent.
  void stop();

 private:
  //! Puts back what a failed write held: a sample unless a newer one was put meanwhile, sums added.
  void restore(std::unordered_map<std::string, OfMachine> taken);
  //! Under mu_: keeps `sample` as the GPU's latest unless a newer one is pending.
  void put_latest(Gpu& gpu, Sample sample);
  //! Under mu_: adds `s` to the GPU's sums for s.at_ms.
  void add_sums(Gpu& gpu, const TelemetrySums& s);

  mutable std::mutex mu_;
  // Hashed: every heartbeat looks its machine up here (a map's string compares were ~2% of the server's
  // CPU at 20,000 agents); flush() sorts the machines it writes.
  std::unordered_map<std::string, OfMachine> by_machine_;
  std::size_t count_ = 0;

  std::mutex run_mu_;
  std::condition_variable run_cv_;
  bool stopping_ = false;
  store::Store* store_ = nullptr;
  std::thread flusher_;
};

//! Adds `from`'s readings to `into` (the same span): counts and sums add, maxima take the larger, as
//! telemetry_minute's upsert does.
void add_telemetry_sums(TelemetrySums& into, const TelemetrySums& from);

//! One sample as a minute's sums (samples = 1) for the minute starting at `minute_ms`.
TelemetrySums minute_sums(const MinuteSample& s, std::int64_t minute_ms);

}  // namespace gpunex::server
