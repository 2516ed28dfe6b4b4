// gpunex-agent: runs on a provider's host; see API.md "Command-line contract".

#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <csignal>
#include <mutex>
#include <optional>
#include <cstdio>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "agent/agent.hpp"
#include "agent/backend.hpp"
#include "agent/bench/backend_targets.hpp"
#include "agent/bench/bench_command.hpp"
#include "agent/host_info.hpp"
#include "agent/runtime/container_runtime.hpp"
#include "agent/state.hpp"
#include "core/text.hpp"
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

//! Every flag of every subcommand; the subcommands share --data-dir, --simulate and --nvml-library.
struct Options {
  std::string log_level = "info";
  std::string data_dir = "/var/lib/gpunex";
  std::optional<std::string> simulate;
  std::string nvml_library = gpunex::gpu::kNvmlLibrary;
  gpunex::agent::AgentConfig run;
  unsigned heartbeat_override = 0;
  std::string public_ports = "40000-40999";
  unsigned stop_grace_s = 10;
  bool info_json = false;
  gpunex::agent::bench::BenchCommandOptions bench;
  std::string test_lie;      // run --test-lie MODE: a lying agent, for the tests of issue 21
  std::string api_key_file;  // run: the key from this file (the installer's 0600 file), never on the command line
};

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

CLI::App* add_run_command(CLI::App& app, Options& o) {
  auto* run = app.add_subcommand("run", "register and heartbeat until stopped");
  run->add_option("--server", o.run.server_url, "server URL, e.g. https://gpunex.example.com")
      ->required()
      ->envname("GPUNEX_SERVER");
  run->add_option("--api-key", o.run.api_key, "provider API key (gpx_...)")->envname("GPUNEX_API_KEY");
  run->add_option("--api-key-file", o.api_key_file,
                  "read the provider API key from this file (mode 0600; keeps it out of ps and docker inspect)")
      ->envname("GPUNEX_API_KEY_FILE");
  run->add_option("--data-dir", o.data_dir, "where the machine identity and spool live")->envname("GPUNEX_DATA_DIR");
  run->add_option("--simulate", o.simulate, "MODEL:COUNT or a machine description file")->envname("GPUNEX_SIMULATE");
  run->add_option("--ca-file", o.run.ca_file, "CA bundle to verify the server's TLS certificate")
      ->envname("GPUNEX_CA_FILE");
  run->add_option("--heartbeat-interval", o.heartbeat_override, "seconds; overrides the server's value (testing)");
  run->add_option("--spool-max-entries", o.run.spool.max_entries, "messages kept while the server is unreachable");
  run->add_option(
      "--docker-host", o.run.rentals.docker_host,
      "container engine for rentals, unix:///path (default: $DOCKER_HOST, else unix:///var/run/docker.sock)");
  run->add_option("--public-ports", o.public_ports, "LO-HI: the host ports rentals' exposed ports are bound on")
      ->envname("GPUNEX_PUBLIC_PORTS");
  run->add_option("--public-host", o.run.public_host,
                  "DNS name or IP address customers connect to for rentals' ports (default: the address the "
                  "server sees this agent connect from; give it behind NAT or a proxy)")
      ->check([](const std::string& v) {
        return gpunex::core::is_host_name_or_address(v) ? "" : "must be a DNS name or an IP address";
      })
      ->envname("GPUNEX_PUBLIC_HOST");
  run->add_option("--network-guard", o.run.network_guard,
                  "iptables: keep rentals' containers off this host and its private networks (needs root); "
                  "none: leave it to the host's own firewall")
      ->check(CLI::IsMember({"iptables", "none"}))
      ->envname("GPUNEX_NETWORK_GUARD");
  run->add_option("--stop-grace-s", o.stop_grace_s, "seconds a stopped rental gets between SIGTERM and SIGKILL");
  run->add_option("--nvml-library", o.nvml_library, "NVML library to load")->group("");
  // Hidden (group ""): a modified agent that lies, for the tests that show the server catches it.
  run->add_option("--test-lie", o.test_lie, "TESTS ONLY: inflate, random, smaller, vram, replay, idle, bait or partial")->group("");
  run->add_option("--bench-storage-mib", o.run.bench_storage_mib,
                  "storage benchmark file size for server-requested runs");
  run->add_option("--bench-net-mib", o.run.bench_net_mib,
                  "MiB per network throughput sample for server-requested runs");
  return run;
}

CLI::App* add_info_command(CLI::App& app, Options& o) {
  auto* info = app.add_subcommand("info", "print the GPUs and host facts this agent detects");
  info->add_option("--simulate", o.simulate, "MODEL:COUNT or a machine description file")->envname("GPUNEX_SIMULATE");
  info->add_option("--data-dir", o.data_dir, "data folder (for the simulated GPUs' stable ids)")
      ->envname("GPUNEX_DATA_DIR");
  info->add_flag("--json", o.info_json, "print JSON");
  info->add_option("--nvml-library", o.nvml_library, "NVML library to load")->group("");
  return info;
}

