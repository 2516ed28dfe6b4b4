#pragma once
// The fleet's schedule tables, and every SQL statement that reads or writes
// them: machine_schedules and maintenance_windows (store/migrations.cpp). Typed
// rows in and out. Works inside the caller's transaction.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "store/store.hpp"

namespace gpunex::server {

//! A machine's schedule row (machine_schedules).
struct ScheduleRecord {
  std::string timezone;
  bool always_on = false;
  std::string spec_json;
};

//! One maintenance window as stored (maintenance_windows): an empty text is stored as NULL.
struct MaintenanceRecord {
  std::string kind, category;
  std::string recurrence_json;                      // weekly and monthly windows
  std::optional<std::int64_t> starts_ms, ends_ms;  // one-off windows
  std::string start_local, end_local;               // weekly and monthly windows
  std::string note;
};
//! What identifies a declared window across saves: kind, category and its shape.
using MaintenanceKey = std::tuple<std::string, std::string, std::string>;
MaintenanceKey maintenance_key(const MaintenanceRecord& m);

//! The schedule tables of one transaction.
class SchedulesRepo {
 public:
  explicit SchedulesRepo(store::Tx& tx) : tx_(tx) {}

  //! The machine's stored schedule text; nullopt when none was set.
  std::optional<std::string> schedule_spec(const std::string& machine_id);
  void upsert_schedule(const std::string& machine_id, const std::string& provider_id, const ScheduleRecord& s,
                       std::int64_t now_ms);
  //! The machine's maintenance windows' declaration times, by what identifies each.
  std::map<MaintenanceKey, std::int64_t> maintenance_declared_at(const std::string& machine_id);
  //! The declaration times of the machine's maintenance windows, in their order.
  std::vector<std::int64_t> maintenance_declared_in_order(const std::string& machine_id);
  //! Replaces the machine's maintenance windows, in order, each declared at the time given.
  void replace_maintenance(const std::string& machine_id,
                           const std::vector<std::pair<MaintenanceRecord, std::int64_t>>& windows);

 private:
  store::Tx& tx_;
};

}  // namespace gpunex::server
