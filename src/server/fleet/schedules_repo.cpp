#include "server/fleet/schedules_repo.hpp"

namespace gpunex::server {

namespace {

std::string shape_of(const std::string& recurrence, std::int64_t starts, std::int64_t ends, const std::string& start_local,
                     const std::string& end_local) {
  return recurrence + "|" + std::to_string(starts) + "|" + std::to_string(ends) + "|" + start_local + "|" + end_local;
}

store::Value text_or_null(const std::string& v) {
  if (v.empty()) return nullptr;
  return v;
}

store::Value ms_or_null(const std::optional<std::int64_t>& v) {
  if (!v) return nullptr;
  return *v;
}

}  // namespace

MaintenanceKey maintenance_key(const MaintenanceRecord& m) {
  return MaintenanceKey{m.kind, m.category,
                        shape_of(m.recurrence_json, m.starts_ms.value_or(0), m.ends_ms.value_or(0), m.start_local,
                                 m.end_local)};
}

std::optional<std::string> SchedulesRepo::schedule_spec(const std::string& machine_id) {
  auto r = tx_.query_one("SELECT spec FROM machine_schedules WHERE machine_id = ?", {machine_id});
  if (!r) return std::nullopt;
  return r->str(0);
}

void SchedulesRepo::upsert_schedule(const std::string& machine_id, const std::string& provider_id,
                                    const ScheduleRecord& s, std::int64_t now_ms) {
  tx_.exec("INSERT INTO machine_schedules (machine_id, provider_id, timezone, always_on, spec, updated_at) "
           "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (machine_id) DO UPDATE SET timezone = excluded.timezone, "
           "always_on = excluded.always_on, spec = excluded.spec, updated_at = excluded.updated_at",
           {machine_id, provider_id, s.timezone, std::int64_t{s.always_on ? 1 : 0}, s.spec_json, now_ms});
}

std::map<MaintenanceKey, std::int64_t> SchedulesRepo::maintenance_declared_at(const std::string& machine_id) {
  std::map<MaintenanceKey, std::int64_t> declared;
  for (const auto& r : tx_.query("SELECT kind, category, recurrence, starts_at, ends_at, start_local, end_local, "
                                 "declared_at FROM maintenance_windows WHERE machine_id = ?",
                                 {machine_id})) {
    declared.emplace(MaintenanceKey{r.str(0), r.str(1),
                                    shape_of(r.opt_str(2).value_or(""), r.opt_i64(3).value_or(0),
                                             r.opt_i64(4).value_or(0), r.opt_str(5).value_or(""),
                                             r.opt_str(6).value_or(""))},
                     r.i64(7));
  }
  return declared;
}

std::vector<std::int64_t> SchedulesRepo::maintenance_declared_in_order(const std::string& machine_id) {
  std::vector<std::int64_t> out;
  for (const auto& r :
       tx_.query("SELECT declared_at FROM maintenance_windows WHERE machine_id = ? ORDER BY idx", {machine_id})) {
    out.push_back(r.i64(0));
  }
  return out;
}

void SchedulesRepo::replace_maintenance(const std::string& machine_id,
                                        const std::vector<std::pair<MaintenanceRecord, std::int64_t>>& windows) {
  tx_.exec("DELETE FROM maintenance_windows WHERE machine_id = ?", {machine_id});
  for (std::size_t i = 0; i < windows.size(); ++i) {
    const auto& [m, declared_at] = windows[i];
    tx_.exec("INSERT INTO maintenance_windows (machine_id, idx, category, kind, starts_at, ends_at, recurrence, "
             "start_local, end_local, note, declared_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
             {machine_id, static_cast<std::int64_t>(i), m.category, m.kind, ms_or_null(m.starts_ms),
              ms_or_null(m.ends_ms), text_or_null(m.recurrence_json), text_or_null(m.start_local),
              text_or_null(m.end_local), m.note, declared_at});
  }
}

}  // namespace gpunex::server
