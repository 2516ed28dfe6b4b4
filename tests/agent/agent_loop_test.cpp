// The agent against a stand-in control plane (the real Beast server on loopback):
// registration, heartbeats, an outage with replay, a restart, a refused key, and rentals: the long
// poll, and the rental events sent through the spool at once.
#include <gtest/gtest.h>

#include <mutex>
#include <thread>

#include "agent/agent.hpp"
#include "gpu/sim/sim_backend.hpp"
#include "rental_test_support.hpp"
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
    if (r.path == protocol::kAgentRentalsPath) {
      ++rental_polls;
      poll_query = r.query;
      return http::Response::json(200, rentals.to_json());
    }
    auto body = nlohmann::json::parse(r.body, nullptr, false);
    if (body.is_discarded()) ADD_FAILURE() << "not JSON: " << r.path << " [" << r.body << "]";
    if (r.path == protocol::kRentalEventsPath) {
      auto req = protocol::parse_rental_events(body);
      if (!req) {
        ADD_FAILURE() << "not a rental events request: " << req.error().message << " " << r.body;
        return http::Response::error(std::move(req).error());
      }
      event_seqs.push_back(static_cast<std::uint64_t>(req->seq));
      EXPECT_EQ(req->machine_id, "mch_fake1");
      for (auto& e : req->events) events.add(std::move(e), false);
      return http::Response::json(200, {{"applied", 1}});
    }
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

  //! Waits until `done` (called under the lock) holds, checking every 10 ms; false at the timeout.
  template <class Pred>
  bool wait_until(Pred done, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      {
        std::lock_guard lock(mu_);
        if (done()) return true;
      }
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(10ms);
    }
  }

  std::vector<std::uint64_t> seqs() {
    std::lock_guard lock(mu_);
    std::vector<std::uint64_t> out;
    for (const auto& h : heartbeats) out.push_back(h["seq"].get<std::uint64_t>());
    return out;
  }

  //! Sets the rentals the next polls are answered with.
  void set_rentals(std::vector<protocol::AssignedRental> list) {
    std::lock_guard lock(mu_);
    rentals = testing::answer(std::move(list));
  }

  std::mutex mu_;
  protocol::AgentRentals rentals = testing::answer({});
  int rental_polls = 0;
  std::map<std::string, std::string, std::less<>> poll_query;
  std::vector<std::uint64_t> event_seqs;
  testing::EventLog events;
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
  c.rentals.docker_host = "unix:///nonexistent/gpunex-agent-test/docker.sock";  // never a real engine by accident
  return c;
}

class AgentLoop : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { testing::quiet_logging(); }
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

// ---- rentals ----

using core::rental::State;
using protocol::RentalEventType;

TEST_F(AgentLoop, WithNoContainerEngineRentalsEndAsHostFailuresAtOnceAndHeartbeatsGoOn) {
  FakeServer srv;
  srv.set_rentals({testing::rental("rnt_1", State::requested, {"true"})});
  TempDir dir;
  auto st = AgentState::open(dir.str());
  ASSERT_TRUE(st);
  gpu::sim::SimBackend backend(*gpu::sim::parse_spec("L4:1"), st->identity().fingerprint);
  auto cfg = config(srv.url(), 0);
  cfg.heartbeat_interval_s = 30;  // the event must not wait for the next heartbeat
  std::atomic<bool> stop{false};
  ExitCode rc = ExitCode::failure;
  const auto t0 = std::chrono::steady_clock::now();
  std::thread agent([&] { rc = run_agent(cfg, backend, *st, stop); });
  auto ended = srv.events.wait_for("rnt_1", RentalEventType::ended, 10s);
  const auto took = std::chrono::steady_clock::now() - t0;
  // The next poll carries the answer's version; it races the event (sent by the Runner, not the poll
  // thread), so it is waited for rather than assumed to have come first.
  const bool sent_back = srv.wait_until([&] { return srv.poll_query["known"] == srv.rentals.version; }, 5s);
  stop = true;
  agent.join();
  EXPECT_EQ(rc, ExitCode::ok);
  ASSERT_TRUE(ended.has_value());
  EXPECT_LT(took, 5s);
  EXPECT_EQ(ended->reason, core::rental::EndReason::host_failure);
  ASSERT_TRUE(ended->error.has_value());
  EXPECT_NE(ended->error->find("no container engine on this machine (DOCKER_HOST=unix:///nonexistent/"),
            std::string::npos)
      << *ended->error;
  std::vector<std::uint64_t> all = srv.seqs();
  std::lock_guard lock(srv.mu_);
  EXPECT_EQ(srv.events.types("rnt_1"), "ended");
  EXPECT_GE(srv.heartbeats.size(), 1u) << "the agent heartbeats without an engine";
  EXPECT_EQ(srv.poll_query["machine_id"], "mch_fake1");
  EXPECT_EQ(srv.poll_query["wait_s"], "25");
  EXPECT_TRUE(sent_back) << "the version of the last answer is sent back; last poll's known: "
                         << srv.poll_query["known"];
  // One sequence for heartbeats and rental events: every seq once.
  all.insert(all.end(), srv.event_seqs.begin(), srv.event_seqs.end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end());
}

