// The agent <-> server messages: every bad field is named, and what one side writes the other
// parses back unchanged.
#include <gtest/gtest.h>

#include "core/rfc3339.hpp"
#include "protocol/challenge.hpp"
#include "protocol/heartbeat.hpp"
#include "protocol/register.hpp"
#include "protocol/rentals.hpp"

namespace gpunex::protocol {
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
      {"/host/public_host", "gpu 1.example.net", "host.public_host"},
      {"/host/public_host", "-gpu1.example.net", "host.public_host"},
      {"/host/public_host", "300.1.2.3", "host.public_host"},
      {"/host/public_host", "http://gpu1", "host.public_host"},
      {"/host/public_host", "", "host.public_host"},
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

// Security (issue #19): what an agent sends is shown to operators and customers; NUL, ESC (terminal
// escapes in a CLI listing) and U+202E (text that reads backwards) are refused, the field named.
TEST(AgentProtocol, AgentStringsRefuseControlCharactersAndBidiOverrides) {
  const std::string evil[] = {std::string("h\0st", 5), "h\x1b]0;pwned\x07", "L40S\xe2\x80\xae"};
  const std::pair<const char*, const char*> fields[] = {{"/host/hostname", "host.hostname"},
                                                         {"/agent_version", "agent_version"},
                                                         {"/gpus/0/name", "gpus[0].name"}};
  for (const auto& [pointer, field] : fields) {
    for (const auto& value : evil) {
      auto body = good_register();
      body[nlohmann::json::json_pointer(pointer)] = value;
      EXPECT_EQ(field_of(body, false), field) << pointer;
    }
  }
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
  for (const auto& s : samples) EXPECT_EQ(s.readings_text(), s.readings_json().dump());
}

TEST(AgentProtocol, Rfc3339Text) {
  EXPECT_EQ(core::format_rfc3339_ms(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(core::format_rfc3339_ms(1'796'205'600'000), "2026-12-02T10:00:00Z");
  EXPECT_EQ(core::format_rfc3339_ms(1'796'205'600'007), "2026-12-02T10:00:00.007Z");
  EXPECT_EQ(core::format_rfc3339_ms(-1), "1969-12-31T23:59:59.999Z");
  EXPECT_EQ(core::format_rfc3339_ms(951'782'400'000), "2000-02-29T00:00:00Z");
  for (std::int64_t ms : {std::int64_t{0}, std::int64_t{1'796'205'600'123}, std::int64_t{-86'400'001}}) {
    EXPECT_EQ(core::parse_rfc3339_ms(core::format_rfc3339_ms(ms)), ms);
  }
}


// Round trips: what one side writes, the other parses back as the same message.

RegisterRequest sample_register() {
  RegisterRequest r;
  r.agent_version = "0.1.0";
  r.machine_fingerprint = "mfp_abcdefghijklmnop";
  r.machine_id = "mch_1";
  r.host = {"h1",     "AMD EPYC 9654",   192, 1'031'000, 900'000, "Ubuntu 22.04.4 LTS", "6.5.0-35-generic",
            "27.3.1", "gpu1.example.net"};
  GpuInfo g;
  g.index = 0;
  g.uuid = "GPU-11111111-2222-3333-4444-555555555555";
  g.name = "NVIDIA H100 80GB HBM3";
  g.model = "H100-SXM";
  g.serial = "1652922001234";
  g.memory_mib = 81559;
  g.driver_version = "550.54.15";
  g.cuda_version = "12.4";
  g.pci_bus_id = "00000000:17:00.0";
  g.pcie_gen_current = 4;
  g.pcie_gen_max = 5;
  g.pcie_width_current = 8;
  g.pcie_width_max = 16;
  g.power_limit_w = 700.5;
  g.compute_capability = "9.0";
  r.gpus.push_back(g);
  GpuInfo bare;  // a board that says little: no model, serial, link facts or compute capability
  bare.index = 1;
  bare.uuid = "GPU-2";
  bare.name = "NVIDIA GeForce RTX 4090";
  bare.memory_mib = 24564;
  bare.driver_version = "550.54.15";
  r.gpus.push_back(bare);
  r.simulated = true;
  return r;
}

TEST(ProtocolRoundTrip, RegisterRequest) {
  const RegisterRequest sent = sample_register();
  auto got = parse_register_request(sent.to_json());
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(*got, sent);
  RegisterRequest first = sent;  // a first registration names no machine and may have no GPUs or Docker
  first.machine_id.reset();
  first.gpus.clear();
  first.host.docker_version.reset();
  first.host.public_host.reset();  // and no public host: the field is left out, as a server before it expects
  EXPECT_FALSE(first.to_json().contains("machine_id"));
  EXPECT_FALSE(first.to_json()["host"].contains("public_host"));
  auto again = parse_register_request(first.to_json());
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(*again, first);
}

TEST(ProtocolRoundTrip, RegisterReply) {
  const RegisterReply sent{"mch_1", 15u};
  auto got = parse_register_reply(sent.to_json());
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(*got, sent);
  auto no_interval = parse_register_reply(RegisterReply{"mch_2", std::nullopt}.to_json());
  ASSERT_TRUE(no_interval);
  EXPECT_EQ(*no_interval, (RegisterReply{"mch_2", std::nullopt}));
  EXPECT_FALSE(parse_register_reply(nlohmann::json{{"heartbeat_interval_s", 15}}));
}

TEST(ProtocolRoundTrip, HeartbeatRequest) {
  HeartbeatRequest sent;
  sent.machine_id = "mch_1";
  sent.seq = 42;
  sent.sent_at_ms = 1'796'205'600'123;
  TelemetrySample full;
  full.index = 0;
  full.uuid = "GPU-1";
  full.at_ms = 1'796'205'600'000;
  full.memory_used_mib = 1234;
  full.temperature_c = 71;
  full.power_w = 612.345;
  full.power_limit_w = 700.0;
  full.util_gpu_pct = 97;
  full.util_mem_pct = 55;
  full.sm_clock_mhz = 1755;
  full.mem_clock_mhz = 2619;
  full.clock_events = {"sw_power_cap", "sw_thermal_slowdown"};
  full.ecc_corrected = 7;
  full.ecc_uncorrected = 1;
  TelemetrySample sparse;  // a GeForce: no ECC, no power reading
  sparse.index = 1;
  sparse.uuid = "GPU-2";
  sparse.at_ms = 1'796'205'600'000;
  sparse.memory_used_mib = 0;
  TelemetrySample lost;
  lost.index = 2;
  lost.uuid = "GPU-3";
  lost.at_ms = 1'796'205'600'001;
  lost.error = "nvmlDeviceGetUUID failed: GPU is lost";
  sent.telemetry = {full, sparse, lost};
  sent.events = {GpuEvent{std::string(kGpuLost), "GPU-3", 1'796'205'600'001, lost.error},
                 GpuEvent{std::string(kGpuRecovered), "GPU-4", 1'796'205'600'002, std::nullopt}};
  auto got = parse_heartbeat_request(sent.to_json());
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(*got, sent);

  HeartbeatRequest quiet = sent;  // no events: the field is left out
  quiet.events.clear();
  quiet.sent_at_ms.reset();
  EXPECT_FALSE(quiet.to_json().contains("events"));
  auto again = parse_heartbeat_request(quiet.to_json());
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(*again, quiet);
}

TEST(ProtocolRoundTrip, HeartbeatReplyAndCommands) {
  HeartbeatReply sent;
  ChallengeSpec gemm;
  gemm.id = "chl_1";
  gemm.kind = std::string(kGemmChallenge);
  gemm.gpu_uuid = "GPU-1";
  gemm.allowed_s = 1.5;
  gemm.seed_a = 0xfedcba9876543210ULL;
  gemm.seed_b = 7;
  gemm.n = 128;
  sent.commands = {Command{std::string(kRunBenchmark), "run_1", "first_registration", {}},
                   Command{std::string(kSpotCheck), std::nullopt, std::nullopt, {gemm}},
                   Command{"start_job", std::nullopt, std::nullopt, {}}};
  sent.heartbeat_interval_s = 15;
  EXPECT_EQ(parse_heartbeat_reply(sent.to_json()), sent);
  HeartbeatReply dup;
  dup.duplicate = true;
  EXPECT_EQ(parse_heartbeat_reply(dup.to_json()), dup);
  // What an agent cannot read is left empty rather than refused.
  const auto odd = parse_heartbeat_reply(nlohmann::json{{"commands", {5, {{"type", 7}}}}, {"heartbeat_interval_s", -1}});
  ASSERT_EQ(odd.commands.size(), 2u);
  EXPECT_EQ(odd.commands[0].type, "");
  EXPECT_EQ(odd.commands[1].type, "");
  EXPECT_FALSE(odd.heartbeat_interval_s);
  EXPECT_EQ(parse_heartbeat_reply(nlohmann::json::array()), HeartbeatReply{});
}

// The fields the server keeps beside its columns, and the host it stores, are the wire forms.
TEST(ProtocolRoundTrip, StoredFormsAreTheWireForms) {
  const RegisterRequest r = sample_register();
  nlohmann::json facts = r.gpus[0].facts();
  for (const char* key : {"uuid", "name", "model", "memory_mib"}) EXPECT_FALSE(facts.contains(key)) << key;
  facts.update({{"uuid", r.gpus[0].uuid}, {"name", r.gpus[0].name}, {"model", "H100-SXM"}, {"memory_mib", 81559}});
  EXPECT_EQ(facts, r.gpus[0].to_json());
  EXPECT_EQ(r.to_json()["host"], r.host.to_json());
}

}  // namespace
}  // namespace gpunex::protocol

// ---- rentals (protocol/rentals.hpp) ----


namespace gpunex::protocol {
namespace {

AgentRentals sample_rentals() {
  AgentRentals a;
  core::rental::Spec spec;
  spec.image = "ubuntu:22.04";
  spec.command = {"sleep", "60"};
  spec.env = {{"A", "1"}};
  spec.ports = {8888};
  spec.max_hours = 1.5;
  a.rentals.push_back(AssignedRental{"rnt_1", core::rental::State::requested, {"GPU-a", "GPU-b"}, spec});
  a.rentals.push_back(AssignedRental{"rnt_2", core::rental::State::stopping, {"GPU-c"}, spec});
  a.version = rentals_version(a.rentals);
  return a;
}

TEST(ProtocolRoundTrip, AgentRentals) {
  const auto sent = sample_rentals();
  auto got = parse_agent_rentals(sent.to_json());
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(*got, sent);
  // The version changes with a rental's state, and only with the list.
  auto moved = sent;
  moved.rentals[0].state = core::rental::State::running;
  EXPECT_NE(rentals_version(moved.rentals), sent.version);
  moved.rentals[0].state = core::rental::State::requested;
  EXPECT_EQ(rentals_version(moved.rentals), sent.version);
  EXPECT_NE(rentals_version({}), sent.version);
  auto bad = sent.to_json();
  bad["rentals"][1]["state"] = "ended";
  auto refused = parse_agent_rentals(bad);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().field, "rentals[1].state");
}

// The rentals poll's `blocked`: what the agent sends is what the server takes, whatever the error said.
TEST(ProtocolRoundTrip, BlockedIsOneCleanLineTheServerTakes) {
  const std::string engine = "no container engine answers (DOCKER_HOST=unix:///var/run/docker.sock): Couldn't connect";
  EXPECT_EQ(blocked_text(engine), engine);
  EXPECT_EQ(blocked_text("iptables: Permission denied\n(you must be root)\r\n"),
            "iptables: Permission denied (you must be root)");
  EXPECT_EQ(blocked_text("a\xFF"
                         "b\u202Ec"),
            "a b   c")
      << "invalid UTF-8 and a bidi override become spaces";
  EXPECT_EQ(blocked_text("a\xC0\xAF"
                         "b\xED\xA0\x80"
                         "c"),
            "a  b   c")
      << "an overlong form and a surrogate are not characters";
  const std::string long_text(1000, 'x');
  EXPECT_EQ(blocked_text(long_text).size(), kMaxBlockedBytes);
  const auto cut = blocked_text(std::string(kMaxBlockedBytes - 1, 'x') + "\u00e9");  // 2 bytes do not fit
  EXPECT_EQ(cut, std::string(kMaxBlockedBytes - 1, 'x'));
  for (const auto& sent : {engine,
                           std::string("a\xFF"
                                       "b\u202Ec\nd"),
                           long_text}) {
    const auto taken = parse_blocked(blocked_text(sent));
    ASSERT_TRUE(taken) << sent;
    EXPECT_EQ(**taken, blocked_text(sent));
  }
  EXPECT_EQ(*parse_blocked(std::nullopt), std::nullopt);
  EXPECT_EQ(*parse_blocked(""), std::nullopt) << "empty: not blocked";
  for (const std::string& bad : {std::string("two\nlines"), long_text, std::string("\u202Eevil")}) {
    auto refused = parse_blocked(bad);
    ASSERT_FALSE(refused) << bad;
    EXPECT_EQ(refused.error().field, "blocked");
  }
}

TEST(ProtocolRoundTrip, RentalEvents) {
  RentalEventsRequest sent;
  sent.machine_id = "mch_1";
  sent.seq = 42;
  RentalEvent running{"rnt_1", RentalEventType::running, 1'796'000'000'000, std::nullopt, std::nullopt, false,
                      std::nullopt, std::nullopt, {{8888, 40001}}};
  RentalEvent ended{"rnt_1", RentalEventType::ended, 1'796'000'060'000, core::rental::EndReason::container_exited, 137,
                    true, std::nullopt, std::nullopt, {}};
  RentalEvent logs{"rnt_1", RentalEventType::logs, 1'796'000'001'000, std::nullopt, std::nullopt, false,
                   std::nullopt, std::string("hello\n"), {}};
  sent.events = {running, logs, ended};
  auto got = parse_rental_events(sent.to_json());
  ASSERT_TRUE(got) << got.error().message;
  EXPECT_EQ(*got, sent);
  auto bad = sent.to_json();
  bad["events"][2]["reason"] = "bored";
  bad["events"][0]["ports"][0]["host_port"] = 70000;
  auto refused = parse_rental_events(bad);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().field, "events[0].ports[0].host_port");
  auto other = sent.to_json();
  other["protocol_version"] = 99;
  EXPECT_EQ(parse_rental_events(other).error().detail_code, "unsupported_protocol_version");
}

}  // namespace
}  // namespace gpunex::protocol

// ---- benchmark challenges (issue 21) ----

namespace gpunex::protocol {
namespace {

TEST(ChallengeProtocol, SpecsRoundTripAndUnreadableOnesAreLeftOut) {
  ChallengeSpec g{"chl_1", std::string(kGemmChallenge), "GPU-1", 1.75, 0xfedcba9876543210ULL, 7, 8192, 2900, 0, 0, 0};
  ChallengeSpec v{"chl_2", std::string(kVramChallenge), "GPU-1", 2.0, 0, 0, 0, 1, 0x0123456789abcdefULL, 41472, 128};
  nlohmann::json list = nlohmann::json::array({g.to_json(), v.to_json()});
  EXPECT_EQ(list[0]["seed_a"], "fedcba9876543210");  // 64 bits as text: a JSON number holds 53 exactly
  list.push_back({{"id", "chl_3"}, {"kind", "telemetry"}, {"gpu_uuid", "GPU-1"}});       // a kind from later
  list.push_back({{"id", "chl_4"}, {"kind", "gemm"}, {"gpu_uuid", "GPU-1"}, {"n", 64}});  // no seeds
  list.push_back({{"id", "chl_5"},
                  {"kind", "gemm"},
                  {"gpu_uuid", "GPU-1"},
                  {"n", 32768},
                  {"products", 1},
                  {"seed_a", "0000000000000001"},
                  {"seed_b", "0000000000000002"}});  // not exact in FP32
  list.push_back({{"id", "chl_6"},
                  {"kind", "gemm"},
                  {"gpu_uuid", "GPU-1"},
                  {"n", 64},
                  {"seed_a", "0000000000000001"},
                  {"seed_b", "0000000000000002"}});  // no products
  const auto back = parse_challenge_specs(list);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0], g);
  EXPECT_EQ(back[1], v);
  EXPECT_TRUE(parse_challenge_specs(nlohmann::json::object()).empty());
}

TEST(ChallengeProtocol, AnswersRoundTripWithExactlyOnePayload) {
  ChallengeAnswer gemm{kProtocolVersion, "mch_1", "chl_1", std::string(64, 'c'), std::nullopt, false, {}};
  core::challenge::OpenedRow row{300, {1, -2, 3, 16384}, {0xffffffffffffffffULL, 7}, {core::challenge::sha256("x")}};
  ChallengeAnswer opened{kProtocolVersion, "mch_1", "chl_1", std::nullopt, std::vector{row, row}, false, {}};
  ChallengeAnswer filled{kProtocolVersion, "mch_1", "chl_2", std::nullopt, std::nullopt, true, std::nullopt};
  ChallengeAnswer digests{kProtocolVersion,
                          "mch_1",
                          "chl_2",
                          std::nullopt,
                          std::nullopt,
                          false,
                          std::vector<std::string>{std::string(64, 'a'), std::string(64, 'b')}};
  for (const auto& a : {gemm, opened, filled, digests}) {
    auto back = parse_challenge_answer(a.to_json());
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(*back, a);
  }
  auto both = gemm.to_json();
  both["filled"] = true;
  EXPECT_FALSE(parse_challenge_answer(both));
  auto none = filled.to_json();
  none.erase("filled");
  EXPECT_FALSE(parse_challenge_answer(none));
  auto bad = opened.to_json();
  bad["opened"][1]["values"][1] = 2.5;
  auto e = parse_challenge_answer(bad);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().field, "opened");
  for (const auto* key : {"block", "path"}) {
    auto short_hash = opened.to_json();
    short_hash["opened"][0][key][0] = "abc";
    EXPECT_FALSE(parse_challenge_answer(short_hash)) << key;
  }
  auto not_hex = gemm.to_json();
  not_hex["root"] = std::string(64, 'g');
  e = parse_challenge_answer(not_hex);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().field, "root");
  auto too_many = opened.to_json();
  for (int k = 0; k < kMaxOpenedRows; ++k) too_many["opened"].push_back(too_many["opened"][0]);
  EXPECT_FALSE(parse_challenge_answer(too_many));
  auto old = gemm.to_json();
  old["protocol_version"] = kProtocolVersion + 1;
  EXPECT_FALSE(parse_challenge_answer(old));
}

TEST(ChallengeProtocol, RepliesRoundTrip) {
  ChallengeReply pending{"chl_2", "pending", {}, {3, 99, 41000}, 2.0, std::nullopt};
  ChallengeReply rows{"chl_1", "pending", {5, 4000000000ULL}, {}, 60.0, std::nullopt};
  ChallengeReply failed{"chl_1", "late", {}, {}, std::nullopt, std::string("took 3.1 s")};
  EXPECT_EQ(parse_challenge_reply(pending.to_json()), pending);
  EXPECT_EQ(parse_challenge_reply(rows.to_json()), rows);
  EXPECT_EQ(parse_challenge_reply(failed.to_json()), failed);
  EXPECT_EQ(parse_challenge_reply(nlohmann::json::array()), ChallengeReply{});
  EXPECT_EQ(parse_seed(seed_text(0xffffffffffffffffULL)), 0xffffffffffffffffULL);
  EXPECT_FALSE(parse_seed("xyz"));
  EXPECT_FALSE(parse_seed("00000000000000001"));
}

}  // namespace
}  // namespace gpunex::protocol
