#include "agent/bench/suite.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <sstream>
#include <thread>

#include "core/clock_events.hpp"
#include "util/clock.hpp"

#ifdef GPUNEX_HAVE_CUDA
#include "gpu/cuda/cuda_bench.hpp"
#endif

namespace gpunex::agent::bench {

namespace {

using core::Error;
using core::ErrorCode;
using core::Result;
using core::bench::Metric;

std::optional<double> cc_value(const GpuTarget& g) {
  if (!g.compute_capability) return std::nullopt;
  try {
    return std::stod(*g.compute_capability);
  } catch (...) {
    return std::nullopt;
  }
}

// ---- filters ----

std::optional<std::string> gpu_filter(SuiteRun&, const GpuTarget* g, Metric m) {
  if (g->simulated) {
    if (!g->model) return "simulated GPU without a catalog model: no reference figures to simulate";
    if (!core::bench::spec_peak(*g->model, m)) {
      return g->model->id + " has no " + std::string(core::bench::metric_label(m)) + " in its spec";
    }
    return std::nullopt;
  }
  if (!compiled_with_cuda()) return "compiled without CUDA: this agent cannot benchmark a real GPU";
  if (g->cuda_ordinal < 0) return "no CUDA device matches this GPU";
  return std::nullopt;
}

std::optional<std::string> fp8_filter(SuiteRun& run, const GpuTarget* g) {
  if (auto cc = cc_value(*g); cc && *cc < 8.9 - 1e-9) {
    return "FP8 tensor cores need compute capability 8.9 or above (this GPU: " + *g->compute_capability + ")";
  }
  return gpu_filter(run, g, Metric::fp8_tensor);
}

std::optional<std::string> network_filter(SuiteRun& run, const GpuTarget*) {
  if (run.options().network.server_url.empty()) return "no server URL given (--server): nothing to measure against";
  return std::nullopt;
}

std::optional<std::string> no_filter(SuiteRun&, const GpuTarget*) { return std::nullopt; }

// ---- simulated GPU figures ----

Result<std::vector<double>> simulated(const SuiteRun& run, const GpuTarget& g, Metric m) {
  auto expected = core::bench::expected_figure(*g.model, m, core::bench::Efficiency{});
  if (!expected) return Error::make(ErrorCode::unprocessable, "no reference figure");
  // The performance factor is about the GPU (compute and memory); the host link is about the slot.
  const auto key = core::bench::metric_key(m);
  double factor = key.starts_with("host_link.") ? 1.0 : g.sim_perf_factor;
  if (key.starts_with("compute.")) factor *= g.sim_compute_derate;
  // Deterministic ±0.6% spread around the figure, symmetric so the median is the figure itself.
  static constexpr double spread[] = {0.0, -0.004, 0.004, -0.006, 0.006, -0.002, 0.002};
  std::vector<double> out;
  const unsigned n = std::clamp(run.options().sim_samples, 1u, 7u);
  for (unsigned i = 0; i < n; ++i) out.push_back(*expected * factor * (1.0 + spread[i]));
  return out;
}

// ---- real GPU figures ----

#ifdef GPUNEX_HAVE_CUDA
int gemm_size_for(const SuiteRun& run, const GpuTarget& g) {
  if (run.options().gemm_size > 0) return run.options().gemm_size;
  return gpu::cuda::gemm_size_for_memory(g.memory_total_gib.value_or(0));
}

Result<std::vector<double>> real(const SuiteRun& run, const GpuTarget& g, Metric m) {
  namespace cu = gpunex::gpu::cuda;
  const cu::Timing fma = cu::kFmaTiming, gemm = cu::kGemmTiming, mem = cu::kMemoryTiming, link = cu::kHostLinkTiming;
  const int d = g.cuda_ordinal;
  const int s = gemm_size_for(run, g);
  switch (m) {
    case Metric::fp32: return cu::fma_fp32(d, fma);
    case Metric::fp16: return cu::fma_fp16(d, fma);
    case Metric::fp16_tensor: return cu::gemm_lt(d, cu::GemmType::fp16, s, s, s, gemm);
    case Metric::bf16_tensor: return cu::gemm_lt(d, cu::GemmType::bf16, s, s, s, gemm);
    case Metric::fp8_tensor: return cu::gemm_lt(d, cu::GemmType::fp8_e4m3, s, s, s, gemm);
    case Metric::mem_read: return cu::memory_bandwidth(d, cu::MemOp::read, run.options().memory_bytes, mem);
    case Metric::mem_write: return cu::memory_bandwidth(d, cu::MemOp::write, run.options().memory_bytes, mem);
    case Metric::mem_copy: return cu::memory_bandwidth(d, cu::MemOp::copy, run.options().memory_bytes, mem);
    case Metric::h2d:
      return cu::host_link(d, cu::Direction::host_to_device, run.options().host_link_bytes, link);
    case Metric::d2h:
      return cu::host_link(d, cu::Direction::device_to_host, run.options().host_link_bytes, link);
    default: return Error::make(ErrorCode::internal, "not a GPU metric");
  }
}
#endif

Result<std::vector<double>> gpu_run(SuiteRun& run, const GpuTarget* g, Metric m) {
  if (g->simulated) return simulated(run, *g, m);
#ifdef GPUNEX_HAVE_CUDA
  return real(run, *g, m);
#else
  return Error::make(ErrorCode::unavailable, "compiled without CUDA");
#endif
}

BenchCase gpu_case(Metric m, std::string_view description) {
  return BenchCase{m, description, [m](SuiteRun& r, const GpuTarget* g) { return gpu_filter(r, g, m); },
                   [m](SuiteRun& r, const GpuTarget* g) { return gpu_run(r, g, m); }};
}

// ---- machine cases ----

template <class Pick>
Result<std::vector<double>> from_storage(SuiteRun& run, Pick pick) {
  auto& s = run.storage();
  if (!s) return s.error();
  return pick(*s);
}

//! Samples a GPU's telemetry on a thread while `work` runs: one sample at once, then every interval, then one at the end.
class TelemetrySampler {
 public:
  TelemetrySampler(const GpuTarget& g, std::string key, std::chrono::milliseconds interval,
                   std::vector<core::bench::TelemetryPoint>& out)
      : g_(g), key_(std::move(key)), out_(out) {
    if (!g_.sample) return;
    thread_ = std::thread([this, interval] {
      std::unique_lock lock(mu_);
      while (true) {
        lock.unlock();
        take();
        lock.lock();
        if (cv_.wait_for(lock, interval, [this] { return stop_; })) break;
      }
    });
  }
  ~TelemetrySampler() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
    take();
  }
  TelemetrySampler(const TelemetrySampler&) = delete;
  TelemetrySampler& operator=(const TelemetrySampler&) = delete;

