#pragma once
// The newest telemetry sample of each GPU, held in memory and written to telemetry_latest in batches.
//
// Every heartbeat carries a sample per GPU, and each one used to be an upsert in the heartbeat's own
// transaction: about a fifth of the server's CPU per heartbeat (bench/README.md), for a value the next
// heartbeat replaces 15 s later. A sample is shown (the machine card's "latest"), never counted: the
// per-minute aggregates (the charts) and presence (the reliability score) stay in the heartbeat's
// transaction. So the samples wait here and are written every flush interval, in key order, many rows
// to a statement:
// - this replica's own readers see them at once (overlay: a pending sample newer than the stored one
//   wins), another replica's within one flush interval;
// - a replica that crashes loses at most one interval of samples, which the next heartbeat replaces;
//   a clean stop writes them all;
// - a write that fails keeps them pending for the next flush (a newer sample put meanwhile wins);
// - a heartbeat puts its samples inside its transaction (a replayed seq puts none); should that
//   transaction fail after all, its samples may still be shown: they are the agent's readings all the same.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "store/store.hpp"

namespace gpunex::server {

class LatestSamples {
 public:
  struct Sample {
    std::int64_t at_ms = 0;
    std::string text;  // protocol::TelemetrySample::readings_text()
  };
  //! A GPU's samples by uuid.
  using OfMachine = std::map<std::string, Sample, std::less<>>;

  LatestSamples() = default;
  ~LatestSamples() { stop(); }
  LatestSamples(const LatestSamples&) = delete;
  LatestSamples& operator=(const LatestSamples&) = delete;

  //! Keeps the sample unless one at least as new is pending for the GPU.
  void put(const std::string& machine_id, const std::string& uuid, std::int64_t at_ms, std::string text);
  //! The machine's samples not yet written, by uuid.
  OfMachine pending_of(const std::string& machine_id) const;
  std::size_t pending() const;

  //! Writes every pending sample, in transactions of at most `rows_per_tx` rows so that a long flush does
  //! not hold the store's writer from the heartbeats; a stored sample newer than a pending one is kept.
  //! Returns how many were written. Throws what the store threw; those not written stay pending.
  std::size_t flush(store::Store& store, std::size_t rows_per_tx = 4096);

  //! Flushes every `every` on a thread of its own until stop(). Errors are logged and retried next time.
  void start(store::Store& store, std::chrono::milliseconds every);
  //! Ends the thread, then writes what is pending. Idempotent.
  void stop();

 private:
  //! Puts back samples whose write failed, unless a newer one was put meanwhile.
  void restore(std::map<std::string, OfMachine> samples);

  mutable std::mutex mu_;
  std::map<std::string, OfMachine> by_machine_;
  std::size_t count_ = 0;

  std::mutex run_mu_;
  std::condition_variable run_cv_;
  bool stopping_ = false;
  store::Store* store_ = nullptr;
  std::thread flusher_;
};

}  // namespace gpunex::server
