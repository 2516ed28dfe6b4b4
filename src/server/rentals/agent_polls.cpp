#include "server/rentals/agent_polls.hpp"

#include <algorithm>

#include "util/log.hpp"

namespace gpunex::server::rentals {

AgentPolls::AgentPolls(VersionsOf versions_of, std::chrono::milliseconds look_every)
    : versions_of_(std::move(versions_of)), look_every_(look_every) {
  thread_ = std::thread([this] { loop(); });
}

AgentPolls::~AgentPolls() {
  release();
  if (thread_.joinable()) thread_.join();
}

void AgentPolls::release() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
}

void AgentPolls::wait(std::string machine_id, std::string known, Clock::time_point deadline,
                      std::function<void()> answer) {
  {
    std::lock_guard lock(mu_);
    if (!stopping_) {
      waiters_.push_back(Waiter{std::move(machine_id), std::move(known), deadline, std::move(answer)});
      cv_.notify_all();
      return;
    }
  }
  answer();
}

void AgentPolls::ring(const std::string& machine_id) {
  {
    std::lock_guard lock(mu_);
    rung_.insert(machine_id);
  }
  cv_.notify_all();
}

std::size_t AgentPolls::waiting() const {
  std::lock_guard lock(mu_);
  return waiters_.size();
}

void AgentPolls::loop() {
  Clock::time_point next_look = Clock::now() + look_every_;
  std::unique_lock lock(mu_);
  while (true) {
    Clock::time_point wake = next_look;
    for (const auto& w : waiters_) wake = std::min(wake, w.deadline);
    cv_.wait_until(lock, wake, [&] { return stopping_ || !rung_.empty() || Clock::now() >= wake; });
    const auto now = Clock::now();
    const bool look_all = now >= next_look;
    if (look_all) next_look = now + look_every_;
    std::set<std::string> rung;
    rung.swap(rung_);
    // Which machines to look at: every waiting one on the periodic look, else the rung ones.
    std::vector<std::string> machines;
    for (const auto& w : waiters_) {
      if ((look_all || rung.contains(w.machine_id)) &&
          (machines.empty() || std::find(machines.begin(), machines.end(), w.machine_id) == machines.end())) {
        machines.push_back(w.machine_id);
      }
    }
    const bool stopping = stopping_;
    lock.unlock();
    std::map<std::string, std::string> versions;
    if (!machines.empty() && !stopping) {
      try {
        versions = versions_of_(machines);
      } catch (const std::exception& e) {
        util::log_event("warn", "rentals polls: could not read versions", {{"error", e.what()}});
      }
    }
    lock.lock();
    std::vector<std::function<void()>> due;
    std::erase_if(waiters_, [&](Waiter& w) {
      const auto v = versions.find(w.machine_id);
      const bool changed = v != versions.end() && v->second != w.known;
      if (stopping || changed || now >= w.deadline) {
        due.push_back(std::move(w.answer));
        return true;
      }
      return false;
    });
    lock.unlock();
    for (auto& answer : due) {
      try {
        answer();
      } catch (const std::exception& e) {
        util::log_event("warn", "rentals polls: an answer failed", {{"error", e.what()}});
      }
    }
    lock.lock();
    if (stopping) break;
  }
}

}  // namespace gpunex::server::rentals
