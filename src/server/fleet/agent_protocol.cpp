#include "server/fleet/agent_protocol.hpp"

#include <charconv>
#include <cmath>

#include "core/json_reader.hpp"
#include "util/time.hpp"

namespace gpunex::server {

using core::Error;
using core::ErrorCode;
using core::ObjectReader;

namespace {

constexpr std::int64_t kBig = 1LL << 50;

std::optional<double> opt_number(ObjectReader& r, std::string_view key, double min, double max) {
  const nlohmann::json* v = r.optional_value(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number() || !std::isfinite(v->get<double>()) || v->get<double>() < min || v->get<double>() > max) {
    r.fail(Error::make(ErrorCode::invalid_field,
                       "must be a number from " + std::to_string(static_cast<long long>(min)) + " to " +
                           std::to_string(static_cast<long long>(max)),
                       r.path_of(key)));
    return std::nullopt;
  }
  return v->get<double>();
}

std::optional<std::int64_t> time_field(ObjectReader& r, std::string_view key, bool required) {
  auto s = required ? std::optional<std::string>(r.required_string(key, 1, 64)) : r.optional_string(key, 64);
  if (!s || r.failed()) return std::nullopt;
  auto ms = util::parse_rfc3339(*s);
  if (!ms) r.fail(Error::make(ErrorCode::invalid_field, "must be an RFC 3339 time", r.path_of(key)));
  return ms;
}

void check_protocol(ObjectReader& r, int& out) {
  out = static_cast<int>(r.required_int("protocol_version", 1, 1000));
  if (!r.failed() && out != kAgentProtocolVersion) {
    r.fail(Error::make(ErrorCode::invalid_field,
                       "protocol version " + std::to_string(out) + " is not supported by this server (it speaks " +
                           std::to_string(kAgentProtocolVersion) + "); update the agent",
                       std::string("protocol_version"))
               .with_code("unsupported_protocol_version"));
  }
}

core::Status parse_host(const nlohmann::json& j, AgentHost& h) {
  ObjectReader r(j, "host");
  h.hostname = r.required_string("hostname", 0, 255);
  h.cpu_model = r.required_string("cpu_model", 0, 255);
  h.cpu_cores = r.required_int("cpu_cores", 0, 100000);
  h.ram_mib = r.required_int("ram_mib", 0, kBig);
  h.disk_free_mib = r.required_int("disk_free_mib", 0, kBig);
  h.os = r.required_string("os", 0, 255);
  h.kernel = r.required_string("kernel", 0, 255);
  h.docker_version = r.optional_string("docker_version", 64);
  return r.finish();
}

core::Status parse_gpu(const nlohmann::json& j, const std::string& path, AgentGpu& g) {
  ObjectReader r(j, path);
  g.index = r.required_int("index", 0, kMaxGpusPerMachine - 1);
  g.uuid = r.required_string("uuid", 1, 96);
  g.name = r.required_string("name", 1, 96);
  g.model = r.optional_string("model", 32);
  g.serial = r.optional_string("serial", 64);
  g.memory_mib = r.required_int("memory_mib", 1, 16 * 1024 * 1024);
  g.driver_version = r.required_string("driver_version", 1, 80);
  g.cuda_version = r.required_string("cuda_version", 0, 16);
  g.pci_bus_id = r.required_string("pci_bus_id", 0, 32);
  g.pcie_gen_current = r.optional_int("pcie_gen_current", 0, 16).value_or(0);
  g.pcie_gen_max = r.optional_int("pcie_gen_max", 0, 16).value_or(0);
  g.pcie_width_current = r.optional_int("pcie_width_current", 0, 64).value_or(0);
  g.pcie_width_max = r.optional_int("pcie_width_max", 0, 64).value_or(0);
  g.power_limit_w = opt_number(r, "power_limit_w", 0, 10000).value_or(0);
  g.compute_capability = r.optional_string("compute_capability", 8);
  return r.finish();
}

core::Status parse_sample(const nlohmann::json& j, const std::string& path, TelemetrySample& s) {
  ObjectReader r(j, path);
  s.index = r.required_int("index", 0, kMaxGpusPerMachine - 1);
  s.uuid = r.required_string("uuid", 1, 96);
  s.at_ms = time_field(r, "at", true).value_or(0);
  s.error = r.optional_string("error", 1000);
  if (!s.error) {
    s.memory_used_mib = r.required_int("memory_used_mib", 0, 16 * 1024 * 1024);
    s.temperature_c = r.optional_int("temperature_c", 0, 200);
    s.power_w = opt_number(r, "power_w", 0, 10000);
    s.power_limit_w = opt_number(r, "power_limit_w", 0, 10000);
    s.util_gpu_pct = r.optional_int("util_gpu_pct", 0, 100);
    s.util_mem_pct = r.optional_int("util_mem_pct", 0, 100);
    s.sm_clock_mhz = r.optional_int("sm_clock_mhz", 0, 100000);
    s.mem_clock_mhz = r.optional_int("mem_clock_mhz", 0, 100000);
    if (const auto* ev = r.required_array("clock_events", 0, 32); ev != nullptr) {
      for (std::size_t i = 0; i < ev->size(); ++i) {
        const auto& e = (*ev)[i];
        if (!e.is_string() || e.get<std::string>().empty() || e.get<std::string>().size() > 64) {
          r.fail(Error::make(ErrorCode::invalid_field, "must be a clock-event name",
                             r.path_of("clock_events") + "[" + std::to_string(i) + "]"));
          break;
        }
        s.clock_events.push_back(e.get<std::string>());
      }
    }
    s.ecc_corrected = r.optional_int("ecc_corrected", 0, kBig);
    s.ecc_uncorrected = r.optional_int("ecc_uncorrected", 0, kBig);
  }
  return r.finish();
}

core::Status parse_event(const nlohmann::json& j, const std::string& path, AgentEvent& e) {
  ObjectReader r(j, path);
  e.type = r.required_string("type", 1, 32);
  if (!r.failed() && e.type != "gpu_lost" && e.type != "gpu_recovered") {
    r.fail(Error::make(ErrorCode::invalid_field, "must be gpu_lost or gpu_recovered", r.path_of("type")));
  }
  e.uuid = r.required_string("uuid", 1, 96);
  e.at_ms = time_field(r, "at", true).value_or(0);
  e.message = r.optional_string("message", 1000);
  return r.finish();
}

std::string item_path(const std::string& list, std::size_t i) {
  return list + "[" + std::to_string(i) + "]";
}

}  // namespace

nlohmann::json AgentHost::to_json() const {
  return {{"hostname", hostname},
          {"cpu_model", cpu_model},
          {"cpu_cores", cpu_cores},
          {"ram_mib", ram_mib},
          {"disk_free_mib", disk_free_mib},
          {"os", os},
          {"kernel", kernel},
          {"docker_version", docker_version ? nlohmann::json(*docker_version) : nlohmann::json()}};
}

nlohmann::json AgentGpu::facts() const {
  auto opt = [](const std::optional<std::string>& s) { return s ? nlohmann::json(*s) : nlohmann::json(); };
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

nlohmann::json TelemetrySample::to_json() const {
  auto oi = [](const std::optional<std::int64_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  auto od = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  nlohmann::json j = {{"at", util::rfc3339(at_ms)}};
  if (error) {
    j["error"] = *error;
    return j;
  }
  j.update({{"memory_used_mib", oi(memory_used_mib)},
            {"temperature_c", oi(temperature_c)},
            {"power_w", od(power_w)},
            {"power_limit_w", od(power_limit_w)},
            {"util_gpu_pct", oi(util_gpu_pct)},
            {"util_mem_pct", oi(util_mem_pct)},
            {"sm_clock_mhz", oi(sm_clock_mhz)},
            {"mem_clock_mhz", oi(mem_clock_mhz)},
            {"clock_events", clock_events},
            {"ecc_corrected", oi(ecc_corrected)},
            {"ecc_uncorrected", oi(ecc_uncorrected)}});
  return j;
}

namespace {

void append_key(std::string& out, std::string_view key) {
  out += ",\"";
  out += key;
  out += "\":";
}

void append_number(std::string& out, std::string_view key, const std::optional<std::int64_t>& v) {
  append_key(out, key);
  if (!v) {
    out += "null";
    return;
  }
  char buf[24];
  out.append(buf, std::to_chars(buf, buf + sizeof buf, *v).ptr);
}

// As nlohmann::json writes a double: the shortest round trip, with ".0" when it would read as an integer.
void append_number(std::string& out, std::string_view key, const std::optional<double>& v) {
  append_key(out, key);
  if (!v || !std::isfinite(*v)) {
    out += "null";
    return;
  }
  char buf[32];
  const std::string_view text(buf, static_cast<std::size_t>(std::to_chars(buf, buf + sizeof buf, *v).ptr - buf));
  out += text;
  if (text.find_first_of(".e") == std::string_view::npos) out += ".0";
}

}  // namespace

std::string TelemetrySample::to_json_text() const {
  // Keys in nlohmann::json's (sorted) order, so the text is what to_json().dump() gives.
  std::string out = "{\"at\":\"" + util::rfc3339(at_ms) + "\"";
  if (error) {
    append_key(out, "error");
    out += nlohmann::json(*error).dump();
    out += '}';
    return out;
  }
  append_key(out, "clock_events");
  out += clock_events.empty() ? std::string("[]") : nlohmann::json(clock_events).dump();
  append_number(out, "ecc_corrected", ecc_corrected);
  append_number(out, "ecc_uncorrected", ecc_uncorrected);
  append_number(out, "mem_clock_mhz", mem_clock_mhz);
  append_number(out, "memory_used_mib", memory_used_mib);
  append_number(out, "power_limit_w", power_limit_w);
  append_number(out, "power_w", power_w);
  append_number(out, "sm_clock_mhz", sm_clock_mhz);
  append_number(out, "temperature_c", temperature_c);
  append_number(out, "util_gpu_pct", util_gpu_pct);
  append_number(out, "util_mem_pct", util_mem_pct);
  out += '}';
  return out;
}

Result<RegisterRequest> parse_register_request(const nlohmann::json& body) {
  RegisterRequest req;
  ObjectReader r(body);
  check_protocol(r, req.protocol_version);
  req.agent_version = r.required_string("agent_version", 1, 32);
  req.machine_fingerprint = r.required_string("machine_fingerprint", 8, 128);
  req.machine_id = r.optional_string("machine_id", 64);
  req.simulated = r.required_bool("simulated");
  if (const auto* host = r.required_object("host"); host != nullptr && !r.failed()) {
    if (auto s = parse_host(*host, req.host); !s) r.fail(std::move(s).error());
  }
  if (const auto* gpus = r.required_array("gpus", 0, kMaxGpusPerMachine); gpus != nullptr && !r.failed()) {
    for (std::size_t i = 0; i < gpus->size() && !r.failed(); ++i) {
      AgentGpu g;
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

Result<HeartbeatRequest> parse_heartbeat_request(const nlohmann::json& body) {
  HeartbeatRequest req;
  ObjectReader r(body);
  check_protocol(r, req.protocol_version);
  req.machine_id = r.required_string("machine_id", 1, 64);
  req.seq = r.required_int("seq", 1, 1LL << 53);
  req.sent_at_ms = time_field(r, "sent_at", false);
  if (const auto* t = r.required_array("telemetry", 0, kMaxGpusPerMachine); t != nullptr && !r.failed()) {
    for (std::size_t i = 0; i < t->size(); ++i) {
      TelemetrySample s;
      if (auto st = parse_sample((*t)[i], item_path("telemetry", i), s); !st) {
        r.fail(std::move(st).error());
        break;
      }
      req.telemetry.push_back(std::move(s));
    }
  }
  if (const auto* jobs = r.required_array("jobs", 0, 1024); jobs != nullptr) req.jobs = *jobs;
  if (const auto* ev = r.optional_value("events"); ev != nullptr && !r.failed()) {
    if (!ev->is_array() || ev->size() > 256) {
      r.fail(Error::make(ErrorCode::invalid_field, "must be an array of at most 256 events", std::string("events")));
    } else {
      for (std::size_t i = 0; i < ev->size(); ++i) {
        AgentEvent e;
        if (auto st = parse_event((*ev)[i], item_path("events", i), e); !st) {
          r.fail(std::move(st).error());
          break;
        }
        req.events.push_back(std::move(e));
      }
    }
  }
  if (auto s = r.finish(); !s) return std::move(s).error();
  return req;
}

bool is_throttle_event(const std::string& n) {
  return n == "sw_power_cap" || n == "hw_slowdown" || n == "sw_thermal_slowdown" || n == "hw_thermal_slowdown" ||
         n == "hw_power_brake_slowdown";
}

}  // namespace gpunex::server
