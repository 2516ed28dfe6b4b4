// The agent's RentalManager: the server's desired rentals kept on a real engine (Podman's Docker API
// service, GPUNEX_TEST_DOCKER_HOST): start with ports, stop, exit codes, OOM, a start that fails,
// an agent restart that adopts without duplicating and removes leftovers, a repeated answer.
#include "agent/rentals.hpp"

#include <gtest/gtest.h>

#include <thread>

#include "guard_rules.hpp"
#include "rental_test_support.hpp"

namespace gpunex::agent {
namespace {

using namespace std::chrono_literals;
using core::rental::EndReason;
using core::rental::State;
using protocol::RentalEventType;
using runtime::ContainerState;
using testing::answer;
using testing::EventLog;
using testing::guard_rules;
using testing::rental;

// ---- pure parts ----

TEST(PortRange, ParsesLoHiAndNamesWhatIsWrong) {
  auto r = parse_port_range("40000-40999");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->lo, 40000);
  EXPECT_EQ(r->hi, 40999);
  EXPECT_TRUE(parse_port_range("8080-8080").ok());
  for (const char* bad : {"", "40000", "40000-", "-40999", "2-1", "0-10", "1-65536", "a-b", "1-2-3", "10 - 20"}) {
    auto e = parse_port_range(bad);
    EXPECT_FALSE(e.ok()) << bad;
    if (!e.ok()) {
      EXPECT_NE(e.error().message.find("LO-HI"), std::string::npos);
    }
  }
}

TEST(ResourceShare, InProportionToTheGpusRented) {
  const std::int64_t ram = 100LL << 30;
  const auto half = resource_share(2, 4, ram, 32);
  EXPECT_EQ(half.memory_bytes, static_cast<std::int64_t>(static_cast<double>(ram) * 0.9 * 0.5));
  EXPECT_EQ(half.nano_cpus, 16'000'000'000);
  const auto all = resource_share(8, 8, ram, 16);
  EXPECT_EQ(all.memory_bytes, static_cast<std::int64_t>(static_cast<double>(ram) * 0.9));
  EXPECT_EQ(all.nano_cpus, 16'000'000'000);
  EXPECT_EQ(resource_share(1, 0, ram, 16).memory_bytes, 0) << "no GPU count: no limit";
  EXPECT_EQ(resource_share(3, 2, ram, 16).nano_cpus, 16'000'000'000) << "never more than the machine";
}

TEST(LogTail, KeepsTheEndCutAtALineAndValidUtf8) {
  EXPECT_EQ(log_tail("short\n", 100), "short\n");
  EXPECT_EQ(log_tail("first line\nsecond\nthird\n", 15), "second\nthird\n") << "the partial line is dropped";
  EXPECT_EQ(log_tail("one endless line", 8), "ess line") << "no line start in reach: cut anywhere";
  // A cut inside a character moves past it; invalid bytes become U+FFFD.
  EXPECT_EQ(log_tail("ab\xC3\xA9z", 2), "z");
  EXPECT_EQ(log_tail("ok \xFF\xC3(", 100), "ok \xEF\xBF\xBD\xEF\xBF\xBD(");
  EXPECT_EQ(log_tail("\xED\xA0\x80", 100), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD") << "no surrogates";
  const std::string big(3 * protocol::kMaxLogBytes, 'x');
  EXPECT_LE(log_tail(big, protocol::kMaxLogBytes).size(), protocol::kMaxLogBytes);
}

TEST(NoEngine, EveryRentalEndsAsAHostFailureNamingTheSocket) {
  testing::quiet_logging();
  auto engine = runtime::make_docker_runtime("unix:///nonexistent/gpunex-test/docker.sock");
  EventLog events;
  RentalManagerOptions o;
  o.docker_host = "unix:///nonexistent/gpunex-test/docker.sock";
  o.watch_interval = 100ms;
  auto guard = runtime::make_no_guard();
  RentalManager m(*engine, *guard, o, events.sink());
  const auto want = answer({rental("rnt_a", State::requested, {"true"}), rental("rnt_b", State::stopping, {"true"})});
  m.apply(want);
  m.apply(want);
  std::this_thread::sleep_for(300ms);  // a few watcher passes: still nothing more
  const auto a = events.of("rnt_a");
  ASSERT_EQ(a.size(), 1u) << events.types("rnt_a");
  EXPECT_EQ(a[0].type, RentalEventType::ended);
  EXPECT_EQ(a[0].reason, EndReason::host_failure) << "the provider's side: its machine cannot run containers";
  ASSERT_TRUE(a[0].error.has_value());
  EXPECT_NE(a[0].error->find("no container engine on this machine (DOCKER_HOST=unix:///nonexistent/gpunex-test/"
                             "docker.sock)"),
            std::string::npos)
      << *a[0].error;
  EXPECT_EQ(events.types("rnt_b"), "ended") << "with no engine nothing of it runs: the stop is done";
  EXPECT_EQ(events.of("rnt_b")[0].reason, std::nullopt);
  EXPECT_EQ(m.engine_up(), false);
  ASSERT_TRUE(m.blocked().has_value()) << "the server is told: it offers none of this machine's GPUs";
  EXPECT_NE(m.blocked()->find("no container engine answers (DOCKER_HOST=unix:///nonexistent/gpunex-test/docker.sock)"),
            std::string::npos)
      << *m.blocked();
}

// ---- on a real engine ----

class Rentals : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { testing::quiet_logging(); }
  void SetUp() override {
    host_ = testing::test_docker_host();
    if (host_.empty()) {
      if (std::getenv("CI") != nullptr) FAIL() << "GPUNEX_TEST_DOCKER_HOST not set on CI: make test starts Podman";
      GTEST_SKIP() << "GPUNEX_TEST_DOCKER_HOST not set (make test starts Podman's service and sets it)";
    }
    real_ = runtime::make_docker_runtime(host_);
    prefix_ = testing::test_prefix() + ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_";
    prefix_.resize(std::min<std::size_t>(prefix_.size(), 40));
    engine_ = std::make_unique<testing::PrefixedRuntime>(*real_, prefix_);
    guard_ = runtime::make_iptables_guard();
  }
  void TearDown() override {
    if (!engine_) return;
    auto mine = engine_->list_rental_containers();
    if (!mine) return;
    for (const auto& c : *mine) {
      (void)real_->stop_and_remove(c.id, 0s);
      (void)guard_->unfence(c.rental_id);
    }
  }

  //! Options for a test: its own public port range (tests run in parallel), fast watching.
  RentalManagerOptions options(int port_base) const {
    RentalManagerOptions o;
    o.machine_gpus = {"GPU-test-0", "GPU-test-1"};
    o.host_ram_bytes = 8LL << 30;
    o.cpu_cores = 2;
    o.public_ports = {port_base, port_base + 19};
    o.simulated_gpus = true;
    o.docker_host = host_;
    o.stop_grace = 2s;
    o.watch_interval = 200ms;
    o.logs_interval = 300ms;
    o.guard_interval = 300ms;
    return o;
  }

  //! A rental container made on the engine directly (no agent, so no machine label), running.
  void start_bare(const std::string& rental) {
    runtime::ContainerSpec s;
    s.rental_id = rental;
    s.image = testing::kTestImage;
    s.command = {"sleep", "300"};
    auto made = real_->create(s);
    ASSERT_TRUE(made.ok()) << made.error().message;
    ASSERT_TRUE(real_->start(*made).ok());
  }

  std::vector<ContainerState> containers_of(const std::string& id) {
    std::vector<ContainerState> out;
    auto all = engine_->list_rental_containers();
    EXPECT_TRUE(all.ok());
    if (!all) return out;
    for (const auto& c : *all) {
      if (c.rental_id == id) out.push_back(c);
    }
    return out;
  }

  //! Waits until `done` holds (checked every 100 ms), for up to `timeout`.
  template <class F>
  bool eventually(F done, std::chrono::milliseconds timeout = 20s) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      if (done()) return true;
      std::this_thread::sleep_for(100ms);
    }
    return done();
  }

  std::string host_;
  std::unique_ptr<runtime::ContainerRuntime> real_;
  std::unique_ptr<testing::PrefixedRuntime> engine_;
  std::unique_ptr<runtime::NetworkGuard> guard_;  // the real one: make test runs as root
  std::string prefix_;
};

TEST_F(Rentals, StartsWithPortsOnceThenStopsOnRequest) {
  EventLog events;
  RentalManager m(*engine_, *guard_, options(41000), events.sink());
  const std::string id = prefix_ + "web";
  const std::vector<std::string> cmd = {
      "sh", "-c", "trap 'echo bye; exit 0' TERM; echo hello-rental; while true; do sleep 1; done"};
  const auto want = answer({rental(id, State::requested, cmd, {8080, 9090})});
  m.apply(want);
  m.apply(want);  // the same answer again: nothing new

  auto running = events.wait_for(id, RentalEventType::running);
  ASSERT_TRUE(running.has_value()) << events.types(id);
  EXPECT_EQ(events.types(id), "starting running");
  ASSERT_EQ(running->ports.size(), 2u);
  EXPECT_EQ(running->ports[0].container_port, 8080);
  EXPECT_EQ(running->ports[1].container_port, 9090);
  for (const auto& p : running->ports) {
    EXPECT_GE(p.host_port, 41000);
    EXPECT_LE(p.host_port, 41019);
  }
  EXPECT_NE(running->ports[0].host_port, running->ports[1].host_port);
  auto here = containers_of(id);
  ASSERT_EQ(here.size(), 1u);
  EXPECT_EQ(here[0].status, ContainerState::Status::running);
  EXPECT_EQ(here[0].rental_id, id) << "found by the rental label";
  auto inspected = real_->inspect(here[0].id);
  ASSERT_TRUE(inspected.ok());
  ASSERT_EQ(inspected->ports.size(), 2u) << "the ports are really bound";

  const std::string comment = runtime::fence_comment(id);
  EXPECT_NE(guard_rules().find(comment), std::string::npos) << "its network is fenced:\n" << guard_rules();
  // A firewall reload takes its rules away: the next guard pass puts them back.
  ASSERT_TRUE(guard_->unfence(id).ok());
  EXPECT_TRUE(eventually([&] { return guard_rules().find(comment) != std::string::npos; }, 5s))
      << "fenced again by the guard pass:\n"
      << guard_rules();

  m.apply(answer({rental(id, State::running, cmd, {8080, 9090})}));
  auto logs = events.wait_for(id, RentalEventType::logs);
  ASSERT_TRUE(logs.has_value());
  EXPECT_NE(logs->logs->find("hello-rental"), std::string::npos) << *logs->logs;

  m.apply(answer({rental(id, State::stopping, cmd, {8080, 9090})}));
  auto ended = events.wait_for(id, RentalEventType::ended);
  ASSERT_TRUE(ended.has_value()) << events.types(id);
  EXPECT_EQ(ended->reason, std::nullopt) << "the server knows why it stopped";
  EXPECT_EQ(ended->exit_code, 0) << "SIGTERM first: its trap ran";
  EXPECT_EQ(events.types(id), "starting running ended");
  EXPECT_TRUE(containers_of(id).empty());
  EXPECT_EQ(guard_rules().find(comment), std::string::npos) << "its rules went with its network";
  EXPECT_TRUE(events.only_logs_droppable());
  EXPECT_EQ(m.busy(), 0u);
  EXPECT_EQ(m.blocked(), std::nullopt) << "an engine and a guard: rentals can run";
}

TEST_F(Rentals, AnExitIsReportedWithItsCodeAndLastOutput) {
  EventLog events;
  RentalManager m(*engine_, *guard_, options(41020), events.sink());
  const std::string id = prefix_ + "exit3";
  m.apply(answer({rental(id, State::requested, {"sh", "-c", "echo last-words; sleep 1; exit 3"})}));
  auto ended = events.wait_for(id, RentalEventType::ended);
  ASSERT_TRUE(ended.has_value()) << events.types(id);
  EXPECT_EQ(ended->reason, EndReason::container_exited);
  EXPECT_EQ(ended->exit_code, 3);
  EXPECT_FALSE(ended->oom);
  auto logs = events.wait_for(id, RentalEventType::logs, 0ms);
  ASSERT_TRUE(logs.has_value()) << "the output before the exit is sent";
  EXPECT_NE(logs->logs->find("last-words"), std::string::npos);
  EXPECT_TRUE(eventually([&] { return containers_of(id).empty(); }, 5s)) << "an exited container is removed";
}

TEST_F(Rentals, GoingOverTheMemoryLimitEndsAsOom) {
  EventLog events;
  auto o = options(41040);
  o.memory_bytes_override = 32LL << 20;
  RentalManager m(*engine_, *guard_, o, events.sink());
  const std::string id = prefix_ + "oom";
  m.apply(answer({rental(id, State::requested, {"sh", "-c", "exec tail /dev/zero"})}));
  auto ended = events.wait_for(id, RentalEventType::ended);
  ASSERT_TRUE(ended.has_value()) << events.types(id);
  EXPECT_EQ(ended->reason, EndReason::container_exited);
  EXPECT_TRUE(ended->oom);
  EXPECT_EQ(ended->exit_code, 137);
}

TEST_F(Rentals, AnImageThatDoesNotExistFailsToStartAndLeavesNothing) {
  EventLog events;
  RentalManager m(*engine_, *guard_, options(41060), events.sink());
  const std::string id = prefix_ + "noimage";
  auto r = rental(id, State::requested, {"true"}, {8080});
  r.spec.image = "localhost/gpunex-no-such-image:1";
  m.apply(answer({r}));
  auto ended = events.wait_for(id, RentalEventType::ended);
  ASSERT_TRUE(ended.has_value()) << events.types(id);
  EXPECT_EQ(events.types(id), "starting ended");
  EXPECT_EQ(ended->reason, EndReason::start_failed);
  ASSERT_TRUE(ended->error.has_value());
  EXPECT_NE(ended->error->find("gpunex-no-such-image"), std::string::npos) << *ended->error;
  EXPECT_TRUE(containers_of(id).empty());
  m.apply(answer({r}));  // the server has not taken the event yet: the rental is not tried again
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(events.types(id), "starting ended");
}

TEST_F(Rentals, ACreateTheEngineRefusesFailsToStartAndLeavesNothing) {
  EventLog events;
  RentalManager m(*engine_, *guard_, options(41080), events.sink());
  const std::string id = prefix_ + "badcmd";
  m.apply(answer({rental(id, State::requested, {"/no/such/program"})}));
  auto ended = events.wait_for(id, RentalEventType::ended);
  ASSERT_TRUE(ended.has_value()) << events.types(id);
  // Podman refuses at start ("executable file not found"); either way the customer gets its words.
  EXPECT_TRUE(ended->reason == EndReason::start_failed || ended->reason == EndReason::container_exited)
      << core::rental::to_string(*ended->reason);
  if (ended->reason == EndReason::start_failed) {
    ASSERT_TRUE(ended->error.has_value());
    EXPECT_NE(ended->error->find("/no/such/program"), std::string::npos) << *ended->error;
  }
  EXPECT_TRUE(eventually([&] { return containers_of(id).empty(); }, 5s));
}

TEST_F(Rentals, AnAgentRestartAdoptsWhatRunsAndRemovesLeftovers) {
  const std::string id = prefix_ + "kept";
  const std::vector<std::string> cmd = {"sh", "-c", "echo up; exec sleep 300"};
  std::vector<protocol::BoundPort> ports;
  std::string container;
  {
    EventLog events;
    RentalManager first(*engine_, *guard_, options(41100), events.sink());
    first.apply(answer({rental(id, State::requested, cmd, {22})}));
    auto running = events.wait_for(id, RentalEventType::running);
    ASSERT_TRUE(running.has_value()) << events.types(id);
    ports = running->ports;
    auto here = containers_of(id);
    ASSERT_EQ(here.size(), 1u);
    container = here[0].id;
  }  // the agent stops; its containers keep running
  ASSERT_EQ(containers_of(id).size(), 1u);
  // Its rules are gone meanwhile (the host's firewall was reloaded, or the agent before had no guard).
  ASSERT_TRUE(guard_->unfence(id).ok());
  ASSERT_EQ(guard_rules().find(runtime::fence_comment(id)), std::string::npos);
  EXPECT_EQ(containers_of(id)[0].status, ContainerState::Status::running);

  // A rental container the server no longer lists (its rental ended while the agent was away).
  ASSERT_NO_FATAL_FAILURE(start_bare(prefix_ + "leftover"));

  EventLog events;
  auto o = options(41100);
  o.stop_grace = 1s;
  RentalManager second(*engine_, *guard_, o, events.sink());
  // The server never heard `running` (the agent died first): it still says starting.
  const auto want = answer({rental(id, State::starting, cmd, {22})});
  second.apply(want);
  second.apply(want);
  auto running = events.wait_for(id, RentalEventType::running, 5s);
  ASSERT_TRUE(running.has_value()) << events.types(id);
  EXPECT_EQ(events.types(id), "running") << "adopted: not started again, `running` sent again";
  EXPECT_EQ(running->ports, ports);
  auto here = containers_of(id);
  ASSERT_EQ(here.size(), 1u) << "never a duplicate";
  EXPECT_EQ(here[0].id, container);
  EXPECT_TRUE(eventually([&] { return containers_of(prefix_ + "leftover").empty(); }, 10s))
      << "the leftover is removed";
  EXPECT_TRUE(events.of(prefix_ + "leftover").empty()) << "without a word to the server";
  EXPECT_TRUE(eventually([&] { return guard_rules().find(runtime::fence_comment(id)) != std::string::npos; }, 5s))
      << "an adopted container is fenced again:\n"
      << guard_rules();

  second.apply(answer({rental(id, State::running, cmd, {22})}));
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(events.types(id), "running");
  EXPECT_EQ(containers_of(id).size(), 1u);
}

// Two agents on one container engine (two machine identities on a host, or tests side by side): each
// adopts and removes only the containers labelled with its own machine.
TEST_F(Rentals, AnotherMachinesContainersOnTheSameEngineAreLeftAlone) {
  EventLog mine_events, other_events;
  auto mine = options(41200);
  mine.machine_id = "mch_mine";
  RentalManager m(*engine_, *guard_, mine, mine_events.sink());
  const std::string id = prefix_ + "labelled";
  m.apply(answer({rental(id, State::requested, {"sleep", "300"})}));
  ASSERT_TRUE(mine_events.wait_for(id, RentalEventType::running).has_value()) << mine_events.types(id);
  auto here = containers_of(id);
  ASSERT_EQ(here.size(), 1u);
  auto inspected = real_->inspect(here[0].id);
  ASSERT_TRUE(inspected.ok());
  EXPECT_EQ(inspected->machine_id, "mch_mine");

  auto other = options(41220);
  other.machine_id = "mch_other";
  RentalManager o(*engine_, *guard_, other, other_events.sink());
  o.apply(answer({}));  // its server lists nothing: a container of its own would be a leftover
  // Nor an unlabelled rental container (made by a test, or before agents labelled them) it is not given.
  ASSERT_NO_FATAL_FAILURE(start_bare(prefix_ + "unlabelled"));
  std::this_thread::sleep_for(1500ms);
  EXPECT_EQ(containers_of(prefix_ + "unlabelled").size(), 1u) << "an unlabelled container it is not given";
  here = containers_of(id);
  ASSERT_EQ(here.size(), 1u) << "the other agent left it alone";
  EXPECT_EQ(here[0].status, ContainerState::Status::running);
  EXPECT_TRUE(other_events.of(id).empty());
  EXPECT_EQ(mine_events.types(id), "starting running");
}

//! A guard that cannot fence (an agent without root, a host without iptables).
class RefusingGuard final : public runtime::NetworkGuard {
 public:
  std::string describe() const override { return "refusing"; }
  core::Status check() override { return refusal(); }
  core::Status fence(const std::string&, const runtime::RentalNetwork&) override { return refusal(); }
  core::Status unfence(const std::string&) override { return core::ok_status(); }

 private:
  static core::Status refusal() {
    return core::Error::make(core::ErrorCode::unavailable, "iptables: Permission denied (you must be root)");
  }
};

TEST_F(Rentals, ARentalWhoseNetworkCannotBeFencedNeverRunsAndIsTheHostsFailure) {
  EventLog events;
  RefusingGuard refusing;
  RentalManager m(*engine_, refusing, options(41160), events.sink());
  const std::string id = prefix_ + "unfenced";
  m.apply(answer({rental(id, State::requested, {"sh", "-c", "echo ran; sleep 300"}, {8080})}));
  auto ended = events.wait_for(id, RentalEventType::ended);
  ASSERT_TRUE(ended.has_value()) << events.types(id);
  EXPECT_EQ(events.types(id), "starting ended") << "never running";
  EXPECT_EQ(ended->reason, EndReason::host_failure) << "the provider's side: the customer is not charged";
  ASSERT_TRUE(ended->error.has_value());
  EXPECT_NE(ended->error->find("could not fence the container's network: iptables: Permission denied"),
            std::string::npos)
      << *ended->error;
  EXPECT_TRUE(eventually([&] { return containers_of(id).empty(); }, 5s)) << "nothing of it is left";
  ASSERT_TRUE(m.blocked().has_value()) << "the server is told, and offers this machine's GPUs no more";
  EXPECT_NE(m.blocked()->find("the network guard cannot fence rentals' networks: iptables: Permission denied"),
            std::string::npos)
      << *m.blocked();
}

TEST_F(Rentals, ARunningRentalWithNoContainerHereEndsAsHostFailure) {
  EventLog events;
  RentalManager m(*engine_, *guard_, options(41120), events.sink());
  const std::string id = prefix_ + "gone";
  m.apply(answer({rental(id, State::running, {"true"})}));
  auto ended = events.wait_for(id, RentalEventType::ended, 5s);
  ASSERT_TRUE(ended.has_value()) << events.types(id);
  EXPECT_EQ(ended->reason, EndReason::host_failure);
  ASSERT_TRUE(ended->error.has_value());
  EXPECT_NE(ended->error->find("container is gone"), std::string::npos) << *ended->error;
  m.apply(answer({rental(id, State::running, {"true"})}));
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(events.types(id), "ended") << "said once";
}

TEST_F(Rentals, AGpuThatIsNotOnThisMachineIsRefused) {
  EventLog events;
  RentalManager m(*engine_, *guard_, options(41140), events.sink());
  const std::string id = prefix_ + "othergpu";
  auto r = rental(id, State::requested, {"true"});
  r.gpu_uuids = {"GPU-somewhere-else"};
  m.apply(answer({r}));
  auto ended = events.wait_for(id, RentalEventType::ended, 5s);
  ASSERT_TRUE(ended.has_value());
  EXPECT_EQ(ended->reason, EndReason::start_failed);
  EXPECT_NE(ended->error->find("GPU-somewhere-else"), std::string::npos);
  EXPECT_TRUE(containers_of(id).empty());
}

}  // namespace
}  // namespace gpunex::agent
