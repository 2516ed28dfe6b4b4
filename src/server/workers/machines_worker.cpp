#include "server/workers/machines_worker.hpp"

#include "util/log.hpp"

namespace gpunex::server::workers {

MachinesRoundResult sweep_machines(store::Store& store, const MachineSettings& settings, std::int64_t now_ms) {
  MachinesRoundResult r;
  r.went_offline = store.transact([&](store::Tx& tx) { return mark_offline_machines(tx, settings, now_ms); });
  r.pruned_rows = store.transact([&](store::Tx& tx) { return prune_telemetry(tx, settings, now_ms); });
  if (r.went_offline > 0 || r.pruned_rows > 0) {
    util::log_event("info", "machines sweep", {{"went_offline", r.went_offline}, {"pruned_rows", r.pruned_rows}});
  }
  return r;
}

}  // namespace gpunex::server::workers
