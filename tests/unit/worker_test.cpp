// Worker: two replicas (two Stores on one SQLite file) run the same named worker; the store lease
// lets one of them do the work, and the other takes over once the first stops and gives it back.

#include "server/workers/worker.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>

#include "store/store.hpp"
#include "util/clock.hpp"

using namespace gpunex;  // NOLINT: test file

namespace {

//! Polls until pred() holds or 10 s pass; returns whether it held.
bool eventually(const std::function<bool()>& pred) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

TEST(Worker, RunsOnOneReplicaAtATimeAndFailsOver) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("gpunex-worker-test-" + std::to_string(::getpid()) + "-" + std::to_string(util::SystemClock{}.now_ms()));
  const std::string url = "sqlite:" + (dir / "w.db").string();
  {
    auto replica_a = store::open_store(url);
    store::migrate(*replica_a);
    auto replica_b = store::open_store(url);

    std::atomic<int> inside{0};
    std::atomic<int> overlaps{0};
    std::atomic<int> rounds_a{0};
    std::atomic<int> rounds_b{0};
    const auto work = [&](std::atomic<int>& rounds) {
      return [&] {
        if (inside.fetch_add(1) != 0) ++overlaps;
        ++rounds;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        inside.fetch_sub(1);
      };
    };
    const auto interval = std::chrono::milliseconds(5);
    const util::SystemClock kClock;
    server::workers::Worker a(*replica_a, kClock, "test-singleton", interval, work(rounds_a));
    server::workers::Worker b(*replica_b, kClock, "test-singleton", interval, work(rounds_b));
    a.start();
    b.start();

    // Some 20 intervals: the first to take the lease keeps extending it (its TTL is 30 s).
    ASSERT_TRUE(eventually([&] { return rounds_a + rounds_b >= 20; }));
    const bool a_runs = rounds_a > 0;
    EXPECT_NE(a_runs, rounds_b > 0) << "a: " << rounds_a << " rounds, b: " << rounds_b;

    // The running one stops and gives the lease back; the other takes over at its next round.
    auto& running = a_runs ? a : b;
    auto& standby_rounds = a_runs ? rounds_b : rounds_a;
    running.stop();
    EXPECT_TRUE(eventually([&] { return standby_rounds >= 5; }));
    a.stop();
    b.stop();
    EXPECT_EQ(overlaps.load(), 0);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
