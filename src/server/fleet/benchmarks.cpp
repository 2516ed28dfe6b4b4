#include "server/fleet/benchmarks.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "core/benchmark_report.hpp"
#include "core/benchmark_run.hpp"
#include "core/listing.hpp"
#include "server/fleet/benchmarks_repo.hpp"
#include "server/fleet/machines_repo.hpp"
#include "server/mail/templates.hpp"
#include "server/onboarding/gpu_catalog.hpp"
#include "server/onboarding/providers.hpp"
#include "server/platform/notifications.hpp"
#include "util/crypto.hpp"

namespace gpunex::server {

namespace {

using core::BenchmarkReason;
using core::Error;
using core::ErrorCode;
using store::Tx;
namespace cb = core::bench;

nlohmann::json finding_json(const cb::Finding& f) {
  return {{"metric", f.metric}, {"label", f.label},   {"measured", f.measured}, {"expected", f.expected},
          {"unit", f.unit},     {"ratio", f.ratio()}, {"cause", f.cause},       {"recommendation", f.recommendation}};
}

nlohmann::json findings_json(const std::vector<cb::Finding>& findings) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& f : findings) out.push_back(finding_json(f));
  return out;
}

nlohmann::json opt_json(const auto& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

//! Tells the provider's user of a GPU's listing change, by mail and in the dashboard.
void tell_provider(Tx& tx, const std::string& provider_id, const mail::Announcement& a, std::int64_t now) {
  auto who = provider_contact(tx, provider_id);
  if (!who) return;
  announce(tx, who->user_id, a, std::nullopt, now);
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
  s.challenges.require_answers = c.require_challenge_answers;
  s.challenges.spot_check_mean_ms = static_cast<std::int64_t>(c.spot_check_interval_s) * 1000;
  s.challenges.base_url = s.base_url;
  return s;
}

namespace {

//! Why a machine is due a run now (first registration, a hardware change since its last run, a week), or nothing.
std::optional<BenchmarkReason> due_reason(Tx& tx, const std::string& id, const BenchmarkSettings& s,
                                          std::int64_t now) {
  const auto done = BenchmarksRepo(tx).last_completed_at(id);
  const bool changed = done && MachinesRepo(tx).hardware_changed_since(id, *done);
  return core::due_reason(done, changed, s.interval_ms, now);
}

}  // namespace

std::size_t schedule_benchmarks(store::Store& store, const BenchmarkSettings& s, std::int64_t now, std::size_t chunk,
                                std::chrono::milliseconds pause) {
  // A run opened on a rented machine is delivered once its rentals end (benchmark_commands).
  // Which machines are due, and why, is read without the write lock, whatever the fleet's size; runs are
  // opened in small write transactions, so heartbeats (which wait for that lock) never wait long.
  const auto due = store.transact(
      [&](Tx& tx) {
        std::vector<std::pair<std::string, BenchmarkReason>> out;
        for (const auto& id : BenchmarksRepo(tx).schedulable_machines(now - s.run_timeout_ms)) {
          if (auto reason = due_reason(tx, id, s, now)) out.emplace_back(id, *reason);
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
      BenchmarksRepo repo(tx);
      std::size_t n = 0;
      for (std::size_t j = i; j < std::min(due.size(), i + std::max<std::size_t>(chunk, 1)); ++j) {
        const auto& [id, reason] = due[j];
        // Again under the write lock: it may have gone offline, or a re-run been requested, since.
        if (!repo.is_schedulable(id, now - s.run_timeout_ms)) continue;
        repo.open_run(id, reason, now);
        ++n;
      }
      return n;
    });
  }
  return opened;
}

void require_verification(Tx& tx, const std::string& machine_id, BenchmarkReason reason, std::int64_t now) {
  BenchmarksRepo repo(tx);
  repo.unlist_machine(machine_id, std::string(kReverifyReason),
                      "keep the agent running: a new benchmark run was requested and relists the GPUs when it passes",
                      now);
  repo.expire_delivered_before(machine_id, now + 1);
  if (!repo.has_open_run(machine_id)) repo.open_run(machine_id, reason, now);
}

HeartbeatWorkQuestion heartbeat_work_question(const std::string& machine_id, const BenchmarkSettings& s,
                                              std::int64_t now) {
  return HeartbeatWorkQuestion{machine_id, now, now - s.run_timeout_ms, s.challenges.spot_check_mean_ms > 0};
}

nlohmann::json benchmark_commands(Tx& tx, const std::string& machine_id, const BenchmarkSettings& s, std::int64_t now,
                                  std::optional<bool> has_work) {
  BenchmarksRepo repo(tx);
  nlohmann::json cmds = nlohmann::json::array();
  if (!has_work) has_work = repo.has_heartbeat_work(heartbeat_work_question(machine_id, s, now));
  if (!*has_work) return cmds;
  repo.expire_delivered_before(machine_id, now - s.run_timeout_ms);
  expire_challenges(tx, machine_id, s.challenges, now);
  auto r = repo.oldest_requested(machine_id);
  // A run loads every GPU of the machine for minutes: it waits until the customers' rentals there end
  // (their jobs would be disturbed, and the figures with them), but a day at most: a machine always
  // rented (by anyone, its provider's friends too) is verified all the same. Spot checks go on meanwhile.
  if (r && r->requested_at_ms > now - kRunWaitsForRentalsMs && repo.live_rentals(machine_id) > 0) r.reset();
  if (!r) {
    if (auto spot = spot_check_command(tx, machine_id, s.challenges, now)) cmds.push_back(std::move(*spot));
    return cmds;
  }
  repo.mark_delivered(r->id, now);
  cmds.push_back({{"type", "run_benchmark"}, {"run_id", r->id}, {"reason", core::run_reason_name(r->reason)}});
  return cmds;
}

namespace {

//! A report checked against the store: the machine is the provider's, every GPU one of its present GPUs,
//! the figures plausible for each GPU's model. With what the judgement needs of the machine.
struct CheckedRun {
  cb::RunReport rep;
  MachineHostFacts machine;
  std::map<std::string, PresentGpu> known;          // the machine's present GPUs by uuid
  std::vector<std::optional<core::GpuModel>> models;  // per reported GPU: its catalog model, if any
  std::vector<cb::ModelSpec> specs;                   // per reported GPU: its model's reference figures
};

core::Result<CheckedRun> check_report(Tx& tx, const std::string& provider_id, std::string_view body,
                                      const BenchmarkSettings& s) {
  auto parsed = cb::parse_run_report(body);
  if (!parsed) return parsed.error();
  CheckedRun run;
  run.rep = std::move(parsed).value();
  const auto& rep = run.rep;
  MachinesRepo machines(tx);
  auto m = machines.host_facts(rep.machine_id);
  if (!m || m->provider_id != provider_id) {
    return Error::make(ErrorCode::invalid_field, "machine_id is not one of this provider's machines", "machine_id");
  }
  run.machine = std::move(*m);
  // The report's own flag is not believed: a run is simulated when its machine registered as simulated.
  run.rep.simulated = run.machine.simulated;
  for (auto& g : machines.present_gpus(rep.machine_id)) run.known[g.uuid] = std::move(g);
  run.specs.reserve(rep.gpus.size());
  for (std::size_t i = 0; i < rep.gpus.size(); ++i) {
    auto it = run.known.find(rep.gpus[i].uuid);
    if (it == run.known.end()) {
      const std::string f = "gpus[" + std::to_string(i) + "].uuid";
      return Error::make(ErrorCode::invalid_field, f + " is not a GPU of this machine", f);
    }
    run.models.push_back(it->second.model ? find_model(tx, *it->second.model) : std::nullopt);
    run.specs.push_back(run.models.back() ? cb::model_spec(*run.models.back()) : cb::ModelSpec{});
  }
  std::vector<const cb::ModelSpec*> spec_ptrs;
  for (std::size_t i = 0; i < run.specs.size(); ++i) spec_ptrs.push_back(run.models[i] ? &run.specs[i] : nullptr);
  if (auto ok = cb::check_plausible(rep, spec_ptrs, s.policy); !ok) return ok.error();
  return run;
}

//! The run a report completes: the one it names, which the server requested of this machine and which
//! was not reported yet. A report of a run nobody asked for is refused: results the server did not
//! request could have been measured anywhere (issue 21). Returns its id and reason.
core::Result<std::pair<std::string, BenchmarkReason>> run_of_report(BenchmarksRepo& repo, const cb::RunReport& rep) {
  if (!rep.run_id) {
    return Error::make(ErrorCode::invalid_field,
                       "run_id is required: results are accepted only for a run the server requested (a "
                       "run_benchmark command in a heartbeat reply, or POST /v1/provider/machines/{id}/benchmarks/run)",
                       "run_id")
        .with_code("run_not_requested");
  }
  auto r = repo.find_run(*rep.run_id, rep.machine_id);
  if (!r) return Error::make(ErrorCode::invalid_field, "run_id is not a run of this machine", "run_id");
  if (!core::can_move(r->status, core::BenchmarkRunStatus::completed)) {
    return Error::make(ErrorCode::invalid_field, "run_id was already reported", "run_id")
        .with_code("run_already_reported");
  }
  return std::make_pair(*rep.run_id, r->reason);
}

//! The machine checks, when this run measured storage and network (a GPU-only run leaves them as they were).
std::vector<cb::Finding> machine_checks(const CheckedRun& run, const cb::Policy& policy) {
  const auto figs = cb::figures_of(run.rep.machine);
  const bool measured = figs.contains(cb::Metric::storage_seq_read) && figs.contains(cb::Metric::net_down) &&
                        figs.contains(cb::Metric::net_up);
  if (!measured) return {};
  cb::MachineFacts facts;
  facts.gpu_count = static_cast<unsigned>(run.known.size());
  for (const auto& [uuid, g] : run.known) facts.total_vram_gib += static_cast<double>(g.memory_mib) / 1024.0;
  auto host = nlohmann::json::parse(run.machine.host_json, nullptr, false);
  const bool host_known = host.is_object() && host.contains("ram_mib") && host.contains("cpu_cores");
  facts.host_ram_gib = host_known ? host["ram_mib"].get<double>() / 1024.0 : 1e9;
  facts.cpu_cores = host_known ? host["cpu_cores"].get<unsigned>() : 1u << 20;
  facts.net_down_mbps = figs.at(cb::Metric::net_down);
  facts.net_up_mbps = figs.at(cb::Metric::net_up);
  facts.storage_seq_read_mbs = figs.at(cb::Metric::storage_seq_read);
  return cb::evaluate_machine(facts, policy);
}

//! One GPU's verdict in a run: its figures, score, quality ratio and every failed check (its own, then the
//! machine's). A GPU outside the catalog fails with the unknown-model finding and is scored without reference.
struct GpuJudgement {
  cb::Figures figures;
  std::optional<double> score, quality;
  std::vector<cb::Finding> failures;
  bool pass() const { return failures.empty(); }
};

GpuJudgement judge_gpu(const CheckedRun& run, std::size_t i, const std::vector<cb::Finding>& machine_failures,
                       const cb::Policy& policy) {
  const auto& g = run.rep.gpus[i];
  const auto& model = run.models[i];
  GpuJudgement j;
  j.figures = cb::figures_of(g.results);
  auto tel = cb::fold_telemetry(g);
  tel.memory_total_gib = static_cast<double>(run.known.at(g.uuid).memory_mib) / 1024.0;  // registered, not the body
  if (model && model->tdp_w) tel.tdp_w = *model->tdp_w;
  if (model) {
    auto v = cb::evaluate_gpu(run.specs[i], j.figures, tel, policy);
    j.failures = v.failures;
    j.score = v.perf_score;
    j.quality = v.quality_ratio;
  } else {
    j.failures.push_back(core::unknown_model_finding());
    j.score = cb::performance_score(j.figures, policy);
  }
  for (const auto& f : machine_failures) j.failures.push_back(f);
  return j;
}

//! Stores one GPU's result and listing, tells the provider when the listing changed, and returns the GPU's
//! part of the reply.
nlohmann::json record_gpu(Tx& tx, const CheckedRun& run, std::size_t i, const GpuJudgement& j,
                          const std::string& run_id, const std::string& provider_id, const std::string& link,
                          bool verify_first, std::int64_t now) {
  BenchmarksRepo repo(tx);
  const auto& g = run.rep.gpus[i];
  const auto& model = run.models[i];
  const std::string& machine_id = run.rep.machine_id;
  const bool pass = j.pass();
  nlohmann::json figs = nlohmann::json::object();
  for (const auto& [metric, v] : j.figures) figs[std::string(cb::metric_key(metric))] = v;
  nlohmann::json fj = findings_json(j.failures);
  const std::optional<std::string> model_id = model ? std::optional<std::string>(model->id) : std::nullopt;
  repo.add_gpu_result(GpuResultWrite{run_id, machine_id, g.uuid, model_id, j.score, j.quality, pass, figs.dump(),
                                     fj.dump()},
                      now);

  const auto prev = repo.listing(machine_id, g.uuid);
  // A GPU unlisted only until the machine is verified again (its hardware changed) was listed: failing now
  // delists it, which its provider hears of, as for any GPU that was listed.
  const std::optional<bool> was_listed =
      prev ? std::optional<bool>(prev->listed || prev->delist_reason == kReverifyReason) : std::nullopt;
  ListingWrite listing{machine_id, g.uuid, pass, j.score, j.quality, std::nullopt, std::nullopt, run_id};
  if (!pass) {
    listing.delist_reason = j.failures.front().describe();
    listing.recommendation = j.failures.front().recommendation;
  }
  // Nothing unverified reaches the market: a GPU not listed now is listed once its challenges pass (and
  // announced then, server/fleet/challenges.cpp). One listed now stays listed meanwhile; a failed challenge
  // delists it.
  const bool held = pass && verify_first && was_listed != std::optional<bool>(true);
  if (held) {
    listing.listed = false;
    listing.delist_reason = std::string(kAwaitingChallenges);
    listing.recommendation = "nothing to do: the agent answers them within seconds, then the GPU is listed";
  }
  repo.upsert_listing(listing, now);

  const mail::GpuFacts gpu{
      mail::gpu_display_name(run.known.at(g.uuid).index, model ? model->id : g.name, run.machine.hostname), link};
  switch (held ? core::ListingChange::none : core::listing_change(was_listed, pass)) {
    case core::ListingChange::delisted:
      tell_provider(tx, provider_id, mail::gpu_delisted(gpu, j.failures), now);
      break;
    case core::ListingChange::relisted:
      tell_provider(tx, provider_id, mail::gpu_relisted(gpu, j.quality), now);
      break;
    case core::ListingChange::none:
      break;
  }
  nlohmann::json out = {{"uuid", g.uuid},
                        {"model", opt_json(model_id)},
                        {"perf_score", opt_json(j.score)},
                        {"quality_ratio", opt_json(j.quality)},
                        {"listed", listing.listed},
                        {"failures", std::move(fj)}};
  if (held) out["awaiting_challenges"] = true;
  return out;
}

}  // namespace

core::Result<nlohmann::json> record_benchmark_run(Tx& tx, const std::string& provider_id, std::string_view body,
                                                  const BenchmarkSettings& s, std::int64_t now) {
  auto checked = check_report(tx, provider_id, body, s);
  if (!checked) return checked.error();
  const CheckedRun& run = *checked;
  BenchmarksRepo repo(tx);
  auto resolved = run_of_report(repo, run.rep);
  if (!resolved) return resolved.error();
  const auto& [run_id, reason] = *resolved;

  const auto machine_failures = machine_checks(run, s.policy);
  nlohmann::json mf = findings_json(machine_failures);
  repo.complete_run(run_id, run.rep.simulated, cb::to_json(run.rep).dump(), mf.dump(), now);

  const std::string link = s.base_url + "/#/machines/" + run.rep.machine_id + "/benchmarks";
  nlohmann::json out_gpus = nlohmann::json::array();
  std::vector<ChallengedGpu> challenged;
  for (std::size_t i = 0; i < run.rep.gpus.size(); ++i) {
    auto judged = judge_gpu(run, i, machine_failures, s.policy);
    const auto& uuid = run.rep.gpus[i].uuid;
    std::optional<double> reported;
    if (auto f = judged.figures.find(cb::Metric::fp16_tensor); f != judged.figures.end()) reported = f->second;
    // The power drawn meanwhile must explain the FP16 tensor figure; if not, the GPU is not listed.
    const auto& model = run.models[i];
    const auto telemetry = check_run_telemetry(run.rep.gpus[i], reported, model ? &run.specs[i] : nullptr,
                                               model ? model->tdp_w : std::nullopt, s.challenges);
    if (telemetry && !telemetry->consistent) judged.failures.push_back(telemetry_finding(*telemetry, *reported));
    out_gpus.push_back(record_gpu(tx, run, i, judged, run_id, provider_id, link, s.challenges.require_answers, now));
    if (telemetry) record_telemetry_check(tx, run_id, run.rep.machine_id, uuid, *reported, *telemetry, s.challenges, now);
    // The speed the GEMM challenge is timed by: what the run claims, else what the model promises.
    std::optional<double> claimed = reported;
    if (!claimed && model && run.specs[i].fp16_tensor_tflops > 0) claimed = run.specs[i].fp16_tensor_tflops;
    challenged.push_back({uuid, claimed, run.known.at(uuid).memory_mib});
  }
  auto challenges =
      issue_challenges(tx, run_id, run.rep.machine_id, run.machine.simulated, challenged, s.challenges, now);
  return nlohmann::json{{"run_id", run_id},
                        {"reason", core::run_reason_name(reason)},
                        {"gpus", std::move(out_gpus)},
                        {"machine_failures", std::move(mf)},
                        {"challenges", std::move(challenges)}};
}

core::Result<nlohmann::json> machine_benchmarks(Tx& tx, const std::string& provider_id, const std::string& machine_id) {
  const auto owner = MachinesRepo(tx).owner(machine_id);
  if (!owner || *owner != provider_id) return Error::make(ErrorCode::not_found, "no such machine");
  BenchmarksRepo repo(tx);
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : repo.present_gpu_listings(machine_id)) {
    nlohmann::json latest = nullptr;
    if (auto r = repo.latest_result(machine_id, g.uuid)) {
      nlohmann::json figs = nlohmann::json::parse(r->figures_json, nullptr, false);
      nlohmann::json expected = nlohmann::json::object();
      if (g.model) {
        if (auto gm = find_model(tx, *g.model)) {
          const auto spec = cb::model_spec(*gm);
          for (const auto& [k, v] : figs.items()) {
            (void)v;
            if (auto metric = cb::parse_metric(k)) {
              if (auto e = cb::expected_figure(spec, *metric, {})) expected[k] = *e;
            }
          }
        }
      }
      latest = {{"run_id", r->run_id},
                {"at_ms", r->at_ms},
                {"figures", std::move(figs)},
                {"expected", std::move(expected)},
                {"failures", nlohmann::json::parse(r->failures_json, nullptr, false)}};
    }
    nlohmann::json history = nlohmann::json::array();
    for (const auto& h : repo.score_history(machine_id, g.uuid, 52)) {
      history.push_back(
          {{"at_ms", h.at_ms}, {"perf_score", opt_json(h.perf_score)}, {"quality_ratio", opt_json(h.quality_ratio)}});
    }
    gpus.push_back({{"uuid", g.uuid},
                    {"index", g.index},
                    {"name", g.name},
                    {"model", opt_json(g.model)},
                    {"benchmarked", g.listed.has_value()},
                    {"listed", g.listed.value_or(false)},
                    {"perf_score", opt_json(g.perf_score)},
                    {"quality_ratio", opt_json(g.quality_ratio)},
                    {"delist_reason", opt_json(g.delist_reason)},
                    {"recommendation", opt_json(g.recommendation)},
                    {"latest", std::move(latest)},
                    {"history", std::move(history)}});
  }
  // The machine's own figures (storage and network), from the newest run that measured them: a GPU-only
  // run (bench --only compute) leaves the last ones standing, as the machine checks do.
  nlohmann::json machine = nullptr;
  for (const auto& run : repo.recent_completed_runs(machine_id, 10)) {
    auto rep = cb::read_run_report(nlohmann::json::parse(run.report_json, nullptr, false));
    if (!rep) continue;
    const auto figs = cb::figures_of(rep->machine);
    if (figs.empty()) continue;
    nlohmann::json figures = nlohmann::json::object();
    for (const auto& [metric, value] : figs) figures[std::string(cb::metric_key(metric))] = value;
    machine = {{"run_id", run.id},
               {"at_ms", run.completed_ms},
               {"figures", std::move(figures)},
               {"failures", nlohmann::json::parse(run.machine_failures_json, nullptr, false)}};
    break;
  }
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& r : repo.recent_runs(machine_id, 20)) {
    runs.push_back({{"id", r.id},
                    {"reason", core::run_reason_name(r.reason)},
                    {"status", core::run_status_name(r.status)},
                    {"requested_at_ms", r.requested_ms},
                    {"delivered_at_ms", opt_json(r.delivered_ms)},
                    {"completed_at_ms", opt_json(r.completed_ms)},
                    {"simulated", r.simulated},
                    {"challenges", run_challenges(tx, r.id)},
                    {"machine_failures", r.machine_failures_json
                                             ? nlohmann::json::parse(*r.machine_failures_json, nullptr, false)
                                             : nlohmann::json::array()}});
  }
  return nlohmann::json{{"machine_id", machine_id},
                        {"machine", std::move(machine)},
                        {"gpus", std::move(gpus)},
                        {"runs", std::move(runs)}};
}

