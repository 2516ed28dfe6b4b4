// The fleet's pure rules: machine and benchmark-run statuses (names both ways, the moves they allow), the
// offline threshold, when a machine is due a run and the listing transition. The delist/relist texts are
// mail templates (mail_templates_test.cpp).

#include <gtest/gtest.h>

#include "core/benchmark_run.hpp"
#include "core/listing.hpp"
#include "core/machine_status.hpp"

namespace gpunex {
namespace {

using core::BenchmarkReason;
using core::BenchmarkRunStatus;
using core::ListingChange;
using core::MachineStatus;

TEST(MachineStatus, NamesRoundTrip) {
  for (auto s : {MachineStatus::offline, MachineStatus::online}) {
    EXPECT_EQ(core::parse_machine_status(core::machine_status_name(s)), s);
  }
  EXPECT_EQ(core::machine_status_name(MachineStatus::online), "online");
  EXPECT_EQ(core::machine_status_name(MachineStatus::offline), "offline");
  EXPECT_FALSE(core::parse_machine_status("Online"));
  EXPECT_FALSE(core::parse_machine_status(""));
}

TEST(MachineStatus, AHeartbeatBringsAMachineOnlineAndSaysWhenItCame) {
  const auto from_offline = core::on_heartbeat(MachineStatus::offline);
  EXPECT_EQ(from_offline.next, MachineStatus::online);
  EXPECT_TRUE(from_offline.came_online);
  const auto from_online = core::on_heartbeat(MachineStatus::online);
  EXPECT_EQ(from_online.next, MachineStatus::online);
  EXPECT_FALSE(from_online.came_online);
}

TEST(MachineStatus, OfflineAfterTheMissedHeartbeatsAndNotAtTheEdge) {
  const core::OfflineRule rule{15, 3};  // 45 s of silence
  const std::int64_t now = 1'000'000;
  EXPECT_EQ(core::offline_cutoff_ms(rule, now), now - 45'000);
  EXPECT_FALSE(core::goes_offline(rule, MachineStatus::online, now - 45'000, now));  // exactly at the cutoff
  EXPECT_TRUE(core::goes_offline(rule, MachineStatus::online, now - 45'001, now));
  EXPECT_FALSE(core::goes_offline(rule, MachineStatus::online, now - 1'000, now));
  EXPECT_FALSE(core::goes_offline(rule, MachineStatus::offline, now - 100'000, now));  // already offline
}

TEST(BenchmarkRun, StatusAndReasonNamesRoundTrip) {
  for (auto s : {BenchmarkRunStatus::requested, BenchmarkRunStatus::delivered, BenchmarkRunStatus::completed,
                 BenchmarkRunStatus::expired}) {
    EXPECT_EQ(core::parse_run_status(core::run_status_name(s)), s);
  }
  EXPECT_EQ(core::run_status_name(BenchmarkRunStatus::completed), "completed");
  EXPECT_FALSE(core::parse_run_status("done"));
  for (auto r : {BenchmarkReason::first_registration, BenchmarkReason::hardware_change, BenchmarkReason::weekly,
                 BenchmarkReason::provider_request, BenchmarkReason::agent}) {
    EXPECT_EQ(core::parse_run_reason(core::run_reason_name(r)), r);
  }
  EXPECT_EQ(core::run_reason_name(BenchmarkReason::provider_request), "provider_request");
  EXPECT_FALSE(core::parse_run_reason("manual"));
}

TEST(BenchmarkRun, MovesForwardOnlyAndCompletesOnce) {
  using S = BenchmarkRunStatus;
  EXPECT_TRUE(core::can_move(S::requested, S::delivered));
  EXPECT_TRUE(core::can_move(S::delivered, S::completed));
  EXPECT_TRUE(core::can_move(S::delivered, S::expired));
  EXPECT_TRUE(core::can_move(S::requested, S::completed));
  EXPECT_TRUE(core::can_move(S::expired, S::completed));  // a late report still counts
  EXPECT_FALSE(core::can_move(S::delivered, S::requested));
  EXPECT_FALSE(core::can_move(S::requested, S::expired));
  for (auto to : {S::requested, S::delivered, S::completed, S::expired}) EXPECT_FALSE(core::can_move(S::completed, to));
  EXPECT_TRUE(core::is_open(S::requested));
  EXPECT_TRUE(core::is_open(S::delivered));
  EXPECT_FALSE(core::is_open(S::completed));
  EXPECT_FALSE(core::is_open(S::expired));
}

TEST(BenchmarkRun, DueFirstThenAfterAHardwareChangeThenWeekly) {
  const std::int64_t week = 7LL * 24 * 3600 * 1000;
  const std::int64_t now = 10 * week;
  EXPECT_EQ(core::due_reason(std::nullopt, false, week, now), BenchmarkReason::first_registration);
  EXPECT_EQ(core::due_reason(now - 1000, true, week, now), BenchmarkReason::hardware_change);
  EXPECT_EQ(core::due_reason(now - week, false, week, now), BenchmarkReason::weekly);  // the edge is due
  EXPECT_FALSE(core::due_reason(now - week + 1, false, week, now));
}

TEST(Listing, DelistsOnAFailAndRelistsOnAPassAfterOne) {
  EXPECT_EQ(core::listing_change(std::nullopt, false), ListingChange::delisted);  // a first run that fails
  EXPECT_EQ(core::listing_change(true, false), ListingChange::delisted);
  EXPECT_EQ(core::listing_change(false, false), ListingChange::none);  // already told
  EXPECT_EQ(core::listing_change(false, true), ListingChange::relisted);
  EXPECT_EQ(core::listing_change(true, true), ListingChange::none);
  EXPECT_EQ(core::listing_change(std::nullopt, true), ListingChange::none);  // a first run that passes
}

TEST(Listing, UnknownModelFindingAsksForACatalogEntry) {
  const auto f = core::unknown_model_finding();
  EXPECT_EQ(f.metric, "model");
  EXPECT_EQ(f.cause, "unknown_model");
  EXPECT_NE(f.recommendation.find("add the model to the catalog"), std::string::npos);
}

}  // namespace
}  // namespace gpunex
