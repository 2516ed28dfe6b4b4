// The agent's benchmark suite: the registry, simulated GPU figures and telemetry,
// real storage benchmarks on a temporary file, and network benchmarks against a
// loopback HTTP server.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <set>

#include "agent/bench/network_bench.hpp"
#include "agent/bench/storage_bench.hpp"
#include "agent/bench/suite.hpp"
#include "core/benchmark_report.hpp"
#include "server/http/http.hpp"

using namespace gpunex;               // NOLINT
using namespace gpunex::agent::bench;  // NOLINT
using core::bench::CaseStatus;
using core::bench::Metric;

namespace {

core::bench::ModelSpec l40s() {
  core::bench::ModelSpec s;
  s.id = "L40S";
  s.vram_gib = 48;
  s.mem_bw_gbs = 864;
  s.fp32_tflops = 91.6;
  s.fp16_tflops = 91.6;
  s.fp16_tensor_tflops = 362.05;
  s.bf16_tensor_tflops = 362.05;
  s.fp8_tensor_tflops = 733;
  s.pcie_gen = 4;
  return s;
}

core::bench::ModelSpec a100() {
  core::bench::ModelSpec s;
  s.id = "A100-SXM";
  s.vram_gib = 80;
  s.mem_bw_gbs = 2039;
  s.fp32_tflops = 19.5;
  s.fp16_tflops = 78;
  s.fp16_tensor_tflops = 312;
  s.bf16_tensor_tflops = 312;
  s.pcie_gen = 4;
  return s;
}

GpuTarget sim_gpu(core::bench::ModelSpec spec, double perf = 1.0, std::uint64_t bits = 0) {
  GpuTarget g;
  g.index = 0;
  g.uuid = "GPU-sim-0";
  g.name = "NVIDIA " + spec.id;
  g.memory_total_gib = spec.vram_gib - 0.5;
  g.compute_capability = spec.fp8_tensor_tflops ? "8.9" : "8.0";
  g.model = std::move(spec);
  g.simulated = true;
  g.sim_perf_factor = perf;
  g.sample = [bits]() -> std::optional<core::bench::TelemetryPoint> {
    core::bench::TelemetryPoint p;
    p.at_ms = 1;
    p.temperature_c = bits != 0 ? 91 : 60;
    p.sm_clock_mhz = 2000;
    p.clock_event_bits = bits;
    return p;
  };
  return g;
}

SuiteOptions gpu_only() {
  SuiteOptions o;
  o.only = {"compute", "memory"};
  return o;
}

const core::bench::CaseResult* find(const std::vector<core::bench::CaseResult>& rs, Metric m) {
  for (const auto& r : rs) {
    if (r.metric == m) return &r;
  }
  return nullptr;
}

}  // namespace

TEST(BenchSuite, RegistryKeysAreUniqueAndDescribed) {
  std::set<std::string_view> keys;
  for (const auto& c : registry()) {
    EXPECT_TRUE(keys.insert(c.key()).second) << c.key();
    EXPECT_FALSE(c.description.empty());
    EXPECT_TRUE(c.filter && c.run);
    const std::set<std::string_view> groups = {"compute", "memory", "host_link", "storage", "network"};
    EXPECT_TRUE(groups.contains(c.group())) << c.key();
  }
  EXPECT_EQ(keys.size(), core::bench::all_metrics().size());
}

