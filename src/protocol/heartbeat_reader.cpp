// A heartbeat's body read straight from the JSON parser's events into a HeartbeatRequest (read_heartbeat_direct),
// with no JSON tree in between: the tree was a fifth of the server's allocations per heartbeat (the heartbeat
// path's profile, bench/README.md). It takes only what parse_heartbeat_request takes, the way an agent sends
// it; at the first thing it would have to explain (an unknown or repeated key, a value out of range, a
// NUL, a body that is not JSON) it gives up, and read_heartbeat_request reads the body again with the tree
// reader, which names every fault. So the error messages have one definition, and this reader needs none.

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/json_reader.hpp"
#include "core/rfc3339.hpp"
#include "protocol/fields.hpp"
#include "protocol/heartbeat.hpp"

namespace gpunex::protocol {

namespace {
namespace direct {  // named too, apart from heartbeat.cpp's helpers in the unity build

using json = nlohmann::json;
namespace L = heartbeat_limits;

//! One scalar value as the parser reported it.
struct Scalar {
  enum class Kind { null, boolean, integer, number, string } kind = Kind::null;
  std::int64_t i = 0;              // integer: fits std::int64_t (as the tree reader's whole numbers must)
  double d = 0;                    // integer and number
  const std::string* s = nullptr;  // string
};

// The keys of each object this reader knows, as bits (a key seen twice is refused by the tree reader).
enum RootKey : unsigned { kProtocolVersionKey, kMachineId, kSeq, kSentAt, kTelemetry, kJobs, kEvents, kRootKeys };
enum SampleKey : unsigned {
  kIndex,
  kUuid,
  kAt,
  kError,
  kMemoryUsed,
  kTemperature,
  kPower,
  kPowerLimit,
  kUtilGpu,
  kUtilMem,
  kSmClock,
  kMemClock,
  kClockEvents,
  kEccCorrected,
  kEccUncorrected,
  kSampleKeys
};
enum EventKey : unsigned { kEventType, kEventUuid, kEventAt, kEventMessage, kEventKeys };

constexpr std::array<std::string_view, kRootKeys> kRootNames = {"protocol_version", "machine_id", "seq",   "sent_at",
                                                                "telemetry",        "jobs",       "events"};
constexpr std::array<std::string_view, kSampleKeys> kSampleNames = {"index",
                                                                    "uuid",
                                                                    "at",
                                                                    "error",
                                                                    "memory_used_mib",
                                                                    "temperature_c",
                                                                    "power_w",
                                                                    "power_limit_w",
                                                                    "util_gpu_pct",
                                                                    "util_mem_pct",
                                                                    "sm_clock_mhz",
                                                                    "mem_clock_mhz",
                                                                    "clock_events",
                                                                    "ecc_corrected",
                                                                    "ecc_uncorrected"};
constexpr std::array<std::string_view, kEventKeys> kEventNames = {"type", "uuid", "at", "message"};

// The readings of a sample: read only when it has no error (the tree reader refuses them beside one).
constexpr unsigned kReadingBits =
    ((1U << kSampleKeys) - 1) & ~((1U << kIndex) | (1U << kUuid) | (1U << kAt) | (1U << kError));

template <std::size_t N>
std::optional<unsigned> key_of(const std::array<std::string_view, N>& names, std::string_view key) {
  for (unsigned i = 0; i < N; ++i) {
    if (names[i] == key) return i;
  }
  return std::nullopt;
}

// The tree reader's rules for one value, answering false where it would record an error.
bool take_whole(const Scalar& v, std::int64_t min, std::int64_t max, std::int64_t& out) {
  if (v.kind != Scalar::Kind::integer || v.i < min || v.i > max) return false;
  out = v.i;
  return true;
}
bool take_optional_whole(const Scalar& v, std::int64_t min, std::int64_t max, std::optional<std::int64_t>& out) {
  if (v.kind == Scalar::Kind::null) return true;
  std::int64_t i = 0;
  if (!take_whole(v, min, max, i)) return false;
  out = i;
  return true;
}
bool take_optional_number(const Scalar& v, double min, double max, std::optional<double>& out) {
  if (v.kind == Scalar::Kind::null) return true;
  if (v.kind != Scalar::Kind::integer && v.kind != Scalar::Kind::number) return false;
  if (!std::isfinite(v.d) || v.d < min || v.d > max) return false;
  out = v.d;
  return true;
}
bool take_text(const Scalar& v, std::size_t min_len, std::size_t max_len, std::string& out) {
  if (v.kind != Scalar::Kind::string || v.s->size() < min_len || v.s->size() > max_len) return false;
  out = *v.s;
  return true;
}
bool take_optional_text(const Scalar& v, std::size_t max_len, std::optional<std::string>& out) {
  if (v.kind == Scalar::Kind::null) return true;
  std::string s;
  if (!take_text(v, 0, max_len, s)) return false;
  out = std::move(s);
  return true;
}
//! A time as time_field reads it: text of 1 (0 when optional) to kTimeTextMax characters, RFC 3339.
bool take_time(const Scalar& v, std::size_t min_len, std::int64_t& out) {
  if (v.kind != Scalar::Kind::string || v.s->size() < min_len || v.s->size() > detail::kTimeTextMax) return false;
  const auto ms = core::parse_rfc3339_ms(*v.s);
  if (!ms) return false;
  out = *ms;
  return true;
}

//! nlohmann::json's SAX interface: every callback answers false to stop at the first thing not taken.
class HeartbeatSax {
 public:
  explicit HeartbeatSax(HeartbeatRequest& out) : out_(out) {}

