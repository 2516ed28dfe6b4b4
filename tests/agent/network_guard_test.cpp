// The network guard: its rules (pure), the program runner it uses, and on a real engine and this
// host's iptables, from inside real containers: a rental's container reaches the internet but not
// this host, its LAN or the link-local range, and names still resolve. The neighbourhood (a LAN host
// and an internet host) is a network namespace of the test's own on a veth pair.
#include "agent/runtime/network_guard.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "agent/runtime/docker_api.hpp"
#include "guard_rules.hpp"
#include "util/process.hpp"

using namespace gpunex::agent::runtime;  // NOLINT: test file
using namespace std::chrono_literals;    // NOLINT: test file
using gpunex::testing::guard_rules;
using gpunex::util::run_process;

extern char** environ;  // NOLINT: posix_spawnp's

namespace {

// ---- util::run_process ----

TEST(RunProcess, ReadsBothStreamsAndTheExitStatus) {
  auto r = run_process({"sh", "-c", "echo out; echo err >&2; exit 7"}, 10s);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->exit_code, 7);
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");
  auto killed = run_process({"sh", "-c", "kill -9 $$"}, 10s);
  ASSERT_TRUE(killed.ok());
  EXPECT_EQ(killed->exit_code, 128 + 9);
}

TEST(RunProcess, AMissingProgramAndARunPastTheTimeoutAreErrors) {
  auto missing = run_process({"gpunex-no-such-program"}, 10s);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("cannot run gpunex-no-such-program"), std::string::npos)
      << missing.error().message;
  const auto started = std::chrono::steady_clock::now();
  auto slow = run_process({"sleep", "30"}, 300ms);
  ASSERT_FALSE(slow.ok());
  EXPECT_NE(slow.error().message.find("did not finish within 300 ms"), std::string::npos) << slow.error().message;
  EXPECT_LT(std::chrono::steady_clock::now() - started, 10s) << "killed, not waited for";
  EXPECT_FALSE(run_process({}, 1s).ok());
}

// ---- the rules ----

std::string joined(const GuardRule& r) {
  std::string s = r.chain;
  for (const auto& a : r.args) s += " " + a;
  return s;
}

TEST(NetworkGuardRules, RefuseTheHostButItsResolverAndEveryPrivateRangeInOrder) {
  RentalNetwork net;
  net.subnets = {"10.89.3.0/24"};
  net.gateways = {"10.89.3.1"};
  auto rules = fence_rules(GuardChains{}, "rnt_1", net);
  ASSERT_TRUE(rules.ok()) << rules.error().message;
  std::vector<std::string> lines;
  for (const auto& r : *rules) lines.push_back(joined(r));
  const std::string tag = " -m comment --comment gpunex:rnt_1";
  const std::string reject = " -j REJECT --reject-with icmp-admin-prohibited";
  const std::vector<std::string> want{
      "GPUNEX-INPUT -s 10.89.3.0/24 -d 10.89.3.1 -p udp --dport 53" + tag + " -j RETURN",
      "GPUNEX-INPUT -s 10.89.3.0/24 -d 10.89.3.1 -p tcp --dport 53" + tag + " -j RETURN",
      "GPUNEX-INPUT -s 10.89.3.0/24" + tag + reject,
      "GPUNEX-FORWARD -s 10.89.3.0/24 -d 10.89.3.0/24" + tag + " -j RETURN",
      "GPUNEX-FORWARD -s 10.89.3.0/24 -d 10.0.0.0/8" + tag + reject,
      "GPUNEX-FORWARD -s 10.89.3.0/24 -d 172.16.0.0/12" + tag + reject,
      "GPUNEX-FORWARD -s 10.89.3.0/24 -d 192.168.0.0/16" + tag + reject,
      "GPUNEX-FORWARD -s 10.89.3.0/24 -d 100.64.0.0/10" + tag + reject,
      "GPUNEX-FORWARD -s 10.89.3.0/24 -d 169.254.0.0/16" + tag + reject,
  };
  EXPECT_EQ(lines, want);
}

