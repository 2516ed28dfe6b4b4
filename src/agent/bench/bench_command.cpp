#include "agent/bench/bench_command.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <ostream>
#include <thread>

#include <unistd.h>

#include "core/gpu_catalog.hpp"
#include "core/text.hpp"
#include "util/clock.hpp"
#include "util/http_client.hpp"

#ifdef GPUNEX_HAVE_CUDA
#include "gpu/cuda/cuda_bench.hpp"
#endif

namespace gpunex::agent::bench {

namespace {

using core::Error;
using core::ErrorCode;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(core::trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(core::trim(cur));
  out.erase(std::remove(out.begin(), out.end(), std::string()), out.end());
  return out;
}

const core::GpuModel* find_model(const std::string& id) {
  const auto want = core::to_lower_ascii(id);
  for (const auto& m : core::builtin_catalog()) {
    if (core::to_lower_ascii(m.id) == want) return &m;
  }
  return nullptr;
}

double host_ram_gib() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), size = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && size > 0 ? static_cast<double>(pages) * static_cast<double>(size) / (1ull << 30) : 0;
}

}  // namespace

core::Result<std::vector<std::string>> parse_only(const std::string& only) {
  auto names = split(only, ',');
  for (const auto& n : names) {
    const bool known = std::any_of(registry().begin(), registry().end(),
                                   [&](const BenchCase& c) { return c.group() == n || c.key() == n; });
    if (!known) {
      return Error::make(ErrorCode::invalid_field,
                         "--only: unknown benchmark '" + n +
                             "' (groups: compute, memory, host_link, storage, network, or a case key such as "
                             "compute.fp16_tensor)",
                         "only");
    }
  }
  return names;
}

core::Result<std::vector<GpuTarget>> simulated_targets(const std::string& spec) {
  std::vector<GpuTarget> out;
  for (const auto& part : split(spec, ',')) {
    const auto colon = part.rfind(':');
    const std::string id = part.substr(0, colon);
    int count = 1;
    if (colon != std::string::npos) {
      try {
        count = std::stoi(part.substr(colon + 1));
      } catch (...) {
        count = 0;
      }
    }
    if (count < 1 || count > 16)
      return Error::make(ErrorCode::invalid_field, "--simulate: bad count in '" + part + "'");
    const auto* m = find_model(id);
    if (!m) {
      std::string ids;
      for (const auto& c : core::builtin_catalog()) ids += (ids.empty() ? "" : ", ") + c.id;
      return Error::make(ErrorCode::invalid_field, "--simulate: unknown model '" + id + "' (catalog: " + ids + ")");
    }
    for (int i = 0; i < count; ++i) {
      GpuTarget g;
      g.index = static_cast<unsigned>(out.size());
      g.uuid = "GPU-sim-" + m->id + "-" + std::to_string(g.index);
      g.name = m->nvml_name_pattern.empty() ? m->name : m->nvml_name_pattern;
      g.model = core::bench::model_spec(*m);
      g.memory_total_gib = m->vram_gib;
      if (!m->compute_capability.empty()) g.compute_capability = m->compute_capability;
      g.simulated = true;
      g.sample = []() -> std::optional<core::bench::TelemetryPoint> {
        core::bench::TelemetryPoint p;
        p.at_ms = util::system_now_ms();
        p.temperature_c = 62;
        return p;
      };
      out.push_back(std::move(g));
    }
  }
  if (out.empty()) return Error::make(ErrorCode::invalid_field, "--simulate: give MODEL:COUNT, e.g. L40S:2");
  return out;
}

std::vector<GpuTarget> cuda_targets() {
  std::vector<GpuTarget> out;
#ifdef GPUNEX_HAVE_CUDA
  for (int d = 0; d < gpu::cuda::device_count(); ++d) {
    auto p = gpu::cuda::device_props(d);
    if (!p) continue;
    GpuTarget g;
    g.index = static_cast<unsigned>(d);
    g.uuid = "cuda:" + p->pci_bus_id;
    g.name = p->name;
    g.memory_total_gib = static_cast<double>(p->total_mem) / (1ull << 30);
    g.compute_capability = std::to_string(p->cc_major) + "." + std::to_string(p->cc_minor);
    g.cuda_ordinal = d;
    if (const auto* m = core::match_nvml_name(p->name, core::builtin_catalog())) g.model = core::bench::model_spec(*m);
    out.push_back(std::move(g));
  }
#endif
  return out;
}

