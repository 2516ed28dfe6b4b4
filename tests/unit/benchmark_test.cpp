// Benchmark judgement: expected figures, score, quality ratio, delisting, machine checks,
// recommendations, and the validation of submitted result bodies.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "core/benchmark.hpp"
#include "core/benchmark_report.hpp"
#include "core/json_reader.hpp"

using namespace gpunex::core;         // NOLINT
using namespace gpunex::core::bench;  // NOLINT

namespace {

ModelSpec l40s() {
  ModelSpec s;
  s.id = "L40S";
  s.vram_gib = 48;
  s.mem_bw_gbs = 864;
  s.fp32_tflops = 91.6;
  s.fp16_tflops = 91.6;
  s.fp16_tensor_tflops = 362.05;
  s.bf16_tensor_tflops = 362.05;
  s.fp8_tensor_tflops = 733;
  s.pcie_gen = 4;
  return s;
}

ModelSpec a100() {
  ModelSpec s;
  s.id = "A100-SXM";
  s.vram_gib = 80;
  s.mem_bw_gbs = 2039;
  s.fp32_tflops = 19.5;
  s.fp16_tflops = 78;
  s.fp16_tensor_tflops = 312;
  s.bf16_tensor_tflops = 312;
  s.pcie_gen = 4;
  return s;
}

//! A healthy card of the model, times `factor`.
Figures healthy(const ModelSpec& s, double factor = 1.0) {
  Figures f;
  Policy p;
  for (Metric m : all_metrics()) {
    if (auto e = expected_figure(s, m, p.efficiency)) f[m] = *e * factor;
  }
  return f;
}

}  // namespace

TEST(BenchmarkMetrics, KeysRoundTrip) {
  for (Metric m : all_metrics()) {
    auto back = parse_metric(metric_key(m));
    ASSERT_TRUE(back.has_value()) << metric_key(m);
    EXPECT_EQ(*back, m);
    EXPECT_FALSE(metric_unit(m).empty());
    EXPECT_FALSE(metric_label(m).empty());
  }
  EXPECT_FALSE(parse_metric("compute.fp64").has_value());
  EXPECT_TRUE(is_gpu_metric(Metric::h2d));
  EXPECT_FALSE(is_gpu_metric(Metric::storage_seq_read));
  EXPECT_EQ(metric_label(Metric::fp16_tensor), "FP16 tensor throughput");
}

TEST(BenchmarkExpected, SpecTimesEfficiency) {
  Policy p;
  auto h = h100_sxm_spec();
  EXPECT_DOUBLE_EQ(*expected_figure(h, Metric::fp16_tensor, p.efficiency), 989.5 * 0.80);
  EXPECT_DOUBLE_EQ(*expected_figure(h, Metric::fp32, p.efficiency), 67 * 0.90);
  EXPECT_DOUBLE_EQ(*expected_figure(h, Metric::mem_copy, p.efficiency), 3350 * 0.88);
  EXPECT_NEAR(*expected_figure(h, Metric::h2d, p.efficiency), 63.0 * 0.80, 0.01);
  EXPECT_NEAR(*expected_figure(l40s(), Metric::d2h, p.efficiency), 31.5 * 0.80, 0.01);
  EXPECT_FALSE(expected_figure(a100(), Metric::fp8_tensor, p.efficiency).has_value());
  EXPECT_FALSE(expected_figure(h, Metric::storage_seq_read, p.efficiency).has_value());
  // Every constant is configuration.
  Efficiency e;
  e.tensor = 0.5;
  EXPECT_DOUBLE_EQ(*expected_figure(h, Metric::bf16_tensor, e), 989.5 * 0.5);
}

TEST(BenchmarkExpected, PcieTheory) {
  EXPECT_NEAR(pcie_theory_gbs(4, 16), 31.5, 0.01);
  EXPECT_NEAR(pcie_theory_gbs(5, 16), 63.0, 0.01);
  EXPECT_NEAR(pcie_theory_gbs(3, 16), 15.76, 0.01);
  EXPECT_NEAR(pcie_theory_gbs(4, 8), 15.75, 0.01);
  EXPECT_EQ(pcie_theory_gbs(0, 16), 0);
  EXPECT_EQ(pcie_theory_gbs(9, 16), 0);
}

