// Config precedence and validation, the rate limiter, metrics rendering, text rules, sealing.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>
#include <vector>

#include "core/ip_range.hpp"
#include "core/text.hpp"
#include "server/platform/config.hpp"
#include "server/platform/metrics.hpp"
#include "server/platform/paging.hpp"
#include "server/platform/rate_limit.hpp"
#include "server/platform/server_key.hpp"
#include "server/rentals/agent_polls.hpp"
#include "util/service_notify.hpp"

using namespace gpunex;  // NOLINT

namespace {
// A path under the temporary folder that no other process running these tests uses (ctest runs
// each test in its own process, and the clock guard runs the whole binary beside them), removed with
// what is under it when the test ends.
struct TempPath {
  explicit TempPath(const std::string& name) {
    const std::filesystem::path p(name);
    path = std::filesystem::temp_directory_path() /
           (p.stem().string() + "-" + std::to_string(::getpid()) + p.extension().string());
  }
  ~TempPath() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  TempPath(const TempPath&) = delete;
  TempPath& operator=(const TempPath&) = delete;
  std::filesystem::path path;
};
}  // namespace

TEST(Config, TomlThenEnvThenFlags) {
  const TempPath tmp("gpunex-config-test");
  const auto& dir = tmp.path;
  std::filesystem::create_directories(dir);
  auto file = (dir / "c.toml").string();
  std::ofstream(file) << "listen = \"127.0.0.1:9000\"\nheartbeat_interval = 20\ndb = \"sqlite:/tmp/x.db\"\n";
  server::Config cfg;
  auto values = server::read_toml_file(file);
  ASSERT_TRUE(values.ok());
  ASSERT_TRUE(server::apply_config_values(cfg, *values, file).ok());
  EXPECT_EQ(cfg.port(), 9000);
  EXPECT_EQ(cfg.heartbeat_interval_s, 20);
  ::setenv("GPUNEX_HEARTBEAT_INTERVAL", "30", 1);
  ASSERT_TRUE(server::apply_config_values(cfg, server::read_env_values(), "environment").ok());
  ::unsetenv("GPUNEX_HEARTBEAT_INTERVAL");
  EXPECT_EQ(cfg.heartbeat_interval_s, 30);
  ASSERT_TRUE(server::apply_config_values(cfg, {{"heartbeat_interval", "5"}}, "command line").ok());
  EXPECT_EQ(cfg.heartbeat_interval_s, 5);
  EXPECT_EQ(cfg.db, "sqlite:/tmp/x.db");
}

TEST(Config, InvalidValueNamesTheKey) {
  server::Config cfg;
  auto s = server::apply_config_values(cfg, {{"heartbeat_interval", "soon"}}, "environment");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().field, "heartbeat_interval");
  EXPECT_EQ(s.error().message,
            "environment: GPUNEX_HEARTBEAT_INTERVAL (heartbeat_interval) must be a whole number, got 'soon'");
  auto flag = server::apply_config_values(cfg, {{"heartbeat_interval", "0"}}, server::kFromCommandLine);
  ASSERT_FALSE(flag.ok());
  EXPECT_EQ(flag.error().message.rfind("command line: --heartbeat-interval (heartbeat_interval) must be", 0), 0U)
      << flag.error().message;
  auto file = server::apply_config_values(cfg, {{"heartbeat_interval", "0"}}, "/etc/gpunex/server.toml");
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.error().message.rfind("/etc/gpunex/server.toml: heartbeat_interval must be", 0), 0U);
  EXPECT_FALSE(server::apply_config_values(cfg, {{"listen", "nonsense"}}, "x").ok());
  EXPECT_FALSE(server::apply_config_values(cfg, {{"db", "mysql://x"}}, "x").ok());
  EXPECT_FALSE(server::apply_config_values(cfg, {{"threads", "-1"}}, "x").ok());
  auto unknown = server::apply_config_values(cfg, {{"no_such_key", "1"}}, "x");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().field, "no_such_key");
}

