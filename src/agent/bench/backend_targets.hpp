#pragma once
// Adapts the agent's GpuBackend (NVML or simulated) to the suite's GpuTargets:
// the catalog model of each GPU, its telemetry sampler, and, on the simulated
// backend, the configured performance factor and faults.

#include <mutex>
#include <vector>

#include "agent/bench/suite.hpp"
#include "gpu/gpu_backend.hpp"

namespace gpunex::agent::bench {

//! One target per GPU. `backend_mutex` guards the backend, which the heartbeat thread samples too;
//! both must outlive the targets. A simulated GPU's samples during a case show it busy, or idle when
//! `idle_telemetry` (the test-only lying agent, LieMode::idle).
std::vector<GpuTarget> gpu_targets(gpu::GpuBackend& backend, const std::vector<protocol::GpuInfo>& gpus,
                                   std::mutex& backend_mutex, bool idle_telemetry = false);

//! The catalog model of a GPU: by NVML name, then by catalog id (case-insensitive).
std::optional<core::bench::ModelSpec> catalog_spec(const protocol::GpuInfo& info);

}  // namespace gpunex::agent::bench
