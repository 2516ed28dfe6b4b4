#include "agent/bench/bench_runner.hpp"

#include "agent/bench/backend_targets.hpp"
#include "agent/bench/bench_command.hpp"
#include "core/challenge.hpp"
#include "protocol/challenge.hpp"
#include "util/http_client.hpp"
#include "util/log.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <thread>

namespace gpunex::agent::bench {

namespace {

using Clock = std::chrono::steady_clock;

ChallengeTarget challenge_target(const GpuTarget& g, LieMode lie) {
  ChallengeTarget t;
  t.simulated = g.simulated;
  t.cuda_ordinal = g.cuda_ordinal;
  t.memory_mib = static_cast<std::int64_t>(g.memory_total_gib.value_or(0) * 1024.0 + 0.5);
  if (lie == LieMode::vram) t.memory_mib /= kVramLieFactor;  // what it has, not what it registered
  if (g.simulated && g.model) {
    // The speed the simulated GPU really has: what its honest run reports for FP16 tensor.
    if (auto e = core::bench::expected_figure(*g.model, core::bench::Metric::fp16_tensor, {})) {
      t.true_tflops = *e * g.sim_perf_factor * g.sim_compute_derate;
    }
  }
  return t;
}

core::Result<protocol::ChallengeReply> post_answer(util::HttpClient& client, const BenchRunConfig& config,
                                                   const protocol::ChallengeAnswer& a) {
  const auto body = a.to_json().dump();
  auto r = client.request("POST", std::string(protocol::kAgentChallengesPath), body,
                          {{"Authorization", "Bearer " + config.api_key}});
  // The server checks answers off its I/O threads; a full queue says 503 at once: try again shortly.
  for (int retry = 0; r && r->status == 503 && retry < 5; ++retry) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    r = client.request("POST", std::string(protocol::kAgentChallengesPath), body,
                       {{"Authorization", "Bearer " + config.api_key}});
  }
  if (!r) return r.error();
  if (r->status != 200) {
    return core::Error::make(core::ErrorCode::unavailable,
                             "the server refused the challenge answer: HTTP " + std::to_string(r->status) + " " +
                                 r->body.substr(0, 300));
  }
  return protocol::parse_challenge_reply(nlohmann::json::parse(r->body, nullptr, false));
}

}  // namespace

std::vector<std::pair<std::string, std::string>> answer_challenges(const std::vector<protocol::ChallengeSpec>& specs,
                                                                   const std::vector<GpuTarget>& targets,
                                                                   const std::string& machine_id,
                                                                   const BenchRunConfig& config, LieMode lie) {
  const auto t0 = Clock::now();
  std::vector<std::pair<std::string, std::string>> out;
  if (specs.empty()) return out;
  util::HttpClientOptions opts;
  opts.ca_file = config.ca_file;
  util::HttpClient client(config.server_url, opts);
  // The GPU a challenge is for, or nothing (and the error recorded) when it is not one of this machine's.
  const auto target_for = [&](const protocol::ChallengeSpec& spec) -> std::optional<ChallengeTarget> {
    for (const auto& t : targets) {
      if (t.uuid == spec.gpu_uuid) return challenge_target(t, lie);
    }
    out.emplace_back(spec.id, "error: not a GPU of this machine");
    return std::nullopt;
  };
  const auto record = [&](const std::string& id, const core::Result<protocol::ChallengeReply>& r) {
    out.emplace_back(id, r ? r->status : "error: " + r.error().message);
  };
  // GEMMs first, on every GPU at once: each root is timed from the same issue, and a real GPU's takes seconds.
  struct GemmJob {
    const protocol::ChallengeSpec* spec;
    ChallengeTarget target;
    std::unique_ptr<ChallengeSolver> solver;
    std::optional<core::Result<ChallengeSolver::GemmCommit>> commit;
  };
  std::vector<GemmJob> jobs;
  for (const auto& spec : specs) {
    if (spec.kind != protocol::kGemmChallenge) continue;
    auto target = target_for(spec);
    if (!target) continue;
    const auto seed = static_cast<std::uint64_t>(t0.time_since_epoch().count()) + jobs.size() + 1;
    jobs.push_back({&spec, *target, std::make_unique<ChallengeSolver>(lie, seed), std::nullopt});
  }
  {
    std::vector<std::thread> threads;
    for (auto& job : jobs) {
      threads.emplace_back([&job] { job.commit = job.solver->commit_gemm(*job.spec, job.target); });
    }
    for (auto& t : threads) t.join();
  }
  // The roots, each when its GPU would have it (a simulated GPU's time is kSimDilation's), then the openings.
  std::sort(jobs.begin(), jobs.end(), [](const GemmJob& x, const GemmJob& y) {
    return (*x.commit ? (*x.commit)->emulated_s : 0) < (*y.commit ? (*y.commit)->emulated_s : 0);
  });
  std::vector<std::pair<GemmJob*, protocol::ChallengeReply>> pending;
  for (auto& job : jobs) {
    auto& commit = *job.commit;
    if (!commit) {
      out.emplace_back(job.spec->id, "error: " + commit.error().message);
      continue;
    }
    std::this_thread::sleep_until(t0 + std::chrono::duration<double>(commit->emulated_s));
    protocol::ChallengeAnswer a;
    a.machine_id = machine_id;
    a.challenge_id = job.spec->id;
    a.root = commit->root;
    auto picked = post_answer(client, config, a);
    if (!picked || picked->status != "pending") {
      record(job.spec->id, picked);
      continue;
    }
    pending.emplace_back(&job, std::move(*picked));
  }
  for (auto& [job, picked] : pending) {
    auto opened = job->solver->open_gemm(picked.rows);
    if (!opened) {
      out.emplace_back(job->spec->id, "error: " + opened.error().message);
      continue;
    }
    protocol::ChallengeAnswer a;
    a.machine_id = machine_id;
    a.challenge_id = job->spec->id;
    a.opened = std::move(*opened);
    record(job->spec->id, post_answer(client, config, a));
  }
  // Then VRAM, one GPU after another (each fill has minutes).
  ChallengeSolver solver(lie, static_cast<std::uint64_t>(t0.time_since_epoch().count()));
  for (const auto& spec : specs) {
    if (spec.kind != protocol::kVramChallenge) continue;
    const auto target = target_for(spec);
    if (!target) continue;
    protocol::ChallengeAnswer a;
    a.machine_id = machine_id;
    a.challenge_id = spec.id;
    if (auto f = solver.fill(spec, *target); !f) {
      out.emplace_back(spec.id, "error: " + f.error().message);
      continue;
    }
    a.filled = true;
    auto picked = post_answer(client, config, a);
    if (!picked || picked->status != "pending") {
      record(spec.id, picked);
      continue;
    }
    a.filled = false;
    a.digests = solver.digests(picked->slices);
    record(spec.id, post_answer(client, config, a));
  }
  return out;
}

