// One suite for the store interface, run against every driver (drogon's db_test idea):
// "sqlite" always, "postgres" when GPUNEX_TEST_PG_URL names a server where we may CREATE DATABASE.

#include "store/store.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <latch>
#include <limits>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "../unit/provider_store.hpp"
#include "core/rental.hpp"
#include "core/result.hpp"
#include "server/fleet/machines_repo.hpp"
#include "server/fleet/pending_telemetry.hpp"
#include "server/reliability/reliability_repo.hpp"
#include "server/rentals/rentals.hpp"
#include "server/rentals/rentals_repo.hpp"
#include "store/migrations.hpp"
#include "store/nul_in_text.hpp"

#ifdef GPUNEX_WITH_POSTGRES
#include <libpq-fe.h>
#endif

namespace {

// Milliseconds since the epoch, for unique names and lease times in these store-level tests.
std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

using gpunex::core::Error;
using gpunex::core::ErrorCode;
using gpunex::core::Ok;
using gpunex::core::Status;
using gpunex::store::Dialect;
using gpunex::store::Params;
using gpunex::store::Row;
using gpunex::store::Store;
using gpunex::store::StoreError;
using gpunex::store::StoreOptions;
using gpunex::store::StoreUnavailable;
using gpunex::store::Tx;
using gpunex::store::TxMode;
using gpunex::store::UniqueViolation;
using gpunex::store::Value;
namespace fs = std::filesystem;

constexpr const char* kPgSkip = "GPUNEX_TEST_PG_URL not set: PostgreSQL store tests skipped";

//! The same URL with its database name replaced.
std::string with_database(const std::string& url, const std::string& db) {
  auto scheme = url.find("://");
  auto slash = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  auto query = url.find('?');
  std::string base =
      url.substr(0, slash == std::string::npos ? (query == std::string::npos ? url.size() : query) : slash);
  std::string rest = query == std::string::npos ? "" : url.substr(query);
  return base + "/" + db + rest;
}

//! Creates one database for this test binary run and drops it at the end.
class PgDatabase : public ::testing::Environment {
 public:
  static std::string& url() {
    static std::string u;
    return u;
  }

  void SetUp() override {
#ifdef GPUNEX_WITH_POSTGRES
    const char* admin = std::getenv("GPUNEX_TEST_PG_URL");
    if (!admin || !*admin) return;
    admin_ = admin;
    name_ = "gpunex_store_test_" + std::to_string(::getpid()) + "_" + std::to_string(wall_ms());
    admin_exec("CREATE DATABASE " + name_ + " ENCODING 'UTF8' TEMPLATE template0");
    url() = with_database(admin_, name_);
#endif
  }

  void TearDown() override {
#ifdef GPUNEX_WITH_POSTGRES
    if (!name_.empty()) admin_exec("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
#endif
  }

 private:
#ifdef GPUNEX_WITH_POSTGRES
  void admin_exec(const std::string& sql) {
    PGconn* conn = PQconnectdb(admin_.c_str());
    if (PQstatus(conn) != CONNECTION_OK) {
      std::string msg = PQerrorMessage(conn);
      PQfinish(conn);
      throw std::runtime_error("cannot connect to GPUNEX_TEST_PG_URL: " + msg);
    }
    PGresult* res = PQexec(conn, sql.c_str());
    bool ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    std::string msg = PQresultErrorMessage(res);
    PQclear(res);
    PQfinish(conn);
    if (!ok) throw std::runtime_error(sql + ": " + msg);
  }
#endif
  std::string admin_;
  std::string name_;
};

const auto* const kPgEnv = ::testing::AddGlobalTestEnvironment(new PgDatabase);  // gtest takes ownership

//! The provider p1 (user u1, application a1) and its machines, each with the last seq given (fingerprint
//! "f-<id>"), for the tests of the fleet's tables.
void seed_machines(Tx& tx, const std::vector<std::pair<std::string, int>>& machines) {
  gpunex::test_support::insert_provider(tx);
  for (const auto& [id, last_seq] : machines) {
    tx.exec(
        "INSERT INTO machines (id, provider_id, fingerprint, hostname, host, simulated, agent_version, "
        "protocol_version, status, driver_version, cuda_version, created_at, registered_at, last_seq) "
        "VALUES (?, 'p1', ?, 'h', '{}', 1, '1', 1, 'online', '', '', 0, 0, ?)",
        {id, "f-" + id, last_seq});
  }
}

//! The store's plan for a statement, a line per step: SQLite's EXPLAIN QUERY PLAN (its detail), PostgreSQL's
//! EXPLAIN (planned with the parameters' values).
std::string plan_of(Store& store, const std::string& sql, const Params& params) {
  const bool sqlite = store.dialect() == Dialect::sqlite;
  std::string text;
  store.transact([&](Tx& tx) {
    for (const auto& r : tx.query((sqlite ? "EXPLAIN QUERY PLAN " : "EXPLAIN ") + sql, params)) {
      text += r.str(sqlite ? 3 : 0) + "\n";
    }
  });
  return text;
}

//! Whether a plan finds its rows by searching an index for `column` (equal to a value), with no column
//! checked row by row.
bool seeks_by(const std::string& plan, Dialect dialect, const std::string& column) {
  std::istringstream lines(plan);
  bool seek = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("Filter") != std::string::npos) return false;
    seek =
        seek || (dialect == Dialect::sqlite
                     ? line.find("USING") != std::string::npos && line.find("INDEX") != std::string::npos &&
                           line.find(column + "=?") != std::string::npos
                     : line.find("Index Cond") != std::string::npos && line.find(column + " = ") != std::string::npos);
  }
  return seek;
}

class StoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "postgres") {
#ifndef GPUNEX_WITH_POSTGRES
      GTEST_SKIP() << "built without PostgreSQL: PostgreSQL store tests skipped";
#endif
      if (PgDatabase::url().empty()) GTEST_SKIP() << kPgSkip;
      url_ = PgDatabase::url();
      // Every test starts from an empty database.
      auto admin = gpunex::store::open_store(url_, {.pool_size = 1});
      admin->transact([](Tx& tx) { tx.exec_script("DROP SCHEMA public CASCADE; CREATE SCHEMA public"); });
    } else {
      dir_ = fs::temp_directory_path() / ("gpunex-store-test-" + std::to_string(::getpid()) + "-" +
                                          std::to_string(wall_ms()) + "-" + std::to_string(counter_++));
      url_ = "sqlite:" + (dir_ / "sub" / "test.db").string();  // "sub" checks the folder is created
    }
    store_ = gpunex::store::open_store(url_, options_);
  }

  void TearDown() override {
    store_.reset();
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  //! Migrates and adds a scratch table holding every value type.
  void make_things() {
    gpunex::store::migrate(*store_);
    store_->transact(
        [](Tx& tx) { tx.exec("CREATE TABLE things (id TEXT PRIMARY KEY, n BIGINT, x DOUBLE PRECISION, s TEXT)"); });
  }

  std::int64_t count_things() {
    return store_->transact([](Tx& tx) { return tx.query_one("SELECT COUNT(*) FROM things")->i64(0); }, TxMode::read);
  }

  static inline std::atomic<int> counter_{0};
  StoreOptions options_{};
  fs::path dir_;
  std::string url_;
  std::unique_ptr<Store> store_;
};

TEST_P(StoreTest, MigratesFromEmptyAndIsIdempotent) {
  int want = gpunex::store::migrations().back().version;
  EXPECT_EQ(gpunex::store::migrate(*store_), want);
  EXPECT_EQ(gpunex::store::migrate(*store_), want);
  auto rows =
      store_->transact([](Tx& tx) { return tx.query("SELECT version, name FROM schema_migrations"); }, TxMode::read);
  ASSERT_EQ(rows.size(), gpunex::store::migrations().size());
  EXPECT_EQ(rows.back().i64(0), want);
  // The tables of migration 1 exist.
  store_->transact([](Tx& tx) { EXPECT_EQ(tx.query_one("SELECT COUNT(*) FROM users")->i64(0), 0); });
  EXPECT_EQ(store_->dialect(), GetParam() == "sqlite" ? Dialect::sqlite : Dialect::postgres);
}

