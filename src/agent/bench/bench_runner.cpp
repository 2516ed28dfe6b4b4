#include "agent/bench/bench_runner.hpp"

#include "agent/bench/backend_targets.hpp"
#include "agent/bench/bench_command.hpp"
#include "util/log.hpp"

namespace gpunex::agent::bench {

BackgroundBench::BackgroundBench(gpu::GpuBackend& backend, std::mutex& backend_mutex, BenchRunConfig config)
    : backend_(backend), backend_mutex_(backend_mutex), config_(std::move(config)) {}

BackgroundBench::~BackgroundBench() {
  cancel_ = true;
  if (thread_.joinable()) thread_.join();
}

bool BackgroundBench::start(const protocol::Command& command, const std::vector<protocol::GpuInfo>& gpus,
                            const std::string& machine_id) {
  if (running_.load()) return false;
  if (thread_.joinable()) thread_.join();
  const std::optional<std::string> run_id = command.run_id;
  running_ = true;
  thread_ = std::thread([this, gpus, machine_id, run_id] {
    util::log_event("info", "benchmark run started", {{"run_id", run_id.value_or("")}});
    auto targets = gpu_targets(backend_, gpus, backend_mutex_);
    SuiteOptions so;
    so.storage.dir = config_.data_dir;
    so.storage.file_bytes = static_cast<std::uint64_t>(config_.storage_mib) << 20;
    so.network.server_url = config_.server_url;
    so.network.api_key = config_.api_key;
    so.network.ca_file = config_.ca_file;
    so.network.download_bytes = so.network.upload_bytes = static_cast<std::uint64_t>(config_.net_mib) << 20;
    so.cancel = &cancel_;
    auto report = run_suite(targets, so);
    if (cancel_.load()) {
      // A partial run would read as failures; the server expires the run and asks again later.
      util::log_event("info", "benchmark run abandoned: the agent is stopping", {{"run_id", run_id.value_or("")}});
      running_ = false;
      return;
    }
    report.machine_id = machine_id;
    report.run_id = run_id;
    auto sent = submit_report(report, config_.server_url, config_.api_key, config_.ca_file);
    if (sent) {
      util::log_event("info", "benchmark results accepted", {{"run_id", run_id.value_or("")}, {"server", *sent}});
    } else {
      util::log_event("error", "benchmark results not accepted: " + sent.error().message,
                      {{"run_id", run_id.value_or("")}});
    }
    running_ = false;
  });
  return true;
}

}  // namespace gpunex::agent::bench
