#pragma once
// Runs the benchmark suite in the background when a heartbeat reply carries a
// `run_benchmark` command, and submits the results; one run at a time, so the
// heartbeats go on meanwhile. The backend mutex is shared with the heartbeat
// thread, which samples the same GPUs.

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "agent/bench/challenge_solver.hpp"
#include "gpu/gpu_backend.hpp"
#include "protocol/heartbeat.hpp"
#include "agent/bench/suite.hpp"
#include "protocol/register.hpp"

namespace gpunex::agent::bench {

struct BenchRunConfig {
  std::string server_url;
  std::string api_key;
  std::string ca_file;
  std::string data_dir;
  unsigned storage_mib = 256;  // the storage benchmark's file
  unsigned net_mib = 256;      // per network throughput sample
  LieMode lie = LieMode::none;  // tests only: `run --test-lie MODE`
};

//! Answers challenges (protocol/challenge.hpp), those in a results' reply or a spot check's: every GEMM
//! first, timed from when they came, then every VRAM fill. `lie` is the test-only lying agent's mode for
//! these challenges. Returns each challenge's outcome by id ("passed", "wrong", "late", or the error that
//! kept it from being answered).
std::vector<std::pair<std::string, std::string>> answer_challenges(
    const std::vector<protocol::ChallengeSpec>& specs, const std::vector<GpuTarget>& targets,
    const std::string& machine_id, const BenchRunConfig& config, LieMode lie);

class BackgroundBench {
 public:
  BackgroundBench(gpu::GpuBackend& backend, std::mutex& backend_mutex, BenchRunConfig config);
  //! Cancels a run in progress (it stops after its current case and submits nothing) and waits for it.
  ~BackgroundBench();
  BackgroundBench(const BackgroundBench&) = delete;
  BackgroundBench& operator=(const BackgroundBench&) = delete;

  //! Starts the run a `run_benchmark` command asks for, unless one is running (then false).
  bool start(const protocol::Command& command, const std::vector<protocol::GpuInfo>& gpus,
             const std::string& machine_id);
  //! Answers a `spot_check` command's challenges, unless a run or another check is going (then false).
  bool start_spot_check(const protocol::Command& command, const std::vector<protocol::GpuInfo>& gpus,
                        const std::string& machine_id);
  bool running() const { return running_.load(); }

 private:
  gpu::GpuBackend& backend_;
  std::mutex& backend_mutex_;
  BenchRunConfig config_;
  std::atomic<bool> running_{false};
  std::atomic<bool> cancel_{false};  // set by the destructor: the agent is stopping
  std::thread thread_;

  bool begin();  // false while busy; else joins the last thread and marks running
};

}  // namespace gpunex::agent::bench
