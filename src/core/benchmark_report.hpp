#pragma once
// The benchmark result body an agent submits (POST /v1/agent/benchmarks) and
// `gpunex-agent bench --json` prints: one run, per GPU and for the machine,
// every case's raw samples and median, and the NVML samples taken meanwhile.
// Parsing refuses anything malformed or implausible with an Error naming the
// field, so the server stores nothing it cannot trust.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/benchmark.hpp"
#include "core/protocol_version.hpp"
#include "core/result.hpp"

namespace gpunex::core::bench {

enum class CaseStatus { ok, waived, failed };
std::string_view case_status_name(CaseStatus s);

//! One benchmark case's outcome: samples and their median, or why it did not run.
struct CaseResult {
  Metric metric = Metric::fp32;
  CaseStatus status = CaseStatus::ok;
  std::string reason;            // waived or failed: why
  double median = 0;
  std::vector<double> samples;
};

//! One NVML sample taken while a case ran.
struct TelemetryPoint {
  std::int64_t at_ms = 0;
  std::string during;            // the case's key
  std::optional<double> sm_clock_mhz;
  std::optional<double> temperature_c;
  std::optional<double> power_w;
  std::uint64_t clock_event_bits = 0;
};

struct GpuRun {
  unsigned index = 0;
  std::string uuid;
  std::string name;                 // as NVML reports it
  std::optional<double> memory_total_gib;
  std::uint64_t ecc_uncorrected = 0;
  std::vector<CaseResult> results;
  std::vector<TelemetryPoint> telemetry;
};

struct RunReport {
  int protocol = kProtocolVersion;  // the agent protocol's version (core/protocol_version.hpp)
  std::string machine_id;
  std::optional<std::string> run_id;  // the server's id when the run was requested in a heartbeat reply
  bool simulated = false;
  std::int64_t started_at_ms = 0;
  std::int64_t finished_at_ms = 0;
  std::vector<GpuRun> gpus;
  std::vector<CaseResult> machine;    // storage.* and network.*
};

//! Bounds on a body, so a client cannot make the server store without limit.
struct ReportLimits {
  std::size_t max_gpus = 16;
  std::size_t max_samples = 1000;       // per case
  std::size_t max_telemetry = 5000;     // per GPU
};

nlohmann::json to_json(const CaseResult& r);
nlohmann::json to_json(const RunReport& r);

//! Parses a submitted body: shape, types, known keys, finite and non-negative figures, bounds.
Result<RunReport> parse_run_report(std::string_view body, const ReportLimits& limits = {});
//! The same for a body already parsed as one JSON object: parse_run_report's reading, which the API
//! document describes (core::describe_body) as the body of POST /v1/agent/benchmarks.
Result<RunReport> read_run_report(const nlohmann::json& body, const ReportLimits& limits = {});

//! Refuses figures no healthy machine reaches: above spec peak × policy.absurd_factor on a GPU
//! (`models[i]` is GPU i's model, null when unknown), or beyond fixed ceilings for storage and network.
Status check_plausible(const RunReport& report, const std::vector<const ModelSpec*>& models, const Policy& policy);

//! The medians of a GPU's (or the machine's) successful cases.
Figures figures_of(const std::vector<CaseResult>& results);
//! NVML samples folded into what evaluate_gpu reads (the union of clocks-event bits, the hottest sample).
RunTelemetry fold_telemetry(const GpuRun& gpu);

//! The median of samples (mean of the middle two for an even count); 0 for none.
double median(std::vector<double> samples);
//! The p-th percentile (0..100), nearest rank; 0 for none.
double percentile(std::vector<double> samples, double p);

}  // namespace gpunex::core::bench
