#include "core/benchmark.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace gpunex::core::bench {

namespace {

struct MetricInfo {
  Metric metric;
  std::string_view key;
  std::string_view unit;
  std::string_view label;
};

constexpr MetricInfo kMetrics[] = {
    {Metric::fp32, "compute.fp32", "TFLOP/s", "FP32 throughput"},
    {Metric::fp16, "compute.fp16", "TFLOP/s", "FP16 throughput"},
    {Metric::fp16_tensor, "compute.fp16_tensor", "TFLOP/s", "FP16 tensor throughput"},
    {Metric::bf16_tensor, "compute.bf16_tensor", "TFLOP/s", "BF16 tensor throughput"},
    {Metric::fp8_tensor, "compute.fp8_tensor", "TFLOP/s", "FP8 tensor throughput"},
    {Metric::mem_read, "memory.read", "GB/s", "GPU memory read bandwidth"},
    {Metric::mem_write, "memory.write", "GB/s", "GPU memory write bandwidth"},
    {Metric::mem_copy, "memory.copy", "GB/s", "GPU memory copy bandwidth"},
    {Metric::h2d, "host_link.h2d", "GB/s", "host-to-device bandwidth"},
    {Metric::d2h, "host_link.d2h", "GB/s", "device-to-host bandwidth"},
    {Metric::storage_seq_write, "storage.seq_write", "MB/s", "storage sequential write"},
    {Metric::storage_seq_read, "storage.seq_read", "MB/s", "storage sequential read"},
    {Metric::storage_rand_read, "storage.rand_read_4k", "IOPS", "storage random 4 KiB read"},
    {Metric::net_latency_p50, "network.latency_p50", "ms", "network latency p50"},
    {Metric::net_latency_p99, "network.latency_p99", "ms", "network latency p99"},
    {Metric::net_down, "network.download", "Mbit/s", "network download"},
    {Metric::net_up, "network.upload", "Mbit/s", "network upload"},
};

const MetricInfo& info(Metric m) {
  for (const auto& i : kMetrics) {
    if (i.metric == m) return i;
  }
  return kMetrics[0];  // unreachable: every enumerator is in the table
}

std::string fmt(double v) {
  char buf[64];
  if (std::fabs(v) >= 100) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else if (std::fabs(v) >= 10) {
    std::snprintf(buf, sizeof buf, "%.1f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f", v);
  }
  return buf;
}

std::optional<double> get(const Figures& f, Metric m) {
  auto it = f.find(m);
  if (it == f.end()) return std::nullopt;
  return it->second;
}

constexpr std::uint64_t kThermalBits = 0x8 | 0x20 | 0x40;  // HW slowdown, SW and HW thermal
constexpr std::uint64_t kPowerBits = 0x4 | 0x80;           // SW power cap, HW power brake

//! Why a GPU underperforms, from what NVML said during the run.
void attach_cause(Finding& f, const RunTelemetry& t) {
  if ((t.clock_event_bits & kThermalBits) != 0) {
    f.cause = "thermal_throttling";
    std::string temp = t.max_temperature_c ? " at " + fmt(*t.max_temperature_c) + " °C" : "";
    f.recommendation = "The GPU throttled its clocks for heat (" + clock_event_summary(t.clock_event_bits) + temp +
                       "): improve cooling — clean the heatsink and fans, check airflow and the room temperature, "
                       "and keep the GPU below about 83 °C under load.";
    return;
  }
  if ((t.clock_event_bits & kPowerBits) != 0) {
    f.cause = "power_capping";
    std::string limit;
    if (t.power_limit_w && t.tdp_w) {
      limit = " (limit " + fmt(*t.power_limit_w) + " W, model TDP " + fmt(*t.tdp_w) + " W)";
    }
    f.recommendation = "The GPU was held down by its power limit" + limit +
                       ": raise the power limit to the model's TDP (nvidia-smi -pl), and check that the power "
                       "supply and cables deliver the rated power.";
    return;
  }
  f.cause = "underperforming";
  f.recommendation =
      "No throttling was seen: check that no other process uses the GPU, that clocks are not locked low "
      "(nvidia-smi -rgc), and that the driver is current; if it persists, the card may need service.";
}

}  // namespace

const std::vector<Metric>& all_metrics() {
  static const std::vector<Metric> all = [] {
    std::vector<Metric> v;
    for (const auto& i : kMetrics) v.push_back(i.metric);
    return v;
  }();
  return all;
}

