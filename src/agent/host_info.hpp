#pragma once
// Facts about the host the agent runs on, sent at registration.

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace gpunex::agent {

struct HostInfo {
  std::string hostname;
  std::string cpu_model;
  unsigned cpu_cores = 0;  // logical CPUs
  std::uint64_t ram_mib = 0;
  std::uint64_t disk_free_mib = 0;  // in the data folder
  std::string os;                   // PRETTY_NAME from os-release
  std::string kernel;               // uname -r
  std::optional<std::string> docker_version;
};

//! Where host facts are read from; tests point these at fixtures.
struct HostSources {
  std::string cpuinfo = "/proc/cpuinfo";
  std::string meminfo = "/proc/meminfo";
  std::string os_release = "/etc/os-release";
  std::string docker_socket = "/var/run/docker.sock";
};

//! Reads what it can; a fact it cannot read stays empty rather than failing registration.
HostInfo read_host_info(const std::string& data_dir, const HostSources& sources = {});

nlohmann::json to_json(const HostInfo& host);

}  // namespace gpunex::agent