TEST(BenchSuite, SimulatedHealthyGpuMatchesItsReference) {
  const std::vector<GpuTarget> gpus = {sim_gpu(l40s())};
  auto rep = run_suite(gpus, gpu_only());
  EXPECT_TRUE(rep.simulated);
  ASSERT_EQ(rep.gpus.size(), 1u);
  EXPECT_TRUE(rep.machine.empty());  // --only compute,memory
  EXPECT_EQ(rep.gpus[0].results.size(), 10u);  // memory brings host_link along
  for (const auto& r : rep.gpus[0].results) {
    ASSERT_EQ(r.status, CaseStatus::ok) << core::bench::metric_key(r.metric) << ": " << r.reason;
    EXPECT_EQ(r.samples.size(), 5u);
    auto e = core::bench::expected_figure(l40s(), r.metric, {});
    EXPECT_NEAR(r.median, *e, *e * 1e-9) << core::bench::metric_key(r.metric);
  }
  auto s = summary_json(rep, gpus);
  EXPECT_EQ(s["evaluation"][0]["pass"], true);
  EXPECT_NEAR(s["evaluation"][0]["quality_ratio"].get<double>(), 1.0, 1e-9);
  // The body the agent would submit passes the server's validation.
  auto body = core::bench::to_json(rep);
  body["machine_id"] = "m_1";
  auto parsed = core::bench::parse_run_report(body.dump());
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  auto spec = l40s();
  EXPECT_TRUE(core::bench::check_plausible(*parsed, {&spec}, {}).ok());
  // Telemetry was sampled during each case and tagged with it.
  ASSERT_FALSE(rep.gpus[0].telemetry.empty());
  EXPECT_EQ(rep.gpus[0].telemetry.front().during, "compute.fp32");
}

TEST(BenchSuite, PerfFactorShowsInFiguresAndVerdict) {
  const std::vector<GpuTarget> gpus = {sim_gpu(l40s(), 0.7)};
  auto rep = run_suite(gpus, gpu_only());
  const auto* t = find(rep.gpus[0].results, Metric::fp16_tensor);
  ASSERT_NE(t, nullptr);
  EXPECT_NEAR(t->median, 362.05 * 0.8 * 0.7, 1e-6);
  EXPECT_NEAR(find(rep.gpus[0].results, Metric::h2d)->median, 31.5 * 0.8, 0.01);  // the slot is not the GPU
  auto s = summary_json(rep, gpus);
  EXPECT_EQ(s["evaluation"][0]["pass"], false);
  EXPECT_EQ(s["evaluation"][0]["failures"][0]["label"], "FP16 tensor throughput");
  EXPECT_NEAR(s["evaluation"][0]["failures"][0]["ratio"].get<double>(), 0.7, 1e-6);
  auto table = format_table(rep, gpus);
  EXPECT_NE(table.find("FAIL"), std::string::npos) << table;
  EXPECT_NE(table.find("FP16 tensor throughput"), std::string::npos) << table;
  EXPECT_NE(table.find("SIMULATED"), std::string::npos) << table;
}

TEST(BenchSuite, ThermalFaultShowsInTelemetryAndRecommendsCooling) {
  auto g = sim_gpu(l40s(), 1.0, 0x20 | 0x40);
  g.sim_compute_derate = 0.6;
  const std::vector<GpuTarget> gpus = {g};
  auto rep = run_suite(gpus, gpu_only());
  auto tel = core::bench::fold_telemetry(rep.gpus[0]);
  EXPECT_EQ(tel.clock_event_bits, 0x60u);
  EXPECT_NEAR(find(rep.gpus[0].results, Metric::mem_copy)->median, 864 * 0.88, 1e-6);  // memory not derated
  auto s = summary_json(rep, gpus);
  ASSERT_EQ(s["evaluation"][0]["pass"], false);
  EXPECT_EQ(s["evaluation"][0]["failures"][0]["cause"], "thermal_throttling");
  EXPECT_NE(s["evaluation"][0]["failures"][0]["recommendation"].get<std::string>().find("cooling"),
            std::string::npos);
}

TEST(BenchSuite, Fp8WaivedWhereTheGpuHasNone) {
  const std::vector<GpuTarget> gpus = {sim_gpu(a100())};
  auto rep = run_suite(gpus, gpu_only());
  const auto* r = find(rep.gpus[0].results, Metric::fp8_tensor);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->status, CaseStatus::waived);
  EXPECT_NE(r->reason.find("compute capability 8.9"), std::string::npos) << r->reason;
  auto table = format_table(rep, gpus);
  EXPECT_NE(table.find("WAIVED"), std::string::npos);
}

