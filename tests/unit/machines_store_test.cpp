// Machines in a real (in-memory SQLite) store: heartbeats committed together by the group commit (a
// refused or failing one answered alone, the rest kept, a replayed seq stored once), and the sweep's
// bounded transactions (offline detection, retention). The API scenarios run the same code on
// PostgreSQL too.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>

#include "provider_store.hpp"
#include "server/fleet/agent_protocol.hpp"
#include "server/fleet/benchmarks.hpp"
#include "server/fleet/benchmarks_repo.hpp"
#include "server/fleet/machines.hpp"
#include "server/fleet/machines_repo.hpp"
#include "server/fleet/pending_telemetry.hpp"
#include "server/fleet/schedules.hpp"
#include "server/platform/group_commit.hpp"
#include "server/rentals/rentals.hpp"
#include "server/workers/machines_worker.hpp"
#include "util/clock.hpp"

using namespace gpunex;  // NOLINT: test file

namespace {

constexpr std::int64_t kNow = 1'796'205'600'000;  // 2026-12-02T10:00:00Z

//! Holds a group-commit writer inside one request's work until released, so that what the test submits
//! meanwhile queues behind it and runs as the next batch (no sleep guessing how soon the writer takes it).
class WriterGate {
 public:
  //! In the held request's work, on the writer thread.
  void hold() {
    held_.set_value();
    released_.wait();
  }
  void wait_until_held() { held_.get_future().wait(); }
  void release() { release_.set_value(); }

 private:
  std::promise<void> held_;
  std::promise<void> release_;
  std::shared_future<void> released_ = release_.get_future().share();
};

class MachinesStore : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = test_support::store_with_provider();
  }

  //! Registers a simulated machine with GPUs "<name>-0" and "<name>-1"; returns its id. An agent that kept
  //! its state sends the machine id it was given (`known_id`).
  std::string register_machine(const std::string& name, const std::string& known_id = "") {
    nlohmann::json gpus = nlohmann::json::array();
    for (int i = 0; i < 2; ++i) {
      gpus.push_back({{"index", i},
                      {"uuid", name + "-" + std::to_string(i)},
                      {"name", "NVIDIA L40S"},
                      {"memory_mib", 46068},
                      {"driver_version", "550.54.15"},
                      {"cuda_version", "12.4"},
                      {"pci_bus_id", ""}});
    }
    nlohmann::json body = {{"protocol_version", 1},
                           {"agent_version", "0.1.0"},
                           {"machine_fingerprint", "fingerprint-" + name},
                           {"simulated", true},
                           {"host",
                            {{"hostname", name},
                             {"cpu_model", "x"},
                             {"cpu_cores", 8},
                             {"ram_mib", 1},
                             {"disk_free_mib", 1},
                             {"os", "x"},
                             {"kernel", "x"}}},
                           {"gpus", gpus}};
    if (!known_id.empty()) body["machine_id"] = known_id;
    auto req = server::parse_register_request(body);
    EXPECT_TRUE(req) << req.error().message;
    auto out =
        store_->transact([&](store::Tx& tx) { return server::register_machine(tx, "p1", *req, settings_, kNow); });
    EXPECT_TRUE(out) << out.error().message;
    return (*out)["machine_id"].get<std::string>();
  }

  static server::HeartbeatRequest heartbeat(const std::string& machine, const std::string& name, std::int64_t seq,
                                            const std::string& uuid_suffix = "-0") {
    auto req = server::parse_heartbeat_request({{"protocol_version", 1},
                                                {"machine_id", machine},
                                                {"seq", seq},
                                                {"jobs", nlohmann::json::array()},
                                                {"telemetry",
                                                 {{{"index", 0},
                                                   {"uuid", name + uuid_suffix},
                                                   {"at", "2026-12-02T10:00:00Z"},
                                                   {"memory_used_mib", 10},
                                                   {"temperature_c", 50 + seq},
                                                   {"clock_events", nlohmann::json::array()}}}}});
    EXPECT_TRUE(req) << req.error().message;
    return *req;
  }

  std::int64_t samples(const std::string& uuid) {
    return store_->transact([&](store::Tx& tx) {
      auto r = tx.query_one("SELECT COALESCE(SUM(samples), 0) FROM telemetry_minute WHERE uuid = ?", {uuid});
      return r ? r->i64(0) : 0;
    });
  }

  //! The stored latest sample's temperature of a GPU, -1 when none is stored.
  std::int64_t stored_temperature(const std::string& uuid) {
    return store_->transact([&](store::Tx& tx) -> std::int64_t {
      auto r = tx.query_one("SELECT sample FROM telemetry_latest WHERE uuid = ?", {uuid});
      return r ? nlohmann::json::parse(r->str(0)).value("temperature_c", std::int64_t{-2}) : -1;
    });
  }
  //! The temperature GET /v1/provider/machines/{id} shows for the machine's first GPU, -1 for none.
  std::int64_t shown_temperature(const std::string& machine, const server::PendingTelemetry* latest) {
    auto detail =
        store_->transact([&](store::Tx& tx) { return server::machine_detail(tx, "p1", machine, kNow, latest); });
    EXPECT_TRUE(detail) << detail.error().message;
    const auto& shown = (*detail)["gpus"][0]["latest"];
    return shown.is_object() ? shown.value("temperature_c", std::int64_t{-2}) : -1;
  }

  std::unique_ptr<store::Store> store_;
  server::MachineSettings settings_;
};

