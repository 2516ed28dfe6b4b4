// server/market.*: price history and schedules through a real (in-memory SQLite) store. The API
// scenarios run the same code on PostgreSQL too; these cover what the API cannot reach yet
// (schedules need issue 4's machines) and the bookkeeping the API does not show.

#include "server/fleet/machines_repo.hpp"
#include "server/market/market_repo.hpp"
#include "server/market/offers.hpp"
#include "util/clock.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "core/rfc3339.hpp"
#include "provider_store.hpp"

using namespace gpunex;  // NOLINT: test file

namespace {

class MarketStore : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = test_support::store_with_provider();
    provider_ = server::Provider{"p1", "u1", "a1", "community", 0, };
  }
  std::unique_ptr<store::Store> store_;
  server::Provider provider_;
};

core::Schedule schedule_from(const std::string& json) {
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
    EXPECT_NE(unknown.error().message.find("the catalog's ids: "), std::string::npos) << unknown.error().message;
    // The id in another case, or a name that names one model, is that model's rate.
    EXPECT_EQ(server::set_price(tx, provider_, "l40s", 1'100'000, "u1", 4000)->seq, 2) << "L40S's, unchanged";
    EXPECT_EQ(server::set_price(tx, provider_, "RTX4090", 700'000, "u1", 4000)->model, "RTX-4090");
    auto several = server::set_price(tx, provider_, "A100", 1, "u1", 4000);
    ASSERT_FALSE(several.ok());
    EXPECT_NE(several.error().message.find("it names several models: A100-"), std::string::npos)
        << several.error().message;
    for (const char* id : {"A100-SXM-80GB", "A100-PCIE-40GB", "A100-PCIE-80GB"}) {
      EXPECT_NE(several.error().message.find(id), std::string::npos) << several.error().message;
    }
  });
  store_->transact([&](store::Tx& tx) {
    auto current = server::current_prices(tx, "p1");
    ASSERT_EQ(current.size(), 2u);
    std::erase_if(current, [](const server::PriceRow& r) { return r.model != "L40S"; });
    ASSERT_EQ(current.size(), 1u);
    EXPECT_EQ(current[0].usdc_micro, 1'100'000);
    EXPECT_EQ(current[0].started_at_ms, 3000);
    auto history = server::price_history(tx, "p1", "L40S");
    ASSERT_EQ(history.size(), 2u);
    EXPECT_EQ(history[1].usdc_micro, 900'000);
    EXPECT_EQ(history[1].started_at_ms, 1000);
    // Priced, but with no listed GPU on an online machine: no listing (the catalog price remains).
    auto in = server::recommendation_input(tx, "L40S", "", 4000, {}, false);
    EXPECT_TRUE(in.global.prices.empty());
    EXPECT_EQ(in.catalog_price, 900'000);
  });
}

// The recommendation reads the provider's region in a read transaction, so reading the profile writes
// nothing: a write in a read transaction fails on SQLite when another writer committed since it began
// (CI's Pricing page once lost its recommendation that way, under heartbeats and challenge answers).
// The first price stores it.
TEST_F(MarketStore, ReadingTheProfileWritesNothingAndTheFirstPriceStoresIt) {
  const auto profiles = [&] {
    return store_->transact(
        [](store::Tx& tx) { return tx.query_one("SELECT COUNT(*) FROM provider_market_profiles")->i64(0); },
        store::TxMode::read);
  };
  store_->transact([&](store::Tx& tx) { server::current_market_profile(tx, provider_, "L40S"); },
                   store::TxMode::read);
  EXPECT_EQ(profiles(), 0);
  store_->transact([&](store::Tx& tx) { ASSERT_TRUE(server::set_price(tx, provider_, "L40S", 900'000, "u1", 1000).ok()); });
  EXPECT_EQ(profiles(), 1);
}

TEST_F(MarketStore, SchedulesRoundTripAndKeepDeclarationTimes) {
  const auto first = schedule_from(R"({"timezone": "Europe/Berlin", "always": false,
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

// The offer cache against a fresh read of the store after each kind of change: a price, a
// machine going offline and back, a schedule that excludes now, a delisted GPU. An unchanged
// market is served from the same book.
TEST_F(MarketStore, OfferCacheFollowsEveryChangeToTheMarket) {
  server::ScheduleCache schedules;
  server::OfferCache cache{std::chrono::seconds{30}};  // every search waits for its reload
  const core::UtcTime now{std::chrono::seconds{*core::parse_rfc3339_ms("2026-01-05T12:00:00Z") / 1000}};  // a Monday
  store_->transact([&](store::Tx& tx) {
    for (const char* m : {"m1", "m2"}) {
      tx.exec(
          "INSERT INTO machines (id, provider_id, fingerprint, hostname, host, simulated, agent_version, "
          "protocol_version, status, driver_version, cuda_version, created_at, registered_at, last_seen_at, "
          "last_seq) VALUES (?, 'p1', ?, 'h', '{}', 0, '1', 1, 'online', '', '', 0, 0, 0, 0)",
          {std::string(m), std::string(m)});
      for (const char* g : {"g1", "g2"}) {
        tx.exec(
            "INSERT INTO machine_gpus (machine_id, uuid, idx, name, model, memory_mib, facts, present, "
            "first_seen_at, updated_at) VALUES (?, ?, 0, 'NVIDIA L4', 'L4', 23034, '{}', 1, 0, 0)",
            {std::string(m), std::string(g)});
        tx.exec("INSERT INTO gpu_listing (machine_id, uuid, listed, perf_score, updated_at) VALUES (?, ?, 1, 15, 0)",
                {std::string(m), std::string(g)});
      }
    }
    ASSERT_TRUE(server::set_price(tx, provider_, "L4", 400'000, "u1", 1000).ok());
  });
  const auto fresh = [&] {
    core::AvailabilityMemo memo;
    auto c = store_->transact([&](store::Tx& tx) { return server::offer_candidates(tx, schedules); });
    return core::OfferBook(std::make_shared<const std::vector<core::OfferCandidate>>(std::move(c)), now, memo)
        .search({});
  };
  const auto summary = [](const core::OfferBook::Page& p) {
    std::vector<std::string> out;
    for (const auto& o : p.items)
      out.push_back(o.candidate.machine_id + " " + std::to_string(o.candidate.gpu_count_available) + " " +
                    std::to_string(o.candidate.price));
    return out;
  };
  const auto check = [&](std::vector<std::string> want) {
    const auto got = cache.book(*store_, schedules, {}, now)->search({});
    EXPECT_EQ(summary(got), want);
    EXPECT_EQ(summary(fresh()), want);
  };

  check({"m1 2 400000", "m2 2 400000"});
  EXPECT_EQ(cache.book(*store_, schedules, {}, now), cache.book(*store_, schedules, {}, now));  // nothing changed
  store_->transact(
      [&](store::Tx& tx) { ASSERT_TRUE(server::set_price(tx, provider_, "L4", 500'000, "u1", 2000).ok()); });
  check({"m1 2 500000", "m2 2 500000"});
  store_->transact([](store::Tx& tx) { tx.exec("UPDATE machines SET status = 'offline' WHERE id = 'm2'"); });
  check({"m1 2 500000"});
  store_->transact([](store::Tx& tx) { tx.exec("UPDATE machines SET status = 'online' WHERE id = 'm2'"); });
  check({"m1 2 500000", "m2 2 500000"});
  // An agent that says it cannot run rentals (no container engine, no network guard) takes its machine
  // off the market; a new reason while still blocked is no market change; saying it can brings it back.
  const auto version = [&] { return store_->transact([](store::Tx& tx) { return server::market_version(tx); }); };
  store_->transact([](store::Tx& tx) { server::MachinesRepo(tx).set_rentals_blocked("m2", "no container engine"); });
  check({"m1 2 500000"});
  const auto blocked_at = version();
  store_->transact([](store::Tx& tx) { server::MachinesRepo(tx).set_rentals_blocked("m2", "iptables: denied"); });
  EXPECT_EQ(version(), blocked_at);
  EXPECT_EQ(store_->transact([](store::Tx& tx) { return server::MachinesRepo(tx).rentals_blocked("m2"); }),
            std::optional<std::string>("iptables: denied"));
  store_->transact([](store::Tx& tx) { server::MachinesRepo(tx).set_rentals_blocked("m2", std::nullopt); });
  check({"m1 2 500000", "m2 2 500000"});
  store_->transact([&](store::Tx& tx) {
    server::save_schedule(tx, "p1", "m1", schedule_from(R"({"timezone": "UTC", "always": false,
        "windows": [{"days": ["tue"], "start": "08:00", "end": "18:00"}]})"),
                          3000);
  });
  check({"m2 2 500000"});
  store_->transact(
      [](store::Tx& tx) { tx.exec("UPDATE gpu_listing SET listed = 0 WHERE machine_id = 'm2' AND uuid = 'g1'"); });
  check({"m2 1 500000"});
  // The same book serves until the market changes or a window opens (Tuesday 08:00 for m1).
  const auto monday = cache.book(*store_, schedules, {}, now);
  EXPECT_EQ(monday->valid_until(),
            core::UtcTime{std::chrono::seconds{*core::parse_rfc3339_ms("2026-01-06T08:00:00Z") / 1000}});
  EXPECT_EQ(cache.book(*store_, schedules, {}, now + std::chrono::hours{19}), monday);
  const auto tuesday = cache.book(*store_, schedules, {}, now + std::chrono::hours{20});
  EXPECT_NE(tuesday, monday);
  EXPECT_EQ(tuesday->search({}).total, 2u);
}

// Issue 20: every market change is logged with the version it commits at, naming the machine, the
// provider, or everything (the GPU catalog); the cache reads only the changes after its version, and
// a version older than the pruned horizon reads as everything.
TEST_F(MarketStore, TheChangeLogNamesWhatChangedSinceAVersion) {
  store_->transact([&](store::Tx& tx) {
    tx.exec(
        "INSERT INTO machines (id, provider_id, fingerprint, hostname, host, simulated, agent_version, "
        "protocol_version, status, driver_version, cuda_version, created_at, registered_at, last_seen_at, "
        "last_seq) VALUES ('m1', 'p1', 'm1', 'h', '{}', 0, '1', 1, 'online', '', '', 0, 0, 0, 0)");
  });
  const auto version = [&] { return store_->transact([](store::Tx& tx) { return server::market_version(tx); }); };
  const auto since = [&](std::int64_t v) {
    return store_->transact([&](store::Tx& tx) { return server::MarketRepo(tx).market_changes_since(v, 10); });
  };
  const auto v0 = version();
  EXPECT_TRUE(since(v0).machines.empty());
  store_->transact([](store::Tx& tx) { tx.exec("UPDATE machines SET last_seen_at = 5 WHERE id = 'm1'"); });
  EXPECT_EQ(version(), v0);  // a heartbeat is no market change
  store_->transact([](store::Tx& tx) { tx.exec("UPDATE machines SET status = 'offline' WHERE id = 'm1'"); });
  const auto v1 = version();
  store_->transact(
      [&](store::Tx& tx) { ASSERT_TRUE(server::set_price(tx, provider_, "L4", 400'000, "u1", 1000).ok()); });
  auto c = since(v0);
  EXPECT_FALSE(c.everything);
  EXPECT_EQ(c.machines, std::vector<std::string>{"m1"});
  EXPECT_EQ(c.providers, std::vector<std::string>{"p1"});
  c = since(v1);
  EXPECT_TRUE(c.machines.empty());
  EXPECT_EQ(c.providers, std::vector<std::string>{"p1"});
  store_->transact([](store::Tx& tx) { tx.exec("UPDATE gpu_models SET vram_gib = vram_gib WHERE id = 'L4'"); });
  EXPECT_TRUE(since(v1).everything);
  EXPECT_TRUE(store_->transact([&](store::Tx& tx) { return server::MarketRepo(tx).market_changes_since(v0, 1); })
                  .everything);  // more changes than the limit: everything
  store_->transact([&](store::Tx& tx) { server::prune_market_changes(tx, v1); });
  EXPECT_TRUE(since(v0).everything);  // pruned
  c = since(v1);
  EXPECT_TRUE(c.everything);  // still the catalog's change
  const auto v2 = version();
  EXPECT_FALSE(since(v2).everything);
}

// Issue 21: a machine on simulated GPUs is never offered unless the operator's demo mode is on, and
// then its offers say so; a real machine's offers say simulated false either way.
TEST_F(MarketStore, SimulatedMachinesAreOfferedOnlyInDemoMode) {
  server::ScheduleCache schedules;
  store_->transact([&](store::Tx& tx) {
    for (const auto& [m, sim] : {std::pair{"real", 0}, std::pair{"sim", 1}}) {
      tx.exec(
          "INSERT INTO machines (id, provider_id, fingerprint, hostname, host, simulated, agent_version, "
          "protocol_version, status, driver_version, cuda_version, created_at, registered_at, last_seen_at, "
          "last_seq) VALUES (?, 'p1', ?, 'h', '{}', ?, '1', 1, 'online', '', '', 0, 0, 0, 0)",
          {std::string(m), std::string(m), std::int64_t{sim}});
      tx.exec(
          "INSERT INTO machine_gpus (machine_id, uuid, idx, name, model, memory_mib, facts, present, "
          "first_seen_at, updated_at) VALUES (?, 'g1', 0, 'NVIDIA L4', 'L4', 23034, '{}', 1, 0, 0)",
          {std::string(m)});
      tx.exec("INSERT INTO gpu_listing (machine_id, uuid, listed, perf_score, updated_at) VALUES (?, 'g1', 1, 15, 0)",
              {std::string(m)});
    }
    ASSERT_TRUE(server::set_price(tx, provider_, "L4", 400'000, "u1", 1000).ok());
  });
  const auto offered = [&](bool allow) {
    std::vector<std::string> out;
    auto c = store_->transact([&](store::Tx& tx) { return server::offer_candidates(tx, schedules, allow); });
    for (const auto& o : c) out.push_back(o.machine_id + (o.simulated ? " simulated" : " real"));
    std::sort(out.begin(), out.end());
    return out;
  };
  EXPECT_EQ(offered(false), std::vector<std::string>{"real real"});
  EXPECT_EQ(offered(true), (std::vector<std::string>{"real real", "sim simulated"}));
  core::Offer o;
  o.candidate.simulated = true;
  EXPECT_EQ(core::to_json(o)["simulated"], true);
}

// A reload slower than the cache's max_wait: the searches answer from the previous book once
// max_wait has passed since the change was seen, and the next search once the reload is done sees
// the change.
TEST_F(MarketStore, OfferCacheAnswersFromThePreviousBookWhileASlowReloadRuns) {
  server::ScheduleCache schedules;
  std::atomic<bool> hold{false};
  std::atomic<int> loads{0};
  std::atomic<int> reloads{0};
  const auto max_wait = std::chrono::milliseconds{400};
  server::OfferCache cache(
      max_wait,
      [&](store::Store& st, server::ScheduleCache& sc, std::optional<std::int64_t>) {
        ++loads;
        while (hold) std::this_thread::sleep_for(std::chrono::milliseconds{1});
        return st.transact([&](store::Tx& tx) {
          return server::OfferCache::Loaded{server::market_version(tx), server::offer_candidates(tx, sc), std::nullopt};
        });
      },
      [&](double) { ++reloads; });
  const core::UtcTime now{std::chrono::seconds{*core::parse_rfc3339_ms("2026-01-05T12:00:00Z") / 1000}};
  store_->transact([&](store::Tx& tx) {
    tx.exec(
        "INSERT INTO machines (id, provider_id, fingerprint, hostname, host, simulated, agent_version, "
        "protocol_version, status, driver_version, cuda_version, created_at, registered_at, last_seen_at, "
        "last_seq) VALUES ('m1', 'p1', 'm1', 'h', '{}', 0, '1', 1, 'online', '', '', 0, 0, 0, 0)");
    tx.exec(
        "INSERT INTO machine_gpus (machine_id, uuid, idx, name, model, memory_mib, facts, present, "
        "first_seen_at, updated_at) VALUES ('m1', 'g1', 0, 'NVIDIA L4', 'L4', 23034, '{}', 1, 0, 0)");
    tx.exec("INSERT INTO gpu_listing (machine_id, uuid, listed, perf_score, updated_at) VALUES ('m1', 'g1', 1, 15, 0)");
    ASSERT_TRUE(server::set_price(tx, provider_, "L4", 400'000, "u1", 1000).ok());
  });
  const auto price = [&] {
    const auto page = cache.book(*store_, schedules, {}, now)->search({});
    return page.items.empty() ? 0 : page.items.front().candidate.price;
  };
  EXPECT_EQ(price(), 400'000);  // the first book is loaded by the search itself

  hold = true;
  store_->transact(
      [&](store::Tx& tx) { ASSERT_TRUE(server::set_price(tx, provider_, "L4", 500'000, "u1", 2000).ok()); });
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(price(), 400'000);  // the reload is held: the previous book, after max_wait
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(waited, max_wait);
  EXPECT_LT(waited, std::chrono::seconds{10});
  const auto t1 = std::chrono::steady_clock::now();
  EXPECT_EQ(price(), 400'000);  // still held: at once now, and no second reload asked for
  EXPECT_LT(std::chrono::steady_clock::now() - t1, max_wait / 2);
  EXPECT_EQ(reloads, 0);

  hold = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{10};
  while (price() != 500'000 && std::chrono::steady_clock::now() < deadline) {
  }
  EXPECT_EQ(price(), 500'000);
  EXPECT_EQ(loads, 2);  // the first book and one reload
  EXPECT_EQ(reloads, 1);  // the one in the background, observed
}

namespace {

// A provider p<n> in `region` with one machine m<n> holding one L40S, listed or not, online or not.
void add_provider_with_gpu(store::Tx& tx, int n, const std::string& region, bool online, bool listed) {
  const std::string id = std::to_string(n);
  if (n != 1) {
    tx.exec("INSERT INTO users (id, email, full_name, password_hash, created_at, email_verified_at) VALUES (?, ?, 'P', 'x', 0, 0)",
            {"u" + id, "p" + id + "@x"});
    tx.exec("INSERT INTO applications (id, user_id, status, form, created_at, updated_at) "
            "VALUES (?, ?, 'approved', '{}', 0, 0)",
            {"a" + id, "u" + id});
    tx.exec("INSERT INTO providers (id, user_id, application_id, tier, created_at) VALUES (?, ?, ?, 'community', 0)",
            {"p" + id, "u" + id, "a" + id});
  }
  tx.exec("INSERT INTO provider_market_profiles (provider_id, city, country, region, commitment_months, updated_at) "
          "VALUES (?, 'C', 'DE', ?, 3, 0)",
          {"p" + id, region});
  tx.exec("INSERT INTO machines (id, provider_id, fingerprint, hostname, host, simulated, agent_version, "
          "protocol_version, status, driver_version, cuda_version, created_at, registered_at, last_seen_at, last_seq) "
          "VALUES (?, ?, ?, 'h', '{}', 0, '0.1.0', 1, ?, '550', '12.4', 0, 0, 0, 0)",
          {"m" + id, "p" + id, "f" + id, std::string(online ? "online" : "offline")});
  tx.exec("INSERT INTO machine_gpus (machine_id, uuid, idx, name, model, memory_mib, facts, present, first_seen_at, "
          "updated_at) VALUES (?, 'GPU-0', 0, 'NVIDIA L40S', 'L40S', 46068, '{}', 1, 0, 0)",
          {"m" + id});
  tx.exec("INSERT INTO gpu_listing (machine_id, uuid, listed, perf_score, quality_ratio, updated_at) "
          "VALUES (?, 'GPU-0', ?, 30, 1, 0)",
          {"m" + id, std::int64_t{listed ? 1 : 0}});
}

void set_status(store::Tx& tx, int n, const char* status) {
  tx.exec("UPDATE machines SET status = ? WHERE id = ?", {std::string(status), "m" + std::to_string(n)});
}

}  // namespace

// Issue 14 item 8: the recommendation's market is the active listings of the last 7 days: a price
// whose provider has no listed GPU on an online machine is none, a listing that ended two days ago
// still counts, one that ended eight days ago no longer does.
TEST_F(MarketStore, RecommendationCountsListingsActiveInTheLastSevenDays) {
  constexpr std::int64_t kDay = 86'400'000;
  const std::int64_t now = util::SystemClock{}.now_ms();
  const auto provider = [](int n) { return server::Provider{"p" + std::to_string(n), "u", "a", "community", 0}; };
  store_->transact([&](store::Tx& tx) {
    add_provider_with_gpu(tx, 1, "eu", true, true);    // active throughout
    add_provider_with_gpu(tx, 2, "eu", true, false);   // online, but its GPU is delisted
    add_provider_with_gpu(tx, 3, "eu", false, true);   // active until two days ago
    add_provider_with_gpu(tx, 4, "eu", false, true);   // active until eight days ago
    add_provider_with_gpu(tx, 5, "us", false, true);   // never online
    ASSERT_TRUE(server::set_price(tx, provider(1), "L40S", 1'000'000, "u", now - 20 * kDay));
    ASSERT_TRUE(server::set_price(tx, provider(2), "L40S", 100'000, "u", now - 20 * kDay));
    ASSERT_TRUE(server::set_price(tx, provider(3), "L40S", 1'200'000, "u", now - 20 * kDay));
    ASSERT_TRUE(server::set_price(tx, provider(4), "L40S", 9'000'000, "u", now - 20 * kDay));
    ASSERT_TRUE(server::set_price(tx, provider(5), "L40S", 50'000, "u", now - 20 * kDay));

    set_status(tx, 4, "online");
    EXPECT_EQ(server::record_listing_activity(tx, now - 8 * kDay, 90, false), 2u);  // p1, p4
    set_status(tx, 4, "offline");
    set_status(tx, 3, "online");
    EXPECT_EQ(server::record_listing_activity(tx, now - 2 * kDay, 90, false), 2u);  // p1, p3
    set_status(tx, 3, "offline");
  });
  store_->transact([&](store::Tx& tx) {
    auto in = server::recommendation_input(tx, "L40S", "eu", now, {}, false);
    EXPECT_EQ(in.regional.prices, (std::vector<core::MicroUsdc>{1'000'000, 1'200'000}));
    EXPECT_EQ(in.global.prices, (std::vector<core::MicroUsdc>{1'000'000, 1'200'000}));
    // A week later p3's listing has left the window too.
    in = server::recommendation_input(tx, "L40S", "eu", now + 6 * kDay, {}, false);
    EXPECT_EQ(in.regional.prices, std::vector<core::MicroUsdc>{1'000'000});

    // A repriced listing counts once, at the new price.
    ASSERT_TRUE(server::set_price(tx, provider(1), "L40S", 1'100'000, "u", now));
    in = server::recommendation_input(tx, "L40S", "eu", now, {}, false);
    EXPECT_EQ(in.regional.prices, (std::vector<core::MicroUsdc>{1'100'000, 1'200'000}));

    // Rows past the kept days go; p4's last sighting was eight days ago.
    server::record_listing_activity(tx, now, 7, false);
    EXPECT_EQ(tx.query_one("SELECT COUNT(*) FROM listing_activity WHERE provider_id = 'p4'")->i64(0), 0);
    EXPECT_EQ(tx.query_one("SELECT COUNT(*) FROM listing_activity WHERE provider_id = 'p3'")->i64(0), 1);
  });
}

// Issue 21: simulated machines are not the market. Their listings set no recommended price unless the
// operator's demo mode offers them (allow_simulated_offers), as the offers themselves.
TEST_F(MarketStore, SimulatedListingsCountOnlyWhereTheyAreOffered) {
  const std::int64_t now = util::SystemClock{}.now_ms();
  const auto provider = [](int n) { return server::Provider{"p" + std::to_string(n), "u", "a", "community", 0}; };
  store_->transact([&](store::Tx& tx) {
    add_provider_with_gpu(tx, 1, "eu", true, true);
    add_provider_with_gpu(tx, 2, "eu", true, true);
    tx.exec("UPDATE machines SET simulated = 1 WHERE id = 'm2'");
    ASSERT_TRUE(server::set_price(tx, provider(1), "L40S", 1'000'000, "u", now - 1000));
    ASSERT_TRUE(server::set_price(tx, provider(2), "L40S", 300'000, "u", now - 1000));
    EXPECT_EQ(server::recommendation_input(tx, "L40S", "eu", now, {}, false).regional.prices,
              std::vector<core::MicroUsdc>{1'000'000});
    auto demo = server::recommendation_input(tx, "L40S", "eu", now, {}, true).regional.prices;
    std::sort(demo.begin(), demo.end());
    EXPECT_EQ(demo, (std::vector<core::MicroUsdc>{300'000, 1'000'000}));
    EXPECT_EQ(server::record_listing_activity(tx, now, 90, false), 1u);
    EXPECT_EQ(tx.query_one("SELECT COUNT(*) FROM listing_activity WHERE provider_id = 'p2'")->i64(0), 0);
    EXPECT_EQ(server::record_listing_activity(tx, now, 90, true), 1u);  // p2's, p1's is recorded already
    EXPECT_EQ(tx.query_one("SELECT COUNT(*) FROM listing_activity WHERE provider_id = 'p2'")->i64(0), 1);
  });
}
