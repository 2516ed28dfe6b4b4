// The schema, as numbered migrations in the portable dialect (triggers aside:
// migration 6). Append only: never edit a migration that has shipped; add a new one.

#include "store/migrations.hpp"

#include <array>
#include <string>
#include <vector>

namespace gpunex::store {

namespace {

// Migration 6: market_version, bumped by any change to the tables an offer is made of
// (server/market/offers.cpp offer_candidates), so that the offer cache of every replica knows when to
// reload. Triggers rather than calls in each writer: a writer added later, or a fix made by hand
// in SQL, cannot forget it. machines changes on every heartbeat (last_seen_at), so there only a
// new status or owner counts. On PostgreSQL the triggers are deferred to commit: the version row
// is then the last lock a transaction takes, so writers queue on it only while committing and
// cannot deadlock over it.
constexpr std::array<const char*, 7> kMarketTables = {
    "machine_gpus",     "gpu_listing", "providers", "provider_current_prices", "gpu_models", "provider_market_profiles",
    "machine_schedules"};

constexpr const char* kMarketVersionTable = R"sql(
CREATE TABLE market_version (
  id BIGINT PRIMARY KEY,
  version BIGINT NOT NULL,
  bumped_by BIGINT
);
INSERT INTO market_version (id, version) VALUES (1, 1);
-- bumped_by: on PostgreSQL, the transaction that last bumped the version (once per transaction).
-- The offer query reads the GPUs in key order with their model and presence from this index
-- alone (SQLite: a quarter faster than the table, which also holds each GPU's facts).
CREATE INDEX machine_gpus_market ON machine_gpus (machine_id, uuid, present, model);
)sql";

std::string market_version_sqlite() {
  std::string sql = kMarketVersionTable;
  const std::string bump = " BEGIN UPDATE market_version SET version = version + 1 WHERE id = 1; END;\n";
  for (const std::string t : kMarketTables) {
    sql += "CREATE TRIGGER market_" + t + "_insert AFTER INSERT ON " + t + bump;
    sql += "CREATE TRIGGER market_" + t + "_update AFTER UPDATE ON " + t + bump;
    sql += "CREATE TRIGGER market_" + t + "_delete AFTER DELETE ON " + t + bump;
  }
  sql += "CREATE TRIGGER market_machines_insert AFTER INSERT ON machines" + bump;
  sql += "CREATE TRIGGER market_machines_delete AFTER DELETE ON machines" + bump;
  sql +=
      "CREATE TRIGGER market_machines_update AFTER UPDATE OF status, provider_id ON machines "
      "WHEN OLD.status IS NOT NEW.status OR OLD.provider_id IS NOT NEW.provider_id" +
      bump;
  return sql;
}

std::string market_version_postgres() {
  std::string sql = kMarketVersionTable;
  // Once per transaction (bumped_by): bumping the one row for each of a bulk statement's rows
  // would make every update walk the row versions this transaction left behind (quadratic).
  sql +=
      "CREATE FUNCTION market_version_bump() RETURNS trigger LANGUAGE plpgsql AS $$\n"
      "BEGIN\n"
      "  UPDATE market_version SET version = version + 1, bumped_by = txid_current()\n"
      "  WHERE id = 1 AND bumped_by IS DISTINCT FROM txid_current();\n"
      "  RETURN NULL;\n"
      "END $$;\n";
  const std::string deferred = " DEFERRABLE INITIALLY DEFERRED FOR EACH ROW ";
  const std::string bump = "EXECUTE FUNCTION market_version_bump();\n";
  for (const std::string t : kMarketTables)
    sql += "CREATE CONSTRAINT TRIGGER market_" + t + " AFTER INSERT OR UPDATE OR DELETE ON " + t + deferred + bump;
  sql += "CREATE CONSTRAINT TRIGGER market_machines AFTER INSERT OR DELETE ON machines" + deferred + bump;
  sql += "CREATE CONSTRAINT TRIGGER market_machines_update AFTER UPDATE OF status, provider_id ON machines" + deferred +
         "WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.provider_id IS DISTINCT FROM NEW.provider_id) " + bump;
  return sql;
}

// Migration 9: the ledger (core/ledger.hpp, server/billing/ledger_repo.hpp). Transactions and their
// entries are immutable: the store itself refuses to change or delete them, so a correction can only
// be a new transaction.
constexpr const char* kLedgerTables = R"sql(
CREATE TABLE ledger_transactions (
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  actor TEXT NOT NULL,
  reason TEXT NOT NULL,
  reference TEXT NOT NULL,
  -- Set when posting the same fact twice must be impossible (an operator's credit reference,
  -- a rental's settlement up to a time): the second insert fails on this key.
  dedupe_key TEXT UNIQUE,
  created_at BIGINT NOT NULL
);
CREATE TABLE ledger_entries (
  tx_id TEXT NOT NULL REFERENCES ledger_transactions(id),
  seq INTEGER NOT NULL,
  account TEXT NOT NULL,
  amount BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (tx_id, seq)
);
CREATE INDEX ledger_entries_account ON ledger_entries (account, created_at);
)sql";

std::string ledger_sqlite() {
  std::string sql = kLedgerTables;
  for (const std::string t : {"ledger_transactions", "ledger_entries"}) {
    for (const std::string op : {"UPDATE", "DELETE"}) {
      sql += "CREATE TRIGGER " + t + "_no_" + op + " BEFORE " + op + " ON " + t +
             " BEGIN SELECT RAISE(ABORT, 'the ledger is append-only: " + t + " rows are never changed'); END;\n";
    }
  }
  return sql;
}

std::string ledger_postgres() {
  std::string sql = kLedgerTables;
  sql +=
      "CREATE FUNCTION ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$\n"
      "BEGIN\n"
      "  RAISE EXCEPTION 'the ledger is append-only: % rows are never changed', TG_TABLE_NAME;\n"
      "END $$;\n";
  for (const std::string t : {"ledger_transactions", "ledger_entries"}) {
    sql += "CREATE TRIGGER " + t + "_append_only BEFORE UPDATE OR DELETE ON " + t +
           " FOR EACH ROW EXECUTE FUNCTION ledger_append_only();\n";
  }
  return sql;
}

// Migration 11: what running rentals need (server/rentals): why a stop was asked, the agent's
// bound ports and log tail, the last settlement's time; and the offers' count of free GPUs, which
// gpu_allocations now changes, so the offer cache must hear of it (migration 6's market_version).
constexpr const char* kRentalsRunning = R"sql(
ALTER TABLE rentals ADD COLUMN stop_reason TEXT;
ALTER TABLE rentals ADD COLUMN ports TEXT NOT NULL DEFAULT '[]';
ALTER TABLE rentals ADD COLUMN logs TEXT NOT NULL DEFAULT '';
ALTER TABLE rentals ADD COLUMN logs_at BIGINT;
ALTER TABLE rentals ADD COLUMN last_settled_at BIGINT;
ALTER TABLE rentals ADD COLUMN error TEXT;
CREATE INDEX rentals_state ON rentals (state, machine_id);
CREATE INDEX rentals_provider ON rentals (provider_id, created_at);
)sql";

std::string rentals_running_sqlite() {
  const std::string bump = " BEGIN UPDATE market_version SET version = version + 1 WHERE id = 1; END;\n";
  return std::string(kRentalsRunning) + "CREATE TRIGGER market_gpu_allocations_insert AFTER INSERT ON gpu_allocations" +
         bump + "CREATE TRIGGER market_gpu_allocations_delete AFTER DELETE ON gpu_allocations" + bump;
}

std::string rentals_running_postgres() {
  return std::string(kRentalsRunning) +
         "CREATE CONSTRAINT TRIGGER market_gpu_allocations AFTER INSERT OR DELETE ON gpu_allocations "
         "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION market_version_bump();\n";
}

// Migration 13: the reliability score (server/reliability/reliability_repo.hpp). reliability_days keeps
// each machine's UTC days as judged: the minutes scheduled, excused and present (360 hex digits each),
// the day's counts and events, and the score as of the time judged; a day is final once judged past
// its end. reliability_scores holds the score the marketplace shows, so the offer cache hears of a
// change through migration 6's market_version (only when the shown score or its newness changes).
constexpr const char* kReliabilityTables = R"sql(
CREATE TABLE reliability_days (
  machine_id TEXT NOT NULL REFERENCES machines(id),
  day BIGINT NOT NULL,
  judged_until BIGINT NOT NULL,
  final BIGINT NOT NULL,
  full_day BIGINT NOT NULL,
  scheduled TEXT NOT NULL,
  excused TEXT NOT NULL,
  present TEXT NOT NULL,
  counted_min BIGINT NOT NULL,
  present_min BIGINT NOT NULL,
  excused_min BIGINT NOT NULL,
  jobs BIGINT NOT NULL,
  jobs_ok BIGINT NOT NULL,
  runs BIGINT NOT NULL,
  run_sum DOUBLE PRECISION NOT NULL,
  events TEXT NOT NULL,
  score DOUBLE PRECISION NOT NULL,
  uptime DOUBLE PRECISION NOT NULL,
  job_completion DOUBLE PRECISION NOT NULL,
  stability DOUBLE PRECISION NOT NULL,
  is_new BIGINT NOT NULL,
  PRIMARY KEY (machine_id, day)
);
CREATE INDEX reliability_days_age ON reliability_days (day);
CREATE TABLE reliability_scores (
  machine_id TEXT PRIMARY KEY REFERENCES machines(id),
  score DOUBLE PRECISION NOT NULL,
  is_new BIGINT NOT NULL,
  computed_at BIGINT NOT NULL,
  alerted BIGINT NOT NULL
);
)sql";

