#include "server/reliability/reliability.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "server/fleet/benchmarks.hpp"
#include "server/fleet/machines_repo.hpp"
#include "server/fleet/schedules.hpp"
#include "server/mail/templates.hpp"
#include "server/onboarding/providers.hpp"
#include "server/platform/notifications.hpp"
#include "server/platform/platform_repo.hpp"
#include "server/reliability/reliability_repo.hpp"
#include "util/log.hpp"
#include "util/time.hpp"

namespace gpunex::server::reliability {

namespace cr = core::reliability;
using core::Error;
using core::ErrorCode;
using store::Tx;

namespace {

//! Heartbeats of a minute may commit a little after the time a round judged it: read them again.
constexpr std::int64_t kPresenceOverlapMs = 2 * cr::kMinuteMs;

// Divided by the units per one (100 for 0.01), not multiplied by the unit: 95 / 100 is the double that
// prints 0.95, where 95 * 0.01 prints 0.9500000000000001.
double round_to(double v, double unit) {
  const double per_one = std::round(1.0 / unit);
  return std::round(v * per_one) / per_one;
}

//! The minutes of the UTC day `day_ms` in the platform's outages (platform_repo::platform_outages_between).
cr::MinuteBits outage_minutes(store::Tx& tx, std::int64_t day_ms) {
  constexpr std::int64_t kMinuteMs = 60'000;
  std::vector<std::int64_t> minutes;
  for (const auto& o : platform_repo::platform_outages_between(tx, day_ms, day_ms + cr::kDayMs)) {
    const std::int64_t end = std::min(o.ended_at_ms, day_ms + cr::kDayMs);
    for (std::int64_t t = std::max(o.started_at_ms, day_ms) / kMinuteMs * kMinuteMs; t < end; t += kMinuteMs) {
      minutes.push_back(t);
    }
  }
  return cr::minutes_of_day(minutes, day_ms);
}

//! A machine's days as judged now: the stored ones of this window, and before it as far back as a day
//! judged now needs for its score (a window behind each day), with every day of this window that is not
//! final judged again.
struct Judged {
  std::vector<DayRow> rows;   // oldest first
  std::vector<cr::Day> days;  // the same days, as the score reads them
  std::vector<bool> changed;  // judged now
  core::Schedule schedule;
  std::vector<std::int64_t> declared;
};

cr::Day day_of_row(const DayRow& r) {
  cr::Day d;
  d.day_ms = r.day_ms;
  d.full = r.full;
  d.complete = r.judged_until_ms >= r.day_ms + cr::kDayMs;
  d.counted_min = r.counted_min;
  d.present_min = r.present_min;
  d.excused_min = r.excused_min;
  d.jobs = r.jobs;
  d.jobs_ok = r.jobs_ok;
  d.runs = r.runs;
  d.run_sum = r.run_sum;
  if (r.events_json == "[]") return d;  // most days: nothing to parse
  const auto events = nlohmann::json::parse(r.events_json, nullptr, false);
  if (events.is_array()) {
    for (const auto& e : events) {
      if (auto parsed = cr::event_from_json(e)) d.events.push_back(std::move(*parsed));
    }
  }
  return d;
}

Judged judge(Tx& tx, const MachineForScore& m, const JobSource& job_source, const Settings& s, std::int64_t now) {
  const auto& c = s.score;
  const std::int64_t today = cr::day_of(now);
  const std::int64_t window_first = today - (c.window_days - 1) * cr::kDayMs;
  const std::int64_t first = std::max(window_first, cr::day_of(m.registered_ms));

  // The window's days tell which are judged now; each of those is scored with the window behind it, so the
  // days before the window are read only as far back as the oldest of them needs. In the steady state only
  // today is judged (and yesterday in its grace): one window read, not two, per machine and round.
  std::map<std::int64_t, DayRow> rows;
  const auto read = [&](std::int64_t from, std::int64_t before) {
    for (auto& r : ReliabilityRepo(tx).days(m.id, from, before)) {
      const std::int64_t d = r.day_ms;
      rows.emplace(d, std::move(r));
    }
  };
  read(window_first, std::numeric_limits<std::int64_t>::max());
  std::vector<std::int64_t> to_judge;
  for (std::int64_t d = first; d <= today; d += cr::kDayMs) {
    const auto it = rows.find(d);
    if (it == rows.end() || !it->second.final) to_judge.push_back(d);
  }
  if (!to_judge.empty()) {
    const std::int64_t needed_from = to_judge.front() - (c.window_days - 1) * cr::kDayMs;
    if (needed_from < window_first) read(needed_from, window_first);
  }

  Judged out;
  // Read only when a day judged now is past its grace (the oldest is first): once a day per machine, not
  // every round, as today is always judged and never final.
  const bool grace_over = !to_judge.empty() && now >= to_judge.front() + cr::kDayMs + s.finalize_grace_ms;
  const auto watched = grace_over ? platform_repo::fleet_watched_until(tx) : std::nullopt;
  out.schedule = load_schedule(tx, m.id).value_or(core::always_available());
  out.declared = maintenance_declared_times(tx, m.id);
  std::map<std::int64_t, bool> changed;
  if (!to_judge.empty()) {
    const std::int64_t since = to_judge.front();
    const auto jobs = job_source ? job_source(tx, m.id, since) : std::vector<cr::Job>{};
    const auto runs = benchmark_runs_for_score(tx, m.id, since);
    for (const std::int64_t d : to_judge) {
      const auto fresh = cr::plan_day(out.schedule, out.declared, d, c);
      auto [it, added] = rows.try_emplace(d);
      DayRow& row = it->second;
      cr::DayPlan plan = fresh;
      cr::MinuteBits present;
      std::int64_t read_from = d;
      if (!added) {
        cr::DayPlan judged;
        judged.day_ms = d;
        judged.scheduled = cr::from_hex(row.scheduled_hex).value_or(fresh.scheduled);
        judged.excused = cr::from_hex(row.excused_hex).value_or(fresh.excused);
        plan = cr::merge_plans(judged, row.judged_until_ms, fresh);
        present = cr::from_hex(row.present_hex).value_or(cr::MinuteBits{});
        read_from = std::max(d, row.judged_until_ms - kPresenceOverlapMs);
      }
      // The platform's own outages are nobody's absence: excused wherever they were scheduled.
      plan.excused |= outage_minutes(tx, d) & plan.scheduled;
      present |= cr::minutes_of_day(presence_minutes_between(tx, m.id, read_from, d + cr::kDayMs), d);
      const std::int64_t until = std::min(now, d + cr::kDayMs);
      const cr::Day day = cr::judge_day(plan, present, m.registered_ms, until, jobs, runs, c);
      row.day_ms = d;
      row.judged_until_ms = until;
      // Final once its grace is over and the fleet was watched past its end: after the platform's outage
      // across midnight, the day waits until the machines sweep has recorded the outage it excuses.
      row.final = now >= d + cr::kDayMs + s.finalize_grace_ms && (!watched || *watched >= d + cr::kDayMs);
      row.full = day.full;
      row.scheduled_hex = cr::to_hex(plan.scheduled);
      row.excused_hex = cr::to_hex(plan.excused);
      row.present_hex = cr::to_hex(present);
      row.counted_min = day.counted_min;
      row.present_min = day.present_min;
      row.excused_min = day.excused_min;
      row.jobs = day.jobs;
      row.jobs_ok = day.jobs_ok;
      row.runs = day.runs;
      row.run_sum = day.run_sum;
      auto events = nlohmann::json::array();
      for (const auto& e : day.events) events.push_back(cr::to_json(e));
      row.events_json = events.dump();
      changed[d] = true;
    }
  }
  for (auto& [d, row] : rows) {
    out.days.push_back(day_of_row(row));
    out.changed.push_back(changed.count(d) > 0);
    out.rows.push_back(std::move(row));
  }
  // Each day judged now carries the score at its end, the day at age 0 (today's: as of now).
  for (std::size_t i = 0; i < out.rows.size(); ++i) {
    if (!out.changed[i]) continue;
    auto& row = out.rows[i];
    const auto sc = cr::score_as_of(out.days, std::min(now, row.day_ms + cr::kDayMs - 1), c);
    row.score = sc.score;
    row.uptime = sc.uptime;
    row.job_completion = sc.job_completion;
    row.stability = sc.stability;
    row.is_new = sc.is_new;
  }
  return out;
}

std::string machine_name(const MachineForScore& m) {
  return (m.hostname.empty() ? m.id : m.hostname + " (" + m.id + ")");
}

const date::time_zone& zone_of(const core::Schedule& s) {
  return s.zone ? *s.zone : *date::locate_zone("UTC");
}

struct RankedEvent {
  const cr::Event* event;
  const cr::Day* day;
  double points;
};

//! The window's events with the points each takes off the score now, the costliest first.
std::vector<RankedEvent> ranked_events(const Judged& j, const cr::Score& score, std::int64_t now, const cr::Config& c) {
  std::vector<RankedEvent> out;
  for (const auto& d : j.days) {
    for (const auto& e : d.events) {
      const double p = cr::event_points(e, d, score, now, c);
      if (d.day_ms > cr::day_of(now) || cr::day_of(now) - d.day_ms >= c.window_days * cr::kDayMs) continue;
      out.push_back(RankedEvent{&e, &d, p});
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const RankedEvent& a, const RankedEvent& b) { return a.points > b.points; });
  return out;
}

cr::Recovery recovery_of(const Judged& j, std::int64_t now, const cr::Config& c) {
  std::vector<std::int64_t> future;
  const std::int64_t today = cr::day_of(now);
  for (int k = 1; k <= c.window_days; ++k) {
    const auto plan = cr::plan_day(j.schedule, j.declared, today + k * cr::kDayMs, c);
    future.push_back(static_cast<std::int64_t>((plan.scheduled & ~plan.excused).count()));
  }
  return cr::recovery(j.days, now, future, c);
}

std::string day_text(std::int64_t day_ms) {
  return util::rfc3339(day_ms).substr(0, 10);
}

}  // namespace

Settings settings_of(const Config& c) {
  Settings s;
  s.score = c.reliability;
  s.score.prior_score = c.rank.reliability_prior;
  s.alert_below = c.reliability_alert_below;
  s.alert_rearm_points = c.reliability_alert_rearm_points;
  s.base_url = c.base_url();
  return s;
}

cr::Score refresh_machine(Tx& tx, const MachineForScore& m, const JobSource& jobs, const Settings& s, std::int64_t now,
                          bool* alerted_now) {
  if (alerted_now != nullptr) *alerted_now = false;
  const Judged j = judge(tx, m, jobs, s, now);
  ReliabilityRepo repo(tx);
  for (std::size_t i = 0; i < j.rows.size(); ++i)
    if (j.changed[i]) repo.upsert_day(m.id, j.rows[i]);
  const auto score = cr::score_as_of(j.days, now, s.score);
  const double shown = round_to(score.score, 0.1);
  const auto before = repo.published(m.id);
  PublishedRow p{shown, score.is_new, now, before && before->alerted};
  if (!score.is_new && shown < s.alert_below && !p.alerted) {
    if (auto who = provider_contact(tx, m.provider_id)) {
      mail::ReliabilityFacts facts;
      facts.machine = machine_name(m);
      facts.score = shown;
      facts.alert_below = s.alert_below;
      const auto events = ranked_events(j, score, now, s.score);
      for (std::size_t i = 0; i < events.size() && i < 3; ++i) {
        facts.reasons.push_back({cr::describe(*events[i].event, zone_of(j.schedule), events[i].day->uptime(), s.score),
                                 cr::advice(*events[i].event)});
      }
      facts.recovers_in_days = recovery_of(j, now, s.score).days;
      facts.link = s.base_url + "/#/machines/" + m.id + "/performance";
      announce(tx, who->user_id, mail::reliability_low(facts), std::nullopt, now);
    }
    p.alerted = true;
    if (alerted_now != nullptr) *alerted_now = true;
  } else if (p.alerted && (score.is_new || shown >= s.alert_below + s.alert_rearm_points)) {
    p.alerted = false;
  }
  if (!before || before->score != p.score || before->is_new != p.is_new || before->alerted != p.alerted) {
    repo.upsert_published(m.id, p);
  }
  return score;
}

RoundResult run_round(store::Store& store, const JobSource& jobs, const Settings& s, std::int64_t now,
                      std::size_t chunk) {
  RoundResult r;
  const auto machines = store.transact([](Tx& tx) { return machines_for_score(tx); }, store::TxMode::read);
  for (std::size_t from = 0; from < machines.size(); from += chunk) {
    const std::size_t to = std::min(machines.size(), from + chunk);
    r.alerts += store.transact([&](Tx& tx) {
      std::size_t alerts = 0;
      for (std::size_t i = from; i < to; ++i) {
        bool alerted_now = false;
        refresh_machine(tx, machines[i], jobs, s, now, &alerted_now);
        if (alerted_now) ++alerts;
      }
      return alerts;
    });
    r.machines += to - from;
  }
  const std::int64_t keep_from = cr::day_of(now) - 2 * std::int64_t{s.score.window_days} * cr::kDayMs;
  for (;;) {
    const auto n = store.transact([&](Tx& tx) { return ReliabilityRepo(tx).prune_days_before(keep_from, 5000); });
    r.pruned_days += n;
    if (n < 5000) break;
  }
  if (r.alerts > 0 || r.pruned_days > 0) {
    util::log_event("info", "reliability round",
                    {{"machines", r.machines}, {"alerts", r.alerts}, {"pruned_days", r.pruned_days}});
  }
  return r;
}

core::Result<nlohmann::json> machine_reliability(Tx& tx, const std::string& provider_id, const std::string& machine_id,
                                                 const JobSource& jobs, const Settings& s, std::int64_t now) {
  const auto m = machine_for_score(tx, machine_id);
  if (!m || m->provider_id != provider_id) {
    return Error::make(ErrorCode::not_found, "no machine " + machine_id + " for this provider", std::string("id"));
  }
  const auto& c = s.score;
  const Judged j = judge(tx, *m, jobs, s, now);
  const auto score = cr::score_as_of(j.days, now, c);
  const auto r2 = [](double v) { return round_to(v, 0.01); };
  const auto r5 = [](double v) { return round_to(v, 0.00001); };
  const double total = c.weight_uptime + c.weight_jobs + c.weight_stability;
  const std::int64_t today = cr::day_of(now);

  nlohmann::json parts = {{"uptime",
                           {{"value", r5(score.uptime)},
                            {"weight", c.weight_uptime / total},
                            {"present_minutes", score.present_min},
                            {"counted_minutes", score.counted_min},
                            {"excused_minutes", score.excused_min},
                            {"weighted_present_minutes", r5(score.w_present)},
                            {"weighted_counted_minutes", r5(score.w_counted)}}},
                          {"job_completion",
                           {{"value", r5(score.job_completion)},
                            {"weight", c.weight_jobs / total},
                            {"jobs", score.jobs},
                            {"completed", score.jobs_ok},
                            {"provider_side", score.jobs - score.jobs_ok},
                            {"weighted_jobs", r5(score.w_jobs)},
                            {"weighted_completed", r5(score.w_jobs_ok)},
                            {"prior_jobs", c.job_prior_count},
                            {"prior_rate", c.job_prior_rate}}},
                          {"stability",
                           {{"value", r5(score.stability)},
                            {"weight", c.weight_stability / total},
                            {"runs", score.runs},
                            {"weighted_runs", r5(score.w_runs)},
                            {"weighted_sum", r5(score.w_run_sum)},
                            {"is_prior", score.stability_is_prior},
                            {"prior", c.stability_prior}}}};

  auto history = nlohmann::json::array();
  for (std::size_t i = 0; i < j.rows.size(); ++i) {
    const auto& row = j.rows[i];
    if (row.day_ms > today || today - row.day_ms >= c.window_days * cr::kDayMs) continue;
    history.push_back({{"day", day_text(row.day_ms)},
                       {"score", r2(row.score)},
                       {"is_new", row.is_new},
                       {"uptime", r5(row.uptime)},
                       {"job_completion", r5(row.job_completion)},
                       {"stability", r5(row.stability)},
                       {"final", row.final},
                       {"partial", row.judged_until_ms < row.day_ms + cr::kDayMs},
                       {"day_uptime", r5(j.days[i].uptime())},
                       {"counted_minutes", row.counted_min},
                       {"present_minutes", row.present_min},
                       {"excused_minutes", row.excused_min},
                       {"jobs", row.jobs},
                       {"jobs_completed", row.jobs_ok},
                       {"runs", row.runs}});
  }

  const auto& zone = zone_of(j.schedule);
  auto events = nlohmann::json::array();
  auto ranked = ranked_events(j, score, now, c);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const RankedEvent& a, const RankedEvent& b) { return a.event->at_ms > b.event->at_ms; });
  for (const auto& re : ranked) {
    if (events.size() >= 200) break;
    const auto& e = *re.event;
    nlohmann::json ej = {{"kind", cr::to_string(e.kind)},   {"at", util::rfc3339(e.at_ms)},
                         {"day", day_text(re.day->day_ms)}, {"text", cr::describe(e, zone, re.day->uptime(), c)},
                         {"what_to_do", cr::advice(e)},     {"points", r2(re.points)}};
    switch (e.kind) {
      case cr::EventKind::offline:
        ej["end"] = util::rfc3339(e.end_ms);
        ej["minutes"] = e.minutes;
        if (e.late_declared_ms) ej["maintenance_declared_at"] = util::rfc3339(*e.late_declared_ms);
        break;
      case cr::EventKind::job_failed:
        ej["rental_id"] = e.ref;
        ej["reason"] = e.reason ? core::rental::to_string(*e.reason) : "";
        break;
      case cr::EventKind::benchmark_low:
        ej["run_id"] = e.ref;
        ej["ratio"] = r5(e.ratio);
        ej["thermal_share"] = r5(e.thermal_share);
        ej["power_share"] = r5(e.power_share);
        ej["stability"] = r5(e.stability);
        break;
    }
    events.push_back(std::move(ej));
  }

  const auto rec = recovery_of(j, now, c);
  return nlohmann::json{
      {"machine_id", m->id},
      {"hostname", m->hostname},
      {"at", util::rfc3339(now)},
      {"timezone", j.schedule.timezone},
      {"state", score.is_new ? "new" : "scored"},
      {"is_new", score.is_new},
      {"score", r2(score.score)},
      {"prior", c.prior_score},
      {"formula_score", r2(score.formula)},
      {"alert_below", s.alert_below},
      {"parts", std::move(parts)},
      {"window",
       {{"days", c.window_days},
        {"half_life_days", c.half_life_days},
        {"from", day_text(today - (c.window_days - 1) * cr::kDayMs)},
        {"to", day_text(today)}}},
      {"history", std::move(history)},
      {"events", std::move(events)},
      {"recovery",
       {{"points_lost", r2(rec.points_lost)},
        {"days", rec.days},
        {"by", rec.days > 0 ? nlohmann::json(day_text(today + rec.days * cr::kDayMs)) : nlohmann::json(nullptr)}}}};
}

