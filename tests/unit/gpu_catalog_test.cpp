// The embedded GPU catalog and reviewer-added models (core/gpu_catalog.hpp).
#include "core/gpu_catalog.hpp"

#include <set>

#include <gtest/gtest.h>

namespace core = gpunex::core;

TEST(GpuCatalog, BuiltinHasEveryApiId) {
  auto parsed = core::parse_catalog_tsv(core::builtin_catalog_tsv());
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  std::set<std::string> ids;
  for (const auto& m : *parsed) ids.insert(m.id);
  const std::set<std::string> want = {"H100-SXM", "H100-PCIE",      "H200", "A100-SXM-80GB", "A100-PCIE-40GB",
                                      "A100-PCIE-80GB", "L40S", "L4", "RTX-4090", "RTX-A6000"};
  EXPECT_EQ(ids, want);
  EXPECT_EQ(core::builtin_catalog().size(), want.size());
}

TEST(GpuCatalog, ReferenceFigures) {
  for (const auto& m : core::builtin_catalog()) {
    EXPECT_GT(m.vram_gib, 0) << m.id;
    EXPECT_TRUE(m.fp32_tflops && m.mem_bw_gbs && m.fp16_tensor_tflops) << m.id;
    EXPECT_FALSE(m.nvml_name_pattern.empty()) << m.id;
    EXPECT_TRUE(m.builtin);
    if (m.id == "L40S") {
      EXPECT_EQ(m.vram_gib, 48);
      EXPECT_EQ(*m.mem_bw_gbs, 864);
      EXPECT_EQ(m.name, "NVIDIA L40S");
      EXPECT_EQ(m.compute_capability, "8.9");
    }
    if (m.id == "A100-PCIE-40GB") {
      EXPECT_FALSE(m.fp8_tensor_tflops);  // NA: Ampere has no FP8
    }
  }
  auto j = core::to_json(core::builtin_catalog().front());
  EXPECT_TRUE(j.contains("fp8_tensor_tflops"));
}

TEST(GpuCatalog, RejectsBadRows) {
  EXPECT_FALSE(core::parse_catalog_tsv("id\tname\tvram_gib\nX\tY\n").ok());
  EXPECT_FALSE(core::parse_catalog_tsv("id\tname\tvram_gib\nbad id\tY\t8\n").ok());
  EXPECT_FALSE(core::parse_catalog_tsv("id\tname\tvram_gib\nOK-1\tY\tlots\n").ok());
  EXPECT_FALSE(core::parse_catalog_tsv("id\tname\tcolour\nOK-1\tY\tred\n").ok());
  auto ok = core::parse_catalog_tsv("# c\nid\tname\tvram_gib\tfp32_tflops\nOK-1\tY\t8\tNA\n");
  ASSERT_TRUE(ok.ok());
  EXPECT_FALSE((*ok)[0].fp32_tflops);
}

TEST(GpuCatalog, ReviewerModel) {
  nlohmann::json j = {{"id", "RTX-5090"}, {"name", "NVIDIA GeForce RTX 5090"}, {"vram_gib", 32}, {"fp32_tflops", 104.8}};
  auto m = core::parse_gpu_model(j, "add_model");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_FALSE(m->builtin);
  EXPECT_EQ(*m->fp32_tflops, 104.8);
  j["id"] = "rtx 5090";
  auto bad = core::parse_gpu_model(j, "add_model");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().field, "add_model.id");
  j["id"] = "RTX-5090";
  j["fp32_tflops"] = -1;
  EXPECT_EQ(core::parse_gpu_model(j, "add_model").error().field, "add_model.fp32_tflops");
  j.erase("fp32_tflops");
  j.erase("vram_gib");
  EXPECT_EQ(core::parse_gpu_model(j, "add_model").error().field, "add_model.vram_gib");
}

TEST(GpuCatalog, ReviewerModelTakesEveryFigure) {
  nlohmann::json j = {{"id", "RTX-5090"},
                      {"name", "NVIDIA GeForce RTX 5090"},
                      {"vram_gib", 32},
                      {"nvml_name_pattern", "NVIDIA GeForce RTX 5090"},
                      {"mem_bw_gbs", 1792},
                      {"fp32_tflops", 104.8},
                      {"fp16_tflops", 104.8},
                      {"fp16_tensor_tflops", 209.5},
                      {"bf16_tensor_tflops", 209.5},
                      {"fp8_tensor_tflops", 419},
                      {"tdp_w", 575},
                      {"pcie_gen", 5},
                      {"compute_capability", "12.0"}};
  auto m = core::parse_gpu_model(j, "add_model");
  ASSERT_TRUE(m.ok()) << m.error().message;
  auto back = core::to_json(*m);
  for (const auto& [k, v] : j.items()) EXPECT_EQ(back[k], v) << k;

  auto field_of = [&](const char* key, nlohmann::json bad) {
    auto copy = j;
    copy[key] = std::move(bad);
    auto r = core::parse_gpu_model(copy, "add_model");
    return r.ok() ? std::string("accepted") : r.error().field.value_or("");
  };
  for (const auto& name : core::reference_figure_names()) {
    EXPECT_EQ(field_of(name.c_str(), 0), "add_model." + name);
    EXPECT_EQ(field_of(name.c_str(), "fast"), "add_model." + name);
  }
  EXPECT_EQ(field_of("pcie_gen", 9), "add_model.pcie_gen");
  EXPECT_EQ(field_of("compute_capability", "twelve"), "add_model.compute_capability");
  EXPECT_EQ(field_of("compute_capability", "12"), "add_model.compute_capability");
  EXPECT_EQ(field_of("compute_capability", "8.9"), "accepted");
  EXPECT_EQ(field_of("nvml_name_pattern", " padded "), "add_model.nvml_name_pattern");
}
