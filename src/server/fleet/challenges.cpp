#include "server/fleet/challenges.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/benchmark.hpp"
#include "core/challenge.hpp"
#include "protocol/challenge.hpp"
#include "protocol/heartbeat.hpp"
#include "server/fleet/benchmarks_repo.hpp"
#include "server/fleet/machines_repo.hpp"
#include "server/mail/templates.hpp"
#include "server/onboarding/providers.hpp"
#include "server/platform/notifications.hpp"
#include "util/crypto.hpp"

namespace gpunex::server {

namespace {

using core::Error;
using core::ErrorCode;
using store::Tx;
namespace cc = core::challenge;

constexpr std::string_view kIssued = "issued";  // sent; the answer (or the VRAM fill) is awaited
constexpr std::string_view kFilled = "filled";  // VRAM filled, slices sent, their digests awaited
constexpr std::string_view kCommitted = "committed";  // GEMM root in, rows picked, their opening awaited
//! The statuses of a challenge still open, for SQL.
constexpr std::string_view kUnanswered = "unanswered";
constexpr std::string_view kTelemetry = "telemetry";   // the kind of a run's telemetry check
constexpr std::string_view kRun = "run";               // origin: issued with a requested run's results
constexpr std::string_view kSpot = "spot";             // origin: a spot check of a listed, idle GPU

//! A stored challenge, as the checks read it.
struct ChallengeRow {
  std::string id, run_id, machine_id, gpu_uuid, kind, status, origin;
  cc::Seeds seeds;
  std::int64_t size = 0, slice_words = 0, allowed_ms = 0, issued_at = 0, deadline_at = 0;
  std::optional<double> claimed_tflops;
  std::vector<std::uint64_t> slices;  // vram: the slices picked; gemm: the rows picked
  std::int64_t products = 1, open_rows = 0;
  std::optional<std::string> root;
  std::optional<std::string> result;
};

const char* kColumns =
    "id, run_id, machine_id, gpu_uuid, kind, status, seed_a, seed_b, seed_verifier, seed_slices, size, "
    "slice_words, allowed_ms, issued_at, deadline_at, claimed_tflops, slices, origin, products, open_rows, root, "
    "result";

std::uint64_t seed_of(const std::string& text) {
  return protocol::parse_seed(text).value_or(0);
}

ChallengeRow row_of(const store::Row& r) {
  ChallengeRow c;
  c.id = r.str(0);
  c.run_id = r.str(1);
  c.machine_id = r.str(2);
  c.gpu_uuid = r.str(3);
  c.kind = r.str(4);
  c.status = r.str(5);
  c.seeds = {seed_of(r.str(6)), seed_of(r.str(7)), seed_of(r.str(8)), seed_of(r.str(9))};
  c.size = r.i64(10);
  c.slice_words = r.i64(11);
  c.allowed_ms = r.i64(12);
  c.issued_at = r.i64(13);
  c.deadline_at = r.i64(14);
  c.claimed_tflops = r.opt_f64(15);
  if (!r.is_null(16)) {
    const auto j = nlohmann::json::parse(r.str(16), nullptr, false);
    if (j.is_array()) {
      for (const auto& s : j) c.slices.push_back(s.get<std::uint64_t>());
    }
  }
  c.origin = r.str(17);
  c.products = r.i64(18);
  c.open_rows = r.i64(19);
  if (!r.is_null(20)) c.root = r.str(20);
  if (!r.is_null(21)) c.result = r.str(21);
  return c;
}

std::optional<ChallengeRow> find_challenge(Tx& tx, const std::string& id) {
  auto r = tx.query_one(std::string("SELECT ") + kColumns + " FROM benchmark_challenges WHERE id = ?", {id});
  if (!r) return std::nullopt;
  return row_of(*r);
}

std::string round_text(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

//! What the provider reads when a challenge fails: what happened, and what to do.
core::bench::Finding failure_finding(const ChallengeRow& c, cc::Outcome outcome, double elapsed_s, bool unanswered) {
  core::bench::Finding f;
  const bool gemm = c.kind == protocol::kGemmChallenge;
  const bool spot = c.origin == kSpot;
  f.metric = gemm ? "challenge.gemm" : "challenge.vram";
  f.label = std::string(gemm ? "GEMM" : "VRAM") + (spot ? " spot check" : " challenge");
  f.unit = "s";
  f.expected = static_cast<double>(c.allowed_ms) / 1000.0;
  f.measured = elapsed_s;
  if (unanswered) {
    f.cause = "challenge_unanswered";
    f.recommendation = "the agent did not answer the " + f.label + " within " + round_text(f.expected, 1) +
                       " s: keep the official gpunex-agent running, unmodified, with the GPU free, and re-run the "
                       "benchmarks";
  } else if (outcome == cc::Outcome::late) {
    f.cause = "challenge_late";
    f.recommendation = gemm ? "the GEMM answer took " + round_text(elapsed_s, 2) + " s where the reported " +
                                  round_text(c.claimed_tflops.value_or(0), 1) + " TFLOP/s allow " +
                                  round_text(f.expected, 2) +
                                  " s: the GPU is slower than its benchmark figures, or was busy or throttled; "
                                  "free the GPU and re-run the benchmarks"
                            : "the VRAM digests came " + round_text(elapsed_s, 2) +
                                  " s after the slices were "
                                  "picked, more than the " +
                                  round_text(f.expected, 1) +
                                  " s allowed: keep the GPU's memory free during benchmarks and re-run them";
  } else {
    f.cause = "challenge_wrong";
    f.recommendation = gemm ? "the GEMM answer was not the product of the challenge's matrices: the GPU computes "
                              "wrong results (check it with nvidia-smi and dcgmi diag) or the agent is not the "
                              "official one; reinstall the agent and re-run the benchmarks"
                            : "the VRAM digests did not match the pattern: the GPU has less usable memory than "
                              "registered, or its memory is faulty (dcgmi diag -r 3); re-register with the real "
                              "memory size or replace the GPU";
  }
  return f;
}

//! Tells the GPU's provider, by mail and in the dashboard, what `make` says of the GPU (named as mails
//! name it, with its Benchmarks tab's link). Returns the provider, or nothing for a machine gone.
template <class Make>
std::optional<std::string> tell_provider(Tx& tx, const ChallengeRow& c, const ChallengeSettings& s, std::int64_t now,
                                         Make make) {
  MachinesRepo machines(tx);
  const auto facts = machines.host_facts(c.machine_id);
  if (!facts) return std::nullopt;
  std::string name = c.gpu_uuid;
  std::int64_t index = 0;
  for (const auto& g : machines.present_gpus(c.machine_id)) {
    if (g.uuid == c.gpu_uuid) {
      index = g.index;
      name = g.model.value_or(g.uuid);
    }
  }
  if (auto who = provider_contact(tx, facts->provider_id)) {
    const mail::GpuFacts gpu{mail::gpu_display_name(index, name, facts->hostname),
                             s.base_url + "/#/machines/" + c.machine_id + "/benchmarks"};
    announce(tx, who->user_id, make(gpu), std::nullopt, now);
  }
  return facts->provider_id;
}

//! One more failed challenge for the provider; `review_after` of them flag the provider for review.
void count_failure(Tx& tx, const std::string& provider_id, const std::string& latest, std::int64_t now,
                   const ChallengeSettings& s) {
  tx.exec("UPDATE providers SET challenge_failures = challenge_failures + 1 WHERE id = ?", {provider_id});
  tx.exec(
      "UPDATE providers SET review_flagged_at = ?, review_reason = ? WHERE id = ? AND review_flagged_at IS NULL AND "
      "challenge_failures >= ?",
      {now, std::to_string(s.review_after) + " or more benchmark challenges failed (the latest: " + latest + ")",
       provider_id, s.review_after});
}

//! A failed challenge: stored, the GPU delisted with the reason, the provider told and counted.
void fail(Tx& tx, const ChallengeRow& c, std::string_view status, cc::Outcome outcome, double elapsed_s,
          std::int64_t now, const ChallengeSettings& s) {
  const bool unanswered = status == kUnanswered;
  const auto finding = failure_finding(c, outcome, elapsed_s, unanswered);
  tx.exec("UPDATE benchmark_challenges SET status = ?, answered_at = ?, result = ? WHERE id = ?",
          {std::string(status), unanswered ? store::Value(nullptr) : store::Value(now), finding.recommendation, c.id});
  tx.exec(
      "UPDATE gpu_listing SET listed = 0, delist_reason = ?, recommendation = ?, updated_at = ? "
      "WHERE machine_id = ? AND uuid = ?",
      {finding.label + " failed", finding.recommendation, now, c.machine_id, c.gpu_uuid});
  const auto provider =
      tell_provider(tx, c, s, now, [&](const mail::GpuFacts& gpu) { return mail::gpu_delisted(gpu, {finding}); });
  if (!provider) return;
  count_failure(tx, *provider, finding.label + " " + std::string(status) + " on machine " + c.machine_id, now, s);
}

void pass(Tx& tx, const ChallengeRow& c, double elapsed_s, std::int64_t now, const ChallengeSettings& s) {
  // A GEMM's time is its root's (kept in result when it came); the opening only adds the rows checked.
  const std::string result =
      c.kind == protocol::kGemmChallenge && c.root
          ? c.result.value_or("root") + ", " + std::to_string(c.slices.size()) + " rows opened and checked"
          : "answered in " + round_text(elapsed_s, 3) + " s";
  tx.exec("UPDATE benchmark_challenges SET status = 'passed', answered_at = ?, result = ? WHERE id = ?",
          {now, result, c.id});
  // The last of a held GPU's run challenges: it is verified, and listed.
  if (tx.query_one("SELECT 1 FROM benchmark_challenges WHERE run_id = ? AND gpu_uuid = ? AND origin = 'run' AND "
                   "status <> 'passed'",
                   {c.run_id, c.gpu_uuid})) {
    return;
  }
  const auto held = tx.query_one(
      "SELECT quality_ratio FROM gpu_listing WHERE machine_id = ? AND uuid = ? AND listed = 0 AND last_run_id = ? AND "
      "delist_reason = ?",
      {c.machine_id, c.gpu_uuid, c.run_id, std::string(kAwaitingChallenges)});
  if (!held) return;
  tx.exec(
      "UPDATE gpu_listing SET listed = 1, delist_reason = NULL, recommendation = NULL, updated_at = ? WHERE "
      "machine_id = ? AND uuid = ?",
      {now, c.machine_id, c.gpu_uuid});
  // A GPU listed for the first time is not announced (as a first passing run without challenges is not);
  // one delisted by an earlier run is, as relisted.
  if (!tx.query_one("SELECT 1 FROM gpu_benchmarks WHERE machine_id = ? AND uuid = ? AND run_id <> ?",
                    {c.machine_id, c.gpu_uuid, c.run_id})) {
    return;
  }
  tell_provider(tx, c, s, now, [&](const mail::GpuFacts& gpu) { return mail::gpu_relisted(gpu, held->opt_f64(0)); });
}

}  // namespace

namespace {

//! A GEMM and a VRAM challenge per GPU, stored with `origin`; their specs.
std::vector<protocol::ChallengeSpec> issue(Tx& tx, const std::string& run_id, const std::string& machine_id,
                                          bool simulated, const std::vector<ChallengedGpu>& gpus,
                                          const ChallengeSettings& s, std::string_view origin, std::int64_t now) {
  static const std::string q =
      "INSERT INTO benchmark_challenges (id, run_id, machine_id, gpu_uuid, kind, status, seed_a, seed_b, "
      "seed_verifier, seed_slices, size, slice_words, claimed_tflops, allowed_ms, issued_at, deadline_at, origin, "
      "products, open_rows) VALUES (?, ?, ?, ?, ?, 'issued', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
  std::vector<protocol::ChallengeSpec> out;
  for (const auto& g : gpus) {
    for (const auto kind : {protocol::kGemmChallenge, protocol::kVramChallenge}) {
      protocol::ChallengeSpec spec;
      spec.id = util::new_id("chl");
      spec.kind = std::string(kind);
      spec.gpu_uuid = g.uuid;
      // A fresh random key per challenge: the seeds are unpredictable, and kept with the challenge.
      const auto seeds = cc::derive_seeds(util::random_token(32), spec.id);
      std::int64_t size = 0, slice_words = 0, deadline = 0, products = 1, open_rows = 0;
      if (kind == protocol::kGemmChallenge) {
        const auto plan = plan_gemm_challenge(simulated, g.claimed_tflops, s);
        size = plan.n;
        products = plan.products;
        open_rows = plan.open_rows;
        spec.allowed_s = plan.allowed_s;
        spec.seed_a = seeds.matrix_a;
        spec.seed_b = seeds.matrix_b;
        spec.n = size;
        spec.products = products;
        deadline = now + static_cast<std::int64_t>(std::ceil(spec.allowed_s * 1000));
      } else {
        // A slice per MiB of 90% of the registered memory (the driver keeps some); a simulated GPU holds a
        // KiB per MiB, dilated like its speed.
        size = std::max<std::int64_t>(1, g.memory_mib * 9 / 10);
        slice_words = simulated ? 128 : (1 << 20) / 8;
        spec.allowed_s = simulated ? s.sim_vram_allowed_s : s.vram_allowed_s;
        spec.fill_seed = seeds.matrix_a;
        spec.slices = size;
        spec.slice_words = slice_words;
        deadline = now + s.fill_allowed_ms;
      }
      const auto allowed_ms = static_cast<std::int64_t>(std::ceil(spec.allowed_s * 1000));
      tx.exec(q, {spec.id, run_id, machine_id, g.uuid, std::string(kind), protocol::seed_text(seeds.matrix_a),
                  protocol::seed_text(seeds.matrix_b), protocol::seed_text(seeds.verifier),
                  protocol::seed_text(seeds.slices), size, slice_words,
                  g.claimed_tflops ? store::Value(*g.claimed_tflops) : store::Value(nullptr), allowed_ms, now, deadline,
                  std::string(origin), products, open_rows});
      out.push_back(std::move(spec));
    }
  }
  return out;
}

}  // namespace

nlohmann::json issue_challenges(Tx& tx, const std::string& run_id, const std::string& machine_id, bool simulated,
                                const std::vector<ChallengedGpu>& gpus, const ChallengeSettings& s, std::int64_t now) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& spec : issue(tx, run_id, machine_id, simulated, gpus, s, kRun, now)) out.push_back(spec.to_json());
  return out;
}

