#pragma once
// What the rental tests share: the real engine they run on (GPUNEX_TEST_DOCKER_HOST), seen through a
// runtime that lists only this test's containers (tests run in parallel on one engine, and an agent
// removes every rental container its server does not list), an event log to wait on, and rentals.

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agent/rentals.hpp"
#include "agent/runtime/container_runtime.hpp"
#include "protocol/rentals.hpp"
#include "util/log.hpp"

namespace gpunex::testing {

inline constexpr const char* kTestImage = "localhost/gpunex-test:1";

//! Logging at error level, set up once per process (a second set-up throws).
inline void quiet_logging() {
  static const bool once = util::init_logging("error");
  (void)once;
}

//! The engine the tests use; an empty string when none is configured (the caller skips, or fails on CI).
inline std::string test_docker_host() {
  const char* host = std::getenv("GPUNEX_TEST_DOCKER_HOST");
  return host == nullptr ? "" : host;
}

//! A prefix for this process's rental ids ("t1234_").
inline std::string test_prefix() {
  return "t" + std::to_string(::getpid()) + "_";
}

//! The real runtime, listing only the rental containers whose rental id starts with `prefix`.
class PrefixedRuntime final : public agent::runtime::ContainerRuntime {
 public:
  PrefixedRuntime(agent::runtime::ContainerRuntime& real, std::string prefix)
      : real_(real), prefix_(std::move(prefix)) {}
  std::string describe() const override { return real_.describe(); }
  core::Status ensure_image(const std::string& image,
                            const std::function<void(const agent::runtime::PullProgress&)>& progress) override {
    return real_.ensure_image(image, progress);
  }
  core::Result<std::string> create(const agent::runtime::ContainerSpec& spec) override { return real_.create(spec); }
  core::Status start(const std::string& id) override { return real_.start(id); }
  core::Result<agent::runtime::ContainerState> inspect(const std::string& id) override { return real_.inspect(id); }
  core::Result<std::string> logs(const std::string& id, int tail_lines) override { return real_.logs(id, tail_lines); }
  core::Status stop_and_remove(const std::string& id, std::chrono::seconds grace) override {
    return real_.stop_and_remove(id, grace);
  }
  core::Status stop(const std::string& id, std::chrono::seconds grace) override { return real_.stop(id, grace); }
  core::Result<agent::runtime::RentalNetwork> network(const std::string& rental_id) override {
    return real_.network(rental_id);
  }
  core::Status remove_network(const std::string& rental_id) override { return real_.remove_network(rental_id); }
  core::Result<std::vector<agent::runtime::ContainerState>> list_rental_containers() override {
    auto all = real_.list_rental_containers();
    if (!all) return all;
    std::vector<agent::runtime::ContainerState> mine;
    for (auto& c : *all) {
      if (c.rental_id.rfind(prefix_, 0) == 0) mine.push_back(std::move(c));
    }
    return mine;
  }

 private:
  agent::runtime::ContainerRuntime& real_;
  std::string prefix_;
};

//! Every event a RentalManager (or the agent's server) saw, to wait on.
class EventLog {
 public:
  agent::RentalEventSink sink() {
    return [this](protocol::RentalEvent e, bool droppable) { add(std::move(e), droppable); };
  }
  void add(protocol::RentalEvent e, bool droppable) {
    {
      std::lock_guard lock(mu_);
      events_.push_back(std::move(e));
      droppable_.push_back(droppable);
    }
    cv_.notify_all();
  }
  //! The first event of `type` for `rental`, waiting up to `timeout` for it.
  std::optional<protocol::RentalEvent> wait_for(const std::string& rental, protocol::RentalEventType type,
                                                std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    std::unique_lock lock(mu_);
    std::optional<protocol::RentalEvent> found;
    cv_.wait_for(lock, timeout, [&] {
      for (const auto& e : events_) {
        if (e.rental_id == rental && e.type == type) {
          found = e;
          return true;
        }
      }
      return false;
    });
    return found;
  }
  //! The events of `rental` but its logs, in order.
  std::vector<protocol::RentalEvent> of(const std::string& rental) {
    std::lock_guard lock(mu_);
    std::vector<protocol::RentalEvent> out;
    for (const auto& e : events_) {
      if (e.rental_id == rental && e.type != protocol::RentalEventType::logs) out.push_back(e);
    }
    return out;
  }
  //! The event types of `rental` but logs, as text: "starting running ended".
  std::string types(const std::string& rental) {
    std::string out;
    for (const auto& e : of(rental)) out += (out.empty() ? "" : " ") + std::string(protocol::to_string(e.type));
    return out;
  }
  //! Whether every logs event was droppable and no other one was.
  bool only_logs_droppable() {
    std::lock_guard lock(mu_);
    for (std::size_t i = 0; i < events_.size(); ++i) {
      if (droppable_[i] != (events_[i].type == protocol::RentalEventType::logs)) return false;
    }
    return true;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<protocol::RentalEvent> events_;
  std::vector<bool> droppable_;
};

inline protocol::AssignedRental rental(const std::string& id, core::rental::State state,
                                       std::vector<std::string> command, std::vector<int> ports = {}) {
  protocol::AssignedRental r;
  r.id = id;
  r.state = state;
  r.gpu_uuids = {"GPU-test-0"};
  r.spec.image = kTestImage;
  r.spec.command = std::move(command);
  r.spec.ports = std::move(ports);
  return r;
}

inline protocol::AgentRentals answer(std::vector<protocol::AssignedRental> list) {
  protocol::AgentRentals a;
  a.version = protocol::rentals_version(list);
  a.rentals = std::move(list);
  return a;
}

}  // namespace gpunex::testing
