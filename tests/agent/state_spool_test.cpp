// The agent's data folder: identity, sequence numbers, the spool; and the NVML-absent error.
#include <gtest/gtest.h>

#include <fstream>

#include "agent/agent.hpp"
#include "agent/backend.hpp"
#include "agent/spool.hpp"
#include "agent/state.hpp"
#include "gpu/nvml/nvml_backend.hpp"
#include "test_dir.hpp"

namespace gpunex::agent {
namespace {

using testing::TempDir;

TEST(AgentState, IdentitySurvivesARestart) {
  TempDir dir;
  const std::string data = dir.str() + "/nested/data";  // created on first start
  std::string fingerprint;
  {
    auto st = AgentState::open(data);
    ASSERT_TRUE(st) << st.error().message;
    fingerprint = st->identity().fingerprint;
    EXPECT_EQ(fingerprint.rfind("mfp_", 0), 0u);
    EXPECT_TRUE(st->identity().machine_id.empty());
    ASSERT_TRUE(st->set_machine_id("mch_123", "https://example.test"));
  }
  auto again = AgentState::open(data);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->identity().fingerprint, fingerprint);
  EXPECT_EQ(again->identity().machine_id, "mch_123");
  EXPECT_EQ(again->identity().server_url, "https://example.test");
}

TEST(AgentState, TwoDataFoldersAreTwoMachines) {
  TempDir a, b;
  auto sa = AgentState::open(a.str());
  auto sb = AgentState::open(b.str());
  ASSERT_TRUE(sa && sb);
  EXPECT_NE(sa->identity().fingerprint, sb->identity().fingerprint);
}

TEST(AgentState, SequenceNumbersIncreaseAcrossRestarts) {
  TempDir dir;
  {
    auto st = AgentState::open(dir.str());
    ASSERT_TRUE(st);
    EXPECT_EQ(st->last_seq(), 0u);
    EXPECT_EQ(*st->next_seq(), 1u);
    EXPECT_EQ(*st->next_seq(), 2u);
    EXPECT_EQ(*st->next_seq(), 3u);
  }
  auto st = AgentState::open(dir.str());
  ASSERT_TRUE(st);
  EXPECT_EQ(st->last_seq(), 3u);
  EXPECT_EQ(*st->next_seq(), 4u);
}

TEST(AgentState, DamagedFilesAreReportedNotReplaced) {
  TempDir dir;
  { std::ofstream(dir.str() + "/seq") << "12abc\n"; }
  auto st = AgentState::open(dir.str());
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("damaged"), std::string::npos);

  TempDir dir2;
  { std::ofstream(dir2.str() + "/identity.json") << "{\"machine_id\": \"x\"}"; }
  auto st2 = AgentState::open(dir2.str());
  ASSERT_FALSE(st2);
  EXPECT_NE(st2.error().message.find("no fingerprint"), std::string::npos);
}

SpoolEntry entry(std::uint64_t seq, SpoolKind kind) {
  return SpoolEntry{seq, kind, "/v1/agent/heartbeat", "{\"seq\":" + std::to_string(seq) + "}"};
}

TEST(Spool, ReplaysInSequenceOrderAcrossRestarts) {
  TempDir dir;
  {
    auto sp = Spool::open(dir.str() + "/spool");
    ASSERT_TRUE(sp) << sp.error().message;
    for (std::uint64_t s : {3, 1, 2}) ASSERT_TRUE(sp->push(entry(s, s == 2 ? SpoolKind::event : SpoolKind::telemetry)));
    EXPECT_EQ(sp->size(), 3u);
  }
  auto sp = Spool::open(dir.str() + "/spool");
  ASSERT_TRUE(sp);
  ASSERT_EQ(sp->size(), 3u);
  std::vector<std::uint64_t> order;
  while (true) {
    auto f = sp->front();
    ASSERT_TRUE(f);
    if (!f->has_value()) break;
    order.push_back((*f)->seq);
    EXPECT_EQ((*f)->body, "{\"seq\":" + std::to_string((*f)->seq) + "}");
    EXPECT_EQ((*f)->endpoint, "/v1/agent/heartbeat");
    EXPECT_EQ((*f)->kind, (*f)->seq == 2 ? SpoolKind::event : SpoolKind::telemetry);
    ASSERT_TRUE(sp->remove((*f)->seq));
  }
  EXPECT_EQ(order, (std::vector<std::uint64_t>{1, 2, 3}));
  EXPECT_EQ(sp->bytes(), 0u);
}

