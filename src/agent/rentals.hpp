#pragma once
// The agent's side of rentals (issue #16): it keeps this machine's rental containers as the server
// wants them. The server's answer to the rentals poll (protocol::AgentRentals) is the whole desired
// state; the containers carrying the rental label are what is; RentalManager acts on the difference
// (start, adopt, stop, remove leftovers), watches what runs, and tells the server what happened as
// protocol::RentalEvents. Slow work (pull, create, start, stop) runs on threads of its own, so the
// poll is never held up.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "agent/runtime/container_runtime.hpp"
#include "agent/runtime/network_guard.hpp"
#include "core/result.hpp"
#include "protocol/rentals.hpp"

namespace gpunex::agent {

//! The provider's declared public port range: each exposed container port is bound on one of them.
struct PortRange {
  int lo = 40000;
  int hi = 40999;
  bool operator==(const PortRange&) const = default;
};
//! "40000-40999" → {40000, 40999}; an error says what is wrong with it.
core::Result<PortRange> parse_port_range(std::string_view text);

//! A rental's memory limit and CPU share: its part of the machine, by the GPUs it rents.
struct ResourceShare {
  std::int64_t memory_bytes = 0;  // 0: no limit
  std::int64_t nano_cpus = 0;     // 0: no limit
};
//! 90% of the host's RAM and all its CPU cores, times rented / machine GPUs (no limit when the
//! machine's GPU count is unknown).
ResourceShare resource_share(std::size_t rented_gpus, std::size_t machine_gpus, std::int64_t host_ram_bytes,
                             double cpu_cores);

//! `text` as valid UTF-8 (each invalid byte becomes U+FFFD), at most `max_bytes`, cut from the front
//! at a line start where one is in reach: what a `logs` event carries.
std::string log_tail(std::string_view text, std::size_t max_bytes);

struct RentalManagerOptions {
  //! This machine's id: its containers carry it (runtime::kMachineLabel), and a container labelled with
  //! another machine, or unlabelled and not a rental the server gives this machine, is left alone.
  //! Empty: every rental container is this agent's.
  std::string machine_id;
  std::vector<std::string> machine_gpus;  // this machine's GPU UUIDs: a rental's GPUs must be among them
  std::int64_t host_ram_bytes = 0;
  double cpu_cores = 0;
  PortRange public_ports;
  bool simulated_gpus = false;  // name the GPUs in an env variable instead of handing in devices
  std::string docker_host;      // named in the start_failed error when no engine answers
  std::chrono::seconds stop_grace{10};
  std::chrono::milliseconds watch_interval{1000};
  std::chrono::milliseconds logs_interval{5000};
  int log_tail_lines = 200;
  std::int64_t pids_limit = 1024;
  std::int64_t memory_bytes_override = 0;  // tests: this memory limit instead of the rental's share
  bool probe_ports = true;                 // skip public ports something on the host already listens on
  //! How often the network guard is checked and every running rental's network fenced again (rules a
  //! firewall reload took away come back within this).
  std::chrono::milliseconds guard_interval{60'000};
};

//! Receives each event as it happens, from any of the manager's threads; `droppable` is true for
//! `logs`, which a full spool may drop.
using RentalEventSink = std::function<void(protocol::RentalEvent event, bool droppable)>;

//! Keeps the machine's rental containers as the server wants them. A rental is never started twice,
//! and one the agent finds running (after a restart) is adopted, not started again.
class RentalManager {
 public:
  //! Starts watching at once (every watch_interval); acts on no container before the first apply().
  //! Every container runs fenced by `guard` (fenced before it starts, and again when adopted); one
  //! that cannot be fenced is not run.
  RentalManager(runtime::ContainerRuntime& runtime, runtime::NetworkGuard& guard, RentalManagerOptions options,
                RentalEventSink sink);
  //! Stops watching and waits for the starts and stops in progress (a pull under way finishes, then
  //! the start is left to the next agent). Containers keep running.
  ~RentalManager();
  RentalManager(const RentalManager&) = delete;
  RentalManager& operator=(const RentalManager&) = delete;