TEST(BenchmarkScore, HealthyH100ScoresAbout100) {
  Policy p;
  auto f = healthy(h100_sxm_spec());
  EXPECT_NEAR(*performance_score(f, p), 100.0, 1e-9);
  EXPECT_NEAR(*quality_ratio(f, h100_sxm_spec(), p), 1.0, 1e-9);
}

TEST(BenchmarkScore, GeometricMeanAgainstH100) {
  Policy p;
  auto f = healthy(l40s());
  const double expect = 100.0 * std::cbrt((362.05 / 989.5) * (91.6 / 67) * (864.0 / 3350));
  EXPECT_NEAR(*performance_score(f, p), expect, 1e-9);
  EXPECT_NEAR(*quality_ratio(f, l40s(), p), 1.0, 1e-9);
  // The score scales with the figures; the ratio is against the model itself.
  auto slow = healthy(l40s(), 0.7);
  EXPECT_NEAR(*performance_score(slow, p), expect * 0.7, 1e-9);
  EXPECT_NEAR(*quality_ratio(slow, l40s(), p), 0.7, 1e-9);
}

TEST(BenchmarkScore, MemoryFallsBackToReadAndNeedsAllThree) {
  Policy p;
  auto f = healthy(l40s());
  f.erase(Metric::mem_copy);
  EXPECT_NEAR(*quality_ratio(f, l40s(), p), 1.0, 1e-9);
  f.erase(Metric::mem_read);
  EXPECT_FALSE(quality_ratio(f, l40s(), p).has_value());
  EXPECT_FALSE(performance_score(f, p).has_value());
}

TEST(BenchmarkVerdict, HealthyPasses) {
  Policy p;
  RunTelemetry t;
  t.clock_event_bits = 0x4;  // SW power cap under full GEMM load is normal
  t.memory_total_gib = 47.5;
  auto v = evaluate_gpu(l40s(), healthy(l40s()), t, p);
  EXPECT_TRUE(v.pass());
  EXPECT_NEAR(*v.quality_ratio, 1.0, 1e-9);
}

TEST(BenchmarkVerdict, PerfFactor07DelistsNamingFp16Tensor) {
  Policy p;
  auto v = evaluate_gpu(l40s(), healthy(l40s(), 0.7), RunTelemetry{}, p);
  ASSERT_FALSE(v.pass());
  ASSERT_FALSE(v.failures.empty());
  const auto& f = v.failures.front();
  EXPECT_EQ(f.metric, "compute.fp16_tensor");
  EXPECT_EQ(f.label, "FP16 tensor throughput");
  EXPECT_NEAR(f.ratio(), 0.7, 1e-9);
  EXPECT_NEAR(f.expected, 362.05 * 0.8, 1e-9);
  EXPECT_EQ(f.cause, "underperforming");
  const auto text = f.describe();
  EXPECT_NE(text.find("FP16 tensor throughput"), std::string::npos) << text;
  EXPECT_NE(text.find("ratio 0.70"), std::string::npos) << text;
}

TEST(BenchmarkVerdict, JustAboveThresholdPasses) {
  Policy p;
  EXPECT_TRUE(evaluate_gpu(l40s(), healthy(l40s(), 0.86), {}, p).pass());
  EXPECT_FALSE(evaluate_gpu(l40s(), healthy(l40s(), 0.84), {}, p).pass());
  p.min_quality_ratio = 0.8;
  EXPECT_TRUE(evaluate_gpu(l40s(), healthy(l40s(), 0.84), {}, p).pass());
}

TEST(BenchmarkVerdict, ThermalThrottleRecommendsCooling) {
  Policy p;
  RunTelemetry t;
  t.clock_event_bits = 0x20 | 0x40;
  t.max_temperature_c = 91;
  auto v = evaluate_gpu(l40s(), healthy(l40s(), 0.6), t, p);
  ASSERT_FALSE(v.pass());
  EXPECT_EQ(v.failures[0].cause, "thermal_throttling");
  EXPECT_NE(v.failures[0].recommendation.find("cooling"), std::string::npos);
  EXPECT_NE(v.failures[0].recommendation.find("91"), std::string::npos);
}

TEST(BenchmarkVerdict, PowerCapRecommendsPowerLimit) {
  Policy p;
  RunTelemetry t;
  t.clock_event_bits = 0x4;
  t.power_limit_w = 250;
  t.tdp_w = 350;
  auto v = evaluate_gpu(l40s(), healthy(l40s(), 0.7), t, p);
  ASSERT_FALSE(v.pass());
  EXPECT_EQ(v.failures[0].cause, "power_capping");
  EXPECT_NE(v.failures[0].recommendation.find("power limit"), std::string::npos);
  EXPECT_NE(v.failures[0].recommendation.find("250 W"), std::string::npos);
}