std::string_view metric_key(Metric m) { return info(m).key; }
std::string_view metric_unit(Metric m) { return info(m).unit; }
std::string_view metric_label(Metric m) { return info(m).label; }

std::optional<Metric> parse_metric(std::string_view key) {
  for (const auto& i : kMetrics) {
    if (i.key == key) return i.metric;
  }
  return std::nullopt;
}

bool is_gpu_metric(Metric m) {
  auto k = metric_key(m);
  return k.starts_with("compute.") || k.starts_with("memory.") || k.starts_with("host_link.");
}

ModelSpec model_spec(const GpuModel& m) {
  ModelSpec s;
  s.id = m.id;
  s.vram_gib = m.vram_gib;
  s.mem_bw_gbs = m.mem_bw_gbs.value_or(0);
  s.fp32_tflops = m.fp32_tflops.value_or(0);
  s.fp16_tflops = m.fp16_tflops.value_or(0);
  s.fp16_tensor_tflops = m.fp16_tensor_tflops.value_or(0);
  s.bf16_tensor_tflops = m.bf16_tensor_tflops.value_or(0);
  s.fp8_tensor_tflops = m.fp8_tensor_tflops;
  s.pcie_gen = m.pcie_gen ? static_cast<unsigned>(*m.pcie_gen) : 0;
  return s;
}

ModelSpec h100_sxm_spec() {
  ModelSpec s;
  s.id = "H100-SXM";
  s.vram_gib = 80;
  s.mem_bw_gbs = 3350;
  s.fp32_tflops = 67;
  s.fp16_tflops = 133.8;
  s.fp16_tensor_tflops = 989.5;
  s.bf16_tensor_tflops = 989.5;
  s.fp8_tensor_tflops = 1979;
  s.pcie_gen = 5;
  return s;
}

double pcie_theory_gbs(unsigned gen, unsigned width) {
  // Per lane, after line coding: 8b/10b up to gen 2, 128b/130b from gen 3.
  static constexpr double per_lane[] = {0, 0.25, 0.5, 0.985, 1.969, 3.938, 7.877};
  if (gen == 0 || gen >= std::size(per_lane) || width == 0) return 0;
  return per_lane[gen] * width;
}

std::optional<double> spec_peak(const ModelSpec& s, Metric m) {
  auto positive = [](double v) -> std::optional<double> {
    if (v > 0) return v;
    return std::nullopt;
  };
  switch (m) {
    case Metric::fp32: return positive(s.fp32_tflops);
    case Metric::fp16: return positive(s.fp16_tflops);
    case Metric::fp16_tensor: return positive(s.fp16_tensor_tflops);
    case Metric::bf16_tensor: return positive(s.bf16_tensor_tflops);
    case Metric::fp8_tensor: return s.fp8_tensor_tflops ? positive(*s.fp8_tensor_tflops) : std::nullopt;
    case Metric::mem_read:
    case Metric::mem_write:
    case Metric::mem_copy: return positive(s.mem_bw_gbs);
    case Metric::h2d:
    case Metric::d2h: return positive(pcie_theory_gbs(s.pcie_gen, s.pcie_width));
    default: return std::nullopt;
  }
}

std::optional<double> expected_figure(const ModelSpec& s, Metric m, const Efficiency& eff) {
  auto peak = spec_peak(s, m);
  if (!peak) return std::nullopt;
  switch (m) {
    case Metric::fp32:
    case Metric::fp16: return *peak * eff.fma;
    case Metric::fp16_tensor:
    case Metric::bf16_tensor:
    case Metric::fp8_tensor: return *peak * eff.tensor;
    case Metric::mem_read:
    case Metric::mem_write:
    case Metric::mem_copy: return *peak * eff.memory;
    case Metric::h2d:
    case Metric::d2h: return *peak * eff.host_link;
    default: return std::nullopt;
  }
}

std::optional<double> score_memory_figure(const Figures& f) {
  if (auto c = get(f, Metric::mem_copy)) return c;
  return get(f, Metric::mem_read);
}

