#pragma once
// The agents' rentals long polls (protocol/rentals.hpp), held here until their machine's rentals
// change. A change made by this server rings the machine's bell and its poll is answered at once;
// a change made by another replica is found by a look at every waiting machine's version, one
// batched store read per second (PostgreSQL LISTEN/NOTIFY can replace that look: issue #20). One
// thread; the answers are written by the caller's `answer` on that thread.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace gpunex::server::rentals {

class AgentPolls {
 public:
  //! The current version of each of the machines (rentals::versions in a read transaction).
  using VersionsOf = std::function<std::map<std::string, std::string>(const std::vector<std::string>& machines)>;
  using Clock = std::chrono::steady_clock;

  explicit AgentPolls(VersionsOf versions_of, std::chrono::milliseconds look_every = std::chrono::seconds(1));
  //! Answers every poll still waiting, then stops the thread.
  ~AgentPolls();
  //! Answers every poll still waiting now, and any poll from now on at once (the server is shutting down:
  //! an agent parked here would hold its connection open for the whole shutdown grace).
  void release();
  AgentPolls(const AgentPolls&) = delete;
  AgentPolls& operator=(const AgentPolls&) = delete;

  //! Calls `answer` (on the polls' thread) once the machine's version is not `known`, or at `deadline`.
  void wait(std::string machine_id, std::string known, Clock::time_point deadline, std::function<void()> answer);
  //! The machine's rentals changed here: its polls are looked at now.
  void ring(const std::string& machine_id);
  std::size_t waiting() const;

 private:
  struct Waiter {
    std::string machine_id;
    std::string known;
    Clock::time_point deadline;
    std::function<void()> answer;
  };
  void loop();

  VersionsOf versions_of_;
  std::chrono::milliseconds look_every_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Waiter> waiters_;
  std::set<std::string> rung_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace gpunex::server::rentals
