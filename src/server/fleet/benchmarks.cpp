#include "server/fleet/benchmarks.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "core/benchmark_report.hpp"
#include "server/fleet/gpu_catalog.hpp"
#include "server/platform/notifications.hpp"
#include "util/crypto.hpp"

namespace gpunex::server {

namespace {

using core::Error;
using core::ErrorCode;
using store::Row;
using store::Tx;
namespace cb = core::bench;

std::optional<std::int64_t> last_completed(Tx& tx, const std::string& machine_id) {
  auto r = tx.query_one("SELECT MAX(completed_at) FROM benchmark_runs WHERE machine_id = ? AND status = 'completed'",
                        {machine_id});
  if (!r || r->is_null(0)) return std::nullopt;
  return r->i64(0);
}

bool has_open_run(Tx& tx, const std::string& machine_id) {
  return tx
      .query_one("SELECT 1 FROM benchmark_runs WHERE machine_id = ? AND status IN ('requested', 'delivered')",
                 {machine_id})
      .has_value();
}

std::string open_run(Tx& tx, const std::string& machine_id, const std::string& reason, std::int64_t now) {
  const std::string id = util::new_id("bench");
  tx.exec(
      "INSERT INTO benchmark_runs (id, machine_id, reason, status, requested_at, simulated) "
      "VALUES (?, ?, ?, 'requested', ?, 0)",
      {id, machine_id, reason, now});
  return id;
}

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, v >= 100 ? "%.0f" : "%.2f", v);
  return buf;
}

nlohmann::json finding_json(const cb::Finding& f) {
  return {{"metric", f.metric}, {"label", f.label},   {"measured", f.measured}, {"expected", f.expected},
          {"unit", f.unit},     {"ratio", f.ratio()}, {"cause", f.cause},       {"recommendation", f.recommendation}};
}

struct MachineGpu {
  std::string uuid;
  std::optional<std::string> model;
  std::int64_t memory_mib = 0;
  std::int64_t idx = 0;
};

//! The provider's user, for notifications: {user_id, email}.
std::optional<std::pair<std::string, std::string>> provider_user(Tx& tx, const std::string& provider_id) {
  auto r = tx.query_one("SELECT u.id, u.email FROM providers p JOIN users u ON u.id = p.user_id WHERE p.id = ?",
                        {provider_id});
  if (!r) return std::nullopt;
  return std::make_pair(r->str(0), r->str(1));
}

void tell_provider(Tx& tx, const std::string& provider_id, const std::string& kind, const std::string& title,
                   const std::string& body, const std::string& link, std::int64_t now) {
  auto who = provider_user(tx, provider_id);
  if (!who) return;
  notify_user(tx, who->first, kind, title, body, link, now);
  enqueue_mail(tx, OutgoingMail{kind, who->second, "GPUnex: " + title, body + "\n\n" + link + "\n", std::nullopt}, now);
}

}  // namespace

BenchmarkSettings benchmark_settings(const Config& c) {
  BenchmarkSettings s;
  s.base_url = c.base_url();
  s.interval_ms = static_cast<std::int64_t>(c.benchmark_interval_hours) * 3600 * 1000;
  s.rerun_min_interval_ms = static_cast<std::int64_t>(c.benchmark_rerun_min_minutes) * 60 * 1000;
  s.policy = c.benchmark_policy;
  s.policy.min_quality_ratio = c.benchmark_min_quality_pct / 100.0;
  s.policy.host_ram_per_vram = c.benchmark_host_ram_pct / 100.0;
  return s;
}