namespace {

//! Geometric mean of measured/expected over FP16 tensor, FP32 and memory.
std::optional<double> mean_against(const Figures& measured, const ModelSpec& yardstick, const Efficiency& eff) {
  const auto tensor = get(measured, Metric::fp16_tensor);
  const auto fp32 = get(measured, Metric::fp32);
  const auto mem = score_memory_figure(measured);
  const auto e_tensor = expected_figure(yardstick, Metric::fp16_tensor, eff);
  const auto e_fp32 = expected_figure(yardstick, Metric::fp32, eff);
  const auto e_mem = expected_figure(yardstick, Metric::mem_copy, eff);
  if (!tensor || !fp32 || !mem || !e_tensor || !e_fp32 || !e_mem) return std::nullopt;
  if (*tensor < 0 || *fp32 < 0 || *mem < 0) return std::nullopt;
  return std::cbrt((*tensor / *e_tensor) * (*fp32 / *e_fp32) * (*mem / *e_mem));
}

}  // namespace

std::optional<double> performance_score(const Figures& measured, const Policy& policy) {
  auto m = mean_against(measured, policy.score_reference, policy.efficiency);
  if (!m) return std::nullopt;
  return 100.0 * *m;
}

std::optional<double> quality_ratio(const Figures& measured, const ModelSpec& model, const Policy& policy) {
  return mean_against(measured, model, policy.efficiency);
}

std::string Finding::describe() const {
  std::string s = label + " " + fmt(measured) + " " + unit + ", expected " + fmt(expected);
  if (expected > 0) s += " (ratio " + fmt(ratio()) + ")";
  if (!recommendation.empty()) s += ": " + recommendation;
  return s;
}

GpuVerdict evaluate_gpu(const ModelSpec& model, const Figures& measured, const RunTelemetry& t,
                        const Policy& policy) {
  GpuVerdict v;
  v.perf_score = performance_score(measured, policy);
  v.quality_ratio = quality_ratio(measured, model, policy);

  if (t.ecc_uncorrected > 0) {
    Finding f{"ecc", "uncorrectable ECC errors", static_cast<double>(t.ecc_uncorrected), 0, "errors", "ecc",
              "The GPU reported uncorrectable memory errors: reseat the card and its power cables; if errors "
              "return, the card needs an RMA."};
    v.failures.push_back(std::move(f));
  }
  // Catalog sizes are marketed gigabytes (10^9 bytes): an L40S "48 GB" reports 46068 MiB = 48.3 GB.
  const std::optional<double> memory_gb =
      t.memory_total_gib ? std::optional<double>(*t.memory_total_gib * 1.073741824) : std::nullopt;
  if (memory_gb && model.vram_gib > 0 && *memory_gb < model.vram_gib * (1.0 - policy.max_vram_shortfall)) {
    v.failures.push_back(Finding{"vram", "GPU memory", *memory_gb, model.vram_gib, "GB", "vram_short",
                                 "The GPU reports less memory than its model has: check that it is the model "
                                 "you listed and that no memory is disabled (row remapping pending a reset); "
                                 "otherwise list it as the model it is."});
  }

  static constexpr Metric kScoreMetrics[] = {Metric::fp16_tensor, Metric::fp32, Metric::mem_copy};
  if (!v.quality_ratio) {
    for (Metric m : kScoreMetrics) {
      const bool have = m == Metric::mem_copy ? score_memory_figure(measured).has_value() : measured.contains(m);
      if (have) continue;
      v.failures.push_back(Finding{std::string(metric_key(m)), std::string(metric_label(m)), 0,
                                   expected_figure(model, m, policy.efficiency).value_or(0),
                                   std::string(metric_unit(m)), "not_measured",
                                   "The benchmark did not produce this figure: check the agent's log for the error."});
    }
  } else if (*v.quality_ratio < policy.min_quality_ratio) {
    for (Metric m : kScoreMetrics) {
      const auto got = m == Metric::mem_copy ? score_memory_figure(measured) : get(measured, m);
      const auto want = expected_figure(model, m, policy.efficiency);
      if (!got || !want || *got / *want >= policy.min_quality_ratio) continue;
      Finding f{std::string(metric_key(m)), std::string(metric_label(m)), *got, *want, std::string(metric_unit(m)),
                "", ""};
      if (m == Metric::mem_copy && !measured.contains(Metric::mem_copy)) {
        f.metric = metric_key(Metric::mem_read);
        f.label = metric_label(Metric::mem_read);
      }
      attach_cause(f, t);
      v.failures.push_back(std::move(f));
    }
  }

  for (Metric m : {Metric::h2d, Metric::d2h}) {
    const auto got = get(measured, m);
    const auto want = expected_figure(model, m, policy.efficiency);
    if (!got || !want || *got / *want >= policy.min_host_link_ratio) continue;
    Finding f{std::string(metric_key(m)), std::string(metric_label(m)), *got, *want, std::string(metric_unit(m)),
              "pcie_link", ""};
    std::string link;
    if (t.pcie_gen_current > 0 && t.pcie_width_current > 0) {
      link = " The link runs at gen " + std::to_string(t.pcie_gen_current) + " x" +
             std::to_string(t.pcie_width_current);
      if (t.pcie_gen_max > 0 && t.pcie_width_max > 0) {
        link += " of gen " + std::to_string(t.pcie_gen_max) + " x" + std::to_string(t.pcie_width_max);
      }
      link += ".";
    }
    f.recommendation = "Low host-device bandwidth: put the GPU in a full x16 slot wired to the CPU, remove or "
                       "replace any riser or extension cable, and check the slot's PCIe generation in the BIOS." +
                       link;
    v.failures.push_back(std::move(f));
  }
  return v;
}