nlohmann::json provider_reliability(Tx& tx, const std::string& provider_id, const JobSource& jobs, const Settings& s,
                                    std::int64_t now) {
  struct Figures {
    double weight = 0, score = 0, uptime = 0, job_completion = 0, stability = 0;
  };
  Figures scored, fresh;  // machines with a score of their own; machines still new
  auto machines = nlohmann::json::array();
  std::vector<nlohmann::json> events;
  MachinesRepo repo(tx);
  for (const auto& card : repo.cards_of_provider(provider_id)) {
    auto one = machine_reliability(tx, provider_id, card.id, jobs, s, now);
    if (!one) continue;  // cannot happen: the card is the provider's
    const auto& m = *one;
    std::size_t gpus = 0;
    for (const auto& g : repo.gpu_cards(card.id)) gpus += g.present ? 1 : 0;
    const double w = static_cast<double>(gpus);
    const bool is_new = m["is_new"].get<bool>();
    auto& f = is_new ? fresh : scored;
    f.weight += w;
    f.score += w * m["score"].get<double>();
    f.uptime += w * m["parts"]["uptime"]["value"].get<double>();
    f.job_completion += w * m["parts"]["job_completion"]["value"].get<double>();
    f.stability += w * m["parts"]["stability"]["value"].get<double>();
    machines.push_back({{"machine_id", card.id},
                        {"hostname", m["hostname"]},
                        {"gpus", gpus},
                        {"state", m["state"]},
                        {"score", m["score"]},
                        {"uptime", m["parts"]["uptime"]["value"]},
                        {"job_completion", m["parts"]["job_completion"]["value"]},
                        {"benchmark_stability", m["parts"]["stability"]["value"]},
                        {"counted", !is_new && gpus > 0}});
    for (auto e : m["events"]) {
      e["machine_id"] = card.id;
      e["hostname"] = m["hostname"];
      events.push_back(std::move(e));
    }
  }
  // A machine new or without a present GPU weighs nothing; only new machines: the prior's figures.
  const bool any_scored = scored.weight > 0;
  const Figures& f = any_scored ? scored : fresh;
  if (!any_scored) {
    for (auto& m : machines) m["counted"] = m["gpus"].get<std::size_t>() > 0;
  }
  const auto mean = [&](double sum) -> nlohmann::json {
    if (f.weight <= 0) return nullptr;
    return round_to(sum / f.weight, 0.00001);
  };
  std::stable_sort(events.begin(), events.end(),
                   [](const nlohmann::json& a, const nlohmann::json& b) { return a["at"].get<std::string>() > b["at"].get<std::string>(); });
  if (events.size() > 200) events.resize(200);
  const auto& c = s.score;
  return nlohmann::json{
      {"provider_id", provider_id},
      {"at", util::rfc3339(now)},
      {"state", any_scored ? "scored" : (f.weight > 0 ? "new" : "no_machines")},
      {"score", f.weight > 0 ? nlohmann::json(round_to(f.score / f.weight, 0.01)) : nlohmann::json(nullptr)},
      {"uptime", mean(f.uptime)},
      {"job_completion", mean(f.job_completion)},
      {"benchmark_stability", mean(f.stability)},
      {"weighting", "gpu_count"},
      {"window_days", c.window_days},
      {"prior", c.prior_score},
      {"alert_below", s.alert_below},
      {"machines", std::move(machines)},
      {"events", std::move(events)}};
}

std::unordered_map<std::string, double> published_scores(Tx& tx, const std::vector<std::string>* machines) {
  return ReliabilityRepo(tx).all_scored(machines);
}

}  // namespace gpunex::server::reliability
