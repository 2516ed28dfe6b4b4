// The heartbeat read without a JSON tree (read_heartbeat_direct) against the tree reader
// (parse_heartbeat_request of core::parse_json_object), on heartbeats as agents send them and on thousands
// of bodies each changed in one place: the direct reader takes every agent's heartbeat, never takes a body
// the tree reader refuses, reads what it takes alike, and read_heartbeat_request answers exactly what the
// tree reader answers (the same request, or the same error with the same fields).

#include <gtest/gtest.h>

#include <cstdint>
#include <iterator>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/json_reader.hpp"
#include "protocol/heartbeat.hpp"

namespace gpunex::protocol {
namespace {

using json = nlohmann::json;

constexpr std::int64_t kAt = 1'796'205'600'000;  // 2026-12-02T10:00:00Z: only read, never compared with a clock

core::Result<HeartbeatRequest> tree_read(std::string_view body) {
  auto tree = core::parse_json_object(body);
  if (!tree) return std::move(tree).error();
  return parse_heartbeat_request(*tree);
}

//! Everything an answer says, to compare two of them.
std::string describe(const core::Result<HeartbeatRequest>& r) {
  if (r) return "request " + r->to_json().dump();
  const auto& e = r.error();
  std::ostringstream out;
  out << "error " << core::code_name(e.code) << " [" << e.code_text() << "] " << e.field.value_or("-") << ": "
      << e.message;
  for (const auto& f : e.all_fields()) out << "\n  " << f.field << " " << f.code << " " << f.message;
  return out.str();
}

//! A heartbeat as an agent builds it: 0 to 8 GPUs (some without an answer), readings a GPU may not have
//! left out, events now and then.
HeartbeatRequest agent_heartbeat(std::mt19937& rng) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  HeartbeatRequest hb;
  hb.machine_id = "mch_" + std::to_string(rng());
  hb.seq = 1 + pick(1'000'000);
  if (pick(4) != 0) hb.sent_at_ms = kAt + pick(100'000);
  const int gpus = pick(9);
  for (int g = 0; g < gpus; ++g) {
    TelemetrySample s;
    s.index = g;
    s.uuid = "GPU-" + std::to_string(rng()) + "-" + std::to_string(g);
    s.at_ms = kAt + pick(100'000);
    if (pick(6) == 0) {
      s.error = pick(2) == 0 ? "nvmlDeviceGetTemperature failed: GPU is lost" : "";
    } else {
      s.memory_used_mib = pick(80'000);
      if (pick(5) != 0) s.temperature_c = pick(100);
      if (pick(5) != 0) s.power_w = pick(70'000) / 100.0;
      if (pick(5) != 0) s.power_limit_w = pick(2) == 0 ? 350.0 : 699.5;
      if (pick(5) != 0) s.util_gpu_pct = pick(101);
      if (pick(5) != 0) s.util_mem_pct = pick(101);
      if (pick(5) != 0) s.sm_clock_mhz = pick(3000);
      if (pick(5) != 0) s.mem_clock_mhz = pick(12000);
      for (int c = pick(3); c > 0; --c) s.clock_events.push_back(c == 1 ? "sw_thermal_slowdown" : "gpu_idle");
      if (pick(5) != 0) s.ecc_corrected = pick(10);
      if (pick(5) != 0) s.ecc_uncorrected = 0;
    }
    hb.telemetry.push_back(std::move(s));
  }
  if (gpus > 0 && pick(4) == 0) {
    for (int e = 1 + pick(2); e > 0; --e) {
      GpuEvent ev;
      ev.type = std::string(pick(2) == 0 ? kGpuLost : kGpuRecovered);
      ev.uuid = hb.telemetry[0].uuid;
      ev.at_ms = kAt;
      if (pick(2) == 0) ev.message = "GPU is lost";
      hb.events.push_back(std::move(ev));
    }
  }
  return hb;
}

//! The values a field is set to in the changed bodies: every type, and the edges of every bound.
std::vector<json> odd_values() {
  std::vector<json> v = {nullptr,
                         true,
                         false,
                         "",
                         "x",
                         std::string(32, 'a'),
                         std::string(33, 'a'),
                         std::string(64, 'a'),
                         std::string(65, 'a'),
                         std::string(96, 'u'),
                         std::string(97, 'u'),
                         std::string(1000, 'e'),
                         std::string(1001, 'e'),
                         "2026-12-02T10:00:00Z",
                         "2026-12-02T10:00:00.123+02:00",
                         "2026-13-02T10:00:00Z",
                         "yesterday",
                         "gpu_lost",
                         "gpu_recovered",
                         "gpu_found",
                         0,
                         -1,
                         1,
                         2,
                         63,
                         64,
                         100,
                         101,
                         200,
                         201,
                         1000,
                         1001,
                         10000,
                         10001,
                         100000,
                         100001,
                         16 * 1024 * 1024,
                         16 * 1024 * 1024 + 1,
                         std::int64_t{1} << 50,
                         (std::int64_t{1} << 50) + 1,
                         std::int64_t{1} << 53,
                         (std::int64_t{1} << 53) + 1,
                         std::numeric_limits<std::int64_t>::max(),
                         std::numeric_limits<std::int64_t>::min(),
                         std::numeric_limits<std::uint64_t>::max(),
                         1.0,
                         0.5,
                         -0.0,
                         350.5,
                         10000.0,
                         10000.5,
                         1e300,
                         json::object(),
                         json::object({{"a", 1}}),
                         json::array(),
                         json::array({"sw_thermal_slowdown"}),
                         json::array({1}),
                         json::array({json::object()})};
  return v;
}

//! The JSON pointer of every value in `j` (the root's "" included).
void pointers(const json& j, const json::json_pointer& at, std::vector<json::json_pointer>& out) {
  out.push_back(at);
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) pointers(v, at / k, out);
  } else if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i) pointers(j[i], at / i, out);
  }
}

//! `body` changed in one place: a value replaced, a key taken out or added, a list grown, or its text
//! broken (a key given twice, a NUL, a cut, something after it).
std::string changed(const json& body, std::mt19937& rng, const std::vector<json>& values) {
  auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  json j = body;
  std::vector<json::json_pointer> all;
  pointers(j, json::json_pointer(), all);
  const auto at = all[pick(all.size())];
  switch (pick(9)) {
    case 0:
    case 1:
    case 2:
      if (at.empty()) return values[pick(values.size())].dump();
      j[at] = values[pick(values.size())];
      break;
    case 3:
      if (!at.empty() && j[at.parent_pointer()].is_object()) {
        j[at.parent_pointer()].erase(at.back());
      } else if (!at.empty()) {
        j[at.parent_pointer()].erase(std::stoul(at.back()));
      }
      break;
    case 4: {  // a key added: unknown, or one that another object takes (a reading beside an error)
      static const std::vector<std::string> keys = {"extra",   "uuid ",        "memory_used_mib", "temperature_c",
                                                    "power_w", "clock_events", "error",           "message",
                                                    "sent_at", "events",       "index",           "type"};
      if (j[at].is_object()) j[at][keys[pick(keys.size())]] = values[pick(values.size())];
      break;
    }
    case 5:
      if (j[at].is_array()) {
        const json item = j[at].empty() ? values[pick(values.size())] : j[at][0];
        for (std::size_t n = 1 + (pick(2) == 0 ? 0 : 256); n > 0; --n) j[at].push_back(item);
      }
      break;
    case 6: {  // a key of an object given twice, with its own value or another
      if (!j[at].is_object() || j[at].empty()) break;
      auto it = std::next(j[at].begin(), static_cast<std::ptrdiff_t>(pick(j[at].size())));
      const std::string key = it.key();
      j[at]["zz_twice"] = pick(2) == 0 ? it.value() : values[pick(values.size())];
      std::string text = j.dump();
      return text.replace(text.find("\"zz_twice\""), 10, "\"" + key + "\"");
    }
    case 7: {  // a NUL inside a string (escaped, as JSON carries it)
      std::string text = j.dump();
      const auto quote = text.find('"', pick(text.size()));
      if (quote == std::string::npos) return text;
      return text.substr(0, quote + 1) + "\\u0000" + text.substr(quote + 1);
    }
    default: {
      std::string text = j.dump();
      if (pick(2) == 0) return text.substr(0, pick(text.size()));
      return text + (pick(2) == 0 ? " {}" : " ");
    }
  }
  return j.dump();
}

TEST(HeartbeatReader, TakesEveryHeartbeatAsAgentsSendIt) {
  std::mt19937 rng(20261206);
  for (int i = 0; i < 2000; ++i) {
    const HeartbeatRequest sent = agent_heartbeat(rng);
    const std::string body = sent.to_json().dump(i % 3 == 0 ? 2 : -1);  // indented too: whitespace anywhere
    const auto direct = read_heartbeat_direct(body);
    ASSERT_TRUE(direct) << body;
    const auto tree = tree_read(body);
    ASSERT_TRUE(tree) << describe(tree);
    EXPECT_EQ(*direct, *tree) << body;
    EXPECT_EQ(*direct, sent) << body;
  }
}

TEST(HeartbeatReader, NeverTakesWhatTheTreeReaderRefusesAndAnswersAsItDoes) {
  std::mt19937 rng(4242);
  const auto values = odd_values();
  int refused = 0;
  int taken_directly = 0;
  int taken_by_tree_only = 0;
  for (int i = 0; i < 20000; ++i) {
    const std::string body = changed(agent_heartbeat(rng).to_json(), rng, values);
    const auto tree = tree_read(body);
    const auto direct = read_heartbeat_direct(body);
    if (direct) {
      ASSERT_TRUE(tree) << "taken directly, refused by the tree reader: " << describe(tree) << "\n" << body;
      ASSERT_EQ(*direct, *tree) << body;
      ++taken_directly;
    } else if (tree) {
      ++taken_by_tree_only;
    } else {
      ++refused;
    }
    ASSERT_EQ(describe(read_heartbeat_request(body)), describe(tree)) << body;
  }
  // Each outcome happened often: the changes reach every branch of the comparison. (The seeded
  // generator makes the same bodies on every run: about 10,900 / 9,000 / 90 of them.)
  RecordProperty("refused", refused);
  RecordProperty("taken_directly", taken_directly);
  RecordProperty("taken_by_tree_only", taken_by_tree_only);
  EXPECT_GT(refused, 5000);
  EXPECT_GT(taken_directly, 2000);
  EXPECT_GT(taken_by_tree_only, 50);  // a jobs list that is not empty: the direct reader leaves it to the tree
}

TEST(HeartbeatReader, TakesTheEdgesOfEveryBoundAsTheTreeReaderDoes) {
  const auto base = json::parse(R"({
    "protocol_version": 1, "machine_id": "m", "seq": 1, "sent_at": null, "jobs": [], "events": null,
    "telemetry": [
      {"index": 63, "uuid": "u", "at": "2026-12-02T10:00:00Z", "memory_used_mib": 16777216, "temperature_c": 200,
       "power_w": 10000, "power_limit_w": 0, "util_gpu_pct": 100, "util_mem_pct": 0, "sm_clock_mhz": 100000,
       "mem_clock_mhz": null, "clock_events": [], "ecc_corrected": 1125899906842624, "ecc_uncorrected": null},
      {"index": 0, "uuid": "v", "at": "2026-12-02T10:00:00Z", "error": ""},
      {"index": 1, "uuid": "w", "at": "2026-12-02T10:00:00Z", "error": null, "memory_used_mib": 0,
       "clock_events": []}]
  })");
  const auto direct = read_heartbeat_direct(base.dump());
  ASSERT_TRUE(direct);
  const auto tree = tree_read(base.dump());
  ASSERT_TRUE(tree) << describe(tree);
  EXPECT_EQ(*direct, *tree);
  EXPECT_EQ(direct->telemetry[0].power_w, 10000.0);
  EXPECT_EQ(direct->telemetry[1].error, "");
  EXPECT_FALSE(direct->telemetry[2].error);