double required_download_mbps(double total_vram_gib, const Policy& p) {
  return std::max(p.net_down_min_mbps_floor, std::min(p.net_down_min_mbps_cap, p.net_down_mbps_per_vram_gib * total_vram_gib));
}

std::vector<Finding> evaluate_machine(const MachineFacts& m, const Policy& p) {
  std::vector<Finding> out;
  const double down_min = required_download_mbps(m.total_vram_gib, p);
  const double up_min = down_min * p.net_up_share_of_down;
  const std::string uplink =
      "Customers load data and images over this link: use a faster uplink (wired, not Wi-Fi), check the "
      "router and the provider plan, and that nothing else saturates it during rentals.";
  if (!m.net_down_mbps || *m.net_down_mbps < down_min) {
    out.push_back(Finding{std::string(metric_key(Metric::net_down)), std::string(metric_label(Metric::net_down)),
                          m.net_down_mbps.value_or(0), down_min, "Mbit/s", "network", uplink});
  }
  if (!m.net_up_mbps || *m.net_up_mbps < up_min) {
    out.push_back(Finding{std::string(metric_key(Metric::net_up)), std::string(metric_label(Metric::net_up)),
                          m.net_up_mbps.value_or(0), up_min, "Mbit/s", "network", uplink});
  }
  if (!m.storage_seq_read_mbs || *m.storage_seq_read_mbs < p.storage_seq_read_min_mbs) {
    out.push_back(Finding{std::string(metric_key(Metric::storage_seq_read)),
                          std::string(metric_label(Metric::storage_seq_read)), m.storage_seq_read_mbs.value_or(0),
                          p.storage_seq_read_min_mbs, "MB/s", "storage",
                          "Datasets and images load from this disk: put the agent's data folder on an NVMe SSD "
                          "(not a hard disk or network share)."});
  }
  const double ram_min = m.total_vram_gib * p.host_ram_per_vram;
  if (m.host_ram_gib < ram_min) {
    out.push_back(Finding{"host.ram", "host memory", m.host_ram_gib, ram_min, "GiB", "host_ram",
                          "Customers' jobs stage data in host memory: install at least as much RAM as the GPUs "
                          "have VRAM in total."});
  }
  const double cores_min = m.gpu_count * p.cpu_cores_per_gpu;
  if (m.cpu_cores < cores_min) {
    out.push_back(Finding{"host.cpu_cores", "CPU cores", static_cast<double>(m.cpu_cores), cores_min, "cores",
                          "host_cpu", "Data loading needs CPU: provide at least 2 CPU cores per GPU."});
  }
  return out;
}

std::string clock_event_summary(std::uint64_t bits) {
  static constexpr std::pair<std::uint64_t, std::string_view> names[] = {
      {0x4, "sw_power_cap"},         {0x8, "hw_slowdown"},         {0x20, "sw_thermal_slowdown"},
      {0x40, "hw_thermal_slowdown"}, {0x80, "hw_power_brake_slowdown"},
  };
  std::string out;
  for (const auto& [bit, name] : names) {
    if ((bits & bit) == 0) continue;
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out.empty() ? "none" : out;
}

}  // namespace gpunex::core::bench
