// gpunex-server: the control plane. `gpunex-server [flags]` serves;
// `gpunex-server admin ...` runs operator commands.

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>
#include <pthread.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include "core/protocol_version.hpp"
#include "server/api/routes.hpp"
#include "server/billing/credit_command.hpp"
#include "server/billing/settlement.hpp"
#include "server/fleet/benchmarks.hpp"
#include "server/mail/mailer.hpp"
#include "server/market/offers.hpp"
#include "server/onboarding/gpu_catalog.hpp"
#include "server/onboarding/providers.hpp"
#include "server/payouts/payout_runs.hpp"
#include "server/payouts/solana_payouts.hpp"
#include "server/platform/admin_commands.hpp"
#include "server/platform/config.hpp"
#include "server/platform/request_pipeline.hpp"
#include "server/platform/server_key.hpp"
#include "server/reliability/reliability.hpp"
#include "server/rentals/rentals.hpp"
#include "server/web/web_routes.hpp"
#include "server/workers/machines_worker.hpp"
#include "server/workers/mail_worker.hpp"
#include "server/workers/watching.hpp"
#include "server/workers/worker.hpp"
#include "store/migrations.hpp"
#include "util/crypto.hpp"
#include "util/log.hpp"
#include "util/service_notify.hpp"
#include "util/time.hpp"

using namespace gpunex;  // NOLINT: main only

