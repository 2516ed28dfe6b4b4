// gpunex-agent: runs on a provider's host; see API.md "Command-line contract".

#include <unistd.h>
#include <algorithm>
#include <csignal>
#include <mutex>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "agent/agent.hpp"
#include "agent/bench/backend_targets.hpp"
#include "agent/bench/bench_command.hpp"
#include "agent/backend.hpp"
#include "agent/host_info.hpp"
#include "agent/state.hpp"
#include "gpu/nvml/nvml_backend.hpp"
#include "util/crypto.hpp"
#include "util/log.hpp"

namespace {

using gpunex::agent::ExitCode;

std::atomic<bool> g_stop{false};

void on_signal(int) {
  g_stop.store(true);
}

int code(ExitCode c) {
  return static_cast<int>(c);
}

//! The seed for simulated UUIDs: the machine's fingerprint when the data folder has one.
std::string read_seed(const std::string& data_dir) {
  std::ifstream in(data_dir + "/identity.json");
  if (in) {
    auto j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_object() && j.contains("fingerprint") && j["fingerprint"].is_string()) return j["fingerprint"];
  }
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return std::string("host:") + name;
}

//! `run` logs JSON lines; `info` is for people and scripts, so it prints plain text.
int backend_error(const gpunex::core::Error& e, bool json_log) {
  if (json_log) {
    gpunex::util::log_event("error", e.message);
  } else {
    std::fprintf(stderr, "gpunex-agent: %s\n", e.message.c_str());
  }
  return code(e.detail_code == "no_nvidia_driver" ? ExitCode::no_gpu_backend : ExitCode::failure);
}

