#pragma once
// The fleet's machine tables, and every SQL statement that reads or writes
// them: machines, machine_gpus, telemetry_latest, telemetry_minute,
// presence_minute and machine_events (store/migrations.cpp). Typed
// rows in and out; statuses as core::MachineStatus. Works inside the caller's
// transaction.

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/machine_status.hpp"
#include "server/fleet/benchmarks_repo.hpp"
#include "store/store.hpp"

namespace gpunex::server {

//! What registration and heartbeats need of a machine.
struct MachineRecord {
  std::string id, provider_id;
  core::MachineStatus status = core::MachineStatus::offline;
  std::string driver_version;
  bool simulated = false;
};

//! What a heartbeat's check reads of its machine: the owner and the status.
struct HeartbeatMachine {
  std::string provider_id;
  core::MachineStatus status = core::MachineStatus::offline;
  std::optional<bool> benchmark_work;  // when asked for with the read (heartbeat_machine_of_key)
};

//! What a registration writes on a machine row.
struct MachineRegistration {
  std::string provider_id, fingerprint, hostname;
  std::string host_json;  // the host facts as JSON text
  bool simulated = false;
  std::string agent_version;
  std::int64_t protocol_version = 0;
  std::string driver_version, cuda_version;
  std::optional<std::string> public_host;  // where customers reach its published ports
};

//! One GPU's newest sample, for MachinesRepo::store_latest_samples: views of the caller's strings.
struct LatestSampleRow {
  const std::string* machine_id;
  const std::string* uuid;
  std::int64_t at_ms = 0;
  const std::string* sample_json;
};

//! One GPU as registered (machine_gpus).
struct MachineGpuWrite {
  std::string uuid;
  std::int64_t index = 0;
  std::string name;
  std::optional<std::string> model;  // the catalog id; none for an unknown model
  std::int64_t memory_mib = 0;
  std::string facts_json;
};

//! One telemetry sample folded into its minute (telemetry_minute): counts are 0 or 1 for this sample.
struct MinuteSample {
  std::int64_t errors = 0;
  std::int64_t temp_n = 0;
  double temp = 0;
  std::int64_t power_n = 0;
  double power = 0;
  std::int64_t util_n = 0;
  double util = 0;
  std::int64_t mem_used = 0;
  std::int64_t throttled = 0;
  std::int64_t ecc_uncorrected = 0;
};

//! A machine as its card shows it (provider list and detail).
struct MachineCard {
  std::string id;
  core::MachineStatus status = core::MachineStatus::offline;
  std::optional<std::int64_t> last_seen_ms;
  bool simulated = false;
  std::string hostname;
  std::int64_t created_ms = 0;
  std::string driver_version, cuda_version, agent_version;
  std::string host_json;
  std::optional<std::string> rentals_blocked;  // why its agent cannot run rentals now, as it said
  std::optional<std::string> public_host;      // where customers reach its rentals' ports
  std::optional<std::int64_t> removed_ms;      // removed by its provider (migration 33)
};

//! A GPU on a machine card: the registration, the latest sample and the listing the benchmarks decided.
struct GpuCard {
  std::string uuid;
  std::int64_t index = 0;
  std::string name;
  std::optional<std::string> model;
  std::int64_t memory_mib = 0;
  bool present = false;
  std::string facts_json;
  std::optional<std::string> latest_sample_json;
  std::int64_t latest_at_ms = 0;  // when latest_sample_json was taken
  std::optional<bool> listed;  // none until a first benchmark run
  std::optional<double> perf_score, quality_ratio;
  std::optional<std::string> delist_reason;
};

//! Telemetry summed over a span (a minute, or a bucket of minutes): counts, sums and maxima.
struct TelemetrySums {
  std::int64_t at_ms = 0;  // the span's start
  std::int64_t samples = 0, errors = 0;
  std::int64_t temp_n = 0;
  double temp_sum = 0, temp_max = 0;
  std::int64_t power_n = 0;
  double power_sum = 0, power_max = 0;
  std::int64_t util_n = 0;
  double util_sum = 0, util_max = 0;
  std::int64_t mem_used_max = 0, throttled = 0, ecc_uncorrected_max = 0;
};

//! One GPU's pending sums of a minute (at_ms), for MachinesRepo::add_minute_sums: views of the caller's data.
struct MinuteSumsRow {
  const std::string* machine_id;
  const std::string* uuid;
  const TelemetrySums* sums;
};

//! A GPU's bucket of telemetry (the machines list's 24 h overview).
struct GpuTelemetryBucket {
  std::string uuid;
  TelemetrySums sums;  // power_max, util_max, mem_used_max, throttled and ecc_uncorrected_max not read
};

struct MachineEvent {
  std::int64_t at_ms = 0;
  std::string kind;
  std::string detail_json;
};

//! An Online machine that stopped sending heartbeats.
struct SilentMachine {
  std::string id;
  std::int64_t last_seen_ms = 0;
};

//! What the benchmark checks need of a machine.
struct MachineHostFacts {
  std::string provider_id;
  std::string host_json;
  std::string hostname;
  bool simulated = false;  // as the machine registered: a run is simulated when its machine is
};

//! A present GPU, as the benchmark judgement needs it.
struct PresentGpu {
  std::string uuid;
  std::optional<std::string> model;
  std::int64_t memory_mib = 0;
  std::int64_t index = 0;
};

//! A machine as the reliability score needs it.
struct ScoredMachineRow {
  std::string id, provider_id, hostname;
  std::int64_t created_ms = 0;
};

//! A machine in the operator's fleet view: who owns it, whether it is heard from, its GPUs.
struct FleetMachine {
  std::string id, hostname, provider_id, provider_email;
  core::MachineStatus status = core::MachineStatus::offline;
  bool simulated = false;
  std::string agent_version, driver_version;
  std::optional<std::int64_t> last_seen_ms;
  std::optional<std::string> rentals_blocked;
  std::vector<std::pair<std::string, std::int64_t>> models;  // present GPUs by model (name when unknown)
  std::int64_t gpus = 0, listed = 0;                         // present GPUs, and those listed
};

//! The whole fleet's counts: machines by status, present GPUs and listed ones.
struct FleetCounts {
  std::int64_t machines = 0, online = 0, gpus = 0, listed = 0;
};

//! The machine tables of one transaction.
class MachinesRepo {
 public:
  explicit MachinesRepo(store::Tx& tx) : tx_(tx) {}

