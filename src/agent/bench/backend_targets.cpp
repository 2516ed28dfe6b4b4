#include "agent/bench/backend_targets.hpp"

#include "agent/bench/bench_command.hpp"
#include "core/gpu_catalog.hpp"
#include "core/text.hpp"
#include "gpu/sim/sim_backend.hpp"

namespace gpunex::agent::bench {

namespace {

//! Compute reaches this share of the reference under a simulated fault (clocks held down).
constexpr double kThermalDerate = 0.6;
constexpr double kPowerCapDerate = 0.75;

std::string bus_tail(std::string id) {
  // NVML "00000000:17:00.0" and CUDA "0000:17:00.0" name the same slot; compare "17:00.0".
  id = core::to_lower_ascii(id);
  const auto first = id.find(':');
  return first == std::string::npos ? id : id.substr(first + 1);
}

}  // namespace

std::optional<core::bench::ModelSpec> catalog_spec(const protocol::GpuInfo& info) {
  if (const auto* m = core::match_nvml_name(info.name, core::builtin_catalog())) return core::bench::model_spec(*m);
  const auto id = core::to_lower_ascii(info.model.value_or(""));
  for (const auto& m : core::builtin_catalog()) {
    if (!id.empty() && core::to_lower_ascii(m.id) == id) return core::bench::model_spec(m);
  }
  return std::nullopt;
}

std::vector<GpuTarget> gpu_targets(gpu::GpuBackend& backend, const std::vector<protocol::GpuInfo>& gpus,
                                   std::mutex& backend_mutex, bool idle_telemetry) {
  std::vector<GpuTarget> out;
  const auto cuda = cuda_targets();
  auto* sim = dynamic_cast<gpu::sim::SimBackend*>(&backend);
  for (const auto& info : gpus) {
    GpuTarget t;
    const auto index = static_cast<unsigned>(info.index);
    t.index = index;
    t.uuid = info.uuid;
    t.name = info.name;
    t.model = catalog_spec(info);
    t.memory_total_gib = static_cast<double>(info.memory_mib) / 1024.0;
    t.compute_capability = info.compute_capability;
    t.simulated = backend.simulated();
    if (sim && index < sim->machine().gpus.size()) {
      const auto& f = sim->machine().gpus[index].faults;
      t.sim_perf_factor = f.perf_factor;
      if (f.thermal_throttle) t.sim_compute_derate *= kThermalDerate;
      if (f.power_cap) t.sim_compute_derate *= kPowerCapDerate;
    }
    for (const auto& c : cuda) {
      if (!info.pci_bus_id.empty() && bus_tail(c.uuid.substr(5)) == bus_tail(info.pci_bus_id)) {
        t.cuda_ordinal = c.cuda_ordinal;
      }
    }
    if (!t.simulated && t.cuda_ordinal < 0 && cuda.size() == gpus.size()) t.cuda_ordinal = static_cast<int>(index);
    {
      std::lock_guard lock(backend_mutex);
      if (auto s = backend.sample(index); s && s->ecc_uncorrected) t.ecc_uncorrected = *s->ecc_uncorrected;
    }
    const auto load = idle_telemetry ? gpu::sim::SimBackend::Load::idle : gpu::sim::SimBackend::Load::busy;
    t.sample = [&backend, &backend_mutex, sim, index, load]() -> std::optional<core::bench::TelemetryPoint> {
      std::lock_guard lock(backend_mutex);
      auto s = sim ? sim->sample_under(index, load) : backend.sample(index);
      if (!s) return std::nullopt;
      core::bench::TelemetryPoint p;
      p.at_ms = s->at_ms;
      if (s->sm_clock_mhz) p.sm_clock_mhz = static_cast<double>(*s->sm_clock_mhz);
      if (s->temperature_c) p.temperature_c = static_cast<double>(*s->temperature_c);
      if (s->power_w) p.power_w = *s->power_w;
      p.clock_event_bits = s->clock_event_bits;
      return p;
    };
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace gpunex::agent::bench
