#include "server/platform/config.hpp"

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <sstream>

#include <openssl/pem.h>
#include <openssl/x509.h>
#include <toml++/toml.h>

#include "core/payout_destination.hpp"
#include "core/sepa.hpp"
#include "core/text.hpp"
#include "util/time.hpp"

namespace gpunex::server {

namespace {

std::optional<std::string> parse_int(const std::string& v, std::int64_t min, std::int64_t max, std::int64_t& out) {
  try {
    std::size_t pos = 0;
    long long n = std::stoll(v, &pos);
    if (pos != v.size()) return "must be a whole number, got '" + v + "'";
    if (n < min || n > max) return "must be between " + std::to_string(min) + " and " + std::to_string(max);
    out = n;
    return std::nullopt;
  } catch (const std::exception&) {
    return "must be a whole number, got '" + v + "'";
  }
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

// The shortest text that reads back as the same double ("1.15", "500").
std::string format_number(double d) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d);
  return ec == std::errc{} ? std::string(buf, end) : std::to_string(d);
}

// A bound as a person reads it: 1000000, not 1e+06.
std::string format_bound(double d) {
  if (d > -1e15 && d < 1e15 && d == static_cast<double>(static_cast<std::int64_t>(d)))
    return std::to_string(static_cast<std::int64_t>(d));
  return format_number(d);
}

// A string as a TOML basic string literal.
std::string toml_string(const std::string& v) {
  std::string out = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// "heartbeat_interval" -> {"GPUNEX_HEARTBEAT_INTERVAL", "--heartbeat-interval"}.
std::pair<std::string, std::string> env_and_flag(const std::string& name) {
  std::string env = "GPUNEX_";
  std::string flag = "--";
  for (char c : name) {
    env += static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
    flag += c == '_' ? '-' : c;
  }
  return {env, flag};
}

// CLI11's way of showing a range: "INT in [1 - 3600]".
std::string range_type(const char* type, const std::string& min, const std::string& max) {
  return std::string(type) + " in [" + min + " - " + max + "]";
}

//! A whole number in [min, max], stored through `set` and read back through `get`.
ConfigKey integer_key(std::string name, std::string help, std::function<void(Config&, std::int64_t)> set,
                      std::function<std::int64_t(const Config&)> get, std::int64_t min, std::int64_t max) {
  auto [env, flag] = env_and_flag(name);
  return ConfigKey{name,
                   env,
                   flag,
                   std::move(help),
                   [set, min, max](Config& cfg, const std::string& v) -> std::optional<std::string> {
                     std::int64_t n = 0;
                     if (auto err = parse_int(v, min, max, n)) return err;
                     set(cfg, n);
                     return std::nullopt;
                   },
                   [get](const Config& cfg) { return std::to_string(get(cfg)); },
                   range_type("INT", std::to_string(min), std::to_string(max))};
}

template <class T>
ConfigKey int_key(std::string name, std::string help, T Config::*member, std::int64_t min, std::int64_t max) {
  return integer_key(
      std::move(name), std::move(help), [member](Config& cfg, std::int64_t n) { cfg.*member = static_cast<T>(n); },
      [member](const Config& cfg) { return static_cast<std::int64_t>(cfg.*member); }, min, max);
}

//! A decimal number in [min, max], stored through `set` and read back through `get` (the member may be
//! nested or scaled).
ConfigKey number_key(std::string name, std::string help, std::function<void(Config&, double)> set,
                     std::function<double(const Config&)> get, double min, double max) {
  auto [env, flag] = env_and_flag(name);
  return ConfigKey{name,
                   env,
                   flag,
                   std::move(help),
                   [set, min, max](Config& cfg, const std::string& v) -> std::optional<std::string> {
                     std::size_t used = 0;
                     double d = 0;
                     try {
                       d = std::stod(v, &used);
                     } catch (const std::exception&) {
                       used = 0;
                     }
                     if (used == 0 || used != v.size() || !(d >= min && d <= max))
                       return "must be a number from " + format_bound(min) + " to " + format_bound(max) + ", got '" +
                              v + "'";
                     set(cfg, d);
                     return std::nullopt;
                   },
                   [get](const Config& cfg) { return format_number(get(cfg)); },
                   range_type("DECIMAL", format_bound(min), format_bound(max))};
}

// A true/false key ("1" and "0" too).
ConfigKey bool_key(std::string name, std::string help, bool Config::*member) {
  auto [env, flag] = env_and_flag(name);
  return ConfigKey{name,
                   env,
                   flag,
                   std::move(help),
                   [member](Config& cfg, const std::string& v) -> std::optional<std::string> {
                     if (v == "true" || v == "1") {
                       cfg.*member = true;
                     } else if (v == "false" || v == "0") {
                       cfg.*member = false;
                     } else {
                       return "must be true or false, got '" + v + "'";
                     }
                     return std::nullopt;
                   },
                   [member](const Config& cfg) -> std::string { return cfg.*member ? "true" : "false"; },
                   "BOOL"};
}

ConfigKey string_key(std::string name, std::string help, std::string Config::*member,
                     std::function<std::optional<std::string>(const std::string&)> check = nullptr) {
  auto [env, flag] = env_and_flag(name);
  return ConfigKey{name,
                   env,
                   flag,
                   std::move(help),
                   [member, check](Config& cfg, const std::string& v) -> std::optional<std::string> {
                     if (check) {
                       if (auto err = check(v)) return err;
                     }
                     cfg.*member = v;
                     return std::nullopt;
                   },
                   [member](const Config& cfg) { return toml_string(cfg.*member); },
                   "TEXT"};
}

std::optional<std::string> check_listen(const std::string& v) {
  auto colon = v.rfind(':');
  if (colon == std::string::npos || colon == 0) return "must be HOST:PORT, got '" + v + "'";
  std::int64_t port = 0;
  if (parse_int(v.substr(colon + 1), 0, 65535, port)) return "port must be between 0 and 65535, got '" + v + "'";
  return std::nullopt;
}

std::optional<std::string> check_db(const std::string& v) {
  if (v.rfind("sqlite:", 0) == 0 && v.size() > 7) return std::nullopt;
  if (v.rfind("postgresql://", 0) == 0 || v.rfind("postgres://", 0) == 0) return std::nullopt;
  return "must be sqlite:PATH or a postgresql:// URL, got '" + v + "'";
}

std::optional<std::string> check_level(const std::string& v) {
  for (const char* l : {"trace", "debug", "info", "warn", "error", "off"}) {
    if (v == l) return std::nullopt;
  }
  return "must be one of trace, debug, info, warn, error, off; got '" + v + "'";
}

std::optional<std::string> check_url(const std::string& v) {
  if (v.empty() || v.rfind("http://", 0) == 0 || v.rfind("https://", 0) == 0) return std::nullopt;
  return "must start with http:// or https://, got '" + v + "'";
}

}  // namespace

std::string Config::host() const {
  auto colon = listen.rfind(':');
  std::string h = listen.substr(0, colon);
  if (h.size() > 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  return h;
}

std::uint16_t Config::port() const {
  return static_cast<std::uint16_t>(std::stoi(listen.substr(listen.rfind(':') + 1)));
}

bool Config::mail_carries_secrets() const {
  return smtp_url.rfind("smtps://", 0) == 0 || (smtp_url.rfind("smtp://", 0) == 0 && smtp_require_tls);
}

bool Config::is_trusted_proxy(std::string_view ip) const {
  return core::in_any(trusted_proxy_ranges, ip);
}

std::string Config::base_url() const {
  if (!public_url.empty()) {
    std::string u = public_url;
    while (!u.empty() && u.back() == '/') u.pop_back();
    return u;
  }
  std::string h = host();
  if (h == "0.0.0.0" || h == "::") h = "127.0.0.1";
  return std::string(tls_cert.empty() ? "http" : "https") + "://" + h + ":" + std::to_string(port());
}

const std::vector<ConfigKey>& config_keys() {
  static const std::vector<ConfigKey> keys = [] {
    std::vector<ConfigKey> k;
    k.push_back(string_key("listen", "address to serve on, HOST:PORT (port 0 picks a free one)", &Config::listen,
                           check_listen));
    k.push_back(string_key("db", "store: sqlite:PATH or postgresql://user:pass@host:port/db", &Config::db, check_db));
    k.push_back(string_key("data_dir", "folder for local files (mail drop, uploads)", &Config::data_dir));
    k.push_back(string_key("public_url", "URL clients reach this server at (mails, installer); default from listen",
                           &Config::public_url, check_url));
    k.push_back(string_key("trusted_proxies",
                           "comma-separated proxy addresses or CIDR ranges (10.0.0.5, 10.0.0.0/8, fd00::/8) whose "
                           "X-Forwarded-For and X-Forwarded-Proto are believed (the client's address for rate "
                           "limits and logs; HTTPS for Secure cookies and HSTS)",
                           &Config::trusted_proxies));
    k.back().set = [](Config& cfg, const std::string& v) -> std::optional<std::string> {
      auto parsed = core::parse_ip_ranges(v);
      if (!parsed.error.empty()) return parsed.error;
      cfg.trusted_proxies = v;
      cfg.trusted_proxy_ranges = std::move(parsed.ranges);
      return std::nullopt;
    };
    k.push_back(string_key("metrics_token", "secret for GET /metrics (Authorization: Bearer TOKEN); without it only "
                                            "loopback callers not behind a proxy, and admins",
                           &Config::metrics_token));
    k.back().show = [](const Config& cfg) { return toml_string(cfg.metrics_token.empty() ? "" : "***"); };
    k.push_back(
        int_key("heartbeat_interval", "seconds between agent heartbeats", &Config::heartbeat_interval_s, 1, 3600));
    k.push_back(int_key("offline_after_missed", "missed heartbeats before a machine is Offline",
                        &Config::offline_after_missed, 1, 100));
    k.push_back(int_key("telemetry_retention_days", "days of per-minute telemetry and presence kept",
                        &Config::telemetry_retention_days, 1, 3650));
    k.push_back(int_key("telemetry_flush",
                        "seconds between batched writes of each GPU's latest sample and per-minute sums (other "
                        "replicas show them this much later)",
                        &Config::telemetry_flush_s, 1, 3600));
    k.push_back(int_key("threads", "I/O threads (0: one per core)", &Config::threads, 0, 256));
    k.push_back(int_key("body_limit_bytes", "largest request body accepted (larger: 413)", &Config::body_limit_bytes,
                        1024, std::int64_t{1} << 30));
    k.push_back(int_key("header_timeout", "seconds to receive a request's header", &Config::header_timeout_s, 1, 600));
    k.push_back(int_key("read_timeout", "seconds to receive a request's body", &Config::read_timeout_s, 1, 3600));
    k.push_back(int_key("idle_timeout", "seconds a keep-alive connection may idle", &Config::idle_timeout_s, 1, 3600));
    k.push_back(int_key("max_connections", "open connections in all; more are closed at once", &Config::max_connections,
                        1, 1000000));
    k.push_back(int_key("max_connections_per_ip", "open connections from one client address; more are closed at once",
                        &Config::max_connections_per_ip, 1, 1000000));
    k.push_back(
        int_key("shutdown_grace", "seconds SIGTERM waits for requests in flight", &Config::shutdown_grace_s, 0, 600));
    k.push_back(string_key("tls_cert", "PEM certificate chain; with tls_key enables HTTPS", &Config::tls_cert));
    k.push_back(string_key("tls_key", "PEM private key for tls_cert", &Config::tls_key));
    k.push_back(string_key("log_level", "trace, debug, info, warn, error or off", &Config::log_level, check_level));
    k.push_back(int_key("db_pool_size", "store connections", &Config::db_pool_size, 1, 256));
    k.push_back(int_key("session_ttl_hours", "how long a login lasts", &Config::session_ttl_hours, 1, 24 * 365));
    k.push_back(int_key("email_confirmation_ttl_hours", "hours a link confirming an e-mail address works",
                        &Config::email_confirmation_ttl_hours, 1, 24 * 30));
    k.push_back(int_key("email_confirmations_per_hour",
                        "confirmation mails one account may ask for in an hour (signup, change, resend)",
                        &Config::email_confirmations_per_hour, 1, 1000));
    k.push_back(int_key("password_reset_ttl_minutes", "minutes a link that sets a forgotten password works",
                        &Config::password_reset_ttl_minutes, 5, 24 * 60));
    k.push_back(int_key("password_resets_per_hour",
                        "password reset links mailed to one account in an hour (more requests mail nothing)",
                        &Config::password_resets_per_hour, 1, 100));
    k.push_back(int_key("idempotency_retention_hours",
                        "how long a mutating request's answer is kept for Idempotency-Key replay",
                        &Config::idempotency_retention_hours, 1, 24 * 365));
    k.push_back(int_key("idempotency_takeover_s",
                        "seconds after which a retry runs a request whose first attempt (with the same "
                        "Idempotency-Key) committed nothing, as when its replica died; the first is then refused",
                        &Config::idempotency_takeover_s, 1, 3600));
    k.push_back(int_key("auth_rate_limit_per_minute",
                        "requests per minute per address to /v1/auth/signup and /v1/auth/login (then 429); "
                        "logout is not limited",
                        &Config::auth_rate_limit_per_minute, 1, 1000000));
    k.push_back(int_key("login_free_failures",
                        "failed logins per address, and per account, before each next try waits (1 s, doubling, "
                        "at most 15 min; 3 per account from one address); never a lockout",
                        &Config::login_free_failures, 1, 1000000));
    k.push_back(int_key("password_threads", "threads that hash passwords for login and signup, off the I/O "
                                            "threads (0: half the cores, at least 1)",
                        &Config::password_threads, 0, 256));
    k.push_back(int_key("password_queue", "logins and signups waiting for those threads; beyond it, 503 busy",
                        &Config::password_queue, 1, 100000));
    k.push_back(bool_key("access_log", "log every request (true or false)", &Config::access_log));
    k.push_back(ConfigKey{
        "test_clock", "GPUNEX_TEST_CLOCK", "--test-clock",
        "tests only: run on a settable clock starting at this RFC 3339 time, moved by POST /v1/test/clock "
        "(needs enable_test_clock)",
        [](Config& cfg, const std::string& v) -> std::optional<std::string> {
          if (v.empty()) {
            cfg.test_clock_start_ms.reset();
            return std::nullopt;
          }
          auto ms = util::parse_rfc3339(v);
          if (!ms) return "must be an RFC 3339 time such as 2027-01-04T00:00:00Z, got '" + v + "'";
          cfg.test_clock_start_ms = *ms;
          return std::nullopt;
        },
        [](const Config& cfg) -> std::string {
          return "\"" + (cfg.test_clock_start_ms ? util::rfc3339(*cfg.test_clock_start_ms) : std::string()) + "\"";
        }});
    k.push_back(bool_key("enable_test_clock", "allow test_clock (true or false); never set in production",
                         &Config::enable_test_clock));
    k.push_back(string_key("web_dir", "development: serve the dashboard from this folder, re-read per request",
                           &Config::web_dir));
    k.push_back(string_key("port_file", "write the bound port to this file once listening", &Config::port_file));
    k.push_back(string_key("smtp_url", "SMTP server for mail, smtp://host:port (empty: .eml files in <data_dir>/mail)",
                           &Config::smtp_url, [](const std::string& v) -> std::optional<std::string> {
                             if (v.empty() || v.rfind("smtp://", 0) == 0 || v.rfind("smtps://", 0) == 0)
                               return std::nullopt;
                             return "must start with smtp:// or smtps://, got '" + core::redact_url_credentials(v) + "'";
                           }));
    // The URL may hold the SMTP password (smtp://user:pass@host): never shown in full.
    k.back().show = [](const Config& cfg) { return toml_string(core::redact_url_credentials(cfg.smtp_url)); };
    k.push_back(bool_key("smtp_require_tls",
                         "with smtp://, refuse to send unless STARTTLS succeeds; mails carry API keys only over "
                         "smtps:// or with this set (true or false)",
                         &Config::smtp_require_tls));
    k.push_back(string_key("server_secret",
                           "secret sealing what the store keeps for later, e.g. the approval key until revealed "
                           "(empty: <data_dir>/server.key, made at first start, mode 0600)",
                           &Config::server_secret, [](const std::string& v) -> std::optional<std::string> {
                             if (v.empty() || v.size() >= 32) return std::nullopt;
                             return "must be at least 32 characters";
                           }));
    k.back().show = [](const Config& cfg) { return toml_string(cfg.server_secret.empty() ? "" : "***"); };
    k.push_back(string_key("mail_from", "sender of mails, e.g. \"GPUnex <noreply@example.com>\"", &Config::mail_from,
                           [](const std::string& v) -> std::optional<std::string> {
                             if (v.find('@') == std::string::npos || v.find_first_of("\r\n") != std::string::npos) {
                               return "must be an e-mail address, got '" + v + "'";
                             }
                             return std::nullopt;
                           }));
    k.push_back(bool_key("allow_simulated_offers",
                         "demo mode: offer machines on simulated GPUs to customers, each offer marked "
                         "\"simulated\": true (true or false; never in production)",
                         &Config::allow_simulated_offers));
    k.push_back(bool_key("require_challenge_answers",
                         "a benchmark challenge the agent does not answer by its deadline delists the GPU "
                         "(true or false; false only for tests that post benchmark results by hand)",
                         &Config::require_challenge_answers));
    k.push_back(int_key("spot_check_interval_s",
                        "mean seconds between spot checks of a machine's listed, idle GPUs: benchmark challenges "
                        "at random times (uniform in half to one and a half of this); 0 turns them off",
                        &Config::spot_check_interval_s, 0, 30 * 24 * 3600));
    k.push_back(int_key("market_search_wait_ms",
                        "milliseconds marketplace searches wait for the offers to reload after a change, "
                        "before answering from the previous ones until the reload is done",
                        &Config::market_search_wait_ms, 0, 600000));
    k.push_back(int_key("mail_poll_interval_ms", "milliseconds between looks at the mail outbox",
                        &Config::mail_poll_interval_ms, 10, 3600000));
    k.push_back(int_key("mail_retry_base_ms", "first mail retry delay in milliseconds (doubles per attempt, max 1 h)",
                        &Config::mail_retry_base_ms, 10, 3600000));
    k.push_back(int_key("mail_max_attempts",
                        "attempts to deliver a mail before giving it up (and erasing any API key it carries)",
                        &Config::mail_max_attempts, 1, 1000));
    k.push_back(int_key("benchmark_interval_hours", "hours between full benchmark runs of a machine",
                        &Config::benchmark_interval_hours, 1, 24 * 365));
    k.push_back(int_key("benchmark_rerun_min_minutes", "minutes a provider waits between benchmark re-runs",
                        &Config::benchmark_rerun_min_minutes, 0, 24 * 60));
    k.push_back(int_key("benchmark_schedule_interval_ms", "milliseconds between looks for due benchmark runs",
                        &Config::benchmark_schedule_interval_ms, 10, 3600000));
    k.push_back(int_key("benchmark_min_quality_pct",
                        "quality ratio (percent of the model's expected figures) that "
                        "delists below it",
                        &Config::benchmark_min_quality_pct, 1, 100));
    k.push_back(int_key("benchmark_host_ram_pct", "host RAM a machine needs, in percent of its total VRAM",
                        &Config::benchmark_host_ram_pct, 0, 1000));
    k.push_back(int_key("commission_bp", "the platform's commission on rentals, in basis points (2000 = 20%)",
                        &Config::commission_bp, 0, 10000));
    k.push_back(int_key("rentals_settle_interval_s", "seconds between settlements of a running rental (at most an hour)",
                        &Config::rentals_settle_interval_s, 1, 3600));
    k.push_back(int_key("payout_min_weekly_micro", "the least a weekly payout pays, in micro-USDC (20 USDC)",
                        &Config::payout_min_weekly_micro, 0, 1'000'000'000'000));
    k.push_back(int_key("payout_min_monthly_micro", "the least a monthly payout pays, in micro-USDC (1 USDC)",
                        &Config::payout_min_monthly_micro, 0, 1'000'000'000'000));
    k.push_back(int_key("payout_destination_cooldown_hours",
                        "hours before a new payout destination takes effect (against account takeover)",
                        &Config::payout_destination_cooldown_hours, 0, 24 * 30));
    k.push_back(int_key("payouts_interval_s", "seconds between the payouts worker's looks for due payouts",
                        &Config::payouts_interval_s, 1, 86400));
    k.push_back(string_key("payment_instructions",
                           "how customers pay for credit (bank details, a USDC address, whom to write to): shown on "
                           "their Balance page and by gpunex balance",
                           &Config::payment_instructions, [](const std::string& v) -> std::optional<std::string> {
                             if (v.size() <= 2000 && core::is_clean_utf8(v)) return std::nullopt;
                             return "must be plain text of at most 2000 bytes";
                           }));
    k.push_back(string_key("sepa_debtor_name", "the holder of the platform's bank account SEPA payouts leave from",
                           &Config::sepa_debtor_name, [](const std::string& v) -> std::optional<std::string> {
                             if (v.size() <= 70 && core::sepa::sepa_text(v)) return std::nullopt;
                             return "must be at most 70 of SEPA's characters (a-z, 0-9, space, / - ? : ( ) . , ' +)";
                           }));
    k.push_back(string_key("sepa_debtor_iban", "the IBAN of the platform's bank account SEPA payouts leave from",
                           &Config::sepa_debtor_iban, [](const std::string& v) -> std::optional<std::string> {
                             if (v.empty() || core::payout::valid_iban(v)) return std::nullopt;
                             return "must be a valid IBAN without spaces, got '" + v + "'";
                           }));
    k.push_back(string_key("sepa_debtor_bic", "the BIC of that account (optional)", &Config::sepa_debtor_bic,
                           [](const std::string& v) -> std::optional<std::string> {
                             if (v.empty() || core::payout::valid_bic(v)) return std::nullopt;
                             return "must be a BIC such as DEUTDEFF, got '" + v + "'";
                           }));
    k.push_back(string_key("solana_rpc_url", "Solana JSON-RPC node USDC payouts are sent through (empty: they wait)",
                           &Config::solana_rpc_url, [](const std::string& v) -> std::optional<std::string> {
                             if (v.empty() || v.rfind("https://", 0) == 0 || v.rfind("http://127.0.0.1", 0) == 0 ||
                                 v.rfind("http://localhost", 0) == 0) {
                               return std::nullopt;
                             }
                             return "must be an https:// URL (plain http only on loopback), got '" + v + "'";
                           }));
    k.push_back(string_key("solana_keypair_file",
                           "the hot wallet's keypair (solana-keygen's JSON array of 64 bytes), mode 0600",
                           &Config::solana_keypair_file));
    k.push_back(string_key("solana_usdc_mint", "the USDC mint payouts transfer (base58)", &Config::solana_usdc_mint,
                           [](const std::string& v) -> std::optional<std::string> {
                             auto bytes = core::payout::base58_decode(v);
                             if (bytes && bytes->size() == 32) return std::nullopt;
                             return "must be a base58 address of 32 bytes, got '" + v + "'";
                           }));
    k.push_back(int_key("solana_usdc_decimals", "the mint's decimals (USDC: 6)", &Config::solana_usdc_decimals, 0, 18));
    k.push_back(int_key("solana_compute_unit_price", "priority fee, micro-lamports per compute unit",
                        &Config::solana_compute_unit_price, 0, 1'000'000'000));
    k.push_back(int_key("solana_rpc_timeout_ms", "milliseconds a Solana JSON-RPC call may take",
                        &Config::solana_rpc_timeout_ms, 100, 120000));
    k.push_back(int_key("worker_lease_s",
                        "seconds a background worker's lease outlives a replica that died (another takes over then)",
                        &Config::worker_lease_s, 1, 3600));
    k.push_back(int_key("rentals_tick_ms", "milliseconds between the rentals worker's looks for due stops",
                        &Config::rentals_tick_ms, 50, 600000));
    k.push_back(number_key(
        "benchmark_storage_read_min_mbs", "storage sequential read a machine needs, MB/s",
        [](Config& c, double v) { c.benchmark_policy.storage_seq_read_min_mbs = v; },
        [](const Config& c) { return c.benchmark_policy.storage_seq_read_min_mbs; }, 0, 1e6));
    k.push_back(number_key(
        "benchmark_net_down_floor_mbps", "network download every machine needs, Mbit/s (the VRAM rule may ask more)",
        [](Config& c, double v) { c.benchmark_policy.net_down_min_mbps_floor = v; },
        [](const Config& c) { return c.benchmark_policy.net_down_min_mbps_floor; }, 0, 1e6));
    k.push_back(number_key(
        "benchmark_net_down_cap_mbps", "the most network download the VRAM rule asks, Mbit/s",
        [](Config& c, double v) { c.benchmark_policy.net_down_min_mbps_cap = v; },
        [](const Config& c) { return c.benchmark_policy.net_down_min_mbps_cap; }, 0, 1e6));
    k.push_back(number_key(
        "benchmark_net_down_per_vram_gib", "network download asked per GiB of total VRAM, Mbit/s",
        [](Config& c, double v) { c.benchmark_policy.net_down_mbps_per_vram_gib = v; },
        [](const Config& c) { return c.benchmark_policy.net_down_mbps_per_vram_gib; }, 0, 1e4));
    k.push_back(number_key(
        "benchmark_net_up_pct", "network upload needed, in percent of the download minimum",
        [](Config& c, double v) { c.benchmark_policy.net_up_share_of_down = v / 100.0; },
        [](const Config& c) { return c.benchmark_policy.net_up_share_of_down * 100.0; }, 0, 1000));
    k.push_back(number_key(
        "benchmark_cpu_cores_per_gpu", "CPU cores a machine needs per GPU",
        [](Config& c, double v) { c.benchmark_policy.cpu_cores_per_gpu = v; },
        [](const Config& c) { return c.benchmark_policy.cpu_cores_per_gpu; }, 0, 256));
    k.push_back(number_key(
        "rank_enterprise_boost", "marketplace rank factor for Enterprise providers",
        [](Config& c, double v) { c.rank.enterprise_boost = v; },
        [](const Config& c) { return c.rank.enterprise_boost; }, 0.1, 10));
    k.push_back(number_key(
        "rank_commitment_6m_boost", "rank factor for a commitment of 6 to 11 months",
        [](Config& c, double v) { c.rank.commitment_mid_boost = v; },
        [](const Config& c) { return c.rank.commitment_mid_boost; }, 0.1, 10));
    k.push_back(number_key(
        "rank_commitment_12m_boost", "rank factor for a commitment of 12 months or more",
        [](Config& c, double v) { c.rank.commitment_long_boost = v; },
        [](const Config& c) { return c.rank.commitment_long_boost; }, 0.1, 10));
    k.push_back(number_key(
        "rank_reliability_prior", "reliability (0-100) a machine carries until it is scored",
        [](Config& c, double v) { c.rank.reliability_prior = v; },
        [](const Config& c) { return c.rank.reliability_prior; }, 0, 100));
    k.push_back(integer_key(
        "reliability_window_days", "days of history the reliability score weighs (today included)",
        [](Config& c, std::int64_t v) { c.reliability.window_days = static_cast<int>(v); },
        [](const Config& c) { return std::int64_t{c.reliability.window_days}; }, 1, 365));
    k.push_back(number_key(
        "reliability_half_life_days", "days after which a day weighs half as much in the reliability score",
        [](Config& c, double v) { c.reliability.half_life_days = v; },
        [](const Config& c) { return c.reliability.half_life_days; }, 0.1, 365));
    k.push_back(number_key(
        "reliability_weight_uptime", "weight of uptime against the schedule in the reliability score",
        [](Config& c, double v) { c.reliability.weight_uptime = v; },
        [](const Config& c) { return c.reliability.weight_uptime; }, 0, 1));
    k.push_back(number_key(
        "reliability_weight_jobs", "weight of job completion in the reliability score",
        [](Config& c, double v) { c.reliability.weight_jobs = v; },
        [](const Config& c) { return c.reliability.weight_jobs; }, 0, 1));
    k.push_back(number_key(
        "reliability_weight_stability", "weight of benchmark stability in the reliability score",
        [](Config& c, double v) { c.reliability.weight_stability = v; },
        [](const Config& c) { return c.reliability.weight_stability; }, 0, 1));
    k.push_back(number_key(
        "reliability_job_prior_count", "pseudo-jobs job completion starts with, so one rental does not swing it",
        [](Config& c, double v) { c.reliability.job_prior_count = v; },
        [](const Config& c) { return c.reliability.job_prior_count; }, 0, 1000));
    k.push_back(number_key(
        "reliability_job_prior_rate", "completion rate of those pseudo-jobs (0-1)",
        [](Config& c, double v) { c.reliability.job_prior_rate = v; },
        [](const Config& c) { return c.reliability.job_prior_rate; }, 0, 1));
    k.push_back(number_key(
        "reliability_maintenance_notice_hours", "hours ahead maintenance must be declared to not count against uptime",
        [](Config& c, double v) { c.reliability.maintenance_notice_ms = static_cast<std::int64_t>(v * 3'600'000); },
        [](const Config& c) { return static_cast<double>(c.reliability.maintenance_notice_ms) / 3'600'000; }, 0,
        24 * 365));
    k.push_back(number_key(
        "reliability_throttle_penalty", "share of a benchmark run's stability lost when throttled the whole run (0-1)",
        [](Config& c, double v) { c.reliability.throttle_penalty = v; },
        [](const Config& c) { return c.reliability.throttle_penalty; }, 0, 1));
    k.push_back(number_key(
        "reliability_stability_prior", "benchmark stability (0-1) while no run falls in the window",
        [](Config& c, double v) { c.reliability.stability_prior = v; },
        [](const Config& c) { return c.reliability.stability_prior; }, 0, 1));
    k.push_back(number_key(
        "reliability_recovered_points", "a score has recovered when its events cost less than these points",
        [](Config& c, double v) { c.reliability.recovered_points = v; },
        [](const Config& c) { return c.reliability.recovered_points; }, 0.01, 100));
    k.push_back(int_key("reliability_interval_s", "seconds between the reliability worker's rounds",
                        &Config::reliability_interval_s, 1, 86400));
    k.push_back(number_key(
        "reliability_alert_below", "a provider is told by mail when a machine's reliability falls below this (0-100)",
        [](Config& c, double v) { c.reliability_alert_below = v; },
        [](const Config& c) { return c.reliability_alert_below; }, 0, 100));
    k.push_back(number_key(
        "reliability_alert_rearm_points", "points above the alert level a score must regain before it alerts again",
        [](Config& c, double v) { c.reliability_alert_rearm_points = v; },
        [](const Config& c) { return c.reliability_alert_rearm_points; }, 0, 100));
    k.push_back(integer_key(
        "price_recommendation_min_listings",
        "listings a region (then all regions) needs before the catalog price is used",
        [](Config& c, std::int64_t v) { c.recommendation.min_listings = static_cast<std::size_t>(v); },
        [](const Config& c) { return static_cast<std::int64_t>(c.recommendation.min_listings); }, 1, 1000));
    k.push_back(integer_key(
        "price_recommendation_window_days",
        "days back the recommendation counts a listing that was active (priced, listed, online)",
        [](Config& c, std::int64_t v) { c.recommendation.window_days = static_cast<int>(v); },
        [](const Config& c) { return std::int64_t{c.recommendation.window_days}; }, 1, 90));
    return k;
  }();
  return keys;
}

core::Status apply_config_values(Config& cfg, const std::vector<std::pair<std::string, std::string>>& values,
                                 const std::string& source) {
  for (const auto& [name, value] : values) {
    const ConfigKey* key = nullptr;
    for (const auto& k : config_keys()) {
      if (k.name == name) key = &k;
    }
    if (!key) {
      return core::Error::make(core::ErrorCode::invalid_field, source + ": unknown configuration key '" + name + "'",
                               name);
    }
    if (auto err = key->set(cfg, value)) {
      // Named as it was written where it came from: the variable, the flag, or the file's key.
      const std::string as_given = source == kFromEnvironment   ? key->env + " (" + name + ")"
                                   : source == kFromCommandLine ? key->flag + " (" + name + ")"
                                                                : name;
      return core::Error::make(core::ErrorCode::invalid_field, source + ": " + as_given + " " + *err, name);
    }
  }
  return core::ok_status();
}

core::Result<std::vector<std::pair<std::string, std::string>>> read_toml_file(const std::string& path) {
  if (std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "r")); !f) {
    return core::Error::make(core::ErrorCode::invalid_field,
                             "config file " + path + ": cannot read: " + std::strerror(errno));
  }
  toml::table tbl;
  try {
    tbl = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    std::ostringstream msg;
    msg << path << ": " << e.description() << " at line " << e.source().begin.line;
    return core::Error::make(core::ErrorCode::invalid_field, msg.str());
  }
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [k, node] : tbl) {
    std::string key(k.str());
    if (auto s = node.value_exact<std::string>()) {
      out.emplace_back(key, *s);
    } else if (auto i = node.value_exact<std::int64_t>()) {
      out.emplace_back(key, std::to_string(*i));
    } else if (auto d = node.value_exact<double>()) {
      out.emplace_back(key, format_number(*d));
    } else if (auto b = node.value_exact<bool>()) {
      out.emplace_back(key, *b ? "true" : "false");
    } else {
      return core::Error::make(core::ErrorCode::invalid_field,
                               path + ": " + key + " must be a string, number or boolean" +
                                   (node.is_table() ? " (the keys go at the top level, in no [table])" : ""),
                               key);
    }
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> read_env_values() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& k : config_keys()) {
    if (const char* v = std::getenv(k.env.c_str())) out.emplace_back(k.name, v);
  }
  return out;
}

core::Status validate_config(const Config& cfg) {
  if (cfg.test_clock_start_ms && !cfg.enable_test_clock) {
    return core::Error::make(core::ErrorCode::invalid_field,
                             "test_clock is for tests only: it lets any admin move the server's time; "
                             "set enable_test_clock = true as well to use it",
                             "test_clock");
  }
  if (cfg.reliability.weight_uptime + cfg.reliability.weight_jobs + cfg.reliability.weight_stability <= 0) {
    return core::Error::make(core::ErrorCode::invalid_field,
                             "reliability_weight_uptime, reliability_weight_jobs and reliability_weight_stability "
                             "cannot all be 0",
                             "reliability_weight_uptime");
  }
  if (!cfg.trusted_proxies.empty() && cfg.public_url.empty()) {
    return core::Error::make(core::ErrorCode::invalid_field,
                             "public_url must be set when trusted_proxies is: behind a load balancer the links "
                             "this server hands out (mails, the agent install script) must name the balancer's "
                             "address, not this server's own (" +
                                 cfg.base_url() + ")",
                             "public_url");
  }
  if (!cfg.solana_rpc_url.empty() && cfg.solana_keypair_file.empty()) {
    return core::Error::make(core::ErrorCode::invalid_field,
                             "solana_rpc_url needs solana_keypair_file: the hot wallet that signs USDC payouts",
                             "solana_keypair_file");
  }
  if (!cfg.web_dir.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(std::filesystem::path(cfg.web_dir) / "index.html", ec)) {
      return core::Error::make(
          core::ErrorCode::invalid_field,
          "web_dir '" + cfg.web_dir + "': no index.html there (the dashboard's folder is web/ in the source tree)",
          "web_dir");
    }
  }
  if (cfg.tls_cert.empty() != cfg.tls_key.empty()) {
    return core::Error::make(core::ErrorCode::invalid_field, "tls_cert and tls_key must be given together",
                             cfg.tls_cert.empty() ? "tls_cert" : "tls_key");
  }
  if (cfg.tls_cert.empty()) return core::ok_status();
  auto fail = [](const std::string& key, const std::string& file, const std::string& why) {
    return core::Error::make(core::ErrorCode::invalid_field, key + " '" + file + "': " + why, key);
  };
  std::unique_ptr<std::FILE, FileCloser> cert_file(std::fopen(cfg.tls_cert.c_str(), "r"));
  if (!cert_file) return fail("tls_cert", cfg.tls_cert, std::string("cannot read: ") + std::strerror(errno));
  std::unique_ptr<X509, void (*)(X509*)> cert(PEM_read_X509(cert_file.get(), nullptr, nullptr, nullptr), &X509_free);
  if (!cert) return fail("tls_cert", cfg.tls_cert, "not a PEM certificate");
  std::unique_ptr<std::FILE, FileCloser> key_file(std::fopen(cfg.tls_key.c_str(), "r"));
  if (!key_file) return fail("tls_key", cfg.tls_key, std::string("cannot read: ") + std::strerror(errno));
  // No passphrase callback: OpenSSL's default would prompt on the terminal for an encrypted key.
  auto no_passphrase = [](char*, int, int, void*) { return 0; };
  std::unique_ptr<EVP_PKEY, void (*)(EVP_PKEY*)> key(
      PEM_read_PrivateKey(key_file.get(), nullptr, no_passphrase, nullptr), &EVP_PKEY_free);
  if (!key) return fail("tls_key", cfg.tls_key, "not a PEM private key (or it is encrypted)");
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    return fail("tls_key", cfg.tls_key, "is not the private key of tls_cert '" + cfg.tls_cert + "'");
  }
  return core::ok_status();
}

std::string config_help() {
  std::ostringstream out;
  out << "Configuration keys, each with its default as a TOML line (TOML file < environment < flags):\n";
  const Config defaults;
  for (const auto& k : config_keys()) {
    out << "  " << k.name << " = " << k.show(defaults) << "  (" << k.env << ", " << k.flag << ")\n      " << k.help
        << "\n";
  }
  return out.str();
}

}  // namespace gpunex::server
