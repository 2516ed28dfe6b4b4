// server/reliability: judged days kept in a real (in-memory SQLite) store, the score the marketplace
// shows, the alert, and the endpoint's answer. The formula itself is tested in reliability_test.cpp;
// tests/js/api/reliability.test.mjs runs the whole path over 30 simulated days on both stores.

#include "server/reliability/reliability.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "core/rfc3339.hpp"
#include "provider_store.hpp"
#include "server/fleet/schedules.hpp"
#include "server/market/offer_candidates.hpp"
#include "server/platform/platform_repo.hpp"
#include "server/reliability/reliability_repo.hpp"
#include "test_time.hpp"

using namespace gpunex;  // NOLINT: test file
namespace cr = core::reliability;
namespace rel = server::reliability;

namespace {

const std::int64_t kDay0 = *core::parse_rfc3339_ms("2026-05-04T00:00:00Z");  // a Monday
using gpunex::test_support::kHour;

class ReliabilityStore : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = test_support::store_with_provider();
    store_->transact([&](store::Tx& tx) {
      tx.exec(
          "INSERT INTO machines (id, provider_id, fingerprint, hostname, host, simulated, agent_version, "
          "protocol_version, status, driver_version, cuda_version, created_at, registered_at, last_seen_at, "
          "last_seq) VALUES ('m1', 'p1', 'f1', 'rig', '{}', 1, '0.1.0', 1, 'online', '550', '12.4', ?, ?, 0, 0)",
          {kDay0, kDay0});
    });
    settings_.alert_below = 80;
  }
  //! Heartbeats in every minute of [from, to) except [gap_from, gap_to).
  void beats(std::int64_t from, std::int64_t to, std::int64_t gap_from = 0, std::int64_t gap_to = 0) {
    store_->transact([&](store::Tx& tx) {
      for (std::int64_t t = from; t < to; t += cr::kMinuteMs) {
        if (t >= gap_from && t < gap_to) continue;
        tx.exec("INSERT INTO presence_minute (machine_id, minute, beats) VALUES ('m1', ?, 1)", {t});
      }
    });
  }
  cr::Score refresh(std::int64_t now) {
    return store_->transact([&](store::Tx& tx) {
      return rel::refresh_machine(tx, *server::machine_for_score(tx, "m1"), jobs_, settings_, now);
    });
  }
  nlohmann::json view(std::int64_t now) {
    return store_->transact([&](store::Tx& tx) {
      auto r = rel::machine_reliability(tx, "p1", "m1", jobs_, settings_, now);
      EXPECT_TRUE(r.ok());
      return r.ok() ? *r : nlohmann::json();
    });
  }
  std::int64_t count(const std::string& sql) {
    return store_->transact([&](store::Tx& tx) { return tx.query_one(sql)->i64(0); });
  }
  std::unique_ptr<store::Store> store_;
  rel::Settings settings_;
  rel::JobSource jobs_ = [](store::Tx&, const std::string&, std::int64_t) { return std::vector<cr::Job>{}; };
};

}  // namespace