  std::optional<MachineRecord> find(const std::string& id);
  //! Up to `limit` machines of every provider by id after `after_id` (none: from the first), of `status`
  //! when given: the operator's fleet view, a page read by its key.
  std::vector<FleetMachine> fleet_page(std::optional<core::MachineStatus> status,
                                       const std::optional<std::string>& after_id, std::int64_t limit);
  FleetCounts fleet_counts();
  std::optional<MachineRecord> find_by_fingerprint(const std::string& provider_id, const std::string& fingerprint);
  //! The provider that owns a machine, if the machine exists.
  std::optional<std::string> owner(const std::string& id);
  //! Why the machine's agent cannot run rentals, as its rentals poll last said (nullopt: it can).
  std::optional<std::string> rentals_blocked(const std::string& id);
  //! Keeps what the agent says of it (a change of NULL-ness is a market change: migration 26).
  void set_rentals_blocked(const std::string& id, const std::optional<std::string>& why);
  //! When the machine's last heartbeat arrived (nullopt: never, or no such machine).
  std::optional<std::int64_t> last_seen_ms(const std::string& id);

  //! A new machine: Offline, never seen, until its first heartbeat.
  void insert(const std::string& id, const MachineRegistration& r, std::int64_t now_ms);
  //! A re-registration: the host, agent and driver as reported now.
  void update_registration(const std::string& id, const MachineRegistration& r, std::int64_t now_ms);

  //! The uuids of the machine's GPUs present at the last registration (gpu_uuids has them all).
  std::set<std::string> present_gpu_uuids(const std::string& machine_id);
  //! The machine's owner and status, for a heartbeat's check; none when there is no such machine.
  std::optional<HeartbeatMachine> heartbeat_machine(const std::string& machine_id);
  //! The same, only if `api_key_id` is a live key of the machine's provider: the key and the machine in one
  //! read (nullopt: no such machine, not the key's provider's, or the key revoked). With `benchmark_work`,
  //! whether the machine has benchmark work to do (BenchmarksRepo::has_heartbeat_work) in the same read.
  std::optional<HeartbeatMachine> heartbeat_machine_of_key(const std::string& machine_id, const std::string& api_key_id,
                                                           const HeartbeatWorkQuestion* benchmark_work = nullptr);
  //! The uuid of every GPU the machine registered, present or not.
  std::set<std::string> gpu_uuids(const std::string& machine_id);
  //! Marks every GPU of the machine absent, before a registration marks those it reports present again.
  void mark_gpus_absent(const std::string& machine_id, std::int64_t now_ms);
  void upsert_gpu(const std::string& machine_id, const MachineGpuWrite& g, std::int64_t now_ms);

  void add_event(const std::string& machine_id, std::int64_t at_ms, const std::string& kind,
                 const nlohmann::json& detail, std::optional<std::int64_t> seq = std::nullopt);