std::string reliability_sqlite() {
  const std::string bump = " BEGIN UPDATE market_version SET version = version + 1 WHERE id = 1; END;\n";
  return std::string(kReliabilityTables) +
         "CREATE TRIGGER market_reliability_scores_insert AFTER INSERT ON reliability_scores" + bump +
         "CREATE TRIGGER market_reliability_scores_delete AFTER DELETE ON reliability_scores" + bump +
         "CREATE TRIGGER market_reliability_scores_update AFTER UPDATE OF score, is_new ON reliability_scores "
         "WHEN OLD.score IS NOT NEW.score OR OLD.is_new IS NOT NEW.is_new" +
         bump;
}

std::string reliability_postgres() {
  const std::string deferred = " DEFERRABLE INITIALLY DEFERRED FOR EACH ROW ";
  const std::string bump = "EXECUTE FUNCTION market_version_bump();\n";
  return std::string(kReliabilityTables) +
         "CREATE CONSTRAINT TRIGGER market_reliability_scores AFTER INSERT OR DELETE ON reliability_scores" +
         deferred + bump +
         "CREATE CONSTRAINT TRIGGER market_reliability_scores_update AFTER UPDATE OF score, is_new ON "
         "reliability_scores" +
         deferred + "WHEN (OLD.score IS DISTINCT FROM NEW.score OR OLD.is_new IS DISTINCT FROM NEW.is_new) " + bump;
}

// Migration 20: the market change log. Every market_version bump also records what changed: a
// machine, a provider (prices, profile, tier: all its machines' offers) or everything (the GPU
// catalog), at the version it commits at, so that the offer cache reads only the changes since its
// version and reloads only those machines' candidates (server/market/offer_cache.cpp). The trigger
// that bumps the version writes the row, in the same transaction: a reader at one snapshot sees
// exactly the changes up to the version it reads. market_version.changes_from: the log holds every
// change after that version (older rows are pruned: prune_market_changes); a cache older than that
// reloads everything.
struct MarketSource {
  const char* table;
  const char* kind;  // machine, provider or all
  const char* key;   // the column naming the machine or provider
};
constexpr std::array<MarketSource, 10> kMarketSources = {{{"machine_gpus", "machine", "machine_id"},
                                                          {"gpu_listing", "machine", "machine_id"},
                                                          {"providers", "provider", "id"},
                                                          {"provider_current_prices", "provider", "provider_id"},
                                                          {"gpu_models", "all", ""},
                                                          {"provider_market_profiles", "provider", "provider_id"},
                                                          {"machine_schedules", "machine", "machine_id"},
                                                          {"machines", "machine", "id"},
                                                          {"gpu_allocations", "machine", "machine_id"},
                                                          {"reliability_scores", "machine", "machine_id"}}};

