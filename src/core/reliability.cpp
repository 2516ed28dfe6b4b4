#include "core/reliability.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/clock_events.hpp"
#include "core/text.hpp"

namespace gpunex::core::reliability {

namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  const std::int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return -floor_div(-a, b);
}

std::int64_t ms_of(UtcTime t) {
  return t.time_since_epoch().count() * 1000;
}

//! The minutes [first, last) of a day; both clamped to the day.
MinuteBits span(std::int64_t first, std::int64_t last) {
  first = std::clamp<std::int64_t>(first, 0, kMinutesPerDay);
  last = std::clamp<std::int64_t>(last, 0, kMinutesPerDay);
  MinuteBits out;
  if (last <= first) return out;
  out.set();
  out >>= static_cast<std::size_t>(kMinutesPerDay - (last - first));  // the low (last - first) bits
  out <<= static_cast<std::size_t>(first);
  return out;
}

//! The minutes of the day starting at `day_ms` whose start lies in [start_ms, end_ms).
MinuteBits minutes_in(std::int64_t day_ms, std::int64_t start_ms, std::int64_t end_ms) {
  return span(ceil_div(start_ms - day_ms, kMinuteMs), ceil_div(end_ms - day_ms, kMinuteMs));
}

double weight_sum(const Config& c) {
  return c.weight_uptime + c.weight_jobs + c.weight_stability;
}

std::string percent(double share, int decimals) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f%%", decimals, share * 100.0);
  return buf;
}

std::string duration_text(std::int64_t minutes) {
  if (minutes < 60) return std::to_string(minutes) + " min";
  const std::int64_t h = minutes / 60, m = minutes % 60;
  if (h >= 48 && m == 0) return std::to_string(h / 24) + " days" + (h % 24 ? " " + std::to_string(h % 24) + " h" : "");
  return std::to_string(h) + " h" + (m ? " " + std::to_string(m) + " min" : "");
}

std::string reason_words(rental::EndReason r) {
  switch (r) {
    case rental::EndReason::gpu_failure:
      return "ended by GPU failure";
    case rental::EndReason::host_failure:
      return "ended by host failure";
    case rental::EndReason::agent_lost:
      return "ended because the machine was offline over 5 minutes (agent lost)";
    case rental::EndReason::provider_stopped:
      return "stopped by you, the provider";
    default:
      return "ended: " + std::string(rental::to_string(r));
  }
}

}  // namespace

std::int64_t day_of(std::int64_t ms) {
  return floor_div(ms, kDayMs) * kDayMs;
}

double day_weight(std::int64_t age_days, const Config& c) {
  if (c.half_life_days <= 0) return age_days == 0 ? 1.0 : 0.0;
  return std::pow(0.5, static_cast<double>(age_days) / c.half_life_days);
}

// ---- the schedule, minute by minute ----

DayPlan plan_day(const Schedule& s, const std::vector<std::int64_t>& declared_ms, std::int64_t day_ms,
                 const Config& c) {
  DayPlan p;
  p.day_ms = day_ms;
  const UtcTime from{seconds{day_ms / 1000}};
  const auto occ = occurrences(s, from, from + std::chrono::days{1});
  if (s.always) p.scheduled.set();
  for (const auto& o : occ)
    if (o.maintenance < 0) p.scheduled |= minutes_in(day_ms, ms_of(o.start), ms_of(o.end));
  for (const auto& o : occ) {
    if (o.maintenance < 0) continue;
    const auto i = static_cast<std::size_t>(o.maintenance);
    const std::int64_t start = ms_of(o.start), end = ms_of(o.end);
    const MinuteBits covered = minutes_in(day_ms, start, end) & p.scheduled;
    if (covered.none()) continue;
    const std::int64_t declared = i < declared_ms.size() ? declared_ms[i] : std::numeric_limits<std::int64_t>::max();
    if (declared <= start - c.maintenance_notice_ms) {
      p.excused |= covered;
    } else {
      p.late.push_back(LateMaintenance{start, end, declared});
    }
  }
  return p;
}