  // One past each edge: refused by both, and the answer names the field.
  const std::vector<std::pair<std::string, json>> past = {{"/telemetry/0/index", 64},
                                                          {"/telemetry/0/memory_used_mib", 16777217},
                                                          {"/telemetry/0/temperature_c", 201},
                                                          {"/telemetry/0/power_w", 10000.5},
                                                          {"/telemetry/0/util_gpu_pct", -1},
                                                          {"/telemetry/0/ecc_corrected", 1125899906842625},
                                                          {"/seq", 0},
                                                          {"/protocol_version", 2},
                                                          {"/machine_id", std::string(65, 'm')},
                                                          {"/telemetry/1/error", std::string(1001, 'e')},
                                                          {"/telemetry/0/sm_clock_mhz", 1.0},
                                                          {"/sent_at", ""}};
  for (const auto& [pointer, value] : past) {
    json j = base;
    j[json::json_pointer(pointer)] = value;
    EXPECT_FALSE(read_heartbeat_direct(j.dump())) << pointer;
    const auto answer = read_heartbeat_request(j.dump());
    ASSERT_FALSE(answer) << pointer;
    std::string field = pointer.substr(1);
    for (char& c : field) c = c == '/' ? '.' : c;
    if (field.starts_with("telemetry.")) field = "telemetry[" + field.substr(10, 1) + "]" + field.substr(11);
    EXPECT_EQ(answer.error().field, field) << describe(answer);
  }
}

}  // namespace
}  // namespace gpunex::protocol