constexpr const char* kMarketChanges = R"sql(
CREATE TABLE market_changes (
  version BIGINT NOT NULL,
  kind TEXT NOT NULL,
  id TEXT NOT NULL,
  PRIMARY KEY (version, kind, id)
);
ALTER TABLE market_version ADD COLUMN changes_from BIGINT NOT NULL DEFAULT 0;
UPDATE market_version SET changes_from = version;
)sql";

// A SQLite market trigger's body (migration 20): bumps the version and records the machine or
// provider of each of `rows` (OLD, NEW). Each firing bumps the version, so its rows are new keys; an
// update logs its old and new machine or provider (the same one but once). No OR IGNORE: an outer
// upsert's conflict handling would override it.
std::string market_trigger_body_sqlite(const MarketSource& s, const std::vector<std::string>& rows) {
  std::string b = " BEGIN UPDATE market_version SET version = version + 1 WHERE id = 1;";
  const auto key = [&](const std::string& row) {
    return *s.key ? "COALESCE(" + row + "." + s.key + ", '')" : std::string("''");
  };
  for (std::size_t i = 0; i < rows.size(); ++i) {
    b += " INSERT INTO market_changes (version, kind, id) SELECT version, '" + std::string(s.kind) + "', " +
         key(rows[i]) + " FROM market_version WHERE id = 1" +
         (i == 0 ? "" : " AND " + key(rows[i]) + " IS NOT " + key(rows[0])) + ";";
  }
  return b + " END;\n";
}

// SQLite runs each trigger's statements in order, but several triggers on one event in no promised
// order: migrations 6, 11 and 13's triggers are replaced by ones that bump and record together.
std::string market_changes_sqlite() {
  std::string sql = kMarketChanges;
  const auto body = market_trigger_body_sqlite;
  for (const auto& s : kMarketSources) {
    const std::string t = s.table;
    const bool no_update = t == "gpu_allocations";
    sql += "DROP TRIGGER market_" + t + "_insert;\nDROP TRIGGER market_" + t + "_delete;\n";
    if (!no_update) sql += "DROP TRIGGER market_" + t + "_update;\n";
    sql += "CREATE TRIGGER market_" + t + "_insert AFTER INSERT ON " + t + body(s, {"NEW"});
    sql += "CREATE TRIGGER market_" + t + "_delete AFTER DELETE ON " + t + body(s, {"OLD"});
    if (t == "machines") {
      sql +=
          "CREATE TRIGGER market_machines_update AFTER UPDATE OF status, provider_id ON machines "
          "WHEN OLD.status IS NOT NEW.status OR OLD.provider_id IS NOT NEW.provider_id" +
          body(s, {"OLD", "NEW"});
    } else if (t == "reliability_scores") {
      sql +=
          "CREATE TRIGGER market_reliability_scores_update AFTER UPDATE OF score, is_new ON reliability_scores "
          "WHEN OLD.score IS NOT NEW.score OR OLD.is_new IS NOT NEW.is_new" +
          body(s, {"OLD", "NEW"});
    } else if (!no_update) {
      sql += "CREATE TRIGGER market_" + t + "_update AFTER UPDATE ON " + t + body(s, {"OLD", "NEW"});
    }
  }
  return sql;
}

// Migration 26: why a machine's agent cannot run rentals (no container engine, no network guard), as
// its rentals poll says; NULL when it can. A blocked machine's GPUs are not offered, so a change of
// NULL-ness is a market change of the machine.
constexpr const char* kRentalsBlocked = "ALTER TABLE machines ADD COLUMN rentals_blocked TEXT;\n";

std::string rentals_blocked_sqlite() {
  return std::string(kRentalsBlocked) +
         "DROP TRIGGER market_machines_update;\n"
         "CREATE TRIGGER market_machines_update AFTER UPDATE OF status, provider_id, rentals_blocked ON machines "
         "WHEN OLD.status IS NOT NEW.status OR OLD.provider_id IS NOT NEW.provider_id OR "
         "(OLD.rentals_blocked IS NULL) IS NOT (NEW.rentals_blocked IS NULL)" +
         market_trigger_body_sqlite({"machines", "machine", "id"}, {"OLD", "NEW"});
}

std::string rentals_blocked_postgres() {
  return std::string(kRentalsBlocked) +
         "DROP TRIGGER market_machines_update ON machines;\n"
         "CREATE CONSTRAINT TRIGGER market_machines_update AFTER UPDATE OF status, provider_id, rentals_blocked ON "
         "machines DEFERRABLE INITIALLY DEFERRED FOR EACH ROW "
         "WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.provider_id IS DISTINCT FROM NEW.provider_id OR "
         "(OLD.rentals_blocked IS NULL) <> (NEW.rentals_blocked IS NULL)) EXECUTE FUNCTION market_version_bump();\n";
}