std::optional<nlohmann::json> spot_check_command(Tx& tx, const std::string& machine_id, const ChallengeSettings& s,
                                                 std::int64_t now) {
  if (s.spot_check_mean_ms <= 0) return std::nullopt;
  const auto next_due = [&] {
    // Uniform in [½, 1½) of the mean, from the OS's CSPRNG: the provider cannot tell when the next one comes.
    return now + static_cast<std::int64_t>(static_cast<double>(s.spot_check_mean_ms) * (0.5 + util::random_unit()));
  };
  const auto due = tx.query_one("SELECT spot_check_at, simulated FROM machines WHERE id = ?", {machine_id});
  if (!due) return std::nullopt;
  const bool simulated = due->i64(1) != 0;
  if (due->is_null(0)) {
    tx.exec("UPDATE machines SET spot_check_at = ? WHERE id = ?", {next_due(), machine_id});
    return std::nullopt;
  }
  if (due->i64(0) > now) return std::nullopt;
  // Not while a run or a challenge is open: each check is timed alone, on a GPU doing nothing else.
  if (BenchmarksRepo(tx).has_open_run(machine_id) ||
      tx.query_one(std::string("SELECT 1 FROM benchmark_challenges WHERE machine_id = ? AND status IN ") +
                       open_challenge_statuses_sql(),
                   {machine_id})) {
    return std::nullopt;
  }
  tx.exec("UPDATE machines SET spot_check_at = ? WHERE id = ?", {next_due(), machine_id});
  // Each listed GPU no rental holds, with the figure its listing run claimed and its registered memory.
  std::vector<std::pair<std::string, ChallengedGpu>> gpus;  // (listing run, GPU)
  for (const auto& r : tx.query(
           "SELECT l.uuid, l.last_run_id, g.memory_mib, (SELECT c.claimed_tflops FROM benchmark_challenges c WHERE "
           "c.run_id = l.last_run_id AND c.gpu_uuid = l.uuid AND c.kind = 'gemm' AND c.origin = 'run' ORDER BY "
           "c.issued_at DESC LIMIT 1) FROM gpu_listing l JOIN machine_gpus g ON g.machine_id = l.machine_id AND "
           "g.uuid = l.uuid WHERE l.machine_id = ? AND l.listed = 1 AND l.last_run_id IS NOT NULL AND NOT EXISTS "
           "(SELECT 1 FROM gpu_allocations a WHERE a.machine_id = l.machine_id AND a.uuid = l.uuid) ORDER BY l.uuid",
           {machine_id})) {
    gpus.push_back({r.str(1), ChallengedGpu{r.str(0), r.opt_f64(3), r.i64(2)}});
  }
  if (gpus.empty()) return std::nullopt;
  protocol::Command cmd{std::string(protocol::kSpotCheck), std::nullopt, std::nullopt, {}};
  for (const auto& [run_id, g] : gpus) {
    for (auto& spec : issue(tx, run_id, machine_id, simulated, {g}, s, kSpot, now)) {
      cmd.challenges.push_back(std::move(spec));
    }
  }
  return cmd.to_json();
}