TEST(BenchmarkVerdict, LowHostLinkRecommendsSlot) {
  Policy p;
  auto f = healthy(l40s());
  f[Metric::h2d] = 12.0;  // a gen 4 card on a gen 3 riser
  RunTelemetry t;
  t.pcie_gen_current = 3;
  t.pcie_width_current = 16;
  t.pcie_gen_max = 4;
  t.pcie_width_max = 16;
  auto v = evaluate_gpu(l40s(), f, t, p);
  ASSERT_EQ(v.failures.size(), 1u);
  EXPECT_EQ(v.failures[0].metric, "host_link.h2d");
  EXPECT_EQ(v.failures[0].cause, "pcie_link");
  EXPECT_NE(v.failures[0].recommendation.find("riser"), std::string::npos);
  EXPECT_NE(v.failures[0].recommendation.find("gen 3 x16 of gen 4 x16"), std::string::npos);
}

TEST(BenchmarkVerdict, EccAndVramDelist) {
  Policy p;
  RunTelemetry t;
  t.ecc_uncorrected = 2;
  auto v = evaluate_gpu(l40s(), healthy(l40s()), t, p);
  ASSERT_EQ(v.failures.size(), 1u);
  EXPECT_EQ(v.failures[0].metric, "ecc");
  EXPECT_NE(v.failures[0].recommendation.find("RMA"), std::string::npos);

  RunTelemetry short_mem;
  short_mem.memory_total_gib = 42.0;  // 45.1 GB of a 48 GB model: 6% short
  v = evaluate_gpu(l40s(), healthy(l40s()), short_mem, p);
  ASSERT_EQ(v.failures.size(), 1u);
  EXPECT_EQ(v.failures[0].metric, "vram");
  short_mem.memory_total_gib = 42.9;  // 46.1 GB: 4% short, within tolerance
  EXPECT_TRUE(evaluate_gpu(l40s(), healthy(l40s()), short_mem, p).pass());
}

TEST(BenchmarkVerdict, MissingScoreMetricFails) {
  Policy p;
  auto f = healthy(l40s());
  f.erase(Metric::fp16_tensor);
  auto v = evaluate_gpu(l40s(), f, {}, p);
  ASSERT_EQ(v.failures.size(), 1u);
  EXPECT_EQ(v.failures[0].cause, "not_measured");
  EXPECT_EQ(v.failures[0].metric, "compute.fp16_tensor");
}

TEST(BenchmarkMachine, RequiredDownload) {
  Policy p;
  EXPECT_DOUBLE_EQ(required_download_mbps(24, p), 100);        // 62.4 → floor
  EXPECT_DOUBLE_EQ(required_download_mbps(96, p), 2.6 * 96);   // 249.6
  EXPECT_DOUBLE_EQ(required_download_mbps(8 * 80, p), 500);    // cap
}

TEST(BenchmarkMachine, ChecksAndRecommendations) {
  Policy p;
  MachineFacts m;
  m.gpu_count = 2;
  m.total_vram_gib = 96;
  m.host_ram_gib = 128;
  m.cpu_cores = 16;
  m.net_down_mbps = 900;
  m.net_up_mbps = 400;
  m.storage_seq_read_mbs = 1100;
  EXPECT_TRUE(evaluate_machine(m, p).empty());

  m.net_up_mbps = 100;          // needs 124.8
  m.storage_seq_read_mbs = 200;
  m.host_ram_gib = 64;
  m.cpu_cores = 3;
  auto f = evaluate_machine(m, p);
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(f[0].metric, "network.upload");
  EXPECT_NEAR(f[0].expected, 124.8, 1e-9);
  EXPECT_NE(f[0].recommendation.find("uplink"), std::string::npos);
  EXPECT_EQ(f[1].metric, "storage.seq_read");
  EXPECT_NE(f[1].recommendation.find("NVMe"), std::string::npos);
  EXPECT_EQ(f[2].metric, "host.ram");
  EXPECT_EQ(f[3].metric, "host.cpu_cores");
  EXPECT_DOUBLE_EQ(f[3].expected, 4);

  MachineFacts none;  // nothing measured: network and storage fail
  none.gpu_count = 0;
  EXPECT_EQ(evaluate_machine(none, p).size(), 3u);
}