TEST_F(AgentLoop, ARentalStartsThroughThePollAndStopsWhenTheServerSaysSo) {
  const std::string host = testing::test_docker_host();
  if (host.empty()) {
    if (std::getenv("CI") != nullptr) FAIL() << "GPUNEX_TEST_DOCKER_HOST not set on CI: make test starts Podman";
    GTEST_SKIP() << "GPUNEX_TEST_DOCKER_HOST not set (make test starts Podman's service and sets it)";
  }
  auto real = runtime::make_docker_runtime(host);
  const std::string prefix = testing::test_prefix() + "loop_";
  testing::PrefixedRuntime engine(*real, prefix);
  const std::string id = prefix + "r1";
  const std::vector<std::string> cmd = {"sh", "-c", "echo from-the-rental; exec sleep 300"};

  TempDir dir;
  auto st = AgentState::open(dir.str());
  ASSERT_TRUE(st);
  gpu::sim::SimBackend backend(*gpu::sim::parse_spec("L4:1"), st->identity().fingerprint);
  auto gpus = backend.list_gpus();
  ASSERT_TRUE(gpus);
  auto r = testing::rental(id, State::requested, cmd, {8080});
  r.gpu_uuids = {(*gpus)[0].uuid};
  FakeServer srv;
  srv.set_rentals({r});
  auto cfg = config(srv.url(), 0);
  cfg.heartbeat_interval_s = 30;
  cfg.container_runtime = &engine;
  cfg.rentals.public_ports = {41200, 41219};
  cfg.rentals.stop_grace = std::chrono::seconds(1);
  cfg.rentals.watch_interval = 200ms;
  cfg.rentals.logs_interval = 300ms;
  std::atomic<bool> stop{false};
  std::thread agent([&] { (void)run_agent(cfg, backend, *st, stop); });

  auto running = srv.events.wait_for(id, RentalEventType::running, 20s);
  EXPECT_TRUE(running.has_value()) << srv.events.types(id);
  if (running) {
    ASSERT_EQ(running->ports.size(), 1u);
    EXPECT_EQ(running->ports[0].container_port, 8080);
    EXPECT_GE(running->ports[0].host_port, 41200);
    auto logs = srv.events.wait_for(id, RentalEventType::logs, 10s);
    ASSERT_TRUE(logs.has_value());
    EXPECT_NE(logs->logs->find("from-the-rental"), std::string::npos);
  }
  r.state = State::stopping;
  srv.set_rentals({r});
  auto ended = srv.events.wait_for(id, RentalEventType::ended, 20s);
  stop = true;
  agent.join();
  ASSERT_TRUE(ended.has_value()) << srv.events.types(id);
  EXPECT_EQ(ended->reason, std::nullopt);
  EXPECT_EQ(srv.events.types(id), "starting running ended");
  auto left = engine.list_rental_containers();
  ASSERT_TRUE(left.ok());
  EXPECT_TRUE(left->empty()) << "stopped and removed";
  for (const auto& c : *left) (void)real->stop_and_remove(c.id, std::chrono::seconds(0));
}

}  // namespace
}  // namespace gpunex::agent
