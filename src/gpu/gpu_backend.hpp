#pragma once
// The GPU hardware interface: only the calls GPUnex makes. Two implementations:
// NVML loaded at run time (gpu/nvml/) and a data-driven simulation (gpu/sim/).
// Domain code depends on this header only, never on a driver header. A backend
// describes GPUs in the protocol's own types, which the agent sends unchanged.

#include <cstdint>
#include <string>
#include <vector>

#include "core/clock_events.hpp"
#include "core/result.hpp"
#include "protocol/heartbeat.hpp"
#include "protocol/register.hpp"

namespace gpunex::gpu {

//! One telemetry sample of one GPU as a backend reads it: the message's fields (readings a GPU
//! does not support stay empty; error is never set, a failed sample is an Error instead) plus
//! NVML's raw clocks-event bitmask, which the benchmarks fold.
struct GpuSample : protocol::TelemetrySample {
  std::uint64_t clock_event_bits = 0;  // clock_events is core::clock_event_names of these bits
};

//! A GPU backend. Implementations are not thread-safe; one thread samples.
class GpuBackend {
 public:
  virtual ~GpuBackend() = default;
  //! Every GPU the backend sees, with its static facts (model set only when the backend knows it).
  virtual core::Result<std::vector<protocol::GpuInfo>> list_gpus() = 0;
  //! One telemetry sample of the GPU at `index` (as list_gpus numbered it).
  virtual core::Result<GpuSample> sample(unsigned index) = 0;
  //! True for the simulated backend: the agent and the dashboard must say so.
  virtual bool simulated() const = 0;
  //! A one-line description for logs ("NVML, driver 550.54.15"; "2x L40S" for the simulation).
  virtual std::string describe() const = 0;
};

}  // namespace gpunex::gpu
