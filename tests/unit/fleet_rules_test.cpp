// The fleet's pure rules: machine and benchmark-run statuses (names both ways, the moves they allow), the
// offline threshold, when a machine is due a run, the listing transition, and the delist/relist notices.

#include <gtest/gtest.h>

#include "core/benchmark_run.hpp"
#include "core/listing.hpp"
#include "core/machine_status.hpp"
#include "server/fleet/listing_notice.hpp"

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

TEST(ListingNotice, DelistedNamesEveryFailureWithMeasuredAndExpected) {
  const core::bench::Finding fp16{"fp16_tensor", "FP16 tensor throughput", 254.1, 289.6, "TFLOP/s", "thermal_throttling",
                                  "Clean the fans."};
  const core::bench::Finding ram{"host.ram", "Host RAM", 0.5, 0, "GiB", "host", "Add RAM."};
  const std::string name = server::gpu_display_name(0, "H100-SXM", "host-a");
  EXPECT_EQ(name, "GPU 0 (H100-SXM) on host-a");
  const auto n = server::delisted_notice(name, {fp16, ram});
  EXPECT_EQ(n.kind, "gpu_delisted");
  EXPECT_EQ(n.title, "GPU 0 (H100-SXM) on host-a delisted: FP16 tensor throughput");
  EXPECT_EQ(n.body,
            "GPU 0 (H100-SXM) on host-a is delisted: customers cannot rent it until a benchmark run passes.\n"
            "\n- FP16 tensor throughput: measured 254 TFLOP/s, expected 290 (ratio 0.88).\n  What to do: Clean the fans."
            "\n- Host RAM: measured 0.50 GiB, expected 0.00.\n  What to do: Add RAM."
            "\n\nAfter fixing it, re-run the benchmarks from the Benchmarks tab.");
}

TEST(ListingNotice, RelistedGivesTheQualityRatioWhenKnown) {
  const auto with = server::relisted_notice("GPU 1 (A100) on b", 0.97);
  EXPECT_EQ(with.kind, "gpu_relisted");
  EXPECT_EQ(with.title, "GPU 1 (A100) on b relisted");
  EXPECT_EQ(with.body, "GPU 1 (A100) on b passed its benchmarks (quality ratio 0.97) and is listed again.");
  EXPECT_EQ(server::relisted_notice("G", std::nullopt).body, "G passed its benchmarks and is listed again.");
}

}  // namespace
}  // namespace gpunex