TEST(Config, TrustedProxiesAreAddressesOrRanges) {
  server::Config cfg;
  ASSERT_TRUE(server::apply_config_values(cfg, {{"trusted_proxies", "10.0.0.0/8, 192.168.1.7 ,fd00::/8"}}, "x").ok());
  EXPECT_TRUE(cfg.is_trusted_proxy("10.1.2.3"));
  EXPECT_TRUE(cfg.is_trusted_proxy("::ffff:10.200.0.1"));  // an IPv4 peer seen by a socket on [::]
  EXPECT_TRUE(cfg.is_trusted_proxy("192.168.1.7"));
  EXPECT_FALSE(cfg.is_trusted_proxy("192.168.1.8"));
  EXPECT_FALSE(cfg.is_trusted_proxy("11.0.0.1"));
  EXPECT_TRUE(cfg.is_trusted_proxy("fd12::1"));
  EXPECT_FALSE(cfg.is_trusted_proxy("fe80::1"));
  EXPECT_FALSE(cfg.is_trusted_proxy("not an address"));
  for (const char* bad : {"not-an-ip", "10.0.0.0/33", "10.0.0.0/", "proxy.example.com", "10.0.0.1, x"}) {
    server::Config c;
    auto s = server::apply_config_values(c, {{"trusted_proxies", bad}}, server::kFromEnvironment);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.error().field, "trusted_proxies");
    EXPECT_NE(s.error().message.find("GPUNEX_TRUSTED_PROXIES (trusted_proxies) '"), std::string::npos)
        << s.error().message;
    EXPECT_NE(s.error().message.find("is not an IP address or a CIDR range"), std::string::npos);
  }
  server::Config none;
  EXPECT_FALSE(none.is_trusted_proxy("127.0.0.1"));
}

TEST(ServiceNotify, ReadyReachesTheSocketNamedByNotifySocket) {
  ::unsetenv("NOTIFY_SOCKET");
  EXPECT_FALSE(util::notify_service_manager("READY=1"));  // not run by systemd: nothing to tell
  const auto dir = std::filesystem::temp_directory_path() / ("gpunex-notify-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "notify").string();
  for (const std::string& name : {path, "@gpunex-notify-" + std::to_string(::getpid())}) {
    const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, name.data(), name.size());
    if (name[0] == '@') addr.sun_path[0] = '\0';
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr),
                     static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size())),
              0)
        << name;
    ::setenv("NOTIFY_SOCKET", name.c_str(), 1);
    EXPECT_TRUE(util::notify_service_manager("READY=1")) << name;
    char buf[64] = {};
    const auto n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    EXPECT_EQ(std::string(buf, n > 0 ? static_cast<std::size_t>(n) : 0), "READY=1") << name;
    ::close(fd);
  }
  ::setenv("NOTIFY_SOCKET", (dir / "nobody-listens").c_str(), 1);
  EXPECT_FALSE(util::notify_service_manager("READY=1"));
  ::unsetenv("NOTIFY_SOCKET");
  std::filesystem::remove_all(dir);
}

TEST(IpRange, PrefixesCutInsideAByte) {
  auto r = core::parse_ip_range("172.16.0.0/12");
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->contains("172.31.255.255"));
  EXPECT_FALSE(r->contains("172.32.0.0"));
  EXPECT_FALSE(r->contains("::ffff:172.32.0.0"));
  auto all = core::parse_ip_range("0.0.0.0/0");
  ASSERT_TRUE(all);
  EXPECT_TRUE(all->contains("8.8.8.8"));
  EXPECT_FALSE(all->contains("2001:db8::1"));  // an IPv4 range holds no IPv6 address
  auto one6 = core::parse_ip_range("2001:db8::1");
  ASSERT_TRUE(one6);
  EXPECT_TRUE(one6->contains("2001:db8:0::1"));
  EXPECT_FALSE(one6->contains("2001:db8::2"));
  EXPECT_FALSE(core::parse_ip_range("2001:db8::/129"));
  EXPECT_FALSE(core::parse_ip_range("1.2.3.4/x"));
}

TEST(Config, TomlSyntaxErrorIsReported) {
  const TempPath tmp("gpunex-bad.toml");
  const auto file = tmp.path.string();
  std::ofstream(file) << "listen = \n";
  auto values = server::read_toml_file(file);
  ASSERT_FALSE(values.ok());
  EXPECT_NE(values.error().message.find("line 1"), std::string::npos);
}