CLI::App* add_bench_command(CLI::App& app, Options& o) {
  auto* bench = app.add_subcommand("bench", "run the benchmark suite standalone");
  auto& bo = o.bench;
  bench->add_option("--simulate", o.simulate, "MODEL:COUNT or a machine description file")->envname("GPUNEX_SIMULATE");
  bench->add_option("--only", bo.only, "compute,memory,host_link,storage,network (or case keys)");
  bench->add_flag("--json", bo.json, "print JSON");
  bench->add_option("--server", bo.server_url, "server URL for the network benchmarks")->envname("GPUNEX_SERVER");
  bench->add_option("--api-key", bo.api_key, "provider API key")->envname("GPUNEX_API_KEY");
  bench->add_option("--ca-file", bo.ca_file, "CA bundle for the server's TLS certificate")->envname("GPUNEX_CA_FILE");
  bench->add_option("--data-dir", o.data_dir, "folder for the storage benchmark's temporary file")
      ->envname("GPUNEX_DATA_DIR");
  bench->add_option("--storage-mib", bo.storage_mib, "size of the storage benchmark's temporary file (MiB)")
      ->check(CLI::Range(16, 65536));
  bench->add_option("--net-bytes", bo.net_bytes, "bytes per network throughput sample");
  bench->add_option("--net-time", bo.net_time_s, "seconds allowed per network case");
  bench->add_flag("--submit", bo.submit, "send the results to the server (needs --server, --api-key, --machine-id)");
  bench->add_option("--machine-id", bo.machine_id, "this machine's id at the server");
  bench->add_option("--run-id", bo.run_id, "the server's run id, when it asked for the run");
  bench->add_option("--nvml-library", o.nvml_library, "NVML library to load")->group("");
  return bench;
}

//! `bench`: the GPUs are optional when only storage or network cases were asked for.
int bench_command(Options& o) {
  namespace bench = gpunex::agent::bench;
  o.bench.data_dir = o.data_dir;
  auto only = bench::parse_only(o.bench.only);
  if (!only) {
    std::fprintf(stderr, "gpunex-agent bench: %s\n", only.error().message.c_str());
    return code(ExitCode::usage);
  }
  const bool machine_only = !only->empty() && std::all_of(only->begin(), only->end(), [](const std::string& c) {
    return c.rfind("storage", 0) == 0 || c.rfind("network", 0) == 0;
  });
  std::vector<bench::GpuTarget> targets;
  std::mutex backend_mu;
  auto backend = gpunex::agent::open_backend(o.simulate, read_seed(o.data_dir), o.nvml_library);
  if (!backend && !machine_only) return backend_error(backend.error(), false);
  if (backend) {
    auto gpus = (*backend)->list_gpus();
    if (!gpus) return backend_error(gpus.error(), false);
    targets = bench::gpu_targets(**backend, *gpus, backend_mu);
  }
  return bench::run_bench_command(targets, o.bench, std::cout, std::cerr);
}

//! `info` for people: the host, then one line per GPU and one for its current sample.
void print_info(const nlohmann::json& out, const std::string& disk_dir) {
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
}

//! `info`: what registration would send, plus one sample per GPU, as JSON or text.
int info_command(const Options& o) {
  auto backend = gpunex::agent::open_backend(o.simulate, read_seed(o.data_dir), o.nvml_library);
  if (!backend) return backend_error(backend.error(), false);
  auto gpus = (*backend)->list_gpus();
  if (!gpus) return backend_error(gpus.error(), false);
  std::error_code ec;
  const std::string disk_dir = std::filesystem::is_directory(o.data_dir, ec) ? o.data_dir : "/";
  const std::string docker_socket =
      gpunex::agent::runtime::docker_socket_path(gpunex::agent::runtime::docker_host_from_env());
  nlohmann::json out = {{"simulated", (*backend)->simulated()},
                        {"backend", (*backend)->describe()},
                        {"host", gpunex::agent::read_host_info(disk_dir, {.docker_socket = docker_socket}).to_json()},
                        {"gpus", nlohmann::json::array()}};
  for (const auto& g : *gpus) {
    nlohmann::json gj = g.to_json();
    auto s = (*backend)->sample(static_cast<unsigned>(g.index));
    gj["sample"] = s ? s->to_json() : nlohmann::json{{"error", s.error().message}};
    out["gpus"].push_back(std::move(gj));
  }
  if (o.info_json) {
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  if ((*backend)->simulated()) std::cout << "SIMULATED GPUs: " << (*backend)->describe() << "\n";
  print_info(out, disk_dir);
  return 0;
}

//! The key in `path` (its first line); nullopt after saying why. A file other users may read is refused:
//! the key would be theirs too.
std::optional<std::string> read_api_key_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    std::fprintf(stderr, "gpunex-agent: --api-key-file %s: %s\n", path.c_str(), std::strerror(errno));
    return std::nullopt;
  }
  if ((st.st_mode & 077) != 0) {
    std::fprintf(stderr, "gpunex-agent: --api-key-file %s: readable by other users; chmod 600 it\n", path.c_str());
    return std::nullopt;
  }
  std::ifstream in(path);
  std::string key;
  std::getline(in, key);
  while (!key.empty() && (key.back() == '\r' || key.back() == ' ')) key.pop_back();
  if (key.empty()) {
    std::fprintf(stderr, "gpunex-agent: --api-key-file %s: no key in it\n", path.c_str());
    return std::nullopt;
  }
  return key;
}