// Migration 21 drops agent_seq, the row-per-message dedupe record: a machine's last seq becomes the
// highest seq stored there when that is higher (rental events took seqs there without raising it), and a
// machine with no rows keeps its own.
TEST_P(StoreTest, MigrationTwentyOneCarriesTheHighestSeqIntoTheMachine) {
  std::vector<gpunex::store::Migration> to20;
  for (const auto& m : gpunex::store::migrations()) {
    if (m.version <= 20) to20.push_back(m);
  }
  ASSERT_EQ(gpunex::store::migrate(*store_, to20), 20);
  store_->transact([](Tx& tx) {
    seed_machines(tx, {{"m1", 5}, {"m2", 9}, {"m3", 4}});
    for (const auto& [id, seq] : std::vector<std::pair<std::string, int>>{{"m1", 4}, {"m1", 7}, {"m2", 8}}) {
      tx.exec("INSERT INTO agent_seq (machine_id, seq, received_at) VALUES (?, ?, 0)", {id, seq});
    }
  });
  EXPECT_EQ(gpunex::store::migrate(*store_), gpunex::store::migrations().back().version);
  auto rows =
      store_->transact([](Tx& tx) { return tx.query("SELECT id, last_seq FROM machines ORDER BY id"); }, TxMode::read);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].i64(1), 7);  // a rental event's seq 7 above the heartbeats' 5
  EXPECT_EQ(rows[1].i64(1), 9);  // its own last seq was higher
  EXPECT_EQ(rows[2].i64(1), 4);  // nothing in agent_seq
  EXPECT_THROW(store_->transact([](Tx& tx) { tx.query("SELECT COUNT(*) FROM agent_seq"); }, TxMode::read), StoreError);
}