TEST(BenchSuite, RealGpuWithoutCudaIsWaived) {
  GpuTarget g;
  g.uuid = "GPU-real";
  g.name = "NVIDIA L40S";
  g.model = l40s();
  g.cuda_ordinal = -1;
  SuiteOptions o;
  o.only = {"compute.fp32"};
  auto rep = run_suite({g}, o);
  ASSERT_EQ(rep.gpus[0].results.size(), 1u);
  const auto& r = rep.gpus[0].results[0];
  EXPECT_EQ(r.status, CaseStatus::waived);
  if (compiled_with_cuda()) {
    EXPECT_NE(r.reason.find("no CUDA device"), std::string::npos) << r.reason;
  } else {
    EXPECT_NE(r.reason.find("compiled without CUDA"), std::string::npos) << r.reason;
  }
  EXPECT_FALSE(rep.simulated);
}

TEST(BenchSuite, NetworkWaivedWithoutServer) {
  SuiteOptions o;
  o.only = {"network"};
  auto rep = run_suite({}, o);
  ASSERT_EQ(rep.machine.size(), 4u);
  for (const auto& r : rep.machine) {
    EXPECT_EQ(r.status, CaseStatus::waived);
    EXPECT_NE(r.reason.find("--server"), std::string::npos);
  }
}

namespace {

std::filesystem::path bench_dir() {
  // Under the build tree, not /tmp: tmpfs has no O_DIRECT. One folder per test and process,
  // since ctest runs the tests of this binary in parallel processes, and the clock guard
  // (scripts/moved-clock.sh) runs the whole binary beside them.
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  auto d = std::filesystem::current_path() / "agent-bench-test" / (std::string(info->test_suite_name()) + "." + info->name() + "." + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d;
}

bool no_leftovers(const std::filesystem::path& d) {
  for (const auto& e : std::filesystem::directory_iterator(d)) {
    if (e.path().filename().string().starts_with(".gpunex-bench")) return false;
  }
  return true;
}

}  // namespace

TEST(BenchStorage, MeasuresAndRemovesTheFile) {
  StorageOptions o;
  o.dir = bench_dir().string();
  o.file_bytes = 32ull << 20;
  o.passes = 2;
  o.rand_threads = 2;
  o.rand_samples = 2;
  o.rand_sample = std::chrono::milliseconds(150);
  auto r = run_storage(o);
  if (!r.ok() && r.error().code == core::ErrorCode::unprocessable) GTEST_SKIP() << r.error().message;
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->file_bytes, 32ull << 20);
  ASSERT_EQ(r->seq_write_mbs.size(), 2u);
  ASSERT_EQ(r->seq_read_mbs.size(), 2u);
  ASSERT_EQ(r->rand_read_iops.size(), 2u);
  for (double v : r->seq_write_mbs) EXPECT_GT(v, 1.0);
  for (double v : r->seq_read_mbs) EXPECT_GT(v, 1.0);
  for (double v : r->rand_read_iops) EXPECT_GT(v, 10.0);
  EXPECT_TRUE(no_leftovers(o.dir));
}

TEST(BenchStorage, MissingFolderIsAnError) {
  StorageOptions o;
  o.dir = "/nonexistent/gpunex";
  auto r = run_storage(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("/nonexistent/gpunex"), std::string::npos);
}

TEST(BenchStorage, SuiteRunsStorageOnceForThreeCases) {
  SuiteOptions o;
  o.only = {"storage"};
  o.storage.dir = bench_dir().string();
  o.storage.file_bytes = 16ull << 20;
  o.storage.passes = 1;
  o.storage.rand_samples = 1;
  o.storage.rand_sample = std::chrono::milliseconds(100);
  auto rep = run_suite({}, o);
  ASSERT_EQ(rep.machine.size(), 3u);
  for (const auto& r : rep.machine) {
    if (r.status == CaseStatus::failed && r.reason.find("O_DIRECT") != std::string::npos) GTEST_SKIP() << r.reason;
    EXPECT_EQ(r.status, CaseStatus::ok) << r.reason;
  }
  EXPECT_TRUE(no_leftovers(o.storage.dir));
}