core::Result<nlohmann::json> request_benchmark_rerun(Tx& tx, const std::string& provider_id,
                                                     const std::string& machine_id, const BenchmarkSettings& s,
                                                     std::int64_t now) {
  const auto owner = MachinesRepo(tx).owner(machine_id);
  if (!owner || *owner != provider_id) return Error::make(ErrorCode::not_found, "no such machine");
  BenchmarksRepo repo(tx);
  if (repo.has_open_run(machine_id)) {
    return Error::make(ErrorCode::conflict, "a benchmark run is already pending on this machine")
        .with_code("benchmark_pending");
  }
  const auto last = repo.last_rerun_request_at(machine_id);
  if (last && *last > now - s.rerun_min_interval_ms) {
    return Error::make(ErrorCode::rate_limited, "benchmarks can be re-run once every " +
                                                    std::to_string(s.rerun_min_interval_ms / 60000) + " minutes")
        .with_code("rerun_too_soon")
        .with_retry_after_ms(*last + s.rerun_min_interval_ms - now);
  }
  const std::string id = repo.open_run(machine_id, BenchmarkReason::provider_request, now);
  nlohmann::json out{{"run_id", id},
                     {"status", core::run_status_name(core::BenchmarkRunStatus::requested)},
                     {"waits_for_rentals", nullptr}};
  if (const auto live = repo.live_rentals(machine_id); live > 0) {
    out["waits_for_rentals"] = "it runs once the machine's " + std::to_string(live) + " rental" +
                               (live == 1 ? "" : "s") +
                               " end (a day at most): a benchmark would disturb the customers' jobs";
  }
  return out;
}