namespace {

// Online machines with no open run and no request within the run timeout (a run that expired without a
// result is retried only after the timeout, not on every round).
constexpr const char* kSchedulable =
    "m.status = 'online' AND NOT EXISTS (SELECT 1 FROM benchmark_runs r WHERE r.machine_id = m.id AND "
    "(r.status IN ('requested', 'delivered') OR r.requested_at > ?))";

//! Why a machine is due a run now (first registration, a hardware change since its last run, a week), or nothing.
std::optional<std::string> due_reason(Tx& tx, const std::string& id, const BenchmarkSettings& s, std::int64_t now) {
  const auto done = last_completed(tx, id);
  if (!done) return "first_registration";
  if (tx.query_one("SELECT 1 FROM machine_events WHERE machine_id = ? AND kind IN ('gpus_changed', "
                   "'driver_changed') AND at > ?",
                   {id, *done})) {
    return "hardware_change";
  }
  if (*done <= now - s.interval_ms) return "weekly";
  return std::nullopt;
}

}  // namespace

std::size_t schedule_benchmarks(store::Store& store, const BenchmarkSettings& s, std::int64_t now, std::size_t chunk,
                                std::chrono::milliseconds pause) {
  // Rentals are not in the store yet; when they are, machines whose GPUs are rented are skipped here.
  // Which machines are due, and why, is read without the write lock, whatever the fleet's size; runs are
  // opened in small write transactions, so heartbeats (which wait for that lock) never wait long.
  const auto due = store.transact(
      [&](Tx& tx) {
        std::vector<std::pair<std::string, std::string>> out;
        for (const auto& m :
             tx.query(std::string("SELECT m.id FROM machines m WHERE ") + kSchedulable + " ORDER BY m.id",
                      {now - s.run_timeout_ms})) {
          if (auto reason = due_reason(tx, m.str(0), s, now)) out.emplace_back(m.str(0), std::move(*reason));
        }
        return out;
      },
      store::TxMode::read);
  std::size_t opened = 0;
  for (std::size_t i = 0; i < due.size(); i += std::max<std::size_t>(chunk, 1)) {
    // Paced, so that a fleet registering at once (20,000 runs) is spread over seconds instead of taking
    // the CPU and the write lock from the heartbeats for one.
    if (i > 0) std::this_thread::sleep_for(pause);
    opened += store.transact([&](Tx& tx) {
      std::size_t n = 0;
      for (std::size_t j = i; j < std::min(due.size(), i + std::max<std::size_t>(chunk, 1)); ++j) {
        const auto& [id, reason] = due[j];
        // Again under the write lock: it may have gone offline, or a re-run been requested, since.
        if (!tx.query_one(std::string("SELECT 1 FROM machines m WHERE m.id = ? AND ") + kSchedulable,
                          {id, now - s.run_timeout_ms})) {
          continue;
        }
        open_run(tx, id, reason, now);
        ++n;
      }
      return n;
    });
  }
  return opened;
}

nlohmann::json benchmark_commands(Tx& tx, const std::string& machine_id, const BenchmarkSettings& s, std::int64_t now) {
  tx.exec(
      "UPDATE benchmark_runs SET status = 'expired' WHERE machine_id = ? AND status = 'delivered' AND "
      "delivered_at < ?",
      {machine_id, now - s.run_timeout_ms});
  nlohmann::json cmds = nlohmann::json::array();
  auto r = tx.query_one(
      "SELECT id, reason FROM benchmark_runs WHERE machine_id = ? AND status = 'requested' "
      "ORDER BY requested_at LIMIT 1",
      {machine_id});
  if (!r) return cmds;
  tx.exec("UPDATE benchmark_runs SET status = 'delivered', delivered_at = ? WHERE id = ?", {now, r->str(0)});
  cmds.push_back({{"type", "run_benchmark"}, {"run_id", r->str(0)}, {"reason", r->str(1)}});
  return cmds;
}