TEST_F(ReliabilityStore, DaysAreKeptAndTheShownScoreMovesTheMarket) {
  beats(kDay0, kDay0 + cr::kDayMs, kDay0 + 10 * kHour, kDay0 + 11 * kHour);  // an hour down on day 0
  beats(kDay0 + cr::kDayMs, kDay0 + cr::kDayMs + kHour);
  auto s = refresh(kDay0 + 12 * kHour);
  EXPECT_TRUE(s.is_new);  // half a day: still new, the offers show the prior
  EXPECT_EQ(count("SELECT COUNT(*) FROM reliability_scores WHERE machine_id = 'm1' AND is_new = 1"), 1);
  EXPECT_EQ(store_->transact([](store::Tx& tx) { return rel::published_scores(tx).size(); }), 0u);

  const auto version = count("SELECT version FROM market_version");
  s = refresh(kDay0 + cr::kDayMs + 10 * cr::kMinuteMs);  // past the day's end and its grace
  EXPECT_FALSE(s.is_new);
  EXPECT_EQ(count("SELECT final FROM reliability_days WHERE day = " + std::to_string(kDay0)), 1);
  EXPECT_EQ(count("SELECT present_min FROM reliability_days WHERE day = " + std::to_string(kDay0)), 1380);
  EXPECT_GT(count("SELECT version FROM market_version"), version) << "the offers must hear of a new score";
  // The round reads a final day without its minutes (never judged again), today's with them.
  const auto rows = store_->transact([](store::Tx& tx) { return rel::ReliabilityRepo(tx).days("m1", kDay0); });
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_TRUE(rows[0].final);
  EXPECT_EQ(rows[0].present_hex + rows[0].scheduled_hex + rows[0].excused_hex, "");
  EXPECT_EQ(count("SELECT length(present) FROM reliability_days WHERE day = " + std::to_string(kDay0)), 360);
  EXPECT_FALSE(rows[1].final);
  EXPECT_EQ(rows[1].present_hex.size(), 360u);
  EXPECT_EQ(rows[1].scheduled_hex.size(), 360u);
  const auto shown = store_->transact([](store::Tx& tx) { return rel::published_scores(tx); });
  ASSERT_EQ(shown.size(), 1u);
  EXPECT_NEAR(shown.at("m1"), std::round(s.score * 10) / 10, 1e-9);

  // The same score again: nothing written, the offers left alone.
  const auto after = count("SELECT version FROM market_version");
  refresh(kDay0 + cr::kDayMs + 10 * cr::kMinuteMs);
  EXPECT_EQ(count("SELECT version FROM market_version"), after);

  // A final day is not judged again, even once its presence minutes are gone (retention).
  store_->transact(
      [](store::Tx& tx) { tx.exec("DELETE FROM presence_minute WHERE minute < ?", {kDay0 + cr::kDayMs}); });
  const auto j = view(kDay0 + cr::kDayMs + 20 * cr::kMinuteMs);
  EXPECT_EQ(j["history"][0]["present_minutes"], 1380);
  EXPECT_EQ(j["state"], "scored");
  ASSERT_EQ(j["events"].size(), 1u);
  EXPECT_EQ(j["events"][0]["text"], "Offline 10:00–11:00 (1 h) during scheduled hours: uptime 95.8% that day");
}

// The round reads the window's days, and the days before it only as far as the oldest day it judges needs:
// a day judged late is still scored with the whole window behind it, days from before this window included.
TEST_F(ReliabilityStore, ADayJudgedLateIsScoredWithTheWholeWindowBehindIt) {
  // Up every minute of 40 days but for ten hours of day 2.
  beats(kDay0, kDay0 + 40 * cr::kDayMs, kDay0 + 2 * cr::kDayMs + 2 * kHour, kDay0 + 2 * cr::kDayMs + 12 * kHour);
  refresh(kDay0 + 6 * cr::kDayMs + 10 * cr::kMinuteMs);  // days 0-5 judged, final
  // No round for four weeks: this one judges day 10 (its window's first) to day 39, each scored with the 30
  // days behind it, so day 2's outage, from before this window, is in the scores of days 10 to 31.
  refresh(kDay0 + 39 * cr::kDayMs + 10 * cr::kMinuteMs);
  const auto uptime_of = [&](int day) {
    return store_->transact([&](store::Tx& tx) {
      return tx.query_one("SELECT uptime FROM reliability_days WHERE day = ?", {kDay0 + day * cr::kDayMs})->f64(0);
    });
  };
  EXPECT_LT(uptime_of(10), 1.0);
  EXPECT_LT(uptime_of(31), 1.0);         // its window: days 2 to 31
  EXPECT_DOUBLE_EQ(uptime_of(32), 1.0);  // days 3 to 32
  // Days 7 to 9 left the window before any round judged them (the first judged day 6's first minutes).
  EXPECT_EQ(count("SELECT COUNT(*) FROM reliability_days WHERE day > " + std::to_string(kDay0 + 6 * cr::kDayMs) +
                  " AND day < " + std::to_string(kDay0 + 10 * cr::kDayMs)),
            0);
}

TEST_F(ReliabilityStore, ASchedulePutLaterDoesNotReJudgeThePast) {
  beats(kDay0, kDay0 + 6 * kHour);  // up until 06:00, then silent
  refresh(kDay0 + 12 * kHour);      // 24/7 until noon: 6 hours missed so far
  store_->transact([](store::Tx& tx) {
    auto s = core::parse_schedule(nlohmann::json::parse(
        R"({"timezone": "UTC", "always": false, "windows": [{"days": ["mon"], "start": "00:00", "end": "06:00"}]})"));
    server::save_schedule(tx, "p1", "m1", *s, kDay0 + 12 * kHour);
  });
  refresh(kDay0 + cr::kDayMs + 10 * cr::kMinuteMs);
  // The morning as judged under 24/7 (12 h, 6 present); the afternoon under the new schedule (none).
  EXPECT_EQ(count("SELECT counted_min FROM reliability_days WHERE day = " + std::to_string(kDay0)), 720);
  EXPECT_EQ(count("SELECT present_min FROM reliability_days WHERE day = " + std::to_string(kDay0)), 360);
}