std::vector<core::reliability::BenchRun> benchmark_runs_for_score(Tx& tx, const std::string& machine_id,
                                                                  std::int64_t since_ms) {
  BenchmarksRepo repo(tx);
  std::map<std::string, double> baseline;
  for (const auto& f : repo.first_gpu_scores(machine_id)) baseline.emplace(f.uuid, f.perf_score);
  std::map<std::string, std::map<std::string, double>> scores;  // run -> uuid -> score
  for (const auto& g : repo.gpu_scores_since(machine_id, since_ms)) scores[g.run_id][g.uuid] = g.perf_score;
  std::vector<core::reliability::BenchRun> out;
  for (const auto& run : repo.completed_runs_since(machine_id, since_ms)) {
    const auto scored = scores.find(run.id);
    if (scored == scores.end()) continue;  // no GPU scored (every one missing a score metric)
    core::reliability::BenchRun r;
    r.run_id = run.id;
    r.at_ms = run.completed_ms;
    const auto report = nlohmann::json::parse(run.report_json, nullptr, false);
    const auto* gpus = report.is_object() && report.contains("gpus") && report["gpus"].is_array() ? &report["gpus"]
                                                                                                   : nullptr;
    for (const auto& [uuid, score] : scored->second) {
      core::reliability::GpuRun g;
      g.uuid = uuid;
      g.score = score;
      const auto b = baseline.find(uuid);
      g.baseline = b == baseline.end() ? score : b->second;
      std::vector<std::uint64_t> bits;
      for (std::size_t i = 0; gpus && i < gpus->size(); ++i) {
        const auto& gj = (*gpus)[i];
        if (!gj.is_object() || gj.value("uuid", "") != uuid) continue;
        g.index = gj.value("index", std::int64_t{0});
        if (!gj.contains("telemetry") || !gj["telemetry"].is_array()) break;
        for (const auto& p : gj["telemetry"]) {
          if (p.is_object()) bits.push_back(p.value("clock_event_bits", std::uint64_t{0}));
        }
        break;
      }
      core::reliability::set_throttle_shares(g, bits);
      r.gpus.push_back(std::move(g));
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::optional<GpuListing> gpu_listing(Tx& tx, const std::string& machine_id, const std::string& uuid) {
  auto l = BenchmarksRepo(tx).listing(machine_id, uuid);
  if (!l) return std::nullopt;
  return GpuListing{l->listed, l->perf_score};
}

}  // namespace gpunex::server