// Every heartbeat sets a machine's last_seen_at and last_seq (MachinesRepo::record_heartbeat): no index of
// machines may hold them, or each heartbeat rewrites index entries too. On PostgreSQL that is what lets
// the update stay on its page (a HOT update: no new entry in any index), checked by the transaction's own
// statistics.
TEST_P(StoreTest, AHeartbeatsUpdateOfItsMachineTouchesNoIndex) {
  gpunex::store::migrate(*store_);
  const std::string indexed_columns =
      store_->dialect() == Dialect::sqlite
          ? "SELECT ii.name FROM pragma_index_list('machines') AS il, pragma_index_info(il.name) AS ii"
          : "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = "
            "ANY(i.indkey) WHERE i.indrelid = 'machines'::regclass";
  std::vector<std::string> columns;
  store_->transact([&](Tx& tx) {
    for (const auto& r : tx.query(indexed_columns)) columns.push_back(r.str(0));
  });
  auto indexed = [&](const char* column) { return std::find(columns.begin(), columns.end(), column) != columns.end(); };
  EXPECT_TRUE(indexed("status")) << "the query reads the indexes";
  EXPECT_FALSE(indexed("last_seen_at")) << "an index of machines holds last_seen_at";
  EXPECT_FALSE(indexed("last_seq")) << "an index of machines holds last_seq";

  store_->transact([](Tx& tx) { seed_machines(tx, {{"m1", 5}}); });
  store_->transact([&](Tx& tx) {
    gpunex::server::MachinesRepo machines(tx);
    ASSERT_TRUE(machines.record_heartbeat("m1", gpunex::core::MachineStatus::online, 6, 1'000));
    EXPECT_EQ(machines.last_seen_ms("m1"), 1'000);
    if (store_->dialect() == Dialect::postgres) {
      auto r = tx.query_one(
          "SELECT pg_stat_get_xact_tuples_updated('machines'::regclass), "
          "pg_stat_get_xact_tuples_hot_updated('machines'::regclass)");
      EXPECT_EQ(r->i64(0), 1);
      EXPECT_EQ(r->i64(1), 1) << "the heartbeat's update was not a HOT update";
    }
  });
}

// A registration finds its machine by (provider_id, fingerprint), the unique index, whatever the table holds.
// PostgreSQL planned it through the index on (provider_id, status) on an empty, unanalyzed table, where
// the two cost alike, and a pooled connection kept that plan while one provider registered thousands:
// each lookup then read every machine of the provider (migration 23).
TEST_P(StoreTest, ARegistrationsLookupByFingerprintSeeksTheUniqueIndex) {
  gpunex::store::migrate(*store_);
  const std::string lookup =
      "SELECT id, provider_id, status, driver_version, simulated FROM machines WHERE provider_id = ? AND "
      "fingerprint = ?";
  const std::string empty = plan_of(*store_, lookup, {"p1", "f-m7"});
  EXPECT_TRUE(seeks_by(empty, store_->dialect(), "fingerprint")) << "on an empty table:\n" << empty;

  store_->transact([](Tx& tx) {
    std::vector<std::pair<std::string, int>> fleet;
    for (int i = 0; i < 500; ++i) fleet.emplace_back("m" + std::to_string(i), 0);
    seed_machines(tx, fleet);
  });
  store_->transact([](Tx& tx) { tx.exec("ANALYZE"); });
  const std::string filled = plan_of(*store_, lookup, {"p1", "f-m7"});
  EXPECT_TRUE(seeks_by(filled, store_->dialect(), "fingerprint")) << "with 500 machines of the provider:\n" << filled;
}

// The reliability round reads each machine's window of days by its key, whatever the table holds: with an
// index on `day` alone, PostgreSQL read it through that index on an empty table, every machine's days for
// each machine (migration 24). The prune still deletes every day before the cutoff, final or not, at most
// `limit` a call.
TEST_P(StoreTest, AMachinesReliabilityDaysAreReadByItsKeyAndPrunedByAge) {
  gpunex::store::migrate(*store_);
  const std::string window =
      "SELECT day, judged_until, final FROM reliability_days WHERE machine_id = ? AND day >= ? AND day < ? "
      "ORDER BY day";
  const std::string empty = plan_of(*store_, window, {"m7", std::int64_t{5}, std::int64_t{40}});
  EXPECT_TRUE(seeks_by(empty, store_->dialect(), "machine_id")) << "on an empty table:\n" << empty;

  constexpr std::int64_t kDay = 86'400'000;
  store_->transact([&](Tx& tx) {
    std::vector<std::pair<std::string, int>> fleet;
    for (int i = 0; i < 200; ++i) fleet.emplace_back("m" + std::to_string(i), 0);
    seed_machines(tx, fleet);
    for (int i = 0; i < 200; ++i) {
      for (std::int64_t d = 1; d <= 40; ++d) {
        // Day 3 of m0 was never finalized (its rounds stopped before it ended).
        const bool final = d < 40 && !(i == 0 && d == 3);
        tx.exec(
            "INSERT INTO reliability_days (machine_id, day, judged_until, final, full_day, scheduled, excused, "
            "present, counted_min, present_min, excused_min, jobs, jobs_ok, runs, run_sum, events, score, uptime, "
            "job_completion, stability, is_new) VALUES (?, ?, ?, ?, 1, '', '', '', 1440, 1440, 0, 0, 0, 0, 0, '[]', "
            "99, 1, 1, 1, 0)",
            {"m" + std::to_string(i), d * kDay, (d + 1) * kDay, std::int64_t{final}});
      }
    }
  });
  store_->transact([](Tx& tx) { tx.exec("ANALYZE"); });
  const std::string filled = plan_of(*store_, window, {"m7", 5 * kDay, 41 * kDay});
  EXPECT_TRUE(seeks_by(filled, store_->dialect(), "machine_id")) << "with 200 machines' 40 days:\n" << filled;

  // Days 1 to 4 of 200 machines go (800, one of them not final), at most 300 a call.
  std::vector<std::int64_t> calls;
  for (;;) {
    const auto n = store_->transact(
        [&](Tx& tx) { return gpunex::server::reliability::ReliabilityRepo(tx).prune_days_before(5 * kDay, 300); });
    calls.push_back(n);
    if (n < 300) break;
  }
  EXPECT_EQ(calls, (std::vector<std::int64_t>{300, 300, 200}));
  auto left = store_->transact([](Tx& tx) { return tx.query_one("SELECT COUNT(*), MIN(day) FROM reliability_days"); });
  EXPECT_EQ(left->i64(0), 200 * 36);
  EXPECT_EQ(left->i64(1), 5 * kDay);
}

// PostgreSQL text cannot hold a NUL and libpq would cut the value there, matching another row: both
// drivers refuse such a parameter alike (issue #19).
// Replicas on one PostgreSQL (issue 20): a replica started with a newer build migrates under the advisory
// lock; a replica (re)starting meanwhile with the older build waits for that migration to commit rather
// than reading a half-made schema, then finds the newer version and runs nothing; the new migration is
// applied once. On SQLite one file has one server: nothing to wait for.
TEST_P(StoreTest, AReplicaStartingDuringANewerMigrationWaitsForIt) {
  if (GetParam() != "postgres") GTEST_SKIP() << "replicas share PostgreSQL only";
  const int current = gpunex::store::migrate(*store_);
  auto newer = gpunex::store::migrations();
  newer.push_back({current + 1, "a newer build's migration, slow",
                   "CREATE TABLE upgrade_probe (id BIGINT); SELECT pg_sleep(1.5); INSERT INTO upgrade_probe VALUES (1);"});
  auto upgraded = gpunex::store::open_store(url_, {.pool_size = 1});
  auto older = gpunex::store::open_store(url_, {.pool_size = 1});
  std::latch started(1);
  int upgraded_to = 0;
  std::thread upgrade([&] {
    started.count_down();
    upgraded_to = gpunex::store::migrate(*upgraded, newer);
  });
  started.wait();
  // Until the upgrade holds the migration lock (a fixed pause can end before it does on a loaded machine).
  const auto lock_held = [&] {
    return store_->transact([](Tx& tx) {
      return tx.query_one(
                   "SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND database = "
                   "(SELECT oid FROM pg_database WHERE datname = current_database())")
                 ->i64(0) > 0;
    });
  };
  for (int i = 0; i < 1000 && !lock_held(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const int older_saw = gpunex::store::migrate(*older);
  // Whether the upgrade had committed when the older build went on, asked before the upgrade is joined.
  const auto probe_committed = store_->transact([](Tx& tx) {
    return tx.query_one("SELECT COUNT(*) FROM pg_tables WHERE tablename = 'upgrade_probe'")->i64(0) == 1;
  });
  upgrade.join();
  EXPECT_EQ(upgraded_to, current + 1);
  EXPECT_EQ(older_saw, current + 1) << "the older build finds the newer schema, and runs nothing";
  EXPECT_TRUE(probe_committed) << "it waited for the migration to commit";
  // Applied once, and whole: the probe's row was written after the sleep, in the same transaction.
  store_->transact(
      [&](Tx& tx) {
        EXPECT_EQ(tx.query_one("SELECT COUNT(*) FROM schema_migrations WHERE version = ?",
                               {std::int64_t{current + 1}})->i64(0), 1);
        EXPECT_EQ(tx.query_one("SELECT COUNT(*) FROM upgrade_probe")->i64(0), 1);
      },
      TxMode::read);
  // The newer build started again (a second replica of it) finds nothing left to do.
  EXPECT_EQ(gpunex::store::migrate(*older, newer), current + 1);
}

TEST_P(StoreTest, RefusesANulInATextParameter) {
  make_things();
  store_->transact([&](Tx& tx) { tx.exec("INSERT INTO things (id, n) VALUES (?, ?)", {std::string("a@x"), std::int64_t{1}}); });
  EXPECT_THROW(store_->transact([&](Tx& tx) {
                 return tx.query("SELECT id FROM things WHERE id = ?", {std::string("a@x\0junk", 8)});
               }, TxMode::read),
               gpunex::store::NulInText);
}

TEST_P(StoreTest, AReadTransactionReadsOneSnapshot) {
  // A page is several reads in one read transaction: a write committed between two of them must not show
  // in the second (on PostgreSQL, READ COMMITTED would show it).
  make_things();
  store_->transact([&](Tx& tx) { tx.exec("INSERT INTO things (id, n) VALUES ('a', 1)"); });
  std::int64_t first = -1, second = -1, after = -1;
  store_->transact(
      [&](Tx& tx) {
        first = tx.query_one("SELECT COUNT(*) FROM things")->i64(0);
        // Another connection of the pool commits meanwhile.
        store_->transact([&](Tx& w) { w.exec("INSERT INTO things (id, n) VALUES ('b', 2)"); });
        second = tx.query_one("SELECT COUNT(*) FROM things")->i64(0);
      },
      TxMode::read);
  after = count_things();
  EXPECT_EQ(first, 1);
  EXPECT_EQ(second, 1) << "the read transaction saw a write committed after its first read";
  EXPECT_EQ(after, 2) << "the write was committed";
}

TEST_P(StoreTest, RoundTripsEveryValueType) {
  make_things();
  const std::int64_t big = std::numeric_limits<std::int64_t>::max();
  const std::int64_t small = std::numeric_limits<std::int64_t>::min();
  const std::string text = "grüße, 東京, emoji 🚀, quote ' and ?";
  store_->transact([&](Tx& tx) {
    EXPECT_EQ(tx.exec("INSERT INTO things (id, n, x, s) VALUES (?, ?, ?, ?)", {std::string("a"), big, 0.1, text}), 1);
    tx.exec("INSERT INTO things (id, n, x, s) VALUES (?, ?, ?, ?)", {std::string("b"), small, -1.5e300, std::string()});
    tx.exec("INSERT INTO things (id, n, x, s) VALUES (?, ?, ?, ?)", {std::string("c"), nullptr, nullptr, nullptr});
  });
  auto rows =
      store_->transact([](Tx& tx) { return tx.query("SELECT id, n, x, s FROM things ORDER BY id"); }, TxMode::read);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].str(0), "a");
  EXPECT_EQ(rows[0].i64(1), big);
  EXPECT_EQ(rows[0].f64(2), 0.1);
  EXPECT_EQ(rows[0].str(3), text);
  EXPECT_TRUE(std::holds_alternative<std::int64_t>(rows[0].raw(1)));
  EXPECT_TRUE(std::holds_alternative<double>(rows[0].raw(2)));
  EXPECT_EQ(rows[0].str(1), std::to_string(big));  // str of an integer is its decimal
  EXPECT_EQ(rows[1].i64(1), small);
  EXPECT_EQ(rows[1].f64(2), -1.5e300);
  EXPECT_EQ(rows[1].str(3), "");
  EXPECT_FALSE(rows[1].is_null(3));
  for (std::size_t c = 1; c <= 3; ++c) EXPECT_TRUE(rows[2].is_null(c));
  EXPECT_EQ(rows[2].opt_i64(1), std::nullopt);
  EXPECT_EQ(rows[2].opt_f64(2), std::nullopt);
  EXPECT_EQ(rows[2].opt_str(3), std::nullopt);
  EXPECT_EQ(rows[0].opt_i64(1), big);
  EXPECT_THROW(rows[2].i64(1), StoreError);
  EXPECT_THROW(rows[2].str(3), StoreError);
  EXPECT_THROW(rows[2].f64(2), StoreError);
  EXPECT_THROW(rows[0].i64(9), StoreError);

  // Text columns holding numbers convert; a boolean is a 0/1 integer.
  auto row = store_->transact(
      [](Tx& tx) { return *tx.query_one("SELECT '42', '2.5', 'nope', 1 = 1, 1 = 0, ?", {std::int64_t{7}}); });
  EXPECT_EQ(row.i64(0), 42);
  EXPECT_EQ(row.f64(1), 2.5);
  EXPECT_THROW(row.i64(2), StoreError);
  EXPECT_TRUE(row.boolean(3));
  EXPECT_FALSE(row.boolean(4));
  EXPECT_EQ(row.i64(5), 7);
}

TEST_P(StoreTest, SumOfBigintsIsAnExactInteger) {
  make_things();
  const std::int64_t big = 4'000'000'000'000'000'001;  // above 2^53: a double would round it
  store_->transact([&](Tx& tx) {
    tx.exec("INSERT INTO things (id, n) VALUES ('a', ?), ('b', ?)", {big, std::int64_t{1}});
  });
  auto sum = store_->transact([](Tx& tx) { return tx.query_one("SELECT SUM(n) FROM things")->i64(0); });
  EXPECT_EQ(sum, big + 1);
}

TEST_P(StoreTest, ReturningGivesTheRow) {
  make_things();
  auto row = store_->transact([](Tx& tx) {
    return tx.query_one("INSERT INTO things (id, n) VALUES (?, ?) RETURNING id, n",
                        {std::string("r"), std::int64_t{5}});
  });
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->str(0), "r");
  EXPECT_EQ(row->i64(1), 5);
  auto updated = store_->transact(
      [](Tx& tx) { return tx.query("UPDATE things SET n = n + 1 WHERE id = ? RETURNING n", {std::string("r")}); });
  ASSERT_EQ(updated.size(), 1u);
  EXPECT_EQ(updated[0].i64(0), 6);
}

TEST_P(StoreTest, OnConflictDoNothingIsDetectable) {
  make_things();
  const char* sql = "INSERT INTO things (id, n) VALUES (?, ?) ON CONFLICT (id) DO NOTHING";
  auto first = store_->transact([&](Tx& tx) { return tx.exec(sql, {std::string("k"), std::int64_t{1}}); });
  auto second = store_->transact([&](Tx& tx) { return tx.exec(sql, {std::string("k"), std::int64_t{2}}); });
  EXPECT_EQ(first, 1);
  EXPECT_EQ(second, 0);
  auto returned = store_->transact([&](Tx& tx) {
    return tx.query_one(std::string(sql) + " RETURNING id", {std::string("k"), std::int64_t{3}});
  });
  EXPECT_FALSE(returned.has_value());
  auto n = store_->transact([](Tx& tx) { return tx.query_one("SELECT n FROM things WHERE id = 'k'")->i64(0); });
  EXPECT_EQ(n, 1);
}

TEST_P(StoreTest, PlainDuplicateThrowsUniqueViolation) {
  make_things();
  store_->transact([](Tx& tx) { tx.exec("INSERT INTO things (id) VALUES ('dup')"); });
  EXPECT_THROW(store_->transact([](Tx& tx) { tx.exec("INSERT INTO things (id) VALUES ('dup')"); }), UniqueViolation);
  // The failed transaction left the store usable.
  EXPECT_EQ(count_things(), 1);
  // A syntax error is a StoreError but not a UniqueViolation.
  try {
    store_->transact([](Tx& tx) { tx.exec("INSERT INTO nowhere VALUES (1)"); });
    FAIL() << "expected StoreError";
  } catch (const UniqueViolation&) {
    FAIL() << "not a unique violation";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("nowhere"), std::string::npos) << e.what();
  }
}

TEST_P(StoreTest, TransactCommitsOnNormalReturn) {
  make_things();
  store_->transact([](Tx& tx) { tx.exec("INSERT INTO things (id) VALUES ('a')"); });
  EXPECT_TRUE(store_->transact([](Tx& tx) { return tx.exec("INSERT INTO things (id) VALUES ('b')") == 1; }));
  // An integer result of 0 is a value, not a failure: still committed.
  EXPECT_EQ(store_->transact([](Tx& tx) {
    tx.exec("INSERT INTO things (id) VALUES ('c')");
    return 0;
  }),
            0);
  Status ok = store_->transact([](Tx& tx) -> Status {
    tx.exec("INSERT INTO things (id) VALUES ('d')");
    return Ok{};
  });
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(count_things(), 4);
}

TEST_P(StoreTest, TransactRollsBackOnExceptionFalseAndError) {
  make_things();
  EXPECT_THROW(store_->transact([](Tx& tx) {
    tx.exec("INSERT INTO things (id) VALUES ('a')");
    throw std::runtime_error("boom");
  }),
               std::runtime_error);
  EXPECT_FALSE(store_->transact([](Tx& tx) {
    tx.exec("INSERT INTO things (id) VALUES ('b')");
    return false;
  }));
  Status failed = store_->transact([](Tx& tx) -> Status {
    tx.exec("INSERT INTO things (id) VALUES ('c')");
    return Error::make(ErrorCode::conflict, "no");
  });
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().code, ErrorCode::conflict);
  gpunex::core::Result<int> failed_value = store_->transact([](Tx& tx) -> gpunex::core::Result<int> {
    tx.exec("INSERT INTO things (id) VALUES ('d')");
    return Error::make(ErrorCode::unprocessable, "no");
  });
  EXPECT_FALSE(failed_value.ok());
  EXPECT_EQ(count_things(), 0);
}