TEST_F(ReliabilityStore, BelowTheAlertLevelTheProviderIsToldOnce) {
  beats(kDay0, kDay0 + cr::kDayMs, kDay0, kDay0 + 20 * kHour);  // down 20 hours on day 0
  // The worker's rounds count the alert they raise: the first, not the second.
  const auto first = rel::run_round(*store_, jobs_, settings_, kDay0 + cr::kDayMs + 10 * cr::kMinuteMs);
  EXPECT_EQ(first.machines, 1u);
  EXPECT_EQ(first.alerts, 1u);
  EXPECT_EQ(rel::run_round(*store_, jobs_, settings_, kDay0 + cr::kDayMs + 20 * cr::kMinuteMs).alerts, 0u);
  EXPECT_EQ(count("SELECT COUNT(*) FROM outbox WHERE kind = 'reliability_low'"), 1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM notifications WHERE kind = 'reliability_low' AND user_id = 'u1'"), 1);
  EXPECT_EQ(count("SELECT alerted FROM reliability_scores"), 1);
  // Good days bring it back above the level and its margin: the next fall is told again.
  for (int d = 1; d < 6; ++d) beats(kDay0 + d * cr::kDayMs, kDay0 + (d + 1) * cr::kDayMs);
  refresh(kDay0 + 6 * cr::kDayMs + 10 * cr::kMinuteMs);
  EXPECT_EQ(count("SELECT alerted FROM reliability_scores"), 0);
}

TEST_F(ReliabilityStore, RentalsComeFromTheCallersJobSource) {
  beats(kDay0, kDay0 + cr::kDayMs);
  jobs_ = [](store::Tx&, const std::string& machine, std::int64_t since) {
    EXPECT_EQ(machine, "m1");
    EXPECT_LE(since, kDay0 + cr::kDayMs);
    return std::vector<cr::Job>{{"r_ok", kDay0 + kHour, core::rental::EndReason::customer_stopped, false},
                                {"r_gpu", kDay0 + 2 * kHour, core::rental::EndReason::gpu_failure, true}};
  };
  const auto j = view(kDay0 + cr::kDayMs);  // midnight: nothing of today counted yet
  EXPECT_EQ(j["parts"]["job_completion"]["jobs"], 2);
  EXPECT_EQ(j["parts"]["job_completion"]["provider_side"], 1);
  ASSERT_EQ(j["events"].size(), 1u);
  EXPECT_EQ(j["events"][0]["text"], "Rental r_gpu ended by GPU failure");
  EXPECT_EQ(j["events"][0]["rental_id"], "r_gpu");
  EXPECT_FALSE(j["events"][0]["what_to_do"].get<std::string>().empty());
  // Not this provider's machine: 404.
  store_->transact([&](store::Tx& tx) {
    auto r = rel::machine_reliability(tx, "p2", "m1", jobs_, settings_, kDay0);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, core::ErrorCode::not_found);
  });
}

// The platform down across midnight (23:50 to 00:20), and after the restart the reliability round comes
// before the machines sweep has recorded the outage: yesterday is not final yet (the outage would be
// judged as the machine's absence for good); once the sweep has recorded it, the day is final with the
// outage excused.
TEST_F(ReliabilityStore, ADayIsFinalOnlyOnceTheFleetWasWatchedPastItsEnd) {
  const std::int64_t down = kDay0 + cr::kDayMs - 10 * cr::kMinuteMs;
  const std::int64_t back = kDay0 + cr::kDayMs + 20 * cr::kMinuteMs;
  beats(kDay0, down);
  store_->transact([&](store::Tx& tx) { server::platform_repo::record_fleet_watched_until(tx, down); });
  refresh(back);
  EXPECT_EQ(count("SELECT final FROM reliability_days WHERE day = " + std::to_string(kDay0)), 0);
  store_->transact([&](store::Tx& tx) {
    server::platform_repo::insert_platform_outage(tx, {down, back, back + 60'000});
    server::platform_repo::record_fleet_watched_until(tx, back);
  });
  refresh(back + cr::kMinuteMs);
  EXPECT_EQ(count("SELECT final FROM reliability_days WHERE day = " + std::to_string(kDay0)), 1);
  EXPECT_EQ(count("SELECT excused_min FROM reliability_days WHERE day = " + std::to_string(kDay0)), 10);
  EXPECT_EQ(count("SELECT present_min FROM reliability_days WHERE day = " + std::to_string(kDay0)), 1430);
}
