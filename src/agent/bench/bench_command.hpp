#pragma once
// `gpunex-agent bench`: runs the suite standalone and prints the table (or JSON).
// The agent's main parses the flags and calls run_bench_command with the GPUs
// it found; gpu_targets_* build those GPUs without the GPU backend's types.

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "agent/bench/suite.hpp"
#include "core/result.hpp"

namespace gpunex::agent::bench {

struct BenchCommandOptions {
  std::string only;        // "compute,memory,storage,network" (groups or case keys); empty: all
  bool json = false;
  std::string server_url;  // network cases need it
  std::string api_key;
  std::string ca_file;
  std::string data_dir = "/var/lib/gpunex";  // storage cases write their temporary file here
  std::uint64_t storage_mib = 0;    // the storage cases' file size; 0: the suite default
  std::uint64_t net_bytes = 0;      // per network throughput sample; 0: the suite default
  unsigned net_time_s = 0;          // time budget per network case; 0: the suite default
  bool submit = false;              // POST the run to the server (POST /v1/agent/benchmarks)
  std::string machine_id;           // the machine the run belongs to (from the agent's identity)
  std::optional<std::string> run_id;  // the server's run, when it asked for this one
};

//! Splits --only and checks each name against the registry; the error names the unknown one.
core::Result<std::vector<std::string>> parse_only(const std::string& only);

//! Simulated GPUs from "MODEL:COUNT[,MODEL:COUNT...]" over the built-in catalog, without faults.
//! (The agent's simulated backend, with faults and machine files, replaces this where it is linked.)
core::Result<std::vector<GpuTarget>> simulated_targets(const std::string& spec);

//! The CUDA devices this build can see, as benchmark targets; empty without CUDA.
std::vector<GpuTarget> cuda_targets();

//! POSTs a run to the server; the reply (scores, listing) or the server's error.
//! A run the server requests of `machine_id` for `bench --submit` without --run-id (the server takes
//! results only for runs it requested): a new one as the provider's re-run button asks, or the one already
//! open. Returns its id.
core::Result<std::string> request_run(const std::string& machine_id, const std::string& server_url,
                                      const std::string& api_key, const std::string& ca_file);
core::Result<nlohmann::json> submit_report(const core::bench::RunReport& report, const std::string& server_url,
                                           const std::string& api_key, const std::string& ca_file);

//! Runs the suite and prints it. Exit status: 0 when every GPU and machine check passes, 1 otherwise, 2 on usage.
int run_bench_command(const std::vector<GpuTarget>& gpus, const BenchCommandOptions& options, std::ostream& out,
                      std::ostream& err);

}  // namespace gpunex::agent::bench
