// server/market.*: price history and schedules through a real (in-memory SQLite) store. The API
// scenarios run the same code on PostgreSQL too; these cover what the API cannot reach yet
// (schedules need issue 4's machines) and the bookkeeping the API does not show.

#include "server/market.hpp"

#include <gtest/gtest.h>

#include "core/rfc3339.hpp"
#include "server/catalog.hpp"

using namespace gpunex;  // NOLINT: test file

namespace {

class MarketStore : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = store::open_store("sqlite::memory:");
    store::migrate(*store_);
    server::seed_catalog(*store_);
    store_->transact([](store::Tx& tx) {
      tx.exec("INSERT INTO users (id, email, full_name, password_hash, created_at) VALUES ('u1', 'p@x', 'P', 'x', 0)");
      tx.exec("INSERT INTO applications (id, user_id, status, form, created_at, updated_at) "
              "VALUES ('a1', 'u1', 'approved', '{}', 0, 0)");
      tx.exec("INSERT INTO providers (id, user_id, application_id, tier, created_at) VALUES ('p1', 'u1', 'a1', 'community', 0)");
    });
    provider_ = server::Provider{"p1", "u1", "a1", "community", 0, };
  }
  std::unique_ptr<store::Store> store_;
  server::Provider provider_;
};

core::Schedule schedule(const std::string& json) {
  auto s = core::parse_schedule(nlohmann::json::parse(json));
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
  return std::move(s).value();
}

}  // namespace

TEST_F(MarketStore, PriceChangesKeepTheHistory) {
  store_->transact([&](store::Tx& tx) {
    EXPECT_EQ(server::set_price(tx, provider_, "L40S", 900'000, "u1", 1000)->seq, 1);
    EXPECT_EQ(server::set_price(tx, provider_, "L40S", 900'000, "u1", 2000)->seq, 1);  // unchanged: no new row
    EXPECT_EQ(server::set_price(tx, provider_, "L40S", 1'100'000, "u1", 3000)->seq, 2);
    auto unknown = server::set_price(tx, provider_, "TPU", 1, "u1", 4000);
    ASSERT_FALSE(unknown.ok());
    EXPECT_EQ(unknown.error().field, "model");
    EXPECT_EQ(unknown.error().code, core::ErrorCode::unprocessable);
  });
  store_->transact([&](store::Tx& tx) {
    auto current = server::current_prices(tx, "p1");
    ASSERT_EQ(current.size(), 1u);
    EXPECT_EQ(current[0].usdc_micro, 1'100'000);
    EXPECT_EQ(current[0].started_at_ms, 3000);
    auto history = server::price_history(tx, "p1", "L40S");
    ASSERT_EQ(history.size(), 2u);
    EXPECT_EQ(history[1].usdc_micro, 900'000);
    EXPECT_EQ(history[1].started_at_ms, 1000);
    auto in = server::recommendation_input(tx, "L40S", "");
    EXPECT_EQ(in.global.prices, std::vector<core::MicroUsdc>{1'100'000});  // one listing per provider
    EXPECT_EQ(in.catalog_price, 900'000);
  });
}

TEST_F(MarketStore, SchedulesRoundTripAndKeepDeclarationTimes) {
  const auto first = schedule(R"({"timezone": "Europe/Berlin", "always": false,
      "windows": [{"days": ["fri"], "start": "18:00", "end": "08:00"}],
      "maintenance": [{"category": "software", "recurrence": {"nth": 1, "weekday": "sun"}, "start": "02:00", "end": "04:00"},
                      {"category": "power", "start": "2026-12-10T02:00:00Z", "end": "2026-12-10T04:00:00Z", "note": "UPS"}]})");
  store_->transact([&](store::Tx& tx) { server::save_schedule(tx, "p1", "m1", first, 1000); });
  // Re-saved a day later with the power window moved: the monthly one keeps its declaration time.
  auto second = first;
  second.maintenance[1].start_utc += std::chrono::hours{24};
  second.maintenance[1].end_utc += std::chrono::hours{24};
  store_->transact([&](store::Tx& tx) { server::save_schedule(tx, "p1", "m1", second, 86'401'000); });
  store_->transact([&](store::Tx& tx) {
    auto rows = tx.query("SELECT idx, kind, declared_at, starts_at FROM maintenance_windows WHERE machine_id = 'm1' "
                         "ORDER BY idx");
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].str(1), "monthly");
    EXPECT_EQ(rows[0].i64(2), 1000);
    EXPECT_EQ(rows[1].str(1), "one_off");
    EXPECT_EQ(rows[1].i64(2), 86'401'000);
    EXPECT_EQ(rows[1].i64(3), *core::parse_rfc3339_ms("2026-12-11T02:00:00Z"));
    auto loaded = server::load_schedule(tx, "m1");
    ASSERT_TRUE(loaded);
    EXPECT_EQ(core::schedule_to_json(*loaded), core::schedule_to_json(second));
    EXPECT_FALSE(server::load_schedule(tx, "m2"));
    // Friday 2026-12-04 20:00 CET is inside the window, which ends Saturday 08:00 CET.
    auto j = server::schedule_json("m1", *loaded, *core::parse_rfc3339_ms("2026-12-04T19:00:00Z"));
    EXPECT_EQ(j["available_now"], true);
    EXPECT_EQ(j["available_until"], "2026-12-05T07:00:00Z");
    EXPECT_EQ(j["machine_id"], "m1");
  });
}
