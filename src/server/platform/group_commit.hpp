#pragma once
// Group commit: requests queue their store work, and one writer thread runs
// everything queued in one transaction, answering each request only after that
// transaction has committed (nothing acknowledged can be lost). The batch shares
// one BEGIN/COMMIT and the pages a commit writes; SQLite has one writer at a
// time anyway, and the I/O threads stay free to parse the next requests instead
// of queueing on the write lock. The agent's heartbeats go through it.
//
// SQLite gets one writer thread; PostgreSQL, where a statement is a round trip
// and transactions run side by side, several (each batch in the order of its
// requests' keys, so that concurrent batches lock rows in one order).

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "store/store.hpp"

namespace gpunex::server {

class GroupCommit {
 public:
  //! One request's store work, run inside a batch's transaction after the batch's earlier requests. An
  //! error result stands for that request alone: none of its writes are kept.
  using Work = std::function<core::Result<nlohmann::json>(store::Tx&)>;
  //! A request's checks that write nothing (its machine is the caller's, its GPUs known), run in the batch's
  //! transaction before its work: a refusal there is answered alone and costs the batch nothing, where a
  //! refused Work rolls the batch back and runs the others again.
  using Check = std::function<core::Status(store::Tx&)>;
  //! How a request ended: its result, or (failure set) the exception that ended it.
  struct Outcome {
    core::Result<nlohmann::json> result;
    std::exception_ptr failure;
  };
  using Done = std::function<void(Outcome)>;
  //! Called after each committed batch with its size (metrics).
  using BatchObserver = std::function<void(std::size_t requests)>;

  //! `linger`: how long a writer that found fewer than max_batch requests waits, from the moment it woke,
  //! for more to join the batch. Without it, heartbeats arriving one by one commit one by one, and the
  //! commit (its WAL pages, fsync and checkpoint) is most of a heartbeat's cost; with a few milliseconds
  //! each commit carries several. Every request is still answered only after its batch committed.
  explicit GroupCommit(store::Store& store, BatchObserver observer = {}, std::size_t writers = 1,
                       std::size_t max_batch = 512, std::size_t max_queue = 16384,
                       std::chrono::milliseconds linger = std::chrono::milliseconds(0));
  ~GroupCommit();
  GroupCommit(const GroupCommit&) = delete;
  GroupCommit& operator=(const GroupCommit&) = delete;

  //! Queues work; `done` runs on a writer thread once its batch has committed or failed. When the queue
  //! is full or the writers have stopped, `done` runs at once with 503 unavailable. Work with the same
  //! key (a machine id) runs in the order submitted; a batch runs in key order.
  void submit(Work work, Done done, std::string key = {}, Check check = {});
  //! Runs what is queued, then ends the writer threads. Idempotent.
  void stop();

 private:
  struct Item {
    Work work;
    Done done;
    std::string key;
    Check check;
  };
  void loop();
  //! Runs items in as few transactions as their outcomes allow; answers each once.
  void run(std::vector<Item> items);
  //! One item in its own transaction.
  void run_alone(Item& item);
  static void finish(Item& item, Outcome outcome);

  store::Store& store_;
  const std::size_t max_batch_;
  const std::size_t max_queue_;
  const std::chrono::milliseconds linger_;
  BatchObserver observer_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  std::size_t idle_writers_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace gpunex::server