BackgroundBench::BackgroundBench(gpu::GpuBackend& backend, std::mutex& backend_mutex, BenchRunConfig config)
    : backend_(backend), backend_mutex_(backend_mutex), config_(std::move(config)) {}

BackgroundBench::~BackgroundBench() {
  cancel_ = true;
  if (thread_.joinable()) thread_.join();
}

bool BackgroundBench::begin() {
  if (running_.load()) return false;
  if (thread_.joinable()) thread_.join();
  running_ = true;
  return true;
}

bool BackgroundBench::start_spot_check(const protocol::Command& command, const std::vector<protocol::GpuInfo>& gpus,
                                       const std::string& machine_id) {
  if (!begin()) return false;
  thread_ = std::thread([this, specs = command.challenges, gpus, machine_id] {
    util::log_event("info", "spot check started", {{"challenges", specs.size()}});
    const auto targets = gpu_targets(backend_, gpus, backend_mutex_);
    // Under the test-only `bait` lie, the GPU answering now is not the one benchmarked.
    const LieMode lie = config_.lie == LieMode::bait ? LieMode::random : config_.lie;
    for (const auto& [id, outcome] : answer_challenges(specs, targets, machine_id, config_, lie)) {
      util::log_event(outcome == "passed" ? "info" : "warn", "spot check " + outcome, {{"challenge_id", id}});
    }
    running_ = false;
  });
  return true;
}

bool BackgroundBench::start(const protocol::Command& command, const std::vector<protocol::GpuInfo>& gpus,
                            const std::string& machine_id) {
  if (!begin()) return false;
  const std::optional<std::string> run_id = command.run_id;
  thread_ = std::thread([this, gpus, machine_id, run_id] {
    util::log_event("info", "benchmark run started", {{"run_id", run_id.value_or("")}});
    auto targets = gpu_targets(backend_, gpus, backend_mutex_, config_.lie == LieMode::idle);
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
    if (const double factor = figure_factor(config_.lie); factor != 1.0) {
      for (auto& g : report.gpus) {
        for (auto& r : g.results) {
          if (!core::bench::metric_key(r.metric).starts_with("compute.")) continue;
          r.median *= factor;
          for (auto& x : r.samples) x *= factor;
        }
      }
    }
    auto sent = submit_report(report, config_.server_url, config_.api_key, config_.ca_file);
    if (sent) {
      util::log_event("info", "benchmark results accepted", {{"run_id", run_id.value_or("")}, {"server", *sent}});
      const auto specs = sent->is_object() && sent->contains("challenges")
                             ? protocol::parse_challenge_specs((*sent)["challenges"])
                             : std::vector<protocol::ChallengeSpec>{};
      const LieMode lie = config_.lie == LieMode::bait ? LieMode::none : config_.lie;
      for (const auto& [id, outcome] : answer_challenges(specs, targets, machine_id, config_, lie)) {
        util::log_event(outcome == "passed" ? "info" : "warn", "benchmark challenge " + outcome,
                        {{"run_id", run_id.value_or("")}, {"challenge_id", id}});
      }
    } else {
      util::log_event("error", "benchmark results not accepted: " + sent.error().message,
                      {{"run_id", run_id.value_or("")}});
    }
    running_ = false;
  });
  return true;
}

}  // namespace gpunex::agent::bench
