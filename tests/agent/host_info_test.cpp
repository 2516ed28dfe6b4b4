// Host facts read from fixture files.
#include <gtest/gtest.h>

#include <fstream>

#include "agent/host_info.hpp"
#include "test_dir.hpp"

namespace gpunex::agent {
namespace {

TEST(HostInfo, ReadsCpuRamOsFromTheSources) {
  testing::TempDir dir;
  const std::string d = dir.str();
  std::ofstream(d + "/cpuinfo") << "processor\t: 0\nmodel name\t: AMD EPYC 9654 96-Core Processor\n\n"
                                   "processor\t: 1\nmodel name\t: AMD EPYC 9654 96-Core Processor\n\n"
                                   "processor\t: 2\nmodel name\t: AMD EPYC 9654 96-Core Processor\n";
  std::ofstream(d + "/meminfo") << "MemTotal:       263921232 kB\nMemFree:        1000 kB\n";
  std::ofstream(d + "/os-release") << "NAME=\"Ubuntu\"\nPRETTY_NAME=\"Ubuntu 22.04.4 LTS\"\n";
  HostSources src{d + "/cpuinfo", d + "/meminfo", d + "/os-release", d + "/no-docker.sock"};
  protocol::HostInfo h = read_host_info(d, src);
  EXPECT_EQ(h.cpu_model, "AMD EPYC 9654 96-Core Processor");
  EXPECT_EQ(h.cpu_cores, 3u);
  EXPECT_EQ(h.ram_mib, 263921232u / 1024);
  EXPECT_EQ(h.os, "Ubuntu 22.04.4 LTS");
  EXPECT_FALSE(h.kernel.empty());
  EXPECT_GT(h.disk_free_mib, 0u);
  EXPECT_FALSE(h.docker_version.has_value());  // no socket: no Docker, no error
  auto j = h.to_json();
  EXPECT_TRUE(j["docker_version"].is_null());
  EXPECT_EQ(j["cpu_cores"], 3);
}

}  // namespace
}  // namespace gpunex::agent