TEST(Config, ATomlTableSaysTheKeysGoAtTheTopLevel) {
  const TempPath tmp("gpunex-table.toml");
  const auto file = tmp.path.string();
  std::ofstream(file) << "[server]\nlisten = \"127.0.0.1:9000\"\n";
  auto values = server::read_toml_file(file);
  ASSERT_FALSE(values.ok());
  EXPECT_EQ(values.error().message,
            file + ": server must be a string, number or boolean (the keys go at the top level, in no [table])");
}

TEST(Config, BehindAProxyThePublicUrlIsRequired) {
  server::Config cfg;
  ASSERT_TRUE(server::apply_config_values(cfg, {{"trusted_proxies", "127.0.0.1"}}, "x").ok());
  auto s = server::validate_config(cfg);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().field, "public_url");
  EXPECT_NE(s.error().message.find("not this server's own (http://127.0.0.1:8080)"), std::string::npos)
      << s.error().message;
  ASSERT_TRUE(server::apply_config_values(cfg, {{"public_url", "https://gpunex.example.com"}}, "x").ok());
  EXPECT_TRUE(server::validate_config(cfg).ok());
}

TEST(Config, TlsNeedsBothFiles) {
  server::Config cfg;
  cfg.tls_cert = "/etc/cert.pem";
  auto s = server::validate_config(cfg);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().field, "tls_key");
}

TEST(Config, TlsFilesMustBeAReadablePemPair) {
  const TempPath tmp("gpunex-config-tls-test");
  const auto& dir = tmp.path;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto path = [&](const char* name) { return (dir / name).string(); };
  server::Config cfg;
  cfg.tls_cert = path("missing-cert.pem");
  cfg.tls_key = path("missing-key.pem");
  auto missing = server::validate_config(cfg);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().field, "tls_cert");
  EXPECT_NE(missing.error().message.find("tls_cert '" + cfg.tls_cert + "': cannot read"), std::string::npos)
      << missing.error().message;
  std::ofstream(path("junk.pem")) << "not a certificate\n";
  cfg.tls_cert = path("junk.pem");
  auto junk = server::validate_config(cfg);
  ASSERT_FALSE(junk.ok());
  EXPECT_EQ(junk.error().field, "tls_cert");
  EXPECT_NE(junk.error().message.find("not a PEM certificate"), std::string::npos) << junk.error().message;

  if (std::system("command -v openssl >/dev/null 2>&1") != 0) GTEST_SKIP() << "no openssl command-line tool";
  for (const char* name : {"a", "b"}) {
    std::string cmd =
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
        "-subj /CN=localhost -keyout '" +
        path(name) + "-key.pem' -out '" + path(name) + "-cert.pem' >/dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }
  cfg.tls_cert = path("a-cert.pem");
  auto no_key = server::validate_config(cfg);  // the key file is still missing
  ASSERT_FALSE(no_key.ok());
  EXPECT_EQ(no_key.error().field, "tls_key");
  EXPECT_NE(no_key.error().message.find(cfg.tls_key), std::string::npos);
  cfg.tls_key = path("a-cert.pem");
  auto cert_as_key = server::validate_config(cfg);
  ASSERT_FALSE(cert_as_key.ok());
  EXPECT_EQ(cert_as_key.error().field, "tls_key");
  EXPECT_NE(cert_as_key.error().message.find("not a PEM private key"), std::string::npos);
  cfg.tls_key = path("b-key.pem");
  auto other_key = server::validate_config(cfg);
  ASSERT_FALSE(other_key.ok());
  EXPECT_EQ(other_key.error().field, "tls_key");
  EXPECT_NE(other_key.error().message.find("is not the private key of tls_cert"), std::string::npos);
  cfg.tls_key = path("a-key.pem");
  EXPECT_TRUE(server::validate_config(cfg).ok());
  std::filesystem::remove_all(dir);
}