// Every time, not only when another writer committed meanwhile; reads still run, and a read transaction
// after a write one (same pooled connection) reads with the statements it cached.
TEST_P(StoreTest, AReadTransactionCannotWrite) {
  make_things();
  store_->transact([](Tx& tx) { tx.exec("INSERT INTO things (id) VALUES ('a')"); });
  for (int round = 0; round < 3; ++round) {
    EXPECT_ANY_THROW(store_->transact([](Tx& tx) { tx.exec("INSERT INTO things (id) VALUES ('b')"); }, TxMode::read));
    EXPECT_ANY_THROW(
        store_->transact([](Tx& tx) { tx.exec_script("SELECT 1; DELETE FROM things;"); }, TxMode::read));
    if (GetParam() == "sqlite") {  // asking a pragma reads; setting one is refused
      EXPECT_EQ(store_->transact([](Tx& tx) { return tx.query_one("PRAGMA journal_mode")->str(0); }, TxMode::read),
                "wal");
      EXPECT_ANY_THROW(store_->transact([](Tx& tx) { tx.exec("PRAGMA user_version = 7"); }, TxMode::read));
    }
    EXPECT_EQ(store_->transact([](Tx& tx) { return tx.query_one("SELECT COUNT(*) FROM things")->i64(0); },
                               TxMode::read),
              1);
    store_->transact([&](Tx& tx) { tx.exec("INSERT INTO things (id) VALUES (?)", {"w" + std::to_string(round)}); });
    store_->transact([&](Tx& tx) { tx.exec("DELETE FROM things WHERE id = ?", {"w" + std::to_string(round)}); });
  }
  EXPECT_EQ(count_things(), 1);
}

TEST_P(StoreTest, QuestionMarkInsideLiteralIsNotAPlaceholder) {
  make_things();
  store_->transact([](Tx& tx) {
    tx.exec("INSERT INTO things (id, s) VALUES (?, 'what? really?')", {std::string("q")});
    tx.exec("INSERT INTO things (id, s) VALUES ('it''s ?', ?)", {std::string("x")});
  });
  auto rows = store_->transact([](Tx& tx) {
    return tx.query("SELECT id, s FROM things WHERE s <> '?' AND id <> ? ORDER BY id", {std::string("none")});
  });
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].str(0), "it's ?");
  EXPECT_EQ(rows[0].str(1), "x");
  EXPECT_EQ(rows[1].str(0), "q");
  EXPECT_EQ(rows[1].str(1), "what? really?");
  // A wrong parameter count is reported, not sent.
  EXPECT_THROW(store_->transact([](Tx& tx) { tx.query("SELECT ?", {}); }), StoreError);
}

