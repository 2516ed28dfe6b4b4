// Parsing of agent messages: the agent's own output is accepted; every bad field is named.
#include <gtest/gtest.h>

#include "server/fleet/agent_protocol.hpp"
#include "util/time.hpp"

namespace gpunex::server {
namespace {

nlohmann::json good_register() {
  return nlohmann::json::parse(R"({
    "protocol_version": 1, "agent_version": "0.1.0", "machine_fingerprint": "mfp_abcdefghijklmnop",
    "simulated": true,
    "host": {"hostname": "h1", "cpu_model": "EPYC", "cpu_cores": 32, "ram_mib": 257000, "disk_free_mib": 900000,
             "os": "Ubuntu 22.04", "kernel": "6.5.0", "docker_version": null},
    "gpus": [{"index": 0, "uuid": "GPU-1", "name": "NVIDIA L40S", "model": "L40S", "serial": null,
              "memory_mib": 46068, "driver_version": "550.54.15", "cuda_version": "12.4",
              "pci_bus_id": "00000000:17:00.0", "pcie_gen_current": 4, "pcie_gen_max": 4,
              "pcie_width_current": 16, "pcie_width_max": 16, "power_limit_w": 350.0,
              "compute_capability": "8.9"}]
  })");
}

nlohmann::json good_heartbeat() {
  return nlohmann::json::parse(R"({
    "protocol_version": 1, "machine_id": "mch_1", "seq": 7, "sent_at": "2026-12-02T10:00:00Z",
    "telemetry": [
      {"index": 0, "uuid": "GPU-1", "at": "2026-12-02T10:00:00Z", "memory_used_mib": 100, "temperature_c": 60,
       "power_w": 200.5, "power_limit_w": 350.0, "util_gpu_pct": 90, "util_mem_pct": 40, "sm_clock_mhz": 2400,
       "mem_clock_mhz": 9001, "clock_events": ["sw_thermal_slowdown"], "ecc_corrected": 0, "ecc_uncorrected": null},
      {"index": 1, "uuid": "GPU-2", "at": "2026-12-02T10:00:00Z", "error": "GPU is lost"}],
    "jobs": [],
    "events": [{"type": "gpu_lost", "uuid": "GPU-2", "at": "2026-12-02T10:00:00Z", "message": "GPU is lost"}]
  })");
}

std::string field_of(const nlohmann::json& body, bool heartbeat) {
  if (heartbeat) {
    auto r = parse_heartbeat_request(body);
    return r ? "<ok>" : r.error().field.value_or("<none>");
  }
  auto r = parse_register_request(body);
  return r ? "<ok>" : r.error().field.value_or("<none>");
}

TEST(AgentProtocol, AcceptsWellFormedMessages) {
  auto reg = parse_register_request(good_register());
  ASSERT_TRUE(reg) << reg.error().message;
  EXPECT_EQ(reg->gpus.at(0).memory_mib, 46068);
  EXPECT_EQ(reg->host.cpu_cores, 32);
  EXPECT_TRUE(reg->simulated);
  auto hb = parse_heartbeat_request(good_heartbeat());
  ASSERT_TRUE(hb) << hb.error().message;
  EXPECT_EQ(hb->seq, 7);
  ASSERT_EQ(hb->telemetry.size(), 2u);
  EXPECT_EQ(hb->telemetry[0].temperature_c, 60);
  EXPECT_FALSE(hb->telemetry[0].ecc_uncorrected.has_value());
  EXPECT_EQ(hb->telemetry[1].error, "GPU is lost");
  EXPECT_EQ(hb->events.at(0).type, "gpu_lost");
  EXPECT_TRUE(is_throttle_event(hb->telemetry[0].clock_events[0]));
  EXPECT_FALSE(is_throttle_event("gpu_idle"));
}