TEST(BenchmarkStats, MedianAndPercentile) {
  EXPECT_EQ(median({}), 0);
  EXPECT_EQ(median({3, 1, 2}), 2);
  EXPECT_EQ(median({4, 1, 2, 3}), 2.5);
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  EXPECT_EQ(percentile(v, 50), 50);
  EXPECT_EQ(percentile(v, 99), 99);
  EXPECT_EQ(percentile(v, 100), 100);
  EXPECT_EQ(percentile({7}, 99), 7);
}

TEST(BenchmarkStats, ClockEventSummary) {
  EXPECT_EQ(clock_event_summary(0), "none");
  EXPECT_EQ(clock_event_summary(0x1 | 0x2), "none");
  EXPECT_EQ(clock_event_summary(0x20 | 0x40), "sw_thermal_slowdown, hw_thermal_slowdown");
}

// ---- Result bodies ----

namespace {

RunReport sample_report() {
  RunReport r;
  r.machine_id = "m_1";
  r.simulated = true;
  r.started_at_ms = 1000;
  r.finished_at_ms = 2000;
  GpuRun g;
  g.index = 0;
  g.uuid = "GPU-1";
  g.name = "NVIDIA L40S";
  g.memory_total_gib = 45;
  g.results.push_back({Metric::fp16_tensor, CaseStatus::ok, "", 290, {289, 290, 291}});
  g.results.push_back({Metric::fp8_tensor, CaseStatus::waived, "needs compute capability 8.9", 0, {}});
  g.telemetry.push_back({1500, "compute.fp16_tensor", 2100, 70, 300, 0x4});
  r.gpus.push_back(g);
  r.machine.push_back({Metric::storage_seq_read, CaseStatus::ok, "", 1100, {1000, 1100, 1200}});
  return r;
}

std::string body_with(const std::function<void(nlohmann::json&)>& edit) {
  auto j = to_json(sample_report());
  edit(j);
  return j.dump();
}

}  // namespace

TEST(BenchmarkReport, RoundTrip) {
  auto body = to_json(sample_report()).dump();
  auto r = parse_run_report(body);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->gpus.size(), 1u);
  EXPECT_EQ(r->gpus[0].results.size(), 2u);
  EXPECT_EQ(r->gpus[0].results[1].status, CaseStatus::waived);
  EXPECT_EQ(r->gpus[0].telemetry[0].clock_event_bits, 0x4u);
  EXPECT_EQ(figures_of(r->gpus[0].results).at(Metric::fp16_tensor), 290);
  EXPECT_EQ(figures_of(r->machine).at(Metric::storage_seq_read), 1100);
  EXPECT_EQ(fold_telemetry(r->gpus[0]).max_temperature_c, 70);
  EXPECT_TRUE(check_plausible(*r, {nullptr}, Policy{}).ok());
}

TEST(BenchmarkReport, RefusesBadFiguresNamingTheField) {
  struct Case {
    std::string name;
    std::function<void(nlohmann::json&)> edit;
    std::string field;
  };
  const std::vector<Case> cases = {
      {"negative median", [](auto& j) { j["gpus"][0]["results"][0]["median"] = -1; }, "gpus[0].results[0].median"},
      {"negative sample", [](auto& j) { j["gpus"][0]["results"][0]["samples"][1] = -5; },
       "gpus[0].results[0].samples[1]"},
      {"string figure", [](auto& j) { j["machine"][0]["median"] = "fast"; }, "machine[0].median"},
      {"null median", [](auto& j) { j["gpus"][0]["results"][0]["median"] = nullptr; }, "gpus[0].results[0].median"},
      {"unknown metric", [](auto& j) { j["gpus"][0]["results"][0]["key"] = "compute.fp64"; },
       "gpus[0].results[0].key"},
      {"machine metric on a GPU", [](auto& j) { j["gpus"][0]["results"][0]["key"] = "storage.seq_read"; },
       "gpus[0].results[0].key"},
      {"median outside samples", [](auto& j) { j["gpus"][0]["results"][0]["median"] = 500; },
       "gpus[0].results[0].median"},
      {"unknown field", [](auto& j) { j["gpus"][0]["score"] = 100; }, "gpus[0].score"},
      {"missing machine id", [](auto& j) { j.erase("machine_id"); }, "machine_id"},
      {"wrong protocol", [](auto& j) { j["protocol"] = 9; }, "protocol"},
      {"bad status", [](auto& j) { j["machine"][0]["status"] = "great"; }, "machine[0].status"},
      {"waived without reason", [](auto& j) { j["gpus"][0]["results"][1].erase("reason"); },
       "gpus[0].results[1].reason"},
      {"duplicate metric", [](auto& j) { j["machine"].push_back(j["machine"][0]); }, "machine[1].key"},
      {"telemetry temperature", [](auto& j) { j["gpus"][0]["telemetry"][0]["temperature_c"] = 1e6; },
       "gpus[0].telemetry[0].temperature_c"},
      {"time order", [](auto& j) { j["finished_at_ms"] = 10; }, "finished_at_ms"},
      {"duplicate gpu", [](auto& j) { j["gpus"].push_back(j["gpus"][0]); }, "gpus[1].uuid"},
  };
  for (const auto& c : cases) {
    auto r = parse_run_report(body_with(c.edit));
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_EQ(http_status(r.error().code), 400) << c.name;
    EXPECT_EQ(r.error().field, c.field) << c.name << ": " << r.error().message;
  }
}

