#include "agent/backend.hpp"

#include "gpu/nvml/nvml_backend.hpp"
#include "gpu/sim/sim_backend.hpp"

namespace gpunex::agent {

core::Result<std::unique_ptr<gpu::GpuBackend>> open_backend(const std::optional<std::string>& simulate,
                                                            const std::string& seed, const std::string& nvml_library) {
  if (simulate) {
    auto machine = gpu::sim::parse_spec(*simulate);
    if (!machine) return std::move(machine).error();
    return std::unique_ptr<gpu::GpuBackend>(std::make_unique<gpu::sim::SimBackend>(std::move(*machine), seed));
  }
  return gpu::open_nvml_backend(nvml_library);
}

}  // namespace gpunex::agent
