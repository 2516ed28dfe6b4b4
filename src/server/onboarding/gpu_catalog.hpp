#pragma once
// The GPU catalog in the store, and every SQL statement on its tables
// (gpu_models, gpu_reference_prices): the built-in models,
// upserted at start-up from the embedded data, and models reviewers add.

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/gpu_catalog.hpp"
#include "core/money.hpp"
#include "core/result.hpp"
#include "store/store.hpp"

namespace gpunex::server {

//! Upserts every built-in model (reviewer-added ones are left alone). Run at start-up.
void seed_catalog(store::Store& store, std::int64_t now_ms);
std::vector<core::GpuModel> list_models(store::Tx& tx);
std::optional<core::GpuModel> find_model(store::Tx& tx, const std::string& id);
//! The catalog id a provider's `text` names where one model is meant (core::models_named: the id in
//! any case, or a name that names one model: "l4", "RTX4090"); else 422 unknown_model naming `field`,
//! with core::model_hint's words.
core::Result<std::string> catalog_id_named(store::Tx& tx, const std::string& text, const std::string& field);
//! Every model's VRAM in GiB by id: what an offer needs of the catalog, without parsing the figures.
std::unordered_map<std::string, double> model_vram_gib(store::Tx& tx);
//! Adds a reviewer's model; 409 (field `field`) when the id is taken.
core::Status add_model(store::Tx& tx, const core::GpuModel& m, const std::string& added_by, const std::string& field,
                       std::int64_t now_ms);

//! A model's catalog reference price (gpu_reference_prices: the built-in models' come with
//! migration 5, an added model's from the reviewer): the price recommendation's last basis.
void set_reference_price(store::Tx& tx, const std::string& model, core::MicroUsdc price, std::int64_t now_ms);
std::optional<core::MicroUsdc> reference_price(store::Tx& tx, const std::string& model);

}  // namespace gpunex::server