//! `run`: the agent itself, until SIGINT or SIGTERM.
int run_command(Options& o) {
  auto& cfg = o.run;
  if (!o.api_key_file.empty()) {
    auto key = read_api_key_file(o.api_key_file);
    if (!key) return code(ExitCode::usage);
    cfg.api_key = *key;
  }
  if (cfg.api_key.empty()) {
    std::fprintf(stderr, "gpunex-agent: no API key: pass --api-key-file, --api-key or set GPUNEX_API_KEY\n");
    return code(ExitCode::usage);
  }
  if (o.heartbeat_override > 0) cfg.heartbeat_interval_s = o.heartbeat_override;
  if (!o.test_lie.empty()) {
    auto lie = gpunex::agent::bench::parse_lie_mode(o.test_lie);
    if (!lie) {
      std::fprintf(stderr, "gpunex-agent: --test-lie: unknown mode '%s'\n", o.test_lie.c_str());
      return code(ExitCode::usage);
    }
    cfg.test_lie = *lie;
    gpunex::util::log_event("warn", "TEST ONLY: this agent lies about its GPUs (--test-lie " + o.test_lie + ")");
  }
  auto ports = gpunex::agent::parse_port_range(o.public_ports);
  if (!ports) {
    std::fprintf(stderr, "gpunex-agent: --public-ports: %s\n", ports.error().message.c_str());
    return code(ExitCode::usage);
  }
  cfg.rentals.public_ports = *ports;
  cfg.rentals.stop_grace = std::chrono::seconds(o.stop_grace_s);
  if (!cfg.rentals.docker_host.empty() && cfg.rentals.docker_host.rfind("unix://", 0) != 0) {
    std::fprintf(stderr, "gpunex-agent: --docker-host must be a unix:// URL (the engine's socket), not '%s'\n",
                 cfg.rentals.docker_host.c_str());
    return code(ExitCode::usage);
  }
  auto state = gpunex::agent::AgentState::open(o.data_dir);
  if (!state) {
    gpunex::util::log_event("error", state.error().message);
    return code(ExitCode::failure);
  }
  auto backend = gpunex::agent::open_backend(o.simulate, state->identity().fingerprint, o.nvml_library);
  if (!backend) return backend_error(backend.error(), true);
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  gpunex::util::log_event("info", "gpunex-agent starting",
                          {{"server", cfg.server_url},
                           {"data_dir", o.data_dir},
                           {"version", gpunex::agent::kAgentVersion},
                           {"fingerprint", state->identity().fingerprint},
                           {"machine_id", state->identity().machine_id},
                           {"public_ports", o.public_ports}});
  return code(gpunex::agent::run_agent(cfg, **backend, *state, g_stop));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gpunex-agent: registers this host's GPUs with a GPUnex server and reports their health"};
  app.set_version_flag("--version", version_text());
  app.require_subcommand(1);
  // What a service manager or an install script acts on (ExitCode): 4 needs a new key, not a restart.
  app.footer(
      "Exit status: 0 done (stopped by a signal, or --max-heartbeats reached); 1 a failure (a file or the "
      "server's address unusable); 2 the command line is wrong; 3 no NVIDIA driver (NVML) and no --simulate; "
      "4 the server refused the API key (revoked or rotated: give the agent a new one).");
  Options o;
  app.add_option("--log-level", o.log_level, "trace|debug|info|warn|error")->envname("GPUNEX_LOG_LEVEL");
  add_run_command(app, o);
  auto* info = add_info_command(app, o);
  auto* bench = add_bench_command(app, o);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : code(ExitCode::usage);
  }
  if (!gpunex::util::init_logging(o.log_level)) {
    std::fprintf(stderr, "gpunex-agent: unknown --log-level '%s'\n", o.log_level.c_str());
    return code(ExitCode::usage);
  }
  gpunex::util::init_crypto();
  if (bench->parsed()) return bench_command(o);
  if (info->parsed()) return info_command(o);
  return run_command(o);
}