core::Result<nlohmann::json> record_benchmark_run(Tx& tx, const std::string& provider_id, std::string_view body,
                                                  const BenchmarkSettings& s, std::int64_t now) {
  auto parsed = cb::parse_run_report(body);
  if (!parsed) return parsed.error();
  const auto& rep = *parsed;

  auto m = tx.query_one("SELECT provider_id, host, hostname FROM machines WHERE id = ?", {rep.machine_id});
  if (!m || m->str(0) != provider_id) {
    return Error::make(ErrorCode::invalid_field, "machine_id is not one of this provider's machines", "machine_id");
  }
  const std::string hostname = m->str(2);
  std::map<std::string, MachineGpu> known;
  for (const auto& g : tx.query("SELECT uuid, model, memory_mib, idx FROM machine_gpus WHERE machine_id = ? AND "
                                "present = 1",
                                {rep.machine_id})) {
    known[g.str(0)] = MachineGpu{g.str(0), g.opt_str(1), g.i64(2), g.i64(3)};
  }
  std::vector<std::optional<core::GpuModel>> models;
  std::vector<cb::ModelSpec> specs;
  specs.reserve(rep.gpus.size());
  std::vector<const cb::ModelSpec*> spec_ptrs;
  for (std::size_t i = 0; i < rep.gpus.size(); ++i) {
    auto it = known.find(rep.gpus[i].uuid);
    if (it == known.end()) {
      const std::string f = "gpus[" + std::to_string(i) + "].uuid";
      return Error::make(ErrorCode::invalid_field, f + " is not a GPU of this machine", f);
    }
    models.push_back(it->second.model ? find_model(tx, *it->second.model) : std::nullopt);
    specs.push_back(models.back() ? cb::model_spec(*models.back()) : cb::ModelSpec{});
  }
  for (std::size_t i = 0; i < specs.size(); ++i) spec_ptrs.push_back(models[i] ? &specs[i] : nullptr);
  if (auto ok = cb::check_plausible(rep, spec_ptrs, s.policy); !ok) return ok.error();

  std::string run_id;
  std::string reason = "agent";
  if (rep.run_id) {
    auto r = tx.query_one("SELECT status, reason FROM benchmark_runs WHERE id = ? AND machine_id = ?",
                          {*rep.run_id, rep.machine_id});
    if (!r) return Error::make(ErrorCode::invalid_field, "run_id is not a run of this machine", "run_id");
    if (r->str(0) == "completed") {
      return Error::make(ErrorCode::invalid_field, "run_id was already reported", "run_id");
    }
    run_id = *rep.run_id;
    reason = r->str(1);
  } else {
    run_id = util::new_id("bench");
    tx.exec(
        "INSERT INTO benchmark_runs (id, machine_id, reason, status, requested_at, simulated) "
        "VALUES (?, ?, 'agent', 'delivered', ?, 0)",
        {run_id, rep.machine_id, rep.started_at_ms});
  }

  // Machine checks, when this run measured storage and network (a GPU-only run leaves them as they were).
  const auto machine_figs = cb::figures_of(rep.machine);
  std::vector<cb::Finding> machine_failures;
  const bool machine_measured = machine_figs.contains(cb::Metric::storage_seq_read) &&
                                machine_figs.contains(cb::Metric::net_down) &&
                                machine_figs.contains(cb::Metric::net_up);
  if (machine_measured) {
    cb::MachineFacts facts;
    facts.gpu_count = static_cast<unsigned>(known.size());
    for (const auto& [uuid, g] : known) facts.total_vram_gib += static_cast<double>(g.memory_mib) / 1024.0;
    auto host = nlohmann::json::parse(m->str(1), nullptr, false);
    const bool host_known = host.is_object() && host.contains("ram_mib") && host.contains("cpu_cores");
    facts.host_ram_gib = host_known ? host["ram_mib"].get<double>() / 1024.0 : 1e9;
    facts.cpu_cores = host_known ? host["cpu_cores"].get<unsigned>() : 1u << 20;
    facts.net_down_mbps = machine_figs.at(cb::Metric::net_down);
    facts.net_up_mbps = machine_figs.at(cb::Metric::net_up);
    facts.storage_seq_read_mbs = machine_figs.at(cb::Metric::storage_seq_read);
    machine_failures = cb::evaluate_machine(facts, s.policy);
  }

  nlohmann::json mf = nlohmann::json::array();
  for (const auto& f : machine_failures) mf.push_back(finding_json(f));
  tx.exec(
      "UPDATE benchmark_runs SET status = 'completed', completed_at = ?, simulated = ?, report = ?, "
      "machine_failures = ? WHERE id = ?",
      {now, std::int64_t{rep.simulated}, cb::to_json(rep).dump(), mf.dump(), run_id});

  const std::string link = s.base_url + "/#/machines/" + rep.machine_id + "/benchmarks";
  nlohmann::json out_gpus = nlohmann::json::array();
  for (std::size_t i = 0; i < rep.gpus.size(); ++i) {
    const auto& g = rep.gpus[i];
    const auto& mg = known.at(g.uuid);
    const auto figures = cb::figures_of(g.results);
    auto tel = cb::fold_telemetry(g);
    tel.memory_total_gib = static_cast<double>(mg.memory_mib) / 1024.0;  // what the agent registered, not the body
    if (models[i] && models[i]->tdp_w) tel.tdp_w = *models[i]->tdp_w;
    std::vector<cb::Finding> failures;
    std::optional<double> score, quality;
    if (models[i]) {
      auto v = cb::evaluate_gpu(specs[i], figures, tel, s.policy);
      failures = v.failures;
      score = v.perf_score;
      quality = v.quality_ratio;
    } else {
      failures.push_back(cb::Finding{"model", "GPU model", 0, 0, "", "unknown_model",
                                     "This GPU is not a catalog model, so it has no reference figures: ask "
                                     "support to add the model to the catalog."});
      score = cb::performance_score(figures, s.policy);
    }
    for (const auto& f : machine_failures) failures.push_back(f);
    const bool pass = failures.empty();

    nlohmann::json figs = nlohmann::json::object();
    for (const auto& [metric, v] : figures) figs[std::string(cb::metric_key(metric))] = v;
    nlohmann::json fj = nlohmann::json::array();
    for (const auto& f : failures) fj.push_back(finding_json(f));
    auto num = [](const std::optional<double>& v) -> store::Value {
      if (v) return *v;
      return nullptr;
    };
    tx.exec(
        "INSERT INTO gpu_benchmarks (run_id, machine_id, uuid, model, perf_score, quality_ratio, pass, figures, "
        "failures, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        {run_id, rep.machine_id, g.uuid, models[i] ? store::Value(models[i]->id) : store::Value(nullptr), num(score),
         num(quality), std::int64_t{pass}, figs.dump(), fj.dump(), now});

    auto prev =
        tx.query_one("SELECT listed FROM gpu_listing WHERE machine_id = ? AND uuid = ?", {rep.machine_id, g.uuid});
    const std::optional<bool> was_listed = prev ? std::optional<bool>(prev->boolean(0)) : std::nullopt;
    const std::string reason_text = pass ? "" : failures.front().describe();
    const std::string recommendation = pass ? "" : failures.front().recommendation;
    tx.exec(
        "INSERT INTO gpu_listing (machine_id, uuid, listed, perf_score, quality_ratio, delist_reason, "
        "recommendation, last_run_id, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (machine_id, uuid) DO UPDATE SET listed = excluded.listed, perf_score = excluded.perf_score, "
        "quality_ratio = excluded.quality_ratio, delist_reason = excluded.delist_reason, "
        "recommendation = excluded.recommendation, last_run_id = excluded.last_run_id, "
        "updated_at = excluded.updated_at",
        {rep.machine_id, g.uuid, std::int64_t{pass}, num(score), num(quality),
         pass ? store::Value(nullptr) : store::Value(reason_text),
         pass ? store::Value(nullptr) : store::Value(recommendation), run_id, now});

    const std::string gpu_name =
        "GPU " + std::to_string(mg.idx) + " (" + (models[i] ? models[i]->id : g.name) + ") on " + hostname;
    if (!pass && was_listed.value_or(true)) {
      std::string body = gpu_name + " is delisted: customers cannot rent it until a benchmark run passes.\n";
      for (const auto& f : failures) {
        body += "\n- " + f.label + ": measured " + fmt(f.measured) + " " + f.unit + ", expected " + fmt(f.expected) +
                (f.expected > 0 ? " (ratio " + fmt(f.ratio()) + ")" : "") + ".\n  What to do: " + f.recommendation;
      }
      body += "\n\nAfter fixing it, re-run the benchmarks from the Benchmarks tab.";
      tell_provider(tx, provider_id, "gpu_delisted", gpu_name + " delisted: " + failures.front().label, body, link,
                    now);
    } else if (pass && was_listed && !*was_listed) {
      tell_provider(tx, provider_id, "gpu_relisted", gpu_name + " relisted",
                    gpu_name + " passed its benchmarks" +
                        (quality ? " (quality ratio " + fmt(*quality) + ")" : std::string()) + " and is listed again.",
                    link, now);
    }
    out_gpus.push_back({{"uuid", g.uuid},
                        {"model", models[i] ? nlohmann::json(models[i]->id) : nlohmann::json(nullptr)},
                        {"perf_score", score ? nlohmann::json(*score) : nlohmann::json(nullptr)},
                        {"quality_ratio", quality ? nlohmann::json(*quality) : nlohmann::json(nullptr)},
                        {"listed", pass},
                        {"failures", std::move(fj)}});
  }
  return nlohmann::json{
      {"run_id", run_id}, {"reason", reason}, {"gpus", std::move(out_gpus)}, {"machine_failures", std::move(mf)}};
}

