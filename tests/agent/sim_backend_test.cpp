// The simulated GPU backend: SPEC parsing, machine files with faults, telemetry.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/clock_events.hpp"
#include "core/gpu_catalog.hpp"
#include "gpu/gpu_backend.hpp"
#include "gpu/sim/sim_catalog.hpp"
#include "gpu/sim/sim_backend.hpp"
#include "util/crypto.hpp"

namespace gpunex::gpu::sim {
namespace {

class SimTest : public ::testing::Test {
 protected:
  void SetUp() override { util::init_crypto(); }
};

std::int64_t fixed_now() {
  return 1'796'000'000'000;
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST_F(SimTest, ModelCountSpec) {
  auto m = parse_spec("L40S:2");
  ASSERT_TRUE(m) << m.error().message;
  ASSERT_EQ(m->gpus.size(), 2u);
  EXPECT_EQ(m->gpus[0].model->id, "L40S");
  EXPECT_FALSE(m->gpus[1].faults.any());
  EXPECT_EQ(m->summary(), "2x L40S");
}

TEST_F(SimTest, SeveralModelsAndCaseInsensitiveIds) {
  auto m = parse_spec("h100-sxm:1,L4:3");
  ASSERT_TRUE(m) << m.error().message;
  ASSERT_EQ(m->gpus.size(), 4u);
  EXPECT_EQ(m->gpus[0].model->id, "H100-SXM");
  EXPECT_EQ(m->gpus[3].model->id, "L4");
  EXPECT_EQ(m->summary(), "1x H100-SXM, 3x L4");
}

TEST_F(SimTest, BadSpecsNameWhatIsWrong) {
  auto unknown = parse_spec("FOO:1");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("unknown GPU model 'FOO'"), std::string::npos);
  EXPECT_NE(unknown.error().message.find("L40S"), std::string::npos);  // lists the known ones
  for (const char* bad : {"L40S:0", "L40S:x", "L40S:-1", "L40S:65", "L40S:2x"}) {
    auto r = parse_spec(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message.find("count"), std::string::npos) << bad << ": " << r.error().message;
  }
  auto no_colon = parse_spec("L40S");
  ASSERT_FALSE(no_colon);
  EXPECT_NE(no_colon.error().message.find("MODEL:COUNT"), std::string::npos);
  auto missing = parse_spec("/nonexistent/machine.toml");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("not found"), std::string::npos);
  EXPECT_FALSE(parse_spec(""));
}

TEST_F(SimTest, MachineFileWithFaults) {
  const auto path = std::filesystem::temp_directory_path() / ("gpunex-sim-" + util::random_token(6) + ".toml");
  {
    std::ofstream out(path);
    out << R"(driver_version = "535.104.05"
cuda_version = "12.2"
[[gpu]]
model = "L40S"
count = 2
[[gpu]]
model = "H100-SXM"
thermal_throttle = true
ecc_uncorrected = 2
perf_factor = 0.7
[[gpu]]
model = "A100-SXM-80GB"
power_cap = true
off_bus_after = 2
)";
  }
  auto m = parse_spec(path.string());
  std::filesystem::remove(path);
  ASSERT_TRUE(m) << m.error().message;
  ASSERT_EQ(m->gpus.size(), 4u);
  EXPECT_EQ(m->driver_version, "535.104.05");
  EXPECT_TRUE(m->gpus[2].faults.thermal_throttle);
  EXPECT_EQ(m->gpus[2].faults.ecc_uncorrected, 2u);
  EXPECT_DOUBLE_EQ(m->gpus[2].faults.perf_factor, 0.7);
  EXPECT_TRUE(m->gpus[3].faults.power_cap);
  EXPECT_TRUE(m->gpus[3].faults.off_bus);
  EXPECT_EQ(m->gpus[3].faults.off_bus_after, 2u);
  EXPECT_EQ(m->summary(),
            "2x L40S, 1x H100-SXM (faults: thermal_throttle, ecc_uncorrected=2, perf_factor=0.70), "
            "1x A100-SXM-80GB (faults: power_cap, off_bus_after=2)");