std::optional<cc::TelemetryVerdict> check_run_telemetry(const core::bench::GpuRun& gpu,
                                                        std::optional<double> claimed_tflops,
                                                        const core::bench::ModelSpec* model,
                                                        std::optional<double> tdp_w, const ChallengeSettings& s) {
  if (!claimed_tflops || !model || model->fp16_tensor_tflops <= 0 || !tdp_w || *tdp_w <= 0) return std::nullopt;
  const auto key = std::string(core::bench::metric_key(core::bench::Metric::fp16_tensor));
  std::vector<core::bench::TelemetryPoint> during;
  for (const auto& p : gpu.telemetry) {
    if (p.during == key) during.push_back(p);
  }
  auto v = cc::judge_telemetry(*claimed_tflops, model->fp16_tensor_tflops, *tdp_w, during);
  if (v.cause == "telemetry_missing" && !s.require_answers) return std::nullopt;
  return v;
}

core::bench::Finding telemetry_finding(const cc::TelemetryVerdict& v, double claimed_tflops) {
  core::bench::Finding f;
  f.metric = "challenge.telemetry";
  f.label = "Telemetry check";
  f.unit = "W";
  f.measured = v.measured_w;
  f.expected = v.needed_w;
  f.cause = v.cause;
  const std::string figure = round_text(claimed_tflops, 1) + " TFLOP/s";
  if (v.cause == "telemetry_missing") {
    f.recommendation = "the run reported " + figure +
                       " FP16 tensor but no GPU power readings during that case: keep NVML working "
                       "(nvidia-smi -q -d POWER shows the draw), run the official gpunex-agent, and re-run the "
                       "benchmarks";
  } else if (v.cause == "telemetry_idle") {
    f.recommendation = "the GPU reported itself idle for the whole FP16 tensor case while the run claimed " + figure +
                       ": the figures were not measured on this GPU; run the official gpunex-agent and re-run the "
                       "benchmarks";
  } else {
    f.recommendation = figure + " FP16 tensor needs at least " + round_text(v.needed_w, 0) +
                       " W on this model, but the GPU drew at most " + round_text(v.measured_w, 0) +
                       " W during that case: the figures were not measured on this GPU, or its power readings are "
                       "wrong; run the official gpunex-agent and re-run the benchmarks";
  }
  return f;
}