core::Result<nlohmann::json> submit_report(const core::bench::RunReport& report, const std::string& server_url,
                                           const std::string& api_key, const std::string& ca_file) {
  util::HttpClientOptions opts;
  opts.ca_file = ca_file;
  util::HttpClient client(server_url, opts);
  auto r = client.request("POST", "/v1/agent/benchmarks", core::bench::to_json(report).dump(),
                          {{"Authorization", "Bearer " + api_key}});
  if (!r) return r.error();
  auto body = nlohmann::json::parse(r->body, nullptr, false);
  if (r->status != 200) {
    std::string msg = "the server refused the benchmark results: HTTP " + std::to_string(r->status);
    if (body.is_object() && body.contains("error") && body["error"].contains("message")) {
      msg += ": " + body["error"]["message"].get<std::string>();
    }
    return Error::make(r->status == 401 ? ErrorCode::unauthenticated : ErrorCode::unavailable, msg);
  }
  return body;
}

core::Result<std::string> request_run(const std::string& machine_id, const std::string& server_url,
                                      const std::string& api_key, const std::string& ca_file) {
  util::HttpClientOptions opts;
  opts.ca_file = ca_file;
  util::HttpClient client(server_url, opts);
  const std::vector<std::pair<std::string, std::string>> auth{{"Authorization", "Bearer " + api_key}};
  const std::string base = "/v1/provider/machines/" + machine_id + "/benchmarks";
  auto r = client.request("POST", base + "/run", "", auth);
  if (!r) return r.error();
  auto body = nlohmann::json::parse(r->body, nullptr, false);
  if (r->status == 202 && body.is_object() && body.contains("run_id")) return body["run_id"].get<std::string>();
  if (r->status == 409) {  // a run is open already: that one is taken
    auto runs = client.request("GET", base, "", auth);
    if (!runs) return runs.error();
    auto list = nlohmann::json::parse(runs->body, nullptr, false);
    if (runs->status == 200 && list.is_object() && list.contains("runs")) {
      for (const auto& run : list["runs"]) {
        const std::string status = run.value("status", "");
        if (status == "requested" || status == "delivered") return run.value("id", "");
      }
    }
  }
  std::string msg = "the server did not grant a benchmark run: HTTP " + std::to_string(r->status);
  if (body.is_object() && body.contains("error") && body["error"].contains("message")) {
    msg += ": " + body["error"]["message"].get<std::string>();
  }
  return Error::make(r->status == 401 ? ErrorCode::unauthenticated : ErrorCode::unavailable, msg);
}

namespace {

SuiteOptions suite_options(const BenchCommandOptions& o, std::vector<std::string> only) {
  SuiteOptions so;
  so.only = std::move(only);
  so.storage.dir = o.data_dir;
  if (o.storage_mib > 0) so.storage.file_bytes = o.storage_mib << 20;
  so.network.server_url = o.server_url;
  so.network.api_key = o.api_key;
  so.network.ca_file = o.ca_file;
  if (o.net_bytes > 0) so.network.download_bytes = so.network.upload_bytes = o.net_bytes;
  if (o.net_time_s > 0) so.network.max_time_per_case = std::chrono::seconds(o.net_time_s);
  return so;
}

// Whether every GPU of a known model passes its quality thresholds.
bool gpus_pass(const core::bench::RunReport& report, const std::vector<GpuTarget>& gpus,
               const core::bench::Policy& policy) {
  bool pass = true;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    if (!gpus[i].model) continue;
    auto v = core::bench::evaluate_gpu(*gpus[i].model, core::bench::figures_of(report.gpus[i].results),
                                       core::bench::fold_telemetry(report.gpus[i]), policy);
    pass = pass && v.pass();
  }
  return pass;
}

