#include "gpu/sim/sim_backend.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <toml++/toml.h>

#include "util/clock.hpp"
#include "util/crypto.hpp"

namespace gpunex::gpu::sim {

using core::Error;
using core::ErrorCode;

bool Faults::any() const {
  return thermal_throttle || power_cap || ecc_uncorrected > 0 || ecc_corrected > 0 || off_bus || perf_factor != 1.0;
}

namespace {

std::string fault_list(const Faults& f) {
  std::vector<std::string> parts;
  if (f.thermal_throttle) parts.emplace_back("thermal_throttle");
  if (f.power_cap) parts.emplace_back("power_cap");
  if (f.ecc_uncorrected > 0) parts.push_back("ecc_uncorrected=" + std::to_string(f.ecc_uncorrected));
  if (f.ecc_corrected > 0) parts.push_back("ecc_corrected=" + std::to_string(f.ecc_corrected));
  if (f.off_bus) parts.push_back(f.off_bus_after > 0 ? "off_bus_after=" + std::to_string(f.off_bus_after) : "off_bus");
  if (f.perf_factor != 1.0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "perf_factor=%.2f", f.perf_factor);
    parts.emplace_back(buf);
  }
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

Error spec_error(std::string msg) {
  return Error::make(ErrorCode::invalid_field, std::move(msg), std::string("simulate"));
}

constexpr unsigned kMaxGpus = 64;

core::Result<Machine> parse_model_counts(std::string_view spec) {
  Machine m;
  m.source = std::string(spec);
  std::size_t start = 0;
  while (start <= spec.size()) {
    std::size_t comma = spec.find(',', start);
    std::string_view part =
        spec.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    std::size_t colon = part.rfind(':');
    if (colon == std::string_view::npos) {
      return spec_error("--simulate '" + std::string(part) + "': expected MODEL:COUNT (e.g. L40S:2) or a machine file");
    }
    std::string_view model_id = part.substr(0, colon);
    std::string_view count_text = part.substr(colon + 1);
    const CatalogEntry* model = find_model(model_id);
    if (model == nullptr) {
      return spec_error("--simulate: unknown GPU model '" + std::string(model_id) + "'; known models: " + model_list());
    }
    unsigned count = 0;
    auto [ptr, ec] = std::from_chars(count_text.data(), count_text.data() + count_text.size(), count);
    if (ec != std::errc() || ptr != count_text.data() + count_text.size() || count == 0 || count > kMaxGpus) {
      return spec_error("--simulate: GPU count '" + std::string(count_text) + "' must be a whole number from 1 to " +
                        std::to_string(kMaxGpus));
    }
    for (unsigned i = 0; i < count; ++i) m.gpus.push_back(GpuSpec{model, {}});
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (m.gpus.size() > kMaxGpus) return spec_error("--simulate: at most " + std::to_string(kMaxGpus) + " GPUs");
  return m;
}

// SplitMix64: a small, good deterministic generator for plausible telemetry.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
double unit(std::uint64_t x) {
  return static_cast<double>(mix(x) >> 11) / 9007199254740992.0;
}

}  // namespace

std::string Machine::summary() const {
  std::string out;
  std::size_t i = 0;
  while (i < gpus.size()) {
    std::size_t j = i + 1;
    while (j < gpus.size() && gpus[j].model == gpus[i].model && gpus[j].faults == gpus[i].faults) ++j;
    if (!out.empty()) out += ", ";
    out += std::to_string(j - i) + "x " + gpus[i].model->id;
    if (gpus[i].faults.any()) out += " (faults: " + fault_list(gpus[i].faults) + ")";
    i = j;
  }
  return out;
}

namespace {

//! One [[gpu]] table of a machine file: its model, count and faults, added to `m` count times.
std::optional<Error> parse_gpu_table(const toml::table& t, const std::string& where, Machine& m) {
  auto model_id = t["model"].value<std::string>();
  if (!model_id) return spec_error(where + ".model is required (one of " + model_list() + ")");
  const CatalogEntry* model = find_model(*model_id);
  if (model == nullptr)
    return spec_error(where + ".model: unknown GPU model '" + *model_id + "'; known models: " + model_list());
  std::int64_t count = 1;
  Faults f;
  for (auto&& [key, value] : t) {
    const std::string k(key.str());
    auto need_bool = [&](bool& out) -> std::optional<Error> {
      auto b = value.value<bool>();
      if (!b || !value.is_boolean()) return spec_error(where + "." + k + " must be true or false");
      out = *b;
      return std::nullopt;
    };
    auto need_uint = [&](std::int64_t lo, std::int64_t hi, std::int64_t& out) -> std::optional<Error> {
      if (!value.is_integer()) return spec_error(where + "." + k + " must be a whole number");
      std::int64_t v = *value.value<std::int64_t>();
      if (v < lo || v > hi) {
        return spec_error(where + "." + k + " must be from " + std::to_string(lo) + " to " + std::to_string(hi));
      }
      out = v;
      return std::nullopt;
    };
    std::optional<Error> err;
    std::int64_t n = 0;
    if (k == "model") {
      continue;
    } else if (k == "count") {
      err = need_uint(1, kMaxGpus, count);
    } else if (k == "thermal_throttle") {
      err = need_bool(f.thermal_throttle);
    } else if (k == "power_cap") {
      err = need_bool(f.power_cap);
    } else if (k == "off_bus") {
      err = need_bool(f.off_bus);
    } else if (k == "off_bus_after") {
      err = need_uint(0, 1'000'000, n);
      f.off_bus_after = static_cast<unsigned>(n);
      f.off_bus = true;
    } else if (k == "ecc_uncorrected") {
      err = need_uint(0, 1'000'000, n);
      f.ecc_uncorrected = static_cast<std::uint64_t>(n);
    } else if (k == "ecc_corrected") {
      err = need_uint(0, 1'000'000, n);
      f.ecc_corrected = static_cast<std::uint64_t>(n);
    } else if (k == "perf_factor") {
      auto d = value.value<double>();
      if (!d || !(value.is_floating_point() || value.is_integer()) || !(*d > 0.0 && *d <= 1.5)) {
        err = spec_error(where + ".perf_factor must be a number above 0 and at most 1.5");
      } else {
        f.perf_factor = *d;
      }
    } else {
      err = spec_error(where + ": unknown key '" + k +
                       "' (expected model, count, thermal_throttle, power_cap, ecc_uncorrected, ecc_corrected, "
                       "off_bus, off_bus_after, perf_factor)");
    }
    if (err) return err;
  }
  for (std::int64_t i = 0; i < count; ++i) m.gpus.push_back(GpuSpec{model, f});
  return std::nullopt;
}

}  // namespace

core::Result<Machine> parse_machine_toml(std::string_view text, const std::string& origin) {
  toml::table root;
  try {
    root = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    std::ostringstream msg;
    msg << origin << ": not valid TOML: " << e.description() << " (line " << e.source().begin.line << ")";
    return spec_error(msg.str());
  }
  Machine m;
  m.source = origin;
  for (auto&& [key, value] : root) {
    const std::string k(key.str());
    if (k == "driver_version" || k == "cuda_version") {
      auto s = value.value<std::string>();
      if (!s || s->empty()) return spec_error(origin + ": " + k + " must be a non-empty string");
      (k == "driver_version" ? m.driver_version : m.cuda_version) = *s;
    } else if (k != "gpu") {
      return spec_error(origin + ": unknown key '" + k + "' (expected driver_version, cuda_version, [[gpu]])");
    }
  }
  const toml::array* gpus = root["gpu"].as_array();
  if (gpus == nullptr || gpus->empty()) return spec_error(origin + ": no [[gpu]] entries");
  for (std::size_t gi = 0; gi < gpus->size(); ++gi) {
    const toml::table* t = (*gpus)[gi].as_table();
    const std::string where = origin + ": gpu[" + std::to_string(gi) + "]";
    if (t == nullptr) return spec_error(where + " must be a table");
    if (auto err = parse_gpu_table(*t, where, m)) return std::move(*err);
  }
  if (m.gpus.size() > kMaxGpus) return spec_error(origin + ": at most " + std::to_string(kMaxGpus) + " GPUs");
  return m;
}

core::Result<Machine> parse_spec(std::string_view spec) {
  if (spec.empty()) return spec_error("--simulate needs MODEL:COUNT (e.g. L40S:2) or a machine file");
  std::error_code ec;
  const std::filesystem::path path{std::string(spec)};
  if (std::filesystem::is_regular_file(path, ec)) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in.good() && !in.eof()) return spec_error("--simulate: cannot read " + path.string());
    return parse_machine_toml(text.str(), path.string());
  }
  if (spec.find('/') != std::string_view::npos || spec.ends_with(".toml")) {
    return spec_error("--simulate: machine file " + std::string(spec) + " not found");
  }
  return parse_model_counts(spec);
}