// Heartbeats that arrive a little apart share a commit when the writer lingers for them; each is still
// answered after that commit, and every one is stored.
TEST_F(MachinesStore, GroupCommitLingersSoBeatsArrivingApartShareACommit) {
  const std::string m1 = register_machine("a");
  std::mutex mu;
  std::vector<std::size_t> batches;
  server::GroupCommit commit(
      *store_,
      [&](std::size_t n) {
        std::lock_guard lock(mu);
        batches.push_back(n);
      },
      1, 512, 16384, std::chrono::milliseconds(300));
  std::vector<std::promise<server::GroupCommit::Outcome>> answers(3);
  for (int i = 0; i < 3; ++i) {
    auto req = heartbeat(m1, "a", i + 1);
    commit.submit([this, req](store::Tx& tx) { return server::record_heartbeat(tx, "p1", req, settings_, kNow); },
                  [&answers, i](server::GroupCommit::Outcome o) { answers[static_cast<std::size_t>(i)].set_value(std::move(o)); },
                  m1);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (auto& a : answers) {
    auto o = a.get_future().get();
    EXPECT_TRUE(o.result && !o.failure);
  }
  std::lock_guard lock(mu);
  EXPECT_EQ(batches, (std::vector<std::size_t>{3}));
  EXPECT_EQ(samples("a-0"), 3);
}

TEST_F(MachinesStore, GroupCommitAnswersEachHeartbeatAfterItsBatchAndKeepsTheGoodOnes) {
  const std::string m1 = register_machine("a");
  const std::string m2 = register_machine("b");
  std::vector<std::size_t> batches;
  server::GroupCommit commit(*store_, [&](std::size_t n) { batches.push_back(n); });

  auto record = [&](server::HeartbeatRequest req) -> server::GroupCommit::Work {
    return [this, req = std::move(req)](store::Tx& tx) {
      return server::record_heartbeat(tx, "p1", req, settings_, kNow);
    };
  };
  std::vector<std::promise<server::GroupCommit::Outcome>> answers(6);
  auto done = [&](std::size_t i) {
    return [&answers, i](server::GroupCommit::Outcome o) { answers[i].set_value(std::move(o)); };
  };
  // The writer runs the first heartbeat, which holds it until the other five are queued: they run as one batch.
  WriterGate gate;
  commit.submit(
      [&gate, beat = record(heartbeat(m2, "b", 1))](store::Tx& tx) {
        gate.hold();
        return beat(tx);
      },
      done(0));
  gate.wait_until_held();
  commit.submit(record(heartbeat(m1, "a", 1)), done(1));
  commit.submit(record(heartbeat(m1, "a", 1)), done(2));        // the same seq again
  commit.submit(record(heartbeat(m1, "a", 2, "-9")), done(3));  // not a GPU of this machine
  commit.submit([](store::Tx&) -> core::Result<nlohmann::json> { throw std::runtime_error("disk on fire"); }, done(4));
  commit.submit(record(heartbeat(m1, "a", 3)), done(5));
  gate.release();
  std::vector<server::GroupCommit::Outcome> out;
  for (auto& a : answers) out.push_back(a.get_future().get());

  EXPECT_TRUE(out[0].result && !out[0].failure);
  ASSERT_TRUE(out[1].result);
  EXPECT_FALSE(out[1].result->contains("duplicate"));
  ASSERT_TRUE(out[2].result);
  EXPECT_EQ((*out[2].result)["duplicate"], true);
  ASSERT_FALSE(out[3].result);
  EXPECT_EQ(out[3].result.error().field, "telemetry[0].uuid");
  EXPECT_TRUE(out[4].failure);
  EXPECT_TRUE(out[5].result && !out[5].failure);
  // m2's beat alone, then the three good ones of the queue together, committed once.
  EXPECT_EQ(batches, (std::vector<std::size_t>{1, 3}));
  EXPECT_EQ(samples("a-0"), 2);  // seq 1 once, seq 3
  EXPECT_EQ(samples("a-9"), 0);
  EXPECT_EQ(samples("b-0"), 1);
  auto status = store_->transact(
      [&](store::Tx& tx) { return tx.query_one("SELECT status, last_seq FROM machines WHERE id = ?", {m1}); });
  ASSERT_TRUE(status);
  EXPECT_EQ(status->str(0), "online");
  EXPECT_EQ(status->i64(1), 3);
}

// The machine's last seq is the dedupe record: a retried or older seq stores nothing, rental events take
// seqs from the same count, and an agent whose state is gone (it registers again without the machine id,
// found by its fingerprint) counts from 1 again and is stored, not taken for a replay.
TEST_F(MachinesStore, AnAgentsSeqIsTakenOnceAndStartsAgainWithAFreshAgent) {
  const std::string m1 = register_machine("a");
  auto beat = [&](std::int64_t seq) {
    auto out = store_->transact(
        [&](store::Tx& tx) { return server::record_heartbeat(tx, "p1", heartbeat(m1, "a", seq), settings_, kNow); });
    EXPECT_TRUE(out) << out.error().message;
    return out && !out->value("duplicate", false);
  };
  auto rental_events = [&](std::int64_t seq) {
    protocol::RentalEventsRequest req;
    req.machine_id = m1;
    req.seq = seq;
    auto out = store_->transact([&](store::Tx& tx) { return server::rentals::apply_events(tx, "p1", req, kNow); });
    EXPECT_TRUE(out) << out.error().message;
    return out && !out->duplicate;
  };
  auto last_seq = [&] {
    return store_->transact(
        [&](store::Tx& tx) { return tx.query_one("SELECT last_seq FROM machines WHERE id = ?", {m1})->i64(0); });
  };

  EXPECT_TRUE(beat(1));
  EXPECT_FALSE(beat(1));  // the reply was lost and the agent sent it again
  EXPECT_TRUE(beat(2));
  EXPECT_FALSE(beat(1));  // older than the last one taken
  EXPECT_TRUE(rental_events(3));
  EXPECT_FALSE(rental_events(3));
  EXPECT_FALSE(beat(3));  // one count for both kinds of message
  EXPECT_TRUE(beat(5));   // a gap (the agent's full spool dropped telemetry) is no reason to refuse
  EXPECT_EQ(samples("a-0"), 3);
  EXPECT_EQ(last_seq(), 5);

  // The agent restarted with its state: it says which machine it is, and its seq goes on.
  EXPECT_EQ(register_machine("a", m1), m1);
  EXPECT_FALSE(beat(5));
  EXPECT_EQ(last_seq(), 5);
  // Its state was wiped: the same machine by its fingerprint, and seq 1 is a new heartbeat.
  EXPECT_EQ(register_machine("a"), m1);
  EXPECT_EQ(last_seq(), 0);
  EXPECT_TRUE(beat(1));
  EXPECT_FALSE(beat(1));
  EXPECT_EQ(samples("a-0"), 4);
}

// The check names the field of the first sample or event whose GPU the machine never registered; a GPU it
// registered and no longer has (absent since a registration without it) is still one of its own, and a GPU
// named twice (a sample and an event) counts once. The same with the known GPUs the server keeps, which
// answer from memory what they have read once.
TEST_F(MachinesStore, AHeartbeatsCheckNamesTheGpuThatIsNotTheMachines) {
  for (const bool with_known : {false, true}) {
    SCOPED_TRACE(with_known ? "with known GPUs" : "reading the store");
    SetUp();
    server::KnownGpus known;
    const std::string m1 = register_machine("a");
    const std::string m2 = register_machine("b");
    auto check = [&](const server::HeartbeatRequest& req) {
      return store_->transact([&](store::Tx& tx) -> core::Status {
        auto m = server::check_heartbeat_machine(tx, "p1", req, with_known ? &known : nullptr);
        if (!m) return std::move(m).error();
        return core::ok_status();
      });
    };
    auto event = [](const std::string& uuid) {
      protocol::GpuEvent e;
      e.type = protocol::kGpuLost;
      e.uuid = uuid;
      e.at_ms = kNow;
      return e;
    };

    auto hb = heartbeat(m1, "a", 1);
    EXPECT_TRUE(check(hb));
    hb.telemetry.push_back(hb.telemetry[0]);  // the same GPU twice
    hb.telemetry[1].index = 1;
    hb.telemetry[1].uuid = "a-1";
    hb.events = {event("a-1"), event("a-0")};
    EXPECT_TRUE(check(hb));

    hb.events.push_back(event("b-0"));  // another machine's GPU
    auto refused = check(hb);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().field, "events[2].uuid");
    hb.telemetry[1].uuid = "nobody";
    refused = check(hb);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().field, "telemetry[1].uuid");  // samples first, in order

    auto empty = heartbeat(m2, "b", 1);
    empty.telemetry.clear();
    EXPECT_TRUE(check(empty));
    empty.machine_id = "mch_nonexistent";
    refused = check(empty);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, core::ErrorCode::not_found);

    // GPU a-1 taken out: marked absent, and a heartbeat that still names it passes.
    store_->transact([&](store::Tx& tx) { server::MachinesRepo(tx).mark_gpus_absent(m1, kNow); });
    EXPECT_TRUE(check(heartbeat(m1, "a", 2, "-1")));
    EXPECT_FALSE(check(heartbeat(m1, "a", 2, "-2")));
    EXPECT_FALSE(check(heartbeat(m2, "b", 2, "-3")));
  }
}