TEST(BenchmarkReport, NanAndInfinityNameTheField) {
  auto body = to_json(sample_report()).dump();
  auto pos = body.find("\"median\":290");
  ASSERT_NE(pos, std::string::npos);
  auto nan_body = body;
  nan_body.replace(pos, 12, "\"median\":NaN");
  auto r = parse_run_report(nan_body);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(http_status(r.error().code), 400);
  EXPECT_EQ(r.error().field, "median");

  auto inf_body = body;
  inf_body.replace(pos, 12, "\"median\":1e999");
  r = parse_run_report(inf_body);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(http_status(r.error().code), 400);

  EXPECT_FALSE(parse_run_report("{\"protocol\":").ok());
  EXPECT_FALSE(parse_run_report("[]").ok());
}

TEST(BenchmarkReport, BoundsOnSamples) {
  ReportLimits lim;
  lim.max_samples = 2;
  auto r = parse_run_report(to_json(sample_report()).dump(), lim);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().field, "gpus[0].results[0].samples");
}

// The API document's body of POST /v1/agent/benchmarks is read_run_report described: it goes on into a
// GPU's results and telemetry and the machine's results, though a real read stops at the first bad part.
TEST(BenchmarkReport, ItsParserDescribesTheBodyItReads) {
  using nlohmann::json;
  const json s = describe_body([](const json& body) { (void)read_run_report(body); });
  EXPECT_EQ(s["required"],
            json({"protocol", "machine_id", "simulated", "started_at_ms", "finished_at_ms", "gpus", "machine"}));
  EXPECT_EQ(s["additionalProperties"], false);
  EXPECT_EQ(s["properties"]["protocol"]["minimum"], kProtocolVersion);
  EXPECT_EQ(s["properties"]["protocol"]["maximum"], kProtocolVersion);
  EXPECT_EQ(s["properties"]["gpus"]["maxItems"], ReportLimits{}.max_gpus);
  const auto& gpu = s["properties"]["gpus"]["items"];
  EXPECT_EQ(gpu["required"], json({"index", "uuid", "results"}));
  EXPECT_EQ(gpu["additionalProperties"], false);
  EXPECT_EQ(gpu["properties"]["index"]["maximum"], 63);
  EXPECT_EQ(gpu["properties"]["uuid"]["maxLength"], 100);
  EXPECT_EQ(gpu["properties"]["memory_total_gib"]["type"], json({"number", "null"}));
  EXPECT_EQ(gpu["properties"]["memory_total_gib"]["maximum"], 10'000);
  EXPECT_EQ(gpu["properties"]["telemetry"]["maxItems"], ReportLimits{}.max_telemetry);
  EXPECT_EQ(gpu["properties"]["results"]["maxItems"], 32);
  // A case: GPU keys only, and the fields of either status, each noted with the status that requires it.
  const auto& result = gpu["properties"]["results"]["items"];
  EXPECT_EQ(result["required"], json({"key", "status"}));
  EXPECT_EQ(result["properties"]["status"]["enum"], json({"ok", "waived", "failed"}));
  const auto& keys = result["properties"]["key"]["enum"];
  EXPECT_NE(std::find(keys.begin(), keys.end(), "compute.fp16_tensor"), keys.end());
  EXPECT_EQ(std::find(keys.begin(), keys.end(), "storage.seq_read"), keys.end());
  EXPECT_EQ(result["properties"]["samples"]["minItems"], 1);
  EXPECT_EQ(result["properties"]["samples"]["maxItems"], ReportLimits{}.max_samples);
  EXPECT_EQ(result["properties"]["samples"]["items"]["type"], "number");
  EXPECT_NE(result["properties"]["median"]["description"].get<std::string>().find("Required when status is ok."),
            std::string::npos);
  EXPECT_NE(result["properties"]["reason"]["description"].get<std::string>().find("Required when status is waived"),
            std::string::npos);
  const auto& sample = gpu["properties"]["telemetry"]["items"];
  EXPECT_EQ(sample["required"], json({"at_ms"}));
  EXPECT_EQ(sample["properties"]["temperature_c"]["maximum"], 200);
  // The machine's cases: machine keys only.
  const auto& machine_keys = s["properties"]["machine"]["items"]["properties"]["key"]["enum"];
  EXPECT_NE(std::find(machine_keys.begin(), machine_keys.end(), "storage.seq_read"), machine_keys.end());
  EXPECT_EQ(std::find(machine_keys.begin(), machine_keys.end(), "compute.fp16_tensor"), machine_keys.end());
  // Every member of a real report is described.
  const json report = to_json(sample_report());
  for (const auto& [k, v] : report.items()) EXPECT_TRUE(s["properties"].contains(k)) << k;
  for (const auto& [k, v] : report["gpus"][0].items()) EXPECT_TRUE(gpu["properties"].contains(k)) << k;
  for (const auto& [k, v] : report["gpus"][0]["results"][0].items()) EXPECT_TRUE(result["properties"].contains(k)) << k;
  for (const auto& [k, v] : report["gpus"][0]["telemetry"][0].items())
    EXPECT_TRUE(sample["properties"].contains(k)) << k;
}

// read_run_report is parse_run_report's reading: the same answer for a body parsed already.
TEST(BenchmarkReport, ReadingAParsedBodyAnswersTheSame) {
  auto j = to_json(sample_report());
  auto read = read_run_report(j);
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(to_json(*read), to_json(*parse_run_report(j.dump())));
  j["gpus"][0]["results"][0]["median"] = -1;
  auto bad = read_run_report(j);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().field, "gpus[0].results[0].median");
}

