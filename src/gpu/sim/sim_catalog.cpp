#include "gpu/sim/sim_catalog.hpp"

#include <algorithm>
#include <cctype>

namespace gpunex::gpu::sim {

const std::vector<CatalogEntry>& catalog() {
  // id, nvml name, GiB, MiB (observed), GB/s, FP32, FP16, FP16 TC, BF16 TC, FP8 TC, TDP, gen, cc, SM MHz, mem MHz, ECC
  static const std::vector<CatalogEntry> kCatalog = {
      {"H100-SXM", "NVIDIA H100 80GB HBM3", 80, 81559, 3350, 67, 133.8, 989.5, 989.5, 1979, 700, 5, "9.0", 1980, 2619,
       true},
      {"H100-PCIE", "NVIDIA H100 PCIe", 80, 81559, 2000, 51, 102.4, 756.5, 756.5, 1513, 350, 5, "9.0", 1755, 1593,
       true},
      {"H200", "NVIDIA H200", 141, 143771, 4800, 67, 133.8, 989.5, 989.5, 1979, 700, 5, "9.0", 1980, 3201, true},
      {"A100-SXM-80GB", "NVIDIA A100-SXM4-80GB", 80, 81920, 2039, 19.5, 78, 312, 312, std::nullopt, 400, 4, "8.0", 1410,
       1593, true},
      {"A100-PCIE-40GB", "NVIDIA A100-PCIE-40GB", 40, 40960, 1555, 19.5, 78, 312, 312, std::nullopt, 250, 4, "8.0",
       1410, 1215, true},
      {"A100-PCIE-80GB", "NVIDIA A100 80GB PCIe", 80, 81920, 1935, 19.5, 78, 312, 312, std::nullopt, 300, 4, "8.0",
       1410, 1512, true},
      {"L40S", "NVIDIA L40S", 48, 46068, 864, 91.6, 91.6, 362.05, 362.05, 733, 350, 4, "8.9", 2520, 9001, true},
      {"L4", "NVIDIA L4", 24, 23034, 300, 30.3, 30.3, 121, 121, 242.5, 72, 4, "8.9", 2040, 6251, true},
      {"RTX-4090", "NVIDIA GeForce RTX 4090", 24, 24564, 1008, 82.6, 82.6, 165.2, 165.2, 330.3, 450, 4, "8.9", 2520,
       10501, false},
      {"RTX-A6000", "NVIDIA RTX A6000", 48, 49140, 768, 38.7, 38.7, 154.8, 154.8, std::nullopt, 300, 4, "8.6", 1800,
       8001, true},
  };
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