  SimBackend b(std::move(*m), "fp-test");
  b.set_clock(&fixed_now);
  auto gpus = b.list_gpus();
  ASSERT_TRUE(gpus);
  EXPECT_EQ((*gpus)[2].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ((*gpus)[2].memory_mib, 81559u);
  EXPECT_EQ((*gpus)[2].driver_version, "535.104.05");
  EXPECT_EQ((*gpus)[2].compute_capability, "9.0");
  EXPECT_DOUBLE_EQ((*gpus)[2].power_limit_w, 700.0);

  auto hot = b.sample(2);
  ASSERT_TRUE(hot);
  EXPECT_GE(*hot->temperature_c, 88u);
  EXPECT_TRUE(has(hot->clock_events, "sw_thermal_slowdown"));
  EXPECT_TRUE(core::is_throttled(hot->clock_event_bits));
  EXPECT_EQ(hot->ecc_uncorrected, 2u);

  auto capped = b.sample(3);
  ASSERT_TRUE(capped);
  EXPECT_TRUE(has(capped->clock_events, "sw_power_cap"));
  EXPECT_GE(*capped->power_w, 0.99 * 400);
  ASSERT_TRUE(b.sample(3));  // second good sample
  auto lost = b.sample(3);   // then it falls off the bus
  ASSERT_FALSE(lost);
  EXPECT_NE(lost.error().message.find("GPU is lost"), std::string::npos);

  auto healthy = b.sample(0);
  ASSERT_TRUE(healthy);
  EXPECT_FALSE(core::is_throttled(healthy->clock_event_bits));
  EXPECT_LE(*healthy->temperature_c, 85u);
  EXPECT_LE(*healthy->power_w, 350.0 * 1.03);
}

TEST_F(SimTest, MachineFileErrorsNameTheKey) {
  auto unknown_key = parse_machine_toml("[[gpu]]\nmodel = \"L4\"\nmelted = true\n", "m.toml");
  ASSERT_FALSE(unknown_key);
  EXPECT_NE(unknown_key.error().message.find("m.toml: gpu[0]: unknown key 'melted'"), std::string::npos)
      << unknown_key.error().message;
  auto bad_factor = parse_machine_toml("[[gpu]]\nmodel = \"L4\"\nperf_factor = 0\n", "m.toml");
  ASSERT_FALSE(bad_factor);
  EXPECT_NE(bad_factor.error().message.find("perf_factor"), std::string::npos);
  auto bad_bool = parse_machine_toml("[[gpu]]\nmodel = \"L4\"\noff_bus = 1\n", "m.toml");
  ASSERT_FALSE(bad_bool);
  EXPECT_NE(bad_bool.error().message.find("off_bus must be true or false"), std::string::npos);
  auto no_model = parse_machine_toml("[[gpu]]\ncount = 2\n", "m.toml");
  ASSERT_FALSE(no_model);
  EXPECT_NE(no_model.error().message.find("gpu[0].model is required"), std::string::npos);
  auto none = parse_machine_toml("driver_version = \"1\"\n", "m.toml");
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("no [[gpu]]"), std::string::npos);
  auto syntax = parse_machine_toml("[[gpu]\n", "m.toml");
  ASSERT_FALSE(syntax);
  EXPECT_NE(syntax.error().message.find("not valid TOML"), std::string::npos);
  auto top = parse_machine_toml("gpus = 2\n[[gpu]]\nmodel = \"L4\"\n", "m.toml");
  ASSERT_FALSE(top);
  EXPECT_NE(top.error().message.find("unknown key 'gpus'"), std::string::npos);
}

TEST_F(SimTest, UuidsAreStablePerSeedAndDistinct) {
  SimBackend a(*parse_spec("L4:2"), "seed-1");
  SimBackend again(*parse_spec("L4:2"), "seed-1");
  SimBackend other(*parse_spec("L4:2"), "seed-2");
  EXPECT_EQ(a.uuid(0), again.uuid(0));
  EXPECT_NE(a.uuid(0), a.uuid(1));
  EXPECT_NE(a.uuid(0), other.uuid(0));
  EXPECT_EQ(a.uuid(0).size(), 40u);  // "GPU-" + 8-4-4-4-12
  EXPECT_EQ(a.uuid(0).rfind("GPU-", 0), 0u);
  EXPECT_TRUE(a.simulated());
}

TEST_F(SimTest, GeForceReportsNoEcc) {
  SimBackend b(*parse_spec("RTX-4090:1"), "s");
  auto s = b.sample(0);
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->ecc_corrected.has_value());
  EXPECT_FALSE(s->ecc_uncorrected.has_value());
  auto j = s->to_json();
  EXPECT_TRUE(j["ecc_uncorrected"].is_null());
}

TEST_F(SimTest, TelemetryVariesButStaysPlausible) {
  SimBackend b(*parse_spec("L40S:1"), "s");
  std::set<unsigned> temps;
  for (int i = 0; i < 50; ++i) {
    static std::int64_t t;
    t = 1'796'000'000'000 + i * 37'000;
    b.set_clock(+[] { return t; });
    auto s = b.sample(0);
    ASSERT_TRUE(s);
    EXPECT_LE(*s->util_gpu_pct, 100u);
    EXPECT_LE(s->memory_used_mib, 46068u);
    EXPECT_GE(*s->temperature_c, 25u);
    EXPECT_LE(*s->temperature_c, 85u);
    temps.insert(*s->temperature_c);
  }
  EXPECT_GT(temps.size(), 5u);
}

TEST(ClockEvents, DecodesKnownAndUnknownBits) {
  using core::clock_event_names;
  using core::is_throttled;
  namespace clock_event = core::clock_event;
  EXPECT_TRUE(clock_event_names(0).empty());
  auto names = clock_event_names(clock_event::sw_power_cap | clock_event::hw_thermal_slowdown | 0x4000);
  ASSERT_EQ(names.size(), 3u);
  EXPECT_EQ(names[0], "sw_power_cap");
  EXPECT_EQ(names[1], "hw_thermal_slowdown");
  EXPECT_EQ(names[2], "unknown_0x4000");
  EXPECT_FALSE(is_throttled(clock_event::gpu_idle | clock_event::applications_clocks_setting));
  EXPECT_TRUE(is_throttled(clock_event::hw_power_brake_slowdown));
}

}  // namespace
}  // namespace gpunex::gpu::sim

// The simulator knows every model of the built-in catalog, under its NVML name, and the NVML
// memory total a simulated GPU reports is near the marketed size.
TEST(SimCatalog, FollowsTheBuiltinCatalog) {
  const auto& builtin = gpunex::core::builtin_catalog();
  ASSERT_EQ(gpunex::gpu::sim::catalog().size(), builtin.size());
  for (const auto& m : builtin) {
    const auto* e = gpunex::gpu::sim::find_model(m.id);
    ASSERT_NE(e, nullptr) << m.id;
    EXPECT_EQ(e->nvml_name, m.nvml_name_pattern) << m.id;
    EXPECT_GT(e->memory_mib, static_cast<unsigned>(m.vram_gib * 1024 * 0.9)) << m.id;
    EXPECT_LE(e->memory_mib, static_cast<unsigned>(m.vram_gib * 1024 * 1.03)) << m.id;
  }
}
