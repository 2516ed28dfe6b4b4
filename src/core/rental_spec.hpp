#pragma once
// What a customer asks a rental to run (issue #16), and the rules its fields follow: an image
// reference in Docker's grammar, a command with its arguments, environment variables with portable
// names, container ports to expose, an optional maximum duration and SSH public key. Pure. The
// server checks a customer's request with read_spec(); the same Spec travels to the agent
// (protocol/rentals.hpp) and is stored with the rental as spec_to_json().

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/json_reader.hpp"
#include "core/result.hpp"

namespace gpunex::core::rental {

inline constexpr std::size_t kMaxCommandItems = 64;
inline constexpr std::size_t kMaxEnv = 128;
inline constexpr std::size_t kMaxPorts = 16;
//! The container port an SSH key opens (ssh_public_key): sshd's.
inline constexpr int kSshPort = 22;
inline constexpr double kMaxHours = 24.0 * 90;  // a rental longer than 90 days is stopped and started again
//! The shortest max_hours, one minute: a rental is stopped with a grace (SIGTERM, then the worker's next look),
//! so a max_hours of a few milliseconds would buy seconds of GPU for nothing, again and again.
inline constexpr double kMinHours = 1.0 / 60;
//! Where the container finds the customer's SSH public key (RunPod's name for it).
inline constexpr const char* kSshKeyEnv = "PUBLIC_KEY";

struct Spec {
  std::string image;
  std::vector<std::string> command;  // the command and its arguments; empty: the image's own
  std::map<std::string, std::string> env;
  std::vector<int> ports;  // container ports to expose, each bound on a public port of the provider's range
  std::optional<double> max_hours;
  std::optional<std::string> ssh_public_key;
  bool operator==(const Spec&) const = default;
};

//! Whether `ref` is an image reference in Docker's grammar ([registry[:port]/]path[:tag][@digest]).
bool valid_image_reference(std::string_view ref);
//! Whether `name` may name an environment variable: [A-Za-z_][A-Za-z0-9_]*, at most 256 characters.
bool valid_env_name(std::string_view name);
//! Whether `name` is the platform's to set: NVIDIA_* (NVIDIA_VISIBLE_DEVICES=all would hand a container
//! every GPU of the host where the NVIDIA container toolkit reads it) and GPUNEX_* (the agent's).
bool reserved_env_name(std::string_view name);

//! max_hours in milliseconds, when the spec has it.
std::optional<std::int64_t> max_duration_ms(const Spec& s);

//! Reads the spec's fields (image, command, env, ports, max_hours, ssh_public_key) from a request
//! body; every bad field is recorded in `r` under its own name.
Spec read_spec(ObjectReader& r);

//! A new rental's key is for ssh: the container's port 22 (where the image's sshd listens) is opened with
//! it, so the rental answers the ssh command without the customer also listing the port; with the ports
//! full, an error on `ports`. For a customer's request only: a stored or sent spec is read as it is.
void open_ssh_port(Spec& s, ObjectReader& r);

//! The environment the container gets: the customer's, plus kSshKeyEnv when a key was given.
std::map<std::string, std::string> container_env(const Spec& s);

nlohmann::json spec_to_json(const Spec& s);
//! The stored or sent form back; an error names the field when it is not a valid spec.
Result<Spec> spec_from_json(const nlohmann::json& j);

}  // namespace gpunex::core::rental