TEST(Spool, WhenFullDropsOldestTelemetryNeverEvents) {
  TempDir dir;
  auto sp = Spool::open(dir.str(), SpoolLimits{4, 1 << 20});
  ASSERT_TRUE(sp);
  ASSERT_TRUE(sp->push(entry(1, SpoolKind::event)));
  ASSERT_TRUE(sp->push(entry(2, SpoolKind::telemetry)));
  ASSERT_TRUE(sp->push(entry(3, SpoolKind::telemetry)));
  ASSERT_TRUE(sp->push(entry(4, SpoolKind::event)));
  auto dropped = sp->push(entry(5, SpoolKind::telemetry));
  ASSERT_TRUE(dropped);
  EXPECT_EQ(*dropped, 1u);
  EXPECT_EQ(sp->size(), 4u);
  EXPECT_EQ(*sp->first_seq(), 1u);  // the event stays; telemetry 2 went
  ASSERT_TRUE(sp->remove(1));
  EXPECT_EQ(*sp->first_seq(), 3u);
  ASSERT_TRUE(sp->push(entry(1, SpoolKind::event)));
  // Fill with events only: they are kept past the limit.
  for (std::uint64_t s = 6; s < 10; ++s) ASSERT_TRUE(sp->push(entry(s, SpoolKind::event)));
  EXPECT_EQ(sp->count(SpoolKind::telemetry), 0u);
  EXPECT_EQ(sp->count(SpoolKind::event), 6u);
  EXPECT_EQ(sp->dropped_total(), 3u);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path), std::filesystem::directory_iterator{}), 6);
}

TEST(Spool, ByteLimitAlsoDropsTelemetry) {
  TempDir dir;
  auto sp = Spool::open(dir.str(), SpoolLimits{1000, 300});
  ASSERT_TRUE(sp);
  for (std::uint64_t s = 1; s <= 10; ++s) ASSERT_TRUE(sp->push(entry(s, SpoolKind::telemetry)));
  EXPECT_LE(sp->bytes(), 300u);
  EXPECT_GT(sp->size(), 0u);
  EXPECT_EQ(sp->dropped_total() + sp->size(), 10u);
  auto f = sp->front();
  ASSERT_TRUE(f && f->has_value());
  EXPECT_EQ((*f)->seq, 10 - sp->size() + 1);  // the newest ones remain
}

TEST(Nvml, AbsentLibraryGivesTheInstallMessage) {
  auto b = gpu::open_nvml_backend("libgpunex-test-no-such-nvml.so.1");
  ASSERT_FALSE(b);
  EXPECT_EQ(b.error().message,
            "no NVIDIA driver found (libgpunex-test-no-such-nvml.so.1 not loadable): install the NVIDIA driver, "
            "or run with --simulate MODEL:COUNT");
  EXPECT_EQ(b.error().detail_code, "no_nvidia_driver");
}

TEST(Nvml, ALibraryWithoutNvmlIsRefusedByName) {
  auto b = gpu::open_nvml_backend("libm.so.6");
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().message.find("libm.so.6 has no nvmlInit_v2"), std::string::npos) << b.error().message;
}

TEST(Backend, SimulateWinsOverNvml) {
  auto b = open_backend(std::string("L4:1"), "seed", "libgpunex-test-no-such-nvml.so.1");
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_TRUE((*b)->simulated());
  auto none = open_backend(std::nullopt, "seed", "libgpunex-test-no-such-nvml.so.1");
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().detail_code, "no_nvidia_driver");
}

TEST(Backoff, GrowsExponentiallyWithJitterAndCaps) {
  std::mt19937_64 rng(42);
  using std::chrono::milliseconds;
  for (unsigned attempt = 0; attempt < 12; ++attempt) {
    const std::int64_t cap = std::min<std::int64_t>(60000, 1000LL << attempt);
    for (int i = 0; i < 20; ++i) {
      auto d = backoff_delay(attempt, milliseconds(1000), milliseconds(60000), rng).count();
      EXPECT_GE(d, cap - cap / 2) << attempt;
      EXPECT_LE(d, cap) << attempt;
    }
  }
  EXPECT_LE(backoff_delay(500, milliseconds(1000), milliseconds(60000), rng).count(), 60000);
}

TEST(KeyRefused, OnlyAn401WithTheApiErrorShape) {
  EXPECT_TRUE(is_key_refused(401, R"({"error":{"code":"api_key_revoked","message":"revoked"}})"));
  EXPECT_FALSE(is_key_refused(401, "<html>proxy login</html>"));
  EXPECT_FALSE(is_key_refused(403, R"({"error":{"code":"forbidden","message":"x"}})"));
}

}  // namespace
}  // namespace gpunex::agent