TEST(NetworkGuardRules, ANetworkThatCannotBeFencedIsAnError) {
  RentalNetwork v6;
  v6.subnets = {"10.89.3.0/24"};
  v6.ipv6 = true;
  auto a = fence_rules(GuardChains{}, "rnt_1", v6);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message.find("IPv6"), std::string::npos) << a.error().message;
  auto b = fence_rules(GuardChains{}, "rnt_1", RentalNetwork{});
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message.find("no IPv4 subnet"), std::string::npos) << b.error().message;
  RentalNetwork ok;
  ok.subnets = {"10.89.3.0/24"};
  EXPECT_FALSE(fence_rules(GuardChains{}, "rnt 1 -j ACCEPT", ok).ok()) << "an id is never spliced into a rule";
  EXPECT_FALSE(fence_rules(GuardChains{}, "", ok).ok());
}

TEST(NetworkGuardRules, TheEngineAnswersAreReadForTheNetworksAddresses) {
  const auto docker = docker::parse_network(nlohmann::json::parse(
      R"({"Name":"gpunex-r","EnableIPv6":false,"IPAM":{"Driver":"default","Config":[{"Subnet":"172.18.0.0/16","Gateway":"172.18.0.1"}]}})"));
  EXPECT_EQ(docker.subnets, std::vector<std::string>{"172.18.0.0/16"});
  EXPECT_EQ(docker.gateways, std::vector<std::string>{"172.18.0.1"});
  EXPECT_FALSE(docker.ipv6);
  const auto dual = docker::parse_network(nlohmann::json::parse(
      R"({"IPAM":{"Config":[{"Subnet":"10.89.0.0/24","Gateway":"10.89.0.1"},{"Subnet":"fd00::/64","Gateway":"fd00::1"}]}})"));
  EXPECT_TRUE(dual.ipv6) << "an IPv6 subnet is seen even when EnableIPv6 is not said";
  EXPECT_EQ(dual.subnets, std::vector<std::string>{"10.89.0.0/24"});
  EXPECT_TRUE(docker::parse_network(nlohmann::json::parse(R"({"IPAM":null})")).subnets.empty());
  EXPECT_EQ(docker::network_body("r")["EnableIPv6"], false);
}

// ---- on this host's iptables ----

bool can_use_iptables() {
  if (::geteuid() == 0) return true;
  if (std::getenv("CI") != nullptr) ADD_FAILURE() << "on CI make test runs as root";
  return false;
}

TEST(NetworkGuardOnThisHost, FencingASubnetTakesItOverFromARentalThatLeftItsRulesBehind) {
  if (!can_use_iptables()) GTEST_SKIP() << "needs root (iptables)";
  auto guard = make_iptables_guard();
  const std::string gone = "t" + std::to_string(::getpid()) + "_gone";
  const std::string next = "t" + std::to_string(::getpid()) + "_next";
  RentalNetwork net;
  net.subnets = {"10.254." + std::to_string(::getpid() % 250) + ".0/24"};
  ASSERT_TRUE(guard->fence(gone, net).ok());  // its agent died before removing them
  ASSERT_NE(guard_rules().find(fence_comment(gone)), std::string::npos);
  ASSERT_TRUE(guard->fence(next, net).ok());
  const auto after = guard_rules();
  EXPECT_EQ(after.find(fence_comment(gone)), std::string::npos) << after;
  EXPECT_NE(after.find(fence_comment(next)), std::string::npos) << after;
  ASSERT_TRUE(guard->unfence(next).ok());
  EXPECT_EQ(guard_rules().find(net.subnets[0]), std::string::npos) << guard_rules();
}