namespace {

//! A loopback server with the three benchmark endpoints, checking a Bearer key.
class NetServer {
 public:
  NetServer() {
    router_.add(http::Method::get, "/v1/bench/net/ping", [this](http::Request& r) { return guard(r, ping); });
    router_.add(http::Method::get, "/v1/bench/net/download", [this](http::Request& r) { return guard(r, download); });
    // As gpunex-server: uploads are counted as they stream in, up to 16 MiB (over the 1 MiB body limit).
    router_.add(
        http::Method::post, "/v1/bench/net/upload", [this](http::Request& r) { return guard(r, upload); }, 16ull << 20);
    http::ServerOptions so;
    so.port = 0;
    so.threads = 2;
    so.body_plan = [this](const http::Request& head) {
      return http::BodyPlan{router_.match(head).counted_body_limit, std::nullopt, std::nullopt};
    };
    server_ = std::make_unique<http::Server>(so, [this](http::Request& r) {
      auto m = router_.match(r);
      if (m.kind != http::Router::MatchKind::found) return http::Response::error(core::ErrorCode::not_found, "no");
      r.params = m.params;
      return (*m.handler)(r);
    });
    port_ = server_->start();
  }
  ~NetServer() { server_->stop(); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::atomic<std::uint64_t> uploaded{0};
  std::atomic<int> uploads{0};
  std::atomic<int> requests{0};

 private:
  http::Response guard(http::Request& r, http::Response (*h)(NetServer&, http::Request&)) {
    ++requests;
    if (r.header("authorization") != "Bearer k1") return http::Response::error(core::ErrorCode::unauthenticated, "key");
    return h(*this, r);
  }
  static http::Response ping(NetServer&, http::Request&) { return http::Response::json(200, {{"ok", true}}); }
  static http::Response download(NetServer&, http::Request& r) {
    http::Response resp;
    resp.content_type = "application/octet-stream";
    resp.body.assign(std::stoull(r.query_param("bytes").value_or("0")), 'z');
    return resp;
  }
  static http::Response upload(NetServer& s, http::Request& r) {
    s.uploaded += r.body_length;
    ++s.uploads;
    return http::Response::json(200, {{"bytes", r.body_length}});
  }
  http::Router router_;
  std::unique_ptr<http::Server> server_;
  std::uint16_t port_ = 0;
};

}  // namespace

TEST(BenchNetwork, LatencyDownloadUploadAgainstLoopback) {
  NetServer srv;
  NetworkOptions o;
  o.server_url = srv.url();
  o.api_key = "k1";
  o.pings = 20;
  o.download_bytes = 4ull << 20;
  o.request_bytes = 1ull << 20;
  o.upload_bytes = 2ull << 20;
  o.upload_chunk = 256ull << 10;
  o.samples = 2;
  auto lat = measure_latency(o);
  ASSERT_TRUE(lat.ok()) << lat.error().message;
  EXPECT_EQ(lat->size(), 20u);
  for (double ms : *lat) EXPECT_GT(ms, 0.0);
  auto down = measure_download(o);
  ASSERT_TRUE(down.ok()) << down.error().message;
  ASSERT_EQ(down->size(), 2u);
  EXPECT_GT((*down)[0], 1.0);
  auto up = measure_upload(o);
  ASSERT_TRUE(up.ok()) << up.error().message;
  ASSERT_EQ(up->size(), 2u);
  EXPECT_EQ(srv.uploaded.load(), 2 * (2ull << 20));  // bounded in bytes: exactly what was asked
}

TEST(BenchNetwork, UploadsGoInRequestsOfUpToSixteenMiB) {
  NetServer srv;
  NetworkOptions o;
  o.server_url = srv.url();
  o.api_key = "k1";
  o.upload_bytes = 20ull << 20;  // one full request and a 4 MiB remainder, both over the 1 MiB body limit
  o.samples = 1;
  auto up = measure_upload(o);
  ASSERT_TRUE(up.ok()) << up.error().message;
  EXPECT_EQ(srv.uploaded.load(), 20ull << 20);
  EXPECT_EQ(srv.uploads.load(), 2);
}

TEST(BenchNetwork, DownloadCountsExactlyWhatWasAsked) {
  NetServer srv;
  NetworkOptions o;
  o.server_url = srv.url();
  o.api_key = "k1";
  o.download_bytes = (3ull << 20) + 5;  // not a whole number of requests
  o.request_bytes = 1ull << 20;
  o.samples = 1;
  auto down = measure_download(o);
  ASSERT_TRUE(down.ok()) << down.error().message;
  EXPECT_EQ(srv.requests.load(), 1 + 4);  // the warm-up, then 1 + 1 + 1 MiB and 5 bytes
}

TEST(BenchNetwork, WrongKeyIsAnErrorNamingTheStatus) {
  NetServer srv;
  NetworkOptions o;
  o.server_url = srv.url();
  o.api_key = "wrong";
  auto lat = measure_latency(o);
  ASSERT_FALSE(lat.ok());
  EXPECT_NE(lat.error().message.find("HTTP 401"), std::string::npos) << lat.error().message;
  EXPECT_EQ(srv.requests.load(), 1);  // gave up at once
}

TEST(BenchNetwork, BoundedInTime) {
  NetServer srv;
  NetworkOptions o;
  o.server_url = srv.url();
  o.api_key = "k1";
  o.download_bytes = 1ull << 40;  // far more than can arrive in the time allowed
  o.request_bytes = 1ull << 20;
  o.samples = 2;
  o.max_time_per_case = std::chrono::milliseconds(300);
  const auto t0 = std::chrono::steady_clock::now();
  auto down = measure_download(o);
  ASSERT_TRUE(down.ok()) << down.error().message;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
}

TEST(BenchNetwork, SuiteReportsP50AndP99) {
  NetServer srv;
  SuiteOptions o;
  o.only = {"network.latency_p50", "network.latency_p99"};
  o.network.server_url = srv.url();
  o.network.api_key = "k1";
  o.network.pings = 30;
  auto rep = run_suite({}, o);
  ASSERT_EQ(rep.machine.size(), 2u);
  ASSERT_EQ(rep.machine[0].status, CaseStatus::ok) << rep.machine[0].reason;
  EXPECT_EQ(rep.machine[0].samples.size(), 30u);  // measured once, reduced twice
  EXPECT_LE(rep.machine[0].median, rep.machine[1].median);
  EXPECT_EQ(srv.requests.load(), 31);
}

// A stopping agent waits for the case in progress only: the rest are FAILED "cancelled"
// without running (and the runner submits nothing).
TEST(BenchSuite, CancelStopsAfterTheCurrentCase) {
  std::atomic<bool> cancel{false};
  SuiteOptions o = gpu_only();
  o.cancel = &cancel;
  std::vector<std::string> reported;
  auto rep = run_suite({sim_gpu(l40s())}, o, [&](const std::string& line) {
    reported.push_back(line);
    cancel = true;  // the agent got SIGTERM during the first case
  });
  ASSERT_EQ(rep.gpus.size(), 1u);
  ASSERT_EQ(rep.gpus[0].results.size(), 10u);
  EXPECT_EQ(rep.gpus[0].results[0].status, CaseStatus::ok);
  for (std::size_t i = 1; i < rep.gpus[0].results.size(); ++i) {
    EXPECT_EQ(rep.gpus[0].results[i].status, CaseStatus::failed);
    EXPECT_NE(rep.gpus[0].results[i].reason.find("cancelled"), std::string::npos);
  }
  EXPECT_EQ(reported.size(), 1u);
}