DayPlan merge_plans(const DayPlan& judged, std::int64_t judged_until_ms, const DayPlan& fresh) {
  const MinuteBits before = span(0, floor_div(judged_until_ms - fresh.day_ms, kMinuteMs));
  DayPlan p;
  p.day_ms = fresh.day_ms;
  p.scheduled = (judged.scheduled & before) | (fresh.scheduled & ~before);
  p.excused = (judged.excused & before) | (fresh.excused & ~before);
  p.late = fresh.late;
  for (const auto& l : judged.late) {
    const bool known =
        std::any_of(p.late.begin(), p.late.end(), [&](const LateMaintenance& x) { return x.start_ms == l.start_ms; });
    if (!known && l.start_ms < judged_until_ms) p.late.push_back(l);
  }
  return p;
}

std::string to_hex(const MinuteBits& bits) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(kMinutesPerDay / 4, '0');
  // 64 minutes at a time (the reliability worker writes three of these per machine per round): digit i
  // holds minutes 4i..4i+3, the lowest minute in its lowest bit.
  const MinuteBits low_word(~0ULL);
  MinuteBits rest = bits;
  for (std::size_t word = 0; word * 16 < out.size(); ++word, rest >>= 64) {
    const std::uint64_t w = (rest & low_word).to_ullong();
    for (std::size_t d = 0; d < 16 && word * 16 + d < out.size(); ++d)
      out[word * 16 + d] = kDigits[(w >> (4 * d)) & 0xf];
  }
  return out;
}

std::optional<MinuteBits> from_hex(std::string_view hex) {
  if (hex.size() != kMinutesPerDay / 4) return std::nullopt;
  // 64 minutes at a time, as to_hex writes them (the worker reads three per judged stored day).
  MinuteBits out;
  for (std::size_t word = 0; word * 16 < hex.size(); ++word) {
    std::uint64_t w = 0;
    for (std::size_t d = 0; d < 16 && word * 16 + d < hex.size(); ++d) {
      const int v = lower_hex_value(hex[word * 16 + d]);
      if (v < 0) return std::nullopt;
      w |= static_cast<std::uint64_t>(v) << (4 * d);
    }
    out |= MinuteBits(w) << (64 * word);
  }
  return out;
}

MinuteBits minutes_of_day(std::span<const std::int64_t> minutes_ms, std::int64_t day_ms) {
  MinuteBits out;
  for (const std::int64_t m : minutes_ms) {
    if (m < day_ms || m >= day_ms + kDayMs) continue;
    out.set(static_cast<std::size_t>((m - day_ms) / kMinuteMs));
  }
  return out;
}

// ---- benchmark runs ----

void set_throttle_shares(GpuRun& g, const std::vector<std::uint64_t>& sample_bits) {
  constexpr std::uint64_t thermal =
      clock_event::sw_thermal_slowdown | clock_event::hw_thermal_slowdown | clock_event::hw_slowdown;
  constexpr std::uint64_t power = clock_event::sw_power_cap | clock_event::hw_power_brake_slowdown;
  g.thermal_share = g.power_share = g.throttled_share = 0;
  if (sample_bits.empty()) return;
  std::size_t t = 0, p = 0, any = 0;
  for (const auto bits : sample_bits) {
    t += (bits & thermal) != 0;
    p += (bits & power) != 0;
    any += (bits & (thermal | power)) != 0;
  }
  const auto n = static_cast<double>(sample_bits.size());
  g.thermal_share = static_cast<double>(t) / n;
  g.power_share = static_cast<double>(p) / n;
  g.throttled_share = static_cast<double>(any) / n;
}

