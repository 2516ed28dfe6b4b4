#pragma once
// The simulated GPU backend: a machine description (catalog model, count,
// faults per GPU), like DCGM's NVML injection, so development, tests and the
// benchmark flows run without a GPU. Never silent: simulated() is true.
//
// SPEC is "MODEL:COUNT" (several joined with commas: "L40S:2,L4:1") or the path
// of a TOML machine file:
//
//   driver_version = "550.54.15"   # optional
//   cuda_version = "12.4"          # optional
//   [[gpu]]
//   model = "L40S"
//   count = 2
//   [[gpu]]
//   model = "H100-SXM"
//   thermal_throttle = true        # faults, all optional:
//   power_cap = true               #   clocks held down by the power limit
//   ecc_uncorrected = 2            #   uncorrectable ECC errors reported
//   ecc_corrected = 10
//   off_bus = true                 #   sampling fails as if the GPU fell off the bus
//   off_bus_after = 3              #   ... after this many good samples
//   perf_factor = 0.7              #   benchmarks reach this share of the reference

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "gpu/gpu_backend.hpp"
#include "gpu/sim/sim_catalog.hpp"

namespace gpunex::gpu::sim {

struct Faults {
  bool thermal_throttle = false;
  bool power_cap = false;
  std::uint64_t ecc_uncorrected = 0;
  std::uint64_t ecc_corrected = 0;
  bool off_bus = false;
  unsigned off_bus_after = 0;  // good samples before the GPU is lost (with off_bus)
  double perf_factor = 1.0;

  bool any() const;
  bool operator==(const Faults&) const = default;
};

struct GpuSpec {
  const CatalogEntry* model = nullptr;
  Faults faults;
};

//! A simulated machine: one GpuSpec per GPU, in index order.
struct Machine {
  std::vector<GpuSpec> gpus;
  std::string driver_version = "550.54.15";
  std::string cuda_version = "12.4";
  std::string source;  // the SPEC it came from, for logs

  //! "2x L40S, 1x H100-SXM (faults: thermal_throttle)".
  std::string summary() const;
};

//! Parses SPEC: MODEL:COUNT[,MODEL:COUNT...] or a machine file path. Errors name what is wrong.
core::Result<Machine> parse_spec(std::string_view spec);
//! Parses the TOML text of a machine file; `origin` names it in errors.
core::Result<Machine> parse_machine_toml(std::string_view text, const std::string& origin);

class SimBackend final : public GpuBackend {
 public:
  //! `seed` makes UUIDs and telemetry stable per machine (the agent passes its fingerprint).
  SimBackend(Machine machine, std::string seed);

  core::Result<std::vector<protocol::GpuInfo>> list_gpus() override;
  core::Result<GpuSample> sample(unsigned index) override;
  //! How loaded a sample shows the GPU: `drift` is sample()'s slow wave, like a card in use now and then;
  //! `busy` is a card running a benchmark case (utilisation near 100%, power near TDP, high clocks), as a
  //! real card's NVML readings are during a GEMM; `idle` is a card doing nothing (the test-only lying agent
  //! that reports figures it did not measure).
  enum class Load { drift, busy, idle };
  core::Result<GpuSample> sample_under(unsigned index, Load load);
  bool simulated() const override { return true; }
  std::string describe() const override;

  const Machine& machine() const { return machine_; }
  //! The stable UUID of simulated GPU `index`.
  std::string uuid(unsigned index) const;
  //! Time source for samples; tests set a fixed one.
  void set_clock(std::int64_t (*now_ms)()) { now_ms_ = now_ms; }

 private:
  Machine machine_;
  std::string seed_;
  std::vector<std::uint64_t> samples_taken_;
  std::int64_t (*now_ms_)();
};

}  // namespace gpunex::gpu::sim
