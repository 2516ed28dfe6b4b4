#pragma once
// A few worker threads and a bounded queue for work too slow for the I/O threads (argon2 password
// hashing, ~64 MiB and tens of milliseconds each): a flood of logins waits here, or is turned away,
// while the I/O threads keep answering everything else.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace gpunex::server {

class WorkQueue {
 public:
  //! `threads` workers (at least 1) and room for `capacity` jobs waiting.
  WorkQueue(int threads, std::size_t capacity);
  //! Runs what is queued, then joins the workers.
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  //! Queues `job`; false (and `job` dropped) when the queue is full or stopping.
  bool submit(std::function<void()> job);
  //! Runs what is queued, then joins the workers; later submits are refused.
  void stop();

 private:
  void run();
  std::size_t capacity_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace gpunex::server
