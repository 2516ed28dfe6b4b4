#pragma once
// Server configuration: built-in defaults, overridden by a TOML file, then by
// GPUNEX_* environment variables, then by command-line flags. Every key is
// listed once in config_keys(), which drives all three sources and --help.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/benchmark.hpp"
#include "core/ip_range.hpp"
#include "core/price_recommendation.hpp"
#include "core/rank.hpp"
#include "core/reliability.hpp"
#include "core/result.hpp"

namespace gpunex::server {

struct Config {
  std::string listen = "127.0.0.1:8080";
  std::string db = "sqlite:var/gpunex.db";
  std::string data_dir = "var";
  std::string public_url;  // empty: http(s)://<listen>
  std::string trusted_proxies;  // comma-separated addresses or CIDR ranges whose X-Forwarded-For/-Proto are believed
  std::vector<core::IpRange> trusted_proxy_ranges;  // trusted_proxies, parsed when set
  std::string metrics_token;    // when set, GET /metrics with "Authorization: Bearer <token>" (or an admin)
  int heartbeat_interval_s = 15;
  int offline_after_missed = 3;       // heartbeats missed before a machine is Offline
  int telemetry_retention_days = 30;  // per-minute telemetry and presence
  int telemetry_flush_s = 60;         // latest samples are written in batches this often
  int threads = 0;
  std::int64_t body_limit_bytes = 1 << 20;
  int header_timeout_s = 10;
  int read_timeout_s = 30;
  int idle_timeout_s = 60;
  int max_connections = 4096;        // open connections in all
  int max_connections_per_ip = 256;  // open connections from one client address
  int shutdown_grace_s = 10;
  std::string tls_cert;
  std::string tls_key;
  std::string log_level = "info";
  int db_pool_size = 8;
  int session_ttl_hours = 168;
  int email_confirmation_ttl_hours = 48;   // how long a link confirming an e-mail address works
  int email_confirmations_per_hour = 5;    // confirmation mails one account may ask for in an hour
  int password_reset_ttl_minutes = 60;     // how long a link that sets a forgotten password works
  int password_resets_per_hour = 3;        // password reset links mailed to one account in an hour
  int idempotency_retention_hours = 24;  // an Idempotency-Key's answer is replayed this long
  int idempotency_takeover_s = 10;       // a retry takes over a key whose first attempt committed nothing this long
  int auth_rate_limit_per_minute = 60;
  int login_free_failures = 10;  // failed logins per address (and per account) before waits begin (1 s, doubling)
  int password_threads = 0;      // threads that hash passwords (login, signup); 0: half the cores, at least 1
  int password_queue = 64;       // requests waiting for them; beyond it, 503 busy
  bool access_log = true;
  std::string web_dir;    // serve the dashboard from this folder instead of the embedded copy (development)
  std::string port_file;  // written with the bound port once listening (tests, scripts)
  std::string smtp_url;   // smtp://host:port; empty: mails are written as .eml files under <data_dir>/mail/
  bool smtp_require_tls = false;  // smtp://: STARTTLS required (smtps:// always is); only then may a mail carry a key
  //! The secret that seals what the store keeps for later (the approval key's one-time reveal). Empty: read from
  //! <data_dir>/server.key, made (0600) at the first start; replicas sharing a database must share it.
  std::string server_secret;
  std::string mail_from = "GPUnex <noreply@gpunex.localhost>";
  //! Demo mode: machines on simulated GPUs are offered to customers (each offer says "simulated": true).
  //! Off, the marketplace offers only machines whose agent found real GPUs.
  bool allow_simulated_offers = false;
  int spot_check_interval_s = 24 * 3600;  // mean seconds between a machine's spot checks (issue 21); 0: none
  bool require_challenge_answers = true;  // a benchmark challenge unanswered by its deadline delists (issue 21)
  int market_search_wait_ms = 25;              // how long searches wait for the offer book's reload
  int mail_poll_interval_ms = 5000;            // how often the mail worker looks at the outbox
  int mail_retry_base_ms = 30000;              // first retry delay; doubles per failed attempt, capped at one hour
  int mail_max_attempts = 20;                  // then the mail is given up (about 13 hours with the defaults)
  int benchmark_interval_hours = 168;          // a full benchmark run this often (and after driver/GPU changes)
  int benchmark_rerun_min_minutes = 60;        // a provider's re-run button, per machine
  int benchmark_schedule_interval_ms = 60000;  // how often the scheduler looks for due runs
  int benchmark_min_quality_pct = 85;          // quality ratio below this delists
  int benchmark_host_ram_pct = 100;            // host RAM needed, as a share of the machine's total VRAM
  int commission_bp = 2000;                     // the platform's share of rental revenue, basis points (20%)
  int rentals_settle_interval_s = 3600;        // a running rental is settled into the ledger this often
  std::int64_t payout_min_weekly_micro = 20'000'000;  // a weekly payout pays at least this (micro-USDC)
  std::int64_t payout_min_monthly_micro = 1'000'000;  // a monthly one at least this
  int payout_destination_cooldown_hours = 48;  // a new payout destination takes effect after this
  int payouts_interval_s = 60;                 // how often the payouts worker looks for due payouts
  std::string sepa_debtor_name;                // the platform's bank account SEPA payouts are paid from
  std::string payment_instructions;            // how customers pay for credit: shown on their Balance page
  std::string sepa_debtor_iban;
  std::string sepa_debtor_bic;
  // USDC payouts on Solana: a JSON-RPC node, the hot wallet's keypair file (0600), the mint.
  std::string solana_rpc_url;                  // empty: USDC payout runs are held
  std::string solana_keypair_file;
  std::string solana_usdc_mint = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";  // mainnet USDC
  int solana_usdc_decimals = 6;
  std::int64_t solana_compute_unit_price = 0;  // micro-lamports per compute unit (priority fee)
  int solana_rpc_timeout_ms = 10000;
  int worker_lease_s = 30;                     // a dead replica's background work is taken over after this
  int rentals_tick_ms = 5000;                  // how often the rentals worker looks for due stops and settlements
  core::bench::Policy benchmark_policy;        // machine minimums (storage, network, CPU); DESIGN §3.8
  core::RankConfig rank;                       // marketplace rank constants (DESIGN §4)
  core::RecommendationConfig recommendation;   // price recommendation constants (DESIGN §4)
  //! Reliability score constants (DESIGN §4); its prior_score is rank.reliability_prior (reliability_settings()).
  core::reliability::Config reliability;
  int reliability_interval_s = 60;             // how often the reliability worker brings every machine's score up to date
  double reliability_alert_below = 80;         // a provider is told when a machine's score falls below this
  double reliability_alert_rearm_points = 2;   // ... and again only after it rose this far above it
  //! Tests only: the server runs on a settable clock starting here, moved by POST /v1/test/clock.
  //! Refused at start unless enable_test_clock is also set, so no production config turns it on by a typo.
  std::optional<std::int64_t> test_clock_start_ms;
  bool enable_test_clock = false;

