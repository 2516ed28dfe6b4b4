// The embedded GPU catalog and reviewer-added models (core/gpu_catalog.hpp).
#include "core/gpu_catalog.hpp"

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/text.hpp"

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

namespace {

std::string matched(std::string_view nvml_name) {
  const auto* m = core::match_nvml_name(nvml_name, core::builtin_catalog());
  return m ? m->id : "-";
}

}  // namespace

// Issue 14 item 3: every name seen on real machines (data/nvml-observed.tsv) lands on its model.
TEST(GpuNames, EveryObservedNvmlNameMatchesItsModel) {
  std::ifstream in(std::string(GPUNEX_DATA_DIR) + "/nvml-observed.tsv");
  ASSERT_TRUE(in) << "cannot read data/nvml-observed.tsv";
  std::string line;
  std::vector<std::string> header;
  int rows = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line.front() == '#') continue;
    std::vector<std::string> cols;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, '\t');) cols.push_back(c);
    if (header.empty()) {
      header = cols;
      ASSERT_GE(header.size(), 2u);
      ASSERT_EQ(header[0], "nvml_name");
      ASSERT_EQ(header[1], "model");
      continue;
    }
    ASSERT_EQ(cols.size(), header.size()) << line;
    ++rows;
    EXPECT_EQ(matched(cols[0]), cols[1]) << cols[0];
    // Drivers and tools also print these names in other cases and spacings.
    EXPECT_EQ(matched(core::to_lower_ascii(cols[0])), cols[1]) << cols[0];
    EXPECT_EQ(matched("  " + cols[0] + " "), cols[1]) << cols[0];
  }
  EXPECT_EQ(rows, 11);
}

TEST(GpuNames, VariantsOfKnownNames) {
  // Older drivers print no "NVIDIA " in front.
  EXPECT_EQ(matched("A100-SXM4-80GB"), "A100-SXM-80GB");
  EXPECT_EQ(matched("A100-PCIE-40GB"), "A100-PCIE-40GB");
  EXPECT_EQ(matched("GeForce RTX 4090"), "RTX-4090");
  EXPECT_EQ(matched("NVIDIA RTX A6000"), "RTX-A6000");
  EXPECT_EQ(matched("NVIDIA  GeForce  RTX 4090"), "RTX-4090");
  EXPECT_EQ(matched("NVIDIA_L40S"), "L40S");
}

TEST(GpuNames, SimilarNamesOfOtherCardsStayUnknown) {
  EXPECT_EQ(matched("NVIDIA A100-SXM4-40GB"), "-");  // no A100 SXM 40GB in the catalog; not the 80GB one
  EXPECT_EQ(matched("NVIDIA H200 NVL"), "-");
  EXPECT_EQ(matched("NVIDIA H100 NVL"), "-");
  EXPECT_EQ(matched("NVIDIA GeForce RTX 4090 D"), "-");
  EXPECT_EQ(matched("NVIDIA L40"), "-");
  EXPECT_EQ(matched("NVIDIA GeForce RTX 4080"), "-");
  EXPECT_EQ(matched("NVIDIA"), "-");
  EXPECT_EQ(matched(""), "-");
}

TEST(GpuNames, ReviewerAddedModelsMatchByPatternOrName) {
  auto catalog = core::builtin_catalog();
  core::GpuModel with_pattern;
  with_pattern.id = "RTX-5090";
  with_pattern.name = "RTX 5090 (Blackwell)";
  with_pattern.nvml_name_pattern = "NVIDIA GeForce RTX 5090";
  core::GpuModel without;
  without.id = "A100-SXM-40GB";
  without.name = "NVIDIA A100-SXM4-40GB";
  catalog.push_back(with_pattern);
  catalog.push_back(without);
  const auto id = [&](std::string_view n) {
    const auto* m = core::match_nvml_name(n, catalog);
    return m ? m->id : "-";
  };
  EXPECT_EQ(id("NVIDIA GeForce RTX 5090"), "RTX-5090");
  EXPECT_EQ(id("NVIDIA A100-SXM4-40GB"), "A100-SXM-40GB");
  EXPECT_EQ(id("NVIDIA A100-SXM4-80GB"), "A100-SXM-80GB");
}

