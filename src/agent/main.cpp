// gpunex-agent. Until the agent proper (issue 4) lands, only `bench` is here;
// it calls agent/bench/run_bench_command, which the full agent main calls too.

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "agent/bench/bench_command.hpp"

int main(int argc, char** argv) {
  CLI::App app{"gpunex-agent: registers this host's GPUs with a GPUnex server and reports their health"};
  app.require_subcommand(1);
  gpunex::agent::bench::BenchCommandOptions bo;
  std::optional<std::string> simulate;
  if (const char* d = std::getenv("GPUNEX_DATA_DIR")) bo.data_dir = d;
  auto* bench = app.add_subcommand("bench", "run the benchmark suite standalone");
  bench->add_option("--simulate", simulate, "MODEL:COUNT (simulated GPUs from the catalog)");
  bench->add_option("--only", bo.only, "compute,memory,host_link,storage,network (or case keys)");
  bench->add_flag("--json", bo.json, "print JSON");
  bench->add_option("--server", bo.server_url, "server URL for the network benchmarks")->envname("GPUNEX_SERVER");
  bench->add_option("--api-key", bo.api_key, "provider API key")->envname("GPUNEX_API_KEY");
  bench->add_option("--ca-file", bo.ca_file, "CA bundle for the server's TLS certificate")->envname("GPUNEX_CA_FILE");
  bench->add_option("--net-bytes", bo.net_bytes, "bytes per network throughput sample");
  bench->add_option("--net-time", bo.net_time_s, "seconds allowed per network case");
  bench->add_flag("--submit", bo.submit, "send the results to the server (needs --server, --api-key, --machine-id)");
  bench->add_option("--machine-id", bo.machine_id, "this machine's id at the server");
  bench->add_option("--run-id", bo.run_id, "the server's run id, when it asked for the run");
  bench->add_option("--data-dir", bo.data_dir, "folder for the storage benchmark's temporary file");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  std::vector<gpunex::agent::bench::GpuTarget> gpus;
  if (simulate) {
    auto s = gpunex::agent::bench::simulated_targets(*simulate);
    if (!s) {
      std::fprintf(stderr, "gpunex-agent bench: %s\n", s.error().message.c_str());
      return 2;
    }
    gpus = std::move(*s);
  } else {
    gpus = gpunex::agent::bench::cuda_targets();
  }
  return gpunex::agent::bench::run_bench_command(gpus, bo, std::cout, std::cerr);
}