void record_telemetry_check(Tx& tx, const std::string& run_id, const std::string& machine_id,
                            const std::string& gpu_uuid, double claimed_tflops, const cc::TelemetryVerdict& v,
                            const ChallengeSettings& s, std::int64_t now) {
  const std::string none = protocol::seed_text(0);
  const auto result = v.consistent ? "drew up to " + round_text(v.measured_w, 0) + " W where " +
                                         round_text(v.needed_w, 0) + " W are needed"
                                   : telemetry_finding(v, claimed_tflops).recommendation;
  tx.exec(
      "INSERT INTO benchmark_challenges (id, run_id, machine_id, gpu_uuid, kind, status, seed_a, seed_b, "
      "seed_verifier, seed_slices, size, slice_words, claimed_tflops, allowed_ms, issued_at, deadline_at, origin, "
      "answered_at, result) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, ?, 0, ?, ?, ?, ?, ?)",
      {util::new_id("chl"), run_id, machine_id, gpu_uuid, std::string(kTelemetry),
       std::string(v.consistent ? "passed" : "wrong"), none, none, none, none, claimed_tflops, now, now,
       std::string(kRun), now, result});
  if (v.consistent) return;
  if (auto owner = MachinesRepo(tx).owner(machine_id)) {
    count_failure(tx, *owner, "Telemetry check failed on machine " + machine_id, now, s);
  }
}