  //! host and port parsed from listen.
  std::string host() const;
  std::uint16_t port() const;
  //! The URL this server is reached at, for mails and the installer.
  std::string base_url() const;
  //! Whether mail travels encrypted to the SMTP server (smtps://, or smtp:// with smtp_require_tls), so a
  //! mail may carry an API key; otherwise mails carry links to the dashboard instead.
  bool mail_carries_secrets() const;
  //! Whether `ip` is one of trusted_proxies (or in one of its ranges).
  bool is_trusted_proxy(std::string_view ip) const;
};

//! One configuration key: its TOML name, environment variable, flag, help, parser and printer.
struct ConfigKey {
  std::string name;  // TOML key, e.g. "heartbeat_interval"
  std::string env;   // GPUNEX_HEARTBEAT_INTERVAL
  std::string flag;  // --heartbeat-interval
  std::string help;
  //! Parses a textual value into the config; returns an error message (without the key name) on failure.
  std::function<std::optional<std::string>(Config&, const std::string&)> set;
  //! The key's value in a config as a TOML value (strings quoted); --help prints it for Config{}.
  std::function<std::string(const Config&)> show;
  //! What --help shows for the value: "TEXT", "BOOL", "INT in [1 - 3600]", "DECIMAL in [0.1 - 10]".
  std::string type_name = "TEXT";
};

const std::vector<ConfigKey>& config_keys();

//! The `source` names apply_config_values gives the environment's and the flags' values: its errors name
//! the variable (GPUNEX_...) or the flag (--...) for them, the key for any other source (a file's path).
inline constexpr const char* kFromEnvironment = "environment";
inline constexpr const char* kFromCommandLine = "command line";

//! Applies key=value pairs from one source; the error names the key and the source.
core::Status apply_config_values(Config& cfg, const std::vector<std::pair<std::string, std::string>>& values,
                                 const std::string& source);
//! Reads a TOML file into key=value pairs: strings, integers, decimals and booleans (nested tables and
//! arrays are refused; keys and ranges are checked by apply_config_values).
core::Result<std::vector<std::pair<std::string, std::string>>> read_toml_file(const std::string& path);
//! The GPUNEX_* variables present in the environment, as key=value pairs.
std::vector<std::pair<std::string, std::string>> read_env_values();
//! Checks cross-key rules: TLS needs both files, and they must be a readable PEM certificate chain and
//! the private key that goes with it. Reads those files; the error names the key and the file.
core::Status validate_config(const Config& cfg);
//! The text listing every key with its default (as a TOML line), variable and flag, for --help.
std::string config_help();

}  // namespace gpunex::server