// The engine (netavark) puts its own jump at the head of FORWARD when it makes a network or reloads, and its
// chain accepts a bridge's traffic: a guard's jump below it fences nothing. The guard's check (at each fence,
// and every minute) puts its jump first again, once.
TEST(NetworkGuardOnThisHost, TheGuardsJumpIsFirstAgainAfterAnotherIsPutAheadOfIt) {
  if (!can_use_iptables()) GTEST_SKIP() << "needs root (iptables)";
  auto guard = make_iptables_guard();
  ASSERT_TRUE(guard->check().ok());
  const std::string parent =
      run_process({"iptables", "-w", "10", "-S", "DOCKER-USER"}, 10s)->exit_code == 0 ? "DOCKER-USER" : "FORWARD";
  const std::string mark = "gpunex-test-ahead-" + std::to_string(::getpid());
  const auto rules = [&] {
    std::vector<std::string> out;
    std::istringstream lines(run_process({"iptables", "-w", "10", "-S", parent}, 10s)->out);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("-A ", 0) == 0) out.push_back(line);
    }
    return out;
  };
  // Another's rule put first, as netavark's jump would be (RETURN: it decides nothing here).
  ASSERT_EQ(
      run_process({"iptables", "-w", "10", "-I", parent, "1", "-m", "comment", "--comment", mark, "-j", "RETURN"}, 10s)
          ->exit_code,
      0);
  ASSERT_NE(rules().front().find(mark), std::string::npos);
  const auto ok = guard->check();
  const auto after = rules();
  (void)run_process({"iptables", "-w", "10", "-D", parent, "-m", "comment", "--comment", mark, "-j", "RETURN"}, 10s);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  const auto jumps = [](const std::vector<std::string>& rules) {
    return std::count_if(rules.begin(), rules.end(), [](const std::string& r) {
      return r.size() > 18 && r.compare(r.size() - 18, 18, " -j GPUNEX-FORWARD") == 0;
    });
  };
  EXPECT_TRUE(after.front().ends_with(" -j GPUNEX-FORWARD")) << after.front();
  EXPECT_EQ(jumps(after), 1);
  // Checked again with nothing ahead of it: left as it is.
  ASSERT_TRUE(guard->check().ok());
  EXPECT_EQ(rules().front(), after.front());
  EXPECT_EQ(jumps(rules()), 1);
}

// ---- on a real engine and this host's iptables ----

// A program left running in the background until the test ends.
class Background {
 public:
  explicit Background(const std::vector<std::string>& argv) {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));  // NOLINT: exec's signature
    args.push_back(nullptr);
    if (::posix_spawnp(&pid_, args[0], nullptr, nullptr, args.data(), environ) != 0) pid_ = -1;
  }
  ~Background() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;

 private:
  pid_t pid_ = -1;
};

// Answers "hello-<the address it was reached on>" on every address of its network namespace and
// writes the port it listens on to a file.
constexpr const char* kListener = R"(
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('0.0.0.0', 0))
s.listen(16)
with open(sys.argv[1] + '.tmp', 'w') as f: f.write(str(s.getsockname()[1]))
import os; os.rename(sys.argv[1] + '.tmp', sys.argv[1])
while True:
    c, _ = s.accept()
    c.sendall(('hello-' + c.getsockname()[0] + '\n').encode())
    c.close()
)";

