#include "protocol/heartbeat.hpp"

#include <charconv>
#include <cmath>

#include "core/json_reader.hpp"
#include "core/rfc3339.hpp"
#include "protocol/fields.hpp"

namespace gpunex::protocol {

using core::Error;
using core::ErrorCode;
using core::ObjectReader;
using detail::kBig;
namespace L = heartbeat_limits;

namespace {

template <class T>
nlohmann::json opt(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

core::Status parse_sample(const nlohmann::json& j, const std::string& path, TelemetrySample& s) {
  ObjectReader r(j, path);
  s.index = r.required_int("index", 0, kMaxGpusPerMachine - 1);
  s.uuid = r.required_string("uuid", 1, L::kUuidMax);
  s.at_ms = detail::time_field(r, "at", true).value_or(0);
  s.error = r.optional_string("error", L::kTextMax);
  if (s.error) std::erase(*s.error, '\0');  // the engine's text, kept as sent but for NULs no store can hold
  if (!s.error) {
    r.describe_when("there is no error");
    s.memory_used_mib = r.required_int("memory_used_mib", 0, L::kMemoryUsedMibMax);
    s.temperature_c = r.optional_int("temperature_c", 0, L::kTemperatureMax);
    s.power_w = detail::optional_number(r, "power_w", 0, L::kPowerMax);
    s.power_limit_w = detail::optional_number(r, "power_limit_w", 0, L::kPowerMax);
    s.util_gpu_pct = r.optional_int("util_gpu_pct", 0, L::kPercentMax);
    s.util_mem_pct = r.optional_int("util_mem_pct", 0, L::kPercentMax);
    s.sm_clock_mhz = r.optional_int("sm_clock_mhz", 0, L::kClockMhzMax);
    s.mem_clock_mhz = r.optional_int("mem_clock_mhz", 0, L::kClockMhzMax);
    const auto* ev = r.required_array("clock_events", 0, L::kClockEventsMax);
    if (r.describing())
      r.describe_field("clock_events",
                       {{"items", {{"type", "string"}, {"minLength", 1}, {"maxLength", L::kClockEventNameMax}}}});
    if (ev != nullptr) {
      for (std::size_t i = 0; i < ev->size(); ++i) {
        const auto& e = (*ev)[i];
        const auto* name = e.get_ptr<const std::string*>();
        if (name == nullptr || name->empty() || name->size() > L::kClockEventNameMax) {
          r.fail(Error::make(ErrorCode::invalid_field, "must be a clock-event name",
                             r.path_of("clock_events") + "[" + std::to_string(i) + "]"));
          break;
        }
        s.clock_events.push_back(*name);
      }
    }
    s.ecc_corrected = r.optional_int("ecc_corrected", 0, kBig);
    s.ecc_uncorrected = r.optional_int("ecc_uncorrected", 0, kBig);
    r.describe_when("");
  }
  return r.finish();
}

core::Status parse_gpu_event(const nlohmann::json& j, const std::string& path, GpuEvent& e) {
  ObjectReader r(j, path);
  e.type = r.required_string("type", 1, L::kEventTypeMax);
  if (r.describing()) r.describe_field("type", {{"enum", {kGpuLost, kGpuRecovered}}});
  if (!r.failed() && e.type != kGpuLost && e.type != kGpuRecovered) {
    r.fail(Error::make(ErrorCode::invalid_field, "must be gpu_lost or gpu_recovered", r.path_of("type")));
  }
  e.uuid = r.required_string("uuid", 1, L::kUuidMax);
  e.at_ms = detail::time_field(r, "at", true).value_or(0);
  e.message = r.optional_string("message", L::kTextMax);
  if (e.message) std::erase(*e.message, '\0');
  return r.finish();
}

constexpr std::size_t kReadingsTextReserve = 384;

void append_key(std::string& out, std::string_view key) {
  out += ",\"";
  out += key;
  out += "\":";
}

void append_number(std::string& out, std::string_view key, const std::optional<std::int64_t>& v) {
  append_key(out, key);
  if (!v) {
    out += "null";
    return;
  }
  char buf[24];
  out.append(buf, std::to_chars(buf, buf + sizeof buf, *v).ptr);
}

// As nlohmann::json writes a double: the shortest round trip, with ".0" when it would read as an integer.
void append_number(std::string& out, std::string_view key, const std::optional<double>& v) {
  append_key(out, key);
  if (!v || !std::isfinite(*v)) {
    out += "null";
    return;
  }
  char buf[32];
  const std::string_view text(buf, static_cast<std::size_t>(std::to_chars(buf, buf + sizeof buf, *v).ptr - buf));
  out += text;
  if (text.find_first_of(".e") == std::string_view::npos) out += ".0";
}

}  // namespace

nlohmann::json TelemetrySample::to_json() const {
  nlohmann::json j = readings_json();
  j.update({{"index", index}, {"uuid", uuid}});
  return j;
}

nlohmann::json TelemetrySample::readings_json() const {
  nlohmann::json j = {{"at", core::format_rfc3339_ms(at_ms)}};
  if (error) {
    j["error"] = detail::without_nul(*error);
    return j;
  }
  j.update({{"memory_used_mib", opt(memory_used_mib)},
            {"temperature_c", opt(temperature_c)},
            {"power_w", opt(power_w)},
            {"power_limit_w", opt(power_limit_w)},
            {"util_gpu_pct", opt(util_gpu_pct)},
            {"util_mem_pct", opt(util_mem_pct)},
            {"sm_clock_mhz", opt(sm_clock_mhz)},
            {"mem_clock_mhz", opt(mem_clock_mhz)},
            {"clock_events", clock_events},
            {"ecc_corrected", opt(ecc_corrected)},
            {"ecc_uncorrected", opt(ecc_uncorrected)}});
  return j;
}

std::string TelemetrySample::readings_text() const {
  // Keys in nlohmann::json's (sorted) order, so the text is what readings_json().dump() gives. Room for
  // a whole sample up front (about 250 bytes): the string would otherwise grow five times, a malloc each,
  // for every GPU of every heartbeat (the heartbeat path's malloc profile, bench/README.md).
  std::string out;
  out.reserve(kReadingsTextReserve);
  out += "{\"at\":\"";
  out += core::format_rfc3339_ms(at_ms);
  out += '"';
  if (error) {
    append_key(out, "error");
    out += nlohmann::json(*error).dump();
    out += '}';
    return out;
  }
  append_key(out, "clock_events");
  out += clock_events.empty() ? std::string("[]") : nlohmann::json(clock_events).dump();
  append_number(out, "ecc_corrected", ecc_corrected);
  append_number(out, "ecc_uncorrected", ecc_uncorrected);
  append_number(out, "mem_clock_mhz", mem_clock_mhz);
  append_number(out, "memory_used_mib", memory_used_mib);
  append_number(out, "power_limit_w", power_limit_w);
  append_number(out, "power_w", power_w);
  append_number(out, "sm_clock_mhz", sm_clock_mhz);
  append_number(out, "temperature_c", temperature_c);
  append_number(out, "util_gpu_pct", util_gpu_pct);
  append_number(out, "util_mem_pct", util_mem_pct);
  out += '}';
  return out;
}

nlohmann::json GpuEvent::to_json() const {
  nlohmann::json j = {{"type", type}, {"uuid", uuid}, {"at", core::format_rfc3339_ms(at_ms)}};
  if (message) j["message"] = detail::without_nul(*message);
  return j;
}

nlohmann::json HeartbeatRequest::to_json() const {
  nlohmann::json t = nlohmann::json::array();
  for (const auto& s : telemetry) t.push_back(s.to_json());
  nlohmann::json j = {{"protocol_version", protocol_version},
                      {"machine_id", machine_id},
                      {"seq", seq},
                      {"telemetry", std::move(t)},
                      {"jobs", jobs}};
  if (sent_at_ms) j["sent_at"] = core::format_rfc3339_ms(*sent_at_ms);
  if (!events.empty()) {
    nlohmann::json ev = nlohmann::json::array();
    for (const auto& e : events) ev.push_back(e.to_json());
    j["events"] = std::move(ev);
  }
  return j;
}

nlohmann::json Command::to_json() const {
  nlohmann::json j = {{"type", type}};
  if (run_id) j["run_id"] = *run_id;
  if (reason) j["reason"] = *reason;
  if (!challenges.empty()) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& c : challenges) list.push_back(c.to_json());
    j["challenges"] = std::move(list);
  }
  return j;
}

