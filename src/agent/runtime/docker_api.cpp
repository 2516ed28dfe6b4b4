#include "agent/runtime/docker_api.hpp"

#include <charconv>
#include <sstream>

#include "core/rfc3339.hpp"

namespace gpunex::agent::runtime::docker {

namespace {

using core::Error;
using core::ErrorCode;

// "1.41" → {1, 41}; nullopt when it is not two dot-separated numbers.
std::optional<std::pair<int, int>> parse_version(std::string_view v) {
  auto dot = v.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  int major = 0, minor = 0;
  auto a = std::from_chars(v.data(), v.data() + dot, major);
  auto b = std::from_chars(v.data() + dot + 1, v.data() + v.size(), minor);
  if (a.ec != std::errc{} || a.ptr != v.data() + dot || b.ec != std::errc{} || b.ptr != v.data() + v.size()) {
    return std::nullopt;
  }
  return std::make_pair(major, minor);
}

std::string port_key(const PortBinding& p) { return std::to_string(p.container_port) + "/" + p.protocol; }

// "8888/tcp" → {8888, "tcp"}; a key without a protocol is tcp.
std::optional<std::pair<int, std::string>> parse_port_key(std::string_view key) {
  const auto slash = key.find('/');
  const std::string_view number = key.substr(0, slash);
  int port = 0;
  auto r = std::from_chars(number.data(), number.data() + number.size(), port);
  if (r.ec != std::errc{} || r.ptr != number.data() + number.size() || port < 1 || port > 65535) return std::nullopt;
  return std::make_pair(port,
                        slash == std::string_view::npos ? std::string("tcp") : std::string(key.substr(slash + 1)));
}

// HostConfig.PortBindings of an inspect answer: {"8888/tcp": [{"HostIp": "", "HostPort": "40001"}]}.
std::vector<PortBinding> parse_port_bindings(const nlohmann::json& bindings) {
  std::vector<PortBinding> out;
  if (!bindings.is_object()) return out;
  for (const auto& [key, hosts] : bindings.items()) {
    const auto container = parse_port_key(key);
    if (!container || !hosts.is_array()) continue;
    for (const auto& h : hosts) {
      if (!h.is_object()) continue;
      const std::string text = h.value("HostPort", "");
      int host = 0;
      auto r = std::from_chars(text.data(), text.data() + text.size(), host);
      if (r.ec != std::errc{} || host < 1 || host > 65535) continue;
      out.push_back({container->first, host, container->second});
    }
  }
  return out;
}

// An engine's time ("2026-12-04T11:26:13.278015969Z"); its zero time ("0001-01-01T00:00:00Z") is none.
std::optional<std::int64_t> engine_time(const nlohmann::json& state, const char* key) {
  auto it = state.find(key);
  if (it == state.end() || !it->is_string()) return std::nullopt;
  auto ms = core::parse_rfc3339_ms(it->get<std::string>());
  if (!ms || *ms <= 0) return std::nullopt;
  return ms;
}

}  // namespace

core::Result<std::string> negotiate_version(std::string_view engine_api_version) {
  auto engine = parse_version(engine_api_version);
  if (!engine) {
    return Error::make(ErrorCode::unavailable,
                       "the container engine reports API version '" + std::string(engine_api_version) +
                           "', not a version this agent understands");
  }
  const auto ours = *parse_version(kApiVersion);
  const auto oldest = *parse_version(kMinApiVersion);
  if (*engine < oldest) {
    return Error::make(ErrorCode::unavailable, "the container engine speaks Docker API " +
                                                   std::string(engine_api_version) + "; GPUnex needs " +
                                                   std::string(kMinApiVersion) + " or newer (Docker 19.03+)");
  }
  return std::string(*engine < ours ? engine_api_version : kApiVersion);
}

std::string container_name(const std::string& rental_id) { return "gpunex-" + rental_id; }
std::string network_name(const std::string& rental_id) { return "gpunex-" + rental_id; }

std::pair<std::string, std::string> split_image(const std::string& image) {
  if (image.find('@') != std::string::npos) return {image, ""};
  // A tag is after the last ':' that comes after the last '/' (a ':' before it is a registry port).
  const auto slash = image.rfind('/');
  const auto colon = image.rfind(':');
  if (colon != std::string::npos && (slash == std::string::npos || colon > slash)) {
    return {image.substr(0, colon), image.substr(colon + 1)};
  }
  return {image, "latest"};
}

nlohmann::json create_body(const ContainerSpec& spec) {
  auto env = nlohmann::json::array();
  for (const auto& [k, v] : spec.env) env.push_back(k + "=" + v);
  std::string gpu_list;
  for (const auto& u : spec.gpu_uuids) gpu_list += (gpu_list.empty() ? "" : ",") + u;
  if (spec.simulated_gpus) {
    env.push_back(std::string(kSimulatedGpusEnv) + "=" + gpu_list);
  } else if (!spec.gpu_uuids.empty()) {
    // Exactly its GPUs also where the NVIDIA container toolkit reads the environment: an image's own
    // ENV NVIDIA_VISIBLE_DEVICES=all (CUDA images carry it) does not widen the device request.
    env.push_back("NVIDIA_VISIBLE_DEVICES=" + gpu_list);
  }

  nlohmann::json host{
      {"Privileged", false},
      {"CapDrop", {"ALL"}},
      {"SecurityOpt", {"no-new-privileges"}},
      {"Binds", nlohmann::json::array()},
      {"PidsLimit", spec.pids_limit},
      {"NetworkMode", network_name(spec.rental_id)},
      {"RestartPolicy", {{"Name", "no"}}},
      {"LogConfig",
       {{"Type", "json-file"}, {"Config", {{"max-size", std::to_string(spec.log_max_bytes)}, {"max-file", "2"}}}}},
  };
  if (spec.memory_bytes > 0) {
    host["Memory"] = spec.memory_bytes;
    host["MemorySwap"] = spec.memory_bytes;  // no swap beyond the limit: going over is an OOM
  }
  if (spec.nano_cpus > 0) host["NanoCpus"] = spec.nano_cpus;
  if (!spec.simulated_gpus && !spec.gpu_uuids.empty()) {
    host["DeviceRequests"] = nlohmann::json::array(
        {{{"Driver", "nvidia"}, {"DeviceIDs", spec.gpu_uuids}, {"Capabilities", nlohmann::json::array({{"gpu"}})}}});
  }
  nlohmann::json exposed = nlohmann::json::object();
  nlohmann::json bindings = nlohmann::json::object();
  for (const auto& p : spec.ports) {
    exposed[port_key(p)] = nlohmann::json::object();
    bindings[port_key(p)] = nlohmann::json::array({{{"HostIp", ""}, {"HostPort", std::to_string(p.host_port)}}});
  }
  if (!spec.ports.empty()) host["PortBindings"] = bindings;

  nlohmann::json labels{{kRentalLabel, spec.rental_id}};
  if (!spec.machine_id.empty()) labels[kMachineLabel] = spec.machine_id;
  nlohmann::json body{
      {"Image", spec.image},     {"Env", env},   {"Labels", labels},   {"HostConfig", host},
      {"ExposedPorts", exposed}, {"Tty", false}, {"OpenStdin", false},
  };
  if (!spec.command.empty()) body["Cmd"] = spec.command;
  return body;
}

nlohmann::json network_body(const std::string& rental_id) {
  return {{"Name", network_name(rental_id)},
          {"Labels", {{kRentalLabel, rental_id}}},
          {"CheckDuplicate", true},
          {"EnableIPv6", false}};
}

RentalNetwork parse_network(const nlohmann::json& j) {
  RentalNetwork n;
  n.ipv6 = j.value("EnableIPv6", false);
  const auto ipam = j.value("IPAM", nlohmann::json::object());
  const auto config = ipam.is_object() ? ipam.value("Config", nlohmann::json::array()) : nlohmann::json::array();
  if (!config.is_array()) return n;
  for (const auto& c : config) {
    if (!c.is_object()) continue;
    const std::string subnet = c.value("Subnet", "");
    const std::string gateway = c.value("Gateway", "");
    if (subnet.find(':') != std::string::npos) {
      n.ipv6 = true;
      continue;
    }
    if (!subnet.empty()) n.subnets.push_back(subnet);
    if (!gateway.empty() && gateway.find(':') == std::string::npos) n.gateways.push_back(gateway);
  }
  return n;
}

ContainerState parse_inspect(const nlohmann::json& j) {
  ContainerState s;
  s.id = j.value("Id", "");
  if (auto cfg = j.find("Config"); cfg != j.end() && cfg->is_object()) {
    if (auto labels = cfg->find("Labels"); labels != cfg->end() && labels->is_object()) {
      s.rental_id = labels->value(kRentalLabel, "");
      s.machine_id = labels->value(kMachineLabel, "");
    }
  }
  const auto state = j.value("State", nlohmann::json::object());
  const std::string status = state.value("Status", "");
  if (status == "running" || status == "paused" || status == "restarting") {
    s.status = ContainerState::Status::running;
  } else if (status == "created" || status == "configured" || status == "initialized") {
    s.status = ContainerState::Status::created;
  } else {
    s.status = ContainerState::Status::exited;  // exited, dead, stopped, removing
  }
  s.exit_code = state.value("ExitCode", 0);
  s.oom_killed = state.value("OOMKilled", false);
  s.error = state.value("Error", "");
  s.started_at_ms = engine_time(state, "StartedAt");
  s.finished_at_ms = engine_time(state, "FinishedAt");
  if (auto host = j.find("HostConfig"); host != j.end() && host->is_object()) {
    if (auto b = host->find("PortBindings"); b != host->end()) s.ports = parse_port_bindings(*b);
  }
  // Some engines do not report OOMKilled (Podman on a cgroup v1 host: its conmon misses the event).
  // A container with a memory limit that ended by SIGKILL (137) which the agent did not send (the
  // agent's own stop removes the container, so it is never seen exited) was killed by the kernel's
  // OOM killer. The one other sender would be someone on the host killing it by hand.
  if (!s.oom_killed && s.status == ContainerState::Status::exited && s.exit_code == 137) {
    const auto host = j.value("HostConfig", nlohmann::json::object());
    const auto memory = host.value("Memory", std::int64_t{0});
    if (memory > 0) {
      s.oom_killed = true;
      s.oom_inferred = true;
    }
  }
  return s;
}

ContainerState parse_list_item(const nlohmann::json& j) {
  ContainerState s;
  s.id = j.value("Id", "");
  if (auto labels = j.find("Labels"); labels != j.end() && labels->is_object()) {
    s.rental_id = labels->value(kRentalLabel, "");
    s.machine_id = labels->value(kMachineLabel, "");
  }
  const std::string state = j.value("State", "");
  s.status = state == "running" ? ContainerState::Status::running
             : state == "created" ? ContainerState::Status::created
                                  : ContainerState::Status::exited;
  if (auto ports = j.find("Ports"); ports != j.end() && ports->is_array()) {
    for (const auto& p : *ports) {
      if (!p.is_object() || !p.contains("PublicPort")) continue;  // exposed but not published
      s.ports.push_back({p.value("PrivatePort", 0), p.value("PublicPort", 0), p.value("Type", std::string("tcp"))});
    }
  }
  return s;
}

std::string demux_logs(std::string_view raw) {
  auto framed = [](std::string_view r) {
    if (r.size() < 8) return false;
    const auto stream = static_cast<unsigned char>(r[0]);
    return stream <= 2 && r[1] == 0 && r[2] == 0 && r[3] == 0;
  };
  if (!framed(raw)) return std::string(raw);
  std::string out;
  std::size_t at = 0;
  while (at + 8 <= raw.size()) {
    const auto* h = reinterpret_cast<const unsigned char*>(raw.data() + at);
    const std::size_t len = (std::size_t{h[4]} << 24) | (std::size_t{h[5]} << 16) | (std::size_t{h[6]} << 8) | h[7];
    at += 8;
    out.append(raw.substr(at, std::min(len, raw.size() - at)));
    at += len;
  }
  return out;
}

core::Result<std::vector<PullProgress>> parse_pull_stream(std::string_view body) {
  std::vector<PullProgress> out;
  std::istringstream lines{std::string(body)};
  std::string line;
  while (std::getline(lines, line)) {
    if (line.find_first_not_of(" \r\t") == std::string::npos) continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) continue;
    if (j.contains("error")) {
      return Error::make(ErrorCode::unavailable, "pulling the image failed: " + j.value("error", std::string()));
    }
    PullProgress p;
    p.status = j.value("status", "");
    p.layer = j.value("id", "");
    if (auto d = j.find("progressDetail"); d != j.end() && d->is_object()) {
      p.current = d->value("current", std::int64_t{0});
      p.total = d->value("total", std::int64_t{0});
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace gpunex::agent::runtime::docker