SimBackend::SimBackend(Machine machine, std::string seed)
    : machine_(std::move(machine)),
      seed_(std::move(seed)),
      samples_taken_(machine_.gpus.size(), 0),
      now_ms_(&util::system_now_ms) {}

std::string SimBackend::uuid(unsigned index) const {
  const std::string h = util::sha256_hex(seed_ + "/sim-gpu/" + std::to_string(index));
  return "GPU-" + h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) + "-" +
         h.substr(20, 12);
}

std::string SimBackend::describe() const {
  return machine_.summary();
}

core::Result<std::vector<protocol::GpuInfo>> SimBackend::list_gpus() {
  std::vector<protocol::GpuInfo> out;
  const std::string serial_hash = util::sha256_hex(seed_ + "/sim-serial");
  for (unsigned i = 0; i < machine_.gpus.size(); ++i) {
    const CatalogEntry& e = *machine_.gpus[i].model;
    protocol::GpuInfo g;
    g.index = i;
    g.name = e.nvml_name;
    g.model = e.id;
    g.uuid = uuid(i);
    // 13 digits like real boards; derived, so stable per machine.
    g.serial = "SIM" + std::to_string(mix(std::hash<std::string>{}(serial_hash) + i) % 10'000'000'000ULL);
    g.memory_mib = e.memory_mib;
    g.driver_version = machine_.driver_version;
    g.cuda_version = machine_.cuda_version;
    char bus[32];
    std::snprintf(bus, sizeof bus, "00000000:%02X:00.0", 0x17 + 0x13 * i);
    g.pci_bus_id = bus;
    g.pcie_gen_max = e.pcie_gen;
    g.pcie_gen_current = e.pcie_gen;
    g.pcie_width_max = 16;
    g.pcie_width_current = 16;
    g.power_limit_w = e.tdp_w;
    g.compute_capability = e.compute_capability;
    out.push_back(std::move(g));
  }
  return out;
}

core::Result<GpuSample> SimBackend::sample(unsigned index) { return sample_under(index, Load::drift); }

core::Result<GpuSample> SimBackend::sample_under(unsigned index, Load load) {
  if (index >= machine_.gpus.size()) {
    return Error::make(ErrorCode::not_found, "no simulated GPU " + std::to_string(index));
  }
  const GpuSpec& spec = machine_.gpus[index];
  const Faults& f = spec.faults;
  const CatalogEntry& e = *spec.model;
  std::uint64_t n = samples_taken_[index]++;
  if (f.off_bus && n >= f.off_bus_after) {
    return Error::make(ErrorCode::unavailable, "GPU " + std::to_string(index) + " (" + uuid(index) +
                                                   "): nvmlDeviceGetHandleByIndex_v2 failed: GPU is lost "
                                                   "(simulated off_bus fault)");
  }
  GpuSample s;
  s.index = index;
  s.uuid = uuid(index);
  s.at_ms = now_ms_();
  const std::uint64_t base = std::hash<std::string>{}(s.uuid);
  // Load drifts slowly over ~10 minutes with noise on top, so charts look like a real card.
  const double minutes = static_cast<double>(s.at_ms) / 60000.0;
  const double wave = 0.5 + 0.5 * std::sin(minutes / 10.0 * 2.0 * M_PI + static_cast<double>(base % 628) / 100.0);
  const double noise = unit(base ^ static_cast<std::uint64_t>(s.at_ms / 1000));
  double util = load == Load::busy   ? 95.0 + noise * 5.0
                : load == Load::idle ? noise * 2.0
                                     : std::clamp(wave * 90.0 + noise * 10.0, 0.0, 100.0);
  s.util_gpu_pct = static_cast<unsigned>(util);
  s.util_mem_pct = static_cast<unsigned>(util * 0.6);
  s.memory_used_mib = static_cast<std::int64_t>(e.memory_mib * (0.02 + 0.7 * util / 100.0));
  double power = e.tdp_w * (0.12 + 0.8 * util / 100.0) * (0.97 + 0.06 * noise);
  double temp = 32.0 + 45.0 * util / 100.0 + 3.0 * noise;
  double sm_clock = e.max_sm_clock_mhz * (util < 3.0 ? 0.25 : 0.92 + 0.08 * noise);
  namespace clock_event = core::clock_event;
  std::uint64_t bits = util < 3.0 ? clock_event::gpu_idle : 0;
  if (f.thermal_throttle) {
    temp = 88.0 + 5.0 * noise;
    sm_clock = e.max_sm_clock_mhz * 0.55;
    bits |= clock_event::sw_thermal_slowdown | clock_event::hw_thermal_slowdown;
  }
  if (f.power_cap) {
    power = e.tdp_w * (0.99 + 0.01 * noise);
    sm_clock = std::min(sm_clock, e.max_sm_clock_mhz * 0.7);
    bits |= clock_event::sw_power_cap;
  }
  s.power_w = std::round(power * 100.0) / 100.0;
  s.power_limit_w = e.tdp_w;
  s.temperature_c = static_cast<unsigned>(temp);
  s.sm_clock_mhz = static_cast<unsigned>(sm_clock);
  s.mem_clock_mhz = e.mem_clock_mhz;
  s.clock_event_bits = bits;
  s.clock_events = core::clock_event_names(bits);
  if (e.ecc) {
    s.ecc_corrected = static_cast<std::int64_t>(f.ecc_corrected);
    s.ecc_uncorrected = static_cast<std::int64_t>(f.ecc_uncorrected);
  }
  return s;
}

}  // namespace gpunex::gpu::sim
