#pragma once
// Benchmark judgement, pure: what a healthy GPU of a model should reach
// (spec peak × an efficiency per metric), the performance score and quality
// ratio of DESIGN §4, the delisting rules, the machine checks, and a
// recommendation for every failure. No I/O; every constant is configuration.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/gpu_catalog.hpp"

namespace gpunex::core::bench {

//! Every figure the suite measures. The key (see metric_key) is what crosses the wire.
enum class Metric {
  fp32,           // compute.fp32: FMA throughput, TFLOP/s
  fp16,           // compute.fp16: half2 FMA throughput, TFLOP/s
  fp16_tensor,    // compute.fp16_tensor: cuBLAS GEMM, FP32 accumulate, TFLOP/s
  bf16_tensor,    // compute.bf16_tensor
  fp8_tensor,     // compute.fp8_tensor (compute capability >= 8.9)
  mem_read,       // memory.read, GB/s
  mem_write,      // memory.write, GB/s
  mem_copy,       // memory.copy, GB/s (bytes read + written)
  h2d,            // host_link.h2d, GB/s, pinned
  d2h,            // host_link.d2h, GB/s, pinned
  storage_seq_write,   // storage.seq_write, MB/s
  storage_seq_read,    // storage.seq_read, MB/s
  storage_rand_read,   // storage.rand_read_4k, IOPS
  net_latency_p50,     // network.latency_p50, ms
  net_latency_p99,     // network.latency_p99, ms
  net_down,            // network.download, Mbit/s
  net_up,              // network.upload, Mbit/s
};

//! All metrics, in table order.
const std::vector<Metric>& all_metrics();
//! "compute.fp16_tensor".
std::string_view metric_key(Metric m);
//! "TFLOP/s", "GB/s", "MB/s", "IOPS", "ms", "Mbit/s".
std::string_view metric_unit(Metric m);
//! "FP16 tensor throughput": what a provider reads in a notification.
std::string_view metric_label(Metric m);
std::optional<Metric> parse_metric(std::string_view key);
//! True for the figures measured per GPU (compute, memory, host link).
bool is_gpu_metric(Metric m);

//! A catalog model's spec peaks (reference/gpu-specs.tsv). Zero or nullopt: not known.
struct ModelSpec {
  std::string id;                  // "H100-SXM"
  double vram_gib = 0;             // as marketed: gigabytes of 10^9 bytes (the catalog's vram_gib)
  double mem_bw_gbs = 0;
  double fp32_tflops = 0;
  double fp16_tflops = 0;          // non-tensor
  double fp16_tensor_tflops = 0;   // dense, FP32 accumulate
  double bf16_tensor_tflops = 0;
  std::optional<double> fp8_tensor_tflops;
  unsigned pcie_gen = 0;
  unsigned pcie_width = 16;
};

//! A catalog model's figures as the benchmark rules read them (pcie x16 assumed).
ModelSpec model_spec(const GpuModel& m);

//! The H100 SXM 80GB row of reference/gpu-specs.tsv: the performance score's yardstick.
ModelSpec h100_sxm_spec();

//! Share of the spec peak a healthy card reaches (reference/benchmark-methods.md).
struct Efficiency {
  double tensor = 0.80;     // cuBLAS GEMM against the dense tensor peak
  double fma = 0.90;        // FMA kernels against the FP32 / FP16 peak
  double memory = 0.88;     // STREAM-style kernels against the memory bandwidth
  double host_link = 0.80;  // pinned copies against the PCIe link's theory
};

//! Theoretical one-direction bandwidth of a PCIe link in GB/s (gen 4 x16: 31.5); 0 when unknown.
double pcie_theory_gbs(unsigned gen, unsigned width);

//! The spec peak of a GPU metric for a model; nullopt where the model lacks it (FP8 on A100).
std::optional<double> spec_peak(const ModelSpec& spec, Metric m);
//! spec peak × efficiency: what a healthy card of the model reaches.
std::optional<double> expected_figure(const ModelSpec& spec, Metric m, const Efficiency& eff);

//! Measured figures by metric (medians).
using Figures = std::map<Metric, double>;

//! Thresholds and yardsticks; every one is operator configuration.
struct Policy {
  Efficiency efficiency;
  ModelSpec score_reference = h100_sxm_spec();
  double min_quality_ratio = 0.85;
  double max_vram_shortfall = 0.05;     // VRAM short of the model by more than this share delists
  double min_host_link_ratio = 0.75;    // host link against its expected figure
  double absurd_factor = 3.0;           // a submitted figure above spec peak × this is refused
  // Machine checks.
  double net_down_min_mbps_floor = 100;
  double net_down_min_mbps_cap = 500;
  double net_down_mbps_per_vram_gib = 2.6;
  double net_up_share_of_down = 0.5;
  double storage_seq_read_min_mbs = 500;
  double host_ram_per_vram = 1.0;       // host RAM >= this × total VRAM
  double cpu_cores_per_gpu = 2.0;
};

//! The memory figure the score uses: memory.copy, or memory.read when copy is missing.
std::optional<double> score_memory_figure(const Figures& f);

//! 100 × geometric mean of FP16 tensor, FP32 and memory bandwidth against the reference's
//! expected figures; nullopt unless all three were measured.
std::optional<double> performance_score(const Figures& measured, const Policy& policy);
//! The same mean against the GPU's own model's expected figures (1.0 = a healthy card).
std::optional<double> quality_ratio(const Figures& measured, const ModelSpec& model, const Policy& policy);

//! What the GPU did during the run (NVML samples folded together).
struct RunTelemetry {
  std::uint64_t clock_event_bits = 0;          // union of every sample's clocks-event reasons
  std::optional<double> max_temperature_c;
  std::optional<double> power_limit_w;         // enforced limit
  std::optional<double> tdp_w;                 // the model's TDP
  std::uint64_t ecc_uncorrected = 0;
  std::optional<double> memory_total_gib;      // as the GPU reports it
  unsigned pcie_gen_current = 0, pcie_width_current = 0;
  unsigned pcie_gen_max = 0, pcie_width_max = 0;
};

//! Why a GPU or machine fails, for the provider: metric, measured vs expected, what to do.
struct Finding {
  std::string metric;          // a metric key, or "vram", "ecc", "host.ram", "host.cpu_cores"
  std::string label;           // "FP16 tensor throughput"
  double measured = 0;
  double expected = 0;
  std::string unit;
  std::string cause;           // "thermal_throttling", "power_capping", "pcie_link", "ecc", ...
  std::string recommendation;  // one sentence
  double ratio() const { return expected > 0 ? measured / expected : 0; }
  //! "FP16 tensor throughput 254.1 TFLOP/s, expected 289.6 (ratio 0.70): <recommendation>".
  std::string describe() const;
};

struct GpuVerdict {
  std::optional<double> perf_score;
  std::optional<double> quality_ratio;
  std::vector<Finding> failures;  // empty: listed
  bool pass() const { return failures.empty(); }
};

//! Judges one GPU's run against its model. A missing score metric is itself a failure.
GpuVerdict evaluate_gpu(const ModelSpec& model, const Figures& measured, const RunTelemetry& telemetry,
                        const Policy& policy);

//! The host facts and the machine-wide figures of a run.
struct MachineFacts {
  unsigned gpu_count = 0;
  double total_vram_gib = 0;
  double host_ram_gib = 0;
  unsigned cpu_cores = 0;
  std::optional<double> net_down_mbps;
  std::optional<double> net_up_mbps;
  std::optional<double> storage_seq_read_mbs;
};

//! max(floor, min(cap, per_gib × total VRAM)) Mbit/s.
double required_download_mbps(double total_vram_gib, const Policy& policy);

//! Machine checks (network, storage, host RAM, CPU cores); a failure delists every GPU of the machine.
std::vector<Finding> evaluate_machine(const MachineFacts& facts, const Policy& policy);

//! Names a clocks-event bitmask's problem bits ("hw_thermal_slowdown, sw_power_cap").
std::string clock_event_summary(std::uint64_t bits);

}  // namespace gpunex::core::bench
