#pragma once
// Facts about the host the agent runs on, sent at registration.

#include <string>

#include "protocol/register.hpp"

namespace gpunex::agent {

//! Where host facts are read from; tests point these at fixtures.
struct HostSources {
  std::string cpuinfo = "/proc/cpuinfo";
  std::string meminfo = "/proc/meminfo";
  std::string os_release = "/etc/os-release";
  std::string docker_socket = "/var/run/docker.sock";
};

//! Reads what it can; a fact it cannot read stays empty rather than failing registration.
protocol::HostInfo read_host_info(const std::string& data_dir, const HostSources& sources = {});

}  // namespace gpunex::agent
