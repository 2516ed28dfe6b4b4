#pragma once
// The Docker Engine API's messages, as pure functions: the container-create body with every
// isolation setting, image references, the version negotiation, and the answers the agent reads
// (inspect, the multiplexed log stream, the pull progress stream). docker_runtime.cpp sends them.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/runtime/container_runtime.hpp"
#include "core/result.hpp"

namespace gpunex::agent::runtime::docker {

//! The newest API version this agent speaks; an older engine gets its own version.
inline constexpr std::string_view kApiVersion = "1.41";
//! The oldest engine API version that has everything the agent sends (DeviceRequests came in 1.40).
inline constexpr std::string_view kMinApiVersion = "1.40";

//! The version both sides speak, from the engine's GET /version "ApiVersion": the lower of the two.
//! An engine older than kMinApiVersion is refused, saying which version it has.
core::Result<std::string> negotiate_version(std::string_view engine_api_version);

//! A rental's container and network names: "gpunex-<rental id>".
std::string container_name(const std::string& rental_id);
std::string network_name(const std::string& rental_id);

//! "registry:5000/team/app:1.2" → {"registry:5000/team/app", "1.2"}; no tag → "latest"; a digest
//! ("app@sha256:…") stays whole with an empty tag.
std::pair<std::string, std::string> split_image(const std::string& image);

//! The POST /containers/create body for a rental (DESIGN §3, containers.md): DeviceRequests for exactly
//! its GPUs (or kSimulatedGpusEnv on simulated GPUs), CapDrop ALL, no-new-privileges, not privileged,
//! no binds, the pids/memory/CPU limits, its network, its ports, the rental label, bounded logs.
nlohmann::json create_body(const ContainerSpec& spec);

//! The POST /networks/create body for a rental's own network (IPv4 only: the guard fences IPv4).
nlohmann::json network_body(const std::string& rental_id);
//! GET /networks/{name} → its subnets and gateways (IPAM.Config).
RentalNetwork parse_network(const nlohmann::json& j);

//! GET /containers/{id}/json → the state the agent reports.
ContainerState parse_inspect(const nlohmann::json& j);
//! One item of GET /containers/json?all=1 → its id, rental and state.
ContainerState parse_list_item(const nlohmann::json& j);

//! The log stream of a container without a TTY: frames of an 8-byte header (stream, 0, 0, 0, big-endian
//! length) and the payload, stdout and stderr interleaved. Text without frames is returned as it is.
std::string demux_logs(std::string_view raw);

//! The pull answer (one JSON object per line): the progress reported, or the engine's error.
core::Result<std::vector<PullProgress>> parse_pull_stream(std::string_view body);

}  // namespace gpunex::agent::runtime::docker