class Fenced : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* host = std::getenv("GPUNEX_TEST_DOCKER_HOST");
    if (host == nullptr || *host == '\0' || ::geteuid() != 0) {
      if (std::getenv("CI") != nullptr) FAIL() << "on CI make test runs as root with Podman's service";
      GTEST_SKIP() << "needs root (iptables, a network namespace) and GPUNEX_TEST_DOCKER_HOST (make test sets it)";
    }
    rt_ = make_docker_runtime(host);
    guard_ = make_iptables_guard();
    const auto pid = std::to_string(::getpid());
    prefix_ = "t" + pid + "_";
    ns_ = "gpxt" + pid;
    veth_ = "gx" + pid;
    octet_ = std::to_string(100 + ::getpid() % 150);
    lan_ = "192.168." + octet_ + ".2";
    host_side_ = "192.168." + octet_ + ".1";
    internet_ = "198.51.100." + octet_;
    dir_ = std::filesystem::temp_directory_path() / ("gpunex-guard-" + pid);
    std::filesystem::create_directories(dir_);
    for (const auto& c : std::vector<std::vector<std::string>>{
             {"ip", "netns", "add", ns_},
             {"ip", "link", "add", veth_ + "h", "type", "veth", "peer", "name", veth_ + "n"},
             {"ip", "link", "set", veth_ + "n", "netns", ns_},
             {"ip", "addr", "add", host_side_ + "/24", "dev", veth_ + "h"},
             {"ip", "link", "set", veth_ + "h", "up"},
             {"ip", "-n", ns_, "addr", "add", lan_ + "/24", "dev", veth_ + "n"},
             {"ip", "-n", ns_, "addr", "add", internet_ + "/32", "dev", veth_ + "n"},
             {"ip", "-n", ns_, "link", "set", veth_ + "n", "up"},
             {"ip", "-n", ns_, "link", "set", "lo", "up"},
             {"ip", "-n", ns_, "route", "add", "default", "via", host_side_},
             {"ip", "route", "add", internet_ + "/32", "via", lan_},
         }) {
      auto r = run_process(c, 30s);
      ASSERT_TRUE(r.ok() && r->exit_code == 0)
          << c[0] << " " << c[1] << " " << c[2] << ": " << (r.ok() ? r->err : r.error().message);
    }
    host_listener_ = std::make_unique<Background>(
        std::vector<std::string>{"python3", "-c", kListener, (dir_ / "host-port").string()});
    neighbour_listener_ = std::make_unique<Background>(std::vector<std::string>{
        "ip", "netns", "exec", ns_, "python3", "-c", kListener, (dir_ / "neighbour-port").string()});
    host_port_ = port_from(dir_ / "host-port");
    neighbour_port_ = port_from(dir_ / "neighbour-port");
    ASSERT_FALSE(host_port_.empty());
    ASSERT_FALSE(neighbour_port_.empty());
  }

  void TearDown() override {
    host_listener_.reset();
    neighbour_listener_.reset();
    if (!ns_.empty()) (void)run_process({"ip", "netns", "del", ns_}, 30s);  // the veth pair and its route go with it
    if (rt_) {
      if (auto all = rt_->list_rental_containers(); all) {
        for (const auto& c : *all) {
          if (c.rental_id.rfind(prefix_, 0) != 0) continue;
          (void)rt_->stop_and_remove(c.id, 0s);
          (void)guard_->unfence(c.rental_id);
        }
      }
    }
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  static std::string port_from(const std::filesystem::path& file) {
    for (int i = 0; i < 100 && !std::filesystem::exists(file); ++i) std::this_thread::sleep_for(100ms);
    std::ifstream in(file);
    std::string port;
    in >> port;
    return port;
  }

  // Runs a container of `rental` that tries each address and a name; with `fence`, fenced first.
  // Returns its output: a line "<address>:<port> <first line of the answer>" a try, then dns-ok or dns-failed.
  std::string probe(const std::string& rental, bool fence) {
    ContainerSpec s;
    s.rental_id = rental;
    s.image = "localhost/gpunex-test:1";
    s.pids_limit = 64;
    const std::string name = docker::container_name(rental);
    s.command = {"sh", "-c",
                 "gw=$(busybox ip route | busybox awk '/^default/ {print $3}'); "
                 "for t in $gw:" +
                     host_port_ + " " + host_side_ + ":" + host_port_ + " " + lan_ + ":" + neighbour_port_ + " " +
                     internet_ + ":" + neighbour_port_ +
                     " 169.254.169.254:80; do "
                     "echo \"$t $(busybox nc -w 3 ${t%:*} ${t#*:} </dev/null 2>/dev/null | busybox head -1)\"; done; "
                     "busybox nslookup " +
                     name + " $gw >/dev/null 2>&1 && echo dns-ok || echo dns-failed"};
    auto img = rt_->ensure_image(s.image, nullptr);
    EXPECT_TRUE(img.ok()) << img.error().message;
    auto id = rt_->create(s);
    EXPECT_TRUE(id.ok()) << (id.ok() ? "" : id.error().message);
    if (!id.ok()) return "";
    auto net = rt_->network(rental);
    EXPECT_TRUE(net.ok()) << (net.ok() ? "" : net.error().message);
    if (!net.ok()) return "";
    auto fenced = guard_->fence(rental, *net);
    EXPECT_TRUE(fenced.ok()) << (fenced.ok() ? "" : fenced.error().message);
    // Unfenced: fenced and unfenced again, so that no rule of another rental, dead and gone, is on its subnet.
    if (!fence) {
      EXPECT_TRUE(guard_->unfence(rental).ok());
    }
    EXPECT_TRUE(rt_->start(*id).ok());
    const auto end = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < end) {
      auto st = rt_->inspect(*id);
      if (st.ok() && st->status == ContainerState::Status::exited) break;
      std::this_thread::sleep_for(100ms);
    }
    auto logs = rt_->logs(*id, 100);
    for (int i = 0; i < 20 && logs.ok() && logs->find("dns-") == std::string::npos; ++i) {
      std::this_thread::sleep_for(100ms);  // Podman writes the log a moment after the exit
      logs = rt_->logs(*id, 100);
    }
    return logs.ok() ? *logs : "";
  }

  std::unique_ptr<ContainerRuntime> rt_;
  std::unique_ptr<NetworkGuard> guard_;
  std::string prefix_, ns_, veth_, octet_, lan_, host_side_, internet_, host_port_, neighbour_port_;
  std::filesystem::path dir_;
  std::unique_ptr<Background> host_listener_, neighbour_listener_;
};

