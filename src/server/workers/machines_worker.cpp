#include "server/workers/machines_worker.hpp"

#include "protocol/version.hpp"
#include "util/log.hpp"
#include "util/time.hpp"

namespace gpunex::server::workers {

MachinesRoundResult sweep_machines(store::Store& store, const MachineSettings& settings, std::int64_t now_ms,
                                   const SweepWatch& watch) {
  // In bounded transactions: a fleet's worth of machines going quiet at once, or a minute of telemetry from
  // tens of thousands of GPUs reaching the retention, would otherwise hold the write lock that every
  // heartbeat commit waits for.
  constexpr std::size_t kOfflinePerTx = 500;
  constexpr std::int64_t kRowsPerTx = 5000;
  MachinesRoundResult r;
  // One transaction: the watch recorded (and an outage found on resuming), and the latest outage read.
  const auto outage = store.transact([&](store::Tx& tx) {
    const auto watched = platform_repo::fleet_watched_until(tx);
    if (watch.resumed && watched) {
      const std::int64_t until = *watched;
      if (until > 0 && now_ms - until > watch.outage_after_ms) {
        // Until every agent still running is back (they retry at most kAgentRetryMaxMs apart).
        r.outage = platform_repo::PlatformOutage{until, now_ms, now_ms + protocol::kAgentRetryMaxMs};
        platform_repo::insert_platform_outage(tx, *r.outage);
      }
    }
    platform_repo::record_fleet_watched_until(tx, now_ms);
    return platform_repo::last_platform_outage(tx);
  });
  if (r.outage) {
    util::log_event("warn", "the platform was not watching its fleet: an outage, excused in reliability",
                    {{"from", util::rfc3339(r.outage->started_at_ms)}, {"to", util::rfc3339(r.outage->ended_at_ms)}});
  }
  const std::int64_t offline_ms = std::int64_t{settings.heartbeat_interval_s} * settings.offline_after_missed * 1000;
  // Until every agent has had its chance to come back and be missed, those not heard since the platform
  // watched again are not judged; those heard since are, as ever.
  std::int64_t heard_from =
      outage && now_ms < outage->ended_at_ms + offline_ms ? outage->resumed_at_ms : std::int64_t{0};
  if (now_ms < watch.since_ms + protocol::kAgentRetryMaxMs + offline_ms)
    heard_from = std::max(heard_from, watch.since_ms);
  for (;;) {
    const auto n = store.transact(
        [&](store::Tx& tx) { return mark_offline_machines(tx, settings, now_ms, kOfflinePerTx, heard_from); });
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
