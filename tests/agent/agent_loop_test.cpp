// The agent against a stand-in control plane (the real Beast server on loopback):
// registration, heartbeats, an outage with replay, a restart, a refused key.
#include <gtest/gtest.h>

#include <mutex>
#include <thread>

#include "agent/agent.hpp"
#include "gpu/sim/sim_backend.hpp"
#include "server/http/http.hpp"
#include "test_dir.hpp"
#include "util/log.hpp"

namespace gpunex::agent {
namespace {

using namespace std::chrono_literals;
using testing::TempDir;

//! Records what agents send; can be told to fail heartbeats for a while, or refuse the key.
class FakeServer {
 public:
  FakeServer() {
    http::ServerOptions opts;
    opts.host = "127.0.0.1";
    opts.port = 0;
    opts.threads = 1;
    opts.shutdown_grace = 1s;
    server_ = std::make_unique<http::Server>(opts, [this](http::Request& r) { return handle(r); });
    port_ = server_->start();
  }
  ~FakeServer() { server_->stop(); }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  http::Response handle(http::Request& r) {
    std::lock_guard lock(mu_);
    if (r.header("authorization") != "Bearer gpx_test") {
      return http::Response::error(
          core::Error::make(core::ErrorCode::unauthenticated, "API key revoked").with_code("api_key_revoked"));
    }
    auto body = nlohmann::json::parse(r.body, nullptr, false);
    if (body.is_discarded()) ADD_FAILURE() << "not JSON: " << r.path << " [" << r.body << "]";
    if (r.path == "/v1/agent/register") {
      registers.push_back(body);
      return http::Response::json(200, {{"machine_id", "mch_fake1"}, {"heartbeat_interval_s", 1}});
    }
    if (r.path == "/v1/agent/heartbeat") {
      ++heartbeat_attempts;
      if (std::chrono::steady_clock::now() < fail_until) {
        return http::Response::error(core::ErrorCode::unavailable, "down for maintenance");
      }
      heartbeats.push_back(body);
      return http::Response::json(200, {{"commands", nlohmann::json::array()}});
    }
    return http::Response::error(core::ErrorCode::not_found, "no route");
  }

  std::vector<std::uint64_t> seqs() {
    std::lock_guard lock(mu_);
    std::vector<std::uint64_t> out;
    for (const auto& h : heartbeats) out.push_back(h["seq"].get<std::uint64_t>());
    return out;
  }

  std::mutex mu_;
  std::vector<nlohmann::json> registers;
  std::vector<nlohmann::json> heartbeats;
  int heartbeat_attempts = 0;
  std::chrono::steady_clock::time_point fail_until{};

 private:
  std::unique_ptr<http::Server> server_;
  std::uint16_t port_ = 0;
};

AgentConfig config(const std::string& url, std::uint64_t max_heartbeats) {
  AgentConfig c;
  c.server_url = url;
  c.api_key = "gpx_test";
  c.heartbeat_interval_s = 1;
  c.backoff_initial = 20ms;
  c.backoff_max = 200ms;
  c.request_timeout = 2000ms;
  c.max_heartbeats = max_heartbeats;
  return c;
}

class AgentLoop : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    static bool logging = util::init_logging("error");
    (void)logging;
  }
};

TEST_F(AgentLoop, RegistersThenHeartbeatsWithIncreasingSeq) {
  FakeServer srv;
  TempDir dir;
  auto st = AgentState::open(dir.str());
  ASSERT_TRUE(st);
  gpu::sim::SimBackend backend(*gpu::sim::parse_spec("L40S:2"), st->identity().fingerprint);
  std::atomic<bool> stop{false};
  EXPECT_EQ(run_agent(config(srv.url(), 2), backend, *st, stop), ExitCode::ok);

  ASSERT_EQ(srv.registers.size(), 1u);
  const nlohmann::json reg = srv.registers[0];  // a copy: the vector grows below
  EXPECT_EQ(reg["protocol_version"], protocol::kProtocolVersion);
  EXPECT_EQ(reg["machine_fingerprint"], st->identity().fingerprint);
  EXPECT_EQ(reg["simulated"], true);
  ASSERT_EQ(reg["gpus"].size(), 2u);
  EXPECT_EQ(reg["gpus"][0]["name"], "NVIDIA L40S");
  EXPECT_EQ(reg["gpus"][0]["memory_mib"], 46068);
  EXPECT_TRUE(reg["host"]["cpu_cores"].get<unsigned>() > 0);
  EXPECT_FALSE(reg.contains("machine_id"));

  EXPECT_EQ(srv.seqs(), (std::vector<std::uint64_t>{1, 2}));
  const auto& hb = srv.heartbeats[0];
  EXPECT_EQ(hb["machine_id"], "mch_fake1");
  EXPECT_EQ(hb["protocol_version"], protocol::kProtocolVersion);
  ASSERT_EQ(hb["telemetry"].size(), 2u);
  EXPECT_EQ(hb["telemetry"][0]["uuid"], reg["gpus"][0]["uuid"]);
  EXPECT_TRUE(hb["telemetry"][0]["temperature_c"].is_number());
  EXPECT_TRUE(hb["jobs"].is_array());
  EXPECT_EQ(st->identity().machine_id, "mch_fake1");

  // A restart re-attaches: same fingerprint, the known machine id, seq continues.
  auto st2 = AgentState::open(dir.str());
  ASSERT_TRUE(st2);
  EXPECT_EQ(run_agent(config(srv.url(), 1), backend, *st2, stop), ExitCode::ok);
  ASSERT_EQ(srv.registers.size(), 2u);
  EXPECT_EQ(srv.registers[1]["machine_fingerprint"], reg["machine_fingerprint"]);
  EXPECT_EQ(srv.registers[1]["machine_id"], "mch_fake1");
  EXPECT_EQ(srv.registers[1]["gpus"][1]["uuid"], reg["gpus"][1]["uuid"]);
  EXPECT_EQ(srv.seqs(), (std::vector<std::uint64_t>{1, 2, 3}));
}