double gpu_run_stability(const GpuRun& g, const Config& c) {
  const double ratio = g.baseline > 0 ? std::min(1.0, g.score / g.baseline) : 1.0;
  const double throttle = std::clamp(g.throttled_share, 0.0, 1.0) * c.throttle_penalty;
  return std::clamp(ratio * (1.0 - throttle), 0.0, 1.0);
}

std::optional<double> run_stability(const BenchRun& r, const Config& c) {
  if (r.gpus.empty()) return std::nullopt;
  double sum = 0;
  for (const auto& g : r.gpus) sum += gpu_run_stability(g, c);
  return sum / static_cast<double>(r.gpus.size());
}

// ---- events ----

std::string_view to_string(EventKind k) {
  switch (k) {
    case EventKind::offline:
      return "offline";
    case EventKind::job_failed:
      return "job_failed";
    case EventKind::benchmark_low:
      return "benchmark_low";
  }
  return "offline";
}

nlohmann::json to_json(const Event& e) {
  nlohmann::json j = {{"kind", to_string(e.kind)}, {"at_ms", e.at_ms}};
  switch (e.kind) {
    case EventKind::offline:
      j["end_ms"] = e.end_ms;
      j["minutes"] = e.minutes;
      if (e.late_declared_ms) j["late_declared_ms"] = *e.late_declared_ms;
      break;
    case EventKind::job_failed:
      j["ref"] = e.ref;
      j["reason"] = e.reason ? rental::to_string(*e.reason) : "";
      break;
    case EventKind::benchmark_low:
      j["ref"] = e.ref;
      j["ratio"] = e.ratio;
      j["thermal_share"] = e.thermal_share;
      j["power_share"] = e.power_share;
      j["stability"] = e.stability;
      break;
  }
  return j;
}