TEST_F(Fenced, AContainerReachesTheInternetButNotThisHostItsLanOrLinkLocal) {
  // Unfenced first: the neighbourhood answers, so a silence below is the guard's doing.
  const auto open = probe(prefix_ + "open", false);
  EXPECT_NE(open.find(" hello-" + host_side_ + "\n"), std::string::npos) << "this host, unfenced:\n" << open;
  EXPECT_NE(open.find(lan_ + ":" + neighbour_port_ + " hello-" + lan_ + "\n"), std::string::npos)
      << "the LAN, unfenced:\n"
      << open;
  EXPECT_NE(open.find(internet_ + ":" + neighbour_port_ + " hello-" + internet_ + "\n"), std::string::npos) << open;

  const std::string rental = prefix_ + "fenced";
  const auto fenced = probe(rental, true);
  EXPECT_EQ(fenced.find("hello-" + host_side_), std::string::npos) << "this host (any of its addresses):\n" << fenced;
  EXPECT_EQ(fenced.find("hello-" + lan_), std::string::npos) << "the provider's LAN:\n" << fenced;
  EXPECT_NE(fenced.find(internet_ + ":" + neighbour_port_ + " hello-" + internet_ + "\n"), std::string::npos)
      << "the internet stays open:\n"
      << fenced;
  EXPECT_NE(fenced.find("dns-ok"), std::string::npos) << "names resolve through the gateway:\n" << fenced;
  const auto gateway_line = fenced.substr(0, fenced.find('\n'));
  EXPECT_EQ(gateway_line.find("hello"), std::string::npos) << "the bridge's gateway is this host: " << gateway_line;

  // The rules carry the rental's comment; fencing again adds nothing; unfencing removes them all.
  const auto before = guard_rules();
  const std::string comment = "gpunex:" + rental;
  EXPECT_NE(before.find(comment), std::string::npos) << before;
  auto net = rt_->network(rental);
  ASSERT_TRUE(net.ok());
  ASSERT_TRUE(guard_->fence(rental, *net).ok());
  EXPECT_EQ(guard_rules(), before) << "fencing is idempotent";
  ASSERT_TRUE(guard_->unfence(rental).ok());
  const auto after = guard_rules();
  EXPECT_EQ(after.find(comment), std::string::npos) << after;
  EXPECT_NE(after.find("-A GPUNEX-INPUT -m conntrack --ctstate RELATED,ESTABLISHED -j RETURN"), std::string::npos)
      << "the chains stay, for the next rental:\n"
      << after;
  auto jumps = run_process({"iptables", "-w", "10", "-S", "INPUT"}, 30s);
  ASSERT_TRUE(jumps.ok());
  EXPECT_NE(jumps->out.find("-A INPUT -j GPUNEX-INPUT"), std::string::npos) << jumps->out;
}

}  // namespace