TEST(Config, TomlDecimalsForDecimalKeys) {
  const TempPath tmp("gpunex-decimals.toml");
  const auto file = tmp.path.string();
  std::ofstream(file) << "rank_enterprise_boost = 1.2\nrank_reliability_prior = 87.5\n"
                         "benchmark_cpu_cores_per_gpu = 3\nbenchmark_net_up_pct = 25.0\n";
  auto values = server::read_toml_file(file);
  ASSERT_TRUE(values.ok()) << values.error().message;
  server::Config cfg;
  ASSERT_TRUE(server::apply_config_values(cfg, *values, file).ok());
  EXPECT_EQ(cfg.rank.enterprise_boost, 1.2);
  EXPECT_EQ(cfg.rank.reliability_prior, 87.5);
  EXPECT_EQ(cfg.benchmark_policy.cpu_cores_per_gpu, 3.0);
  EXPECT_EQ(cfg.benchmark_policy.net_up_share_of_down, 0.25);

  // A decimal where a whole number is expected, or out of range, names the key.
  std::ofstream(file) << "heartbeat_interval = 1.5\n";
  values = server::read_toml_file(file);
  ASSERT_TRUE(values.ok());
  auto s = server::apply_config_values(cfg, *values, file);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().field, "heartbeat_interval");
  EXPECT_NE(s.error().message.find("must be a whole number, got '1.5'"), std::string::npos) << s.error().message;
  std::ofstream(file) << "rank_enterprise_boost = 12.5\n";
  values = server::read_toml_file(file);
  ASSERT_TRUE(values.ok());
  s = server::apply_config_values(cfg, *values, file);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().field, "rank_enterprise_boost");
  EXPECT_NE(s.error().message.find("must be a number from 0.1 to 10, got '12.5'"), std::string::npos)
      << s.error().message;
  // Arrays are still refused, naming the key.
  std::ofstream(file) << "listen = [1, 2]\n";
  values = server::read_toml_file(file);
  ASSERT_FALSE(values.ok());
  EXPECT_EQ(values.error().field, "listen");
}

TEST(Config, HelpListsEveryKeyWithItsDefault) {
  auto help = server::config_help();
  const server::Config defaults;
  std::string toml;
  for (const auto& k : server::config_keys()) {
    const std::string line = "  " + k.name + " = " + k.show(defaults) + "  (" + k.env + ", " + k.flag + ")\n";
    EXPECT_NE(help.find(line), std::string::npos) << line;
    toml += k.name + " = " + k.show(defaults) + "\n";
  }
  for (const char* line :
       {"  listen = \"127.0.0.1:8080\"  (", "  heartbeat_interval = 15  (", "  rank_enterprise_boost = 1.15  (",
        "  benchmark_net_up_pct = 50  (", "  access_log = true  (", "  public_url = \"\"  (",
        "  mail_from = \"GPUnex <noreply@gpunex.localhost>\"  ("}) {
    EXPECT_NE(help.find(line), std::string::npos) << line;
  }
  // Every default as printed is a TOML value the key accepts and reads back unchanged.
  const TempPath tmp("gpunex-defaults.toml");
  const auto file = tmp.path.string();
  std::ofstream(file) << toml;
  auto values = server::read_toml_file(file);
  ASSERT_TRUE(values.ok()) << values.error().message;
  ASSERT_EQ(values->size(), server::config_keys().size());
  server::Config cfg;
  cfg.listen = "10.0.0.1:1";
  cfg.heartbeat_interval_s = 99;
  cfg.rank.enterprise_boost = 2;
  cfg.access_log = false;
  cfg.mail_from = "other@example.com";
  auto s = server::apply_config_values(cfg, *values, file);
  ASSERT_TRUE(s.ok()) << s.error().message;
  for (const auto& k : server::config_keys()) EXPECT_EQ(k.show(cfg), k.show(defaults)) << k.name;
}

// An API key may travel by mail only when mail is encrypted on its way to the SMTP server (issue #19).
TEST(Config, MailCarriesSecretsOnlyOverTls) {
  server::Config cfg;
  EXPECT_FALSE(cfg.mail_carries_secrets()) << "the .eml drop";
  cfg.smtp_url = "smtp://mail.example:25";
  EXPECT_FALSE(cfg.mail_carries_secrets());
  cfg.smtp_require_tls = true;
  EXPECT_TRUE(cfg.mail_carries_secrets());
  cfg = server::Config{};
  cfg.smtp_url = "smtps://mail.example:465";
  EXPECT_TRUE(cfg.mail_carries_secrets());
}