 private:
  void take() {
    auto p = g_.sample();
    if (!p) return;
    p->during = key_;
    std::lock_guard lock(out_mu_);
    out_.push_back(std::move(*p));
  }
  const GpuTarget& g_;
  std::string key_;
  std::vector<core::bench::TelemetryPoint>& out_;
  std::mutex mu_, out_mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

std::string fmt(double v) {
  char buf[64];
  if (std::fabs(v) >= 1000) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else if (std::fabs(v) >= 10) {
    std::snprintf(buf, sizeof buf, "%.1f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.3f", v);
  }
  return buf;
}

}  // namespace

std::string_view BenchCase::group() const {
  auto k = key();
  return k.substr(0, k.find('.'));
}

bool compiled_with_cuda() {
#ifdef GPUNEX_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

const std::vector<BenchCase>& registry() {
  static const std::vector<BenchCase> cases = [] {
    std::vector<BenchCase> v;
    v.push_back(gpu_case(Metric::fp32, "FP32 FMA throughput (register-resident FMA chains)"));
    v.push_back(gpu_case(Metric::fp16, "FP16 FMA throughput (half2 FMA chains)"));
    v.push_back(gpu_case(Metric::fp16_tensor, "FP16 tensor-core GEMM, FP32 accumulate (cuBLASLt)"));
    v.push_back(gpu_case(Metric::bf16_tensor, "BF16 tensor-core GEMM, FP32 accumulate (cuBLASLt)"));
    BenchCase fp8 = gpu_case(Metric::fp8_tensor, "FP8 e4m3 tensor-core GEMM, FP32 accumulate (cuBLASLt)");
    fp8.filter = fp8_filter;
    v.push_back(std::move(fp8));
    v.push_back(gpu_case(Metric::mem_read, "GPU memory read bandwidth (1 GiB buffer)"));
    v.push_back(gpu_case(Metric::mem_write, "GPU memory write bandwidth (1 GiB buffer)"));
    v.push_back(gpu_case(Metric::mem_copy, "GPU memory copy bandwidth, bytes read + written"));
    v.push_back(gpu_case(Metric::h2d, "host-to-device copy bandwidth, pinned memory"));
    v.push_back(gpu_case(Metric::d2h, "device-to-host copy bandwidth, pinned memory"));
    v.push_back(BenchCase{Metric::storage_seq_write, "sequential write, 1 MiB blocks, O_DIRECT", no_filter,
                          [](SuiteRun& r, const GpuTarget*) {
                            return from_storage(r, [](const StorageFigures& f) { return f.seq_write_mbs; });
                          }});
    v.push_back(BenchCase{Metric::storage_seq_read, "sequential read, 1 MiB blocks, O_DIRECT", no_filter,
                          [](SuiteRun& r, const GpuTarget*) {
                            return from_storage(r, [](const StorageFigures& f) { return f.seq_read_mbs; });
                          }});
    v.push_back(BenchCase{Metric::storage_rand_read, "random 4 KiB reads, several threads, O_DIRECT", no_filter,
                          [](SuiteRun& r, const GpuTarget*) {
                            return from_storage(r, [](const StorageFigures& f) { return f.rand_read_iops; });
                          }});
    auto latency = [](SuiteRun& r, const GpuTarget*) -> Result<std::vector<double>> { return r.latency(); };
    v.push_back(BenchCase{Metric::net_latency_p50, "round trip to the server, median", network_filter, latency, 50});
    v.push_back(BenchCase{Metric::net_latency_p99, "round trip to the server, 99th percentile", network_filter,
                          latency, 99});
    v.push_back(BenchCase{Metric::net_down, "download throughput from the server", network_filter,
                          [](SuiteRun& r, const GpuTarget*) { return measure_download(r.options().network); }});
    v.push_back(BenchCase{Metric::net_up, "upload throughput to the server", network_filter,
                          [](SuiteRun& r, const GpuTarget*) { return measure_upload(r.options().network); }});
    return v;
  }();
  return cases;
}

bool SuiteRun::selected(const BenchCase& c) const {
  if (options_.only.empty()) return true;
  for (const auto& o : options_.only) {
    if (o == c.group() || o == c.key()) return true;
    if (o == "memory" && c.group() == "host_link") return true;  // host link is GPU memory traffic too
  }
  return false;
}

core::Result<StorageFigures>& SuiteRun::storage() {
  if (!storage_) {
    unsigned which = 0;
    for (const auto& c : registry()) {
      if (!selected(c)) continue;
      if (c.metric == Metric::storage_seq_write) which |= 1;
      if (c.metric == Metric::storage_seq_read) which |= 2;
      if (c.metric == Metric::storage_rand_read) which |= 4;
    }
    storage_ = run_storage(options_.storage, which);
  }
  return *storage_;
}

core::Result<std::vector<double>>& SuiteRun::latency() {
  if (!latency_) latency_ = measure_latency(options_.network);
  return *latency_;
}

core::bench::RunReport run_suite(const std::vector<GpuTarget>& gpus, const SuiteOptions& options,
                                 const Progress& progress) {
  SuiteRun run(options);
  core::bench::RunReport report;
  report.started_at_ms = util::system_now_ms();
  report.simulated = std::any_of(gpus.begin(), gpus.end(), [](const GpuTarget& g) { return g.simulated; });

  auto one = [&](const BenchCase& c, const GpuTarget* g, std::vector<core::bench::TelemetryPoint>* tel) {
    core::bench::CaseResult r;
    r.metric = c.metric;
    const std::string who = g ? "gpu" + std::to_string(g->index) + " " : "";
    if (options.cancel && options.cancel->load()) {
      r.status = core::bench::CaseStatus::failed;
      r.reason = "cancelled: the agent is stopping";
      return r;
    }
    if (auto why = c.filter(run, g)) {
      r.status = core::bench::CaseStatus::waived;
      r.reason = *why;
      if (progress) progress(who + std::string(c.key()) + ": WAIVED (" + *why + ")");
      return r;
    }
    Result<std::vector<double>> samples = Error::make(ErrorCode::internal, "not run");
    {
      std::optional<TelemetrySampler> sampler;
      if (g && tel) sampler.emplace(*g, std::string(c.key()), options.telemetry_interval, *tel);
      samples = c.run(run, g);
    }
    if (!samples || samples->empty()) {
      r.status = core::bench::CaseStatus::failed;
      r.reason = samples ? "no samples" : samples.error().message;
      if (progress) progress(who + std::string(c.key()) + ": FAILED (" + r.reason + ")");
      return r;
    }
    r.samples = *samples;
    r.median = c.percentile == 50 ? core::bench::median(r.samples) : core::bench::percentile(r.samples, c.percentile);
    if (progress) {
      progress(who + std::string(c.key()) + ": " + fmt(r.median) + " " +
               std::string(core::bench::metric_unit(c.metric)));
    }
    return r;
  };

  for (const auto& g : gpus) {
    core::bench::GpuRun gr;
    gr.index = g.index;
    gr.uuid = g.uuid;
    gr.name = g.name;
    gr.memory_total_gib = g.memory_total_gib;
    gr.ecc_uncorrected = g.ecc_uncorrected;
    for (const auto& c : registry()) {
      if (!c.per_gpu() || !run.selected(c)) continue;
      gr.results.push_back(one(c, &g, &gr.telemetry));
    }
    report.gpus.push_back(std::move(gr));
  }
  for (const auto& c : registry()) {
    if (c.per_gpu() || !run.selected(c)) continue;
    report.machine.push_back(one(c, nullptr, nullptr));
  }
  report.finished_at_ms = std::max(util::system_now_ms(), report.started_at_ms);
  return report;
}

namespace {

struct Row {
  std::string metric, measured, reference, ratio;
};

std::optional<double> machine_reference(Metric m, double total_vram_gib, const core::bench::Policy& p) {
  switch (m) {
    case Metric::storage_seq_read: return p.storage_seq_read_min_mbs;
    case Metric::net_down: return core::bench::required_download_mbps(total_vram_gib, p);
    case Metric::net_up: return core::bench::required_download_mbps(total_vram_gib, p) * p.net_up_share_of_down;
    default: return std::nullopt;
  }
}

Row row_for(const core::bench::CaseResult& c, std::optional<double> ref, std::string_view ref_prefix) {
  Row r;
  r.metric = std::string(core::bench::metric_key(c.metric));
  const std::string unit(core::bench::metric_unit(c.metric));
  if (c.status != core::bench::CaseStatus::ok) {
    r.measured = c.status == core::bench::CaseStatus::waived ? "WAIVED" : "FAILED";
    r.reference = c.reason;
    return r;
  }
  r.measured = fmt(c.median) + " " + unit;
  if (ref) {
    r.reference = std::string(ref_prefix) + fmt(*ref) + " " + unit;
    r.ratio = fmt(c.median / *ref);
  }
  return r;
}

double total_vram(const std::vector<GpuTarget>& gpus) {
  double t = 0;
  for (const auto& g : gpus) t += g.memory_total_gib.value_or(g.model ? g.model->vram_gib : 0);
  return t;
}

}  // namespace

std::string format_table(const core::bench::RunReport& report, const std::vector<GpuTarget>& gpus,
                         const core::bench::Policy& policy) {
  std::vector<std::pair<std::string, std::vector<Row>>> sections;
  std::vector<std::string> verdicts;
  for (std::size_t i = 0; i < report.gpus.size(); ++i) {
    const auto& gr = report.gpus[i];
    const GpuTarget* g = i < gpus.size() ? &gpus[i] : nullptr;
    std::string title = "gpu" + std::to_string(gr.index) + ": " + gr.name;
    if (g && g->model) title += " (" + g->model->id + ")";
    if (report.simulated && g && g->simulated) title += " [SIMULATED]";
    std::vector<Row> rows;
    for (const auto& c : gr.results) {
      std::optional<double> ref;
      if (g && g->model) ref = core::bench::expected_figure(*g->model, c.metric, policy.efficiency);
      rows.push_back(row_for(c, ref, ""));
    }
    sections.emplace_back(title, std::move(rows));
    if (g && g->model) {
      auto v = core::bench::evaluate_gpu(*g->model, core::bench::figures_of(gr.results),
                                         core::bench::fold_telemetry(gr), policy);
      std::string line = "gpu" + std::to_string(gr.index) + ": ";
      line += v.perf_score ? "performance score " + fmt(*v.perf_score) : "performance score n/a";
      line += v.quality_ratio ? ", quality ratio " + fmt(*v.quality_ratio) : "";
      line += v.pass() ? ": PASS" : ": FAIL";
      for (const auto& f : v.failures) line += "\n  - " + f.describe();
      const auto tel = core::bench::fold_telemetry(gr);
      constexpr std::uint64_t kSettings = core::clock_event::gpu_idle | core::clock_event::applications_clocks_setting;
      if ((tel.clock_event_bits & ~kSettings) != 0) {
        line += "\n  clock events during the run: " + core::bench::clock_event_summary(tel.clock_event_bits);
      }
      verdicts.push_back(line);
    }
  }
  if (!report.machine.empty()) {
    std::vector<Row> rows;
    const double vram = total_vram(gpus);
    for (const auto& c : report.machine) rows.push_back(row_for(c, machine_reference(c.metric, vram, policy), ">= "));
    sections.emplace_back("machine", std::move(rows));
  }

  std::size_t w[3] = {6, 8, 9};
  for (const auto& [t, rows] : sections) {
    for (const auto& r : rows) {
      w[0] = std::max(w[0], r.metric.size());
      w[1] = std::max(w[1], r.measured.size());
      if (!r.ratio.empty()) w[2] = std::max(w[2], r.reference.size());
    }
  }
  std::ostringstream out;
  auto line = [&](const std::string& a, const std::string& b, const std::string& c, const std::string& d) {
    out << "  " << a << std::string(w[0] - std::min(w[0], a.size()) + 2, ' ') << b
        << std::string(w[1] - std::min(w[1], b.size()) + 2, ' ') << c;
    if (!d.empty()) out << std::string(w[2] - std::min(w[2], c.size()) + 2, ' ') << d;
    out << "\n";
  };
  if (report.simulated) out << "SIMULATED GPUs: compute and memory figures are the catalog reference x the perf factor\n";
  for (const auto& [title, rows] : sections) {
    out << title << "\n";
    line("metric", "measured", "reference", "ratio");
    for (const auto& r : rows) line(r.metric, r.measured, r.reference, r.ratio);
  }
  for (const auto& v : verdicts) out << v << "\n";
  return out.str();
}

nlohmann::json summary_json(const core::bench::RunReport& report, const std::vector<GpuTarget>& gpus,
                            const core::bench::Policy& policy) {
  nlohmann::json evals = nlohmann::json::array();
  for (std::size_t i = 0; i < report.gpus.size() && i < gpus.size(); ++i) {
    const auto& g = gpus[i];
    if (!g.model) continue;
    const auto& gr = report.gpus[i];
    auto v = core::bench::evaluate_gpu(*g.model, core::bench::figures_of(gr.results), core::bench::fold_telemetry(gr),
                                       policy);
    nlohmann::json refs = nlohmann::json::object();
    for (const auto& c : gr.results) {
      if (auto e = core::bench::expected_figure(*g.model, c.metric, policy.efficiency)) {
        refs[std::string(core::bench::metric_key(c.metric))] = *e;
      }
    }
    nlohmann::json failures = nlohmann::json::array();
    for (const auto& f : v.failures) {
      failures.push_back({{"metric", f.metric}, {"label", f.label}, {"measured", f.measured},
                          {"expected", f.expected}, {"unit", f.unit}, {"ratio", f.ratio()}, {"cause", f.cause},
                          {"recommendation", f.recommendation}});
    }
    evals.push_back({{"index", gr.index},
                     {"model", g.model->id},
                     {"expected", std::move(refs)},
                     {"perf_score", v.perf_score ? nlohmann::json(*v.perf_score) : nlohmann::json(nullptr)},
                     {"quality_ratio", v.quality_ratio ? nlohmann::json(*v.quality_ratio) : nlohmann::json(nullptr)},
                     {"pass", v.pass()},
                     {"failures", std::move(failures)}});
  }
  return {{"report", core::bench::to_json(report)}, {"evaluation", std::move(evals)},
          {"compiled_with_cuda", compiled_with_cuda()}};
}

}  // namespace gpunex::agent::bench
