#pragma once
// What a simulated GPU of each catalog model reports: the built-in catalog's
// board facts (data/gpu-catalog.tsv) plus the telemetry facts a simulator needs
// (NVML memory total, clocks, ECC). Its benchmark figures are the catalog's
// reference (core::bench::model_spec) times the performance factor.

#include <string>
#include <string_view>
#include <vector>

namespace gpunex::gpu::sim {

struct CatalogEntry {
  std::string id;           // catalog id: "L40S"
  std::string nvml_name;    // what NVML reports: "NVIDIA L40S"
  unsigned vram_gib = 0;    // marketed size
  unsigned memory_mib = 0;  // what NVML reports as memory total
  unsigned tdp_w = 0;
  unsigned pcie_gen = 0;
  std::string compute_capability;
  unsigned max_sm_clock_mhz = 0;  // plausible figures for simulated telemetry
  unsigned mem_clock_mhz = 0;
  bool ecc = true;  // GeForce boards report no ECC
};

//! Every model the simulator knows, in catalog order.
const std::vector<CatalogEntry>& catalog();
//! The entry for a catalog id (case-insensitive), or null.
const CatalogEntry* find_model(std::string_view id);
//! "H100-SXM, H100-PCIE, ..." for error messages.
std::string model_list();

}  // namespace gpunex::gpu::sim