  //! Takes the server's answer as the desired state and acts on the difference before returning;
  //! starts and stops go on in the background. The same answer twice changes nothing.
  void apply(const protocol::AgentRentals& rentals);
  //! Starts and stops in progress.
  std::size_t busy() const;
  //! Whether the container engine answered the last time it was asked (nullopt before it was).
  std::optional<bool> engine_up() const;
  //! Why no rental can run here now (no container engine answers, the network guard cannot fence),
  //! for the server (the rentals poll's `blocked`); nullopt when rentals can run.
  std::optional<std::string> blocked() const;

 private:
  using Clock = std::chrono::steady_clock;

  //! A container of a rental that runs here, looked after by the watcher.
  struct Watched {
    std::string container_id;
    std::vector<protocol::BoundPort> ports;
    std::optional<Clock::time_point> running_sent;  // when this process last sent `running` for it
    std::size_t logs_hash = 0;                      // of the last `logs` sent (0: none yet)
    Clock::time_point next_logs{};
  };
  struct Worker {
    std::thread thread;
    bool done = false;
  };
  using Present = std::map<std::string, runtime::ContainerState>;  // the engine's list, by rental id

  //! Compares the desired state with the engine's containers and acts; returns what the engine
  //! listed (nullopt when it did not answer). reconcile_mu_ is held.
  std::optional<Present> reconcile();
  //! Reports exits, disappearances and new output of the watched containers. reconcile_mu_ is held.
  void watch(const Present& present);
  void watch_loop();

  // The rest run with mu_ held.
  bool settled(const std::string& id) const;  // being started or stopped, or ended
  void begin_start(const protocol::AssignedRental& r, const Present& present, std::optional<std::string> stale);
  void begin_stop(const std::string& id, const std::string& container_id);
  void begin_remove_leftover(const std::string& id, const std::string& container_id);
  void adopt(const runtime::ContainerState& c);
  void no_engine(const std::string& error);
  std::optional<std::vector<int>> take_ports(std::size_t n, const Present& present) const;
  void spawn(std::function<void()> work);
  void reap();
  void send(protocol::RentalEvent e, bool droppable = false);
  //! Sends `ended` (when the server still lists the rental) and remembers it: nothing more is done for it.
  void send_ended(const std::string& id, protocol::RentalEvent e);

  // Worker bodies: no lock held on entry.
  void start_worker(protocol::AssignedRental r, std::vector<int> host_ports, std::optional<std::string> stale);
  //! `logs_hash`: of the last `logs` sent, so the final one is sent only when the output changed.
  void stop_worker(const std::string& id, const std::string& container_id, std::size_t logs_hash);
  //! Ends a start that failed: `error` is the engine's words; `reason` host_failure where the host,
  //! not the rental, is at fault.
  void start_failed(const std::string& id, const std::string& error,
                    core::rental::EndReason reason = core::rental::EndReason::start_failed);
  //! Fences an adopted container's network (its rules may be gone: a reboot of the firewall, an agent
  //! before the guard); one that cannot be fenced is stopped.
  void fence_adopted(const std::string& id, const std::string& container_id);
  //! Checks the guard and fences every watched rental again, when guard_interval has passed.
  void guard_pass();
  //! The rental's network, fenced by the guard.
  core::Status fence(const std::string& id);
  //! Stops and removes the rental's container and network, then its rules.
  core::Status remove(const std::string& id, const std::string& container_id, std::chrono::seconds grace);

  runtime::ContainerRuntime& runtime_;
  runtime::NetworkGuard& guard_;
  const RentalManagerOptions opt_;
  const RentalEventSink sink_;

  std::mutex reconcile_mu_;  // one reconcile at a time: apply() and the watcher
  mutable std::mutex mu_;    // all below; held while an event is sent, so one rental's events keep their order
  std::condition_variable wake_;
  bool closing_ = false;
  bool have_desired_ = false;
  std::map<std::string, protocol::AssignedRental> desired_;
  std::map<std::string, Watched> watched_;
  std::map<std::string, std::vector<int>> starting_;  // rental → the public ports it holds
  std::set<std::string> stopping_;                    // stops and leftover removals in progress
  std::set<std::string> ended_;                       // `ended` sent: left alone until the server drops it
  std::optional<bool> engine_up_;
  std::string engine_error_;                // the engine's last error, while it does not answer
  std::optional<std::string> guard_error_;  // why the guard cannot fence, while it cannot
  Clock::time_point next_guard_pass_{};     // the watcher's first pass checks at once
  bool guard_checked_ = false;
  std::list<Worker> workers_;
  std::thread watcher_;
};

}  // namespace gpunex::agent
