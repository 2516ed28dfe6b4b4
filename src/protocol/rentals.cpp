#include "protocol/rentals.hpp"

#include <cstdio>
#include "core/json_reader.hpp"
#include "core/rfc3339.hpp"
#include "core/text.hpp"
#include "protocol/fields.hpp"

namespace gpunex::protocol {

using core::Error;
using core::ErrorCode;
using core::ObjectReader;
using detail::kBig;

namespace {

constexpr RentalEventType kEventTypes[] = {RentalEventType::starting, RentalEventType::running, RentalEventType::ended,
                                           RentalEventType::logs};

core::Status parse_assigned(const nlohmann::json& j, const std::string& path, AssignedRental& a) {
  ObjectReader r(j, path);
  a.id = r.required_string("id", 1, 64);
  const std::string state = r.required_string("state", 1, 32);
  if (!r.failed("state")) {
    auto s = core::rental::parse_state(state);
    if (!s || *s == core::rental::State::ended) {
      r.invalid("state", "must be requested, starting, running or stopping");
    } else {
      a.state = *s;
    }
  }
  if (const auto* gpus = r.required_array("gpu_uuids", 1, kMaxGpusPerMachine); gpus != nullptr) {
    for (const auto& g : *gpus) {
      if (!g.is_string() || g.get<std::string>().empty()) {
        r.invalid("gpu_uuids", "must hold GPU UUIDs");
        break;
      }
      a.gpu_uuids.push_back(g.get<std::string>());
    }
  }
  if (const auto* spec = r.required_object("spec"); spec != nullptr) {
    auto s = core::rental::spec_from_json(*spec);
    if (!s) {
      r.fail(std::move(s).error());
    } else {
      a.spec = std::move(*s);
    }
  }
  return r.finish();
}

core::Status parse_rental_event(const nlohmann::json& j, const std::string& path, RentalEvent& e) {
  ObjectReader r(j, path);
  e.rental_id = r.required_string("rental_id", 1, 64);
  const std::string type = r.required_string("type", 1, 32);
  bool known = false;
  for (auto t : kEventTypes) {
    if (type == to_string(t)) {
      e.type = t;
      known = true;
    }
  }
  if (!r.failed("type") && !known) r.invalid("type", "must be starting, running, ended or logs");
  if (r.describing()) {
    auto names = nlohmann::json::array();
    for (auto t : kEventTypes) names.push_back(to_string(t));
    r.describe_field("type", {{"enum", std::move(names)}});
  }
  e.at_ms = detail::time_field(r, "at", true).value_or(0);
  if (auto reason = r.optional_string("reason", 64); reason) {
    auto parsed = core::rental::parse_end_reason(*reason);
    if (!parsed) {
      r.invalid("reason", "must be an end reason such as container_exited or start_failed");
    } else {
      e.reason = *parsed;
    }
  }
  if (auto code = r.optional_int("exit_code", -1, 255); code) e.exit_code = static_cast<int>(*code);
  e.oom = r.optional_bool("oom").value_or(false);
  e.error = r.optional_string("error", 4000);
  e.logs = r.optional_string("logs", kMaxLogBytes);
  // A container's output may hold NUL bytes, which no store text can: dropped, the rest kept as sent.
  if (e.error) std::erase(*e.error, '\0');
  if (e.logs) std::erase(*e.logs, '\0');
  if (const auto* ports = r.optional_value("ports", ObjectReader::Shape::list); ports != nullptr) {
    r.describe_field("ports", {{"maxItems", core::rental::kMaxPorts}});
    if (!ports->is_array() || ports->size() > core::rental::kMaxPorts) {
      r.invalid("ports", "must be a list of {container_port, host_port}");
    } else {
      for (std::size_t i = 0; i < ports->size(); ++i) {
        const auto& p = (*ports)[i];
        if (!p.is_object()) {
          r.invalid("ports", "must be a list of {container_port, host_port}");
          break;
        }
        ObjectReader pr(p, r.path_of("ports") + "[" + std::to_string(i) + "]");
        BoundPort b;
        b.container_port = static_cast<int>(pr.required_int("container_port", 1, 65535));
        b.host_port = static_cast<int>(pr.required_int("host_port", 1, 65535));
        if (auto st = pr.finish(); !st) {
          r.fail(std::move(st).error());
          break;
        }
        e.ports.push_back(b);
      }
    }
  }
  return r.finish();
}

}  // namespace

std::string_view to_string(RentalEventType t) {
  switch (t) {
    case RentalEventType::starting:
      return "starting";
    case RentalEventType::running:
      return "running";
    case RentalEventType::ended:
      return "ended";
    case RentalEventType::logs:
      return "logs";
  }
  return "unknown";
}

nlohmann::json AssignedRental::to_json() const {
  return {{"id", id},
          {"state", core::rental::to_string(state)},
          {"gpu_uuids", gpu_uuids},
          {"spec", core::rental::spec_to_json(spec)}};
}

nlohmann::json AgentRentals::to_json() const {
  auto list = nlohmann::json::array();
  for (const auto& r : rentals) list.push_back(r.to_json());
  return {{"version", version}, {"rentals", std::move(list)}};
}

std::string blocked_text(std::string_view why) {
  std::string out;
  for (std::size_t i = 0; i < why.size();) {
    std::size_t n = core::utf8_sequence_length(why, i);
    std::string_view ch = n == 0 ? std::string_view{} : why.substr(i, n);
    if (ch.empty() || !core::is_single_line_text(ch)) {
      ch = " ";  // a control character, a line break, a bidi override or a byte that is not UTF-8
      n = 1;
    }
    if (out.size() + ch.size() > kMaxBlockedBytes) break;
    out += ch;
    i += n;
  }
  return core::trim(out);
}

core::Result<std::optional<std::string>> parse_blocked(std::optional<std::string_view> param) {
  if (!param || param->empty()) return std::optional<std::string>{};
  if (param->size() > kMaxBlockedBytes || !core::is_single_line_text(*param)) {
    return core::Error::make(
        core::ErrorCode::invalid_field,
        "blocked must be one line of text of at most " + std::to_string(kMaxBlockedBytes) + " bytes", "blocked");
  }
  return std::optional<std::string>(std::string(*param));
}

std::string rentals_version(const std::vector<AssignedRental>& rentals) {
  std::string text;
  for (const auto& r : rentals) text += r.id + ":" + std::string(core::rental::to_string(r.state)) + ";";
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a: a version only needs to change with the list
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ULL;
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

core::Result<AgentRentals> parse_agent_rentals(const nlohmann::json& body) {
  if (!body.is_object()) return Error::make(ErrorCode::invalid_field, "the rentals answer must be a JSON object");
  ObjectReader r(body);
  AgentRentals out;
  out.version = r.required_line("version", 1, 64);
  if (const auto* list = r.required_array("rentals", 0, kMaxGpusPerMachine); list != nullptr) {
    detail::parse_items(r, *list, "rentals", out.rentals, parse_assigned);
  }
  if (auto st = r.finish(); !st) return std::move(st).error();
  return out;
}

nlohmann::json RentalEvent::to_json() const {
  nlohmann::json j = {{"rental_id", rental_id}, {"type", to_string(type)}, {"at", core::format_rfc3339_ms(at_ms)}};
  if (reason) j["reason"] = core::rental::to_string(*reason);
  if (exit_code) j["exit_code"] = *exit_code;
  if (oom) j["oom"] = true;
  // The engine's text may hold NULs, which the server refuses in any JSON string: dropped here.
  if (error) j["error"] = detail::without_nul(*error);
  if (logs) j["logs"] = detail::without_nul(*logs);
  if (!ports.empty()) {
    auto list = nlohmann::json::array();
    for (const auto& p : ports) list.push_back({{"container_port", p.container_port}, {"host_port", p.host_port}});
    j["ports"] = std::move(list);
  }
  return j;
}

nlohmann::json RentalEventsRequest::to_json() const {
  auto list = nlohmann::json::array();
  for (const auto& e : events) list.push_back(e.to_json());
  return {{"protocol_version", protocol_version}, {"machine_id", machine_id}, {"seq", seq}, {"events", std::move(list)}};
}

core::Result<RentalEventsRequest> parse_rental_events(const nlohmann::json& body) {
  ObjectReader r(body);
  RentalEventsRequest out;
  out.protocol_version = detail::protocol_version(r);
  out.machine_id = r.required_string("machine_id", 1, 64);
  out.seq = r.required_int("seq", 1, kBig);
  if (const auto* list = r.required_array("events", 1, 256); list != nullptr) {
    detail::parse_items(r, *list, "events", out.events, parse_rental_event);
  }
  if (auto st = r.finish(); !st) return std::move(st).error();
  return out;
}

}  // namespace gpunex::protocol