// On PostgreSQL every market trigger runs market_version_bump() at commit, once per changed row:
// it now records the row's machine or provider (before and after an update) with the version.
std::string market_changes_postgres() {
  std::string sql = kMarketChanges;
  std::string kind = "CASE TG_TABLE_NAME", key = "CASE TG_TABLE_NAME";
  for (const auto& s : kMarketSources) {
    kind += " WHEN '" + std::string(s.table) + "' THEN '" + s.kind + "'";
    key += " WHEN '" + std::string(s.table) + "' THEN '" + s.key + "'";
  }
  kind += " END";
  key += " END";
  sql +=
      "CREATE OR REPLACE FUNCTION market_version_bump() RETURNS trigger LANGUAGE plpgsql AS $$\n"
      "DECLARE\n"
      "  v BIGINT;\n"
      "  k TEXT := " +
      kind +
      ";\n"
      "  col TEXT := " +
      key +
      ";\n"
      "BEGIN\n"
      "  UPDATE market_version SET version = version + 1, bumped_by = txid_current()\n"
      "  WHERE id = 1 AND bumped_by IS DISTINCT FROM txid_current();\n"
      "  SELECT version INTO v FROM market_version WHERE id = 1;\n"
      "  IF k = 'all' THEN\n"
      "    INSERT INTO market_changes (version, kind, id) VALUES (v, k, '') ON CONFLICT DO NOTHING;\n"
      "    RETURN NULL;\n"
      "  END IF;\n"
      "  IF TG_OP <> 'INSERT' THEN\n"
      "    INSERT INTO market_changes (version, kind, id) VALUES (v, k, COALESCE(to_jsonb(OLD) ->> col, '')) ON "
      "CONFLICT DO NOTHING;\n"
      "  END IF;\n"
      "  IF TG_OP <> 'DELETE' THEN\n"
      "    INSERT INTO market_changes (version, kind, id) VALUES (v, k, COALESCE(to_jsonb(NEW) ->> col, '')) ON "
      "CONFLICT DO NOTHING;\n"
      "  END IF;\n"
      "  RETURN NULL;\n"
      "END $$;\n";
  return sql;
}

}  // namespace

