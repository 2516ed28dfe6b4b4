#pragma once
// Chooses the GPU backend: simulated when --simulate is given, NVML otherwise.

#include <memory>
#include <optional>
#include <string>

#include "core/result.hpp"
#include "gpu/gpu_backend.hpp"

namespace gpunex::agent {

//! `seed` keeps simulated UUIDs stable per machine; `nvml_library` is the library dlopen tries.
core::Result<std::unique_ptr<gpu::GpuBackend>> open_backend(const std::optional<std::string>& simulate,
                                                            const std::string& seed, const std::string& nvml_library);

}  // namespace gpunex::agent