TEST(BenchmarkReport, AbsurdFiguresAgainstTheSpec) {
  Policy p;
  auto spec = l40s();
  auto rep = sample_report();
  EXPECT_TRUE(check_plausible(rep, {&spec}, p).ok());
  rep.gpus[0].results[0].median = 362.05 * 3.1;
  rep.gpus[0].results[0].samples = {362.05 * 3.1};
  auto s = check_plausible(rep, {&spec}, p);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().field, "gpus[0].results[0].median");
  EXPECT_NE(s.error().message.find("compute.fp16_tensor"), std::string::npos);

  auto rep2 = sample_report();
  rep2.machine[0].median = 5e6;
  rep2.machine[0].samples = {5e6};
  s = check_plausible(rep2, {&spec}, p);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().field, "machine[0].median");
}

TEST(BenchmarkCatalog, H100YardstickMatchesTheCatalog) {
  const GpuModel* h100 = nullptr;
  for (const auto& m : builtin_catalog()) {
    if (m.id == "H100-SXM") h100 = &m;
  }
  ASSERT_NE(h100, nullptr);
  auto s = model_spec(*h100);
  auto y = h100_sxm_spec();
  EXPECT_EQ(s.fp16_tensor_tflops, y.fp16_tensor_tflops);
  EXPECT_EQ(s.fp32_tflops, y.fp32_tflops);
  EXPECT_EQ(s.mem_bw_gbs, y.mem_bw_gbs);
  EXPECT_EQ(s.pcie_gen, y.pcie_gen);
  // Every built-in model yields the three score figures.
  for (const auto& m : builtin_catalog()) {
    auto spec = model_spec(m);
    Policy p;
    EXPECT_TRUE(performance_score(
                    {{Metric::fp16_tensor, *expected_figure(spec, Metric::fp16_tensor, p.efficiency)},
                     {Metric::fp32, *expected_figure(spec, Metric::fp32, p.efficiency)},
                     {Metric::mem_copy, *expected_figure(spec, Metric::mem_copy, p.efficiency)}},
                    p)
                    .has_value())
        << m.id;
  }
}
