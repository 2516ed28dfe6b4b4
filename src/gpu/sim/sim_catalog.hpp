#pragma once
// Reference figures per catalog model, for the simulated backend and its
// benchmarks: the built-in catalog's figures (data/gpu-catalog.tsv) plus the
// telemetry facts a simulator needs (NVML memory total, clocks, ECC).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpunex::gpu::sim {

struct CatalogEntry {
  std::string id;           // catalog id: "L40S"
  std::string nvml_name;    // what NVML reports: "NVIDIA L40S"
  unsigned vram_gib = 0;    // marketed size
  unsigned memory_mib = 0;  // what NVML reports as memory total
  double mem_bw_gbs = 0;
  double fp32_tflops = 0;
  double fp16_tflops = 0;         // non-tensor
  double fp16_tensor_tflops = 0;  // dense, FP32 accumulate
  double bf16_tensor_tflops = 0;
  std::optional<double> fp8_tensor_tflops;
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
