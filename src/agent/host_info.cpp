#include "agent/host_info.hpp"

#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string_view>

#include "util/http_client.hpp"

namespace gpunex::agent {
namespace {

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r\n\"");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n\"");
  return std::string(s.substr(b, e - b + 1));
}

std::optional<std::string> docker_version(const std::string& socket) {
  std::error_code ec;
  if (!std::filesystem::exists(socket, ec)) return std::nullopt;
  util::HttpClientOptions opts;
  opts.unix_socket = socket;
  opts.timeout = std::chrono::milliseconds(2000);
  util::HttpClient client("http://localhost", opts);
  auto resp = client.request("GET", "/version");
  if (!resp || resp->status != 200) return std::nullopt;
  auto j = nlohmann::json::parse(resp->body, nullptr, false);
  if (!j.is_object() || !j.contains("Version") || !j["Version"].is_string()) return std::nullopt;
  return j["Version"].get<std::string>();
}

}  // namespace

protocol::HostInfo read_host_info(const std::string& data_dir, const HostSources& src) {
  protocol::HostInfo h;
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) == 0) h.hostname = name;

  std::ifstream cpu(src.cpuinfo);
  for (std::string line; std::getline(cpu, line);) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(std::string_view(line).substr(0, colon));
    if (key == "processor") ++h.cpu_cores;
    if (key == "model name" && h.cpu_model.empty()) h.cpu_model = trim(std::string_view(line).substr(colon + 1));
  }
  if (h.cpu_cores == 0) h.cpu_cores = sysconf(_SC_NPROCESSORS_ONLN);

  std::ifstream mem(src.meminfo);
  for (std::string line; std::getline(mem, line);) {
    if (line.rfind("MemTotal:", 0) == 0) {
      h.ram_mib = std::stoll(line.substr(9)) / 1024;  // the file gives kB
      break;
    }
  }

  struct statvfs vfs {};
  if (statvfs(data_dir.c_str(), &vfs) == 0) {
    h.disk_free_mib = static_cast<std::int64_t>(static_cast<std::uint64_t>(vfs.f_bavail) * vfs.f_frsize / (1024ULL * 1024ULL));
  }

  std::ifstream os(src.os_release);
  for (std::string line; std::getline(os, line);) {
    if (line.rfind("PRETTY_NAME=", 0) == 0) h.os = trim(std::string_view(line).substr(12));
  }
  struct utsname u {};
  if (uname(&u) == 0) h.kernel = u.release;

  h.docker_version = docker_version(src.docker_socket);
  return h;
}

}  // namespace gpunex::agent