namespace {

//! The challenge `a` answers, if it is on one of the provider's machines.
std::optional<ChallengeRow> provider_challenge(Tx& tx, const std::string& provider_id,
                                               const protocol::ChallengeAnswer& a) {
  const auto owner = MachinesRepo(tx).owner(a.machine_id);
  auto c = find_challenge(tx, a.challenge_id);
  if (!owner || *owner != provider_id || !c || c->machine_id != a.machine_id) return std::nullopt;
  return c;
}

cc::Outcome judge_rows(const ChallengeRow& c, const std::vector<cc::OpenedRow>& opened) {
  const auto root = c.root ? cc::parse_digest(*c.root) : std::nullopt;
  if (!root) return cc::Outcome::wrong;
  return cc::judge_opened(c.seeds, static_cast<std::size_t>(c.size), static_cast<std::size_t>(c.products), *root,
                          c.slices, opened);
}

}  // namespace

std::optional<cc::Outcome> judge_opening(Tx& tx, const std::string& provider_id, const protocol::ChallengeAnswer& a) {
  if (!a.opened) return std::nullopt;
  const auto c = provider_challenge(tx, provider_id, a);
  if (!c || c->kind != protocol::kGemmChallenge || c->status != kCommitted) return std::nullopt;
  return judge_rows(*c, *a.opened);
}

