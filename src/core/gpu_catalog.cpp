#include "core/gpu_catalog.hpp"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <cmath>
#include <map>

#include "core/json_reader.hpp"
#include "core/text.hpp"

namespace gpunex::core {

namespace {

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    auto pos = s.find(sep, start);
    out.push_back(s.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

std::optional<double> parse_double(std::string_view s) {
  double d = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(d) || d < 0) return std::nullopt;
  return d;
}

std::optional<double>* figure(GpuModel& m, std::string_view name) {
  if (name == "mem_bw_gbs") return &m.mem_bw_gbs;
  if (name == "fp32_tflops") return &m.fp32_tflops;
  if (name == "fp16_tflops") return &m.fp16_tflops;
  if (name == "fp16_tensor_tflops") return &m.fp16_tensor_tflops;
  if (name == "bf16_tensor_tflops") return &m.bf16_tensor_tflops;
  if (name == "fp8_tensor_tflops") return &m.fp8_tensor_tflops;
  if (name == "tdp_w") return &m.tdp_w;
  return nullptr;
}

const std::optional<double>* figure(const GpuModel& m, std::string_view name) {
  return figure(const_cast<GpuModel&>(m), name);  // NOLINT: read-only view of the same member
}

// "8.9", "12.0": what CUDA reports as a device's compute capability.
bool is_compute_capability(std::string_view s) {
  const auto dot = s.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot > 2 || s.size() != dot + 2) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i != dot && (s[i] < '0' || s[i] > '9')) return false;
  }
  return true;
}

}  // namespace

const std::vector<std::string>& reference_figure_names() {
  static const std::vector<std::string> names = {"mem_bw_gbs",         "fp32_tflops",        "fp16_tflops",
                                                 "fp16_tensor_tflops", "bf16_tensor_tflops", "fp8_tensor_tflops",
                                                 "tdp_w"};
  return names;
}

bool is_valid_model_id(std::string_view id) {
  if (id.size() < 2 || id.size() > 32 || id.front() == '-') return false;
  for (char c : id) {
    if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

Result<std::vector<GpuModel>> parse_catalog_tsv(std::string_view text) {
  std::vector<GpuModel> out;
  std::vector<std::string_view> header;
  int line_no = 0;
  for (auto line : split(text, '\n')) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    auto cols = split(line, '\t');
    if (header.empty()) {
      header = cols;
      continue;
    }
    auto where = [&](std::string_view col) { return "catalog line " + std::to_string(line_no) + " " + std::string(col); };
    if (cols.size() != header.size()) {
      return Error::make(ErrorCode::invalid_field, "catalog line " + std::to_string(line_no) + " has " +
                                                       std::to_string(cols.size()) + " columns, header has " +
                                                       std::to_string(header.size()));
    }
    GpuModel m;
    for (std::size_t i = 0; i < cols.size(); ++i) {
      const auto col = header[i];
      const auto v = cols[i];
      if (col == "id") {
        if (!is_valid_model_id(v)) return Error::make(ErrorCode::invalid_field, where(col) + ": bad id");
        m.id = std::string(v);
      } else if (col == "name") {
        m.name = std::string(v);
      } else if (col == "nvml_name_pattern") {
        m.nvml_name_pattern = std::string(v);
      } else if (col == "vram_gib") {
        auto d = parse_double(v);
        if (!d || *d <= 0) return Error::make(ErrorCode::invalid_field, where(col) + ": not a positive number");
        m.vram_gib = *d;
      } else if (col == "pcie_gen") {
        auto d = parse_double(v);
        if (v != "NA") {
          if (!d) return Error::make(ErrorCode::invalid_field, where(col) + ": not a number");
          m.pcie_gen = static_cast<int>(*d);
        }
      } else if (col == "compute_capability") {
        m.compute_capability = v == "NA" ? "" : std::string(v);
      } else if (auto* f = figure(m, col)) {
        if (v != "NA") {
          auto d = parse_double(v);
          if (!d) return Error::make(ErrorCode::invalid_field, where(col) + ": not a number or NA");
          *f = *d;
        }
      } else {
        return Error::make(ErrorCode::invalid_field, "catalog header has an unknown column " + std::string(col));
      }
    }
    if (m.id.empty() || m.name.empty()) {
      return Error::make(ErrorCode::invalid_field, "catalog line " + std::to_string(line_no) + " lacks id or name");
    }
    out.push_back(std::move(m));
  }
  return out;
}

const std::vector<GpuModel>& builtin_catalog() {
  static const std::vector<GpuModel> list = [] {
    auto parsed = parse_catalog_tsv(builtin_catalog_tsv());
    return parsed ? std::move(*parsed) : std::vector<GpuModel>{};
  }();
  return list;
}

std::vector<std::string> gpu_name_words(std::string_view name) {
  enum class Kind { other, letter, digit };
  const auto kind = [](char c) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return Kind::letter;
    if (c >= '0' && c <= '9') return Kind::digit;
    return Kind::other;
  };
  std::vector<std::string> words;
  Kind last = Kind::other;
  for (const char c : name) {
    const Kind k = kind(c);
    if (k == Kind::other) {
      last = k;
      continue;
    }
    if (k != last) words.emplace_back();
    words.back().push_back(k == Kind::letter ? static_cast<char>(c | 0x20) : c);  // ASCII lower case
    last = k;
  }
  static constexpr std::string_view kBrands[] = {"nvidia", "geforce", "tesla", "quadro"};
  std::size_t brands = 0;
  while (brands < words.size() &&
         std::find(std::begin(kBrands), std::end(kBrands), words[brands]) != std::end(kBrands)) {
    ++brands;
  }
  words.erase(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(brands));
  return words;
}