TEST(AgentProtocol, EveryBadRegisterFieldIsNamed) {
  struct Case {
    const char* pointer;
    nlohmann::json value;
    const char* field;
  };
  const Case cases[] = {
      {"/protocol_version", 2, "protocol_version"},
      {"/machine_fingerprint", "short", "machine_fingerprint"},
      {"/simulated", "yes", "simulated"},
      {"/host/cpu_cores", -1, "host.cpu_cores"},
      {"/host/ram_mib", "lots", "host.ram_mib"},
      {"/gpus/0/memory_mib", 0, "gpus[0].memory_mib"},
      {"/gpus/0/uuid", "", "gpus[0].uuid"},
      {"/gpus/0/power_limit_w", -5, "gpus[0].power_limit_w"},
      {"/gpus/0/index", 99, "gpus[0].index"},
      {"/gpus/0/surprise", 1, "gpus[0].surprise"},
      {"/extra", true, "extra"},
  };
  for (const Case& c : cases) {
    auto body = good_register();
    body[nlohmann::json::json_pointer(c.pointer)] = c.value;
    EXPECT_EQ(field_of(body, false), c.field) << c.pointer;
  }
  auto twice = good_register();
  twice["gpus"].push_back(twice["gpus"][0]);
  twice["gpus"][1]["index"] = 1;
  EXPECT_EQ(field_of(twice, false), "gpus[1].uuid");
  auto no_host = good_register();
  no_host.erase("host");
  EXPECT_EQ(field_of(no_host, false), "host");
}

TEST(AgentProtocol, EveryBadHeartbeatFieldIsNamed) {
  struct Case {
    const char* pointer;
    nlohmann::json value;
    const char* field;
  };
  const Case cases[] = {
      {"/seq", 0, "seq"},
      {"/seq", "7", "seq"},
      {"/machine_id", "", "machine_id"},
      {"/sent_at", "yesterday", "sent_at"},
      {"/telemetry/0/temperature_c", 500, "telemetry[0].temperature_c"},
      {"/telemetry/0/util_gpu_pct", 101, "telemetry[0].util_gpu_pct"},
      {"/telemetry/0/power_w", -1, "telemetry[0].power_w"},
      {"/telemetry/0/at", "not a time", "telemetry[0].at"},
      {"/telemetry/0/clock_events/0", 5, "telemetry[0].clock_events[0]"},
      {"/telemetry/0/bogus", 1, "telemetry[0].bogus"},
      {"/telemetry/1/memory_used_mib", 5, "telemetry[1].memory_used_mib"},  // error samples carry no readings
      {"/events/0/type", "exploded", "events[0].type"},
      {"/jobs", "none", "jobs"},
  };
  for (const Case& c : cases) {
    auto body = good_heartbeat();
    body[nlohmann::json::json_pointer(c.pointer)] = c.value;
    EXPECT_EQ(field_of(body, true), c.field) << c.pointer;
  }
  auto missing = good_heartbeat();
  missing["telemetry"][0].erase("memory_used_mib");
  EXPECT_EQ(field_of(missing, true), "telemetry[0].memory_used_mib");
}

// The stored sample text is written directly; it must stay what nlohmann::json writes.
TEST(AgentProtocol, SampleTextIsTheJsonDump) {
  auto hb = parse_heartbeat_request(good_heartbeat());
  ASSERT_TRUE(hb) << hb.error().message;
  std::vector<TelemetrySample> samples = hb->telemetry;
  TelemetrySample bare;  // every reading absent
  bare.at_ms = 1'796'205'600'123;
  samples.push_back(bare);
  TelemetrySample odd = hb->telemetry[0];
  odd.power_w = 0.1;
  odd.power_limit_w = 1e-7;
  odd.clock_events = {"quote\"back\\slash", "tab\t", "naïve"};
  odd.error = std::nullopt;
  samples.push_back(odd);
  TelemetrySample failed = hb->telemetry[1];
  failed.error = "line\nbreak \"quoted\" \x01";
  samples.push_back(failed);
  for (const auto& s : samples) EXPECT_EQ(s.to_json_text(), s.to_json().dump());
}

TEST(AgentProtocol, Rfc3339Text) {
  EXPECT_EQ(util::rfc3339(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(util::rfc3339(1'796'205'600'000), "2026-12-02T10:00:00Z");
  EXPECT_EQ(util::rfc3339(1'796'205'600'007), "2026-12-02T10:00:00.007Z");
  EXPECT_EQ(util::rfc3339(-1), "1969-12-31T23:59:59.999Z");
  EXPECT_EQ(util::rfc3339(951'782'400'000), "2000-02-29T00:00:00Z");
  for (std::int64_t ms : {std::int64_t{0}, std::int64_t{1'796'205'600'123}, std::int64_t{-86'400'001}}) {
    EXPECT_EQ(util::parse_rfc3339(util::rfc3339(ms)), ms);
  }
}

}  // namespace
}  // namespace gpunex::server