  //! Takes an agent message's seq: true when it is above the machine's last one (then it becomes the last
  //! one), false for a seq already taken (a retry). The agent sends its messages in seq order, one at a
  //! time, from its spool (agent/agent.cpp), so the highest seq is the whole dedupe record.
  bool take_seq(const std::string& machine_id, std::int64_t seq);
  //! A fresh agent (one that registers without a machine id, its state gone) counts its seq from 1 again.
  void restart_seq(const std::string& machine_id);
  //! Keeps a GPU's newest sample (an older one arriving late changes nothing).
  void store_latest_sample(const std::string& machine_id, const std::string& uuid, std::int64_t at_ms,
                           const std::string& sample_json);
  //! store_latest_sample for many GPUs, up to 128 rows a statement. No two rows may name the same GPU.
  void store_latest_samples(const std::vector<LatestSampleRow>& rows);
  //! Adds sums to their GPU's minutes in telemetry_minute (counts and sums added, maxima kept), up to 128
  //! rows a statement. No two rows may name the same GPU and minute.
  void add_minute_sums(const std::vector<MinuteSumsRow>& rows);
  //! Marks the machine present in the minute and counts the heartbeat in `beats`. Only tests read the count
  //! (the cluster chaos test: a machine's beats equal its last seq, so no acknowledged heartbeat was lost or
  //! stored twice); the reliability score reads the minute.
  void add_presence(const std::string& machine_id, std::int64_t minute_ms);
  //! A heartbeat's effect on the machine row, with take_seq's dedupe in the same statement: seen now, the
  //! status given, the seq taken. False (and nothing changed) when the seq was already taken.
  bool record_heartbeat(const std::string& machine_id, core::MachineStatus status, std::int64_t seq,
                        std::int64_t now_ms);

  //! A provider's machines, oldest first.
  //! The provider's machines, less those they removed.
  std::vector<MachineCard> cards_of_provider(const std::string& provider_id);
  //! Marks an Offline machine removed; false when it is online or removed already.
  bool remove(const std::string& machine_id, std::int64_t now_ms);
  std::optional<MachineCard> card(const std::string& machine_id, const std::string& provider_id);
  //! The machine's GPUs, present first, by index.
  std::vector<GpuCard> gpu_cards(const std::string& machine_id);
  //! Every GPU's telemetry since `since_ms` in buckets of `step_ms`, by uuid then bucket.
  std::vector<GpuTelemetryBucket> telemetry_buckets(const std::string& machine_id, std::int64_t since_ms,
                                                    std::int64_t step_ms);
  //! One GPU's per-minute telemetry since `since_ms`, oldest first.
  std::vector<TelemetrySums> telemetry_minutes(const std::string& machine_id, const std::string& uuid,
                                               std::int64_t since_ms);
  //! Minutes with at least one heartbeat since `since_ms`.
  std::int64_t presence_minutes(const std::string& machine_id, std::int64_t since_ms);
  //! The minutes (their start) in [from_ms, to_ms) with at least one heartbeat, oldest first.
  std::vector<std::int64_t> presence_between(const std::string& machine_id, std::int64_t from_ms, std::int64_t to_ms);
  //! Every machine, by id; or the one given.
  std::vector<ScoredMachineRow> scored_machines();
  std::optional<ScoredMachineRow> scored_machine(const std::string& machine_id);
  //! The newest events, newest first.
  std::vector<MachineEvent> recent_events(const std::string& machine_id, std::int64_t limit);
  //! Whether an offline event at or after `since_ms` told the machine's provider (detail provider_told).
  bool offline_told_since(const std::string& machine_id, std::int64_t since_ms);
  //! Whether a GPU, driver or simulated-flag change was recorded after `after_ms`.
  bool hardware_changed_since(const std::string& machine_id, std::int64_t after_ms);

  //! Online machines last seen before `cutoff_ms`, the longest silent first.
  //! Online machines last heard before `cutoff_ms` and no earlier than `heard_from_ms`, oldest first.
  std::vector<SilentMachine> silent_online_machines(std::int64_t cutoff_ms, std::int64_t limit,
                                                    std::int64_t heard_from_ms = 0);
  //! Moves an Online machine to `to`; false when it was no longer Online.
  bool move_from_online(const std::string& machine_id, core::MachineStatus to);
  //! Deletes minute aggregates and presence older than `oldest_ms`, at most `limit` per table.
  std::int64_t prune_before(std::int64_t oldest_ms, std::int64_t limit);

  std::optional<MachineHostFacts> host_facts(const std::string& machine_id);
  std::vector<PresentGpu> present_gpus(const std::string& machine_id);

 private:
  store::Tx& tx_;
};

}  // namespace gpunex::server
