#include "server/fleet/machines.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "core/default_schedule.hpp"
#include "core/gpu_catalog.hpp"
#include "core/rental.hpp"
#include "core/schedule.hpp"
#include "core/text.hpp"
#include "server/fleet/benchmarks.hpp"
#include "server/fleet/benchmarks_repo.hpp"
#include "server/fleet/challenges.hpp"
#include "server/fleet/machines_repo.hpp"
#include "server/fleet/schedules.hpp"
#include "server/onboarding/applications.hpp"
#include "server/onboarding/gpu_catalog.hpp"
#include "server/onboarding/providers.hpp"
#include "server/platform/notifications.hpp"
#include "util/crypto.hpp"
#include "util/time.hpp"

namespace gpunex::server {

using core::Error;
using core::ErrorCode;
using store::Tx;

namespace {

constexpr std::int64_t kMinuteMs = 60'000;
constexpr std::int64_t kDayMs = 86'400'000;

Error machine_not_found(const std::string& id) {
  return Error::make(ErrorCode::not_found, "no machine " + id + " for this provider", std::string("machine_id"));
}

//! The catalog id of a GPU: the agent's (simulated GPUs know theirs), else matched by NVML name
//! (core::match_nvml_name: case, spacing and the "NVIDIA" prefix aside, built-in models first).
//! None: the GPU stays an unknown model, its NVML name kept in machine_gpus.name.
std::optional<std::string> catalog_model(const std::vector<core::GpuModel>& catalog, const AgentGpu& g) {
  if (g.model) {
    auto it = std::find_if(catalog.begin(), catalog.end(), [&](const core::GpuModel& m) { return m.id == *g.model; });
    if (it != catalog.end()) return it->id;
  }
  if (const auto* m = core::match_nvml_name(g.name, catalog)) return m->id;
  return std::nullopt;
}

MachineRegistration registration_of(const std::string& provider_id, const RegisterRequest& req) {
  return MachineRegistration{provider_id,
                             req.machine_fingerprint,
                             req.host.hostname,
                             req.host.to_json().dump(),
                             req.simulated,
                             req.agent_version,
                             std::int64_t{req.protocol_version},
                             req.gpus.empty() ? "" : req.gpus.front().driver_version,
                             req.gpus.empty() ? "" : req.gpus.front().cuda_version,
                             req.host.public_host};
}

nlohmann::json opt_json(const auto& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json gpu_summary(const GpuCard& c) {
  // uuid, idx, name, model, memory_mib, present, facts, latest sample, then the listing state the
  // benchmarks decided (gpu_listing, none until a first run): listed, perf_score, quality_ratio,
  // delist_reason, and awaiting_challenges: a passing run's GPU delisted only until its challenges are
  // answered (its verdict still to come). The Benchmarks tab reads the same row, so the two pages agree.
  nlohmann::json g = {{"uuid", c.uuid},         {"index", c.index},         {"name", c.name},
                      {"model", opt_json(c.model)}, {"memory_mib", c.memory_mib}, {"present", c.present}};
  auto facts = nlohmann::json::parse(c.facts_json, nullptr, false);
  if (facts.is_object()) g.update(facts);
  g["index"] = c.index;
  g["latest"] = c.latest_sample_json ? nlohmann::json::parse(*c.latest_sample_json, nullptr, false) : nlohmann::json();
  const bool benchmarked = c.listed.has_value();
  g["benchmarked"] = benchmarked;
  g["listed"] = benchmarked && *c.listed;
  g["perf_score"] = opt_json(c.perf_score);
  g["quality_ratio"] = opt_json(c.quality_ratio);
  g["delist_reason"] = !benchmarked ? nlohmann::json("awaiting benchmarks") : opt_json(c.delist_reason);
  g["awaiting_challenges"] = benchmarked && !*c.listed && c.delist_reason == kAwaitingChallenges;
  return g;
}

//! What a machine card shows (list and detail): the machine, its host and its GPUs with the latest sample.
nlohmann::json machine_summary(MachinesRepo& repo, const MachineCard& m, const PendingTelemetry::OfMachine& pending) {
  nlohmann::json gpus = nlohmann::json::array();
  for (GpuCard& g : repo.gpu_cards(m.id)) {
    // This replica's newest sample, not written yet (server/fleet/pending_telemetry.hpp).
    if (auto p = pending.find(g.uuid); p != pending.end() && p->second.latest &&
                                       (!g.latest_sample_json || p->second.latest->at_ms >= g.latest_at_ms)) {
      g.latest_sample_json = p->second.latest->text();
    }
    gpus.push_back(gpu_summary(g));
  }
  return {{"id", m.id},
          {"status", core::machine_status_name(m.status)},
          {"last_seen_at", m.last_seen_ms ? nlohmann::json(util::rfc3339(*m.last_seen_ms)) : nlohmann::json()},
          {"simulated", m.simulated},
          {"hostname", m.hostname},
          {"created_at", util::rfc3339(m.created_ms)},
          {"driver_version", m.driver_version},
          {"cuda_version", m.cuda_version},
          {"agent_version", m.agent_version},
          {"rentals_blocked", m.rentals_blocked ? nlohmann::json(*m.rentals_blocked) : nlohmann::json()},
          {"public_host", m.public_host ? nlohmann::json(*m.public_host) : nlohmann::json()},
          {"removed_at", m.removed_ms ? nlohmann::json(util::rfc3339(*m.removed_ms)) : nlohmann::json()},
          {"host", nlohmann::json::parse(m.host_json, nullptr, false)},
          {"gpus", std::move(gpus)}};
}

//! The mean of `n` readings summing to `sum`; null without readings.
nlohmann::json avg(std::int64_t n, double sum) {
  return n > 0 ? nlohmann::json(sum / static_cast<double>(n)) : nlohmann::json();
}
//! A maximum over `n` readings; null without readings.
nlohmann::json max_of(std::int64_t n, double max) {
  return n > 0 ? nlohmann::json(max) : nlohmann::json();
}

// The list's charts: 96 points a GPU instead of the detail's 1440, since the list page polls every machine.
constexpr std::int64_t kOverviewStepMinutes = 15;

//! The stored spans of a GPU (at_ms ascending, `step` long) with this replica's pending minute sums of
//! the GPU since `since` added to their spans (server/fleet/pending_telemetry.hpp).
std::vector<TelemetrySums> with_pending(std::vector<TelemetrySums> stored, const PendingTelemetry::OfMachine& pending,
                                        const std::string& uuid, std::int64_t since, std::int64_t step) {
  auto p = pending.find(uuid);
  if (p == pending.end() || p->second.minutes.empty()) return stored;
  std::map<std::int64_t, TelemetrySums> spans;
  for (auto& s : stored) spans.emplace(s.at_ms, std::move(s));
  for (const auto& m : p->second.minutes) {
    if (m.at_ms < since) continue;
    const std::int64_t span = m.at_ms - m.at_ms % step;
    auto [it, added] = spans.try_emplace(span, TelemetrySums{});
    if (added) it->second.at_ms = span;
    add_telemetry_sums(it->second, m);
  }
  std::vector<TelemetrySums> out;
  out.reserve(spans.size());
  for (auto& [at, s] : spans) out.push_back(std::move(s));
  return out;
}

//! Adds each GPU's last 24 h as 15-minute averages ({step_minutes, points}) to a machine summary,
//! from one query for the whole machine, so the machines list draws its charts without a request per machine.
void add_overview_24h(MachinesRepo& repo, nlohmann::json& machine, std::int64_t now,
                      const PendingTelemetry::OfMachine& pending) {
  const std::int64_t since = minute_of(now) - kDayMs + kMinuteMs;
  constexpr std::int64_t step = kOverviewStepMinutes * kMinuteMs;
  std::map<std::string, std::vector<TelemetrySums>> spans;
  for (auto& b : repo.telemetry_buckets(machine["id"].get<std::string>(), since, step)) {
    spans[b.uuid].push_back(std::move(b.sums));
  }
  for (const auto& [uuid, gpu] : pending) spans.try_emplace(uuid);
  std::map<std::string, nlohmann::json> points;
  for (auto& [uuid, stored] : spans) {
    points[uuid] = nlohmann::json::array();
    for (const auto& s : with_pending(std::move(stored), pending, uuid, since, step)) {
      points[uuid].push_back({{"at", util::rfc3339(s.at_ms)},
                              {"samples", s.samples},
                              {"errors", s.errors},
                              {"temperature_c_avg", avg(s.temp_n, s.temp_sum)},
                              {"temperature_c_max", max_of(s.temp_n, s.temp_max)},
                              {"power_w_avg", avg(s.power_n, s.power_sum)},
                              {"util_gpu_pct_avg", avg(s.util_n, s.util_sum)}});
    }
  }
  for (auto& g : machine["gpus"]) {
    auto it = points.find(g["uuid"].get<std::string>());
    g["overview_24h"] = {{"step_minutes", kOverviewStepMinutes},
                         {"points", it == points.end() ? nlohmann::json::array() : std::move(it->second)}};
  }
}

nlohmann::json minute_json(const TelemetrySums& s) {
  return {{"at", util::rfc3339(s.at_ms)},
          {"samples", s.samples},
          {"errors", s.errors},
          {"temperature_c_avg", avg(s.temp_n, s.temp_sum)},
          {"temperature_c_max", max_of(s.temp_n, s.temp_max)},
          {"power_w_avg", avg(s.power_n, s.power_sum)},
          {"power_w_max", max_of(s.power_n, s.power_max)},
          {"util_gpu_pct_avg", avg(s.util_n, s.util_sum)},
          {"util_gpu_pct_max", max_of(s.util_n, s.util_max)},
          {"memory_used_mib_max", s.mem_used_max},
          {"throttled_samples", s.throttled},
          {"ecc_uncorrected", s.ecc_uncorrected_max}};
}

//! A new machine starts with the availability its provider declared in the approved application
//! for that GPU model: shown on the machine's schedule and editable there like any other.
void start_with_declared_schedule(Tx& tx, const std::string& provider_id, const std::string& machine_id,
                                  const std::vector<std::string>& models, std::int64_t now) {
  auto provider = find_provider(tx, provider_id);
  if (!provider) return;
  auto app = load_application(tx, provider->application_id);
  if (!app) return;
  MachinesRepo repo(tx);
  auto declared = core::default_schedule(app->form, models);
  if (!declared) {
    // Declared long ago in a time zone the OS database no longer has: the machine stays 24/7, and
    // the machine's events say why.
    repo.add_event(machine_id, now, "schedule_not_applied",
                   {{"application_id", app->id}, {"reason", declared.error().message}});
    return;
  }
  save_schedule(tx, provider_id, machine_id, declared->schedule, now);
  repo.add_event(machine_id, now, "schedule_from_application",
                 {{"application_id", app->id},
                  {"entry", declared->entry ? nlohmann::json(*declared->entry) : nlohmann::json(nullptr)},
                  {"schedule", core::schedule_to_json(declared->schedule)}});
}

//! A known machine registering again: its row updated, with events for what changed since. Returns whether
//! its GPUs, driver or simulated flag changed (then it is verified again before it is offered).
bool reattach(MachinesRepo& repo, const MachineRecord& m, const RegisterRequest& req, const MachineRegistration& reg,
              std::int64_t now) {
  const std::set<std::string> before = repo.present_gpu_uuids(m.id);
  std::set<std::string> after;
  for (const auto& g : req.gpus) after.insert(g.uuid);
  nlohmann::json added = nlohmann::json::array();
  nlohmann::json removed = nlohmann::json::array();
  for (const auto& u : after) {
    if (!before.count(u)) added.push_back(u);
  }
  for (const auto& u : before) {
    if (!after.count(u)) removed.push_back(u);
  }
  repo.update_registration(m.id, reg, now);
  repo.add_event(m.id, now, "reattached", {{"gpus", req.gpus.size()}, {"agent_version", req.agent_version}});
  if (!added.empty() || !removed.empty()) {
    repo.add_event(m.id, now, "gpus_changed", {{"added", added}, {"removed", removed}});
  }
  if (m.driver_version != reg.driver_version) {
    repo.add_event(m.id, now, "driver_changed",
                   {{"from", m.driver_version}, {"to", reg.driver_version}, {"cuda_version", reg.cuda_version}});
  }
  if (m.simulated != req.simulated) repo.add_event(m.id, now, "simulated_changed", {{"simulated", req.simulated}});
  repo.mark_gpus_absent(m.id, now);
  return !added.empty() || !removed.empty() || m.driver_version != reg.driver_version || m.simulated != req.simulated;
}

//! One sample's contribution to its minute's aggregates.
MinuteSample minute_sample(const TelemetrySample& s) {
  const bool throttled = std::any_of(s.clock_events.begin(), s.clock_events.end(), is_throttle_event);
  auto d = [](const auto& v) { return v ? static_cast<double>(*v) : 0.0; };
  auto n = [](const auto& v) { return std::int64_t{v ? 1 : 0}; };
  return MinuteSample{std::int64_t{s.error ? 1 : 0}, n(s.temperature_c), d(s.temperature_c), n(s.power_w),
                      d(s.power_w),                  n(s.util_gpu_pct),  d(s.util_gpu_pct),  s.memory_used_mib.value_or(0),
                      std::int64_t{throttled ? 1 : 0}, s.ecc_uncorrected.value_or(0)};
}

//! 400 naming the field when a sample or event names a GPU the machine did not register.
core::Status check_heartbeat_gpus(const std::set<std::string>& uuids, const HeartbeatRequest& req) {
  for (std::size_t i = 0; i < req.telemetry.size(); ++i) {
    if (!uuids.count(req.telemetry[i].uuid)) {
      return Error::make(ErrorCode::invalid_field, "not a GPU of this machine (register it first)",
                         "telemetry[" + std::to_string(i) + "].uuid");
    }
  }
  for (std::size_t i = 0; i < req.events.size(); ++i) {
    if (!uuids.count(req.events[i].uuid)) {
      return Error::make(ErrorCode::invalid_field, "not a GPU of this machine",
                         "events[" + std::to_string(i) + "].uuid");
    }
  }
  return core::ok_status();
}

}  // namespace

core::Result<nlohmann::json> register_machine(Tx& tx, const std::string& provider_id, const RegisterRequest& req,
                                              const MachineSettings& settings, std::int64_t now,
                                              const std::string& seen_from) {
  MachinesRepo repo(tx);
  std::optional<MachineRecord> m;
  if (req.machine_id) {
    m = repo.find(*req.machine_id);
    if (m && m->provider_id != provider_id) return machine_not_found(*req.machine_id);
  }
  if (!m) m = repo.find_by_fingerprint(provider_id, req.machine_fingerprint);

  MachineRegistration reg = registration_of(provider_id, req);
  if (!reg.public_host && core::is_host_name_or_address(seen_from)) reg.public_host = seen_from;
  std::string id;
  std::optional<core::BenchmarkReason> verify;
  if (!m) {
    id = util::new_id("mch");
    repo.insert(id, reg, now);
    repo.add_event(id, now, "registered",
                   {{"gpus", req.gpus.size()}, {"simulated", req.simulated}, {"driver_version", reg.driver_version}});
    verify = core::BenchmarkReason::first_registration;
  } else {
    id = m->id;
    if (reattach(repo, *m, req, reg, now)) verify = core::BenchmarkReason::hardware_change;
    // Found by its fingerprint, the agent's state gone: its seq starts again at 1.
    if (!req.machine_id) repo.restart_seq(id);
  }
  std::vector<std::string> models;
  const auto catalog = list_models(tx);  // once per registration, not once per GPU
  for (const auto& g : req.gpus) {
    auto model = catalog_model(catalog, g);
    if (model) models.push_back(*model);
    repo.upsert_gpu(id, MachineGpuWrite{g.uuid, g.index, g.name, model, g.memory_mib, g.facts().dump()}, now);
  }
  if (!m && !load_schedule(tx, id)) start_with_declared_schedule(tx, provider_id, id, models, now);
  if (verify) require_verification(tx, id, *verify, now);
  return nlohmann::json{{"machine_id", id}, {"heartbeat_interval_s", settings.heartbeat_interval_s}};
}

bool KnownGpus::knows(const std::string& machine_id, const std::vector<std::string_view>& uuids) const {
  std::lock_guard lock(mutex_);
  auto it = by_machine_.find(machine_id);
  if (it == by_machine_.end()) return false;
  return std::all_of(uuids.begin(), uuids.end(), [&](std::string_view u) {
    return std::binary_search(it->second.begin(), it->second.end(), u, std::less<>());
  });
}

void KnownGpus::remember(const std::string& machine_id, const std::set<std::string>& uuids) {
  std::lock_guard lock(mutex_);
  if (by_machine_.size() >= max_machines_ && !by_machine_.contains(machine_id)) by_machine_.clear();
  by_machine_[machine_id].assign(uuids.begin(), uuids.end());  // a set's order: sorted
}

namespace heartbeat_check {

//! The request's GPUs checked against the machine's: from `known` when it knows every uuid named.
core::Result<CheckedMachine> with_gpus(MachinesRepo& repo, const HeartbeatRequest& req, core::MachineStatus status,
                                       KnownGpus* known) {
  if (known != nullptr) {
    std::vector<std::string_view> uuids;  // the request's own strings: no copy per GPU on every heartbeat
    uuids.reserve(req.telemetry.size() + req.events.size());
    for (const auto& s : req.telemetry) uuids.push_back(s.uuid);
    for (const auto& e : req.events) uuids.push_back(e.uuid);
    if (known->knows(req.machine_id, uuids)) return CheckedMachine{req.machine_id, status, std::nullopt};
  }
  const auto gpus = repo.gpu_uuids(req.machine_id);
  if (auto ok = check_heartbeat_gpus(gpus, req); !ok) return ok.error();
  if (known != nullptr) known->remember(req.machine_id, gpus);
  return CheckedMachine{req.machine_id, status, std::nullopt};
}

}  // namespace heartbeat_check

core::Result<CheckedMachine> check_heartbeat_machine(Tx& tx, const std::string& provider_id,
                                                     const HeartbeatRequest& req, KnownGpus* known) {
  MachinesRepo repo(tx);
  auto m = repo.heartbeat_machine(req.machine_id);
  if (!m || m->provider_id != provider_id) return machine_not_found(req.machine_id);
  return heartbeat_check::with_gpus(repo, req, m->status, known);
}

core::Result<CheckedMachine> check_heartbeat_of_key(Tx& tx, const std::string& api_key_id, const HeartbeatRequest& req,
                                                    KnownGpus* known, const HeartbeatWorkQuestion* benchmark_work) {
  MachinesRepo repo(tx);
  auto m = repo.heartbeat_machine_of_key(req.machine_id, api_key_id, benchmark_work);
  if (!m) return machine_not_found(req.machine_id);
  auto checked = heartbeat_check::with_gpus(repo, req, m->status, known);
  if (checked) checked->benchmark_work = m->benchmark_work;
  return checked;
}

core::Status check_heartbeat(Tx& tx, const std::string& provider_id, const HeartbeatRequest& req) {
  auto m = check_heartbeat_machine(tx, provider_id, req);
  if (!m) return std::move(m).error();
  return core::ok_status();
}

namespace heartbeat_store {

//! record_checked_heartbeat; with `owner` (the shared request `req` is), each GPU's sample waits in
//! `latest` as a pointer into it, formatted only if it is still the GPU's latest at a flush. Not when the
//! request carries more than samples (events: up to 256 of 1,000 characters each; jobs), which pointing
//! into it would keep in memory for a whole flush interval.
core::Result<nlohmann::json> store_checked(Tx& tx, const CheckedMachine& m, const HeartbeatRequest& req,
                                           const std::shared_ptr<const HeartbeatRequest>* owner,
                                           const MachineSettings& settings, std::int64_t now,
                                           PendingTelemetry* latest) {
  MachinesRepo repo(tx);
  const nlohmann::json reply = {{"commands", nlohmann::json::array()},
                                {"heartbeat_interval_s", settings.heartbeat_interval_s}};

  // The machine row takes the seq: a replayed one is answered as before and stores nothing.
  const auto next = core::on_heartbeat(m.status);
  if (!repo.record_heartbeat(m.id, next.next, req.seq, now)) {
    nlohmann::json dup = reply;
    dup["duplicate"] = true;
    return dup;
  }

  const std::int64_t oldest = now - std::int64_t{settings.telemetry_retention_days} * kDayMs;
  auto clamp_time = [&](std::int64_t at) { return (at < oldest || at > now + kMinuteMs) ? now : at; };
  std::vector<PendingTelemetry::Reading> readings;
  if (latest) readings.reserve(req.telemetry.size());
  for (const auto& s : req.telemetry) {
    const std::int64_t at = clamp_time(s.at_ms);
    if (latest) {
      PendingTelemetry::Readings text_or_sample;
      if (owner != nullptr && req.events.empty() && req.jobs.empty()) {
        text_or_sample = std::shared_ptr<const protocol::TelemetrySample>(*owner, &s);  // shares the request
      } else {
        text_or_sample = s.readings_text();
      }
      readings.push_back({s.uuid, at, std::move(text_or_sample), minute_of(at), minute_sample(s)});
    } else {
      repo.store_latest_sample(m.id, s.uuid, at, s.readings_text());
      const TelemetrySums sums = minute_sums(minute_sample(s), minute_of(at));
      repo.add_minute_sums({MinuteSumsRow{&m.id, &s.uuid, &sums}});
    }
  }
  if (latest) latest->put_samples(m.id, std::move(readings));
  repo.add_presence(m.id, minute_of(now));
  for (const auto& e : req.events) {
    nlohmann::json detail = {{"uuid", e.uuid}};
    if (e.message) detail["message"] = *e.message;
    repo.add_event(m.id, clamp_time(e.at_ms), e.type, detail, req.seq);
  }
  if (next.came_online) repo.add_event(m.id, now, "online", {{"seq", req.seq}});
  return reply;
}

}  // namespace heartbeat_store

core::Result<nlohmann::json> record_heartbeat(Tx& tx, const std::string& provider_id, const HeartbeatRequest& req,
                                              const MachineSettings& settings, std::int64_t now,
                                              PendingTelemetry* latest) {
  auto m = check_heartbeat_machine(tx, provider_id, req);
  if (!m) return std::move(m).error();
  return heartbeat_store::store_checked(tx, *m, req, nullptr, settings, now, latest);
}

core::Result<nlohmann::json> record_checked_heartbeat(Tx& tx, const CheckedMachine& m,
                                                      const std::shared_ptr<const HeartbeatRequest>& req,
                                                      const MachineSettings& settings, std::int64_t now,
                                                      PendingTelemetry* latest) {
  return heartbeat_store::store_checked(tx, m, *req, &req, settings, now, latest);
}

core::Result<nlohmann::json> list_machines(Tx& tx, const std::string& provider_id, const PageParams& page,
                                           std::int64_t now, const PendingTelemetry* latest) {
  MachinesRepo repo(tx);
  const auto cards = repo.cards_of_provider(provider_id);
  auto s = page_slice(cards, page, [](const MachineCard& m) { return m.id; });
  if (!s) return std::move(s).error();
  nlohmann::json items = nlohmann::json::array();
  for (std::size_t i = s->begin; i < s->end; ++i) {
    const auto pending = latest ? latest->pending_of(cards[i].id) : PendingTelemetry::OfMachine{};
    nlohmann::json m = machine_summary(repo, cards[i], pending);
    add_overview_24h(repo, m, now, pending);
    items.push_back(std::move(m));
  }
  return nlohmann::json{{"items", std::move(items)}, {"next_cursor", s->next_cursor}};
}

core::Result<nlohmann::json> machine_detail(Tx& tx, const std::string& provider_id, const std::string& machine_id,
                                            std::int64_t now, const PendingTelemetry* latest) {
  MachinesRepo repo(tx);
  auto m = repo.card(machine_id, provider_id);
  if (!m) return machine_not_found(machine_id);
  const auto pending = latest ? latest->pending_of(machine_id) : PendingTelemetry::OfMachine{};
  nlohmann::json out = machine_summary(repo, *m, pending);
  const std::int64_t since = minute_of(now) - kDayMs + kMinuteMs;
  for (auto& g : out["gpus"]) {
    nlohmann::json series = nlohmann::json::array();
    const std::string uuid = g["uuid"].get<std::string>();
    for (const auto& s :
         with_pending(repo.telemetry_minutes(machine_id, uuid, since), pending, uuid, since, kMinuteMs)) {
      series.push_back(minute_json(s));
    }
    g["series_24h"] = std::move(series);
  }
  out["presence_minutes_24h"] = repo.presence_minutes(machine_id, since);
  nlohmann::json events = nlohmann::json::array();
  for (const auto& e : repo.recent_events(machine_id, 100)) {
    events.push_back({{"at", util::rfc3339(e.at_ms)},
                      {"kind", e.kind},
                      {"detail", nlohmann::json::parse(e.detail_json, nullptr, false)}});
  }
  out["events"] = std::move(events);
  return out;
}

core::Result<nlohmann::json> remove_machine(Tx& tx, const std::string& provider_id, const std::string& machine_id,
                                            std::int64_t now) {
  MachinesRepo repo(tx);
  const auto m = repo.card(machine_id, provider_id);
  if (!m || m->removed_ms) return machine_not_found(machine_id);
  if (m->status == core::MachineStatus::online) {
    return Error::make(ErrorCode::conflict,
                       "the agent on " + m->hostname +
                           " is still heard from: stop it first (systemctl stop gpunex-agent), then remove the "
                           "machine once it shows offline")
        .with_code("machine_online");
  }
  if (const auto live = BenchmarksRepo(tx).live_rentals(machine_id); live > 0) {
    return Error::make(ErrorCode::conflict, std::to_string(live) + (live == 1 ? " rental is" : " rentals are") +
                                                " still live on " + m->hostname +
                                                ": it can be removed once they have ended")
        .with_code("machine_has_rentals");
  }
  if (!repo.remove(machine_id, now)) {
    return Error::make(ErrorCode::conflict, "the machine came back online meanwhile").with_code("machine_online");
  }
  repo.add_event(machine_id, now, "removed", nlohmann::json::object());
  return nlohmann::json{{"id", machine_id}, {"removed_at", util::rfc3339(now)}};
}

MachineSettings machine_settings(const Config& c) {
  MachineSettings s;
  s.heartbeat_interval_s = c.heartbeat_interval_s;
  s.offline_after_missed = c.offline_after_missed;
  s.telemetry_retention_days = c.telemetry_retention_days;
  s.base_url = c.base_url();
  return s;
}

namespace {

//! Whether the provider is to be told their machine went offline: not when it is outside its availability or
//! in maintenance (they turned it off as they said they would), nor when they were told of it within the
//! hour. Adds it to what its provider's user is told (`told`) and returns whether it did.
bool tell_offline(Tx& tx, const MachineSettings& settings, const SilentMachine& m, std::int64_t now,
                  std::map<std::string, mail::MachineOfflineFacts>& told) {
  MachinesRepo repo(tx);
  if (repo.offline_told_since(m.id, now - kOfflineNoticeEveryMs)) return false;
  // Available when last heard and now: one turned off at (or just before) its window's end is not missed.
  const auto at = [](std::int64_t ms) { return core::UtcTime{std::chrono::seconds{ms / 1000}}; };
  if (const auto schedule = load_schedule(tx, m.id);
      schedule && (!core::is_available(*schedule, at(m.last_seen_ms)) || !core::is_available(*schedule, at(now)))) {
    return false;
  }
  const auto facts = repo.host_facts(m.id);
  if (!facts) return false;
  const auto who = provider_contact(tx, facts->provider_id);
  if (!who) return false;
  mail::MachineOfflineFacts& f = told[who->user_id];
  f.machines.push_back(
      {facts->hostname + " (" + m.id + ")", util::rfc3339(m.last_seen_ms), settings.base_url + "/#/machines/" + m.id});
  f.missed_heartbeats = settings.offline_after_missed;
  f.rentals_end_after_minutes = static_cast<int>(core::rental::kAgentLostAfterMs / 60'000);
  f.machines_link = settings.base_url + "/#/machines";
  return true;
}

}  // namespace

std::size_t mark_offline_machines(Tx& tx, const MachineSettings& settings, std::int64_t now, std::size_t limit,
                                  std::int64_t heard_from) {
  MachinesRepo repo(tx);
  const core::OfflineRule rule{settings.heartbeat_interval_s, settings.offline_after_missed};
  std::size_t changed = 0;
  std::map<std::string, mail::MachineOfflineFacts> to_tell;  // by the provider's user: one announcement each
  for (const auto& m :
       repo.silent_online_machines(core::offline_cutoff_ms(rule, now), static_cast<std::int64_t>(limit), heard_from)) {
    if (repo.move_from_online(m.id, core::MachineStatus::offline)) {
      const bool told = tell_offline(tx, settings, m, now, to_tell);
      repo.add_event(m.id, now, "offline",
                     {{"last_seen_at", util::rfc3339(m.last_seen_ms)},
                      {"missed_heartbeats", settings.offline_after_missed},
                      {"provider_told", told}});
      ++changed;
    }
  }
  for (const auto& [user_id, facts] : to_tell) announce(tx, user_id, mail::machine_offline(facts), std::nullopt, now);
  return changed;
}

std::int64_t prune_telemetry(Tx& tx, const MachineSettings& settings, std::int64_t now, std::int64_t limit) {
  const std::int64_t oldest = now - std::int64_t{settings.telemetry_retention_days} * kDayMs;
  return MachinesRepo(tx).prune_before(oldest, limit);
}

std::string agent_installer(const std::string& server_url) {
  std::string out(agent_installer_template());
  const std::string placeholder = "__GPUNEX_SERVER_URL__";
  for (auto pos = out.find(placeholder); pos != std::string::npos; pos = out.find(placeholder, pos)) {
    out.replace(pos, placeholder.size(), server_url);
    pos += server_url.size();
  }
  return out;
}

namespace {
MachineForScore for_score(ScoredMachineRow r) {
  return MachineForScore{std::move(r.id), std::move(r.provider_id), std::move(r.hostname), r.created_ms};
}
}  // namespace

std::vector<MachineForScore> machines_for_score(Tx& tx) {
  std::vector<MachineForScore> out;
  for (auto& r : MachinesRepo(tx).scored_machines()) out.push_back(for_score(std::move(r)));
  return out;
}

std::optional<MachineForScore> machine_for_score(Tx& tx, const std::string& machine_id) {
  auto r = MachinesRepo(tx).scored_machine(machine_id);
  if (!r) return std::nullopt;
  return for_score(std::move(*r));
}

std::vector<std::int64_t> presence_minutes_between(Tx& tx, const std::string& machine_id, std::int64_t from_ms,
                                                   std::int64_t to_ms) {
  return MachinesRepo(tx).presence_between(machine_id, from_ms, to_ms);
}

std::string provider_id_for_api_key(Tx& tx, const std::string& api_key_id) {
  return provider_of_api_key(tx, api_key_id).value_or(std::string());
}

std::string provider_id_for_user(Tx& tx, const std::string& user_id) {
  auto p = find_provider_by_user(tx, user_id);
  return p ? p->id : std::string();
}

}  // namespace gpunex::server