  bool null() { return value(Scalar{}); }
  bool boolean(bool /*v*/) { return value(Scalar{Scalar::Kind::boolean}); }
  bool number_integer(json::number_integer_t v) {
    return value(Scalar{Scalar::Kind::integer, v, static_cast<double>(v)});
  }
  bool number_unsigned(json::number_unsigned_t v) {
    if (v > static_cast<json::number_unsigned_t>(std::numeric_limits<std::int64_t>::max())) {
      return value(Scalar{Scalar::Kind::number, 0, static_cast<double>(v)});
    }
    return value(Scalar{Scalar::Kind::integer, static_cast<std::int64_t>(v), static_cast<double>(v)});
  }
  bool number_float(json::number_float_t v, const json::string_t& /*text*/) {
    return value(Scalar{Scalar::Kind::number, 0, v});
  }
  bool string(json::string_t& v) {
    if (v.find('\0') != std::string::npos) return false;  // refused in any string
    return value(Scalar{Scalar::Kind::string, 0, 0, &v});
  }
  bool binary(json::binary_t& /*v*/) { return false; }

  bool key(json::string_t& k) {
    switch (at_) {
      case At::root:
        return take_key(kRootNames, k, root_seen_);
      case At::sample:
        return take_key(kSampleNames, k, sample_seen_);
      case At::event:
        return take_key(kEventNames, k, event_seen_);
      default:
        return false;
    }
  }

  bool start_object(std::size_t /*elements*/) {
    switch (at_) {
      case At::start:
        at_ = At::root;
        return true;
      case At::telemetry:
        if (out_.telemetry.size() >= kMaxGpusPerMachine) return false;
        at_ = At::sample;
        sample_ = TelemetrySample{};
        sample_seen_ = 0;
        return true;
      case At::events:
        if (out_.events.size() >= L::kEventsMax) return false;
        at_ = At::event;
        event_ = GpuEvent{};
        event_seen_ = 0;
        return true;
      default:
        return false;
    }
  }
  bool end_object() {
    switch (at_) {
      case At::root:
        at_ = At::done;
        return root_complete();
      case At::sample:
        at_ = At::telemetry;
        return sample_complete();
      case At::event:
        at_ = At::events;
        return event_complete();
      default:
        return false;
    }
  }
  bool start_array(std::size_t /*elements*/) {
    if (at_ == At::root && key_ == kTelemetry) {
      at_ = At::telemetry;
    } else if (at_ == At::root && key_ == kJobs) {
      at_ = At::jobs;
    } else if (at_ == At::root && key_ == kEvents) {
      at_ = At::events;
    } else if (at_ == At::sample && key_ == kClockEvents) {
      at_ = At::clock_events;
    } else {
      return false;
    }
    return true;
  }
  bool end_array() {
    switch (at_) {
      case At::telemetry:
      case At::jobs:  // only [] comes here: anything in it is refused by value() and start_*()
      case At::events:
        at_ = At::root;
        return true;
      case At::clock_events:
        at_ = At::sample;
        return true;
      default:
        return false;
    }
  }
  bool parse_error(std::size_t /*position*/, const std::string& /*token*/, const json::exception& /*e*/) {
    return false;
  }

  bool done() const { return at_ == At::done; }

 private:
  enum class At { start, root, telemetry, sample, clock_events, jobs, events, event, done };

  template <std::size_t N>
  bool take_key(const std::array<std::string_view, N>& names, std::string_view k, unsigned& seen) {
    const auto i = key_of(names, k);
    if (!i || (seen & (1U << *i)) != 0) return false;
    seen |= 1U << *i;
    key_ = *i;
    return true;
  }

  bool value(const Scalar& v) {
    switch (at_) {
      case At::root:
        return root_value(v);
      case At::sample:
        return sample_value(v);
      case At::event:
        return event_value(v);
      case At::clock_events: {
        std::string name;
        if (sample_.clock_events.size() >= L::kClockEventsMax || !take_text(v, 1, L::kClockEventNameMax, name)) {
          return false;
        }
        sample_.clock_events.push_back(std::move(name));
        return true;
      }
      default:
        return false;  // an item of telemetry, events or jobs that is not an object, or the body itself
    }
  }