core::Result<nlohmann::json> answer_challenge(Tx& tx, const std::string& provider_id,
                                              const protocol::ChallengeAnswer& a, const ChallengeSettings& s,
                                              std::int64_t now, std::optional<cc::Outcome> prejudged) {
  auto c = provider_challenge(tx, provider_id, a);
  if (!c) return Error::make(ErrorCode::not_found, "no such challenge on this provider's machine");
  if (c->status != kIssued && c->status != kFilled && c->status != kCommitted) {
    return Error::make(ErrorCode::conflict, "the challenge was already decided: " + c->status)
        .with_code("challenge_decided");
  }
  protocol::ChallengeReply reply{c->id, "", {}, {}, std::nullopt, std::nullopt};
  const auto decide = [&](cc::Outcome o, double elapsed_s) {
    reply.status = std::string(cc::outcome_name(o));
    if (o == cc::Outcome::passed) {
      pass(tx, *c, elapsed_s, now, s);
    } else {
      fail(tx, *c, reply.status, o, elapsed_s, now, s);
      reply.reason = failure_finding(*c, o, elapsed_s, false).recommendation;
    }
  };
  const double allowed_s = static_cast<double>(c->allowed_ms) / 1000.0;
  const double elapsed_s = static_cast<double>(now - (c->deadline_at - c->allowed_ms)) / 1000.0;
  if (c->kind == protocol::kGemmChallenge) {
    if (c->status == kIssued) {
      if (!a.root) return Error::make(ErrorCode::invalid_field, "a GEMM challenge is answered with root first", "root");
      // The root is what the GPU's speed bounds: late, and nothing is opened.
      if (elapsed_s > allowed_s) {
        decide(cc::Outcome::late, elapsed_s);
        return reply.to_json();
      }
      const auto rows = static_cast<std::uint64_t>(c->size) * static_cast<std::uint64_t>(c->products);
      // (A challenge issued before migration 19 has no count: the least there is.)
      const auto open_rows = static_cast<std::size_t>(std::max(c->open_rows, s.min_open_rows));
      reply.rows = cc::pick_slices(c->seeds.slices, rows, open_rows);
      reply.status = "pending";
      const auto simulated = tx.query_one("SELECT simulated FROM machines WHERE id = ?", {c->machine_id});
      const double open_s = simulated && simulated->i64(0) != 0 ? s.sim_open_allowed_s : s.open_allowed_s;
      reply.allowed_s = open_s;
      const auto open_ms = static_cast<std::int64_t>(std::ceil(open_s * 1000));
      // From here the challenge waits for its opening: allowed_ms and deadline_at are the opening's.
      tx.exec(
          "UPDATE benchmark_challenges SET status = ?, root = ?, slices = ?, allowed_ms = ?, deadline_at = ?, "
          "result = ? WHERE id = ?",
          {std::string(kCommitted), *a.root, nlohmann::json(reply.rows).dump(), open_ms, now + open_ms,
           "root in " + round_text(elapsed_s, 3) + " s", c->id});
      return reply.to_json();
    }
    if (!a.opened) {
      return Error::make(ErrorCode::invalid_field, "a committed GEMM challenge is answered with opened", "opened");
    }
    const auto outcome = prejudged ? *prejudged : judge_rows(*c, *a.opened);
    decide(outcome != cc::Outcome::passed || elapsed_s <= allowed_s ? outcome : cc::Outcome::late, elapsed_s);
    return reply.to_json();
  }
  if (c->status == kIssued) {
    if (!a.filled)
      return Error::make(ErrorCode::invalid_field, "a VRAM challenge is answered with filled first", "filled");
    reply.slices =
        cc::pick_slices(c->seeds.slices, static_cast<std::uint64_t>(c->size), static_cast<std::size_t>(s.vram_picks));
    reply.status = "pending";
    reply.allowed_s = allowed_s;
    tx.exec("UPDATE benchmark_challenges SET status = ?, slices = ?, deadline_at = ? WHERE id = ?",
            {std::string(kFilled), nlohmann::json(reply.slices).dump(), now + c->allowed_ms, c->id});
    return reply.to_json();
  }
  if (!a.digests)
    return Error::make(ErrorCode::invalid_field, "a filled VRAM challenge is answered with digests", "digests");
  decide(cc::judge_vram(c->seeds.matrix_a, c->slices, static_cast<std::uint64_t>(c->slice_words), *a.digests, elapsed_s,
                        allowed_s),
         elapsed_s);
  return reply.to_json();
}

