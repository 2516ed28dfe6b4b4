#include "core/benchmark_report.hpp"

#include <algorithm>
#include <cmath>
#include <regex>

#include "core/json_reader.hpp"

namespace gpunex::core::bench {

namespace {

constexpr double kMaxFigure = 1e12;  // any figure above this is nonsense in any unit we use

//! Ceilings for machine-wide figures: far beyond any real machine, so only forgeries trip them.
std::optional<double> machine_ceiling(Metric m) {
  switch (m) {
    case Metric::storage_seq_write:
    case Metric::storage_seq_read: return 200'000;   // MB/s
    case Metric::storage_rand_read: return 50'000'000;  // IOPS
    case Metric::net_latency_p50:
    case Metric::net_latency_p99: return 60'000;     // ms
    case Metric::net_down:
    case Metric::net_up: return 1'000'000;           // Mbit/s (loopback reaches ~25 Gbit/s)
    default: return std::nullopt;
  }
}

std::optional<CaseStatus> parse_status(std::string_view s) {
  if (s == "ok") return CaseStatus::ok;
  if (s == "waived") return CaseStatus::waived;
  if (s == "failed") return CaseStatus::failed;
  return std::nullopt;
}

double read_figure(ObjectReader& r, std::string_view key) { return r.required_number(key, 0, kMaxFigure); }

std::optional<double> optional_figure(ObjectReader& r, std::string_view key, double max) {
  const auto* v = r.optional_value(key);
  r.describe_field(key, {{"type", "number"}, {"minimum", 0}, {"maximum", max}});
  if (!v) return std::nullopt;
  if (!v->is_number() || !std::isfinite(v->get<double>()) || v->get<double>() < 0 || v->get<double>() > max) {
    r.fail(Error::make(ErrorCode::invalid_field, r.path_of(key) + " must be a finite number between 0 and " +
                                                     std::to_string(static_cast<long long>(max)),
                       r.path_of(key)));
    return std::nullopt;
  }
  return v->get<double>();
}

//! The keys of the GPU's (or the machine's) benchmarks: what a case's key is checked against.
nlohmann::json metric_keys(bool gpu) {
  nlohmann::json keys = nlohmann::json::array();
  for (Metric m : all_metrics()) {
    if (is_gpu_metric(m) == gpu) keys.push_back(metric_key(m));
  }
  return keys;
}

//! Described, a case is read with both statuses' fields, and its defaults are answered, so that the
//! report's reader goes on to describe the rest.
Result<std::vector<CaseResult>> parse_results(const nlohmann::json& arr, const std::string& path,
                                              const ReportLimits& limits, bool gpu) {
  std::vector<CaseResult> out;
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const std::string at = path + "[" + std::to_string(i) + "]";
    ObjectReader r(arr[i], at);
    CaseResult c;
    const std::string key = r.required_string("key", 1, 64);
    const std::string status = r.required_string("status", 1, 16);
    // Checked by hand below: a key of this list's kind, each once in the list; a known status.
    r.describe_field("key", {{"enum", metric_keys(gpu)}, {"description", "Each key once in the list."}});
    r.describe_field("status", {{"enum", {"ok", "waived", "failed"}}});
    if (!r.describing()) {
      if (r.failed()) return r.finish().error();
      auto m = parse_metric(key);
      if (!m || is_gpu_metric(*m) != gpu) {
        return Error::make(ErrorCode::invalid_field,
                           r.path_of("key") + " '" + key + "' is not a " + (gpu ? "GPU" : "machine") + " benchmark",
                           r.path_of("key"));
      }
      for (const auto& prev : out) {
        if (prev.metric == *m) {
          return Error::make(ErrorCode::invalid_field, r.path_of("key") + " '" + key + "' appears twice",
                             r.path_of("key"));
        }
      }
      auto st = parse_status(status);
      if (!st) {
        return Error::make(ErrorCode::invalid_field, r.path_of("status") + " must be ok, waived or failed",
                           r.path_of("status"));
      }
      c.metric = *m;
      c.status = *st;
    }
    r.optional_line("unit", 16);
    r.describe_when("status is ok");
    if (c.status == CaseStatus::ok || r.describing()) {
      c.median = read_figure(r, "median");
      r.describe_field("median", {{"description", "Between the least and the greatest of samples."}});
      const auto* samples = r.required_array("samples", 1, limits.max_samples);
      r.describe_field("samples", {{"items", {{"type", "number"}, {"minimum", 0}, {"maximum", kMaxFigure}}}});
      if (samples && !r.describing()) {
        for (std::size_t k = 0; k < samples->size(); ++k) {
          const auto& s = (*samples)[k];
          const std::string sp = r.path_of("samples") + "[" + std::to_string(k) + "]";
          if (!s.is_number() || !std::isfinite(s.get<double>()) || s.get<double>() < 0 || s.get<double>() > kMaxFigure) {
            return Error::make(ErrorCode::invalid_field, sp + " must be a finite, non-negative number", sp);
          }
          c.samples.push_back(s.get<double>());
        }
      }
      if (!r.failed() && !c.samples.empty()) {
        auto [lo, hi] = std::minmax_element(c.samples.begin(), c.samples.end());
        if (c.median < *lo * (1 - 1e-9) || c.median > *hi * (1 + 1e-9)) {
          return Error::make(ErrorCode::invalid_field, r.path_of("median") + " lies outside its samples",
                             r.path_of("median"));
        }
      }
    }
    r.describe_when("status is waived or failed");
    if (c.status != CaseStatus::ok || r.describing()) c.reason = r.required_string("reason", 1, 500);
    r.describe_when("");
    if (auto s = r.finish(); !s && !r.describing()) return s.error();
    out.push_back(std::move(c));
  }
  return out;
}

//! Described, the sample's defaults are answered (see parse_results).
Result<std::vector<TelemetryPoint>> parse_telemetry(const nlohmann::json& arr, const std::string& path) {
  std::vector<TelemetryPoint> out;
  for (std::size_t i = 0; i < arr.size(); ++i) {
    ObjectReader r(arr[i], path + "[" + std::to_string(i) + "]");
    TelemetryPoint p;
    p.at_ms = r.required_int("at_ms", 0, 1LL << 50);
    p.during = r.optional_line("during", 64).value_or("");
    p.sm_clock_mhz = optional_figure(r, "sm_clock_mhz", 10'000);
    p.temperature_c = optional_figure(r, "temperature_c", 200);
    p.power_w = optional_figure(r, "power_w", 5'000);
    p.clock_event_bits = static_cast<std::uint64_t>(r.optional_int("clock_event_bits", 0, 1LL << 40).value_or(0));
    if (auto s = r.finish(); !s && !r.describing()) return s.error();
    out.push_back(std::move(p));
  }
  return out;
}

//! A bare NaN or Infinity is not JSON; find the key in front of it, so the 400 still names a field.
std::optional<std::string> non_json_number_key(std::string_view body) {
  static const std::regex re(R"re("([A-Za-z0-9_]+)"\s*:\s*\[?\s*(?:[-+0-9.eE]+\s*,\s*)*-?(NaN|Infinity|inf|nan)\b)re");
  std::match_results<std::string_view::const_iterator> m;
  if (std::regex_search(body.begin(), body.end(), m, re)) return m[1].str();
  return std::nullopt;
}

}  // namespace

std::string_view case_status_name(CaseStatus s) {
  switch (s) {
    case CaseStatus::ok: return "ok";
    case CaseStatus::waived: return "waived";
    case CaseStatus::failed: return "failed";
  }
  return "failed";
}

nlohmann::json to_json(const CaseResult& r) {
  nlohmann::json j = {{"key", metric_key(r.metric)}, {"unit", metric_unit(r.metric)},
                      {"status", case_status_name(r.status)}};
  if (r.status == CaseStatus::ok) {
    j["median"] = r.median;
    j["samples"] = r.samples;
  } else {
    j["reason"] = r.reason;
  }
  return j;
}

nlohmann::json to_json(const RunReport& r) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : r.gpus) {
    nlohmann::json results = nlohmann::json::array();
    for (const auto& c : g.results) results.push_back(to_json(c));
    nlohmann::json tel = nlohmann::json::array();
    for (const auto& p : g.telemetry) {
      nlohmann::json pj = {{"at_ms", p.at_ms}, {"clock_event_bits", p.clock_event_bits}};
      if (!p.during.empty()) pj["during"] = p.during;
      if (p.sm_clock_mhz) pj["sm_clock_mhz"] = *p.sm_clock_mhz;
      if (p.temperature_c) pj["temperature_c"] = *p.temperature_c;
      if (p.power_w) pj["power_w"] = *p.power_w;
      tel.push_back(std::move(pj));
    }
    nlohmann::json gj = {{"index", g.index}, {"uuid", g.uuid}, {"name", g.name},
                         {"ecc_uncorrected", g.ecc_uncorrected}, {"results", std::move(results)},
                         {"telemetry", std::move(tel)}};
    if (g.memory_total_gib) gj["memory_total_gib"] = *g.memory_total_gib;
    gpus.push_back(std::move(gj));
  }
  nlohmann::json machine = nlohmann::json::array();
  for (const auto& c : r.machine) machine.push_back(to_json(c));
  nlohmann::json j = {{"protocol", r.protocol},         {"machine_id", r.machine_id},
                      {"simulated", r.simulated},       {"started_at_ms", r.started_at_ms},
                      {"finished_at_ms", r.finished_at_ms}, {"gpus", std::move(gpus)},
                      {"machine", std::move(machine)}};
  if (r.run_id) j["run_id"] = *r.run_id;
  return j;
}

