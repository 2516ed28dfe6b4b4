#pragma once
// The agent's benchmark suite: a registry of cases in the manner of NVIDIA's
// nvbandwidth — each with a key, a description, a filter that waives it with
// a reason, and a run that returns samples, reduced to a median (or a
// percentile for latency). GPU cases run per GPU while a thread samples its
// telemetry; storage and network cases run once per machine.
//
// On a simulated GPU the compute and memory figures are the model's expected
// figures × the configured performance factor (× a derating for a
// simulated thermal or power fault, whose clock-event bits show in the
// telemetry), the host link its expected figure; storage and network are
// always measured for real.

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/bench/network_bench.hpp"
#include "agent/bench/storage_bench.hpp"
#include "core/benchmark.hpp"
#include "core/benchmark_report.hpp"

namespace gpunex::agent::bench {

//! One GPU to benchmark, described without the GPU backend's types (the caller adapts).
struct GpuTarget {
  unsigned index = 0;
  std::string uuid;
  std::string name;
  std::optional<core::bench::ModelSpec> model;  // the catalog model, when known
  std::optional<double> memory_total_gib;
  std::optional<std::string> compute_capability;  // "8.9"
  std::uint64_t ecc_uncorrected = 0;
  bool simulated = false;
  double sim_perf_factor = 1.0;     // simulated: share of the expected figures reached
  double sim_compute_derate = 1.0;  // simulated: extra factor on compute from a thermal or power fault
  int cuda_ordinal = -1;            // real GPUs: the CUDA device to run on
  //! One telemetry sample (NVML or simulated); nullopt when it cannot be read. May be empty.
  std::function<std::optional<core::bench::TelemetryPoint>()> sample;
};

struct SuiteOptions {
  std::vector<std::string> only;  // groups (compute, memory, host_link, storage, network) or keys; empty: all
  StorageOptions storage;
  NetworkOptions network;  // network cases are waived when server_url is empty
  std::chrono::milliseconds telemetry_interval{100};
  int gemm_size = 0;  // 0: 8192 when the GPU has the memory, else 4096
  std::size_t memory_bytes = 1ull << 30;
  std::size_t host_link_bytes = 512ull << 20;
  unsigned sim_samples = 5;
  //! Set when the agent is stopping: cases not yet started are FAILED "cancelled" without running,
  //! so a SIGTERM waits for one case at most. A cancelled report is not to be submitted.
  const std::atomic<bool>* cancel = nullptr;
};

class SuiteRun;

//! One benchmark: what it measures, when it does not apply, how it runs.
struct BenchCase {
  core::bench::Metric metric;
  std::string_view description;
  //! nullopt: run it; otherwise the reason it is WAIVED.
  std::function<std::optional<std::string>(SuiteRun&, const GpuTarget*)> filter;
  std::function<core::Result<std::vector<double>>(SuiteRun&, const GpuTarget*)> run;
  double percentile = 50;  // how the samples reduce to the reported figure (50: median)

  std::string_view key() const { return core::bench::metric_key(metric); }
  //! "compute", "memory", "host_link", "storage", "network".
  std::string_view group() const;
  bool per_gpu() const { return core::bench::is_gpu_metric(metric); }
};

//! Every case, in the order the suite runs them.
const std::vector<BenchCase>& registry();

//! True when this build has the CUDA benchmarks.
bool compiled_with_cuda();

//! Progress lines for people ("gpu0 compute.fp16_tensor ... 289.4 TFLOP/s").
using Progress = std::function<void(const std::string&)>;

//! State shared by the cases of one run (storage and latency results are measured once, used by several cases).
class SuiteRun {
 public:
  explicit SuiteRun(SuiteOptions options) : options_(std::move(options)) {}
  const SuiteOptions& options() const { return options_; }
  bool selected(const BenchCase& c) const;
  core::Result<StorageFigures>& storage();
  core::Result<std::vector<double>>& latency();

 private:
  SuiteOptions options_;
  std::optional<core::Result<StorageFigures>> storage_;
  std::optional<core::Result<std::vector<double>>> latency_;
};

//! Runs the selected cases on every GPU and on the machine.
core::bench::RunReport run_suite(const std::vector<GpuTarget>& gpus, const SuiteOptions& options,
                                 const Progress& progress = {});

//! The table for people: metric, measured, reference for this model, ratio; then score and verdict per GPU.
std::string format_table(const core::bench::RunReport& report, const std::vector<GpuTarget>& gpus,
                         const core::bench::Policy& policy = {});
//! The report plus the same evaluation, for --json.
nlohmann::json summary_json(const core::bench::RunReport& report, const std::vector<GpuTarget>& gpus,
                            const core::bench::Policy& policy = {});

}  // namespace gpunex::agent::bench
