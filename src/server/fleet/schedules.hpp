#pragma once
// Machine availability schedules with their maintenance windows: stored,
// loaded, and shown with what they mean now. The schedule rules live in
// core/schedule.hpp; the SQL in schedules_repo. The market reads them to
// say when an offer is available.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/schedule.hpp"
#include "store/store.hpp"

namespace gpunex::server {

//! The provider that owns a machine, if the machine exists.
std::optional<std::string> machine_owner(store::Tx& tx, const std::string& machine_id);
//! Replaces a machine's schedule and maintenance windows; a maintenance window that was already
//! declared keeps its declared_at (uptime excludes only maintenance declared in advance).
void save_schedule(store::Tx& tx, const std::string& provider_id, const std::string& machine_id,
                   const core::Schedule& s, std::int64_t now_ms);
//! A machine's schedule; nullopt when none was set (the machine is then available 24/7).
std::optional<core::Schedule> load_schedule(store::Tx& tx, const std::string& machine_id);
//! When each of the machine's maintenance windows was declared, in the order of load_schedule's.
std::vector<std::int64_t> maintenance_declared_times(store::Tx& tx, const std::string& machine_id);
//! The schedule's API form plus, at `now_ms`: available_now, available_until, next_window_start.
nlohmann::json schedule_json(const std::string& machine_id, const core::Schedule& s, std::int64_t now_ms);

}  // namespace gpunex::server