namespace {

//! Blocks SIGINT, SIGTERM and SIGHUP in every thread started after this, so that sigwait() takes them
//! rather than whichever thread they land on.
sigset_t block_stop_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

//! Opens the store, migrates it, seeds the GPU catalog and builds the App on it with the REST routes
//! and the dashboard's; null (after saying why on stderr) when the store fails.
std::unique_ptr<server::App> open_app(const server::Config& cfg) {
  std::unique_ptr<store::Store> st;
  try {
    store::StoreOptions opts;
    opts.pool_size = cfg.db_pool_size;
    st = store::open_store(cfg.db, opts);
    int version = store::migrate(*st);
    util::log_event("info", "store ready", {{"db", st->describe()}, {"schema_version", version}});
    if (const int known = store::migrations().back().version; version > known) {
      // A rolling upgrade: a newer build migrated the shared database. Migrations only add, so this build
      // still works on it; replace it with the newer build.
      util::log_event("warn", "the database schema is newer than this build's: upgrade this replica",
                      {{"schema_version", version}, {"this_build", known}});
    }
  } catch (const std::exception& e) {
    std::cerr << "error: db: " << e.what() << "\n";
    return nullptr;
  }
  const auto clock = server::clock_for(cfg);
  try {
    if (auto same = server::check_server_secret(*st, cfg.server_secret, clock->now_ms()); !same) {
      std::cerr << "error: " << same.error().message << "\n";
      return nullptr;
    }
  } catch (const std::exception& e) {
    std::cerr << "error: db: checking the server secret: " << e.what() << "\n";
    return nullptr;
  }
  if (cfg.test_clock_start_ms) {
    util::log_event("warn", "TEST CLOCK: this server runs on a settable clock, for tests only",
                    {{"now", util::rfc3339(clock->now_ms())}});
  }
  try {
    server::seed_catalog(*st, clock->now_ms());
  } catch (const std::exception& e) {
    std::cerr << "error: db: seeding the GPU catalog: " << e.what() << "\n";
    return nullptr;
  }
  auto app = server::make_app(cfg, std::move(st), clock);
  server::register_web(*app);
  return app;
}

//! The server's background workers, each a thread that holds a named store lease so one replica
//! runs it. Built before the server listens, started once it does, stopped after it has drained.
//! Their links use app_.config().base_url(), which knows the port bound (listen = ...:0 picks one).
class BackgroundWorkers {
 public:
  BackgroundWorkers(server::App& app, const server::Config& cfg,
                    std::optional<server::payouts::SolanaSettings> solana = std::nullopt)
      : app_(app), cfg_(cfg), clock_(app.clock()) {
    if (solana) {
      solana_ = *solana;
      chain_ = server::payouts::make_json_rpc_client(cfg.solana_rpc_url, cfg.solana_rpc_timeout_ms);
    }
    // The mail outbox: SMTP when smtp_url is set, else .eml files under <data_dir>/mail.
    mailer_ = cfg.smtp_url.empty()
                  ? server::mail::make_file_drop_mailer((std::filesystem::path(cfg.data_dir) / "mail").string())
                  : server::mail::make_smtp_mailer(cfg.smtp_url, cfg.smtp_require_tls);
    util::log_event("info", "mail", {{"mailer", mailer_->describe()}});
    add("mail", std::chrono::milliseconds(cfg.mail_poll_interval_ms), [this] {
      server::workers::deliver_due_mail(app_.store(), *mailer_, cfg_.mail_from, cfg_.mail_retry_base_ms,
                                        cfg_.mail_max_attempts, clock_, cfg_.server_secret);
    });

    // Offline detection (missed heartbeats) and telemetry retention, a few times per heartbeat interval.
    machine_settings_ = server::machine_settings(cfg);
    // A break in the sweep longer than a lease takeover takes (its holder gone, another replica taking
    // it once the lease has expired, a round later) and some slack is the platform's own outage.
    const auto sweep_every = std::chrono::milliseconds(std::clamp(cfg.heartbeat_interval_s * 1000 / 3, 200, 5000));
    const std::int64_t outage_after_ms =
        (server::workers::lease_outlives(std::chrono::seconds(cfg.worker_lease_s), sweep_every) + sweep_every +
         std::chrono::seconds(10))
            .count();
    add("machines", sweep_every, [this, outage_after_ms, watching = watching_for(sweep_every)]() mutable {
      const auto now = clock_.now_ms();
      const auto since = watching.begin(now);
      server::workers::sweep_machines(app_.store(), machine_settings_, now, {since, watching.fresh(), outage_after_ms});
      watching.done();
    });

    // Benchmark runs that are due (first registration, weekly, after a driver or GPU change).
    add("benchmarks", std::chrono::milliseconds(cfg.benchmark_schedule_interval_ms), [this] {
      const auto settings = server::benchmark_settings(app_.config());
      server::schedule_benchmarks(app_.store(), settings, clock_.now_ms());
    });

    // Rentals: due stops (max duration, window, balance), lost agents, and settlement at least hourly.
    add("rentals", std::chrono::milliseconds(cfg.rentals_tick_ms),
        [this, watching = watching_for(std::chrono::milliseconds(cfg.rentals_tick_ms))]() mutable {
          server::billing::RentalsRoundSettings settings;
          settings.watching_since_ms = watching.begin(clock_.now_ms());
          settings.settle_interval_ms = std::int64_t{cfg_.rentals_settle_interval_s} * 1000;
          settings.base_url = app_.config().base_url();
          settings.payment_instructions = cfg_.payment_instructions;
          server::billing::run_rentals_round(app_.store(), settings, clock_.now_ms());
          watching.done();
        });

    // Reliability: every machine's days judged up to now, the scores the marketplace shows, alerts.
    // The rentals' outcomes come from rentals/, which the reliability area may not include.
    add("reliability", std::chrono::seconds(cfg.reliability_interval_s), [this] {
      server::reliability::run_round(app_.store(), server::rentals::reliability_jobs,
                                     server::reliability::settings_of(cfg_), clock_.now_ms());
    });

    // Payouts: on each payout day, one payout per provider whose schedule falls due and whose settled
    // earnings reach the minimum (server/payouts/payout_runs); then USDC payouts are sent on Solana
    // and followed up until the chain has them final (server/payouts/solana_payouts).
    add("payouts", std::chrono::seconds(cfg.payouts_interval_s), [this] {
      server::payouts::RunSettings settings;
      settings.minimums.weekly = cfg_.payout_min_weekly_micro;
      settings.minimums.monthly = cfg_.payout_min_monthly_micro;
      settings.solana_configured = chain_ != nullptr;
      settings.base_url = app_.config().base_url();
      const auto now = clock_.now_ms();
      const auto round = server::payouts::run_due_payouts(app_.store(), settings, now);
      if (round.created > 0 || round.held > 0) {
        util::log_event("info", "payouts", {{"created", round.created}, {"held", round.held}});
      }
      if (chain_) {
        const auto sent = server::payouts::send_solana_payouts(app_.store(), *chain_, solana_, app_.config().base_url(),
                                                               clock_.now_ms());
        if (sent.signed_now + sent.paid + sent.failed > 0) {
          util::log_event("info", "solana payouts", {{"signed", sent.signed_now}, {"sent", sent.sent},
                                                    {"paid", sent.paid}, {"failed", sent.failed},
                                                    {"held_runs", sent.held_runs}});
        }
      }
    });

    // Approval keys not revealed within kApiKeyRevealDays lose their kept plaintext.
    add("key_reveals", std::chrono::minutes(10), [this] {
      app_.store().transact([&](store::Tx& tx) { return server::expire_key_reveals(tx, clock_.now_ms()); });
    });

    // Idempotency-Key answers older than idempotency_retention_hours, and requests that died mid-way.
    add("idempotency", std::chrono::minutes(10), [this] {
      app_.store().transact([&](store::Tx& tx) {
        return server::prune_idempotency_keys(tx, clock_.now_ms(),
                                              std::int64_t{cfg_.idempotency_retention_hours} * 3'600'000);
      });
    });

    // Listing activity for the price recommendation's window: which listings are active, every few
    // minutes; kept 90 days (the longest window price_recommendation_window_days allows).
    add("listings", std::chrono::minutes(5), [this] {
      app_.store().transact([&](store::Tx& tx) {
        return server::record_listing_activity(tx, clock_.now_ms(), /*keep_days=*/90, cfg_.allow_simulated_offers);
      });
    });

    // The market's change log (migration 20): each round forgets what the round before had seen, so
    // the log keeps at least five minutes of changes; an offer cache further behind reloads in full.
    add("market_changes", std::chrono::minutes(5), [this, seen = std::optional<std::int64_t>{}]() mutable {
      app_.store().transact([&](store::Tx& tx) {
        if (seen) server::prune_market_changes(tx, *seen);
        seen = server::market_version(tx);
      });
    });
  }
  BackgroundWorkers(const BackgroundWorkers&) = delete;
  BackgroundWorkers& operator=(const BackgroundWorkers&) = delete;