std::size_t expire_challenges(Tx& tx, const std::string& machine_id, const ChallengeSettings& s, std::int64_t now) {
  if (!s.require_answers) return 0;
  std::vector<ChallengeRow> due;
  for (const auto& r :
       tx.query(std::string("SELECT ") + kColumns + " FROM benchmark_challenges WHERE machine_id = ? AND status IN " +
                    open_challenge_statuses_sql() + " AND deadline_at < ?",
                {machine_id, now})) {
    due.push_back(row_of(r));
  }
  for (const auto& c : due) {
    fail(tx, c, kUnanswered, cc::Outcome::late, static_cast<double>(now - c.issued_at) / 1000.0, now, s);
  }
  return due.size();
}

nlohmann::json run_challenges(Tx& tx, const std::string& run_id) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : tx.query("SELECT id, gpu_uuid, kind, status, allowed_ms, issued_at, answered_at, result, "
                                "origin FROM benchmark_challenges WHERE run_id = ? ORDER BY issued_at, id",
                                {run_id})) {
    out.push_back({{"id", r.str(0)},
                   {"gpu_uuid", r.str(1)},
                   {"kind", r.str(2)},
                   {"origin", r.str(8)},
                   {"status", r.str(3)},
                   {"allowed_ms", r.i64(4)},
                   {"issued_at_ms", r.i64(5)},
                   {"answered_at_ms", r.is_null(6) ? nlohmann::json(nullptr) : nlohmann::json(r.i64(6))},
                   {"result", r.is_null(7) ? nlohmann::json(nullptr) : nlohmann::json(r.str(7))}});
  }
  return out;
}

nlohmann::json flagged_providers(Tx& tx) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : tx.query("SELECT p.id, p.challenge_failures, p.review_flagged_at, p.review_reason, u.email "
                                "FROM providers p JOIN users u ON u.id = p.user_id WHERE p.review_flagged_at IS NOT "
                                "NULL ORDER BY p.review_flagged_at DESC, p.id")) {
    out.push_back({{"provider_id", r.str(0)},
                   {"email", r.str(4)},
                   {"challenge_failures", r.i64(1)},
                   {"flagged_at_ms", r.i64(2)},
                   {"reason", r.is_null(3) ? nlohmann::json(nullptr) : nlohmann::json(r.str(3))}});
  }
  return out;
}

}  // namespace gpunex::server