//! What `--version` prints: the agent's version and whether it measures real GPUs (a binary built
//! without the CUDA toolkit has no GPU benchmarks, and a real GPU it reports is never listed).
std::string version_text() {
  std::string s = std::string("gpunex-agent ") + gpunex::agent::kAgentVersion + "\n";
#ifdef GPUNEX_HAVE_CUDA
  s += std::string("GPU benchmarks: built with CUDA ") + GPUNEX_BUILD_CUDA_VERSION +
       " (cuBLAS, cuBLASLt; architectures " + GPUNEX_BUILD_CUDA_ARCHS + ")";
#else
  s += "GPU benchmarks: built without CUDA (real GPUs cannot be measured and stay delisted; simulated GPUs only)";
#endif
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gpunex-agent: registers this host's GPUs with a GPUnex server and reports their health"};
  app.set_version_flag("--version", version_text());
  app.require_subcommand(1);
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "trace|debug|info|warn|error")->envname("GPUNEX_LOG_LEVEL");

  std::string data_dir = "/var/lib/gpunex";
  std::optional<std::string> simulate;
  std::string nvml_library = gpunex::gpu::kNvmlLibrary;

  gpunex::agent::AgentConfig cfg;
  unsigned heartbeat_override = 0;
  auto* run = app.add_subcommand("run", "register and heartbeat until stopped");
  run->add_option("--server", cfg.server_url, "server URL, e.g. https://gpunex.example.com")
      ->required()
      ->envname("GPUNEX_SERVER");
  run->add_option("--api-key", cfg.api_key, "provider API key (gpx_...)")->envname("GPUNEX_API_KEY");
  run->add_option("--data-dir", data_dir, "where the machine identity and spool live")->envname("GPUNEX_DATA_DIR");
  run->add_option("--simulate", simulate, "MODEL:COUNT or a machine description file")->envname("GPUNEX_SIMULATE");
  run->add_option("--ca-file", cfg.ca_file, "CA bundle to verify the server's TLS certificate")
      ->envname("GPUNEX_CA_FILE");
  run->add_option("--heartbeat-interval", heartbeat_override, "seconds; overrides the server's value (testing)");
  run->add_option("--spool-max-entries", cfg.spool.max_entries, "messages kept while the server is unreachable");
  run->add_option("--nvml-library", nvml_library, "NVML library to load")->group("");

  bool json_out = false;
  auto* info = app.add_subcommand("info", "print the GPUs and host facts this agent detects");
  info->add_option("--simulate", simulate, "MODEL:COUNT or a machine description file")->envname("GPUNEX_SIMULATE");
  info->add_option("--data-dir", data_dir, "data folder (for the simulated GPUs' stable ids)")
      ->envname("GPUNEX_DATA_DIR");
  info->add_flag("--json", json_out, "print JSON");
  info->add_option("--nvml-library", nvml_library, "NVML library to load")->group("");

  auto* bench = app.add_subcommand("bench", "run the benchmark suite standalone");
  gpunex::agent::bench::BenchCommandOptions bo;
  bench->add_option("--simulate", simulate, "MODEL:COUNT or a machine description file")->envname("GPUNEX_SIMULATE");
  bench->add_option("--only", bo.only, "compute,memory,host_link,storage,network (or case keys)");
  bench->add_flag("--json", bo.json, "print JSON");
  bench->add_option("--server", bo.server_url, "server URL for the network benchmarks")->envname("GPUNEX_SERVER");
  bench->add_option("--api-key", bo.api_key, "provider API key")->envname("GPUNEX_API_KEY");
  bench->add_option("--ca-file", bo.ca_file, "CA bundle for the server's TLS certificate")->envname("GPUNEX_CA_FILE");
  bench->add_option("--data-dir", data_dir, "folder for the storage benchmark's temporary file")
      ->envname("GPUNEX_DATA_DIR");
  bench->add_option("--storage-mib", bo.storage_mib, "size of the storage benchmark's temporary file (MiB)")
      ->check(CLI::Range(16, 65536));
  bench->add_option("--net-bytes", bo.net_bytes, "bytes per network throughput sample");
  bench->add_option("--net-time", bo.net_time_s, "seconds allowed per network case");
  bench->add_flag("--submit", bo.submit, "send the results to the server (needs --server, --api-key, --machine-id)");
  bench->add_option("--machine-id", bo.machine_id, "this machine's id at the server");
  bench->add_option("--run-id", bo.run_id, "the server's run id, when it asked for the run");
  bench->add_option("--nvml-library", nvml_library, "NVML library to load")->group("");
  run->add_option("--bench-storage-mib", cfg.bench_storage_mib, "storage benchmark file size for server-requested runs");
  run->add_option("--bench-net-mib", cfg.bench_net_mib, "MiB per network throughput sample for server-requested runs");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : code(ExitCode::usage);
  }
  if (!gpunex::util::init_logging(log_level)) {
    std::fprintf(stderr, "gpunex-agent: unknown --log-level '%s'\n", log_level.c_str());
    return code(ExitCode::usage);
  }
  gpunex::util::init_crypto();

  if (bench->parsed()) {
    bo.data_dir = data_dir;
    auto only = gpunex::agent::bench::parse_only(bo.only);
    if (!only) {
      std::fprintf(stderr, "gpunex-agent bench: %s\n", only.error().message.c_str());
      return code(ExitCode::usage);
    }
    const bool machine_only = !only->empty() && std::all_of(only->begin(), only->end(), [](const std::string& o) {
      return o.rfind("storage", 0) == 0 || o.rfind("network", 0) == 0;
    });
    std::vector<gpunex::agent::bench::GpuTarget> targets;
    std::mutex backend_mu;
    auto backend = gpunex::agent::open_backend(simulate, read_seed(data_dir), nvml_library);
    if (!backend && !machine_only) return backend_error(backend.error(), false);
    if (backend) {
      auto gpus = (*backend)->list_gpus();
      if (!gpus) return backend_error(gpus.error(), false);
      targets = gpunex::agent::bench::gpu_targets(**backend, *gpus, backend_mu);
    }
    return gpunex::agent::bench::run_bench_command(targets, bo, std::cout, std::cerr);
  }

  if (info->parsed()) {
    auto backend = gpunex::agent::open_backend(simulate, read_seed(data_dir), nvml_library);
    if (!backend) return backend_error(backend.error(), false);
    auto gpus = (*backend)->list_gpus();
    if (!gpus) return backend_error(gpus.error(), false);
    std::error_code ec;
    const std::string disk_dir = std::filesystem::is_directory(data_dir, ec) ? data_dir : "/";
    nlohmann::json out = {{"simulated", (*backend)->simulated()},
                          {"backend", (*backend)->describe()},
                          {"host", gpunex::agent::to_json(gpunex::agent::read_host_info(disk_dir))},
                          {"gpus", nlohmann::json::array()}};
    for (const auto& g : *gpus) {
      nlohmann::json gj = gpunex::gpu::to_json(g);
      auto s = (*backend)->sample(g.index);
      gj["sample"] = s ? gpunex::gpu::to_json(*s) : nlohmann::json{{"error", s.error().message}};
      out["gpus"].push_back(std::move(gj));
    }
    if (json_out) {
      std::cout << out.dump(2) << "\n";
      return 0;
    }
    if ((*backend)->simulated()) std::cout << "SIMULATED GPUs: " << (*backend)->describe() << "\n";
    const auto& h = out["host"];
    std::cout << "host: " << h["hostname"].get<std::string>() << ", " << h["cpu_model"].get<std::string>() << " ("
              << h["cpu_cores"] << " cores), " << h["ram_mib"] << " MiB RAM, " << h["disk_free_mib"] << " MiB free in "
              << disk_dir << "\n"
              << "os: " << h["os"].get<std::string>() << ", kernel " << h["kernel"].get<std::string>() << "\n"
              << "docker: " << (h["docker_version"].is_string() ? h["docker_version"].get<std::string>() : "not found")
              << "\n";
    for (const auto& g : out["gpus"]) {
      std::cout << "gpu " << g["index"] << ": " << g["name"].get<std::string>() << ", " << g["uuid"].get<std::string>()
                << ", " << g["memory_mib"] << " MiB, driver " << g["driver_version"].get<std::string>() << ", CUDA "
                << g["cuda_version"].get<std::string>() << ", PCIe gen " << g["pcie_gen_current"] << " x"
                << g["pcie_width_current"] << ", " << g["power_limit_w"] << " W limit\n";
      const auto& s = g["sample"];
      if (s.contains("error")) {
        std::cout << "  sample: error: " << s["error"].get<std::string>() << "\n";
      } else {
        std::cout << "  sample: " << s["temperature_c"] << " C, " << s["power_w"] << " W, util " << s["util_gpu_pct"]
                  << "%, SM " << s["sm_clock_mhz"] << " MHz, clock events " << s["clock_events"].dump() << "\n";
      }
    }
    return 0;
  }

  // run
  if (cfg.api_key.empty()) {
    std::fprintf(stderr, "gpunex-agent: no API key: pass --api-key or set GPUNEX_API_KEY\n");
    return code(ExitCode::usage);
  }
  if (heartbeat_override > 0) cfg.heartbeat_interval_s = heartbeat_override;
  auto state = gpunex::agent::AgentState::open(data_dir);
  if (!state) {
    gpunex::util::log_event("error", state.error().message);
    return code(ExitCode::failure);
  }
  auto backend = gpunex::agent::open_backend(simulate, state->identity().fingerprint, nvml_library);
  if (!backend) return backend_error(backend.error(), true);
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  gpunex::util::log_event("info", "gpunex-agent starting",
                          {{"server", cfg.server_url},
                           {"data_dir", data_dir},
                           {"version", gpunex::agent::kAgentVersion},
                           {"fingerprint", state->identity().fingerprint},
                           {"machine_id", state->identity().machine_id}});
  return code(gpunex::agent::run_agent(cfg, **backend, *state, g_stop));
}