// The server key: made once, 0600, the same on every later start; one readable by others is made 0600.
TEST(ServerKey, MadeOnceOwnerOnlyAndKept) {
  namespace fs = std::filesystem;
  const auto dir = fs::temp_directory_path() / ("gpunex-key-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto first = server::load_or_create_server_key(dir.string());
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_GE(first->size(), 32u);
  const auto file = dir / "server.key";
  EXPECT_EQ(fs::status(file).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
  fs::permissions(file, fs::perms::group_read | fs::perms::others_read, fs::perm_options::add);
  auto again = server::load_or_create_server_key(dir.string());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *first);
  EXPECT_EQ(fs::status(file).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
  std::ofstream(file, std::ios::trunc) << "short\n";
  EXPECT_FALSE(server::load_or_create_server_key(dir.string()).ok()) << "a key too short is refused, not replaced";
  fs::remove_all(dir);
}

TEST(RateLimiter, SlidingWindow) {
  server::RateLimiter rl(3, std::chrono::seconds(60));
  auto t0 = server::RateLimiter::Clock::now();
  EXPECT_TRUE(rl.allow("a", t0));
  EXPECT_TRUE(rl.allow("a", t0 + std::chrono::seconds(1)));
  EXPECT_TRUE(rl.allow("a", t0 + std::chrono::seconds(2)));
  EXPECT_FALSE(rl.allow("a", t0 + std::chrono::seconds(3)));
  EXPECT_TRUE(rl.allow("b", t0 + std::chrono::seconds(3)));  // per key
  EXPECT_TRUE(rl.exhausted("a", t0 + std::chrono::seconds(59)));
  EXPECT_GE(rl.retry_after_s("a", t0 + std::chrono::seconds(30)), 30);
  EXPECT_TRUE(rl.allow("a", t0 + std::chrono::seconds(61)));  // the first hit left the window
}

// Failed logins (issue #19): waits that double past the allowance and are capped, per (account, address),
// per address and per account; the account's count never holds back a client that has not failed on it.
TEST(LoginThrottle, GrowingCappedWaitsNeverALockout) {
  using std::chrono::seconds;
  server::LoginThrottle::Settings set;
  set.free_per_pair = 3;
  set.free_per_address = 5;
  set.free_per_account = 4;
  set.max_wait = seconds(8);
  set.max_account_wait = seconds(2);
  server::LoginThrottle t(set);
  const auto t0 = server::LoginThrottle::Clock::now();
  for (int i = 0; i < 3; ++i) t.failed("eve", "1.1.1.1", t0);
  EXPECT_EQ(t.wait("eve", "1.1.1.1", t0).count(), 0) << "three are free";
  t.failed("eve", "1.1.1.1", t0);
  EXPECT_EQ(t.wait("eve", "1.1.1.1", t0).count(), 1);
  EXPECT_EQ(t.wait("eve", "1.1.1.1", t0 + seconds(1)).count(), 0) << "a wait, not a lockout";
  t.failed("eve", "1.1.1.1", t0 + seconds(1));
  EXPECT_EQ(t.wait("eve", "1.1.1.1", t0 + seconds(1)).count(), 2) << "doubled";
  for (int i = 0; i < 10; ++i) t.failed("eve", "1.1.1.1", t0 + seconds(2));
  EXPECT_EQ(t.wait("eve", "1.1.1.1", t0 + seconds(2)).count(), 8) << "capped";
  // The owner on another client: the account's count (over its allowance) does not hold a fresh client.
  EXPECT_EQ(t.wait("eve", "2.2.2.2", t0 + seconds(2)).count(), 0);
  // ... but does hold an address that has failed on it, up to its own cap.
  t.failed("eve", "3.3.3.3", t0 + seconds(2));
  EXPECT_EQ(t.wait("eve", "3.3.3.3", t0 + seconds(2)).count(), 2);
  // Per address, across accounts.
  for (int i = 0; i < 6; ++i) t.failed("user" + std::to_string(i), "4.4.4.4", t0);
  EXPECT_EQ(t.wait("someone-else", "4.4.4.4", t0).count(), 1);
  // Success clears the account's counts.
  t.succeeded("eve", "3.3.3.3");
  EXPECT_EQ(t.wait("eve", "3.3.3.3", t0 + seconds(2)).count(), 0);
}

TEST(Metrics, RendersPrometheusText) {
  server::Metrics m;
  m.observe_request("GET", "/healthz", 200, 0.0007);
  m.observe_request("GET", "/healthz", 200, 0.2);
  m.observe_request("POST", "/v1/auth/login", 401, 0.05);
  m.observe_store("select", 0.0001);
  auto text = m.render();
  EXPECT_NE(text.find("gpunex_http_requests_total{method=\"GET\",route=\"/healthz\",status=\"200\"} 2"),
            std::string::npos);
  EXPECT_NE(text.find("gpunex_http_request_duration_seconds_bucket{route=\"/healthz\",le=\"0.001\"} 1"),
            std::string::npos);
  EXPECT_NE(text.find("gpunex_http_request_duration_seconds_bucket{route=\"/healthz\",le=\"0.25\"} 2"),
            std::string::npos);
  EXPECT_NE(text.find("gpunex_http_request_duration_seconds_count{route=\"/healthz\"} 2"), std::string::npos);
  EXPECT_NE(text.find("gpunex_store_statement_duration_seconds_count{op=\"select\"} 1"), std::string::npos);
}

TEST(Text, Emails) {
  EXPECT_TRUE(core::is_valid_email("ada@example.com"));
  EXPECT_TRUE(core::is_valid_email("a.b+c@sub.example.co"));
  for (const char* bad : {"", "a", "a@", "@b.c", "a@b", "a@@b.c", "a b@c.d", "a@b..c", "a@.b.c", ".a@b.c", "a@b.c."}) {
    EXPECT_FALSE(core::is_valid_email(bad)) << bad;
  }
}

TEST(Text, Utf8) {
  EXPECT_TRUE(core::is_clean_utf8("Grace Hopper"));
  EXPECT_TRUE(core::is_clean_utf8("Анна Иванова"));
  EXPECT_FALSE(core::is_clean_utf8(std::string("a\x00" "b", 3)));
  EXPECT_FALSE(core::is_clean_utf8("\xc3\x28"));
  EXPECT_FALSE(core::is_clean_utf8("\xed\xa0\x80"));  // surrogate
  EXPECT_TRUE(core::is_clean_utf8("tab\tand\nline"));
  for (const char* unclean : {"\x7f", "\xc2\x85", "a\u202Eb", "\u2066", "\xc0\xaf", "\xf4\x90\x80\x80", "\xe2\x82"}) {
    EXPECT_FALSE(core::is_clean_utf8(unclean)) << unclean;  // DEL, C1, bidi, overlong, past U+10FFFF, cut short
  }
}

TEST(Text, EqualIgnoringAsciiCase) {
  EXPECT_TRUE(core::equal_ignoring_ascii_case("EU-West", "eu-west"));
  EXPECT_FALSE(core::equal_ignoring_ascii_case("eu-west", "eu-west-2"));
  EXPECT_FALSE(core::equal_ignoring_ascii_case("eu-west", "us-west"));
}

TEST(Text, HostNamesAndAddresses) {
  for (const char* good : {"gpu1.example.net", "localhost", "203.0.113.7", "2001:db8::1", "::1", "a-b.c"}) {
    EXPECT_TRUE(core::is_host_name_or_address(good)) << good;
  }
  for (const char* bad : {"", "gpu 1", "-a.b", "a-.b", "a..b", "example.com.", "300.1.2.3", "1.2.3", "http://x",
                          "a_b.c", "[::1]", "2001:db8::g"}) {
    EXPECT_FALSE(core::is_host_name_or_address(bad)) << bad;
  }
  EXPECT_FALSE(core::is_host_name_or_address(std::string(64, 'a') + ".com")) << "a label of 64";
  EXPECT_EQ(core::host_port("203.0.113.7", 40000), "203.0.113.7:40000");
  EXPECT_EQ(core::host_port("2001:db8::1", 40000), "[2001:db8::1]:40000");
}

// One reading of UTF-8 for every program: the agent's log tails, the rentals poll's `blocked`, SEPA names.
TEST(Text, Utf8SequenceLength) {
  EXPECT_EQ(core::utf8_sequence_length("a", 0), 1u);
  EXPECT_EQ(core::utf8_sequence_length("\u00e9", 0), 2u);
  EXPECT_EQ(core::utf8_sequence_length("\u20ac", 0), 3u);
  EXPECT_EQ(core::utf8_sequence_length("\U0001F600", 0), 4u);
  EXPECT_EQ(core::utf8_sequence_length("x\u00e9", 1), 2u);
  for (const char* broken : {"\x80", "\xc1\xbf", "\xe0\x9f\xbf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xf5\x80\x80\x80",
                             "\xe2\x82", "\xc3("}) {
    EXPECT_EQ(core::utf8_sequence_length(broken, 0), 0u) << broken;
  }
}

TEST(Text, NumbersForPeople) {
  EXPECT_EQ(core::format_number(1024), "1,024");
  EXPECT_EQ(core::format_number(1000000), "1,000,000");
  EXPECT_EQ(core::format_number(999), "999");
  EXPECT_EQ(core::format_number(0.01), "0.01");
  EXPECT_EQ(core::format_number(16384.5), "16,384.5");
  EXPECT_EQ(core::format_number(-1234), "-1,234");
  EXPECT_EQ(core::capitalize("e-mail"), "E-mail");
  EXPECT_EQ(core::capitalize("UPS"), "UPS");
}

#include "util/time.hpp"

TEST(Time, Rfc3339RoundTrip) {
  EXPECT_EQ(util::rfc3339(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(util::rfc3339(1700000000123), "2023-11-14T22:13:20.123Z");
  EXPECT_EQ(util::parse_rfc3339("2023-11-14T22:13:20.123Z"), 1700000000123);
  EXPECT_EQ(util::parse_rfc3339("2023-11-14T23:13:20+01:00"), 1700000000000);
  EXPECT_EQ(util::parse_rfc3339("2023-11-14T17:13:20.5-05:00"), 1700000000500);
  for (const char* bad : {"", "2023-11-14", "2023-11-14T22:13:20", "2023-02-30T00:00:00Z", "2023-11-14T24:00:00Z",
                          "2023-11-14T22:13:20Zx", "2023-11-14T22:13:20+1:00", "2023-11-14 22:13:20Z"}) {
    EXPECT_FALSE(util::parse_rfc3339(bad).has_value()) << bad;
  }
}

#include "util/crypto.hpp"

TEST(Crypto, SealOpensOnlyWithItsSecretAndContext) {
  util::init_crypto();
  const std::string answer = R"({"api_key":"gpx_secret"})";
  const auto sealed = util::seal("ctx", "idem-key-1", answer);
  EXPECT_EQ(sealed.find("gpx_secret"), std::string::npos);
  EXPECT_NE(sealed, util::seal("ctx", "idem-key-1", answer)) << "a fresh nonce each time";
  EXPECT_EQ(util::unseal("ctx", "idem-key-1", sealed), answer);
  EXPECT_EQ(util::unseal("ctx", "idem-key-2", sealed), std::nullopt);
  EXPECT_EQ(util::unseal("other", "idem-key-1", sealed), std::nullopt);
  auto altered = sealed;
  altered[altered.size() / 2] = altered[altered.size() / 2] == 'A' ? 'B' : 'A';
  EXPECT_EQ(util::unseal("ctx", "idem-key-1", altered), std::nullopt);
  EXPECT_EQ(util::unseal("ctx", "idem-key-1", "not base64!"), std::nullopt);
  EXPECT_EQ(util::unseal("ctx", "idem-key-1", util::seal("ctx", "idem-key-1", "")), "");

  const auto name = util::secret_hash_hex("ctx", "idem-key-1");
  EXPECT_EQ(name.size(), 64u);
  EXPECT_EQ(name, util::secret_hash_hex("ctx", "idem-key-1"));
  EXPECT_NE(name, util::secret_hash_hex("other", "idem-key-1"));
  EXPECT_NE(name, util::secret_hash_hex("ctx", "idem-key-2"));
}

// The agents' rentals long polls: a ring answers at once, a change made elsewhere is found by the
// periodic look, a poll with nothing new is answered at its deadline, and none is left unanswered.
TEST(AgentPolls, AnswerOnARingOnAChangeFoundByTheLookAndAtTheDeadline) {
  using namespace std::chrono_literals;
  std::mutex mu;
  std::map<std::string, std::string> versions = {{"m1", "v1"}, {"m2", "v1"}};
  server::rentals::AgentPolls polls(
      [&](const std::vector<std::string>& ids) {
        std::lock_guard lock(mu);
        std::map<std::string, std::string> out;
        for (const auto& id : ids) out[id] = versions[id];
        return out;
      },
      300ms);
  using Clock = server::rentals::AgentPolls::Clock;
  std::atomic<bool> m1_answered{false}, m2_answered{false}, m3_answered{false};
  Clock::time_point m1_at, m2_at;
  const auto t0 = Clock::now();
  polls.wait("m1", "v1", t0 + 10s, [&] { m1_at = Clock::now(); m1_answered = true; });
  polls.wait("m2", "v1", t0 + 10s, [&] { m2_at = Clock::now(); m2_answered = true; });
  polls.wait("m3", "v1", t0 + 200ms, [&] { m3_answered = true; });
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(polls.waiting(), 3u);

  // Changed here: rung, answered at once.
  {
    std::lock_guard lock(mu);
    versions["m1"] = "v2";
  }
  const auto rung_at = Clock::now();
  polls.ring("m1");
  for (int i = 0; i < 200 && !m1_answered; ++i) std::this_thread::sleep_for(5ms);
  ASSERT_TRUE(m1_answered);
  EXPECT_LT(m1_at - rung_at, 100ms);
  EXPECT_FALSE(m2_answered) << "a ring answers only its machine";

  // Changed by another replica (no ring): found by the look within its period.
  {
    std::lock_guard lock(mu);
    versions["m2"] = "v2";
  }
  for (int i = 0; i < 200 && !m2_answered; ++i) std::this_thread::sleep_for(5ms);
  ASSERT_TRUE(m2_answered);
  EXPECT_LT(m2_at - t0, 1s);
  EXPECT_TRUE(m3_answered) << "answered at its deadline with nothing new";

  // Whatever still waits when the polls stop is answered.
  std::atomic<bool> last{false};
  {
    server::rentals::AgentPolls other([](const std::vector<std::string>&) { return std::map<std::string, std::string>{}; });
    other.wait("m9", "v1", Clock::now() + 60s, [&] { last = true; });
  }
  EXPECT_TRUE(last);
}

TEST(Crypto, BufferedRandomTokensLookLikeRandomTokensAndNeverRepeat) {
  util::init_crypto();
  std::set<std::string> seen;
  // More than one 4 KiB refill of the per-thread buffer, on two threads.
  auto draw = [](std::vector<std::string>& out) {
    for (int i = 0; i < 1000; ++i) out.push_back(util::buffered_random_token(12));
  };
  std::vector<std::string> a, b;
  std::thread other(draw, std::ref(b));
  draw(a);
  other.join();
  for (const auto* list : {&a, &b}) {
    for (const auto& t : *list) {
      EXPECT_EQ(t.size(), util::random_token(12).size());
      EXPECT_EQ(t.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"), std::string::npos);
      EXPECT_TRUE(seen.insert(t).second) << "repeated: " << t;
    }
  }
  EXPECT_EQ(util::buffered_random_token(5000).size(), util::random_token(5000).size()) << "larger than the buffer";
}

// A filtered list (the rentals' ?state=) pages by the cursor's place in the whole list: the item a page
// ended on may no longer pass the filter (a rental ended since), and the next page still follows it.
TEST(Paging, AFilteredPageFollowsACursorThatLeftTheFilter) {
  nlohmann::json all = nlohmann::json::array();
  for (const auto& [id, state] : std::vector<std::pair<std::string, std::string>>{
           {"r5", "running"}, {"r4", "ended"}, {"r3", "running"}, {"r2", "running"}, {"r1", "ended"}}) {
    all.push_back({{"id", id}, {"state", state}});
  }
  const auto running = [](const nlohmann::json& j) { return j["state"] == "running"; };
  auto first = server::page_of(all, {2, std::nullopt}, running);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ((*first)["items"].size(), 2U);
  EXPECT_EQ((*first)["items"][1]["id"], "r3");
  EXPECT_EQ((*first)["next_cursor"], "r3");
  all[2]["state"] = "ended";  // r3 ended before the next page was asked
  auto second = server::page_of(all, {2, std::string("r3")}, running);
  ASSERT_TRUE(second.ok()) << second.error().message;
  ASSERT_EQ((*second)["items"].size(), 1U);
  EXPECT_EQ((*second)["items"][0]["id"], "r2");
  EXPECT_TRUE((*second)["next_cursor"].is_null());
  auto unknown = server::page_of(all, {2, std::string("nope")}, running);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().field, "cursor");
  // The last page is not promised a next one it does not have: exactly `limit` kept items, no cursor.
  auto exact = server::page_of(all, {1, std::string("r5")}, running);
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ((*exact)["items"][0]["id"], "r2");
  EXPECT_TRUE((*exact)["next_cursor"].is_null());
}
