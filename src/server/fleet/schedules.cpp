#include "server/fleet/schedules.hpp"

#include "server/fleet/machines_repo.hpp"
#include "server/fleet/schedules_repo.hpp"
#include "util/time.hpp"

namespace gpunex::server {

namespace {

std::string_view kind_name(core::MaintenanceWindow::Kind k) {
  switch (k) {
    case core::MaintenanceWindow::Kind::one_off: return "one_off";
    case core::MaintenanceWindow::Kind::weekly: return "weekly";
    case core::MaintenanceWindow::Kind::monthly: return "monthly";
  }
  return "monthly";
}

//! A window as stored: `j` is its API form (from core::schedule_to_json).
MaintenanceRecord maintenance_record(const core::MaintenanceWindow& m, const nlohmann::json& j) {
  MaintenanceRecord r;
  r.kind = std::string(kind_name(m.kind));
  r.category = std::string(core::category_name(m.category));
  r.note = m.note;
  if (m.kind == core::MaintenanceWindow::Kind::one_off) {
    r.starts_ms = m.start_utc.time_since_epoch().count() * 1000;
    r.ends_ms = m.end_utc.time_since_epoch().count() * 1000;
  } else {
    r.recurrence_json = j["recurrence"].dump();
    r.start_local = j["start"].get<std::string>();
    r.end_local = j["end"].get<std::string>();
  }
  return r;
}

}  // namespace

std::optional<std::string> machine_owner(store::Tx& tx, const std::string& machine_id) {
  return MachinesRepo(tx).owner(machine_id);
}

void save_schedule(store::Tx& tx, const std::string& provider_id, const std::string& machine_id,
                   const core::Schedule& s, std::int64_t now_ms) {
  SchedulesRepo repo(tx);
  const nlohmann::json spec = core::schedule_to_json(s);
  repo.upsert_schedule(machine_id, provider_id, ScheduleRecord{s.timezone, s.always, spec.dump()}, now_ms);
  // A window keeps the time it was first declared while its definition stays the same.
  const auto declared = repo.maintenance_declared_at(machine_id);
  std::vector<std::pair<MaintenanceRecord, std::int64_t>> windows;
  const auto& items = spec["maintenance"];
  for (std::size_t i = 0; i < s.maintenance.size(); ++i) {
    auto record = maintenance_record(s.maintenance[i], items[i]);
    const auto it = declared.find(maintenance_key(record));
    const std::int64_t declared_at = it == declared.end() ? now_ms : it->second;
    windows.emplace_back(std::move(record), declared_at);
  }
  repo.replace_maintenance(machine_id, windows);
}

std::optional<core::Schedule> load_schedule(store::Tx& tx, const std::string& machine_id) {
  auto spec = SchedulesRepo(tx).schedule_spec(machine_id);
  if (!spec) return std::nullopt;
  auto s = core::parse_schedule(nlohmann::json::parse(*spec));
  // Stored schedules were validated when saved; one that no longer parses (a time zone removed
  // from the OS database) fails loudly rather than silently listing the machine.
  if (!s) throw store::StoreError("machine " + machine_id + ": stored schedule is invalid: " + s.error().message);
  return std::move(s).value();
}

std::vector<std::int64_t> maintenance_declared_times(store::Tx& tx, const std::string& machine_id) {
  return SchedulesRepo(tx).maintenance_declared_in_order(machine_id);
}

nlohmann::json schedule_json(const std::string& machine_id, const core::Schedule& s, std::int64_t now_ms) {
  const core::UtcTime now{std::chrono::seconds{now_ms / 1000}};
  const auto ms = [](std::optional<core::UtcTime> t) -> nlohmann::json {
    if (!t) return nullptr;
    return util::rfc3339(t->time_since_epoch().count() * 1000);
  };
  nlohmann::json j = core::schedule_to_json(s);
  j["machine_id"] = machine_id;
  j["available_now"] = core::is_available(s, now);
  j["available_until"] = ms(core::available_until(s, now));
  j["next_window_start"] = ms(core::next_window_start(s, now));
  return j;
}

}  // namespace gpunex::server