TEST_P(StoreTest, LeasesAreExclusiveUntilExpiry) {
  gpunex::store::migrate(*store_);
  using gpunex::store::release_lease;
  using gpunex::store::try_take_lease;
  const std::int64_t t0 = 1'000'000;
  const std::int64_t ttl = 30'000;
  auto take = [&](const char* who, std::int64_t now) {
    return store_->transact([&](Tx& tx) { return try_take_lease(tx, "payouts", who, now, ttl); });
  };
  auto holder = [&] {
    return store_->transact([](Tx& tx) {
      auto row = tx.query_one("SELECT holder, expires_at FROM leases WHERE name = 'payouts'");
      return row ? row->str(0) + "@" + row->str(1) : std::string("none");
    });
  };
  EXPECT_TRUE(take("A", t0));
  EXPECT_FALSE(take("B", t0 + 1000));   // unexpired: refused
  EXPECT_TRUE(take("A", t0 + 10'000));  // the holder extends it
  EXPECT_EQ(holder(), "A@" + std::to_string(t0 + 10'000 + ttl));
  EXPECT_FALSE(take("B", t0 + ttl + 1));      // extended, so still A's
  EXPECT_TRUE(take("B", t0 + 10'000 + ttl));  // expired: B takes it
  EXPECT_EQ(holder(), "B@" + std::to_string(t0 + 10'000 + 2 * ttl));
  store_->transact([](Tx& tx) { release_lease(tx, "payouts", "A"); });  // not A's: no effect
  EXPECT_EQ(holder(), "B@" + std::to_string(t0 + 10'000 + 2 * ttl));
  store_->transact([](Tx& tx) { release_lease(tx, "payouts", "B"); });
  EXPECT_EQ(holder(), "none");
  EXPECT_TRUE(take("A", t0 + 20'000));  // free again
}

// Replicas race for one lease: two Store instances (separate connections; on SQLite the same file),
// several threads each, every thread its own holder, each taking it a number of times. A shared
// count of holders inside must never pass 1.
TEST_P(StoreTest, LeaseHasOneHolderAcrossReplicasUnderContention) {
  gpunex::store::migrate(*store_);
  auto other = gpunex::store::open_store(url_, options_);
  Store* replicas[] = {store_.get(), other.get()};
  constexpr int kThreadsPerReplica = 3;
  constexpr int kTakesPerThread = 10;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::atomic<int> inside{0};
  std::atomic<int> overlaps{0};
  std::atomic<int> taken[2] = {0, 0};
  std::atomic<int> failures{0};
  std::mutex error_mutex;
  std::string first_error;
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    for (int t = 0; t < kThreadsPerReplica; ++t) {
      threads.emplace_back([&, r, t] {
        Store& store = *replicas[r];
        const std::string holder = "replica" + std::to_string(r) + "-thread" + std::to_string(t);
        for (int mine = 0; mine < kTakesPerThread && std::chrono::steady_clock::now() < deadline;) {
          try {
            // A long TTL on the real clock: nobody's lease expires during the test.
            const bool held = store.transact(
                [&](Tx& tx) { return gpunex::store::try_take_lease(tx, "singleton", holder, wall_ms(), 60'000); });
            if (!held) {
              std::this_thread::sleep_for(std::chrono::microseconds(100));
              continue;
            }
            if (inside.fetch_add(1) != 0) ++overlaps;
            ++mine;
            ++taken[r];
            std::this_thread::sleep_for(std::chrono::microseconds(300));
            inside.fetch_sub(1);
            store.transact([&](Tx& tx) { gpunex::store::release_lease(tx, "singleton", holder); });
          } catch (const std::exception& e) {
            ++failures;
            std::lock_guard lock(error_mutex);
            if (first_error.empty()) first_error = e.what();
            return;
          }
        }
      });
    }
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0) << first_error;
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(taken[0].load(), kThreadsPerReplica * kTakesPerThread);
  EXPECT_EQ(taken[1].load(), kThreadsPerReplica * kTakesPerThread);
  auto left =
      store_->transact([](Tx& tx) { return tx.query_one("SELECT COUNT(*) FROM leases")->i64(0); }, TxMode::read);
  EXPECT_EQ(left, 0);  // every holder gave it back
}

// An expired lease is taken over by exactly one of many racers on two replicas, round after round.
TEST_P(StoreTest, ExpiredLeaseIsTakenOverByExactlyOneRacer) {
  gpunex::store::migrate(*store_);
  auto other = gpunex::store::open_store(url_, options_);
  Store* replicas[] = {store_.get(), other.get()};
  using gpunex::store::try_take_lease;
  const std::int64_t t0 = 1'000'000;
  const std::int64_t ttl = 60'000;
  ASSERT_TRUE(store_->transact([&](Tx& tx) { return try_take_lease(tx, "sweeper", "crashed", t0, ttl); }));
  constexpr int kRacers = 6;
  constexpr int kRounds = 10;
  for (int round = 1; round <= kRounds; ++round) {
    const std::int64_t now = t0 + round * (ttl + 1);  // the previous round's winner has expired
    std::latch start(kRacers);
    std::atomic<int> winners{0};
    std::atomic<int> failures{0};
    std::string winner;
    std::mutex winner_mutex;
    std::vector<std::thread> racers;
    for (int i = 0; i < kRacers; ++i) {
      racers.emplace_back([&, i] {
        const std::string holder = "racer" + std::to_string(i) + "-round" + std::to_string(round);
        start.arrive_and_wait();
        try {
          if (replicas[i % 2]->transact([&](Tx& tx) { return try_take_lease(tx, "sweeper", holder, now, ttl); })) {
            ++winners;
            std::lock_guard lock(winner_mutex);
            winner = holder;
          }
        } catch (const std::exception&) {
          ++failures;
        }
      });
    }
    for (auto& th : racers) th.join();
    ASSERT_EQ(failures.load(), 0) << "round " << round;
    ASSERT_EQ(winners.load(), 1) << "round " << round;
    auto holder = store_->transact(
        [](Tx& tx) { return tx.query_one("SELECT holder FROM leases WHERE name = 'sweeper'")->str(0); }, TxMode::read);
    EXPECT_EQ(holder, winner) << "round " << round;
  }
}

// migrate() applies its list in one transaction: a later step that fails leaves no table of the
// earlier steps and no recorded version, from an empty database and from a migrated one.
TEST_P(StoreTest, FailedMigrationLeavesNothingBehind) {
  using gpunex::store::Migration;
  const auto table_exists = [&](const std::string& table) {
    try {
      store_->transact([&](Tx& tx) { tx.query("SELECT COUNT(*) FROM " + table); }, TxMode::read);
      return true;
    } catch (const StoreError&) {
      return false;
    }
  };
  const Migration broken{900, "broken", "CREATE TABLE extra_b (id BIGINT); INSERT INTO no_such_table VALUES (1)"};

  // From empty: migration 1 and a failing step.
  const std::vector<Migration> from_empty = {gpunex::store::migrations().front(), broken};
  EXPECT_THROW(gpunex::store::migrate(*store_, from_empty), StoreError);
  EXPECT_FALSE(table_exists("users"));
  EXPECT_FALSE(table_exists("schema_migrations"));
  EXPECT_FALSE(table_exists("extra_b"));

  // From the current schema: a good step, then a failing one.
  const int current = gpunex::store::migrate(*store_);
  auto list = gpunex::store::migrations();
  list.push_back(
      {current + 1, "extra_a", "CREATE TABLE extra_a (id BIGINT PRIMARY KEY); INSERT INTO extra_a VALUES (1)"});
  list.push_back({current + 2, broken.name, broken.sql});
  EXPECT_THROW(gpunex::store::migrate(*store_, list), StoreError);
  EXPECT_FALSE(table_exists("extra_a"));
  EXPECT_FALSE(table_exists("extra_b"));
  const auto version = [&] {
    return store_->transact([](Tx& tx) { return tx.query_one("SELECT MAX(version) FROM schema_migrations")->i64(0); },
                            TxMode::read);
  };
  EXPECT_EQ(version(), current);

  // Without the failing step the good one applies.
  list.pop_back();
  EXPECT_EQ(gpunex::store::migrate(*store_, list), current + 1);
  EXPECT_EQ(version(), current + 1);
  EXPECT_TRUE(table_exists("extra_a"));
}

// SQLite runs in WAL mode, and a writer waits up to the busy timeout for another connection's write
// lock (here another Store on the same file) instead of failing at once.
TEST_P(StoreTest, SqliteUsesWalAndWaitsForTheBusyTimeout) {
  if (GetParam() != "sqlite") GTEST_SKIP() << "SQLite only";
  make_things();
  const auto pragma = [](Store& store, const char* sql) {
    return store.transact([&](Tx& tx) { return tx.query_one(sql)->str(0); }, TxMode::read);
  };
  EXPECT_EQ(pragma(*store_, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(pragma(*store_, "PRAGMA busy_timeout"), "5000");  // StoreOptions' default
  auto quick = gpunex::store::open_store(url_, {.pool_size = 1, .busy_timeout = std::chrono::milliseconds(50)});
  auto patient = gpunex::store::open_store(url_, {.pool_size = 1, .busy_timeout = std::chrono::milliseconds(10'000)});
  EXPECT_EQ(pragma(*quick, "PRAGMA busy_timeout"), "50");
  EXPECT_EQ(pragma(*quick, "PRAGMA journal_mode"), "wal");

  // The holder keeps the write lock until the quick writer has given up (not for a fixed time, which a
  // loaded machine can outlast before the quick writer even starts), then a while longer for the patient.
  std::latch writing(1);
  std::latch quick_gave_up(1);
  std::thread holder([&] {
    store_->transact([&](Tx& tx) {
      tx.exec("INSERT INTO things (id) VALUES ('held')");
      writing.count_down();
      quick_gave_up.wait();
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    });
  });
  writing.wait();
  const auto insert = [](const char* id) {
    return [id](Tx& tx) { tx.exec("INSERT INTO things (id) VALUES (?)", {std::string(id)}); };
  };
  const auto asked = std::chrono::steady_clock::now();
  EXPECT_THROW(quick->transact(insert("quick")), StoreUnavailable);              // gave up after 50 ms,
  EXPECT_LT(std::chrono::steady_clock::now() - asked, std::chrono::seconds(4));  // not the default 5 s
  quick_gave_up.count_down();
  EXPECT_NO_THROW(patient->transact(insert("patient")));  // waited for the holder's commit
  holder.join();
  EXPECT_EQ(count_things(), 2);
}

TEST_P(StoreTest, ConcurrentWritersDoNotLoseUpdates) {
  make_things();
  store_->transact([](Tx& tx) { tx.exec("INSERT INTO things (id, n) VALUES ('counter', 0)"); });
  constexpr int kThreads = 8;
  constexpr int kEach = 50;
  std::atomic<int> failures{0};
  std::mutex error_mutex;
  std::string first_error;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) {
        try {
          store_->transact([](Tx& tx) {
            // Read before writing: on SQLite this needs BEGIN IMMEDIATE, or the lock upgrade fails.
            auto before = tx.query_one("SELECT n FROM things WHERE id = 'counter'")->i64(0);
            auto after = tx.query_one("UPDATE things SET n = n + 1 WHERE id = 'counter' RETURNING n")->i64(0);
            if (after <= before) throw std::logic_error("counter went backwards");
          });
        } catch (const std::exception& e) {
          ++failures;
          std::lock_guard lock(error_mutex);
          if (first_error.empty()) first_error = e.what();
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0) << first_error;
  auto n = store_->transact([](Tx& tx) { return tx.query_one("SELECT n FROM things WHERE id = 'counter'")->i64(0); },
                            TxMode::read);
  EXPECT_EQ(n, kThreads * kEach);
}

TEST_P(StoreTest, ObserverSeesEachStatement) {
  make_things();
  std::mutex mutex;
  std::vector<std::string> ops;
  double total = 0;
  store_->set_observer([&](std::string_view op, double seconds) {
    std::lock_guard lock(mutex);
    ops.emplace_back(op);
    total += seconds;
  });
  store_->transact([](Tx& tx) {
    tx.exec("  insert INTO things (id) VALUES ('o')");
    tx.query("SELECT * FROM things");
    tx.exec("\n-- a comment\nUPDATE things SET n = 1");
  });
  auto has = [&](const char* op) { return std::find(ops.begin(), ops.end(), op) != ops.end(); };
  EXPECT_TRUE(has("insert"));
  EXPECT_TRUE(has("select"));
  EXPECT_TRUE(has("update"));
  EXPECT_TRUE(has("commit"));
  EXPECT_GE(total, 0.0);
}

TEST_P(StoreTest, DescribeHasNoPassword) {
  auto d = store_->describe();
  EXPECT_EQ(d.find("secret"), std::string::npos);
  if (GetParam() == "sqlite") {
    EXPECT_EQ(d, url_);
  } else {
    EXPECT_EQ(d.rfind("postgresql://", 0), 0u) << d;
    // The test server trusts local connections, so a password in the URL is accepted and ignored.
    auto at = url_.find('@');
    ASSERT_NE(at, std::string::npos) << "GPUNEX_TEST_PG_URL without a user";
    std::string with_password = url_.substr(0, at) + ":secret" + url_.substr(at);
    if (url_.substr(0, at).find(':', url_.find("://") + 3) == std::string::npos) {
      auto other = gpunex::store::open_store(with_password, {.pool_size = 1});
      EXPECT_EQ(other->describe().find("secret"), std::string::npos) << other->describe();
      EXPECT_EQ(other->describe(), d);
    }
  }
}

TEST_P(StoreTest, PostgresReplacesAConnectionTheServerDropped) {
  if (GetParam() != "postgres") GTEST_SKIP() << "PostgreSQL only";
  auto store = gpunex::store::open_store(url_, {.pool_size = 1});
  auto pid = store->transact([](Tx& tx) { return tx.query_one("SELECT pg_backend_pid()")->i64(0); });
  store_->transact([&](Tx& tx) { tx.query("SELECT pg_terminate_backend(?::integer)", {pid}); });
  for (int i = 0; i < 100; ++i) {
    auto alive = store_->transact([&](Tx& tx) {
      return tx.query_one("SELECT COUNT(*) FROM pg_stat_activity WHERE pid = ?::integer", {pid})->i64(0);
    });
    if (alive == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // The pooled connection is dead; the next transaction gets a fresh one.
  auto again = store->transact([](Tx& tx) { return tx.query_one("SELECT pg_backend_pid()")->i64(0); });
  EXPECT_NE(again, pid);
}

// Migration 6's triggers: every change to what an offer is made of bumps market_version, once
// committed; a heartbeat (machines.last_seen_at) or a rolled-back change does not.
TEST_P(StoreTest, MarketVersionCountsOfferChangesButNotHeartbeats) {
  gpunex::store::migrate(*store_);
  const auto version = [&] {
    return store_->transact(
        [](Tx& tx) { return tx.query_one("SELECT version FROM market_version WHERE id = 1")->i64(0); }, TxMode::read);
  };
  const auto changes = [&](const char* sql) {
    const auto before = version();
    store_->transact([&](Tx& tx) { tx.exec(sql); });
    return version() - before;
  };
  store_->transact([](Tx& tx) {
    tx.exec("INSERT INTO users (id, email, full_name, password_hash, created_at, email_verified_at) VALUES ('u1', 'p@x', 'P', 'x', 0, 0)");
    tx.exec(
        "INSERT INTO applications (id, user_id, status, form, created_at, updated_at) "
        "VALUES ('a1', 'u1', 'approved', '{}', 0, 0)");
  });
  EXPECT_GT(changes("INSERT INTO providers (id, user_id, application_id, tier, created_at) "
                    "VALUES ('p1', 'u1', 'a1', 'community', 0)"),
            0);
  EXPECT_GT(changes("INSERT INTO machines (id, provider_id, fingerprint, hostname, host, simulated, agent_version, "
                    "protocol_version, status, driver_version, cuda_version, created_at, registered_at, last_seq) "
                    "VALUES ('m1', 'p1', 'f', 'h', '{}', 1, '1', 1, 'offline', '', '', 0, 0, 0)"),
            0);
  EXPECT_GT(changes("UPDATE machines SET last_seen_at = 1, status = 'online' WHERE id = 'm1'"), 0);
  EXPECT_EQ(changes("UPDATE machines SET last_seen_at = 2, status = 'online', last_seq = 3 WHERE id = 'm1'"), 0);
  EXPECT_GT(changes("UPDATE machines SET status = 'offline' WHERE id = 'm1'"), 0);
  EXPECT_GT(changes("INSERT INTO machine_gpus (machine_id, uuid, idx, name, model, memory_mib, facts, present, "
                    "first_seen_at, updated_at) VALUES ('m1', 'g1', 0, 'n', 'L4', 1, '{}', 1, 0, 0)"),
            0);
  EXPECT_GT(changes("INSERT INTO gpu_listing (machine_id, uuid, listed, updated_at) VALUES ('m1', 'g1', 1, 0)"), 0);
  EXPECT_GT(changes("UPDATE gpu_listing SET listed = 0"), 0);
  EXPECT_GT(changes("INSERT INTO machine_schedules (machine_id, provider_id, timezone, always_on, spec, updated_at) "
                    "VALUES ('m1', 'p1', 'UTC', 1, '{}', 0)"),
            0);
  EXPECT_GT(changes("DELETE FROM machine_schedules"), 0);
  EXPECT_GT(changes("UPDATE providers SET tier = 'enterprise'"), 0);
  EXPECT_EQ(changes("UPDATE machine_gpus SET present = 1 WHERE machine_id = 'nope'"), 0);

  const auto before = version();
  EXPECT_THROW(store_->transact([](Tx& tx) {
    tx.exec("UPDATE gpu_listing SET listed = 1");
    throw StoreError("roll back");
  }),
               StoreError);
  EXPECT_EQ(version(), before);
}

TEST(StoreOpen, RejectsUnknownSchemeWithoutEchoingIt) {
  try {
    gpunex::store::open_store("mysql://root:secret@host/db");
    FAIL() << "expected StoreError";
  } catch (const StoreError& e) {
    EXPECT_EQ(std::string(e.what()).find("secret"), std::string::npos) << e.what();
  }
}

TEST(StoreOpen, SqliteInMemoryWorks) {
  auto store = gpunex::store::open_store("sqlite::memory:");
  EXPECT_EQ(gpunex::store::migrate(*store), gpunex::store::migrations().back().version);
  store->transact([](Tx& tx) { tx.exec("INSERT INTO leases VALUES ('x', 'y', 1)"); });
  auto n = store->transact([](Tx& tx) { return tx.query_one("SELECT COUNT(*) FROM leases")->i64(0); });
  EXPECT_EQ(n, 1);
}

#ifdef GPUNEX_WITH_POSTGRES
TEST(StoreOpen, PostgresFailureNamesServerButNotPassword) {
  try {
    gpunex::store::open_store("postgresql://someone:secret@127.0.0.1:1/nodb?connect_timeout=2");
    FAIL() << "expected StoreError";
  } catch (const StoreError& e) {
    std::string what = e.what();
    EXPECT_EQ(what.find("secret"), std::string::npos) << what;
    EXPECT_NE(what.find("127.0.0.1"), std::string::npos) << what;
  }
}
#endif

// #16: a GPU is never given to two rentals. 50 customers race for the 10 GPUs of one machine, each
// reading which GPUs are free, picking one by the scheduler's rule and taking it, and trying again
// when another took it first: exactly 10 rentals get a GPU, all different, on both stores.
// Telemetry written from memory (server/fleet/pending_telemetry.hpp) on each store: many rows a statement
// (128, 32, 8 and 1 all used); a stored sample newer than a pending one is kept, and a minute's pending sums
// are added to the stored ones (counts and sums added, maxima kept).
TEST_P(StoreTest, LatestSamplesAreWrittenManyRowsAStatementNewestKept) {
  gpunex::store::migrate(*store_);
  store_->transact([](Tx& tx) { seed_machines(tx, {{"m1", 0}, {"m2", 0}}); });
  const auto text = [](int t) { return R"({"temperature_c":)" + std::to_string(t) + "}"; };
  gpunex::server::PendingTelemetry latest;
  for (int i = 0; i < 170; ++i) {
    char uuid[16];
    std::snprintf(uuid, sizeof uuid, "g%03d", i);
    latest.put(i < 100 ? "m1" : "m2", uuid, 1000, text(i));
  }
  EXPECT_EQ(latest.flush(*store_), 170u);
  const auto stored = [&] {
    return store_->transact(
        [](Tx& tx) { return tx.query("SELECT machine_id, uuid, at, sample FROM telemetry_latest ORDER BY uuid"); },
        TxMode::read);
  };
  auto rows = stored();
  ASSERT_EQ(rows.size(), 170u);
  for (int i = 0; i < 170; ++i) {
    const auto& r = rows[static_cast<std::size_t>(i)];
    EXPECT_EQ(r.str(0), i < 100 ? "m1" : "m2");
    EXPECT_EQ(r.i64(2), 1000);
    EXPECT_EQ(r.str(3), text(i));
  }
  latest.put("m1", "g000", 999, text(-1));  // older than the stored one: not written
  latest.put("m1", "g001", 1001, text(-2));
  EXPECT_EQ(latest.flush(*store_), 2u);
  rows = stored();
  EXPECT_EQ(rows[0].str(3), text(0));
  EXPECT_EQ(rows[1].str(3), text(-2));
  EXPECT_EQ(rows[1].i64(2), 1001);

  gpunex::server::MinuteSample reading;
  reading.temp_n = 1;
  reading.util_n = 1;
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 170; ++i) {
      char uuid[16];
      std::snprintf(uuid, sizeof uuid, "g%03d", i);
      reading.temp = 30.0 + round * 10 + i % 5;
      reading.util = 100.0 - round * 50;
      reading.ecc_uncorrected = round == 0 ? 3 : 1;
      latest.put_sample(i < 100 ? "m1" : "m2", uuid, 2000, text(i), 60'000, reading);
    }
    EXPECT_EQ(latest.flush(*store_), 340u);  // 170 samples, 170 minutes
  }
  auto sums = store_->transact(
      [](Tx& tx) {
        return tx.query(
            "SELECT uuid, samples, temp_n, temp_sum, temp_max, util_sum, util_max, ecc_uncorrected_max FROM "
            "telemetry_minute WHERE minute = 60000 ORDER BY uuid");
      },
      TxMode::read);
  ASSERT_EQ(sums.size(), 170u);
  for (int i = 0; i < 170; ++i) {
    const auto& r = sums[static_cast<std::size_t>(i)];
    EXPECT_EQ(r.i64(1), 2) << r.str(0);
    EXPECT_EQ(r.i64(2), 2);
    EXPECT_DOUBLE_EQ(r.f64(3), 30.0 + 40.0 + 2 * (i % 5));
    EXPECT_DOUBLE_EQ(r.f64(4), 40.0 + i % 5);
    EXPECT_DOUBLE_EQ(r.f64(5), 150.0);
    EXPECT_DOUBLE_EQ(r.f64(6), 100.0);
    EXPECT_EQ(r.i64(7), 3);
  }
}

// A user `id` (e-mail "<id>@x").
void add_user(Tx& tx, const std::string& id) {
  tx.exec(
      "INSERT INTO users (id, email, full_name, password_hash, created_at, email_verified_at) VALUES (?, ?, 'U', "
      "'x', 0, 0)",
      {id, id + "@x"});
}

// An approved provider with one online machine, named by `n`: user "up<n>", application "a<n>", provider
// "p<n>", machine "m<n>" (its GPUs are the test's to add).
void add_provider_machine(Tx& tx, const std::string& n) {
  add_user(tx, "up" + n);
  tx.exec(
      "INSERT INTO applications (id, user_id, status, form, created_at, updated_at) VALUES (?, ?, 'approved', "
      "'{}', 0, 0)",
      {"a" + n, "up" + n});
  tx.exec("INSERT INTO providers (id, user_id, application_id, tier, created_at) VALUES (?, ?, ?, 'community', 0)",
          {"p" + n, "up" + n, "a" + n});
  tx.exec(
      "INSERT INTO machines (id, provider_id, fingerprint, hostname, host, simulated, agent_version, "
      "protocol_version, status, driver_version, cuda_version, created_at, registered_at, last_seq) "
      "VALUES (?, ?, 'fp', 'rig', '{}', 1, '0.1', 1, 'online', '550', '12.4', 0, 0, 0)",
      {"m" + n, "p" + n});
}

TEST_P(StoreTest, FiftyCustomersRacingForTenGpusGetExactlyTen) {
  gpunex::store::migrate(*store_);
  constexpr int kCustomers = 50, kGpus = 10;
  store_->transact([&](Tx& tx) {
    add_provider_machine(tx, "1");
    for (int i = 0; i < kCustomers; ++i) add_user(tx, "c" + std::to_string(i));
  });
  std::vector<gpunex::core::rental::FreeGpu> machine;
  for (int g = 0; g < kGpus; ++g) {
    machine.push_back({"m1", "GPU-" + std::to_string(g), "L4", "p1", "eu-west", 500'000, 90, 1});
  }
  std::atomic<int> rented{0}, none_free{0}, retries{0};
  std::latch start(kCustomers);
  std::vector<std::thread> customers;
  for (int i = 0; i < kCustomers; ++i) {
    customers.emplace_back([&, i] {
      start.arrive_and_wait();
      for (int attempt = 0; attempt < 100; ++attempt) {
        auto r = store_->transact([&](Tx& tx) -> gpunex::core::Status {
          const auto held = gpunex::server::rentals::allocated_uuids(tx, "m1");
          std::vector<gpunex::core::rental::FreeGpu> free;
          for (const auto& g : machine) {
            if (std::find(held.begin(), held.end(), g.uuid) == held.end()) free.push_back(g);
          }
          // A request's time between reading what is free and taking it: the window races happen in.
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
          gpunex::core::rental::Request want;
          want.model = "L4";
          auto pick = gpunex::core::rental::pick_gpus(free, want);
          if (!pick)
            return gpunex::core::Error::make(gpunex::core::ErrorCode::conflict, "no GPU free").with_code("no_capacity");
          gpunex::server::rentals::RentalRow row;
          row.id = "r" + std::to_string(i);
          row.customer_id = "c" + std::to_string(i);
          row.provider_id = pick->provider_id;
          row.machine_id = pick->machine_id;
          row.model = pick->model;
          row.gpu_count = 1;
          row.price = pick->price;
          row.spec = "{}";
          row.gpu_uuids = pick->uuids;
          return gpunex::server::rentals::insert_with_gpus(tx, row);
        });
        if (r.ok()) {
          ++rented;
          return;
        }
        if (r.error().code_text() == "no_capacity") {
          ++none_free;
          return;
        }
        ASSERT_EQ(r.error().code_text(), "gpus_taken") << r.error().message;
        ++retries;
      }
      ADD_FAILURE() << "customer " << i << " kept losing races";
    });
  }
  for (auto& t : customers) t.join();
  RecordProperty("lost_races", retries.load());
  EXPECT_EQ(rented.load(), kGpus);
  EXPECT_EQ(none_free.load(), kCustomers - kGpus);
  const auto [rentals, distinct, allocations] = store_->transact(
      [](Tx& tx) {
        return std::make_tuple(tx.query_one("SELECT COUNT(*) FROM rentals")->i64(0),
                               tx.query_one("SELECT COUNT(DISTINCT uuid) FROM rental_gpus")->i64(0),
                               tx.query_one("SELECT COUNT(*) FROM gpu_allocations")->i64(0));
      },
      TxMode::read);
  EXPECT_EQ(rentals, kGpus) << "a refused rental leaves nothing behind";
  EXPECT_EQ(distinct, kGpus) << "no GPU is in two rentals";
  EXPECT_EQ(allocations, kGpus);
  // Ending a rental gives its GPU back, and the next customer gets it.
  const auto first = store_->transact(
      [](Tx& tx) { return tx.query_one("SELECT rental_id FROM gpu_allocations ORDER BY uuid")->str(0); }, TxMode::read);
  store_->transact([&](Tx& tx) {
    gpunex::server::rentals::end(tx, first, gpunex::core::rental::EndReason::customer_stopped, std::nullopt, false, 1);
  });
  const auto left = store_->transact(
      [](Tx& tx) { return tx.query_one("SELECT COUNT(*) FROM gpu_allocations")->i64(0); }, TxMode::read);
  EXPECT_EQ(left, kGpus - 1);
  auto ended = store_->transact([&](Tx& tx) { return gpunex::server::rentals::find(tx, first); }, TxMode::read);
  ASSERT_TRUE(ended);
  EXPECT_EQ(ended->state, gpunex::core::rental::State::ended);
  EXPECT_EQ(ended->end_reason, gpunex::core::rental::EndReason::customer_stopped);
  EXPECT_EQ(ended->gpu_uuids.size(), 1u) << "the rental keeps the record of the GPU it had";
}

// The scheduler passes over an offer whose first hour the balance does not cover (with what the customer's
// other rentals hold) for the next one that matches; 402 naming the amount when it covers none.
TEST_P(StoreTest, ARentalPassesOverAnOfferTheBalanceDoesNotCoverForTheNext) {
  gpunex::store::migrate(*store_);
  namespace rentals = gpunex::server::rentals;
  store_->transact([&](Tx& tx) {
    add_user(tx, "uc");
    tx.exec(
        "INSERT INTO gpu_models (id, name, nvml_name_pattern, vram_gib, figures, builtin, created_at, updated_at) "
        "VALUES ('L4', 'NVIDIA L4', 'L4', 24, '{}', 1, 0, 0)");
    for (const auto& [p, price] : {std::pair{std::string("1"), 600'000}, std::pair{std::string("2"), 400'000}}) {
      add_provider_machine(tx, p);
      tx.exec(
          "INSERT INTO machine_gpus (machine_id, uuid, idx, name, model, memory_mib, facts, present, first_seen_at, "
          "updated_at) VALUES (?, ?, 0, 'NVIDIA L4', 'L4', 23034, '{}', 1, 0, 0)",
          {"m" + p, "GPU-" + p});
      tx.exec("INSERT INTO gpu_listing (machine_id, uuid, listed, perf_score, updated_at) VALUES (?, ?, 1, 90, 0)",
              {"m" + p, "GPU-" + p});
      tx.exec(
          "INSERT INTO provider_current_prices (provider_id, model, usdc_micro, region, seq, started_at) "
          "VALUES (?, 'L4', ?, 'eu-west', 1, 0)",
          {"p" + p, std::int64_t{price}});
    }
  });
  rentals::CreateRequest want;
  want.request.model = "L4";
  want.spec.image = "docker.io/library/busybox:1.36";
  const std::vector<rentals::Candidate> both = {{"m1", "L4"}, {"m2", "L4"}}, top = {{"m1", "L4"}};
  const auto create = [&](const std::vector<rentals::Candidate>& candidates, std::int64_t held) {
    return store_->transact([&](Tx& tx) {
      return rentals::create(tx, "uc", want, candidates, 500'000, held, gpunex::core::ledger::kDefaultCommission, 1);
    });
  };
  // 0.50 USDC covers the second-ranked offer's first hour (0.40), not the first's (0.60).
  const auto refused = create(top, 0);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code_text(), "insufficient_balance");
  const auto neither = create(both, 200'000);
  ASSERT_FALSE(neither.ok()) << "0.50 with 0.20 held covers neither";
  EXPECT_NE(neither.error().message.find("0.600000 USDC is needed"), std::string::npos)
      << neither.error().message << ": the best-ranked offer's amount is named";
  EXPECT_NE(neither.error().message.find("0.200000 USDC is held"), std::string::npos) << neither.error().message;
  const auto placed = create(both, 0);
  ASSERT_TRUE(placed.ok());
  EXPECT_EQ(placed->machine_id, "m2");
  EXPECT_EQ(placed->price, 400'000);
  EXPECT_EQ(store_->transact([](Tx& tx) { return tx.query_one("SELECT COUNT(*) FROM rentals")->i64(0); }, TxMode::read),
            1);
}

// A rental's settled totals move only from what a settlement read: a second settlement of the same time
// (the rentals worker and an agent's end at once) waits for the first's row lock on PostgreSQL (SQLite's
// writers run one at a time) and reads its totals; totals that moved under a settlement roll it back.
//! Rental r1 of customer uc on provider p1's machine m1 (one L4 GPU, GPU-0) at `price` a GPU-hour.
void one_rental(Tx& tx, gpunex::core::MicroUsdc price) {
  add_provider_machine(tx, "1");
  add_user(tx, "uc");
  gpunex::server::rentals::RentalRow row;
  row.id = "r1";
  row.customer_id = "uc";
  row.provider_id = "p1";
  row.machine_id = "m1";
  row.model = "L4";
  row.gpu_count = 1;
  row.price = price;
  row.spec = "{}";
  row.gpu_uuids = {"GPU-0"};
  ASSERT_TRUE(gpunex::server::rentals::insert_with_gpus(tx, row).ok());
}

TEST_P(StoreTest, ARentalsSettledTotalsMoveOnlyFromWhatTheSettlementRead) {
  gpunex::store::migrate(*store_);
  namespace rentals = gpunex::server::rentals;
  store_->transact([&](Tx& tx) { one_rental(tx, 500'000); });
  const gpunex::core::ledger::Settled zero{0, 0}, first{100, 80}, second{150, 120};
  // A settlement from totals that are no longer there is refused and changes nothing.
  store_->transact([&](Tx& tx) { rentals::record_settled(tx, "r1", zero, first, 1000); });
  EXPECT_THROW(store_->transact([&](Tx& tx) { rentals::record_settled(tx, "r1", zero, second, 2000); }),
               gpunex::store::StoreError);
  auto now = store_->transact([&](Tx& tx) { return rentals::find(tx, "r1"); }, TxMode::read);
  ASSERT_TRUE(now);
  EXPECT_EQ(now->settled.charged, 100);
  EXPECT_EQ(now->last_settled_at_ms, 1000);
  if (GetParam() != "postgres") return;
  // Two settlements at once: the second reads only once the first has committed, and moves from its totals.
  std::promise<void> locked, go_on;
  std::thread holder([&] {
    store_->transact([&](Tx& tx) {
      const auto r = rentals::find_for_update(tx, "r1");
      locked.set_value();
      go_on.get_future().wait();
      rentals::record_settled(tx, "r1", r->settled, second, 3000);
    });
  });
  locked.get_future().wait();
  std::atomic<bool> read{false};
  std::thread other([&] {
    store_->transact([&](Tx& tx) {
      const auto r = rentals::find_for_update(tx, "r1");
      read = true;
      EXPECT_EQ(r->settled.charged, 150) << "read the first settlement's totals";
      rentals::record_settled(tx, "r1", r->settled, {200, 160}, 4000);
    });
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(read) << "the second read the row while the first held it";
  go_on.set_value();
  holder.join();
  other.join();
  now = store_->transact([&](Tx& tx) { return rentals::find(tx, "r1"); }, TxMode::read);
  EXPECT_EQ(now->settled.charged, 200);
  EXPECT_EQ(now->settled.provider, 160);
}

// A stop asked with a clock behind the rental's last settlement (read before its transaction began, or
// another replica's) is recorded at the settlement: a stop on the provider's side meters nothing after it,
// so an earlier one would leave the rental settled past its bill. The first stop asked is kept.
TEST_P(StoreTest, AStopIsNeverBeforeTheRentalsLastSettlement) {
  gpunex::store::migrate(*store_);
  namespace rentals = gpunex::server::rentals;
  namespace rental = gpunex::core::rental;
  store_->transact([&](Tx& tx) {
    one_rental(tx, 3'600'000);  // 1 micro-USDC a millisecond
    rentals::mark_running(tx, "r1", 1'000'000, "[]");
    rentals::record_settled(tx, "r1", {0, 0}, {5'000, 4'000}, 1'005'000);
    rentals::request_stop(tx, "r1", rental::EndReason::provider_stopped, 1'003'000);
  });
  auto r = store_->transact([&](Tx& tx) { return rentals::find(tx, "r1"); }, TxMode::read);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->stop_requested_at_ms, 1'005'000);
  EXPECT_EQ(rentals::metered_until(*r, 2'000'000), 1'005'000);
  EXPECT_GE(rentals::cost_so_far(*r, 2'000'000), r->settled.charged);
  store_->transact([&](Tx& tx) { rentals::request_stop(tx, "r1", rental::EndReason::customer_stopped, 1'009'000); });
  r = store_->transact([&](Tx& tx) { return rentals::find(tx, "r1"); }, TxMode::read);
  EXPECT_EQ(r->stop_requested_at_ms, 1'005'000) << "the first stop asked is kept";
  EXPECT_EQ(r->stop_reason, rental::EndReason::provider_stopped);
}

// The change feed (cache invalidation across replicas): notify_change() is heard by a listener once
// its transaction commits, never after a rollback; a listener whose connection the server dropped says
// it may have missed changes, reconnects and hears again. SQLite has no feed: one process owns it.
TEST_P(StoreTest, ChangeFeedHearsCommitsOnlyAndReconnects) {
  gpunex::store::migrate(*store_);
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> topics;
  int missed = 0;
  auto feed = store_->listen({.on_change =
                                  [&](std::string_view topic) {
                                    std::lock_guard lock(mu);
                                    topics.emplace_back(topic);
                                    cv.notify_all();
                                  },
                              .on_missed =
                                  [&] {
                                    std::lock_guard lock(mu);
                                    ++missed;
                                    cv.notify_all();
                                  },
                              .on_state = {}},
                             std::chrono::milliseconds{100});
  if (GetParam() == "sqlite") {
    EXPECT_EQ(feed, nullptr);
    store_->transact([](Tx& tx) { gpunex::store::notify_change(tx, "api_key:x"); });  // a no-op there
    return;
  }
  ASSERT_NE(feed, nullptr);
  const auto wait = [&](auto done) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(10), [&] { return done(); });
  };
  ASSERT_TRUE(wait([&] { return missed >= 1 && feed->listening(); })) << "the feed never started listening";

  store_->transact([](Tx& tx) {
    gpunex::store::notify_change(tx, "api_key:rolled-back");
    return false;
  });
  store_->transact([](Tx& tx) { gpunex::store::notify_change(tx, "api_key:one"); });
  ASSERT_TRUE(wait([&] { return !topics.empty(); }));
  EXPECT_EQ(topics, std::vector<std::string>{"api_key:one"}) << "a rolled-back change is never announced";

  // The server drops the feed's connection (a restart, an operator): the feed says so and listens again.
  int missed_before = 0;
  {
    std::lock_guard lock(mu);
    missed_before = missed;
  }
  const auto dropped = store_->transact([](Tx& tx) {
    return tx.query_one("SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity "
                        "WHERE datname = current_database() AND query = 'LISTEN gpunex_invalidate'")
        ->i64(0);
  });
  ASSERT_EQ(dropped, 1);
  ASSERT_TRUE(wait([&] { return missed >= missed_before + 2 && feed->listening(); }))
      << "lost, then listening again: on_missed each time";
  store_->transact([](Tx& tx) { gpunex::store::notify_change(tx, "api_key:two"); });
  ASSERT_TRUE(wait([&] { return topics.size() >= 2; }));
  EXPECT_EQ(topics.back(), "api_key:two");
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreTest, ::testing::Values("sqlite", "postgres"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