std::optional<Event> event_from_json(const nlohmann::json& j) {
  try {
    Event e;
    const std::string kind = j.at("kind").get<std::string>();
    e.at_ms = j.at("at_ms").get<std::int64_t>();
    if (kind == "offline") {
      e.kind = EventKind::offline;
      e.end_ms = j.at("end_ms").get<std::int64_t>();
      e.minutes = j.at("minutes").get<std::int64_t>();
      if (j.contains("late_declared_ms")) e.late_declared_ms = j["late_declared_ms"].get<std::int64_t>();
    } else if (kind == "job_failed") {
      e.kind = EventKind::job_failed;
      e.ref = j.at("ref").get<std::string>();
      auto r = rental::parse_end_reason(j.at("reason").get<std::string>());
      if (r) e.reason = *r;
    } else if (kind == "benchmark_low") {
      e.kind = EventKind::benchmark_low;
      e.ref = j.at("ref").get<std::string>();
      e.ratio = j.at("ratio").get<double>();
      e.thermal_share = j.at("thermal_share").get<double>();
      e.power_share = j.at("power_share").get<double>();
      e.stability = j.at("stability").get<double>();
    } else {
      return std::nullopt;
    }
    return e;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

// ---- a judged day ----

double Day::uptime() const {
  return counted_min > 0 ? static_cast<double>(present_min) / static_cast<double>(counted_min) : 1.0;
}

Day judge_day(const DayPlan& plan, const MinuteBits& present, std::int64_t registered_ms, std::int64_t until_ms,
              const std::vector<Job>& jobs, const std::vector<BenchRun>& runs, const Config& c) {
  Day d;
  const std::int64_t day = plan.day_ms;
  const std::int64_t day_end = day + kDayMs;
  const std::int64_t judged_end = std::min(until_ms, day_end);
  d.day_ms = day;
  d.full = registered_ms <= day;
  d.complete = until_ms >= day_end;
  // Minutes that started once the machine existed and ended by the time judged.
  const MinuteBits range = span(ceil_div(registered_ms - day, kMinuteMs), floor_div(judged_end - day, kMinuteMs));
  const MinuteBits counted = plan.scheduled & ~plan.excused & range;
  const MinuteBits missed = counted & ~present;
  d.counted_min = static_cast<std::int64_t>(counted.count());
  d.present_min = d.counted_min - static_cast<std::int64_t>(missed.count());
  d.excused_min = static_cast<std::int64_t>((plan.excused & range).count());

  if (missed.any()) {
    for (int m = 0; m < kMinutesPerDay;) {
      if (!missed[static_cast<std::size_t>(m)]) {
        ++m;
        continue;
      }
      int end = m;
      while (end < kMinutesPerDay && missed[static_cast<std::size_t>(end)]) ++end;
      Event e;
      e.kind = EventKind::offline;
      e.at_ms = day + m * kMinuteMs;
      e.end_ms = day + end * kMinuteMs;
      e.minutes = end - m;
      for (const auto& l : plan.late) {
        if (l.start_ms < e.end_ms && l.end_ms > e.at_ms) e.late_declared_ms = l.declared_ms;
      }
      d.events.push_back(std::move(e));
      m = end;
    }
  }
  for (const auto& j : jobs) {
    if (j.ended_ms < day || j.ended_ms >= judged_end) continue;
    ++d.jobs;
    if (!j.provider_side) {
      ++d.jobs_ok;
      continue;
    }
    Event e;
    e.kind = EventKind::job_failed;
    e.at_ms = j.ended_ms;
    e.ref = j.rental_id;
    e.reason = j.reason;
    d.events.push_back(std::move(e));
  }
  for (const auto& r : runs) {
    if (r.at_ms < day || r.at_ms >= judged_end) continue;
    const auto s = run_stability(r, c);
    if (!s) continue;
    ++d.runs;
    d.run_sum += *s;
    if (*s >= 1.0 - 1e-9) continue;
    // Told by its worst GPU.
    const auto worst = std::min_element(r.gpus.begin(), r.gpus.end(), [&](const GpuRun& a, const GpuRun& b) {
      return gpu_run_stability(a, c) < gpu_run_stability(b, c);
    });
    Event e;
    e.kind = EventKind::benchmark_low;
    e.at_ms = r.at_ms;
    e.ref = r.run_id;
    e.ratio = worst->baseline > 0 ? std::min(1.0, worst->score / worst->baseline) : 1.0;
    e.thermal_share = worst->thermal_share;
    e.power_share = worst->power_share;
    e.stability = *s;
    d.events.push_back(std::move(e));
  }
  std::stable_sort(d.events.begin(), d.events.end(), [](const Event& a, const Event& b) { return a.at_ms < b.at_ms; });
  return d;
}

// ---- the score ----

Score score_as_of(const std::vector<Day>& days, std::int64_t as_of_ms, const Config& c) {
  Score s;
  const std::int64_t today = day_of(as_of_ms);
  bool history = false;
  for (const auto& d : days) {
    const std::int64_t age = (today - d.day_ms) / kDayMs;
    if (d.day_ms > today || age >= c.window_days) continue;
    const double w = day_weight(age, c);
    s.w_present += w * static_cast<double>(d.present_min);
    s.w_counted += w * static_cast<double>(d.counted_min);
    s.present_min += d.present_min;
    s.counted_min += d.counted_min;
    s.excused_min += d.excused_min;
    s.w_jobs += w * static_cast<double>(d.jobs);
    s.w_jobs_ok += w * static_cast<double>(d.jobs_ok);
    s.jobs += d.jobs;
    s.jobs_ok += d.jobs_ok;
    s.w_runs += w * static_cast<double>(d.runs);
    s.w_run_sum += w * d.run_sum;
    s.runs += d.runs;
    if (d.full && d.complete && d.counted_min > 0) history = true;
  }
  s.uptime = s.w_counted > 0 ? s.w_present / s.w_counted : 1.0;
  const double prior_jobs = std::max(0.0, c.job_prior_count);
  s.job_completion = s.w_jobs + prior_jobs > 0 ? (s.w_jobs_ok + prior_jobs * c.job_prior_rate) / (s.w_jobs + prior_jobs)
                                               : c.job_prior_rate;
  s.stability_is_prior = !(s.w_runs > 0);
  s.stability = s.stability_is_prior ? c.stability_prior : s.w_run_sum / s.w_runs;
  const double total = weight_sum(c);
  s.formula =
      total > 0
          ? 100.0 * (c.weight_uptime * s.uptime + c.weight_jobs * s.job_completion + c.weight_stability * s.stability) /
                total
          : 100.0 * s.uptime;
  s.formula = std::clamp(s.formula, 0.0, 100.0);
  s.is_new = !history;
  s.score = s.is_new ? std::clamp(c.prior_score, 0.0, 100.0) : s.formula;
  return s;
}

double event_points(const Event& e, const Day& day, const Score& s, std::int64_t as_of_ms, const Config& c) {
  const std::int64_t age = (day_of(as_of_ms) - day.day_ms) / kDayMs;
  if (day.day_ms > day_of(as_of_ms) || age >= c.window_days) return 0;
  const double w = day_weight(age, c);
  const double total = weight_sum(c);
  if (total <= 0) return 0;
  switch (e.kind) {
    case EventKind::offline:
      return s.w_counted > 0 ? 100.0 * c.weight_uptime / total * w * static_cast<double>(e.minutes) / s.w_counted : 0;
    case EventKind::job_failed: {
      const double denominator = s.w_jobs + std::max(0.0, c.job_prior_count);
      return denominator > 0 ? 100.0 * c.weight_jobs / total * w / denominator : 0;
    }
    case EventKind::benchmark_low:
      return s.w_runs > 0 ? 100.0 * c.weight_stability / total * w * (1.0 - e.stability) / s.w_runs : 0;
  }
  return 0;
}

Recovery recovery(const std::vector<Day>& days, std::int64_t as_of_ms, const std::vector<std::int64_t>& future_counted,
                  const Config& c) {
  std::vector<Day> actual = days;
  std::vector<Day> clean = days;
  for (auto& d : clean) {
    d.present_min = d.counted_min;
    d.jobs_ok = d.jobs;
    d.run_sum = static_cast<double>(d.runs);
  }
  const std::int64_t today = day_of(as_of_ms);
  Recovery r;
  for (int k = 0; k <= c.window_days; ++k) {
    if (k > 0) {
      Day future;
      future.day_ms = today + k * kDayMs;
      future.full = future.complete = true;
      if (!future_counted.empty())
        future.counted_min =
            future_counted[std::min<std::size_t>(static_cast<std::size_t>(k - 1), future_counted.size() - 1)];
      future.present_min = future.counted_min;
      actual.push_back(future);
      clean.push_back(future);
    }
    const std::int64_t at = as_of_ms + k * kDayMs;
    const double lost = score_as_of(clean, at, c).formula - score_as_of(actual, at, c).formula;
    if (k == 0) r.points_lost = std::max(0.0, lost);
    if (lost < c.recovered_points) {
      r.days = k;
      return r;
    }
  }
  r.days = c.window_days;
  return r;
}

// ---- words ----

namespace {

std::string local_hhmm(const date::time_zone& zone, std::int64_t ms) {
  return date::format("%H:%M",
                      date::floor<std::chrono::minutes>(zone.to_local(date::sys_time<milliseconds>{milliseconds{ms}})));
}

std::string local_day(const date::time_zone& zone, std::int64_t ms) {
  return date::format("%a %d %b",
                      date::floor<std::chrono::minutes>(zone.to_local(date::sys_time<milliseconds>{milliseconds{ms}})));
}

std::string hours_text(std::int64_t ms) {
  const double h = static_cast<double>(ms) / 3'600'000.0;
  char buf[32];
  if (h < 1)
    std::snprintf(buf, sizeof buf, "%.0f min", h * 60);
  else
    std::snprintf(buf, sizeof buf, h < 10 ? "%.1f h" : "%.0f h", h);
  return buf;
}

}  // namespace

std::string describe(const Event& e, const date::time_zone& zone, double day_uptime, const Config& c) {
  switch (e.kind) {
    case EventKind::offline: {
      const bool same_day = local_day(zone, e.at_ms) == local_day(zone, e.end_ms - 1);
      const std::string when = same_day ? local_hhmm(zone, e.at_ms) + "–" + local_hhmm(zone, e.end_ms)
                                        : local_day(zone, e.at_ms) + " " + local_hhmm(zone, e.at_ms) + " – " +
                                              local_day(zone, e.end_ms) + " " + local_hhmm(zone, e.end_ms);
      std::string text = "Offline " + when + " (" + duration_text(e.minutes) + ") during scheduled hours";
      if (e.late_declared_ms) {
        text += ", in maintenance declared only " +
                hours_text(std::max<std::int64_t>(0, e.at_ms - *e.late_declared_ms)) + " ahead (" +
                hours_text(c.maintenance_notice_ms) + " notice needed)";
      }
      return text + ": uptime " + percent(day_uptime, 1) + " that day";
    }
    case EventKind::job_failed:
      return "Rental " + e.ref + " " + reason_words(e.reason.value_or(rental::EndReason::host_failure));
    case EventKind::benchmark_low: {
      std::string text = "Benchmark at " + percent(e.ratio, 0) + " of baseline";
      std::vector<std::string> parts;
      if (e.thermal_share > 0) parts.push_back("thermally throttled " + percent(e.thermal_share, 0));
      if (e.power_share > 0) parts.push_back("power capped " + percent(e.power_share, 0));
      if (!parts.empty()) {
        text += ", " + parts[0];
        if (parts.size() > 1) text += " and " + parts[1];
        text += " of the run";
      }
      return text;
    }
  }
  return "";
}

std::string advice(const Event& e) {
  switch (e.kind) {
    case EventKind::offline:
      if (e.late_declared_ms)
        return "Maintenance counts against uptime unless declared at least a day ahead: plan the next one earlier "
               "on the machine's schedule (Pricing → Schedule).";
      return "Keep the machine and its agent running during your scheduled hours: check power, network and that "
             "the gpunex-agent container restarts. For planned downtime declare a maintenance window at least a day "
             "ahead, or narrow the schedule.";
    case EventKind::job_failed:
      switch (e.reason.value_or(rental::EndReason::host_failure)) {
        case rental::EndReason::gpu_failure:
          return "Check the GPU: nvidia-smi, dmesg for Xid errors, temperatures and ECC errors; re-run the "
                 "benchmarks once it is healthy.";
        case rental::EndReason::agent_lost:
          return "Keep the machine online while rented: check its network and power, and that the agent restarts "
                 "on its own.";
        case rental::EndReason::provider_stopped:
          return "Stopping a customer's rental, or changing the schedule or maintenance so that it ends before "
                 "its offer said, counts against you: let rentals finish, and narrow the schedule for times you "
                 "need the GPUs back before they are rented.";
        default:
          return "Check the host's logs (out of memory, disk full, Docker) around the time the rental ended.";
      }
    case EventKind::benchmark_low:
      if (e.thermal_share >= e.power_share && e.thermal_share > 0)
        return "Improve cooling: check fans and airflow, the room temperature and dust filters; then re-run the "
               "benchmarks from the Benchmarks tab.";
      if (e.power_share > 0)
        return "Check the power limit (nvidia-smi -q -d POWER) and the power supply; then re-run the benchmarks.";
      return "Look for other processes on the GPU, the PCIe link width and the driver; then re-run the benchmarks "
             "from the Benchmarks tab.";
  }
  return "";
}

}  // namespace gpunex::core::reliability