// The machine checks (storage, network, host RAM, CPU) as the run measured them: each failure.
nlohmann::json machine_failures(const core::bench::RunReport& report, const std::vector<GpuTarget>& gpus,
                                const core::bench::Policy& policy) {
  core::bench::MachineFacts facts;
  facts.gpu_count = static_cast<unsigned>(gpus.size());
  for (const auto& g : gpus) facts.total_vram_gib += g.memory_total_gib.value_or(0);
  facts.host_ram_gib = host_ram_gib();
  facts.cpu_cores = std::max(1u, std::thread::hardware_concurrency());
  auto figs = core::bench::figures_of(report.machine);
  if (figs.contains(core::bench::Metric::net_down)) facts.net_down_mbps = figs[core::bench::Metric::net_down];
  if (figs.contains(core::bench::Metric::net_up)) facts.net_up_mbps = figs[core::bench::Metric::net_up];
  if (figs.contains(core::bench::Metric::storage_seq_read)) {
    facts.storage_seq_read_mbs = figs[core::bench::Metric::storage_seq_read];
  }
  nlohmann::json mf = nlohmann::json::array();
  for (const auto& f : core::bench::evaluate_machine(facts, policy)) {
    mf.push_back({{"metric", f.metric},
                  {"measured", f.measured},
                  {"expected", f.expected},
                  {"unit", f.unit},
                  {"recommendation", f.recommendation}});
  }
  return mf;
}

void print_human(const core::bench::RunReport& report, const std::vector<GpuTarget>& gpus,
                 const core::bench::Policy& policy, const nlohmann::json& summary, std::ostream& out) {
  out << format_table(report, gpus, policy);
  if (!summary.contains("machine_failures")) return;
  for (const auto& f : summary["machine_failures"]) {
    out << "machine: FAIL " << f["metric"].get<std::string>() << " " << f["measured"].get<double>() << " "
        << f["unit"].get<std::string>() << ", needs " << f["expected"].get<double>() << ": "
        << f["recommendation"].get<std::string>() << "\n";
  }
}

}  // namespace

int run_bench_command(const std::vector<GpuTarget>& gpus, const BenchCommandOptions& o, std::ostream& out,
                      std::ostream& err) {
  auto only = parse_only(o.only);
  if (!only) {
    err << "gpunex-agent bench: " << only.error().message << "\n";
    return 2;
  }
  std::optional<std::string> run_id = o.run_id;
  if (o.submit && !run_id) {
    auto asked = request_run(o.machine_id, o.server_url, o.api_key, o.ca_file);
    if (!asked) {
      err << "gpunex-agent bench: " << asked.error().message << "\n";
      return 1;
    }
    run_id = *asked;
    if (!o.json) err << "  benchmark run " << *run_id << " requested of the server\n";
  }
  const SuiteOptions so = suite_options(o, *only);
  SuiteRun probe(so);
  auto selected = [&](auto&& pred) {
    return std::any_of(registry().begin(), registry().end(),
                       [&](const BenchCase& c) { return pred(c) && probe.selected(c); });
  };
  if (selected([](const BenchCase& c) { return c.per_gpu(); }) && gpus.empty()) {
    err << "gpunex-agent bench: no GPUs to benchmark"
        << (compiled_with_cuda() ? "" : " (this agent was compiled without CUDA: real GPUs cannot be benchmarked)")
        << "; use --simulate MODEL:COUNT, or --only storage,network\n";
  }
  Progress progress;
  if (!o.json) progress = [&err](const std::string& line) { err << "  " << line << "\n" << std::flush; };
  auto report = run_suite(gpus, so, progress);
  report.machine_id = o.machine_id;
  report.run_id = run_id;

  const core::bench::Policy policy{};
  bool pass = gpus_pass(report, gpus, policy);
  auto summary = summary_json(report, gpus, policy);
  // Machine checks need storage and network; judge them only when the run measured them.
  const auto measured = [&](core::bench::Metric m) {
    return selected([m](const BenchCase& c) { return c.metric == m; });
  };
  if (measured(core::bench::Metric::storage_seq_read) && measured(core::bench::Metric::net_down) &&
      !o.server_url.empty()) {
    summary["machine_failures"] = machine_failures(report, gpus, policy);
    pass = pass && summary["machine_failures"].empty();
  }
  int status = pass ? 0 : 1;
  if (o.submit) {
    auto sent = submit_report(report, o.server_url, o.api_key, o.ca_file);
    if (!sent) {
      err << "gpunex-agent bench: " << sent.error().message << "\n";
      status = 1;
    } else {
      summary["server"] = *sent;
      if (!o.json) err << "  submitted: " << sent->dump() << "\n";
    }
  }
  if (o.json) {
    out << summary.dump(2) << "\n";
  } else {
    print_human(report, gpus, policy, summary, out);
  }
  return status;
}

}  // namespace gpunex::agent::bench
