#pragma once
// Customer containers on the provider's machine, behind an interface (ContainerRuntime) whose one
// real implementation speaks the Docker Engine API over its unix socket (docker_runtime.hpp): Docker,
// or Podman's Docker-compatible service. What a container may do is decided here, once, for every
// rental: exactly its GPUs, no capabilities, no new privileges, never privileged, no host paths, a
// pids limit, memory and CPU in proportion to the GPUs rented, its own network, bounded logs.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace gpunex::agent::runtime {

//! The label every rental's container and network carry; its value is the rental id.
inline constexpr const char* kRentalLabel = "io.gpunex.rental";
//! The label naming the machine (agent) a rental's container belongs to: an agent adopts and removes
//! only its own, so two agents on one container engine never take each other's rentals.
inline constexpr const char* kMachineLabel = "io.gpunex.machine";
//! On the simulated GPU backend there is no GPU to hand in: the container reads its GPUs here.
inline constexpr const char* kSimulatedGpusEnv = "GPUNEX_SIMULATED_GPUS";

struct PortBinding {
  int container_port = 0;
  int host_port = 0;  // on the provider's declared public port range
  std::string protocol = "tcp";
};

//! One rental's container: what the customer asked for plus the limits the agent sets.
struct ContainerSpec {
  std::string rental_id;
  std::string machine_id;  // its kMachineLabel (none when empty)
  std::string image;
  std::vector<std::string> command;  // replaces the image's command when non-empty
  std::map<std::string, std::string> env;
  std::vector<std::string> gpu_uuids;
  bool simulated_gpus = false;      // name the GPUs in kSimulatedGpusEnv instead of DeviceRequests
  std::int64_t memory_bytes = 0;    // 0: no limit
  std::int64_t nano_cpus = 0;       // 1e9 per CPU; 0: no limit
  std::int64_t pids_limit = 1024;
  std::vector<PortBinding> ports;
  std::int64_t log_max_bytes = 10 * 1024 * 1024;  // per log file; two files are kept
};

//! A container's state as the engine reports it.
struct ContainerState {
  std::string id;
  std::string rental_id;
  std::string machine_id;  // its kMachineLabel; empty for a container made before agents labelled it
  enum class Status { created, running, exited, missing } status = Status::missing;
  int exit_code = 0;
  bool oom_killed = false;
  bool oom_inferred = false;  // the engine did not say; see docker::parse_inspect
  std::string error;  // the engine's error text, when it gave one
  std::vector<PortBinding> ports;  // the host ports bound for it (what an agent restart must not hand out again)
  std::optional<std::int64_t> started_at_ms;   // inspect only: when it last started (Unix ms)
  std::optional<std::int64_t> finished_at_ms;  // inspect only: when it exited
};

//! A rental's network as the engine made it: what the network guard fences.
struct RentalNetwork {
  std::vector<std::string> subnets;   // IPv4 CIDR, "10.89.3.0/24"
  std::vector<std::string> gateways;  // IPv4, "10.89.3.1" (the host's side of the bridge)
  bool ipv6 = false;                  // the engine gave it an IPv6 subnet too
};

struct PullProgress {
  std::string status;  // "Pulling fs layer", "Download complete", ...
  std::string layer;
  std::int64_t current = 0;
  std::int64_t total = 0;
};

//! Safe to call from several threads at once: a long pull or a stop's grace period holds up no
//! other call.
class ContainerRuntime {
 public:
  virtual ~ContainerRuntime() = default;
  //! Where it runs and the API version agreed with the engine ("unix:///var/run/docker.sock, API 1.41").
  virtual std::string describe() const = 0;
  //! Makes the image present: nothing when it already is, else pulls it, reporting progress.
  virtual core::Status ensure_image(const std::string& image, const std::function<void(const PullProgress&)>& progress) = 0;
  //! Creates the rental's network and container (not started); returns the container id.
  virtual core::Result<std::string> create(const ContainerSpec& spec) = 0;
  virtual core::Status start(const std::string& id) = 0;
  virtual core::Result<ContainerState> inspect(const std::string& id) = 0;
  //! The last `tail_lines` lines of stdout and stderr, interleaved as written.
  virtual core::Result<std::string> logs(const std::string& id, int tail_lines) = 0;
  //! SIGTERM, then SIGKILL after `grace`; then removes the container and its network. A container
  //! already gone is not an error.
  virtual core::Status stop_and_remove(const std::string& id, std::chrono::seconds grace) = 0;
  //! SIGTERM, then SIGKILL after `grace`, leaving the container in place so its exit code and logs
  //! can still be read. A container already stopped or gone is not an error.
  virtual core::Status stop(const std::string& id, std::chrono::seconds grace) = 0;
  //! The addresses of a rental's network (made by create()).
  virtual core::Result<RentalNetwork> network(const std::string& rental_id) = 0;
  //! Removes a rental's network when no container was made in it (a create that failed half way).
  //! A network already gone is not an error.
  virtual core::Status remove_network(const std::string& rental_id) = 0;
  //! Every container that carries the rental label (running or not): what an agent restart adopts
  //! or removes.
  virtual core::Result<std::vector<ContainerState>> list_rental_containers() = 0;
};

//! The Docker Engine API endpoint the way Docker's own tools find it: $DOCKER_HOST when it is a
//! unix:// URL, else unix:///var/run/docker.sock.
std::string docker_host_from_env();

//! A runtime over the Docker Engine API at `docker_host` (unix:///path). Negotiates the API version
//! with the engine on first use.
std::unique_ptr<ContainerRuntime> make_docker_runtime(const std::string& docker_host);
//! The socket's path of a unix:// docker host ("unix:///run/podman/podman.sock" -> "/run/podman/podman.sock").
std::string docker_socket_path(const std::string& docker_host);

}  // namespace gpunex::agent::runtime