TEST_F(AgentLoop, OutageIsSpooledAndReplayedInOrder) {
  FakeServer srv;
  TempDir dir;
  auto st = AgentState::open(dir.str());
  ASSERT_TRUE(st);
  gpu::sim::SimBackend backend(*gpu::sim::parse_spec("L4:1"), st->identity().fingerprint);
  srv.fail_until = std::chrono::steady_clock::now() + 2500ms;  // heartbeats at ~0 s, 1 s, 2 s fail
  std::atomic<bool> stop{false};
  EXPECT_EQ(run_agent(config(srv.url(), 4), backend, *st, stop), ExitCode::ok);
  EXPECT_EQ(srv.seqs(), (std::vector<std::uint64_t>{1, 2, 3, 4}));
  EXPECT_GT(srv.heartbeat_attempts, 4);  // it did retry
}

TEST_F(AgentLoop, SpoolSurvivesARestartDuringAnOutage) {
  TempDir dir;
  std::string url;
  {
    FakeServer srv;
    url = srv.url();
    auto st = AgentState::open(dir.str());
    ASSERT_TRUE(st);
    gpu::sim::SimBackend backend(*gpu::sim::parse_spec("L4:1"), st->identity().fingerprint);
    srv.fail_until = std::chrono::steady_clock::now() + 1h;
    std::atomic<bool> stop{false};
    std::thread stopper([&] {
      std::this_thread::sleep_for(2300ms);
      stop = true;
    });
    EXPECT_EQ(run_agent(config(url, 0), backend, *st, stop), ExitCode::ok);
    stopper.join();
    EXPECT_TRUE(srv.heartbeats.empty());
    EXPECT_GE(st->last_seq(), 2u);
  }
  FakeServer srv;  // the server is back (on another port)
  auto st = AgentState::open(dir.str());
  ASSERT_TRUE(st);
  const std::uint64_t spooled = st->last_seq();
  gpu::sim::SimBackend backend(*gpu::sim::parse_spec("L4:1"), st->identity().fingerprint);
  std::atomic<bool> stop{false};
  EXPECT_EQ(run_agent(config(srv.url(), spooled + 1), backend, *st, stop), ExitCode::ok);
  std::vector<std::uint64_t> want;
  for (std::uint64_t s = 1; s <= spooled + 1; ++s) want.push_back(s);
  EXPECT_EQ(srv.seqs(), want);  // nothing lost, original seqs, in order
}

TEST_F(AgentLoop, RefusedKeyStopsWithoutRetrying) {
  FakeServer srv;
  TempDir dir;
  auto st = AgentState::open(dir.str());
  ASSERT_TRUE(st);
  gpu::sim::SimBackend backend(*gpu::sim::parse_spec("L4:1"), st->identity().fingerprint);
  auto cfg = config(srv.url(), 0);
  cfg.api_key = "gpx_revoked";
  std::atomic<bool> stop{false};
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(run_agent(cfg, backend, *st, stop), ExitCode::key_refused);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  EXPECT_TRUE(srv.registers.empty());
}

TEST_F(AgentLoop, LostGpuIsReportedAsAnEvent) {
  FakeServer srv;
  TempDir dir;
  auto st = AgentState::open(dir.str());
  ASSERT_TRUE(st);
  auto machine =
      gpu::sim::parse_machine_toml("[[gpu]]\nmodel = \"L4\"\n[[gpu]]\nmodel = \"L4\"\noff_bus_after = 1\n", "m");
  ASSERT_TRUE(machine);
  gpu::sim::SimBackend backend(std::move(*machine), st->identity().fingerprint);
  std::atomic<bool> stop{false};
  EXPECT_EQ(run_agent(config(srv.url(), 3), backend, *st, stop), ExitCode::ok);
  ASSERT_EQ(srv.heartbeats.size(), 3u);
  EXPECT_FALSE(srv.heartbeats[0].contains("events"));
  ASSERT_TRUE(srv.heartbeats[1].contains("events"));
  EXPECT_EQ(srv.heartbeats[1]["events"][0]["type"], "gpu_lost");
  EXPECT_TRUE(srv.heartbeats[1]["telemetry"][1].contains("error"));
  EXPECT_FALSE(srv.heartbeats[2].contains("events"));  // reported once
}

}  // namespace
}  // namespace gpunex::agent
