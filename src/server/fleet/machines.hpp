#pragma once
// Provider machines as the agent reports them: registration (re-attaching by
// fingerprint), heartbeats with telemetry (latest sample, per-minute aggregates,
// per-minute presence), sequence-number dedupe, events, and offline detection.
// Every function works inside the caller's transaction; the SQL is in
// machines_repo, the status rules in core/machine_status.hpp.

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/machine_status.hpp"
#include "core/result.hpp"
#include "server/fleet/agent_protocol.hpp"
#include "server/fleet/pending_telemetry.hpp"
#include "server/platform/config.hpp"
#include "server/platform/paging.hpp"
#include "store/store.hpp"

namespace gpunex::server {

struct MachineSettings {
  int heartbeat_interval_s = 15;
  int offline_after_missed = 3;       // heartbeats missed before a machine is Offline
  int telemetry_retention_days = 30;  // telemetry_minute, presence_minute
  std::string base_url;               // the dashboard's links in what providers are told
};
MachineSettings machine_settings(const Config& c);

//! A provider is told of their machine going offline at most this often (a machine that comes and goes
//! mails once, not at every going).
inline constexpr std::int64_t kOfflineNoticeEveryMs = 3'600'000;

//! Registers or re-attaches (same provider and fingerprint, or the machine id it already has).
//! Returns the register reply {machine_id, heartbeat_interval_s}. 404 for another provider's machine id.
//! `seen_from` is the address the registration came from: where customers reach the machine's ports
//! unless the agent names its own public_host.
core::Result<nlohmann::json> register_machine(store::Tx& tx, const std::string& provider_id, const RegisterRequest& req,
                                              const MachineSettings& settings, std::int64_t now_ms,
                                              const std::string& seen_from = {});

//! The GPUs of each machine as heartbeats' checks read them, so that a heartbeat's check reads only the
//! machine's row. A machine's GPUs are only ever added (a registration marks those it no longer reports
//! absent; nothing deletes one), so a uuid found once stays one of the machine's GPUs, on every replica;
//! a uuid not known here has the check read the machine's GPUs again. Thread-safe. Holds at most
//! `max_machines` machines: past that it forgets them all and starts over.
class KnownGpus {
 public:
  explicit KnownGpus(std::size_t max_machines = 200'000) : max_machines_(max_machines) {}
  //! Whether every uuid of `uuids` is known to be one of the machine's GPUs.
  bool knows(const std::string& machine_id, const std::vector<std::string_view>& uuids) const;
  //! Every GPU the machine has registered, as just read from the store.
  void remember(const std::string& machine_id, const std::set<std::string>& uuids);

 private:
  const std::size_t max_machines_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::vector<std::string>> by_machine_;  // sorted uuids
};

//! A heartbeat's checks, which write nothing: the machine is the provider's, every sample names one of its
//! GPUs (404, or 400 naming the field). Run before a group commit batches it (GroupCommit::Check).
core::Status check_heartbeat(store::Tx& tx, const std::string& provider_id, const HeartbeatRequest& req);

//! The machine as check_heartbeat_machine found it, for record_checked_heartbeat in the same transaction.
struct CheckedMachine {
  std::string id;
  core::MachineStatus status = core::MachineStatus::offline;
  //! Whether it has benchmark work to do, when the check was asked to read it (check_heartbeat_of_key).
  std::optional<bool> benchmark_work;
};
//! check_heartbeat, with the machine it checked; with `known`, the machine's GPUs are read only when a
//! uuid is not known there yet.
core::Result<CheckedMachine> check_heartbeat_machine(store::Tx& tx, const std::string& provider_id,
                                                     const HeartbeatRequest& req, KnownGpus* known = nullptr);
//! check_heartbeat_machine for the provider of a live API key, the key and the machine read at once
//! (a statement fewer on every heartbeat). 404 too when the key is revoked: the caller that must answer
//! a dead key with 401 asks for the key alone after a 404 (a rare path). With `benchmark_work`, whether the
//! machine has benchmark work is read in the same statement (CheckedMachine::benchmark_work), for
//! benchmark_commands: a statement fewer again, where a statement is a round trip (PostgreSQL).
core::Result<CheckedMachine> check_heartbeat_of_key(store::Tx& tx, const std::string& api_key_id,
                                                    const HeartbeatRequest& req, KnownGpus* known = nullptr,
                                                    const HeartbeatWorkQuestion* benchmark_work = nullptr);
//! Stores a heartbeat that check_heartbeat_machine passed just before in the same transaction, with
//! nothing in between (GroupCommit runs a request's Check and then its Work): record_heartbeat without
//! reading the machine, its GPUs and the caller's key a second time. Each GPU's sample and its minute's sums
//! go to `latest` (written in batches, server/fleet/pending_telemetry.hpp; the samples as pointers into
//! `req`, which they keep alive), or to the store in this transaction without one.
core::Result<nlohmann::json> record_checked_heartbeat(store::Tx& tx, const CheckedMachine& machine,
                                                      const std::shared_ptr<const HeartbeatRequest>& req,
                                                      const MachineSettings& settings, std::int64_t now_ms,
                                                      PendingTelemetry* latest = nullptr);

//! Stores one heartbeat. A seq already stored answers the same reply and stores nothing.
//! 404 when the machine is not this provider's; 400 naming the field when a sample names another GPU.
core::Result<nlohmann::json> record_heartbeat(store::Tx& tx, const std::string& provider_id,
                                              const HeartbeatRequest& req, const MachineSettings& settings,
                                              std::int64_t now_ms, PendingTelemetry* latest = nullptr);

//! GET /v1/provider/machines: a page of the provider's machines, oldest first, as {items, next_cursor}: each
//! with its host, its GPUs with the latest sample and the last 24 h in 15-minute averages (`overview_24h`).
//! A sample `latest` holds that is newer than the stored one is shown instead; its pending minute sums are
//! added to the stored ones.
core::Result<nlohmann::json> list_machines(store::Tx& tx, const std::string& provider_id, const PageParams& page,
                                           std::int64_t now_ms, const PendingTelemetry* latest = nullptr);
//! GET /v1/provider/machines/{id}: the machine, its GPUs with the latest sample and a 24 h per-minute series,
//! with what `latest` holds as list_machines shows it.
core::Result<nlohmann::json> machine_detail(store::Tx& tx, const std::string& provider_id,
                                            const std::string& machine_id, std::int64_t now_ms,
                                            const PendingTelemetry* latest = nullptr);

//! DELETE /v1/provider/machines/{id}: removes an Offline machine with no live rental from the provider's list,
//! the fleet and reliability (its history kept: rentals, earnings, events); its agent heard again brings it
//! back. 409 machine_online while its agent is heard, machine_has_rentals while a rental is live on it.
core::Result<nlohmann::json> remove_machine(store::Tx& tx, const std::string& provider_id,
                                            const std::string& machine_id, std::int64_t now_ms);

//! Marks machines whose last heartbeat is older than offline_after_missed intervals Offline, with an event,
//! and tells their providers (machine_offline) when it went within its availability (not in maintenance)
//! and they were not told in the last kOfflineNoticeEveryMs:
//! at most `limit` of them (the longest silent first), and none last heard before `heard_from_ms` (after the
//! platform's outage, those whose agents may still be on their way back). Returns how many changed.
std::size_t mark_offline_machines(store::Tx& tx, const MachineSettings& settings, std::int64_t now_ms,
                                  std::size_t limit = 500, std::int64_t heard_from_ms = 0);
//! Deletes aggregates, presence and dedupe rows older than the retention, at most `limit` rows per table.
//! Returns rows deleted.
std::int64_t prune_telemetry(store::Tx& tx, const MachineSettings& settings, std::int64_t now_ms,
                             std::int64_t limit = 5000);

//! What the reliability score reads of a machine (reliability/): when it appeared, whose it is.
struct MachineForScore {
  std::string id, provider_id, hostname;
  std::int64_t registered_ms = 0;
};
std::vector<MachineForScore> machines_for_score(store::Tx& tx);
std::optional<MachineForScore> machine_for_score(store::Tx& tx, const std::string& machine_id);
//! The minutes (their start, ms) in [from_ms, to_ms) in which the machine sent a heartbeat, oldest first.
std::vector<std::int64_t> presence_minutes_between(store::Tx& tx, const std::string& machine_id, std::int64_t from_ms,
                                                   std::int64_t to_ms);

//! The provider a caller acts for: an API key's provider, or the signed-in user's; empty when none.
std::string provider_id_for_api_key(store::Tx& tx, const std::string& api_key_id);
std::string provider_id_for_user(store::Tx& tx, const std::string& user_id);

//! deploy/agent/install.sh as embedded at build time, with the placeholder __GPUNEX_SERVER_URL__.
std::string_view agent_installer_template();
//! The installer with this server's URL filled in.
std::string agent_installer(const std::string& server_url);

}  // namespace gpunex::server
