#pragma once
// GpuBackend over NVML, loaded with dlopen at run time.

#include <memory>
#include <string>

#include "core/result.hpp"
#include "gpu/gpu_backend.hpp"

namespace gpunex::gpu {

//! The shared library the driver installs.
inline constexpr const char* kNvmlLibrary = "libnvidia-ml.so.1";

//! Loads NVML from `library` (tests pass a name that does not exist) and initialises it.
//! No library: an unavailable Error saying no NVIDIA driver was found and what to do.
core::Result<std::unique_ptr<GpuBackend>> open_nvml_backend(const std::string& library = kNvmlLibrary);

}  // namespace gpunex::gpu
