#pragma once
// A small reusable background worker: a thread that every interval takes a
// named lease in the store (so one replica runs it at a time) and then does
// its work. Started and stopped with the server.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "store/store.hpp"
#include "util/clock.hpp"

namespace gpunex::server::workers {

//! How long a worker's lease outlives its holder: `lease_ttl`, but at least five intervals.
inline std::chrono::milliseconds lease_outlives(std::chrono::milliseconds lease_ttl,
                                                std::chrono::milliseconds interval) {
  return std::max(lease_ttl, 5 * interval);
}

class Worker {
 public:
  //! `work` runs on the worker thread while this replica holds lease `name`; exceptions are logged.
  //! `clock` times the lease and must outlive the worker. The lease outlives its holder by
  //! `lease_ttl` (at least five intervals): a replica that dies is replaced within that time.
  //! `on_failed` is told of each round that threw (the metrics count them).
  Worker(store::Store& store, const util::Clock& clock, std::string name, std::chrono::milliseconds interval,
         std::function<void()> work, std::chrono::milliseconds lease_ttl = std::chrono::seconds(30),
         std::function<void()> on_failed = {});
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  void start();
  //! Wakes the thread, waits for the current round to end, and gives the lease back.
  void stop();
  //! Runs a round soon instead of waiting for the interval (e.g. after queuing a mail).
  void poke();

 private:
  void loop();

  store::Store& store_;
  const util::Clock& clock_;
  std::string name_;
  std::string holder_;
  std::chrono::milliseconds interval_;
  std::chrono::milliseconds lease_ttl_;
  std::function<void()> work_;
  std::function<void()> on_failed_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool poked_ = false;
  std::thread thread_;
};

}  // namespace gpunex::server::workers
