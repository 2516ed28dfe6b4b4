#include "protocol/register.hpp"

#include "core/json_reader.hpp"
#include "core/text.hpp"
#include "protocol/fields.hpp"

namespace gpunex::protocol {

using core::Error;
using core::ErrorCode;
using core::ObjectReader;
using detail::item_path;
using detail::kBig;

namespace {

nlohmann::json opt(const std::optional<std::string>& s) {
  return s ? nlohmann::json(*s) : nlohmann::json(nullptr);
}

core::Status parse_host(const nlohmann::json& j, HostInfo& h) {
  ObjectReader r(j, "host");
  h.hostname = r.required_line("hostname", 0, 255);
  h.cpu_model = r.required_line("cpu_model", 0, 255);
  h.cpu_cores = r.required_int("cpu_cores", 0, 100000);
  h.ram_mib = r.required_int("ram_mib", 0, kBig);
  h.disk_free_mib = r.required_int("disk_free_mib", 0, kBig);
  h.os = r.required_line("os", 0, 255);
  h.kernel = r.required_line("kernel", 0, 255);
  h.docker_version = r.optional_line("docker_version", 64);
  h.public_host = r.optional_string("public_host", 253);
  if (h.public_host && !core::is_host_name_or_address(*h.public_host)) {
    r.invalid("public_host", "must be a DNS name or an IP address (gpu1.example.net, 203.0.113.7)");
  }
  return r.finish();
}

core::Status parse_gpu(const nlohmann::json& j, const std::string& path, GpuInfo& g) {
  ObjectReader r(j, path);
  g.index = r.required_int("index", 0, kMaxGpusPerMachine - 1);
  g.uuid = r.required_string("uuid", 1, 96);
  g.name = r.required_line("name", 1, 96);
  g.model = r.optional_line("model", 32);
  g.serial = r.optional_line("serial", 64);
  g.memory_mib = r.required_int("memory_mib", 1, 16 * 1024 * 1024);
  g.driver_version = r.required_line("driver_version", 1, 80);
  g.cuda_version = r.required_line("cuda_version", 0, 16);
  g.pci_bus_id = r.required_string("pci_bus_id", 0, 32);
  g.pcie_gen_current = r.optional_int("pcie_gen_current", 0, 16).value_or(0);
  g.pcie_gen_max = r.optional_int("pcie_gen_max", 0, 16).value_or(0);
  g.pcie_width_current = r.optional_int("pcie_width_current", 0, 64).value_or(0);
  g.pcie_width_max = r.optional_int("pcie_width_max", 0, 64).value_or(0);
  g.power_limit_w = detail::optional_number(r, "power_limit_w", 0, 10000).value_or(0);
  g.compute_capability = r.optional_line("compute_capability", 8);
  return r.finish();
}

}  // namespace

nlohmann::json HostInfo::to_json() const {
  nlohmann::json j = {{"hostname", hostname},
                      {"cpu_model", cpu_model},
                      {"cpu_cores", cpu_cores},
                      {"ram_mib", ram_mib},
                      {"disk_free_mib", disk_free_mib},
                      {"os", os},
                      {"kernel", kernel},
                      {"docker_version", opt(docker_version)}};
  if (public_host) j["public_host"] = *public_host;  // only when set: a server before it knows no such field
  return j;
}

nlohmann::json GpuInfo::to_json() const {
  nlohmann::json j = facts();
  j.update({{"uuid", uuid}, {"name", name}, {"model", opt(model)}, {"memory_mib", memory_mib}});
  return j;
}

nlohmann::json GpuInfo::facts() const {
  return {{"index", index},
          {"serial", opt(serial)},
          {"driver_version", driver_version},
          {"cuda_version", cuda_version},
          {"pci_bus_id", pci_bus_id},
          {"pcie_gen_current", pcie_gen_current},
          {"pcie_gen_max", pcie_gen_max},
          {"pcie_width_current", pcie_width_current},
          {"pcie_width_max", pcie_width_max},
          {"power_limit_w", power_limit_w},
          {"compute_capability", opt(compute_capability)}};
}

nlohmann::json RegisterRequest::to_json() const {
  nlohmann::json g = nlohmann::json::array();
  for (const auto& gpu : gpus) g.push_back(gpu.to_json());
  nlohmann::json j = {{"protocol_version", protocol_version},
                      {"agent_version", agent_version},
                      {"machine_fingerprint", machine_fingerprint},
                      {"host", host.to_json()},
                      {"gpus", std::move(g)},
                      {"simulated", simulated}};
  if (machine_id) j["machine_id"] = *machine_id;
  return j;
}

nlohmann::json RegisterReply::to_json() const {
  nlohmann::json j = {{"machine_id", machine_id}};
  if (heartbeat_interval_s) j["heartbeat_interval_s"] = *heartbeat_interval_s;
  return j;
}

core::Result<RegisterRequest> parse_register_request(const nlohmann::json& body) {
  RegisterRequest req;
  ObjectReader r(body);
  req.protocol_version = detail::protocol_version(r);
  req.agent_version = r.required_line("agent_version", 1, 32);
  req.machine_fingerprint = r.required_line("machine_fingerprint", 8, 128);
  req.machine_id = r.optional_string("machine_id", 64);
  req.simulated = r.required_bool("simulated");
  // Described, the nested objects are read although failed() holds (it always does then).
  if (const auto* host = r.required_object("host"); host != nullptr && (!r.failed() || r.describing())) {
    if (auto s = parse_host(*host, req.host); !s) r.fail(std::move(s).error());
  }
  if (const auto* gpus = r.required_array("gpus", 0, kMaxGpusPerMachine);
      gpus != nullptr && (!r.failed() || r.describing())) {
    for (std::size_t i = 0; i < gpus->size() && (!r.failed() || r.describing()); ++i) {
      GpuInfo g;
      if (auto s = parse_gpu((*gpus)[i], item_path("gpus", i), g); !s) {
        r.fail(std::move(s).error());
        break;
      }
      for (const auto& prev : req.gpus) {
        if (prev.uuid == g.uuid) {
          r.fail(
              Error::make(ErrorCode::invalid_field, "the same GPU UUID appears twice", item_path("gpus", i) + ".uuid"));
        }
      }
      req.gpus.push_back(std::move(g));
    }
  }
  if (auto s = r.finish(); !s) return std::move(s).error();
  return req;
}

core::Result<RegisterReply> parse_register_reply(const nlohmann::json& body) {
  if (!body.is_object() || !body.contains("machine_id") || !body["machine_id"].is_string()) {
    return Error::make(ErrorCode::invalid_field, "the server's register reply has no machine_id",
                       std::string("machine_id"));
  }
  RegisterReply reply;
  reply.machine_id = body["machine_id"].get<std::string>();
  if (body.contains("heartbeat_interval_s") && body["heartbeat_interval_s"].is_number_unsigned()) {
    reply.heartbeat_interval_s = body["heartbeat_interval_s"].get<unsigned>();
  }
  return reply;
}

}  // namespace gpunex::protocol
