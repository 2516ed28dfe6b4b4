#pragma once
// The machines worker's round: machines whose heartbeats stopped become
// Offline (with an event), and telemetry past its retention is deleted.

#include "server/fleet/machines.hpp"
#include "store/store.hpp"

namespace gpunex::server::workers {

struct MachinesRoundResult {
  std::size_t went_offline = 0;
  std::int64_t pruned_rows = 0;
};

MachinesRoundResult sweep_machines(store::Store& store, const MachineSettings& settings, std::int64_t now_ms);

}  // namespace gpunex::server::workers