// The known GPUs are read once per machine: a check of GPUs known reads only the machine's row, a GPU
// registered later is read when first named, and the machine's owner is read on every check.
TEST_F(MachinesStore, KnownGpusAreReadOnceAndAGpuAddedLaterIsFound) {
  server::KnownGpus known;
  const std::string m1 = register_machine("a");
  int selects = 0;
  store_->set_observer([&](std::string_view op, double) { selects += op == "select" ? 1 : 0; });
  // The check's result, and how many reads it made.
  auto check = [&](const std::string& provider, const server::HeartbeatRequest& req) {
    selects = 0;
    auto ok = store_->transact([&](store::Tx& tx) -> core::Status {
      auto m = server::check_heartbeat_machine(tx, provider, req, &known);
      if (!m) return std::move(m).error();
      return core::ok_status();
    });
    return std::pair{ok.ok(), selects};
  };
  EXPECT_EQ(check("p1", heartbeat(m1, "a", 1)), std::pair(true, 2));  // the machine, then its GPUs
  EXPECT_TRUE(known.knows(m1, {"a-0", "a-1"}));                       // every GPU of the machine, at once
  EXPECT_FALSE(known.knows(m1, {"a-0", "a-2"}));
  EXPECT_EQ(check("p1", heartbeat(m1, "a", 2, "-1")), std::pair(true, 1));  // the machine only

  // A registration with a third GPU: the heartbeat naming it reads the machine's GPUs again, once.
  store_->transact([&](store::Tx& tx) {
    server::MachinesRepo(tx).upsert_gpu(m1, server::MachineGpuWrite{"a-2", 2, "NVIDIA L40S", std::nullopt, 46068, "{}"},
                                        kNow);
  });
  EXPECT_EQ(check("p1", heartbeat(m1, "a", 3, "-2")), std::pair(true, 2));
  EXPECT_EQ(check("p1", heartbeat(m1, "a", 4, "-2")), std::pair(true, 1));
  EXPECT_EQ(check("p1", heartbeat(m1, "a", 5, "-3")), std::pair(false, 2));  // never one of its GPUs

  // Known GPUs do not make a machine anyone's: its owner is read each time.
  EXPECT_EQ(check("p2", heartbeat(m1, "a", 6)), std::pair(false, 1));
}

// The heartbeat's check reads the caller's API key with the machine, in one statement: it passes only for a
// live key of the machine's provider. A key of another provider, a revoked key and an unknown machine all
// find nothing (404 here; the server then asks for the key alone, to answer a dead key with 401).
TEST_F(MachinesStore, TheHeartbeatsCheckReadsTheKeyWithTheMachine) {
  const std::string m1 = register_machine("a");
  store_->transact([](store::Tx& tx) {
    tx.exec("INSERT INTO users (id, email, full_name, password_hash, created_at) VALUES ('u2', 'q@x', 'Q', 'x', 0)");
    tx.exec(
        "INSERT INTO applications (id, user_id, status, form, created_at, updated_at) "
        "VALUES ('a2', 'u2', 'approved', '{}', 0, 0)");
    tx.exec(
        "INSERT INTO providers (id, user_id, application_id, tier, created_at) "
        "VALUES ('p2', 'u2', 'a2', 'community', 0)");
    for (const auto& [key, provider] : {std::pair{"key1", "p1"}, {"key2", "p2"}}) {
      tx.exec("INSERT INTO api_keys (id, provider_id, key_hash, prefix, created_at) VALUES (?, ?, ?, 'gpx_', 0)",
              {key, provider, std::string("hash-") + key});
    }
  });
  server::KnownGpus known;
  int selects = 0;
  store_->set_observer([&](std::string_view op, double) { selects += op == "select" ? 1 : 0; });
  auto check = [&](const std::string& key, const server::HeartbeatRequest& req) {
    selects = 0;
    return store_->transact([&](store::Tx& tx) -> core::Status {
      auto m = server::check_heartbeat_of_key(tx, key, req, &known);
      if (!m) return std::move(m).error();
      EXPECT_EQ(m->id, req.machine_id);
      EXPECT_EQ(m->status, core::MachineStatus::offline);  // registered, no heartbeat stored yet
      return core::ok_status();
    });
  };
  EXPECT_TRUE(check("key1", heartbeat(m1, "a", 1)));
  EXPECT_EQ(selects, 2);  // the machine with the key, then its GPUs
  EXPECT_TRUE(check("key1", heartbeat(m1, "a", 2)));
  EXPECT_EQ(selects, 1);  // the GPUs known: the one read

  auto refused = check("key2", heartbeat(m1, "a", 3));  // a live key, of another provider
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, core::ErrorCode::not_found);
  refused = check("key1", heartbeat("mch_nonexistent", "a", 3));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, core::ErrorCode::not_found);
  store_->transact([](store::Tx& tx) { tx.exec("UPDATE api_keys SET revoked_at = 1 WHERE id = 'key1'"); });
  refused = check("key1", heartbeat(m1, "a", 3));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, core::ErrorCode::not_found);
}

