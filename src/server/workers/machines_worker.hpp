#pragma once
// The machines worker's round: machines whose heartbeats stopped become
// Offline (with an event), and telemetry past its retention is deleted.

#include <optional>

#include "server/fleet/machines.hpp"
#include "server/platform/platform_repo.hpp"
#include "store/store.hpp"

namespace gpunex::server::workers {

struct MachinesRoundResult {
  std::size_t went_offline = 0;
  std::int64_t pruned_rows = 0;
  std::optional<platform_repo::PlatformOutage> outage;  // found on watching again
};

//! How the sweep watches: whether this round began a new stretch of watching (workers::Watching), and
//! how long a break in the watch is the platform's outage rather than another replica taking the sweep
//! over (its lease).
struct SweepWatch {
  std::int64_t since_ms = 0;  // since when it has watched without a break
  bool resumed = false;       // this round began that stretch
  std::int64_t outage_after_ms = 60'000;
};

//! Each round records the time it watched (server fact "fleet_watched_until"); a round that resumes the
//! watch more than `outage_after_ms` after the last one records the break as a platform outage, lasting
//! until every agent is back (protocol::kAgentRetryMaxMs later; reliability excuses it). Machines silent
//! past the offline rule go Offline; until the offline rule's time after the last outage ended, or after
//! the sweep watched again (a break too short to be an outage still kept agents away), only those heard
//! since it watched again (the others' agents may still be on their way back). Telemetry past its
//! retention is pruned.
MachinesRoundResult sweep_machines(store::Store& store, const MachineSettings& settings, std::int64_t now_ms,
                                   const SweepWatch& watch = {});

}  // namespace gpunex::server::workers
