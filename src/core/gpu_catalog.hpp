#pragma once
// The GPU catalog: models named by id ("L40S", "H100-SXM"), a display name and
// the reference figures of DESIGN §4 (spec peaks from reference/gpu-specs.tsv).
// The built-in models are project data (data/gpu-catalog.tsv), embedded at
// build time; reviewers add others, which live beside them in the store.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"

namespace gpunex::core {

//! One GPU model and its reference figures; absent figures (NA) are nullopt.
struct GpuModel {
  std::string id;                 // catalog id, e.g. "RTX-4090"
  std::string name;               // display name, e.g. "NVIDIA GeForce RTX 4090"
  std::string nvml_name_pattern;  // what NVML reports for this model ("" when unknown)
  double vram_gib = 0;
  std::optional<double> mem_bw_gbs;
  std::optional<double> fp32_tflops;
  std::optional<double> fp16_tflops;
  std::optional<double> fp16_tensor_tflops;
  std::optional<double> bf16_tensor_tflops;
  std::optional<double> fp8_tensor_tflops;
  std::optional<double> tdp_w;
  std::optional<int> pcie_gen;
  std::string compute_capability;  // "8.9", "" when unknown
  bool builtin = true;
};

//! The names of the optional reference figures, as used in JSON and the TSV header.
const std::vector<std::string>& reference_figure_names();

//! A catalog id: 2–32 characters of A–Z, 0–9 and '-', starting with a letter or digit.
bool is_valid_model_id(std::string_view id);

//! Parses the catalog TSV ('#' comments, a header row naming the columns, tab-separated rows).
Result<std::vector<GpuModel>> parse_catalog_tsv(std::string_view text);
//! The built-in catalog's TSV, embedded from data/gpu-catalog.tsv at build time.
std::string_view builtin_catalog_tsv();
//! The built-in catalog, parsed once (the embedded data is checked by a unit test).
const std::vector<GpuModel>& builtin_catalog();

//! A GPU name reduced to words for comparison: lower case; every character other than a letter or
//! a digit separates words, and so does a change between letters and digits ("A100-SXM4-80GB" →
//! a 100 sxm 4 80 gb, "RTX4090" → rtx 4090); leading brand words (NVIDIA, GeForce, Tesla, Quadro)
//! are dropped, as drivers add or leave them out ("GeForce RTX 3090" on older drivers).
std::vector<std::string> gpu_name_words(std::string_view name);

//! The catalog model of a GPU by the name NVML reports: the model whose nvml_name_pattern, else
//! whose display name, has the same words (gpu_name_words). The words must all match, so that a
//! different card with a similar name ("NVIDIA H200 NVL", "NVIDIA A100-SXM4-40GB", "NVIDIA GeForce
//! RTX 4090 D") stays unknown rather than taking a model it would fail against. A pattern match
//! wins over a name match, then catalog order; nullptr when none.
const GpuModel* match_nvml_name(std::string_view nvml_name, const std::vector<GpuModel>& catalog);

//! Whether a customer's model filter names model `m`: each of the filter's words (gpu_name_words)
//! is a word of m's id, of its display name or of its NVML name (all in one of them). So "rtx 4090",
//! "RTX4090", "4090" and "NVIDIA GeForce RTX 4090" name the RTX-4090; "A100" names every A100 and
//! "A100 80GB" the two 80 GB ones; "L4" names the L4 but not the L40S. A filter without words
//! ("", "NVIDIA") names nothing.
bool model_filter_matches(std::string_view filter, const GpuModel& m);

//! The models a provider's text names where one model is meant (a rate, a recommendation): the model
//! whose id it is in any case ("l4", "rtx-4090"), else every model that model_filter_matches
//! ("RTX4090", "4090"). Empty when it names none; more than one when it is ambiguous ("A100").
std::vector<const GpuModel*> models_named(std::string_view text, const std::vector<GpuModel>& catalog);

//! What to tell someone whose `text` is not one catalog id: "did you mean RTX-4090?" when it names one
//! model, "it names several models: A100-PCIE-40GB, A100-SXM-80GB; give one id" when several, else
//! "the catalog's ids: A10, A100-PCIE-40GB, ...".
std::string model_hint(std::string_view text, const std::vector<GpuModel>& catalog);

//! The API shape: {id, name, nvml_name_pattern, vram_gib, <figures or null>, builtin}.
nlohmann::json to_json(const GpuModel& m);
//! Reads a reviewer's new model ({id, name, vram_gib, figures...}); errors name fields under `path`.
Result<GpuModel> parse_gpu_model(const nlohmann::json& j, const std::string& path);

}  // namespace gpunex::core