Result<RunReport> parse_run_report(std::string_view body, const ReportLimits& limits) {
  auto parsed = parse_json_object(body);
  if (!parsed) {
    if (auto key = non_json_number_key(body)) {
      return Error::make(ErrorCode::invalid_field, *key + " must be a finite number (NaN and Infinity are not JSON)",
                         *key);
    }
    return parsed.error();
  }
  return read_run_report(*parsed, limits);
}

// Described, the gpus and machine lists are read although failed() holds (it always does then), each
// on its stand-in item, whose results and telemetry answer their defaults.
Result<RunReport> read_run_report(const nlohmann::json& j, const ReportLimits& limits) {
  ObjectReader r(j);
  RunReport rep;
  rep.protocol = static_cast<int>(r.required_int("protocol", kProtocolVersion, kProtocolVersion));
  rep.machine_id = r.required_string("machine_id", 1, 100);
  rep.run_id = r.optional_string("run_id", 100);
  rep.simulated = r.required_bool("simulated");
  rep.started_at_ms = r.required_int("started_at_ms", 0, 1LL << 50);
  rep.finished_at_ms = r.required_int("finished_at_ms", 0, 1LL << 50);
  const auto* gpus = r.required_array("gpus", 0, limits.max_gpus);
  const auto* machine = r.required_array("machine", 0, 32);
  r.describe_field("finished_at_ms", {{"description", "Not before started_at_ms."}});
  if (r.failed() && !r.describing()) return r.finish().error();
  if (rep.finished_at_ms < rep.started_at_ms) {
    return Error::make(ErrorCode::invalid_field, "finished_at_ms must not be before started_at_ms", "finished_at_ms");
  }
  for (std::size_t i = 0; i < gpus->size(); ++i) {
    const std::string at = "gpus[" + std::to_string(i) + "]";
    ObjectReader g(( *gpus)[i], at);
    GpuRun run;
    run.index = static_cast<unsigned>(g.required_int("index", 0, 63));
    run.uuid = g.required_string("uuid", 1, 100);
    run.name = g.optional_line("name", 200).value_or("");
    run.memory_total_gib = optional_figure(g, "memory_total_gib", 10'000);
    run.ecc_uncorrected = static_cast<std::uint64_t>(g.optional_int("ecc_uncorrected", 0, 1LL << 40).value_or(0));
    const auto* results = g.required_array("results", 0, 32);
    const auto* tel = g.optional_value("telemetry", ObjectReader::Shape::list);
    g.describe_field("telemetry", {{"maxItems", limits.max_telemetry}});
    g.describe_field("uuid", {{"description", "Each GPU's index and uuid once in the report."}});
    if (g.failed() && !g.describing()) return g.finish().error();
    if (tel && (!tel->is_array() || tel->size() > limits.max_telemetry)) {
      return Error::make(ErrorCode::invalid_field,
                         g.path_of("telemetry") + " must be an array of at most " +
                             std::to_string(limits.max_telemetry) + " samples",
                         g.path_of("telemetry"));
    }
    auto res = parse_results(*results, g.path_of("results"), limits, true);
    if (!res) return res.error();
    run.results = std::move(*res);
    if (tel) {
      auto t = parse_telemetry(*tel, g.path_of("telemetry"));
      if (!t) return t.error();
      run.telemetry = std::move(*t);
    }
    if (auto s = g.finish(); !s && !g.describing()) return s.error();
    for (const auto& prev : rep.gpus) {
      if (prev.index == run.index || prev.uuid == run.uuid) {
        return Error::make(ErrorCode::invalid_field, at + " repeats another GPU's index or uuid", at + ".uuid");
      }
    }
    rep.gpus.push_back(std::move(run));
  }
  auto mres = parse_results(*machine, "machine", limits, false);
  if (!mres) return mres.error();
  rep.machine = std::move(*mres);
  if (auto s = r.finish(); !s) return s.error();
  return rep;
}

Status check_plausible(const RunReport& report, const std::vector<const ModelSpec*>& models, const Policy& policy) {
  for (std::size_t i = 0; i < report.gpus.size(); ++i) {
    const auto& g = report.gpus[i];
    const ModelSpec* spec = i < models.size() ? models[i] : nullptr;
    for (std::size_t k = 0; k < g.results.size(); ++k) {
      const auto& c = g.results[k];
      if (c.status != CaseStatus::ok) continue;
      const std::string at = "gpus[" + std::to_string(i) + "].results[" + std::to_string(k) + "]";
      std::optional<double> peak = spec ? spec_peak(*spec, c.metric) : std::nullopt;
      if (!peak && spec && (c.metric == Metric::h2d || c.metric == Metric::d2h)) peak = pcie_theory_gbs(6, 16);
      if (!peak) continue;
      const double ceiling = *peak * policy.absurd_factor;
      double top = c.median;
      for (double s : c.samples) top = std::max(top, s);
      if (top > ceiling) {
        return Error::make(ErrorCode::invalid_field,
                           at + " (" + std::string(metric_key(c.metric)) + ") reports " + std::to_string(top) + " " +
                               std::string(metric_unit(c.metric)) + ", more than " +
                               std::to_string(policy.absurd_factor) + "× the " + spec->id + " spec peak",
                           at + ".median");
      }
    }
  }
  for (std::size_t k = 0; k < report.machine.size(); ++k) {
    const auto& c = report.machine[k];
    if (c.status != CaseStatus::ok) continue;
    auto ceiling = machine_ceiling(c.metric);
    double top = c.median;
    for (double s : c.samples) top = std::max(top, s);
    if (ceiling && top > *ceiling) {
      const std::string at = "machine[" + std::to_string(k) + "]";
      return Error::make(ErrorCode::invalid_field,
                         at + " (" + std::string(metric_key(c.metric)) + ") reports an implausible " +
                             std::to_string(top) + " " + std::string(metric_unit(c.metric)),
                         at + ".median");
    }
  }
  return ok_status();
}

Figures figures_of(const std::vector<CaseResult>& results) {
  Figures f;
  for (const auto& c : results) {
    if (c.status == CaseStatus::ok) f[c.metric] = c.median;
  }
  return f;
}

RunTelemetry fold_telemetry(const GpuRun& gpu) {
  RunTelemetry t;
  t.ecc_uncorrected = gpu.ecc_uncorrected;
  t.memory_total_gib = gpu.memory_total_gib;
  for (const auto& p : gpu.telemetry) {
    t.clock_event_bits |= p.clock_event_bits;
    if (p.temperature_c && (!t.max_temperature_c || *p.temperature_c > *t.max_temperature_c)) {
      t.max_temperature_c = p.temperature_c;
    }
  }
  return t;
}

double median(std::vector<double> s) {
  if (s.empty()) return 0;
  std::sort(s.begin(), s.end());
  const std::size_t n = s.size();
  return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2.0;
}

double percentile(std::vector<double> s, double p) {
  if (s.empty()) return 0;
  std::sort(s.begin(), s.end());
  const double rank = std::ceil(std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(s.size()));
  const std::size_t idx = rank < 1 ? 0 : static_cast<std::size_t>(rank) - 1;
  return s[std::min(idx, s.size() - 1)];
}

}  // namespace gpunex::core::bench
