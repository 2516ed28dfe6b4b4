#include "server/workers/machines_worker.hpp"

#include "util/log.hpp"

namespace gpunex::server::workers {

MachinesRoundResult sweep_machines(store::Store& store, const MachineSettings& settings, std::int64_t now_ms) {
  // In bounded transactions: a fleet's worth of machines going quiet at once, or a minute of telemetry from
  // tens of thousands of GPUs reaching the retention, would otherwise hold the write lock that every
  // heartbeat commit waits for.
  constexpr std::size_t kOfflinePerTx = 500;
  constexpr std::int64_t kRowsPerTx = 5000;
  MachinesRoundResult r;
  for (;;) {
    const auto n =
        store.transact([&](store::Tx& tx) { return mark_offline_machines(tx, settings, now_ms, kOfflinePerTx); });
    r.went_offline += n;
    if (n < kOfflinePerTx) break;
  }
  for (;;) {
    const auto n = store.transact([&](store::Tx& tx) { return prune_telemetry(tx, settings, now_ms, kRowsPerTx); });
    r.pruned_rows += n;
    if (n < kRowsPerTx) break;
  }
  if (r.went_offline > 0 || r.pruned_rows > 0) {
    util::log_event("info", "machines sweep", {{"went_offline", r.went_offline}, {"pruned_rows", r.pruned_rows}});
  }
  return r;
}

}  // namespace gpunex::server::workers