core::Result<nlohmann::json> machine_benchmarks(Tx& tx, const std::string& provider_id, const std::string& machine_id) {
  auto m = tx.query_one("SELECT provider_id FROM machines WHERE id = ?", {machine_id});
  if (!m || m->str(0) != provider_id) return Error::make(ErrorCode::not_found, "no such machine");
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : tx.query("SELECT g.uuid, g.idx, g.name, g.model, l.listed, l.perf_score, l.quality_ratio, "
                                "l.delist_reason, l.recommendation FROM machine_gpus g LEFT JOIN gpu_listing l ON "
                                "l.machine_id = g.machine_id AND l.uuid = g.uuid WHERE g.machine_id = ? AND "
                                "g.present = 1 ORDER BY g.idx",
                                {machine_id})) {
    const std::string uuid = g.str(0);
    nlohmann::json latest = nullptr;
    if (auto r = tx.query_one("SELECT run_id, figures, failures, at FROM gpu_benchmarks WHERE machine_id = ? AND "
                              "uuid = ? ORDER BY at DESC LIMIT 1",
                              {machine_id, uuid})) {
      nlohmann::json figs = nlohmann::json::parse(r->str(1), nullptr, false);
      nlohmann::json expected = nlohmann::json::object();
      if (auto model = g.opt_str(3)) {
        if (auto gm = find_model(tx, *model)) {
          const auto spec = cb::model_spec(*gm);
          for (const auto& [k, v] : figs.items()) {
            (void)v;
            if (auto metric = cb::parse_metric(k)) {
              if (auto e = cb::expected_figure(spec, *metric, {})) expected[k] = *e;
            }
          }
        }
      }
      latest = {{"run_id", r->str(0)},
                {"at_ms", r->i64(3)},
                {"figures", std::move(figs)},
                {"expected", std::move(expected)},
                {"failures", nlohmann::json::parse(r->str(2), nullptr, false)}};
    }
    nlohmann::json history = nlohmann::json::array();
    for (const auto& h : tx.query("SELECT at, perf_score, quality_ratio FROM gpu_benchmarks WHERE machine_id = ? AND "
                                  "uuid = ? ORDER BY at DESC LIMIT 52",
                                  {machine_id, uuid})) {
      history.push_back({{"at_ms", h.i64(0)},
                         {"perf_score", h.is_null(1) ? nlohmann::json(nullptr) : nlohmann::json(h.f64(1))},
                         {"quality_ratio", h.is_null(2) ? nlohmann::json(nullptr) : nlohmann::json(h.f64(2))}});
    }
    gpus.push_back({{"uuid", uuid},
                    {"index", g.i64(1)},
                    {"name", g.str(2)},
                    {"model", g.is_null(3) ? nlohmann::json(nullptr) : nlohmann::json(g.str(3))},
                    {"benchmarked", !g.is_null(4)},
                    {"listed", !g.is_null(4) && g.boolean(4)},
                    {"perf_score", g.is_null(5) ? nlohmann::json(nullptr) : nlohmann::json(g.f64(5))},
                    {"quality_ratio", g.is_null(6) ? nlohmann::json(nullptr) : nlohmann::json(g.f64(6))},
                    {"delist_reason", g.is_null(7) ? nlohmann::json(nullptr) : nlohmann::json(g.str(7))},
                    {"recommendation", g.is_null(8) ? nlohmann::json(nullptr) : nlohmann::json(g.str(8))},
                    {"latest", std::move(latest)},
                    {"history", std::move(history)}});
  }
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& r : tx.query("SELECT id, reason, status, requested_at, delivered_at, completed_at, simulated, "
                                "machine_failures FROM benchmark_runs WHERE machine_id = ? ORDER BY requested_at "
                                "DESC LIMIT 20",
                                {machine_id})) {
    auto opt = [&](std::size_t i) { return r.is_null(i) ? nlohmann::json(nullptr) : nlohmann::json(r.i64(i)); };
    runs.push_back({{"id", r.str(0)},
                    {"reason", r.str(1)},
                    {"status", r.str(2)},
                    {"requested_at_ms", r.i64(3)},
                    {"delivered_at_ms", opt(4)},
                    {"completed_at_ms", opt(5)},
                    {"simulated", r.boolean(6)},
                    {"machine_failures",
                     r.is_null(7) ? nlohmann::json::array() : nlohmann::json::parse(r.str(7), nullptr, false)}});
  }
  return nlohmann::json{{"machine_id", machine_id}, {"gpus", std::move(gpus)}, {"runs", std::move(runs)}};
}