nlohmann::json HeartbeatReply::to_json() const {
  nlohmann::json c = nlohmann::json::array();
  for (const auto& cmd : commands) c.push_back(cmd.to_json());
  nlohmann::json j = {{"commands", std::move(c)}};
  if (heartbeat_interval_s) j["heartbeat_interval_s"] = *heartbeat_interval_s;
  if (duplicate) j["duplicate"] = true;
  return j;
}

core::Result<HeartbeatRequest> parse_heartbeat_request(const nlohmann::json& body) {
  HeartbeatRequest req;
  ObjectReader r(body);
  req.protocol_version = detail::protocol_version(r);
  req.machine_id = r.required_string("machine_id", 1, L::kMachineIdMax);
  req.seq = r.required_int("seq", 1, L::kSeqMax);
  req.sent_at_ms = detail::time_field(r, "sent_at", false);
  // Described, the lists are read although failed() holds (it always does then).
  if (const auto* t = r.required_array("telemetry", 0, kMaxGpusPerMachine);
      t != nullptr && (!r.failed() || r.describing())) {
    detail::parse_items(r, *t, "telemetry", req.telemetry, parse_sample);
  }
  if (const auto* jobs = r.required_array("jobs", 0, L::kJobsMax); jobs != nullptr) req.jobs = *jobs;
  if (r.describing()) r.describe_field("jobs", {{"description", "The agent's running jobs, as it reports them."}});
  if (const auto* ev = r.optional_value("events", ObjectReader::Shape::list);
      ev != nullptr && (!r.failed() || r.describing())) {
    if (r.describing()) r.describe_field("events", {{"maxItems", L::kEventsMax}});
    if (!ev->is_array() || ev->size() > L::kEventsMax) {
      r.fail(Error::make(ErrorCode::invalid_field,
                         "must be an array of at most " + std::to_string(L::kEventsMax) + " events",
                         std::string("events")));
    } else {
      detail::parse_items(r, *ev, "events", req.events, parse_gpu_event);
    }
  }
  if (auto s = r.finish(); !s) return std::move(s).error();
  return req;
}

HeartbeatReply parse_heartbeat_reply(const nlohmann::json& body) {
  HeartbeatReply reply;
  if (!body.is_object()) return reply;
  auto text = [](const nlohmann::json& j, const char* key) -> std::optional<std::string> {
    if (!j.is_object() || !j.contains(key) || !j[key].is_string()) return std::nullopt;
    return j[key].get<std::string>();
  };
  if (body.contains("commands") && body["commands"].is_array()) {
    for (const auto& c : body["commands"]) {
      Command cmd{text(c, "type").value_or(""), text(c, "run_id"), text(c, "reason"), {}};
      if (c.is_object() && c.contains("challenges")) cmd.challenges = parse_challenge_specs(c["challenges"]);
      reply.commands.push_back(std::move(cmd));
    }
  }
  if (body.contains("heartbeat_interval_s") && body["heartbeat_interval_s"].is_number_unsigned()) {
    reply.heartbeat_interval_s = body["heartbeat_interval_s"].get<unsigned>();
  }
  reply.duplicate = body.contains("duplicate") && body["duplicate"].is_boolean() && body["duplicate"].get<bool>();
  return reply;
}

}  // namespace gpunex::protocol