  bool root_value(const Scalar& v) {
    switch (key_) {
      case kProtocolVersionKey: {
        std::int64_t version = 0;
        if (!take_whole(v, 1, detail::kProtocolVersionMax, version) || version != kProtocolVersion) return false;
        out_.protocol_version = static_cast<int>(version);
        return true;
      }
      case kMachineId:
        return take_text(v, 1, L::kMachineIdMax, out_.machine_id);
      case kSeq:
        return take_whole(v, 1, L::kSeqMax, out_.seq);
      case kSentAt: {
        if (v.kind == Scalar::Kind::null) return true;
        std::int64_t ms = 0;
        if (!take_time(v, 0, ms)) return false;
        out_.sent_at_ms = ms;
        return true;
      }
      case kEvents:
        return v.kind == Scalar::Kind::null;  // absent alike
      default:
        return false;  // telemetry and jobs are lists
    }
  }

  bool sample_value(const Scalar& v) {
    auto& s = sample_;
    switch (key_) {
      case kIndex:
        return take_whole(v, 0, static_cast<std::int64_t>(kMaxGpusPerMachine) - 1, s.index);
      case kUuid:
        return take_text(v, 1, L::kUuidMax, s.uuid);
      case kAt:
        return take_time(v, 1, s.at_ms);
      case kError:
        return take_optional_text(v, L::kTextMax, s.error);
      case kMemoryUsed: {
        std::int64_t mib = 0;
        if (!take_whole(v, 0, L::kMemoryUsedMibMax, mib)) return false;
        s.memory_used_mib = mib;
        return true;
      }
      case kTemperature:
        return take_optional_whole(v, 0, L::kTemperatureMax, s.temperature_c);
      case kPower:
        return take_optional_number(v, 0, L::kPowerMax, s.power_w);
      case kPowerLimit:
        return take_optional_number(v, 0, L::kPowerMax, s.power_limit_w);
      case kUtilGpu:
        return take_optional_whole(v, 0, L::kPercentMax, s.util_gpu_pct);
      case kUtilMem:
        return take_optional_whole(v, 0, L::kPercentMax, s.util_mem_pct);
      case kSmClock:
        return take_optional_whole(v, 0, L::kClockMhzMax, s.sm_clock_mhz);
      case kMemClock:
        return take_optional_whole(v, 0, L::kClockMhzMax, s.mem_clock_mhz);
      case kEccCorrected:
        return take_optional_whole(v, 0, detail::kBig, s.ecc_corrected);
      case kEccUncorrected:
        return take_optional_whole(v, 0, detail::kBig, s.ecc_uncorrected);
      default:
        return false;  // clock_events is a list
    }
  }

  bool event_value(const Scalar& v) {
    auto& e = event_;
    switch (key_) {
      case kEventType:
        return take_text(v, 1, L::kEventTypeMax, e.type) && (e.type == kGpuLost || e.type == kGpuRecovered);
      case kEventUuid:
        return take_text(v, 1, L::kUuidMax, e.uuid);
      case kEventAt:
        return take_time(v, 1, e.at_ms);
      case kEventMessage:
        return take_optional_text(v, L::kTextMax, e.message);
      default:
        return false;
    }
  }

  bool root_complete() const {
    constexpr unsigned required =
        (1U << kProtocolVersionKey) | (1U << kMachineId) | (1U << kSeq) | (1U << kTelemetry) | (1U << kJobs);
    return (root_seen_ & required) == required;
  }

  bool sample_complete() {
    constexpr unsigned required = (1U << kIndex) | (1U << kUuid) | (1U << kAt);
    if ((sample_seen_ & required) != required) return false;
    if (sample_.error) {
      // Beside an error the tree reader reads no reading, so any (null too) is an unknown field there.
      if ((sample_seen_ & kReadingBits) != 0) return false;
    } else {
      constexpr unsigned needed = (1U << kMemoryUsed) | (1U << kClockEvents);
      if ((sample_seen_ & needed) != needed) return false;
    }
    out_.telemetry.push_back(std::move(sample_));
    return true;
  }

  bool event_complete() {
    constexpr unsigned required = (1U << kEventType) | (1U << kEventUuid) | (1U << kEventAt);
    if ((event_seen_ & required) != required) return false;
    out_.events.push_back(std::move(event_));
    return true;
  }

  HeartbeatRequest& out_;
  At at_ = At::start;
  unsigned key_ = 0;  // the key just read, in the object at_ names
  unsigned root_seen_ = 0;
  unsigned sample_seen_ = 0;
  unsigned event_seen_ = 0;
  TelemetrySample sample_;
  GpuEvent event_;
};

}  // namespace direct
}  // namespace

std::optional<HeartbeatRequest> read_heartbeat_direct(std::string_view body) {
  HeartbeatRequest req;
  direct::HeartbeatSax sax(req);
  if (!nlohmann::json::sax_parse(body.begin(), body.end(), &sax, nlohmann::json::input_format_t::json,
                                 /*strict=*/true, /*ignore_comments=*/false) ||
      !sax.done()) {
    return std::nullopt;
  }
  return req;
}

core::Result<HeartbeatRequest> read_heartbeat_request(std::string_view body) {
  if (auto req = read_heartbeat_direct(body)) return std::move(*req);
  auto tree = core::parse_json_object(body);
  if (!tree) return std::move(tree).error();
  return parse_heartbeat_request(*tree);
}

}  // namespace gpunex::protocol
