#include "server/fleet/machines.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "core/default_schedule.hpp"
#include "core/gpu_catalog.hpp"
#include "server/onboarding/applications.hpp"
#include "server/fleet/gpu_catalog.hpp"
#include "server/market/offers.hpp"
#include "server/onboarding/providers.hpp"
#include "util/crypto.hpp"
#include "util/time.hpp"

namespace gpunex::server {

using core::Error;
using core::ErrorCode;
using store::Params;
using store::Row;
using store::Tx;

namespace {

constexpr std::int64_t kMinuteMs = 60'000;
constexpr std::int64_t kDayMs = 86'400'000;

std::int64_t minute_of(std::int64_t ms) {
  return ms - (ms % kMinuteMs);
}

Error machine_not_found(const std::string& id) {
  return Error::make(ErrorCode::not_found, "no machine " + id + " for this provider", std::string("machine_id"));
}

void add_event(Tx& tx, const std::string& machine_id, std::int64_t at, const std::string& kind,
               const nlohmann::json& detail, std::optional<std::int64_t> seq = std::nullopt) {
  tx.exec("INSERT INTO machine_events (id, machine_id, at, kind, detail, seq) VALUES (?, ?, ?, ?, ?, ?)",
          {util::new_id("mev"), machine_id, at, kind, detail.dump(), seq ? store::Value(*seq) : store::Value(nullptr)});
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

struct MachineRow {
  std::string id, provider_id, status, driver_version;
  bool simulated = false;
};

std::optional<MachineRow> find_machine(Tx& tx, std::string_view where, const Params& params) {
  auto r = tx.query_one(
      "SELECT id, provider_id, status, driver_version, simulated FROM machines WHERE " + std::string(where), params);
  if (!r) return std::nullopt;
  return MachineRow{r->str(0), r->str(1), r->str(2), r->str(3), r->boolean(4)};
}

std::string driver_of(const RegisterRequest& req) {
  return req.gpus.empty() ? "" : req.gpus.front().driver_version;
}
std::string cuda_of(const RegisterRequest& req) {
  return req.gpus.empty() ? "" : req.gpus.front().cuda_version;
}

nlohmann::json gpu_summary(const Row& r) {
  // uuid, idx, name, model, memory_mib, present, facts, latest sample, then the listing state the
  // benchmarks decided (gpu_listing, NULL until a first run): listed, perf_score, quality_ratio,
  // delist_reason. The Benchmarks tab reads the same row, so the two pages agree.
  nlohmann::json g = {{"uuid", r.str(0)},
                      {"index", r.i64(1)},
                      {"name", r.str(2)},
                      {"model", r.opt_str(3) ? nlohmann::json(*r.opt_str(3)) : nlohmann::json()},
                      {"memory_mib", r.i64(4)},
                      {"present", r.boolean(5)}};
  auto facts = nlohmann::json::parse(r.str(6), nullptr, false);
  if (facts.is_object()) g.update(facts);
  g["index"] = r.i64(1);
  g["latest"] = r.opt_str(7) ? nlohmann::json::parse(*r.opt_str(7), nullptr, false) : nlohmann::json();
  const bool benchmarked = !r.is_null(8);
  auto opt_f64 = [&](std::size_t i) { return r.is_null(i) ? nlohmann::json(nullptr) : nlohmann::json(r.f64(i)); };
  g["benchmarked"] = benchmarked;
  g["listed"] = benchmarked && r.boolean(8);
  g["perf_score"] = opt_f64(9);
  g["quality_ratio"] = opt_f64(10);
  g["delist_reason"] = !benchmarked      ? nlohmann::json("awaiting benchmarks")
                       : r.is_null(11) ? nlohmann::json(nullptr)
                                       : nlohmann::json(r.str(11));
  return g;
}

const char* kGpuColumns =
    "SELECT g.uuid, g.idx, g.name, g.model, g.memory_mib, g.present, g.facts, l.sample, "
    "b.listed, b.perf_score, b.quality_ratio, b.delist_reason "
    "FROM machine_gpus g LEFT JOIN telemetry_latest l ON l.machine_id = g.machine_id AND l.uuid = g.uuid "
    "LEFT JOIN gpu_listing b ON b.machine_id = g.machine_id AND b.uuid = g.uuid "
    "WHERE g.machine_id = ? ORDER BY g.present DESC, g.idx, g.uuid";

//! What a machine card shows (list and detail): the machine, its host and its GPUs with the latest sample.
nlohmann::json machine_summary(Tx& tx, const Row& m) {
  // id, status, last_seen_at, simulated, hostname, created_at, driver, cuda, agent_version, host
  nlohmann::json gpus = nlohmann::json::array();
  for (const Row& r : tx.query(kGpuColumns, {m.str(0)})) gpus.push_back(gpu_summary(r));
  return {{"id", m.str(0)},
          {"status", m.str(1)},
          {"last_seen_at", m.opt_i64(2) ? nlohmann::json(util::rfc3339(*m.opt_i64(2))) : nlohmann::json()},
          {"simulated", m.boolean(3)},
          {"hostname", m.str(4)},
          {"created_at", util::rfc3339(m.i64(5))},
          {"driver_version", m.str(6)},
          {"cuda_version", m.str(7)},
          {"agent_version", m.str(8)},
          {"host", nlohmann::json::parse(m.str(9), nullptr, false)},
          {"gpus", std::move(gpus)}};
}

// The list's charts: 96 points a GPU instead of the detail's 1440, since the list page polls every machine.
constexpr std::int64_t kOverviewStepMinutes = 15;

//! Adds each GPU's last 24 h as 15-minute averages ({step_minutes, points}) to a machine summary,
//! from one query for the whole machine, so the machines list draws its charts without a request per machine.
void add_overview_24h(Tx& tx, nlohmann::json& machine, std::int64_t now) {
  const std::int64_t step = kOverviewStepMinutes * kMinuteMs;
  const std::int64_t since = minute_of(now) - kDayMs + kMinuteMs;
  std::map<std::string, nlohmann::json> points;
  for (const Row& r : tx.query("SELECT uuid, minute - minute % " + std::to_string(step) +
                                   ", SUM(samples), SUM(errors), SUM(temp_n), SUM(temp_sum), MAX(temp_max), "
                                   "SUM(power_n), SUM(power_sum), SUM(util_n), SUM(util_sum) FROM telemetry_minute "
                                   "WHERE machine_id = ? AND minute >= ? GROUP BY 1, 2 ORDER BY 1, 2",
                               {machine["id"].get<std::string>(), since})) {
    auto avg = [&](std::size_t n_col, std::size_t sum_col) {
      return r.i64(n_col) > 0 ? nlohmann::json(r.f64(sum_col) / static_cast<double>(r.i64(n_col))) : nlohmann::json();
    };
    points[r.str(0)].push_back({{"at", util::rfc3339(r.i64(1))},
                                {"samples", r.i64(2)},
                                {"errors", r.i64(3)},
                                {"temperature_c_avg", avg(4, 5)},
                                {"temperature_c_max", r.i64(4) > 0 ? nlohmann::json(r.f64(6)) : nlohmann::json()},
                                {"power_w_avg", avg(7, 8)},
                                {"util_gpu_pct_avg", avg(9, 10)}});
  }
  for (auto& g : machine["gpus"]) {
    auto it = points.find(g["uuid"].get<std::string>());
    g["overview_24h"] = {{"step_minutes", kOverviewStepMinutes},
                         {"points", it == points.end() ? nlohmann::json::array() : std::move(it->second)}};
  }
}

const char* kMachineColumns =
    "SELECT id, status, last_seen_at, simulated, hostname, created_at, driver_version, cuda_version, agent_version, "
    "host FROM machines ";

//! A new machine starts with the availability its provider declared in the approved application
//! for that GPU model: shown on the machine's schedule and editable there like any other.
void start_with_declared_schedule(Tx& tx, const std::string& provider_id, const std::string& machine_id,
                                  const std::vector<std::string>& models, std::int64_t now) {
  auto provider = find_provider(tx, provider_id);
  if (!provider) return;
  auto app = load_application(tx, provider->application_id);
  if (!app) return;
  auto declared = core::default_schedule(app->form, models);
  if (!declared) {
    // Declared long ago in a time zone the OS database no longer has: the machine stays 24/7, and
    // the machine's events say why.
    add_event(tx, machine_id, now, "schedule_not_applied",
              {{"application_id", app->id}, {"reason", declared.error().message}});
    return;
  }
  save_schedule(tx, provider_id, machine_id, declared->schedule, now);
  add_event(tx, machine_id, now, "schedule_from_application",
            {{"application_id", app->id},
             {"entry", declared->entry ? nlohmann::json(*declared->entry) : nlohmann::json(nullptr)},
             {"schedule", core::schedule_to_json(declared->schedule)}});
}

}  // namespace

core::Result<nlohmann::json> register_machine(Tx& tx, const std::string& provider_id, const RegisterRequest& req,
                                              const MachineSettings& settings, std::int64_t now) {
  std::optional<MachineRow> m;
  if (req.machine_id) {
    m = find_machine(tx, "id = ?", {*req.machine_id});
    if (m && m->provider_id != provider_id) return machine_not_found(*req.machine_id);
  }
  if (!m) m = find_machine(tx, "provider_id = ? AND fingerprint = ?", {provider_id, req.machine_fingerprint});

  const std::string driver = driver_of(req);
  const std::string cuda = cuda_of(req);
  std::string id;
  if (!m) {
    id = util::new_id("mch");
    tx.exec(
        "INSERT INTO machines (id, provider_id, fingerprint, hostname, host, simulated, agent_version, "
        "protocol_version, status, driver_version, cuda_version, created_at, registered_at, last_seen_at, last_seq) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'offline', ?, ?, ?, ?, NULL, 0)",
        {id, provider_id, req.machine_fingerprint, req.host.hostname, req.host.to_json().dump(),
         std::int64_t{req.simulated}, req.agent_version, std::int64_t{req.protocol_version}, driver, cuda, now, now});
    add_event(tx, id, now, "registered",
              {{"gpus", req.gpus.size()}, {"simulated", req.simulated}, {"driver_version", driver}});
  } else {
    id = m->id;
    std::set<std::string> before;
    for (const Row& r : tx.query("SELECT uuid FROM machine_gpus WHERE machine_id = ? AND present = 1", {id})) {
      before.insert(r.str(0));
    }
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
    tx.exec(
        "UPDATE machines SET fingerprint = ?, hostname = ?, host = ?, simulated = ?, agent_version = ?, "
        "protocol_version = ?, driver_version = ?, cuda_version = ?, registered_at = ? WHERE id = ?",
        {req.machine_fingerprint, req.host.hostname, req.host.to_json().dump(), std::int64_t{req.simulated},
         req.agent_version, std::int64_t{req.protocol_version}, driver, cuda, now, id});
    add_event(tx, id, now, "reattached", {{"gpus", req.gpus.size()}, {"agent_version", req.agent_version}});
    if (!added.empty() || !removed.empty()) {
      add_event(tx, id, now, "gpus_changed", {{"added", added}, {"removed", removed}});
    }
    if (m->driver_version != driver) {
      add_event(tx, id, now, "driver_changed", {{"from", m->driver_version}, {"to", driver}, {"cuda_version", cuda}});
    }
    if (m->simulated != req.simulated) add_event(tx, id, now, "simulated_changed", {{"simulated", req.simulated}});
    tx.exec("UPDATE machine_gpus SET present = 0, updated_at = ? WHERE machine_id = ?", {now, id});
  }
  std::vector<std::string> models;
  const auto catalog = list_models(tx);  // once per registration, not once per GPU
  for (const auto& g : req.gpus) {
    auto model = catalog_model(catalog, g);
    if (model) models.push_back(*model);
    tx.exec(
        "INSERT INTO machine_gpus (machine_id, uuid, idx, name, model, memory_mib, facts, present, first_seen_at, "
        "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?) "
        "ON CONFLICT (machine_id, uuid) DO UPDATE SET idx = excluded.idx, name = excluded.name, "
        "model = excluded.model, memory_mib = excluded.memory_mib, facts = excluded.facts, present = 1, "
        "updated_at = excluded.updated_at",
        {id, g.uuid, g.index, g.name, model ? store::Value(*model) : store::Value(nullptr), g.memory_mib,
         g.facts().dump(), now, now});
  }
  if (!m && !load_schedule(tx, id)) start_with_declared_schedule(tx, provider_id, id, models, now);
  return nlohmann::json{{"machine_id", id}, {"heartbeat_interval_s", settings.heartbeat_interval_s}};
}

core::Result<nlohmann::json> record_heartbeat(Tx& tx, const std::string& provider_id, const HeartbeatRequest& req,
                                              const MachineSettings& settings, std::int64_t now) {
  auto m = find_machine(tx, "id = ?", {req.machine_id});
  if (!m || m->provider_id != provider_id) return machine_not_found(req.machine_id);
  const nlohmann::json reply = {{"commands", nlohmann::json::array()},
                                {"heartbeat_interval_s", settings.heartbeat_interval_s}};

  std::set<std::string> uuids;
  for (const Row& r : tx.query("SELECT uuid FROM machine_gpus WHERE machine_id = ?", {m->id})) uuids.insert(r.str(0));
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

  // The dedupe record: a replayed seq is answered as before and stores nothing.
  if (tx.exec("INSERT INTO agent_seq (machine_id, seq, received_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
              {m->id, req.seq, now}) == 0) {
    nlohmann::json dup = reply;
    dup["duplicate"] = true;
    return dup;
  }

  const std::int64_t oldest = now - std::int64_t{settings.telemetry_retention_days} * kDayMs;
  auto clamp_time = [&](std::int64_t at) { return (at < oldest || at > now + kMinuteMs) ? now : at; };
  for (const auto& s : req.telemetry) {
    const std::int64_t at = clamp_time(s.at_ms);
    tx.exec(
        "INSERT INTO telemetry_latest (machine_id, uuid, at, sample) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (machine_id, uuid) DO UPDATE SET at = excluded.at, sample = excluded.sample "
        "WHERE excluded.at >= telemetry_latest.at",
        {m->id, s.uuid, at, s.to_json_text()});
    const bool throttled = std::any_of(s.clock_events.begin(), s.clock_events.end(), is_throttle_event);
    auto d = [](const auto& v) { return v ? store::Value(static_cast<double>(*v)) : store::Value(0.0); };
    auto n = [](const auto& v) { return std::int64_t{v ? 1 : 0}; };
    tx.exec(
        "INSERT INTO telemetry_minute (machine_id, uuid, minute, samples, errors, temp_n, temp_sum, temp_max, "
        "power_n, power_sum, power_max, util_n, util_sum, util_max, mem_used_max, throttled, ecc_uncorrected_max) "
        "VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (machine_id, uuid, minute) DO UPDATE SET "
        "samples = telemetry_minute.samples + 1, errors = telemetry_minute.errors + excluded.errors, "
        "temp_n = telemetry_minute.temp_n + excluded.temp_n, temp_sum = telemetry_minute.temp_sum + excluded.temp_sum, "
        "temp_max = CASE WHEN excluded.temp_max > telemetry_minute.temp_max THEN excluded.temp_max "
        "ELSE telemetry_minute.temp_max END, "
        "power_n = telemetry_minute.power_n + excluded.power_n, "
        "power_sum = telemetry_minute.power_sum + excluded.power_sum, "
        "power_max = CASE WHEN excluded.power_max > telemetry_minute.power_max THEN excluded.power_max "
        "ELSE telemetry_minute.power_max END, "
        "util_n = telemetry_minute.util_n + excluded.util_n, util_sum = telemetry_minute.util_sum + excluded.util_sum, "
        "util_max = CASE WHEN excluded.util_max > telemetry_minute.util_max THEN excluded.util_max "
        "ELSE telemetry_minute.util_max END, "
        "mem_used_max = CASE WHEN excluded.mem_used_max > telemetry_minute.mem_used_max THEN excluded.mem_used_max "
        "ELSE telemetry_minute.mem_used_max END, "
        "throttled = telemetry_minute.throttled + excluded.throttled, "
        "ecc_uncorrected_max = CASE WHEN excluded.ecc_uncorrected_max > telemetry_minute.ecc_uncorrected_max "
        "THEN excluded.ecc_uncorrected_max ELSE telemetry_minute.ecc_uncorrected_max END",
        {m->id, s.uuid, minute_of(at), std::int64_t{s.error ? 1 : 0}, n(s.temperature_c), d(s.temperature_c),
         d(s.temperature_c), n(s.power_w), d(s.power_w), d(s.power_w), n(s.util_gpu_pct), d(s.util_gpu_pct),
         d(s.util_gpu_pct), s.memory_used_mib.value_or(0), std::int64_t{throttled ? 1 : 0},
         s.ecc_uncorrected.value_or(0)});
  }
  tx.exec(
      "INSERT INTO presence_minute (machine_id, minute, beats) VALUES (?, ?, 1) "
      "ON CONFLICT (machine_id, minute) DO UPDATE SET beats = presence_minute.beats + 1",
      {m->id, minute_of(now)});
  for (const auto& e : req.events) {
    nlohmann::json detail = {{"uuid", e.uuid}};
    if (e.message) detail["message"] = *e.message;
    add_event(tx, m->id, clamp_time(e.at_ms), e.type, detail, req.seq);
  }
  tx.exec(
      "UPDATE machines SET last_seen_at = ?, status = 'online', "
      "last_seq = CASE WHEN last_seq < ? THEN ? ELSE last_seq END WHERE id = ?",
      {now, req.seq, req.seq, m->id});
  if (m->status != "online") add_event(tx, m->id, now, "online", {{"seq", req.seq}});
  return reply;
}

core::Result<nlohmann::json> list_machines(Tx& tx, const std::string& provider_id, const PageParams& page,
                                           std::int64_t now) {
  const auto rows =
      tx.query(std::string(kMachineColumns) + "WHERE provider_id = ? ORDER BY created_at, id", {provider_id});
  auto s = page_slice(rows, page, [](const Row& m) { return m.str(0); });
  if (!s) return std::move(s).error();
  nlohmann::json items = nlohmann::json::array();
  for (std::size_t i = s->begin; i < s->end; ++i) {
    nlohmann::json m = machine_summary(tx, rows[i]);
    add_overview_24h(tx, m, now);
    items.push_back(std::move(m));
  }
  return nlohmann::json{{"items", std::move(items)}, {"next_cursor", s->next_cursor}};
}

core::Result<nlohmann::json> machine_detail(Tx& tx, const std::string& provider_id, const std::string& machine_id,
                                            std::int64_t now) {
  auto m = tx.query_one(std::string(kMachineColumns) + "WHERE id = ? AND provider_id = ?", {machine_id, provider_id});
  if (!m) return machine_not_found(machine_id);
  nlohmann::json out = machine_summary(tx, *m);
  const std::int64_t since = minute_of(now) - kDayMs + kMinuteMs;
  for (auto& g : out["gpus"]) {
    nlohmann::json series = nlohmann::json::array();
    for (const Row& r :
         tx.query("SELECT minute, samples, errors, temp_n, temp_sum, temp_max, power_n, power_sum, power_max, util_n, "
                  "util_sum, util_max, mem_used_max, throttled, ecc_uncorrected_max FROM telemetry_minute "
                  "WHERE machine_id = ? AND uuid = ? AND minute >= ? ORDER BY minute",
                  {machine_id, g["uuid"].get<std::string>(), since})) {
      auto avg = [&](std::size_t n_col, std::size_t sum_col) {
        return r.i64(n_col) > 0 ? nlohmann::json(r.f64(sum_col) / static_cast<double>(r.i64(n_col))) : nlohmann::json();
      };
      auto max = [&](std::size_t n_col, std::size_t max_col) {
        return r.i64(n_col) > 0 ? nlohmann::json(r.f64(max_col)) : nlohmann::json();
      };
      series.push_back({{"at", util::rfc3339(r.i64(0))},
                        {"samples", r.i64(1)},
                        {"errors", r.i64(2)},
                        {"temperature_c_avg", avg(3, 4)},
                        {"temperature_c_max", max(3, 5)},
                        {"power_w_avg", avg(6, 7)},
                        {"power_w_max", max(6, 8)},
                        {"util_gpu_pct_avg", avg(9, 10)},
                        {"util_gpu_pct_max", max(9, 11)},
                        {"memory_used_mib_max", r.i64(12)},
                        {"throttled_samples", r.i64(13)},
                        {"ecc_uncorrected", r.i64(14)}});
    }
    g["series_24h"] = std::move(series);
  }
  auto present =
      tx.query_one("SELECT COUNT(*) FROM presence_minute WHERE machine_id = ? AND minute >= ?", {machine_id, since});
  out["presence_minutes_24h"] = present ? present->i64(0) : 0;
  nlohmann::json events = nlohmann::json::array();
  for (const Row& r : tx.query("SELECT at, kind, detail FROM machine_events WHERE machine_id = ? "
                               "ORDER BY at DESC, id DESC LIMIT 100",
                               {machine_id})) {
    events.push_back({{"at", util::rfc3339(r.i64(0))},
                      {"kind", r.str(1)},
                      {"detail", nlohmann::json::parse(r.str(2), nullptr, false)}});
  }
  out["events"] = std::move(events);
  return out;
}

std::size_t mark_offline_machines(Tx& tx, const MachineSettings& settings, std::int64_t now, std::size_t limit) {
  const std::int64_t cutoff = now - std::int64_t{settings.offline_after_missed} * settings.heartbeat_interval_s * 1000;
  std::size_t changed = 0;
  for (const Row& r : tx.query("SELECT id, last_seen_at FROM machines WHERE status = 'online' AND last_seen_at < ? "
                               "ORDER BY last_seen_at LIMIT ?",
                               {cutoff, static_cast<std::int64_t>(limit)})) {
    if (tx.exec("UPDATE machines SET status = 'offline' WHERE id = ? AND status = 'online'", {r.str(0)}) == 1) {
      add_event(tx, r.str(0), now, "offline",
                {{"last_seen_at", util::rfc3339(r.i64(1))}, {"missed_heartbeats", settings.offline_after_missed}});
      ++changed;
    }
  }
  return changed;
}

std::int64_t prune_telemetry(Tx& tx, const MachineSettings& settings, std::int64_t now, std::int64_t limit) {
  const std::int64_t oldest = now - std::int64_t{settings.telemetry_retention_days} * kDayMs;
  // By key, at most `limit` rows per table (row values work on both drivers).
  return tx.exec(
             "DELETE FROM telemetry_minute WHERE (machine_id, uuid, minute) IN (SELECT machine_id, uuid, minute "
             "FROM telemetry_minute WHERE minute < ? LIMIT ?)",
             {oldest, limit}) +
         tx.exec(
             "DELETE FROM presence_minute WHERE (machine_id, minute) IN (SELECT machine_id, minute "
             "FROM presence_minute WHERE minute < ? LIMIT ?)",
             {oldest, limit}) +
         tx.exec(
             "DELETE FROM agent_seq WHERE (machine_id, seq) IN (SELECT machine_id, seq FROM agent_seq "
             "WHERE received_at < ? LIMIT ?)",
             {oldest, limit});
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

std::string provider_id_for_api_key(Tx& tx, const std::string& api_key_id) {
  auto r = tx.query_one("SELECT provider_id FROM api_keys WHERE id = ? AND revoked_at IS NULL", {api_key_id});
  return r ? r->str(0) : std::string();
}

std::string provider_id_for_user(Tx& tx, const std::string& user_id) {
  auto r = tx.query_one("SELECT id FROM providers WHERE user_id = ?", {user_id});
  return r ? r->str(0) : std::string();
}

}  // namespace gpunex::server
