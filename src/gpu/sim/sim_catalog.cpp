#include "gpu/sim/sim_catalog.hpp"

#include <algorithm>
#include <cctype>

#include "core/gpu_catalog.hpp"

namespace gpunex::gpu::sim {

namespace {

//! What the reference figures do not say but simulated telemetry needs, per catalog id:
//! memory total as NVML reports it (reference/nvml-observed.tsv), plausible clocks, ECC.
struct TelemetryFacts {
  const char* id;
  unsigned memory_mib;
  unsigned max_sm_clock_mhz;
  unsigned mem_clock_mhz;
  bool ecc;
};
constexpr TelemetryFacts kTelemetry[] = {
    {"H100-SXM", 81559, 1980, 2619, true},       {"H100-PCIE", 81559, 1755, 1593, true},
    {"H200", 143771, 1980, 3201, true},          {"A100-SXM-80GB", 81920, 1410, 1593, true},
    {"A100-PCIE-40GB", 40960, 1410, 1215, true}, {"A100-PCIE-80GB", 81920, 1410, 1512, true},
    {"L40S", 46068, 2520, 9001, true},           {"L4", 23034, 2040, 6251, true},
    {"RTX-4090", 24564, 2520, 10501, false},     {"RTX-A6000", 49140, 1800, 8001, true},
};

CatalogEntry entry_of(const core::GpuModel& m) {
  CatalogEntry e;
  e.id = m.id;
  e.nvml_name = m.nvml_name_pattern.empty() ? m.name : m.nvml_name_pattern;
  e.vram_gib = static_cast<unsigned>(m.vram_gib);
  e.memory_mib = static_cast<unsigned>(m.vram_gib * 1024);
  e.tdp_w = static_cast<unsigned>(m.tdp_w.value_or(0));
  e.pcie_gen = static_cast<unsigned>(m.pcie_gen.value_or(4));
  e.compute_capability = m.compute_capability;
  e.max_sm_clock_mhz = 1800;
  e.mem_clock_mhz = 1500;
  for (const auto& t : kTelemetry) {
    if (m.id == t.id) {
      e.memory_mib = t.memory_mib;
      e.max_sm_clock_mhz = t.max_sm_clock_mhz;
      e.mem_clock_mhz = t.mem_clock_mhz;
      e.ecc = t.ecc;
    }
  }
  return e;
}

}  // namespace

const std::vector<CatalogEntry>& catalog() {
  // The reference figures are the built-in catalog's (data/gpu-catalog.tsv), so the simulator
  // and the server's expectations never disagree.
  static const std::vector<CatalogEntry> kCatalog = [] {
    std::vector<CatalogEntry> out;
    for (const core::GpuModel& m : core::builtin_catalog()) out.push_back(entry_of(m));
    return out;
  }();
  return kCatalog;
}

namespace {
bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}
}  // namespace

const CatalogEntry* find_model(std::string_view id) {
  for (const CatalogEntry& e : catalog()) {
    if (iequals(e.id, id)) return &e;
  }
  return nullptr;
}

std::string model_list() {
  std::string out;
  for (const CatalogEntry& e : catalog()) {
    if (!out.empty()) out += ", ";
    out += e.id;
  }
  return out;
}

}  // namespace gpunex::gpu::sim