const std::vector<Migration>& migrations() {
  static const std::vector<Migration> list = {
      {1, "accounts, sessions, leases, idempotency",
       R"sql(
CREATE TABLE users (
  id TEXT PRIMARY KEY,
  email TEXT NOT NULL UNIQUE,
  full_name TEXT NOT NULL,
  password_hash TEXT NOT NULL,
  created_at BIGINT NOT NULL
);
CREATE TABLE user_roles (
  user_id TEXT NOT NULL REFERENCES users(id),
  role TEXT NOT NULL,
  granted_at BIGINT NOT NULL,
  PRIMARY KEY (user_id, role)
);
CREATE TABLE sessions (
  token_hash TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users(id),
  csrf_token TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL
);
CREATE INDEX sessions_user ON sessions (user_id);
CREATE TABLE leases (
  name TEXT PRIMARY KEY,
  holder TEXT NOT NULL,
  expires_at BIGINT NOT NULL
);
CREATE TABLE idempotency_keys (
  scope TEXT NOT NULL,
  idem_key TEXT NOT NULL,
  request_hash TEXT NOT NULL,
  status BIGINT NOT NULL,
  body TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (scope, idem_key)
);
)sql"},
      {2, "provider onboarding: GPU catalog, applications, providers, API keys, outbox, notifications",
       R"sql(
CREATE TABLE gpu_models (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  nvml_name_pattern TEXT NOT NULL,
  vram_gib DOUBLE PRECISION NOT NULL,
  figures TEXT NOT NULL,
  builtin BIGINT NOT NULL,
  added_by TEXT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);
CREATE TABLE applications (
  id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users(id),
  status TEXT NOT NULL,
  form TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  submitted_at BIGINT,
  decided_at BIGINT,
  decided_by TEXT,
  tier TEXT
);
CREATE INDEX applications_user ON applications (user_id, created_at);
CREATE INDEX applications_status ON applications (status, submitted_at);
CREATE TABLE application_history (
  application_id TEXT NOT NULL REFERENCES applications(id),
  seq BIGINT NOT NULL,
  at BIGINT NOT NULL,
  by_user TEXT NOT NULL,
  from_status TEXT,
  to_status TEXT NOT NULL,
  note TEXT NOT NULL,
  PRIMARY KEY (application_id, seq)
);
CREATE TABLE providers (
  id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL UNIQUE REFERENCES users(id),
  application_id TEXT NOT NULL REFERENCES applications(id),
  tier TEXT NOT NULL,
  created_at BIGINT NOT NULL
);
CREATE TABLE api_keys (
  id TEXT PRIMARY KEY,
  provider_id TEXT NOT NULL REFERENCES providers(id),
  key_hash TEXT NOT NULL UNIQUE,
  prefix TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  last_used_at BIGINT,
  revoked_at BIGINT
);
CREATE INDEX api_keys_provider ON api_keys (provider_id);
CREATE TABLE outbox (
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  to_addr TEXT NOT NULL,
  subject TEXT NOT NULL,
  body TEXT NOT NULL,
  secret TEXT,
  created_at BIGINT NOT NULL,
  attempts BIGINT NOT NULL,
  next_attempt_at BIGINT NOT NULL,
  last_error TEXT,
  sent_at BIGINT
);
CREATE INDEX outbox_due ON outbox (sent_at, next_attempt_at);
CREATE TABLE notifications (
  id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users(id),
  kind TEXT NOT NULL,
  title TEXT NOT NULL,
  body TEXT NOT NULL,
  link TEXT,
  created_at BIGINT NOT NULL,
  read_at BIGINT
);
CREATE INDEX notifications_user ON notifications (user_id, created_at);
)sql"},
      {3, "agent: machines, GPUs, telemetry (latest, per minute), presence, events, sequence dedupe",
       R"sql(
CREATE TABLE machines (
  id TEXT PRIMARY KEY,
  provider_id TEXT NOT NULL REFERENCES providers(id),
  fingerprint TEXT NOT NULL,
  hostname TEXT NOT NULL,
  host TEXT NOT NULL,
  simulated BIGINT NOT NULL,
  agent_version TEXT NOT NULL,
  protocol_version BIGINT NOT NULL,
  status TEXT NOT NULL,
  driver_version TEXT NOT NULL,
  cuda_version TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  registered_at BIGINT NOT NULL,
  last_seen_at BIGINT,
  last_seq BIGINT NOT NULL,
  UNIQUE (provider_id, fingerprint)
);
CREATE INDEX machines_status ON machines (status, last_seen_at);
CREATE TABLE machine_gpus (
  machine_id TEXT NOT NULL REFERENCES machines(id),
  uuid TEXT NOT NULL,
  idx BIGINT NOT NULL,
  name TEXT NOT NULL,
  model TEXT,
  memory_mib BIGINT NOT NULL,
  facts TEXT NOT NULL,
  present BIGINT NOT NULL,
  first_seen_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  PRIMARY KEY (machine_id, uuid)
);
CREATE TABLE telemetry_latest (
  machine_id TEXT NOT NULL REFERENCES machines(id),
  uuid TEXT NOT NULL,
  at BIGINT NOT NULL,
  sample TEXT NOT NULL,
  PRIMARY KEY (machine_id, uuid)
);
CREATE TABLE telemetry_minute (
  machine_id TEXT NOT NULL REFERENCES machines(id),
  uuid TEXT NOT NULL,
  minute BIGINT NOT NULL,
  samples BIGINT NOT NULL,
  errors BIGINT NOT NULL,
  temp_n BIGINT NOT NULL,
  temp_sum DOUBLE PRECISION NOT NULL,
  temp_max DOUBLE PRECISION NOT NULL,
  power_n BIGINT NOT NULL,
  power_sum DOUBLE PRECISION NOT NULL,
  power_max DOUBLE PRECISION NOT NULL,
  util_n BIGINT NOT NULL,
  util_sum DOUBLE PRECISION NOT NULL,
  util_max DOUBLE PRECISION NOT NULL,
  mem_used_max BIGINT NOT NULL,
  throttled BIGINT NOT NULL,
  ecc_uncorrected_max BIGINT NOT NULL,
  PRIMARY KEY (machine_id, uuid, minute)
);
CREATE INDEX telemetry_minute_age ON telemetry_minute (minute);
CREATE TABLE presence_minute (
  machine_id TEXT NOT NULL REFERENCES machines(id),
  minute BIGINT NOT NULL,
  beats BIGINT NOT NULL,
  PRIMARY KEY (machine_id, minute)
);
CREATE INDEX presence_minute_age ON presence_minute (minute);
CREATE TABLE machine_events (
  id TEXT PRIMARY KEY,
  machine_id TEXT NOT NULL REFERENCES machines(id),
  at BIGINT NOT NULL,
  kind TEXT NOT NULL,
  detail TEXT NOT NULL,
  seq BIGINT
);
CREATE INDEX machine_events_machine ON machine_events (machine_id, at);
CREATE TABLE agent_seq (
  machine_id TEXT NOT NULL REFERENCES machines(id),
  seq BIGINT NOT NULL,
  received_at BIGINT NOT NULL,
  PRIMARY KEY (machine_id, seq)
);
CREATE INDEX agent_seq_age ON agent_seq (received_at);
)sql"},
      {4, "benchmarks: runs with raw results, per-GPU results and scores, listing state",
       R"sql(
CREATE TABLE benchmark_runs (
  id TEXT PRIMARY KEY,
  machine_id TEXT NOT NULL REFERENCES machines(id),
  reason TEXT NOT NULL,
  status TEXT NOT NULL,
  requested_at BIGINT NOT NULL,
  delivered_at BIGINT,
  completed_at BIGINT,
  simulated BIGINT NOT NULL,
  report TEXT,
  machine_failures TEXT
);
CREATE INDEX benchmark_runs_machine ON benchmark_runs (machine_id, status, requested_at);
CREATE TABLE gpu_benchmarks (
  run_id TEXT NOT NULL REFERENCES benchmark_runs(id),
  machine_id TEXT NOT NULL REFERENCES machines(id),
  uuid TEXT NOT NULL,
  model TEXT,
  perf_score DOUBLE PRECISION,
  quality_ratio DOUBLE PRECISION,
  pass BIGINT NOT NULL,
  figures TEXT NOT NULL,
  failures TEXT NOT NULL,
  at BIGINT NOT NULL,
  PRIMARY KEY (run_id, uuid)
);
CREATE INDEX gpu_benchmarks_gpu ON gpu_benchmarks (machine_id, uuid, at);
CREATE TABLE gpu_listing (
  machine_id TEXT NOT NULL REFERENCES machines(id),
  uuid TEXT NOT NULL,
  listed BIGINT NOT NULL,
  perf_score DOUBLE PRECISION,
  quality_ratio DOUBLE PRECISION,
  delist_reason TEXT,
  recommendation TEXT,
  last_run_id TEXT,
  updated_at BIGINT NOT NULL,
  PRIMARY KEY (machine_id, uuid)
);
)sql"},
      // Numbered 5: 3 and 4 are taken by the agent (machines) and benchmark branches.
      {5, "market: provider prices (history), machine schedules, maintenance windows, reference prices",
       R"sql(
CREATE TABLE provider_prices (
  provider_id TEXT NOT NULL REFERENCES providers(id),
  model TEXT NOT NULL REFERENCES gpu_models(id),
  seq BIGINT NOT NULL,
  usdc_micro BIGINT NOT NULL,
  region TEXT NOT NULL,
  started_at BIGINT NOT NULL,
  set_by TEXT NOT NULL,
  PRIMARY KEY (provider_id, model, seq)
);
CREATE TABLE provider_current_prices (
  provider_id TEXT NOT NULL REFERENCES providers(id),
  model TEXT NOT NULL REFERENCES gpu_models(id),
  usdc_micro BIGINT NOT NULL,
  region TEXT NOT NULL,
  seq BIGINT NOT NULL,
  started_at BIGINT NOT NULL,
  PRIMARY KEY (provider_id, model)
);
CREATE INDEX provider_current_prices_market ON provider_current_prices (model, region, usdc_micro);
CREATE TABLE provider_market_profiles (
  provider_id TEXT PRIMARY KEY REFERENCES providers(id),
  city TEXT NOT NULL,
  country TEXT NOT NULL,
  region TEXT NOT NULL,
  commitment_months BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);
CREATE TABLE machine_schedules (
  machine_id TEXT PRIMARY KEY,
  provider_id TEXT NOT NULL REFERENCES providers(id),
  timezone TEXT NOT NULL,
  always_on BIGINT NOT NULL,
  spec TEXT NOT NULL,
  updated_at BIGINT NOT NULL
);
CREATE TABLE maintenance_windows (
  machine_id TEXT NOT NULL,
  idx BIGINT NOT NULL,
  category TEXT NOT NULL,
  kind TEXT NOT NULL,
  starts_at BIGINT,
  ends_at BIGINT,
  recurrence TEXT,
  start_local TEXT,
  end_local TEXT,
  note TEXT NOT NULL,
  declared_at BIGINT NOT NULL,
  PRIMARY KEY (machine_id, idx)
);
CREATE INDEX maintenance_windows_one_off ON maintenance_windows (starts_at, ends_at);
CREATE TABLE gpu_reference_prices (
  model TEXT PRIMARY KEY,
  usdc_micro BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);
INSERT INTO gpu_reference_prices (model, usdc_micro, updated_at) VALUES
  ('H100-SXM', 2500000, 0), ('H100-PCIE', 2200000, 0), ('H200', 3200000, 0),
  ('A100-SXM-80GB', 1500000, 0), ('A100-PCIE-40GB', 1100000, 0), ('A100-PCIE-80GB', 1400000, 0),
  ('L40S', 900000, 0), ('L4', 400000, 0), ('RTX-4090', 400000, 0), ('RTX-A6000', 550000, 0);
)sql"},
      {6, "market: market_version bumped by triggers (offer cache), machine_gpus index for the offer query",
       market_version_sqlite(), market_version_postgres()},
      // The approval key's one-time reveal (server/onboarding/providers.hpp): the plaintext waits here for the
      // provider to open it once, and is cleared (NULL) when shown, revoked or expired; the row stays
      // so the dashboard can say which and when.
      {7, "provider onboarding: one-time reveal of the API key issued at approval",
       R"sql(
CREATE TABLE api_key_reveals (
  api_key_id TEXT PRIMARY KEY REFERENCES api_keys(id),
  user_id TEXT NOT NULL REFERENCES users(id),
  secret TEXT,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  cleared_at BIGINT,
  cleared_why TEXT
);
CREATE INDEX api_key_reveals_expiry ON api_key_reveals (expires_at);
)sql"},
      // The price recommendation's 7-day window (issue 14 item 8): when each listing (a provider's
      // price for a model) was last seen active, i.e. priced with a listed GPU of the model on an
      // online machine; one row per price, refreshed by the listings worker (server/market/offers.hpp).
      {8, "market: listing activity for the price recommendation's window",
       R"sql(
CREATE TABLE listing_activity (
  provider_id TEXT NOT NULL REFERENCES providers(id),
  model TEXT NOT NULL REFERENCES gpu_models(id),
  price_seq BIGINT NOT NULL,
  usdc_micro BIGINT NOT NULL,
  region TEXT NOT NULL,
  first_active_at BIGINT NOT NULL,
  last_active_at BIGINT NOT NULL,
  PRIMARY KEY (provider_id, model, price_seq)
);
CREATE INDEX listing_activity_recent ON listing_activity (model, last_active_at);
CREATE INDEX listing_activity_age ON listing_activity (last_active_at);
)sql"},
      {9, "billing: the double-entry ledger, append-only", ledger_sqlite(), ledger_postgres()},
      // Rentals (server/rentals/rentals_repo.hpp). gpu_allocations holds a row per GPU while a rental
      // has it: its primary key is what makes a GPU impossible to give to two rentals at once, on
      // both stores, however many customers race for it.
      {10, "rentals: rentals, their GPUs, live GPU allocations",
       R"sql(
CREATE TABLE rentals (
  id TEXT PRIMARY KEY,
  customer_id TEXT NOT NULL REFERENCES users(id),
  provider_id TEXT NOT NULL REFERENCES providers(id),
  machine_id TEXT NOT NULL REFERENCES machines(id),
  model TEXT NOT NULL,
  gpu_count BIGINT NOT NULL,
  price_micro BIGINT NOT NULL,
  commission_bp BIGINT NOT NULL,
  state TEXT NOT NULL,
  spec TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  running_since BIGINT,
  ended_at BIGINT,
  end_reason TEXT,
  provider_side BIGINT,
  exit_code BIGINT,
  oom BIGINT,
  settled_charged BIGINT NOT NULL DEFAULT 0,
  settled_provider BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX rentals_customer ON rentals (customer_id, created_at);
CREATE INDEX rentals_machine ON rentals (machine_id, state);
CREATE TABLE rental_gpus (
  rental_id TEXT NOT NULL REFERENCES rentals(id),
  uuid TEXT NOT NULL,
  PRIMARY KEY (rental_id, uuid)
);
CREATE TABLE gpu_allocations (
  machine_id TEXT NOT NULL REFERENCES machines(id),
  uuid TEXT NOT NULL,
  rental_id TEXT NOT NULL REFERENCES rentals(id),
  allocated_at BIGINT NOT NULL,
  PRIMARY KEY (machine_id, uuid)
);
)sql"},
      {11, "rentals: stop reasons, ports, log tails, settlement times; free GPUs in the market version",
       rentals_running_sqlite(), rentals_running_postgres()},
      // Payout settings (server/payouts): every change kept, each taking effect at its effective_at
      // (a new destination after the cool-down); the settings in force are the latest in effect.
      {12, "payouts: payout settings and their history",
       R"sql(
CREATE TABLE payout_settings_changes (
  id TEXT PRIMARY KEY,
  provider_id TEXT NOT NULL REFERENCES providers(id),
  method TEXT NOT NULL,
  destination TEXT NOT NULL,
  schedule TEXT NOT NULL,
  changed_by TEXT NOT NULL,
  changed_at BIGINT NOT NULL,
  effective_at BIGINT NOT NULL
);
CREATE INDEX payout_settings_changes_provider ON payout_settings_changes (provider_id, changed_at);
)sql"},
      {13, "reliability: machines' judged days and the scores the marketplace shows", reliability_sqlite(),
       reliability_postgres()},
      // Payout runs (server/payouts/payout_runs): one run per payout day and method; one payout per
      // provider and payout day (the unique key is what makes a run's retry pay nobody twice); SEPA
      // batches keep the pain.001 file as written, with the operator's rate.
      {14, "payouts: runs, payouts and SEPA batches",
       R"sql(
CREATE TABLE payout_runs (
  id TEXT PRIMARY KEY,
  payout_day TEXT NOT NULL,
  method TEXT NOT NULL,
  status TEXT NOT NULL,
  held_reason TEXT NOT NULL DEFAULT '',
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  UNIQUE (payout_day, method)
);
CREATE TABLE sepa_batches (
  id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL REFERENCES payout_runs(id),
  message_id TEXT NOT NULL UNIQUE,
  eur_per_usdc_micro BIGINT NOT NULL,
  transfers INTEGER NOT NULL,
  total_cents BIGINT NOT NULL,
  execution_date TEXT NOT NULL,
  file TEXT NOT NULL,
  status TEXT NOT NULL,
  created_by TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  sent_at BIGINT
);
CREATE TABLE payouts (
  id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL REFERENCES payout_runs(id),
  provider_id TEXT NOT NULL REFERENCES providers(id),
  payout_day TEXT NOT NULL,
  schedule TEXT NOT NULL,
  method TEXT NOT NULL,
  destination TEXT NOT NULL,
  amount BIGINT NOT NULL,
  status TEXT NOT NULL,
  failure_reason TEXT NOT NULL DEFAULT '',
  batch_id TEXT REFERENCES sepa_batches(id),
  end_to_end_id TEXT,
  eur_cents BIGINT,
  -- USDC on Solana: the signed bytes, their signature and last valid block height, stored before the
  -- first send (a restart re-sends these bytes); signed_count counts re-signings after expiry.
  signature TEXT,
  raw_tx TEXT,
  last_valid_block_height BIGINT,
  signed_count BIGINT NOT NULL DEFAULT 0,
  confirmation TEXT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  UNIQUE (provider_id, payout_day)
);
CREATE INDEX payouts_provider ON payouts (provider_id, created_at);
CREATE INDEX payouts_run ON payouts (run_id, status);
)sql"},
      // Migration 15: an account's mail goes only to an address it confirmed. Accounts made before
      // count as confirmed (they were mailed there before; stopping now would lose their payout mail).
      // A confirmation keeps the SHA-256 of its link's token, never the token.
      {15, "accounts: confirmed e-mail addresses and their confirmation links",
       R"sql(
ALTER TABLE users ADD COLUMN email_verified_at BIGINT;
UPDATE users SET email_verified_at = created_at;
CREATE TABLE email_confirmations (
  token_hash TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users(id),
  email TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  used_at BIGINT
);
CREATE INDEX email_confirmations_user ON email_confirmations (user_id, created_at);
)sql"},
      // Migration 16: benchmark challenges (issue 21). Each keeps its seeds (so a check needs no secret and
      // survives a restart), when it was issued and must be answered, and its outcome. A provider whose
      // challenges fail repeatedly is flagged for an admin's review.
      {16, "benchmarks: challenges, and providers flagged for review",
       R"sql(
CREATE TABLE benchmark_challenges (
  id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL REFERENCES benchmark_runs(id),
  machine_id TEXT NOT NULL REFERENCES machines(id),
  gpu_uuid TEXT NOT NULL,
  kind TEXT NOT NULL,
  status TEXT NOT NULL,
  seed_a TEXT NOT NULL,
  seed_b TEXT NOT NULL,
  seed_verifier TEXT NOT NULL,
  seed_slices TEXT NOT NULL,
  size BIGINT NOT NULL,
  slice_words BIGINT NOT NULL,
  claimed_tflops DOUBLE PRECISION,
  allowed_ms BIGINT NOT NULL,
  issued_at BIGINT NOT NULL,
  deadline_at BIGINT NOT NULL,
  slices TEXT,
  answered_at BIGINT,
  result TEXT
);
CREATE INDEX benchmark_challenges_machine ON benchmark_challenges (machine_id, status, deadline_at);
ALTER TABLE providers ADD COLUMN challenge_failures BIGINT NOT NULL DEFAULT 0;
ALTER TABLE providers ADD COLUMN review_flagged_at BIGINT;
ALTER TABLE providers ADD COLUMN review_reason TEXT;
)sql"},
      // Migration 17: challenges also come at random times while a GPU is listed and idle ("spot"
      // checks, with the run whose figures they check), and the telemetry check of each run is kept
      // beside them. machines.spot_check_at is when the machine's next spot check is due.
      {17, "benchmarks: spot checks of listed GPUs, telemetry checks",
       R"sql(
ALTER TABLE benchmark_challenges ADD COLUMN origin TEXT NOT NULL DEFAULT 'run';
ALTER TABLE machines ADD COLUMN spot_check_at BIGINT;
)sql"},
      // Migration 18: a provider's machines by status. The listing-activity worker's query (is this price's
      // model listed on an online machine of its provider?) searched every online machine per price without
      // it: 7.5 s holding SQLite's write lock at 100,000 GPUs (bench/market.sh's store), 0.08 s with it.
      {18, "fleet: machines by provider and status",
       R"sql(
CREATE INDEX machines_provider_status ON machines (provider_id, status);
)sql"},
      // Migration 19: the committed GEMM challenge (protocol/challenge.hpp): its products, the rows the
      // server opens, and the root the agent committed to (the rows picked go in `slices`).
      {19, "benchmarks: committed GEMM challenges",
       R"sql(
ALTER TABLE benchmark_challenges ADD COLUMN products BIGINT NOT NULL DEFAULT 1;
ALTER TABLE benchmark_challenges ADD COLUMN open_rows BIGINT NOT NULL DEFAULT 0;
ALTER TABLE benchmark_challenges ADD COLUMN root TEXT;
)sql"},
      {20, "market: the change log behind the market version (the offer cache reloads only what changed)",
       market_changes_sqlite(), market_changes_postgres()},
      // Migration 21: an agent sends its messages in seq order, one at a time, so the machine's last seq is
      // the whole dedupe record (server/fleet/machines_repo.hpp take_seq), not a row per message with two
      // indexes, written by every heartbeat. Rental events took seqs from agent_seq without
      // raising last_seq, so the highest seq stored there is carried over first.
      {21, "fleet: an agent message's seq deduped by the machine's last seq; agent_seq dropped",
       R"sql(
UPDATE machines SET last_seq = (SELECT MAX(seq) FROM agent_seq WHERE agent_seq.machine_id = machines.id)
  WHERE last_seq < (SELECT MAX(seq) FROM agent_seq WHERE agent_seq.machine_id = machines.id);
DROP TABLE agent_seq;
)sql"},
      // Migration 22: every heartbeat sets machines.last_seen_at, and an index holding it made each of them
      // rewrite that index entry too (on PostgreSQL a new entry in every index of the table: no HOT update,
      // five WAL records a heartbeat). The offline sweep, the one reader that ordered by it, reads the
      // online machines a few times a heartbeat interval instead. On PostgreSQL the table's pages keep room
      // for the new versions of their rows, so that an update stays on its page; so do presence_minute's,
      // whose row for a minute each heartbeat in it updates (2.2 WAL records an upsert instead of 3.0-3.8).
      {22, "fleet: machines by status without last_seen_at (heartbeats update no index)",
       R"sql(
DROP INDEX machines_status;
CREATE INDEX machines_status ON machines (status);
)sql",
       R"sql(
DROP INDEX machines_status;
CREATE INDEX machines_status ON machines (status);
ALTER TABLE machines SET (fillfactor = 70);
ALTER TABLE presence_minute SET (fillfactor = 70);
)sql"},
      // Migration 23: a provider's machines by status, led by the status. With the index on (provider_id,
      // status), PostgreSQL found a registration's machine (provider_id = ? AND fingerprint = ?) through it
      // while the table was empty or unanalyzed (both indexes cost alike then) and kept that plan: every
      // machine of the provider read to find one, 0.5-0.6 ms a lookup at 20,000 (bench/heartbeats.sh), and
      // growing with the fleet. Led by the status it no longer fits that lookup, which only the unique
      // (provider_id, fingerprint) index serves; it still serves the market's "an online machine of this
      // provider" (both columns equal) and the offline sweep (the status), so the index on the status alone
      // goes: one index fewer to write when a machine's status changes.
      {23, "fleet: machines by status and provider (registration lookups by their unique index)",
       R"sql(
DROP INDEX machines_provider_status;
DROP INDEX machines_status;
CREATE INDEX machines_status_provider ON machines (status, provider_id);
)sql"},
      // Migration 24: reliability days by age, for the prune, in two partial indexes (final days, and days
      // still judged), which no read of one machine's days can use: it names neither. With one index on
      // `day`, PostgreSQL read a machine's window of days (machine_id = ? AND day >= ? AND day < ?) through
      // it while the table was empty or unanalyzed, and a pooled connection kept that plan: the window of
      // every machine read for each machine (2.8 ms a read, 3,100 buffers, at 20,000 machines in
      // bench/heartbeats.sh's first reliability round). Together the two hold every day, as the one did.
      {24, "reliability: days by age in partial indexes a machine's read cannot use",
       R"sql(
DROP INDEX reliability_days_age;
CREATE INDEX reliability_days_final_age ON reliability_days (day) WHERE final = 1;
CREATE INDEX reliability_days_open_age ON reliability_days (day) WHERE final = 0;
)sql"},
      // Migration 25: when a rental's stop was first asked. Metering ends at most a minute after it
      // (core::rental::metered_until): an agent that never confirms the end bills no further.
      {25, "rentals: when the stop was asked", R"sql(
ALTER TABLE rentals ADD COLUMN stop_requested_at BIGINT;
)sql"},
      {26, "fleet: why a machine's agent cannot run rentals (its GPUs are not offered meanwhile)",
       rentals_blocked_sqlite(), rentals_blocked_postgres()},
      {27,
       "fleet: where customers reach a machine's published ports (the agent's --public-host, else the "
       "address its registration came from)",
       R"sql(
ALTER TABLE machines ADD COLUMN public_host TEXT;
)sql"},
      {28,
       "rentals: the end of availability the offer showed when it was made (0: none), so that a schedule "
       "change that cuts a rental short is the provider's side",
       R"sql(
ALTER TABLE rentals ADD COLUMN promised_until BIGINT;
)sql"},
      // Migration 29: the customers warned that their balance runs out within the hour
      // (core::ledger::low_balance): one warning per fall, the row gone once they top up or nothing runs.
      {29, "billing: customers warned of a low balance", R"sql(
CREATE TABLE balance_warnings (
  customer_id TEXT PRIMARY KEY REFERENCES users(id),
  warned_at BIGINT NOT NULL
);
)sql"},
      // Migration 30: links that set a forgotten password, with the address each was mailed to. As with
      // e-mail confirmations, the store keeps the SHA-256 of a link's token, never the token.
      {30, "accounts: password reset links", R"sql(
CREATE TABLE password_resets (
  token_hash TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users(id),
  email TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  used_at BIGINT
);
CREATE INDEX password_resets_user ON password_resets (user_id, created_at);
)sql"},
      // Migration 31: facts about the servers of this database. One so far: a one-way fingerprint of the
      // server_secret the first server used (util::secret_hash_hex), so a replica started with another
      // secret is refused instead of failing the reveals and benchmark challenges sealed by the others.
      {31, "platform: the server secret's fingerprint", R"sql(
CREATE TABLE server_facts (
  name TEXT PRIMARY KEY,
  value TEXT NOT NULL,
  recorded_at BIGINT NOT NULL
);
)sql"},
      // Migration 32: the platform's own outages, as the machines sweep found them on watching again (no
      // replica running it for longer than a lease takeover takes, or the store unreachable): machines
      // were not heard because nobody listened, so reliability excuses those minutes.
      {32, "fleet: the platform's outages", R"sql(
CREATE TABLE platform_outages (
  started_at BIGINT PRIMARY KEY,
  resumed_at BIGINT NOT NULL,
  ended_at BIGINT NOT NULL
);
)sql"},
      // Migration 33: a machine its provider removed (an old host, a reinstalled agent's former self): left
      // out of their lists, the fleet and reliability, its history kept; its agent heard again brings it back.
      {33, "fleet: removed machines", R"sql(
ALTER TABLE machines ADD COLUMN removed_at BIGINT;
)sql"},
  };
  return list;
}

}  // namespace gpunex::store
