#include "server/fleet/machines_repo.hpp"

#include <map>

#include "server/onboarding/onboarding_repo.hpp"
#include "util/crypto.hpp"

namespace gpunex::server {

using store::Params;
using store::Row;

namespace {

//! A status as an SQL literal, so the statements' text (and their plans) stay fixed.
std::string sql(core::MachineStatus s) {
  return "'" + std::string(core::machine_status_name(s)) + "'";
}

core::MachineStatus status_of(const std::string& text) {
  auto s = core::parse_machine_status(text);
  if (!s) throw store::StoreError("machines: unknown status " + text);
  return *s;
}

constexpr const char* kRecordColumns = "SELECT id, provider_id, status, driver_version, simulated FROM machines WHERE ";

std::optional<MachineRecord> record_of(const std::optional<Row>& r) {
  if (!r) return std::nullopt;
  return MachineRecord{r->str(0), r->str(1), status_of(r->str(2)), r->str(3), r->boolean(4)};
}

constexpr const char* kCardColumns =
    "SELECT id, status, last_seen_at, simulated, hostname, created_at, driver_version, cuda_version, agent_version, "
    "host, rentals_blocked, public_host, removed_at FROM machines ";

MachineCard card_of(const Row& m) {
  return MachineCard{
      m.str(0), status_of(m.str(1)), m.opt_i64(2),  m.boolean(3), m.str(4), m.i64(5), m.str(6), m.str(7), m.str(8),
      m.str(9), m.opt_str(10),       m.opt_str(11), m.opt_i64(12)};
}

}  // namespace

std::optional<MachineRecord> MachinesRepo::find(const std::string& id) {
  return record_of(tx_.query_one(std::string(kRecordColumns) + "id = ?", {id}));
}

namespace {

// Listed GPUs that are still present (a GPU gone from its machine keeps its listing row).
constexpr const char* kListedPresent =
    "gpu_listing l JOIN machine_gpus g ON g.machine_id = l.machine_id AND g.uuid = l.uuid "
    "WHERE l.listed = 1 AND g.present = 1";

}  // namespace

std::vector<FleetMachine> MachinesRepo::fleet_page(std::optional<core::MachineStatus> status,
                                                   const std::optional<std::string>& after_id, std::int64_t limit) {
  std::string q =
      "SELECT m.id, m.hostname, m.provider_id, u.email, m.status, m.simulated, m.agent_version, m.driver_version, "
      "m.last_seen_at, m.rentals_blocked, "
      "(SELECT COUNT(*) FROM machine_gpus g WHERE g.machine_id = m.id AND g.present = 1), "
      "(SELECT COUNT(*) FROM " +
      std::string(kListedPresent) +
      " AND l.machine_id = m.id) "
      "FROM machines m JOIN providers p ON p.id = m.provider_id JOIN users u ON u.id = p.user_id WHERE "
      "m.removed_at IS NULL";
  std::vector<store::Value> params;
  if (status) {
    q += " AND m.status = ?";
    params.emplace_back(std::string(core::machine_status_name(*status)));
  }
  if (after_id) {
    q += " AND m.id > ?";
    params.emplace_back(*after_id);
  }
  q += " ORDER BY m.id LIMIT ?";
  params.emplace_back(limit);
  std::vector<FleetMachine> out;
  std::map<std::string, std::size_t> at;
  std::string ids;
  std::vector<store::Value> id_params;
  for (const auto& r : tx_.query(q, std::move(params))) {
    FleetMachine m;
    m.id = r.str(0);
    m.hostname = r.str(1);
    m.provider_id = r.str(2);
    m.provider_email = r.str(3);
    m.status = core::parse_machine_status(r.str(4)).value_or(core::MachineStatus::offline);
    m.simulated = r.boolean(5);
    m.agent_version = r.str(6);
    m.driver_version = r.str(7);
    m.last_seen_ms = r.opt_i64(8);
    m.rentals_blocked = r.opt_str(9);
    m.gpus = r.i64(10);
    m.listed = r.i64(11);
    at[m.id] = out.size();
    ids += ids.empty() ? "?" : ", ?";
    id_params.emplace_back(m.id);
    out.push_back(std::move(m));
  }
  if (out.empty()) return out;
  // The page's GPUs by model, in one statement (a page is at most a few hundred machines).
  for (const auto& r :
       tx_.query("SELECT machine_id, COALESCE(model, name), COUNT(*) FROM machine_gpus WHERE present = 1 AND "
                 "machine_id IN (" +
                     ids + ") GROUP BY machine_id, COALESCE(model, name) ORDER BY 1, 2",
                 std::move(id_params))) {
    out[at[r.str(0)]].models.emplace_back(r.str(1), r.i64(2));
  }
  return out;
}

FleetCounts MachinesRepo::fleet_counts() {
  FleetCounts c;
  for (const auto& r :
       tx_.query("SELECT status, COUNT(*) FROM machines WHERE removed_at IS NULL GROUP BY status", {})) {
    c.machines += r.i64(1);
    if (core::parse_machine_status(r.str(0)) == core::MachineStatus::online) c.online += r.i64(1);
  }
  static const std::string kKept = "SELECT id FROM machines WHERE removed_at IS NULL";
  if (auto r =
          tx_.query_one("SELECT COUNT(*) FROM machine_gpus WHERE present = 1 AND machine_id IN (" + kKept + ")", {})) {
    c.gpus = r->i64(0);
  }
  if (auto r = tx_.query_one(
          std::string("SELECT COUNT(*) FROM ") + kListedPresent + " AND l.machine_id IN (" + kKept + ")", {})) {
    c.listed = r->i64(0);
  }
  return c;
}

std::optional<MachineRecord> MachinesRepo::find_by_fingerprint(const std::string& provider_id,
                                                              const std::string& fingerprint) {
  return record_of(
      tx_.query_one(std::string(kRecordColumns) + "provider_id = ? AND fingerprint = ?", {provider_id, fingerprint}));
}

std::optional<std::string> MachinesRepo::owner(const std::string& id) {
  auto r = tx_.query_one("SELECT provider_id FROM machines WHERE id = ?", {id});
  if (!r) return std::nullopt;
  return r->str(0);
}

std::optional<std::string> MachinesRepo::rentals_blocked(const std::string& id) {
  auto r = tx_.query_one("SELECT rentals_blocked FROM machines WHERE id = ?", {id});
  if (!r) return std::nullopt;
  return r->opt_str(0);
}

void MachinesRepo::set_rentals_blocked(const std::string& id, const std::optional<std::string>& why) {
  tx_.exec("UPDATE machines SET rentals_blocked = ? WHERE id = ?",
           {why ? store::Value(*why) : store::Value(nullptr), id});
}

std::optional<std::int64_t> MachinesRepo::last_seen_ms(const std::string& id) {
  auto r = tx_.query_one("SELECT last_seen_at FROM machines WHERE id = ?", {id});
  if (!r) return std::nullopt;
  return r->opt_i64(0);
}

void MachinesRepo::insert(const std::string& id, const MachineRegistration& r, std::int64_t now) {
  static const std::string kInsert =
      "INSERT INTO machines (id, provider_id, fingerprint, hostname, host, simulated, agent_version, "
      "protocol_version, status, driver_version, cuda_version, created_at, registered_at, last_seen_at, last_seq, "
      "public_host) VALUES (?, ?, ?, ?, ?, ?, ?, ?, " +
      sql(core::MachineStatus::offline) + ", ?, ?, ?, ?, NULL, 0, ?)";
  tx_.exec(kInsert, {id, r.provider_id, r.fingerprint, r.hostname, r.host_json, std::int64_t{r.simulated},
                     r.agent_version, r.protocol_version, r.driver_version, r.cuda_version, now, now,
                     r.public_host ? store::Value(*r.public_host) : store::Value(nullptr)});
}

void MachinesRepo::update_registration(const std::string& id, const MachineRegistration& r, std::int64_t now) {
  tx_.exec(
      "UPDATE machines SET fingerprint = ?, hostname = ?, host = ?, simulated = ?, agent_version = ?, "
      "protocol_version = ?, driver_version = ?, cuda_version = ?, registered_at = ?, public_host = ?, "
      "removed_at = NULL WHERE id = ?",
      {r.fingerprint, r.hostname, r.host_json, std::int64_t{r.simulated}, r.agent_version, r.protocol_version,
       r.driver_version, r.cuda_version, now, r.public_host ? store::Value(*r.public_host) : store::Value(nullptr),
       id});
}

std::set<std::string> MachinesRepo::present_gpu_uuids(const std::string& machine_id) {
  std::set<std::string> out;
  for (const Row& r : tx_.query("SELECT uuid FROM machine_gpus WHERE machine_id = ? AND present = 1", {machine_id})) {
    out.insert(r.str(0));
  }
  return out;
}

std::optional<HeartbeatMachine> MachinesRepo::heartbeat_machine(const std::string& machine_id) {
  const auto r = tx_.query_one("SELECT provider_id, status FROM machines WHERE id = ?", {machine_id});
  if (!r) return std::nullopt;
  return HeartbeatMachine{r->str(0), status_of(r->str(1)), std::nullopt};
}

std::optional<HeartbeatMachine> MachinesRepo::heartbeat_machine_of_key(const std::string& machine_id,
                                                                       const std::string& api_key_id,
                                                                       const HeartbeatWorkQuestion* benchmark_work) {
  static const std::string from =
      " FROM machines m WHERE m.id = ? AND " + onboarding_repo::live_api_key_of_sql("m.provider_id");
  if (!benchmark_work) {
    static const std::string q = "SELECT m.provider_id, m.status" + from;
    const auto r = tx_.query_one(q, {machine_id, api_key_id});
    if (!r) return std::nullopt;
    return HeartbeatMachine{r->str(0), status_of(r->str(1)), std::nullopt};
  }
  static const auto with_work = [](bool spot_checks) {
    return "SELECT m.provider_id, m.status, " + BenchmarksRepo::heartbeat_work_sql(spot_checks) + from;
  };
  static const std::string with_spot_checks = with_work(true), without = with_work(false);
  auto params = BenchmarksRepo::heartbeat_work_params(*benchmark_work);
  params.insert(params.end(), {machine_id, api_key_id});
  const auto r = tx_.query_one(benchmark_work->spot_checks ? with_spot_checks : without, params);
  if (!r) return std::nullopt;
  return HeartbeatMachine{r->str(0), status_of(r->str(1)), r->i64(2) != 0};
}

std::set<std::string> MachinesRepo::gpu_uuids(const std::string& machine_id) {
  std::set<std::string> out;
  for (const Row& r : tx_.query("SELECT uuid FROM machine_gpus WHERE machine_id = ?", {machine_id})) {
    out.insert(r.str(0));
  }
  return out;
}

void MachinesRepo::mark_gpus_absent(const std::string& machine_id, std::int64_t now) {
  tx_.exec("UPDATE machine_gpus SET present = 0, updated_at = ? WHERE machine_id = ?", {now, machine_id});
}

void MachinesRepo::upsert_gpu(const std::string& machine_id, const MachineGpuWrite& g, std::int64_t now) {
  tx_.exec(
      "INSERT INTO machine_gpus (machine_id, uuid, idx, name, model, memory_mib, facts, present, first_seen_at, "
      "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?) "
      "ON CONFLICT (machine_id, uuid) DO UPDATE SET idx = excluded.idx, name = excluded.name, "
      "model = excluded.model, memory_mib = excluded.memory_mib, facts = excluded.facts, present = 1, "
      "updated_at = excluded.updated_at",
      {machine_id, g.uuid, g.index, g.name, g.model ? store::Value(*g.model) : store::Value(nullptr), g.memory_mib,
       g.facts_json, now, now});
}

void MachinesRepo::add_event(const std::string& machine_id, std::int64_t at, const std::string& kind,
                             const nlohmann::json& detail, std::optional<std::int64_t> seq) {
  tx_.exec("INSERT INTO machine_events (id, machine_id, at, kind, detail, seq) VALUES (?, ?, ?, ?, ?, ?)",
           {util::new_id("mev"), machine_id, at, kind, detail.dump(), seq ? store::Value(*seq) : store::Value(nullptr)});
}

bool MachinesRepo::take_seq(const std::string& machine_id, std::int64_t seq) {
  return tx_.exec("UPDATE machines SET last_seq = ? WHERE id = ? AND last_seq < ?", {seq, machine_id, seq}) != 0;
}

void MachinesRepo::restart_seq(const std::string& machine_id) {
  tx_.exec("UPDATE machines SET last_seq = 0 WHERE id = ?", {machine_id});
}

void MachinesRepo::store_latest_sample(const std::string& machine_id, const std::string& uuid, std::int64_t at,
                                       const std::string& sample_json) {
  tx_.exec(
      "INSERT INTO telemetry_latest (machine_id, uuid, at, sample) VALUES (?, ?, ?, ?) "
      "ON CONFLICT (machine_id, uuid) DO UPDATE SET at = excluded.at, sample = excluded.sample "
      "WHERE excluded.at >= telemetry_latest.at",
      {machine_id, uuid, at, sample_json});
}

namespace {

//! Runs `head` + n × `tuple` + `tail` over `rows`, n rows a statement: 128, 32, 8 or 1, four texts for the
//! stores' statement caches rather than one per count. `bind` appends a row's parameters.
template <class Row, class Bind>
void exec_rows(store::Tx& tx, const std::vector<Row>& rows, std::string_view head, std::string_view tuple,
               std::string_view tail, Bind bind) {
  std::vector<store::Value> params;
  for (std::size_t i = 0, n = 0; i < rows.size(); i += n) {
    const std::size_t left = rows.size() - i;
    n = left >= 128 ? 128 : left >= 32 ? 32 : left >= 8 ? 8 : 1;
    std::string q(head);
    params.clear();
    for (std::size_t k = 0; k < n; ++k) {
      if (k > 0) q += ", ";
      q += tuple;
      bind(params, rows[i + k]);
    }
    q += tail;
    tx.exec(q, params);
  }
}

}  // namespace

void MachinesRepo::store_latest_samples(const std::vector<LatestSampleRow>& rows) {
  exec_rows(tx_, rows, "INSERT INTO telemetry_latest (machine_id, uuid, at, sample) VALUES ", "(?, ?, ?, ?)",
            " ON CONFLICT (machine_id, uuid) DO UPDATE SET at = excluded.at, sample = excluded.sample "
            "WHERE excluded.at >= telemetry_latest.at",
            [](std::vector<store::Value>& p, const LatestSampleRow& r) {
              p.insert(p.end(), {*r.machine_id, *r.uuid, r.at_ms, *r.sample_json});
            });
}

void MachinesRepo::add_minute_sums(const std::vector<MinuteSumsRow>& rows) {
  exec_rows(
      tx_, rows,
      "INSERT INTO telemetry_minute (machine_id, uuid, minute, samples, errors, temp_n, temp_sum, temp_max, "
      "power_n, power_sum, power_max, util_n, util_sum, util_max, mem_used_max, throttled, ecc_uncorrected_max) "
      "VALUES ",
      "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      " ON CONFLICT (machine_id, uuid, minute) DO UPDATE SET "
      "samples = telemetry_minute.samples + excluded.samples, errors = telemetry_minute.errors + excluded.errors, "
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
      [](std::vector<store::Value>& p, const MinuteSumsRow& r) {
        const TelemetrySums& s = *r.sums;
        p.insert(p.end(), {*r.machine_id, *r.uuid, s.at_ms, s.samples, s.errors, s.temp_n, s.temp_sum, s.temp_max,
                           s.power_n, s.power_sum, s.power_max, s.util_n, s.util_sum, s.util_max, s.mem_used_max,
                           s.throttled, s.ecc_uncorrected_max});
      });
}

void MachinesRepo::add_presence(const std::string& machine_id, std::int64_t minute) {
  tx_.exec(
      "INSERT INTO presence_minute (machine_id, minute, beats) VALUES (?, ?, 1) "
      "ON CONFLICT (machine_id, minute) DO UPDATE SET beats = presence_minute.beats + 1",
      {machine_id, minute});
}

bool MachinesRepo::record_heartbeat(const std::string& machine_id, core::MachineStatus status, std::int64_t seq,
                                    std::int64_t now) {
  // Nearly always the status stays: then it is left out of the SET, so that SQLite leaves the index on it
  // (machines_status_provider) and the market trigger alone (3.4 against 5.6 us a statement, measured on a
  // bench store). Only a status that changes, or a seq already taken, runs the second statement.
  const std::string status_name(core::machine_status_name(status));
  if (tx_.exec("UPDATE machines SET last_seen_at = ?, last_seq = ? WHERE id = ? AND last_seq < ? AND status = ?",
               {now, seq, machine_id, seq, status_name}) != 0) {
    return true;
  }
  // A removed machine's agent heard again brings it back.
  return tx_.exec(
             "UPDATE machines SET last_seen_at = ?, status = ?, last_seq = ?, removed_at = NULL WHERE id = ? AND "
             "last_seq < ?",
             {now, status_name, seq, machine_id, seq}) != 0;
}

std::vector<MachineCard> MachinesRepo::cards_of_provider(const std::string& provider_id) {
  std::vector<MachineCard> out;
  for (const Row& m :
       tx_.query(std::string(kCardColumns) + "WHERE provider_id = ? AND removed_at IS NULL ORDER BY created_at, id",
                 {provider_id})) {
    out.push_back(card_of(m));
  }
  return out;
}

bool MachinesRepo::remove(const std::string& machine_id, std::int64_t now) {
  static const std::string kRemove =
      "UPDATE machines SET removed_at = ? WHERE id = ? AND removed_at IS NULL AND status = " +
      sql(core::MachineStatus::offline);
  return tx_.exec(kRemove, {now, machine_id}) == 1;
}

std::optional<MachineCard> MachinesRepo::card(const std::string& machine_id, const std::string& provider_id) {
  auto m = tx_.query_one(std::string(kCardColumns) + "WHERE id = ? AND provider_id = ?", {machine_id, provider_id});
  if (!m) return std::nullopt;
  return card_of(*m);
}

std::vector<GpuCard> MachinesRepo::gpu_cards(const std::string& machine_id) {
  std::vector<GpuCard> out;
  for (const Row& r : tx_.query("SELECT g.uuid, g.idx, g.name, g.model, g.memory_mib, g.present, g.facts, l.sample, "
                                "b.listed, b.perf_score, b.quality_ratio, b.delist_reason, l.at "
                                "FROM machine_gpus g LEFT JOIN telemetry_latest l ON l.machine_id = g.machine_id AND "
                                "l.uuid = g.uuid "
                                "LEFT JOIN gpu_listing b ON b.machine_id = g.machine_id AND b.uuid = g.uuid "
                                "WHERE g.machine_id = ? ORDER BY g.present DESC, g.idx, g.uuid",
                                {machine_id})) {
    GpuCard g;
    g.uuid = r.str(0);
    g.index = r.i64(1);
    g.name = r.str(2);
    g.model = r.opt_str(3);
    g.memory_mib = r.i64(4);
    g.present = r.boolean(5);
    g.facts_json = r.str(6);
    g.latest_sample_json = r.opt_str(7);
    if (!r.is_null(12)) g.latest_at_ms = r.i64(12);
    if (!r.is_null(8)) g.listed = r.boolean(8);
    if (!r.is_null(9)) g.perf_score = r.f64(9);
    if (!r.is_null(10)) g.quality_ratio = r.f64(10);
    if (!r.is_null(11)) g.delist_reason = r.str(11);
    out.push_back(std::move(g));
  }
  return out;
}

std::vector<GpuTelemetryBucket> MachinesRepo::telemetry_buckets(const std::string& machine_id, std::int64_t since,
                                                                std::int64_t step) {
  std::vector<GpuTelemetryBucket> out;
  for (const Row& r : tx_.query("SELECT uuid, minute - minute % " + std::to_string(step) +
                                    ", SUM(samples), SUM(errors), SUM(temp_n), SUM(temp_sum), MAX(temp_max), "
                                    "SUM(power_n), SUM(power_sum), SUM(util_n), SUM(util_sum) FROM telemetry_minute "
                                    "WHERE machine_id = ? AND minute >= ? GROUP BY 1, 2 ORDER BY 1, 2",
                                {machine_id, since})) {
    GpuTelemetryBucket b;
    b.uuid = r.str(0);
    b.sums.at_ms = r.i64(1);
    b.sums.samples = r.i64(2);
    b.sums.errors = r.i64(3);
    b.sums.temp_n = r.i64(4);
    b.sums.temp_sum = r.f64(5);
    if (b.sums.temp_n > 0) b.sums.temp_max = r.f64(6);
    b.sums.power_n = r.i64(7);
    b.sums.power_sum = r.f64(8);
    b.sums.util_n = r.i64(9);
    b.sums.util_sum = r.f64(10);
    out.push_back(std::move(b));
  }
  return out;
}

std::vector<TelemetrySums> MachinesRepo::telemetry_minutes(const std::string& machine_id, const std::string& uuid,
                                                           std::int64_t since) {
  std::vector<TelemetrySums> out;
  for (const Row& r :
       tx_.query("SELECT minute, samples, errors, temp_n, temp_sum, temp_max, power_n, power_sum, power_max, util_n, "
                 "util_sum, util_max, mem_used_max, throttled, ecc_uncorrected_max FROM telemetry_minute "
                 "WHERE machine_id = ? AND uuid = ? AND minute >= ? ORDER BY minute",
                 {machine_id, uuid, since})) {
    TelemetrySums s;
    s.at_ms = r.i64(0);
    s.samples = r.i64(1);
    s.errors = r.i64(2);
    s.temp_n = r.i64(3);
    s.temp_sum = r.f64(4);
    s.temp_max = r.f64(5);
    s.power_n = r.i64(6);
    s.power_sum = r.f64(7);
    s.power_max = r.f64(8);
    s.util_n = r.i64(9);
    s.util_sum = r.f64(10);
    s.util_max = r.f64(11);
    s.mem_used_max = r.i64(12);
    s.throttled = r.i64(13);
    s.ecc_uncorrected_max = r.i64(14);
    out.push_back(s);
  }
  return out;
}

std::int64_t MachinesRepo::presence_minutes(const std::string& machine_id, std::int64_t since) {
  auto r =
      tx_.query_one("SELECT COUNT(*) FROM presence_minute WHERE machine_id = ? AND minute >= ?", {machine_id, since});
  return r ? r->i64(0) : 0;
}

std::vector<std::int64_t> MachinesRepo::presence_between(const std::string& machine_id, std::int64_t from_ms,
                                                        std::int64_t to_ms) {
  std::vector<std::int64_t> out;
  for (const Row& r : tx_.query("SELECT minute FROM presence_minute WHERE machine_id = ? AND minute >= ? AND minute < ? "
                                "ORDER BY minute",
                                {machine_id, from_ms, to_ms})) {
    out.push_back(r.i64(0));
  }
  return out;
}

std::vector<ScoredMachineRow> MachinesRepo::scored_machines() {
  std::vector<ScoredMachineRow> out;
  for (const Row& r :
       tx_.query("SELECT id, provider_id, hostname, created_at FROM machines WHERE removed_at IS NULL ORDER BY id")) {
    out.push_back(ScoredMachineRow{r.str(0), r.str(1), r.str(2), r.i64(3)});
  }
  return out;
}

std::optional<ScoredMachineRow> MachinesRepo::scored_machine(const std::string& machine_id) {
  auto r = tx_.query_one("SELECT id, provider_id, hostname, created_at FROM machines WHERE id = ?", {machine_id});
  if (!r) return std::nullopt;
  return ScoredMachineRow{r->str(0), r->str(1), r->str(2), r->i64(3)};
}

bool MachinesRepo::offline_told_since(const std::string& machine_id, std::int64_t since_ms) {
  // The detail as add_event writes it (nlohmann's dump: no spaces).
  return tx_
      .query_one(
          "SELECT 1 FROM machine_events WHERE machine_id = ? AND at >= ? AND kind = 'offline' AND detail LIKE "
          "'%\"provider_told\":true%' LIMIT 1",
          {machine_id, since_ms})
      .has_value();
}

std::vector<MachineEvent> MachinesRepo::recent_events(const std::string& machine_id, std::int64_t limit) {
  std::vector<MachineEvent> out;
  for (const Row& r : tx_.query("SELECT at, kind, detail FROM machine_events WHERE machine_id = ? "
                                "ORDER BY at DESC, id DESC LIMIT " +
                                    std::to_string(limit),
                                {machine_id})) {
    out.push_back(MachineEvent{r.i64(0), r.str(1), r.str(2)});
  }
  return out;
}

bool MachinesRepo::hardware_changed_since(const std::string& machine_id, std::int64_t after) {
  return tx_
      .query_one("SELECT 1 FROM machine_events WHERE machine_id = ? AND kind IN ('gpus_changed', "
                 "'driver_changed', 'simulated_changed') AND at > ?",
                 {machine_id, after})
      .has_value();
}

std::vector<SilentMachine> MachinesRepo::silent_online_machines(std::int64_t cutoff, std::int64_t limit,
                                                                std::int64_t heard_from) {
  // Reads every online machine (no index holds last_seen_at, which each heartbeat sets: migration
  // 22): 10 ms at 100,000 machines on SQLite, a few times a heartbeat interval, against an index entry
  // rewritten by each of the 6,667 heartbeats a second those machines send.
  static const std::string kSilent =
      "SELECT id, last_seen_at FROM machines WHERE status = " + sql(core::MachineStatus::online) +
      " AND last_seen_at < ? AND last_seen_at >= ? ORDER BY last_seen_at LIMIT ?";
  std::vector<SilentMachine> out;
  for (const Row& r : tx_.query(kSilent, {cutoff, heard_from, limit})) {
    out.push_back(SilentMachine{r.str(0), r.i64(1)});
  }
  return out;
}

bool MachinesRepo::move_from_online(const std::string& machine_id, core::MachineStatus to) {
  static const std::string kMove =
      "UPDATE machines SET status = ? WHERE id = ? AND status = " + sql(core::MachineStatus::online);
  return tx_.exec(kMove, {std::string(core::machine_status_name(to)), machine_id}) == 1;
}

std::int64_t MachinesRepo::prune_before(std::int64_t oldest, std::int64_t limit) {
  // By key, at most `limit` rows per table (row values work on both drivers).
  return tx_.exec(
             "DELETE FROM telemetry_minute WHERE (machine_id, uuid, minute) IN (SELECT machine_id, uuid, minute "
             "FROM telemetry_minute WHERE minute < ? LIMIT ?)",
             {oldest, limit}) +
         tx_.exec(
             "DELETE FROM presence_minute WHERE (machine_id, minute) IN (SELECT machine_id, minute "
             "FROM presence_minute WHERE minute < ? LIMIT ?)",
             {oldest, limit});
}

std::optional<MachineHostFacts> MachinesRepo::host_facts(const std::string& machine_id) {
  auto m = tx_.query_one("SELECT provider_id, host, hostname, simulated FROM machines WHERE id = ?", {machine_id});
  if (!m) return std::nullopt;
  return MachineHostFacts{m->str(0), m->str(1), m->str(2), m->i64(3) != 0};
}

std::vector<PresentGpu> MachinesRepo::present_gpus(const std::string& machine_id) {
  std::vector<PresentGpu> out;
  for (const Row& g : tx_.query("SELECT uuid, model, memory_mib, idx FROM machine_gpus WHERE machine_id = ? AND "
                                "present = 1",
                                {machine_id})) {
    out.push_back(PresentGpu{g.str(0), g.opt_str(1), g.i64(2), g.i64(3)});
  }
  return out;
}

}  // namespace gpunex::server