TEST(GpuNames, Words) {
  using W = std::vector<std::string>;
  EXPECT_EQ(core::gpu_name_words("NVIDIA A100-SXM4-80GB"), (W{"a", "100", "sxm", "4", "80", "gb"}));
  EXPECT_EQ(core::gpu_name_words("NVIDIA GeForce RTX 4090"), (W{"rtx", "4090"}));
  EXPECT_EQ(core::gpu_name_words("RTX4090"), (W{"rtx", "4090"}));
  EXPECT_EQ(core::gpu_name_words("rtx-4090"), (W{"rtx", "4090"}));
  EXPECT_EQ(core::gpu_name_words("Tesla T4"), (W{"t", "4"}));
  EXPECT_EQ(core::gpu_name_words("H100 NVIDIA"), (W{"h", "100", "nvidia"}));  // only a leading brand goes
  EXPECT_TRUE(core::gpu_name_words(" - ").empty());
}

// Issue 14 item 17: the marketplace's model filter, name by name.
TEST(ModelFilter, NamesTheModelACustomerMeans) {
  const auto models_for = [](std::string_view filter) {
    std::vector<std::string> ids;
    for (const auto& m : core::builtin_catalog()) {
      if (core::model_filter_matches(filter, m)) ids.push_back(m.id);
    }
    return ids;
  };
  using Ids = std::vector<std::string>;
  for (const char* f : {"RTX-4090", "rtx 4090", "RTX4090", "4090", "rtx-4090", "NVIDIA GeForce RTX 4090",
                        "geforce rtx 4090", " RTX 4090 "}) {
    EXPECT_EQ(models_for(f), Ids{"RTX-4090"}) << f;
  }
  EXPECT_EQ(models_for("L40S"), Ids{"L40S"});
  EXPECT_EQ(models_for("l40s"), Ids{"L40S"});
  EXPECT_EQ(models_for("L4"), Ids{"L4"});  // not the L40S
  EXPECT_EQ(models_for("H100"), (Ids{"H100-SXM", "H100-PCIE"}));
  EXPECT_EQ(models_for("h100 sxm"), Ids{"H100-SXM"});
  EXPECT_EQ(models_for("NVIDIA H100 80GB HBM3"), Ids{"H100-SXM"});
  EXPECT_EQ(models_for("A100"), (Ids{"A100-SXM-80GB", "A100-PCIE-40GB", "A100-PCIE-80GB"}));
  EXPECT_EQ(models_for("a100 80gb"), (Ids{"A100-SXM-80GB", "A100-PCIE-80GB"}));
  EXPECT_EQ(models_for("80GB A100"), (Ids{"A100-SXM-80GB", "A100-PCIE-80GB"}));
  EXPECT_EQ(models_for("A6000"), Ids{"RTX-A6000"});
  EXPECT_EQ(models_for("H200"), Ids{"H200"});
  EXPECT_EQ(models_for("RTX 5090"), Ids{});
  EXPECT_EQ(models_for("409"), Ids{});  // words, not characters
  EXPECT_EQ(models_for("NVIDIA"), Ids{});
  EXPECT_EQ(models_for(""), Ids{});
}

// Where one model is meant (a rate, a recommendation, an application): an id in any case is that
// model, a name that names one model is it, and otherwise the hint says what to write.
TEST(ModelFilter, OneModelByIdOrNameAndAHintOtherwise) {
  const auto& catalog = core::builtin_catalog();
  const auto ids = [&](std::string_view text) {
    std::vector<std::string> out;
    for (const auto* m : core::models_named(text, catalog)) out.push_back(m->id);
    return out;
  };
  using Ids = std::vector<std::string>;
  EXPECT_EQ(ids("l4"), Ids{"L4"});
  EXPECT_EQ(ids("h100-sxm"), Ids{"H100-SXM"}) << "an id in any case, before the name words";
  EXPECT_EQ(ids("RTX4090"), Ids{"RTX-4090"});
  EXPECT_EQ(ids("A100 80GB"), (Ids{"A100-SXM-80GB", "A100-PCIE-80GB"}));
  EXPECT_EQ(ids("TPU v5"), Ids{});
  EXPECT_EQ(core::model_hint("RTX4090", catalog), "did you mean RTX-4090?");
  EXPECT_EQ(core::model_hint("A100 80GB", catalog),
            "it names several models: A100-SXM-80GB, A100-PCIE-80GB; give one id");
  const auto all = core::model_hint("TPU v5", catalog);
  ASSERT_EQ(all.rfind("the catalog's ids: ", 0), 0u) << all;
  for (const auto& m : catalog) EXPECT_NE(all.find(m.id), std::string::npos) << m.id << " in " << all;
}
