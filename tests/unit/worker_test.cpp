// Worker: two replicas (two Stores on one SQLite file) run the same named worker; the store lease
// lets one of them do the work, and the other takes over once the first stops and gives it back.

#include "server/workers/worker.hpp"
#include "server/workers/watching.hpp"

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

TEST(Watching, AStretchBeginsAtTheFirstRoundAndAfterABreak) {
  using namespace std::chrono_literals;
  server::workers::Watching w(10s);
  const auto t = server::workers::Watching::Steady::time_point{} + 1000s;
  EXPECT_EQ(w.begin(5'000, t), 5'000);  // the first round begins watching
  EXPECT_TRUE(w.fresh());
  w.done(t);
  EXPECT_EQ(w.begin(6'000, t + 1s), 5'000);  // rounds that follow keep the stretch
  EXPECT_FALSE(w.fresh());
  w.done(t + 1s);
  // The clock may jump (a test clock moved an hour): real time says whether rounds were missed.
  EXPECT_EQ(w.begin(3'606'000, t + 2s), 5'000);
  w.done(t + 2s);
  // Rounds that failed (the store down) are no watching: after the break, a new stretch.
  EXPECT_EQ(w.begin(3'607'000, t + 3s), 5'000);  // failed: no done()
  EXPECT_EQ(w.begin(3'620'000, t + 13s), 3'620'000);
  EXPECT_TRUE(w.fresh());
}