  void start() {
    for (auto& w : workers_) w->start();
  }
  void stop() {
    for (auto& w : workers_) w->stop();
  }

 private:
  //! A worker's watch (workers::Watching) broken by rounds missed for three intervals, or ten seconds.
  static server::workers::Watching watching_for(std::chrono::milliseconds interval) {
    return server::workers::Watching(std::max<std::chrono::milliseconds>(3 * interval, std::chrono::seconds(10)));
  }

  void add(std::string name, std::chrono::milliseconds interval, std::function<void()> work) {
    auto on_failed = [&metrics = app_.metrics(), name] { metrics.count_worker_failure(name); };
    workers_.push_back(
        std::make_unique<server::workers::Worker>(app_.store(), clock_, std::move(name), interval, std::move(work),
                                                  std::chrono::seconds(cfg_.worker_lease_s), std::move(on_failed)));
  }

  server::App& app_;
  const server::Config& cfg_;
  const util::Clock& clock_;
  std::unique_ptr<server::mail::Mailer> mailer_;
  server::MachineSettings machine_settings_;
  server::payouts::SolanaSettings solana_;
  std::unique_ptr<server::payouts::ChainClient> chain_;  // null: USDC payout runs are held
  std::vector<std::unique_ptr<server::workers::Worker>> workers_;
};

//! The HTTP server's limits and timeouts from the config; request bodies are planned by the App.
http::ServerOptions server_options(const server::Config& cfg, server::App& app) {
  http::ServerOptions so;
  so.host = cfg.host();
  so.port = cfg.port();
  so.threads = cfg.threads;
  so.body_limit = static_cast<std::size_t>(cfg.body_limit_bytes);
  so.body_plan = [&app](const http::Request& head) {
    return app.body_plan(head);
  };
  so.header_timeout = std::chrono::seconds(cfg.header_timeout_s);
  so.read_timeout = std::chrono::seconds(cfg.read_timeout_s);
  so.idle_timeout = std::chrono::seconds(cfg.idle_timeout_s);
  so.shutdown_grace = std::chrono::seconds(cfg.shutdown_grace_s);
  so.on_draining = [&app] { app.drain(); };
  so.max_connections = static_cast<std::size_t>(cfg.max_connections);
  so.max_connections_per_ip = static_cast<std::size_t>(cfg.max_connections_per_ip);
  so.on_connection_refused = [](const std::string& ip, std::string_view cap, std::size_t limit) {
    util::log_event("warn", "connection refused: too many open connections",
                    {{"remote_ip", ip}, {"cap", cap}, {"limit", limit},
                     {"setting", cap == "total" ? "max_connections" : "max_connections_per_ip"}});
  };
  if (!cfg.tls_cert.empty()) so.tls = http::TlsOptions{cfg.tls_cert, cfg.tls_key};
  return so;
}

//! Says where the server listens: the log, port_file when set (tests bind port 0), and a line for people.
void announce_listening(const server::Config& cfg, std::uint16_t port, bool tls) {
  std::string scheme = tls ? "https" : "http";
  util::log_event("info", "listening",
                  {{"address", cfg.host() + ":" + std::to_string(port)},
                   {"tls", tls},
                   {"version", core::kReleaseVersion},
                   {"schema_version", store::migrations().back().version},
                   {"protocol_version", core::kProtocolVersion}});
  if (!cfg.port_file.empty()) {
    std::ofstream(cfg.port_file) << port << "\n";
  }
  std::cout << "GPUnex server listening on " << scheme << "://" << cfg.host() << ":" << port
            << "  (dashboard: " << scheme << "://" << (cfg.host() == "0.0.0.0" ? "127.0.0.1" : cfg.host()) << ":"
            << port << "/)" << std::endl;
}

//! Fills cfg from the config file, then the environment, then the flags given on the command line
//! (each wins over the one before), and checks it; false after saying why on stderr.
bool load_config(server::Config& cfg, const std::string& config_file, const CLI::App& cli,
                 const std::map<std::string, std::string>& flags) {
  if (!config_file.empty()) {
    auto values = server::read_toml_file(config_file);
    if (!values) {
      std::cerr << "error: " << values.error().message << "\n";
      return false;
    }
    if (auto s = server::apply_config_values(cfg, *values, config_file); !s) {
      std::cerr << "error: " << s.error().message << "\n";
      return false;
    }
  }
  if (auto s = server::apply_config_values(cfg, server::read_env_values(), server::kFromEnvironment); !s) {
    std::cerr << "error: " << s.error().message << "\n";
    return false;
  }
  std::vector<std::pair<std::string, std::string>> flag_values;
  for (const auto& key : server::config_keys()) {
    if (cli.count(key.flag) == 0) continue;
    const std::string& v = flags.at(key.name);
    flag_values.emplace_back(key.name, v.empty() && key.type_name == "BOOL" ? "true" : v);
  }
  if (auto s = server::apply_config_values(cfg, flag_values, server::kFromCommandLine); !s) {
    std::cerr << "error: " << s.error().message << "\n";
    return false;
  }
  if (auto s = server::validate_config(cfg); !s) {
    std::cerr << "error: " << s.error().message << "\n";
    return false;
  }
  return true;
}

//! SIGHUP: reads a renewed TLS certificate and key (certbot's deploy hook sends it); the rest of the
//! configuration is read at start only. A certificate that cannot be used is logged and the one before kept.
void reload_on_hangup(const server::Config& cfg, http::Server& srv) {
  if (cfg.tls_cert.empty()) {
    util::log_event("info", "SIGHUP: nothing to reload",
                    {{"why",
                      "the configuration is read at start (restart to change it); only a TLS certificate "
                      "is read again on SIGHUP, and this server serves no TLS"}});
    return;
  }
  if (auto ok = server::validate_config(cfg); !ok) {
    util::log_event("error", "SIGHUP: the TLS certificate was not reloaded: the one before is kept",
                    {{"error", ok.error().message}});
    return;
  }
  try {
    srv.reload_tls();
    util::log_event("info", "SIGHUP: TLS certificate reloaded", {{"tls_cert", cfg.tls_cert}});
  } catch (const std::exception& e) {
    util::log_event("error", "SIGHUP: the TLS certificate was not reloaded: the one before is kept",
                    {{"error", e.what()}});
  }
}

int serve(server::Config cfg) {
  if (!util::init_logging(cfg.log_level)) {
    std::cerr << "error: log_level is not a level\n";
    return 2;
  }
  if (cfg.server_secret.empty()) {
    auto key = server::load_or_create_server_key(cfg.data_dir);
    if (!key) {
      std::cerr << "error: " << key.error().message << "\n";
      return 1;
    }
    cfg.server_secret = std::move(*key);
  }
  const sigset_t signals = block_stop_signals();
  // The hot wallet that signs USDC payouts: refused at start when others may read its file.
  std::optional<server::payouts::SolanaSettings> solana;
  if (!cfg.solana_rpc_url.empty()) {
    auto key = server::payouts::load_keypair_file(cfg.solana_keypair_file);
    if (!key) {
      std::cerr << "error: " << key.error().message << "\n";
      return 1;
    }
    server::payouts::SolanaSettings s;
    s.hot_wallet = *key;
    s.mint = *core::solana::key_from_base58(cfg.solana_usdc_mint);
    s.decimals = static_cast<std::uint8_t>(cfg.solana_usdc_decimals);
    s.compute_unit_price = static_cast<std::uint64_t>(cfg.solana_compute_unit_price);
    solana = s;
  }
  auto app = open_app(cfg);
  if (!app) return 1;
  BackgroundWorkers workers(*app, cfg, solana);

  const auto so = server_options(cfg, *app);
  http::Server srv(so, [&app](http::Request& req, http::Reply reply) { app->handle(req, std::move(reply)); });
  std::uint16_t port = 0;
  try {
    port = srv.start();
  } catch (const std::exception& e) {
    std::cerr << "error: listen: cannot serve on " << cfg.listen << ": " << e.what() << "\n";
    return 1;
  }
  app->set_bound_port(port);
  if (cfg.public_url.empty() && (cfg.host() == "0.0.0.0" || cfg.host() == "::")) {
    // Serving every interface means others are meant to reach it; the links it hands out cannot say how.
    util::log_event("warn", "public_url is not set",
                    {{"listen", cfg.listen},
                     {"links", app->config().base_url()},
                     {"fix",
                      "set public_url to the address providers and customers reach this server at: the "
                      "agent install script, mail links and approval instructions use it"}});
  }
  workers.start();
  announce_listening(cfg, port, so.tls.has_value());
  util::notify_service_manager("READY=1");  // a systemd unit with Type=notify is started now

  int sig = 0;
  while (sigwait(&signals, &sig) == 0 && sig == SIGHUP) reload_on_hangup(cfg, srv);
  util::log_event("info", "shutting down", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
  util::notify_service_manager("STOPPING=1");
  srv.stop();
  srv.wait();
  app->stop_background();  // heartbeats still queued are committed (their connections are gone)
  workers.stop();
  util::log_event("info", "stopped");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  util::init_crypto();
  CLI::App cli{"gpunex-server: the GPUnex control plane (REST API, dashboard, background workers)"};
  cli.set_version_flag("--version", std::string("gpunex-server ") + core::kReleaseVersion + " (store schema version " +
                                        std::to_string(store::migrations().back().version) +
                                        ", agent protocol version " + std::to_string(core::kProtocolVersion) + ")");
  server::Config cfg;
  std::string config_file;
  cli.add_option("--config", config_file, "TOML configuration file")->envname("GPUNEX_CONFIG");
  std::map<std::string, std::string> flags;
  for (const auto& key : server::config_keys()) {
    auto* opt = cli.add_option(key.flag, flags[key.name], key.help)->type_name(key.type_name);
    // A true-or-false key's flag alone means true: `--allow-simulated-offers` as `--allow-simulated-offers true`.
    if (key.type_name == "BOOL") opt->expected(0, 1);
  }

  auto* admin =
      cli.add_subcommand("admin", "operator commands; the store is --db, else GPUNEX_DB, else the db of --config FILE");
  // `gpunex-server admin credit --config /etc/gpunex/server.toml ...` reads the server's own file, as
  // `gpunex-server --config ... admin credit ...` does: the parent's options are taken after the subcommand too.
  admin->fallthrough();
  std::string db, email, role = "customer", full_name;
  bool password_stdin = false;
  auto* create = admin->add_subcommand("create-user", "create an account; the password is read from standard input");
  create->add_option("--db", db, "store URL (sqlite:PATH or postgresql://...)")->envname("GPUNEX_DB");
  create->add_option("--email", email, "e-mail address")->required();
  create->add_option("--role", role, "admin, reviewer or customer")->check(CLI::IsMember({"admin", "reviewer", "customer"}));
  create->add_option("--full-name", full_name, "display name (default: the e-mail)");
  create->add_flag("--password-stdin", password_stdin, "read the password from standard input (required)")->required();
  auto* set_password = admin->add_subcommand(
      "set-password",
      "set an account's password, read from standard input, and end its sessions (a lost or leaked one)");
  set_password->add_option("--db", db, "store URL")->envname("GPUNEX_DB");
  set_password->add_option("--email", email, "the account")->required();
  set_password->add_flag("--password-stdin", password_stdin, "read the password from standard input (required)")
      ->required();
  auto* grant_role = admin->add_subcommand("grant-role", "make an existing account a reviewer or an admin");
  auto* revoke_role =
      admin->add_subcommand("revoke-role", "take the reviewer or admin role back (the last admin keeps it)");
  for (auto* c : {grant_role, revoke_role}) {
    c->add_option("--db", db, "store URL")->envname("GPUNEX_DB");
    c->add_option("--email", email, "the account")->required();
    c->add_option("--role", role, "reviewer or admin")->required()->check(CLI::IsMember({"reviewer", "admin"}));
  }
  auto* bootstrap = admin->add_subcommand(
      "bootstrap",
      "create a first admin account if none exists: its login is printed once when standard output is a terminal, "
      "else written to <data-dir>/first-admin.txt (mode 0600)");
  bootstrap->add_option("--db", db, "store URL")->envname("GPUNEX_DB");
  std::string bootstrap_data_dir;
  std::string bootstrap_email = server::BootstrapOutput{}.email;
  bootstrap
      ->add_option("--email", bootstrap_email,
                   "the first admin's e-mail address: yours, so that a forgotten password can be reset by mail "
                   "(it counts as confirmed: whoever reads that mailbox can reset the admin's password)")
      ->capture_default_str();
  bootstrap
      ->add_option(
          "--data-dir", bootstrap_data_dir,
          "folder for the login file when not on a terminal (default: the configured data_dir, " + cfg.data_dir + ")")
      ->envname("GPUNEX_DATA_DIR");
  server::billing::CreditRequest credit_request;
  auto* credit = admin->add_subcommand("credit", "add prepaid USDC credit to a customer's balance (one ledger transaction)");
  credit->add_option("--db", db, "store URL")->envname("GPUNEX_DB");
  credit->add_option("--email", credit_request.email, "the account to credit")->required();
  credit->add_option("--amount", credit_request.amount, "USDC, e.g. 100.00")->required();
  credit->add_option("--reference", credit_request.reference,
                     "the payment it is for (a bank transfer, an invoice); the same reference is never credited twice")
      ->required();
  std::string backup_file;
  bool restore_replace = false;
  auto* backup = admin->add_subcommand(
      "backup", "copy a SQLite store, while the server runs, to a new file (mode 0600); PostgreSQL: use pg_dump");
  backup->add_option("--db", db, "store URL")->envname("GPUNEX_DB");
  backup->add_option("--to", backup_file, "the backup file to create (never overwritten)")->required();
  auto* restore = admin->add_subcommand(
      "restore", "restore a backup into a SQLite store: a new path, or --replace one no server has open");
  restore->add_option("--db", db, "store URL of the database to create or replace")->envname("GPUNEX_DB");
  restore->add_option("--from", backup_file, "a file made by admin backup")->required();
  restore->add_flag("--replace", restore_replace,
                    "replace an existing database (refused while a process has it open; the old one is kept beside it)");
  auto* adopt_secret = admin->add_subcommand(
      "adopt-server-secret",
      "make this server's secret (server_secret, else <data_dir>/server.key) the one the database's servers must "
      "use, when the secret they used is lost for good: approval keys not yet shown can then no longer be shown");
  adopt_secret->add_option("--db", db, "store URL")->envname("GPUNEX_DB");
  admin->require_subcommand(1);
  // The server's configuration keys under `gpunex-server --help` only (set after the subcommands, which
  // would copy it): an admin command's help is its options and where the store comes from.
  cli.footer(server::config_help());
  const std::string admin_footer =
      "The store: --db URL, else GPUNEX_DB, else the db of --config FILE (the server's); `gpunex-server --help` "
      "lists the server's configuration keys.";
  admin->footer(admin_footer);
  for (auto* sub : admin->get_subcommands({})) sub->footer(admin_footer);

  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cli.exit(e);
  }
  if (*admin) {
    // The store (and the bootstrap's data_dir) not given on the command line come from the configuration the
    // server itself reads: --config FILE, GPUNEX_* variables, the server's flags.
    // Never the default store: `admin credit` run from the wrong folder would make a new, empty var/gpunex.db.
    if (db.empty() && config_file.empty() && cli.count("--db") == 0) {
      std::cerr << "error: admin: which store? give --db URL, GPUNEX_DB, or --config FILE (the server's)\n";
      return 2;
    }
    if (db.empty() || (*bootstrap && bootstrap_data_dir.empty()) || *adopt_secret) {
      if (!load_config(cfg, config_file, cli, flags)) return 2;
      if (db.empty()) {
        // A --config FILE that names no db (nor GPUNEX_DB, nor --db) would mean the default, relative to the
        // current folder: not what the operator's server uses.
        bool named = cli.count("--db") > 0;
        if (!named && !config_file.empty()) {
          const auto file = server::read_toml_file(config_file);
          named = file && std::any_of(file->begin(), file->end(), [](const auto& kv) { return kv.first == "db"; });
        }
        if (!named) {
          std::cerr << "error: admin: " << config_file << " names no db: give --db URL or GPUNEX_DB\n";
          return 2;
        }
        db = cfg.db;
      }
      if (bootstrap_data_dir.empty()) bootstrap_data_dir = cfg.data_dir;
    }
  }
  if (*adopt_secret) return server::admin_adopt_server_secret(db, cfg, std::cout, std::cerr);
  if (*backup) return server::admin_backup(db, backup_file, std::cout, std::cerr);
  if (*restore) return server::admin_restore(db, backup_file, restore_replace, std::cout, std::cerr);
  if (*set_password) return server::admin_set_password(db, email, std::cin, std::cout, std::cerr);
  if (*grant_role) return server::admin_set_role(db, email, role, true, std::cout, std::cerr);
  if (*revoke_role) return server::admin_set_role(db, email, role, false, std::cout, std::cerr);
  if (*create) return server::admin_create_user(db, email, full_name, role, std::cin, std::cout, std::cerr);
  if (*credit) {
    const char* user = std::getenv("USER");
    return server::billing::admin_credit(db, credit_request, std::string("operator:") + (user ? user : "shell"),
                                         std::cout, std::cerr);
  }
  if (*bootstrap) {
    const server::BootstrapOutput output{::isatty(STDOUT_FILENO) == 1,
                                         (std::filesystem::path(bootstrap_data_dir) / "first-admin.txt").string(),
                                         bootstrap_email};
    return server::admin_bootstrap(db, output, std::cout, std::cerr);
  }

  if (!load_config(cfg, config_file, cli, flags)) return 2;
  return serve(cfg);
}