core::Result<nlohmann::json> request_benchmark_rerun(Tx& tx, const std::string& provider_id,
                                                     const std::string& machine_id, const BenchmarkSettings& s,
                                                     std::int64_t now) {
  auto m = tx.query_one("SELECT provider_id FROM machines WHERE id = ?", {machine_id});
  if (!m || m->str(0) != provider_id) return Error::make(ErrorCode::not_found, "no such machine");
  if (has_open_run(tx, machine_id)) {
    return Error::make(ErrorCode::conflict, "a benchmark run is already pending on this machine")
        .with_code("benchmark_pending");
  }
  auto last = tx.query_one(
      "SELECT MAX(requested_at) FROM benchmark_runs WHERE machine_id = ? AND reason = "
      "'provider_request'",
      {machine_id});
  if (last && !last->is_null(0) && last->i64(0) > now - s.rerun_min_interval_ms) {
    return Error::make(ErrorCode::rate_limited, "benchmarks can be re-run once every " +
                                                    std::to_string(s.rerun_min_interval_ms / 60000) + " minutes")
        .with_code("rerun_too_soon");
  }
  const std::string id = open_run(tx, machine_id, "provider_request", now);
  return nlohmann::json{{"run_id", id}, {"status", "requested"}};
}

std::optional<GpuListing> gpu_listing(Tx& tx, const std::string& machine_id, const std::string& uuid) {
  auto r =
      tx.query_one("SELECT listed, perf_score FROM gpu_listing WHERE machine_id = ? AND uuid = ?", {machine_id, uuid});
  if (!r) return std::nullopt;
  return GpuListing{r->boolean(0), r->opt_f64(1)};
}

}  // namespace gpunex::server