// Past its size the memory forgets every machine and starts over; what it forgot is read again.
TEST(KnownGpus, ForgetsEverythingPastItsSize) {
  server::KnownGpus known(2);
  known.remember("m1", {"u1"});
  known.remember("m2", {"u2", "u3"});
  EXPECT_TRUE(known.knows("m2", {"u3", "u2"}));
  EXPECT_TRUE(known.knows("m2", {}));
  EXPECT_FALSE(known.knows("m3", {}));  // a machine never read: read it
  known.remember("m1", {"u1", "u4"});   // one it holds: no room needed
  EXPECT_TRUE(known.knows("m2", {"u2"}));
  known.remember("m3", {"u5"});
  EXPECT_FALSE(known.knows("m1", {"u1"}));
  EXPECT_FALSE(known.knows("m2", {"u2"}));
  EXPECT_TRUE(known.knows("m3", {"u5"}));
}

// A heartbeat looks at the benchmark tables beyond one read only when there is work: a requested run to
// deliver, a delivered run past the timeout or a challenge past its deadline to expire, a spot check to
// schedule or issue. A machine running its benchmark (run delivered, challenge open and in time) has none.
// The heartbeat's check gives the same answer when it reads it with the machine (PostgreSQL's path).
TEST_F(MachinesStore, AHeartbeatDoesBenchmarkWorkOnlyWhenThereIsSome) {
  const std::string m1 = register_machine("a");  // verified before it is offered: a run is requested
  store_->transact([](store::Tx& tx) {
    tx.exec("INSERT INTO api_keys (id, provider_id, key_hash, prefix, created_at) VALUES ('key1', 'p1', 'h', 'g', 0)");
  });
  server::BenchmarkSettings s;
  s.run_timeout_ms = 3'600'000;
  s.challenges.require_answers = true;
  s.challenges.spot_check_mean_ms = 0;  // off, but for the calls that say otherwise
  auto work = [&](std::int64_t now, bool spot_checks = false) {
    s.challenges.spot_check_mean_ms = spot_checks ? 86'400'000 : 0;
    const auto question = server::heartbeat_work_question(m1, s, now);
    s.challenges.spot_check_mean_ms = 0;
    return store_->transact([&](store::Tx& tx) {
      const bool alone = server::BenchmarksRepo(tx).has_heartbeat_work(question);
      auto checked = server::check_heartbeat_of_key(tx, "key1", heartbeat(m1, "a", 1), nullptr, &question);
      EXPECT_TRUE(checked && checked->benchmark_work == alone) << "the check's read disagrees at " << now;
      return alone;
    });
  };
  auto commands = [&](std::int64_t now) {
    return store_->transact([&](store::Tx& tx) { return server::benchmark_commands(tx, m1, s, now); });
  };
  auto run_status = [&] {
    return store_->transact([&](store::Tx& tx) {
      return tx.query_one("SELECT status FROM benchmark_runs WHERE machine_id = ?", {m1})->str(0);
    });
  };
  EXPECT_TRUE(work(kNow));
  const auto delivered = commands(kNow);
  ASSERT_EQ(delivered.size(), 1u);
  EXPECT_EQ(delivered[0]["type"], "run_benchmark");
  EXPECT_EQ(run_status(), "delivered");

  // The agent runs it: its heartbeats find nothing to do, and the run stays delivered.
  EXPECT_FALSE(work(kNow + 60'000));
  EXPECT_TRUE(commands(kNow + 60'000).empty());
  EXPECT_EQ(run_status(), "delivered");
  // With spot checks on, the first heartbeat schedules one, and the next finds nothing until it is due.
  EXPECT_TRUE(work(kNow + 60'000, true));
  store_->transact([&](store::Tx& tx) {
    tx.exec("UPDATE machines SET spot_check_at = ? WHERE id = ?", {kNow + 600'000, m1});
  });
  EXPECT_FALSE(work(kNow + 60'000, true));
  EXPECT_TRUE(work(kNow + 600'000, true));

  // A challenge of the run is open: work once it is past its deadline, not before.
  store_->transact([&](store::Tx& tx) {
    tx.exec(
        "INSERT INTO benchmark_challenges (id, run_id, machine_id, gpu_uuid, kind, status, seed_a, seed_b, "
        "seed_verifier, seed_slices, size, slice_words, allowed_ms, issued_at, deadline_at) SELECT 'ch1', id, "
        "machine_id, 'a-0', 'gemm', 'issued', '', '', '', '', 1, 1, 1000, ?, ? FROM benchmark_runs WHERE machine_id = "
        "?",
        {kNow + 60'000, kNow + 120'000, m1});
  });
  for (const auto status : server::kOpenChallengeStatuses) {  // each open status (an EXISTS of its own)
    store_->transact(
        [&](store::Tx& tx) { tx.exec("UPDATE benchmark_challenges SET status = ?", {std::string(status)}); });
    EXPECT_FALSE(work(kNow + 119'000)) << status;
    EXPECT_TRUE(work(kNow + 121'000)) << status;
    EXPECT_FALSE(work(kNow + 119'000, true)) << status;  // the spot check is not due until kNow + 600'000
    EXPECT_TRUE(work(kNow + 121'000, true)) << status;
  }
  store_->transact([&](store::Tx& tx) { tx.exec("UPDATE benchmark_challenges SET status = 'answered'"); });
  EXPECT_FALSE(work(kNow + 121'000));

  // The agent never reports: past the timeout the heartbeat expires the run.
  EXPECT_FALSE(work(kNow + s.run_timeout_ms - 1));
  EXPECT_TRUE(work(kNow + s.run_timeout_ms + 1));
  EXPECT_TRUE(commands(kNow + s.run_timeout_ms + 1).empty());
  EXPECT_EQ(run_status(), "expired");
  EXPECT_FALSE(work(kNow + s.run_timeout_ms + 2));
}

// Security (issue #19): heartbeats naming a machine that is not the caller's are refused by their check,
// before the batch writes: the good ones in the batch run once, committed in one transaction.
TEST_F(MachinesStore, GroupCommitRefusedChecksDoNotRollTheBatchBack) {
  const std::string m1 = register_machine("a");
  const std::string m2 = register_machine("b");
  std::vector<std::size_t> batches;
  server::GroupCommit commit(*store_, [&](std::size_t n) { batches.push_back(n); });
  std::atomic<int> work_runs{0};
  // The first heartbeat's work holds the writer until the other five are queued: they run as one batch.
  WriterGate gate;
  auto submit = [&](server::HeartbeatRequest req, std::promise<server::GroupCommit::Outcome>& answer,
                    bool hold = false) {
    commit.submit(
        [this, &work_runs, &gate, hold, req](store::Tx& tx) {
          ++work_runs;
          if (hold) gate.hold();
          return server::record_heartbeat(tx, "p1", req, settings_, kNow);
        },
        [&answer](server::GroupCommit::Outcome o) { answer.set_value(std::move(o)); }, req.machine_id,
        [req](store::Tx& tx) { return server::check_heartbeat(tx, "p1", req); });
  };
  std::vector<std::promise<server::GroupCommit::Outcome>> answers(6);
  submit(heartbeat(m2, "b", 1), answers[0], true);
  gate.wait_until_held();
  submit(heartbeat(m1, "a", 1), answers[1]);
  submit(heartbeat("mch_bogus1", "a", 1), answers[2]);
  submit(heartbeat("mch_bogus2", "a", 1), answers[3]);
  submit(heartbeat(m1, "a", 2, "-9"), answers[4]);  // not a GPU of this machine
  submit(heartbeat(m1, "a", 3), answers[5]);
  gate.release();
  std::vector<server::GroupCommit::Outcome> out;
  for (auto& a : answers) out.push_back(a.get_future().get());
  EXPECT_TRUE(out[1].result && out[5].result);
  ASSERT_FALSE(out[2].result);
  EXPECT_EQ(out[2].result.error().code, core::ErrorCode::not_found);
  ASSERT_FALSE(out[4].result);
  EXPECT_EQ(out[4].result.error().field, "telemetry[0].uuid");
  EXPECT_EQ(work_runs.load(), 3);  // m2's, then m1's two good ones, each once: no batch ran again
  EXPECT_EQ(batches, (std::vector<std::size_t>{1, 2}));
  EXPECT_EQ(samples("a-0"), 2);
}

TEST_F(MachinesStore, GroupCommitAnswersWhatIsQueuedWhenStopped) {
  const std::string m1 = register_machine("a");
  server::GroupCommit commit(*store_);
  std::promise<server::GroupCommit::Outcome> first;
  std::promise<server::GroupCommit::Outcome> after_stop;
  commit.submit(
      [&](store::Tx& tx) { return server::record_heartbeat(tx, "p1", heartbeat(m1, "a", 1), settings_, kNow); },
      [&](server::GroupCommit::Outcome o) { first.set_value(std::move(o)); });
  commit.stop();
  EXPECT_TRUE(first.get_future().get().result);
  commit.submit([](store::Tx&) -> core::Result<nlohmann::json> { return nlohmann::json::object(); },
                [&](server::GroupCommit::Outcome o) { after_stop.set_value(std::move(o)); });
  auto late = after_stop.get_future().get();
  ASSERT_FALSE(late.result);
  EXPECT_EQ(late.result.error().code, core::ErrorCode::unavailable);
}

TEST_F(MachinesStore, SweepMarksOfflineAndPrunesInBoundedTransactions) {
  std::vector<std::string> ids;
  for (const char* name : {"a", "b", "c"}) ids.push_back(register_machine(name));
  store_->transact([&](store::Tx& tx) {
    tx.exec("UPDATE machines SET status = 'online', last_seen_at = ?", {kNow - 3'600'000});
    const std::int64_t old = kNow - std::int64_t{settings_.telemetry_retention_days + 1} * 86'400'000;
    for (int i = 0; i < 7; ++i) {
      tx.exec("INSERT INTO presence_minute (machine_id, minute, beats) VALUES (?, ?, 1)", {ids[0], old + i * 60'000});
      tx.exec(
          "INSERT INTO telemetry_minute (machine_id, uuid, minute, samples, errors, temp_n, temp_sum, temp_max, "
          "power_n, power_sum, power_max, util_n, util_sum, util_max, mem_used_max, throttled, ecc_uncorrected_max) "
          "VALUES (?, 'b-0', ?, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)",
          {ids[1], old + i * 60'000});
    }
    tx.exec("INSERT INTO presence_minute (machine_id, minute, beats) VALUES (?, ?, 1)", {ids[0], kNow});
  });
  EXPECT_EQ(store_->transact([&](store::Tx& tx) { return server::mark_offline_machines(tx, settings_, kNow, 2); }), 2u);
  EXPECT_EQ(store_->transact([&](store::Tx& tx) { return server::prune_telemetry(tx, settings_, kNow, 3); }), 6);
  auto r = server::workers::sweep_machines(*store_, settings_, kNow);
  EXPECT_EQ(r.went_offline, 1u);
  EXPECT_EQ(r.pruned_rows, 8);
  auto left = store_->transact([&](store::Tx& tx) {
    return tx.query_one(
        "SELECT (SELECT COUNT(*) FROM machines WHERE status = 'offline'), "
        "(SELECT COUNT(*) FROM presence_minute), (SELECT COUNT(*) FROM telemetry_minute), "
        "(SELECT COUNT(*) FROM machine_events WHERE kind = 'offline')");
  });
  ASSERT_TRUE(left);
  EXPECT_EQ(left->i64(0), 3);
  EXPECT_EQ(left->i64(1), 1);  // the current minute stays
  EXPECT_EQ(left->i64(2), 0);
  EXPECT_EQ(left->i64(3), 3);
}

// Latest samples and minute sums wait in memory: the replica that holds them shows them at once, the store
// has them after a flush, and an older sample (late, or pending while a newer one was stored) never
// replaces a newer one. Pending sums are added to the stored ones, on the detail's chart and the list's.
TEST_F(MachinesStore, LatestSamplesAreShownAtOnceAndStoredWhenFlushed) {
  const std::string m1 = register_machine("a");
  server::PendingTelemetry latest;
  // As the server stores a heartbeat: checked, then recorded from a shared request that the caller lets go
  // of at once, so the pending sample lives on by the pointer `latest` keeps (ASan would see a dangling one).
  auto beat = [&](std::int64_t seq, std::int64_t at_ms, bool with_event = false) {
    auto req = std::make_shared<server::HeartbeatRequest>(heartbeat(m1, "a", seq));
    req->telemetry[0].at_ms = at_ms;
    if (with_event) req->events.push_back({std::string(protocol::kGpuRecovered), "a-0", at_ms, "back"});
    auto out = store_->transact([&](store::Tx& tx) -> core::Result<nlohmann::json> {
      auto m = server::check_heartbeat_machine(tx, "p1", *req);
      if (!m) return std::move(m).error();
      return server::record_checked_heartbeat(tx, *m, std::exchange(req, nullptr), settings_, kNow, &latest);
    });
    ASSERT_TRUE(out) << out.error().message;
    ASSERT_EQ(req, nullptr);
  };
  // The first GPU's charts as shown: the detail's minutes ("at samples max-temperature") and the list's
  // 15-minute spans ("at samples").
  auto detail_chart = [&](const server::PendingTelemetry* pending) {
    auto d = store_->transact([&](store::Tx& tx) { return server::machine_detail(tx, "p1", m1, kNow, pending); });
    std::vector<std::string> out;
    for (const auto& p : (*d)["gpus"][0]["series_24h"]) {
      out.push_back(p["at"].get<std::string>() + " " + std::to_string(p["samples"].get<int>()) + " " +
                    std::to_string(p["temperature_c_max"].get<int>()));
    }
    return out;
  };
  auto list_chart = [&](const server::PendingTelemetry* pending) {
    auto l = store_->transact(
        [&](store::Tx& tx) { return server::list_machines(tx, "p1", server::PageParams{}, kNow, pending); });
    std::vector<std::string> out;
    for (const auto& p : (*l)["items"][0]["gpus"][0]["overview_24h"]["points"]) {
      out.push_back(p["at"].get<std::string>() + " " + std::to_string(p["samples"].get<int>()));
    }
    return out;
  };
  using Chart = std::vector<std::string>;
  beat(1, kNow - 2'000);  // temperature 51, in the minute 09:59
  EXPECT_EQ(stored_temperature("a-0"), -1);
  EXPECT_EQ(shown_temperature(m1, &latest), 51);
  EXPECT_EQ(shown_temperature(m1, nullptr), -1);  // another replica: not yet
  EXPECT_EQ(samples("a-0"), 0);                   // nor the minute's sums
  EXPECT_EQ(detail_chart(&latest), Chart{"2026-12-02T09:59:00Z 1 51"});
  EXPECT_EQ(detail_chart(nullptr), Chart{});
  // What waits is a pointer into the request (a request with more than samples is not kept: below).
  const auto held = [&] { return latest.pending_of(m1).at("a-0").latest->readings.index(); };
  EXPECT_EQ(held(), 1u);
  beat(2, kNow - 1'000);            // 52
  beat(3, kNow - 3'000);            // 53, taken before the other two: came late
  EXPECT_EQ(latest.pending(), 2u);  // a latest sample, a minute
  EXPECT_EQ(shown_temperature(m1, &latest), 52);
  EXPECT_EQ(detail_chart(&latest), Chart{"2026-12-02T09:59:00Z 3 53"});
  EXPECT_EQ(list_chart(&latest), Chart{"2026-12-02T09:45:00Z 3"});
  EXPECT_EQ(latest.flush(*store_), 2u);
  EXPECT_EQ(latest.pending(), 0u);
  EXPECT_EQ(stored_temperature("a-0"), 52);
  {  // the whole text stored is the sample's own, formatted at the flush
    auto sent = heartbeat(m1, "a", 2).telemetry[0];
    sent.at_ms = kNow - 1'000;
    EXPECT_EQ(store_->transact([](store::Tx& tx) {
      return tx.query_one("SELECT sample FROM telemetry_latest WHERE uuid = 'a-0'")->str(0);
    }),
              sent.readings_text());
  }
  EXPECT_EQ(shown_temperature(m1, nullptr), 52);
  EXPECT_EQ(samples("a-0"), 3);
  EXPECT_EQ(detail_chart(&latest), Chart{"2026-12-02T09:59:00Z 3 53"});  // shown once, not stored and pending
  EXPECT_EQ(detail_chart(nullptr), Chart{"2026-12-02T09:59:00Z 3 53"});

  // Another replica stored a newer sample meanwhile: this replica's older one is neither shown nor stored.
  // Its sums are added to the stored minute's, and a sample of the next minute opens a point of its own.
  beat(4, kNow - 500, true);  // 54, with an event: its sample waits as text, the request is let go
  EXPECT_EQ(held(), 0u);
  auto next_minute = heartbeat(m1, "a", 5);
  next_minute.telemetry[0].at_ms = kNow + 1'000;
  next_minute.telemetry[0].temperature_c = 40;
  ASSERT_TRUE(store_->transact([&](store::Tx& tx) {
    return server::record_heartbeat(tx, "p1", next_minute, settings_, kNow + 1'000, &latest);
  }));
  store_->transact([&](store::Tx& tx) {
    server::MachinesRepo(tx).store_latest_sample(m1, "a-0", kNow + 2'000, R"({"temperature_c":70})");
  });
  EXPECT_EQ(shown_temperature(m1, &latest), 70);
  const Chart both{"2026-12-02T09:59:00Z 4 54", "2026-12-02T10:00:00Z 1 40"};
  EXPECT_EQ(detail_chart(&latest), both);
  EXPECT_EQ(list_chart(&latest), (Chart{"2026-12-02T09:45:00Z 4", "2026-12-02T10:00:00Z 1"}));
  latest.flush(*store_);
  EXPECT_EQ(stored_temperature("a-0"), 70);
  EXPECT_EQ(detail_chart(nullptr), both);
  EXPECT_EQ(samples("a-0"), 5);

  // A replayed seq stores nothing, the latest sample and the sums included.
  beat(5, kNow + 1'000);
  EXPECT_EQ(latest.pending(), 0u);
}

// A flush writes many rows a statement (128, 32, 8, 1) in bounded transactions; a failed write keeps
// its samples for the next flush, where a newer sample put meanwhile wins; stop() writes what is left.
TEST_F(MachinesStore, LatestSamplesFlushInBatchesAndKeepWhatAFailedWriteHeld) {
  const std::string m1 = register_machine("a");
  const std::string m2 = register_machine("b");
  server::PendingTelemetry latest;
  auto text = [](int t) { return R"({"temperature_c":)" + std::to_string(t) + "}"; };
  for (int i = 0; i < 340; ++i) {
    char uuid[16];
    std::snprintf(uuid, sizeof uuid, "u%03d", i);
    latest.put(i % 2 ? m1 : m2, uuid, kNow, text(i));
  }
  EXPECT_EQ(latest.flush(*store_, 100), 340u);
  auto rows = store_->transact([&](store::Tx& tx) {
    return tx.query("SELECT machine_id, uuid, at, sample FROM telemetry_latest ORDER BY uuid");
  });
  ASSERT_EQ(rows.size(), 340u);
  for (int i = 0; i < 340; ++i) {
    const auto& r = rows[static_cast<std::size_t>(i)];
    EXPECT_EQ(r.str(0), i % 2 ? m1 : m2);
    EXPECT_EQ(r.i64(2), kNow);
    EXPECT_EQ(r.str(3), text(i)) << r.str(1);
  }

  // Minute sums: 140 GPU-minutes over the two machines, two samples each, then a third for one of them.
  server::MinuteSample reading;
  reading.temp_n = 1;
  for (int i = 0; i < 140; ++i) {
    const std::string uuid = "m" + std::to_string(i % 70);
    const std::int64_t minute = kNow - (i < 70 ? 60'000 : 0);
    for (const double t : {40.0 + i % 7, 50.0}) {
      reading.temp = t;
      latest.put_sample(i % 2 ? m1 : m2, uuid, kNow, text(i), minute, reading);
    }
  }
  EXPECT_EQ(latest.pending(), 140u + 70u);  // 70 latest samples, 140 minutes
  EXPECT_EQ(latest.flush(*store_, 64), 210u);
  auto minutes = store_->transact([&](store::Tx& tx) {
    return tx.query_one(
        "SELECT COUNT(*), SUM(samples), SUM(temp_n), SUM(temp_sum), MAX(temp_max) FROM telemetry_minute");
  });
  EXPECT_EQ(minutes->i64(0), 140);
  EXPECT_EQ(minutes->i64(1), 280);
  EXPECT_EQ(minutes->i64(2), 280);
  EXPECT_DOUBLE_EQ(minutes->f64(3), 140 * 50.0 + 2 * (10 * (40 + 41 + 42 + 43 + 44 + 45 + 46)));
  EXPECT_DOUBLE_EQ(minutes->f64(4), 50.0);

  latest.put(m1, "a-0", kNow + 1, text(1));
  latest.put(m1, "a-1", kNow + 1, text(2));
  reading.temp = 80;
  latest.put_sample(m1, "m1", kNow + 1, text(5), kNow, reading);
  store_->transact([](store::Tx& tx) { tx.exec("ALTER TABLE telemetry_latest RENAME TO telemetry_latest_away"); });
  EXPECT_ANY_THROW(latest.flush(*store_));
  EXPECT_EQ(latest.pending(), 4u);           // three latest samples and a minute
  latest.put(m1, "a-0", kNow + 2, text(3));  // newer than the one whose write failed
  latest.put(m1, "a-1", kNow, text(4));      // older: the failed one stays
  reading.temp = 90;
  latest.put_sample(m1, "m1", kNow + 1, text(6), kNow, reading);  // added to the minute whose write failed
  store_->transact([](store::Tx& tx) { tx.exec("ALTER TABLE telemetry_latest_away RENAME TO telemetry_latest"); });
  const util::SettableClock clock(kNow);
  latest.start(*store_, std::chrono::hours(1), clock);
  latest.stop();  // writes what is pending, the minute in progress too
  EXPECT_EQ(latest.pending(), 0u);
  EXPECT_EQ(stored_temperature("a-0"), 3);
  EXPECT_EQ(stored_temperature("a-1"), 2);
  auto m1_now = store_->transact([&](store::Tx& tx) {
    return tx.query_one("SELECT samples, temp_sum, temp_max FROM telemetry_minute WHERE uuid = 'm1' AND minute = ?",
                        {kNow});
  });
  ASSERT_TRUE(m1_now);
  EXPECT_EQ(m1_now->i64(0), 4);  // two flushed before, the one whose write failed, the one after
  EXPECT_DOUBLE_EQ(m1_now->f64(1), 41.0 + 50.0 + 80.0 + 90.0);
  EXPECT_DOUBLE_EQ(m1_now->f64(2), 90.0);
}

// The flusher writes a minute once it has ended, by the server's clock: the minute in progress stays
// pending (and shown) while heartbeats add to it, and is written whole, in one row, after it ends.
TEST_F(MachinesStore, TheFlusherWritesAMinuteOnceItHasEnded) {
  const std::string m1 = register_machine("a");
  util::SettableClock clock(kNow + 30'000);  // 10:00:30; outlives the flusher
  server::PendingTelemetry latest;
  server::MinuteSample reading;
  reading.temp_n = 1;
  auto sample = [&](std::int64_t minute, double temp) {
    reading.temp = temp;
    latest.put_sample(m1, "a-0", minute + 1'000, R"({"temperature_c":1})", minute, reading);
  };
  auto stored = [&] {
    return store_->transact([&](store::Tx& tx) {
      std::vector<std::string> out;
      for (const auto& r : tx.query("SELECT minute, samples, temp_sum FROM telemetry_minute ORDER BY minute")) {
        out.push_back(std::to_string((r.i64(0) - kNow) / 60'000) + ": " + std::to_string(r.i64(1)) + " " +
                      std::to_string(static_cast<int>(r.f64(2))));
      }
      return out;
    });
  };
  using Rows = std::vector<std::string>;
  sample(kNow - 60'000, 40);  // 09:59, ended
  sample(kNow, 50);           // 10:00, in progress
  EXPECT_EQ(latest.flush(*store_, server::PendingTelemetry::kRowsPerTx, server::minute_of(clock.now_ms())), 2u);
  EXPECT_EQ(stored(), Rows{"-1: 1 40"});
  EXPECT_EQ(latest.pending(), 1u);  // 10:00, still shown by this replica
  ASSERT_EQ(latest.pending_of(m1).at("a-0").minutes.size(), 1u);
  EXPECT_EQ(latest.pending_of(m1).at("a-0").minutes[0].temp_sum, 50.0);

  latest.start(*store_, std::chrono::milliseconds(5), clock);
  sample(kNow, 60);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // about ten flushes: 10:00 has not ended
  EXPECT_EQ(stored(), Rows{"-1: 1 40"});
  clock.set(kNow + 60'000);  // 10:01:00: 10:00 has ended
  // Up to 10 s on a loaded machine (the sanitizer build).
  for (int i = 0; i < 2000 && stored().size() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(stored(), (Rows{"-1: 1 40", "0: 2 110"}));
  sample(kNow + 60'000, 70);  // 10:01, in progress at the stop: written all the same
  latest.stop();
  EXPECT_EQ(stored(), (Rows{"-1: 1 40", "0: 2 110", "1: 1 70"}));
}

}  // namespace

// A provider is told when their machine goes offline within its availability (mail and notification, with
// the machine's page), once an hour at most, and not when it is outside its windows (turned off as said).
TEST_F(MachinesStore, TheProviderIsToldOfAMachineGoingOfflineOnceAnHourWithinItsAvailability) {
  settings_.base_url = "https://gpunex.example";
  const auto on = register_machine("always-on");
  const auto windowed = register_machine("daytime");
  store_->transact([&](store::Tx& tx) {
    // kNow is a Wednesday, 10:00 UTC: before the daytime machine's window.
    auto s = core::parse_schedule(nlohmann::json::parse(
        R"({"timezone": "UTC", "always": false, "windows": [{"days": ["wed"], "start": "12:00", "end": "18:00"}]})"));
    ASSERT_TRUE(s.ok());
    server::save_schedule(tx, "p1", windowed, *s, kNow);
    tx.exec("UPDATE machines SET status = 'online', last_seen_at = ?", {kNow - 600'000});
  });
  const auto told = [&](const char* table) {
    return store_->transact([&](store::Tx& tx) {
      return tx.query_one(std::string("SELECT COUNT(*) FROM ") + table + " WHERE kind = 'machine_offline'")->i64(0);
    });
  };
  EXPECT_EQ(store_->transact([&](store::Tx& tx) { return server::mark_offline_machines(tx, settings_, kNow); }), 2u);
  EXPECT_EQ(told("outbox"), 1);
  ASSERT_EQ(told("notifications"), 1);
  const auto notice = store_->transact([&](store::Tx& tx) {
    return tx.query_one("SELECT user_id, title, body, link FROM notifications WHERE kind = 'machine_offline'");
  });
  EXPECT_EQ(notice->str(0), "u1");
  EXPECT_EQ(notice->str(1), "always-on (" + on + ") is offline");
  EXPECT_NE(notice->str(2).find("since 2026-12-02T09:50:00"), std::string::npos) << notice->str(2);
  EXPECT_EQ(notice->str(3), "https://gpunex.example/#/machines/" + on);

  // Back, and gone again within the hour: no second mail.
  const auto again_at = kNow + 30 * 60'000;
  store_->transact([&](store::Tx& tx) {
    tx.exec("UPDATE machines SET status = 'online', last_seen_at = ? WHERE id = ?", {again_at - 600'000, on});
  });
  EXPECT_EQ(store_->transact([&](store::Tx& tx) { return server::mark_offline_machines(tx, settings_, again_at); }),
            1u);
  EXPECT_EQ(told("notifications"), 1);
  // Two hours after the first: told again.
  const auto later = kNow + 2 * 3'600'000;
  store_->transact([&](store::Tx& tx) {
    tx.exec("UPDATE machines SET status = 'online', last_seen_at = ? WHERE id = ?", {later - 600'000, on});
  });
  EXPECT_EQ(store_->transact([&](store::Tx& tx) { return server::mark_offline_machines(tx, settings_, later); }), 1u);
  EXPECT_EQ(told("notifications"), 2);
  EXPECT_EQ(told("outbox"), 2);

  // The daytime machine gone at 11:40, before its window: not told; back, and gone again at 12:10, within
  // its window and within the hour of the first: told (the hour counts what the provider was told).
  const auto silent_at = [&](std::int64_t last_seen, std::int64_t at) {
    store_->transact([&](store::Tx& tx) {
      tx.exec("UPDATE machines SET status = 'online', last_seen_at = ? WHERE id = ?", {last_seen, windowed});
    });
    return store_->transact([&](store::Tx& tx) { return server::mark_offline_machines(tx, settings_, at); });
  };
  EXPECT_EQ(silent_at(kNow + 100 * 60'000, kNow + 110 * 60'000), 1u);
  EXPECT_EQ(told("notifications"), 2);
  EXPECT_EQ(silent_at(kNow + 130 * 60'000, kNow + 140 * 60'000), 1u);
  EXPECT_EQ(told("notifications"), 3);
}

// A site's outage is one mail: the machines of one provider found offline in one sweep are told together.
TEST_F(MachinesStore, MachinesGoneOfflineTogetherAreToldInOneMail) {
  settings_.base_url = "https://gpunex.example";
  const auto a = register_machine("rack-a");
  const auto b = register_machine("rack-b");
  store_->transact(
      [&](store::Tx& tx) { tx.exec("UPDATE machines SET status = 'online', last_seen_at = ?", {kNow - 600'000}); });
  EXPECT_EQ(store_->transact([&](store::Tx& tx) { return server::mark_offline_machines(tx, settings_, kNow); }), 2u);
  const auto rows = store_->transact([&](store::Tx& tx) {
    return tx.query("SELECT title, body, link FROM notifications WHERE kind = 'machine_offline'");
  });
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].str(0), "2 machines are offline");
  for (const auto& id : {a, b}) {
    EXPECT_NE(rows[0].str(1).find("(" + id + "), last heard 2026-12-02T09:50:00"), std::string::npos) << rows[0].str(1);
    EXPECT_NE(rows[0].str(1).find("https://gpunex.example/#/machines/" + id), std::string::npos);
  }
  EXPECT_EQ(rows[0].str(2), "https://gpunex.example/#/machines");
  EXPECT_EQ(store_->transact([&](store::Tx& tx) {
    return tx.query_one("SELECT COUNT(*) FROM outbox WHERE kind = 'machine_offline'")->i64(0);
  }),
            1);
}