const GpuModel* match_nvml_name(std::string_view nvml_name, const std::vector<GpuModel>& catalog) {
  const auto words = gpu_name_words(nvml_name);
  if (words.empty()) return nullptr;
  for (const auto& m : catalog) {
    if (!m.nvml_name_pattern.empty() && gpu_name_words(m.nvml_name_pattern) == words) return &m;
  }
  for (const auto& m : catalog) {
    if (gpu_name_words(m.name) == words) return &m;
  }
  return nullptr;
}

bool model_filter_matches(std::string_view filter, const GpuModel& m) {
  const auto want = gpu_name_words(filter);
  if (want.empty()) return false;
  const auto contains = [&](std::string_view name) {
    const auto have = gpu_name_words(name);
    return std::all_of(want.begin(), want.end(),
                       [&](const std::string& w) { return std::find(have.begin(), have.end(), w) != have.end(); });
  };
  return contains(m.id) || contains(m.name) || (!m.nvml_name_pattern.empty() && contains(m.nvml_name_pattern));
}

std::vector<const GpuModel*> models_named(std::string_view text, const std::vector<GpuModel>& catalog) {
  const auto lower = to_lower_ascii(text);
  for (const auto& m : catalog) {
    if (to_lower_ascii(m.id) == lower) return {&m};
  }
  std::vector<const GpuModel*> out;
  for (const auto& m : catalog) {
    if (model_filter_matches(text, m)) out.push_back(&m);
  }
  return out;
}

std::string model_hint(std::string_view text, const std::vector<GpuModel>& catalog) {
  const auto named = models_named(text, catalog);
  const auto ids = [](const auto& models) {
    std::string out;
    for (const auto& m : models) out += (out.empty() ? "" : ", ") + m->id;
    return out;
  };
  if (named.size() == 1) return "did you mean " + named.front()->id + "?";
  if (named.size() > 1) return "it names several models: " + ids(named) + "; give one id";
  std::vector<const GpuModel*> all;
  for (const auto& m : catalog) all.push_back(&m);
  return "the catalog's ids: " + ids(all);
}

nlohmann::json to_json(const GpuModel& m) {
  nlohmann::json j = {{"id", m.id},
                      {"name", m.name},
                      {"nvml_name_pattern", m.nvml_name_pattern.empty() ? nlohmann::json(nullptr)
                                                                        : nlohmann::json(m.nvml_name_pattern)},
                      {"vram_gib", m.vram_gib},
                      {"pcie_gen", m.pcie_gen ? nlohmann::json(*m.pcie_gen) : nlohmann::json(nullptr)},
                      {"compute_capability", m.compute_capability.empty() ? nlohmann::json(nullptr)
                                                                          : nlohmann::json(m.compute_capability)},
                      {"builtin", m.builtin}};
  for (const auto& name : reference_figure_names()) {
    const auto* f = figure(m, name);
    j[name] = *f ? nlohmann::json(**f) : nlohmann::json(nullptr);
  }
  return j;
}

Result<GpuModel> parse_gpu_model(const nlohmann::json& j, const std::string& path) {
  ObjectReader r(j, path);
  GpuModel m;
  m.builtin = false;
  m.id = r.required_string("id", 2, 32);
  if (!r.failed() && !is_valid_model_id(m.id)) {
    r.fail(Error::make(ErrorCode::invalid_field,
                       r.path_of("id") + " must be 2-32 characters of A-Z, 0-9 and '-' (e.g. \"RTX-5090\")",
                       r.path_of("id")));
  }
  m.name = r.required_line("name", 1, 100);
  if (!r.failed() && (!is_clean_utf8(m.name) || trim(m.name).empty())) {
    r.fail(Error::make(ErrorCode::invalid_field, r.path_of("name") + " must be plain text", r.path_of("name")));
  }
  m.vram_gib = r.required_number("vram_gib", 1, 4096);
  m.nvml_name_pattern = r.optional_line("nvml_name_pattern", 100).value_or("");
  if (!r.failed() && (!is_clean_utf8(m.nvml_name_pattern) || trim(m.nvml_name_pattern) != m.nvml_name_pattern)) {
    r.fail(
        Error::make(ErrorCode::invalid_field,
                    r.path_of("nvml_name_pattern") + " must be the name NVML reports, e.g. \"NVIDIA GeForce RTX 5090\"",
                    r.path_of("nvml_name_pattern")));
  }
  for (const auto& name : reference_figure_names()) {
    const auto* v = r.optional_value(name);
    r.describe_field(name, {{"type", "number"}, {"exclusiveMinimum", 0}, {"maximum", 1e6}});
    if (!v || r.failed()) continue;
    if (!v->is_number() || !std::isfinite(v->get<double>()) || v->get<double>() <= 0 || v->get<double>() > 1e6) {
      r.fail(Error::make(ErrorCode::invalid_field, r.path_of(name) + " must be a positive number", r.path_of(name)));
      continue;
    }
    *figure(m, name) = v->get<double>();
  }
  auto gen = r.optional_int("pcie_gen", 1, 7);
  if (gen) m.pcie_gen = static_cast<int>(*gen);
  m.compute_capability = r.optional_line("compute_capability", 8).value_or("");
  if (!r.failed() && !m.compute_capability.empty() && !is_compute_capability(m.compute_capability)) {
    r.fail(Error::make(ErrorCode::invalid_field,
                       r.path_of("compute_capability") + " must be MAJOR.MINOR, e.g. \"12.0\"",
                       r.path_of("compute_capability")));
  }
  if (auto s = r.finish(); !s) return std::move(s).error();
  return m;
}

}  // namespace gpunex::core
