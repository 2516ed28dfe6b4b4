#include "server/onboarding/gpu_catalog.hpp"

namespace gpunex::server {

namespace {

std::string figures_json(const core::GpuModel& m) {
  auto j = core::to_json(m);
  nlohmann::json f = nlohmann::json::object();
  for (const auto& name : core::reference_figure_names()) f[name] = j[name];
  f["pcie_gen"] = j["pcie_gen"];
  f["compute_capability"] = j["compute_capability"];
  return f.dump();
}

core::GpuModel from_row(const store::Row& r) {
  core::GpuModel m;
  m.id = r.str(0);
  m.name = r.str(1);
  m.nvml_name_pattern = r.str(2);
  m.vram_gib = r.f64(3);
  auto f = nlohmann::json::parse(r.str(4), nullptr, false);
  auto num = [&](const char* k) -> std::optional<double> {
    if (f.is_object() && f.contains(k) && f[k].is_number()) return f[k].get<double>();
    return std::nullopt;
  };
  m.mem_bw_gbs = num("mem_bw_gbs");
  m.fp32_tflops = num("fp32_tflops");
  m.fp16_tflops = num("fp16_tflops");
  m.fp16_tensor_tflops = num("fp16_tensor_tflops");
  m.bf16_tensor_tflops = num("bf16_tensor_tflops");
  m.fp8_tensor_tflops = num("fp8_tensor_tflops");
  m.tdp_w = num("tdp_w");
  if (auto g = num("pcie_gen")) m.pcie_gen = static_cast<int>(*g);
  if (f.is_object() && f.contains("compute_capability") && f["compute_capability"].is_string()) {
    m.compute_capability = f["compute_capability"].get<std::string>();
  }
  m.builtin = r.boolean(5);
  return m;
}

constexpr const char* kColumns = "id, name, nvml_name_pattern, vram_gib, figures, builtin";

}  // namespace

void seed_catalog(store::Store& store, std::int64_t now_ms) {
  store.transact([&](store::Tx& tx) {
    const auto now = now_ms;
    for (const auto& m : core::builtin_catalog()) {
      tx.exec("INSERT INTO gpu_models (id, name, nvml_name_pattern, vram_gib, figures, builtin, created_at, updated_at) "
              "VALUES (?, ?, ?, ?, ?, 1, ?, ?) ON CONFLICT (id) DO UPDATE SET name = excluded.name, "
              "nvml_name_pattern = excluded.nvml_name_pattern, vram_gib = excluded.vram_gib, "
              "figures = excluded.figures, builtin = 1, updated_at = excluded.updated_at",
              {m.id, m.name, m.nvml_name_pattern, m.vram_gib, figures_json(m), now, now});
    }
  });
}

std::vector<core::GpuModel> list_models(store::Tx& tx) {
  std::vector<core::GpuModel> out;
  for (const auto& r : tx.query(std::string("SELECT ") + kColumns + " FROM gpu_models ORDER BY builtin DESC, id")) {
    out.push_back(from_row(r));
  }
  return out;
}

std::optional<core::GpuModel> find_model(store::Tx& tx, const std::string& id) {
  auto r = tx.query_one(std::string("SELECT ") + kColumns + " FROM gpu_models WHERE id = ?", {id});
  if (!r) return std::nullopt;
  return from_row(*r);
}

core::Result<std::string> catalog_id_named(store::Tx& tx, const std::string& text, const std::string& field) {
  if (auto exact = find_model(tx, text)) return exact->id;
  const auto catalog = list_models(tx);
  const auto named = core::models_named(text, catalog);
  if (named.size() == 1) return named.front()->id;
  return core::Error::make(
             core::ErrorCode::unprocessable,
             field + ": \"" + text + "\" is not a model of the GPU catalog; " + core::model_hint(text, catalog), field)
      .with_code("unknown_model");
}

std::unordered_map<std::string, double> model_vram_gib(store::Tx& tx) {
  std::unordered_map<std::string, double> vram;
  for (const auto& r : tx.query("SELECT id, vram_gib FROM gpu_models")) vram.emplace(r.str(0), r.f64(1));
  return vram;
}

core::Status add_model(store::Tx& tx, const core::GpuModel& m, const std::string& added_by, const std::string& field,
                       std::int64_t now_ms) {
  const auto now = now_ms;
  auto rows = tx.query(
      "INSERT INTO gpu_models (id, name, nvml_name_pattern, vram_gib, figures, builtin, added_by, created_at, updated_at) "
      "VALUES (?, ?, ?, ?, ?, 0, ?, ?, ?) ON CONFLICT (id) DO NOTHING RETURNING id",
      {m.id, m.name, m.nvml_name_pattern, m.vram_gib, figures_json(m), added_by, now, now});
  if (rows.empty()) {
    return core::Error::make(core::ErrorCode::conflict, "the catalog already has a model " + m.id, field)
        .with_code("model_exists");
  }
  return core::ok_status();
}

void set_reference_price(store::Tx& tx, const std::string& model, core::MicroUsdc price, std::int64_t now_ms) {
  tx.exec("INSERT INTO gpu_reference_prices (model, usdc_micro, updated_at) VALUES (?, ?, ?) "
          "ON CONFLICT (model) DO UPDATE SET usdc_micro = excluded.usdc_micro, updated_at = excluded.updated_at",
          {model, price, now_ms});
}

std::optional<core::MicroUsdc> reference_price(store::Tx& tx, const std::string& model) {
  if (auto r = tx.query_one("SELECT usdc_micro FROM gpu_reference_prices WHERE model = ?", {model})) return r->i64(0);
  return std::nullopt;
}

}  // namespace gpunex::server
