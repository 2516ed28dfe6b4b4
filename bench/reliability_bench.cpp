// gpunex-reliability-bench: the reliability score (core/reliability.hpp) of many machines, each with
// 30 days of per-minute presence, recomputed from scratch: every day planned against the machine's
// schedule (time zones with a DST change in the window, overnight windows, weekly and one-off
// maintenance), judged minute by minute with its rentals and benchmark runs, the score at the end of
// every day (the history) and now. Then, per machine, what the Performance endpoint adds: the
// recovery projection and every event in words. Prints per-machine times (thread CPU time: p50, p99,
// max), the time of the whole recompute on N threads (wall, and CPU time shared over the threads),
// and the peak memory; with --json, the same as JSON.
//
//   gpunex-reliability-bench [--machines 20000] [--threads 2] [--json FILE]
//
// With --store N: the worker's rounds on a real store instead (--db URL, default a SQLite file under
// /tmp): N machines, each with 60 days of presence rows; a round 30 days ago stores the older window's
// days (a machine that has run two windows has their rows: the round keeps two), then the first round
// (this window judged from presence_minute and stored) and the next ones a minute apart (today's new
// minutes only).

#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/reliability.hpp"
#include "core/rfc3339.hpp"
#include "core/schedule.hpp"
#include "server/reliability/reliability.hpp"
#include "store/store.hpp"

namespace cr = gpunex::core::reliability;
using gpunex::core::Schedule;

namespace {

constexpr int kDays = 30;

const std::int64_t kNow = gpunex::core::parse_rfc3339_ms("2026-04-10T15:37:00Z").value();  // Berlin's DST change
                                                                                           // (29 March) is in
                                                                                           // the window

Schedule parse(const char* json) {
  auto r = gpunex::core::parse_schedule(nlohmann::json::parse(json));
  if (!r) {
    std::fprintf(stderr, "bad schedule: %s\n", r.error().message.c_str());
    std::exit(2);
  }
  return std::move(r).value();
}

//! The kinds of schedule the machines have, with when their maintenance was declared.
struct Kind {
  Schedule schedule;
  std::vector<std::int64_t> declared;
};

std::vector<Kind> kinds() {
  std::vector<Kind> k;
  k.push_back({gpunex::core::always_available(), {}});
  k.push_back({parse(R"({"timezone": "Europe/Berlin", "always": false,
    "windows": [{"days": ["mon","tue","wed","thu","fri"], "start": "08:00", "end": "20:00"},
                {"days": ["sat"], "start": "10:00", "end": "16:00"}],
    "maintenance": [{"category": "software", "recurrence": {"days": ["wed"]}, "start": "02:00", "end": "04:00"}]})"),
               {kNow - 60LL * cr::kDayMs}});
  k.push_back({parse(R"({"timezone": "America/New_York", "always": false,
    "windows": [{"days": ["mon","tue","wed","thu","fri","sat","sun"], "start": "18:00", "end": "08:00"}]})"),
               {}});
  k.push_back({parse(R"({"timezone": "Asia/Tokyo", "always": true,
    "maintenance": [{"category": "power", "start": "2026-03-20T01:00:00Z", "end": "2026-03-20T05:00:00Z"},
                    {"category": "network", "recurrence": {"nth": 1, "weekday": "sun"}, "start": "00:00", "end": "06:00"}]})"),
               {kNow - 90LL * cr::kDayMs, kNow - 90LL * cr::kDayMs}});
  return k;
}

//! One machine's inputs: its presence minutes over the window, rentals, runs.
struct Machine {
  const Kind* kind = nullptr;
  std::int64_t registered_ms = 0;
  std::vector<std::int64_t> presence;  // minute starts, sorted
  std::vector<cr::Job> jobs;
  std::vector<cr::BenchRun> runs;
};

Machine make_machine(std::size_t i, const std::vector<Kind>& ks) {
  std::mt19937_64 rng(0x5eed + i);
  std::uniform_real_distribution<double> u(0, 1);
  Machine m;
  m.kind = &ks[i % ks.size()];
  const std::int64_t first_day = cr::day_of(kNow) - (kDays - 1) * cr::kDayMs;
  m.registered_ms = first_day - 10 * cr::kDayMs;
  m.presence.reserve(kDays * cr::kMinutesPerDay);
  for (std::int64_t d = first_day; d <= cr::day_of(kNow); d += cr::kDayMs) {
    // Now and then an outage of minutes to hours; rarely a whole day.
    std::int64_t down_from = -1, down_to = -1;
    const double roll = u(rng);
    if (roll < 0.02) {
      down_from = 0;
      down_to = cr::kMinutesPerDay;
    } else if (roll < 0.15) {
      down_from = static_cast<std::int64_t>(u(rng) * 1300);
      down_to = down_from + 5 + static_cast<std::int64_t>(u(rng) * 295);
    }
    for (std::int64_t minute = 0; minute < cr::kMinutesPerDay; ++minute) {
      const std::int64_t t = d + minute * cr::kMinuteMs;
      if (t + cr::kMinuteMs > kNow) break;
      if (minute >= down_from && minute < down_to) continue;
      m.presence.push_back(t);
    }
    for (int j = 0, n = static_cast<int>(u(rng) * 2); j < n; ++j) {
      const bool failed = u(rng) < 0.05;
      m.jobs.push_back(
          {"r_" + std::to_string(i) + "_" + std::to_string(m.jobs.size()),
           d + static_cast<std::int64_t>(u(rng) * cr::kDayMs),
           failed ? gpunex::core::rental::EndReason::gpu_failure : gpunex::core::rental::EndReason::customer_stopped,
           failed});
    }
  }
  for (std::int64_t at = first_day + static_cast<std::int64_t>(u(rng) * 7 * cr::kDayMs); at < kNow;
       at += 7 * cr::kDayMs) {
    cr::BenchRun r;
    r.run_id = "bench_" + std::to_string(i) + "_" + std::to_string(m.runs.size());
    r.at_ms = at;
    for (int g = 0, n = 1 + static_cast<int>(u(rng) * 8); g < n; ++g) {
      cr::GpuRun gr;
      gr.uuid = "GPU-" + std::to_string(g);
      gr.index = g;
      gr.baseline = 100;
      gr.score = 92 + u(rng) * 10;
      gr.thermal_share = u(rng) < 0.1 ? u(rng) * 0.3 : 0;
      gr.throttled_share = gr.thermal_share;
      r.gpus.push_back(std::move(gr));
    }
    m.runs.push_back(std::move(r));
  }
  return m;
}

struct Timing {
  double recompute_us = 0;  // 30 days judged, the history's scores and the score now
  double endpoint_us = 0;   // the recovery projection and every event in words
  double score = 0;
};

//! This thread's CPU time: a per-machine figure that a crowded host's preemptions do not inflate.
struct ThreadCpuClock {
  using duration = std::chrono::nanoseconds;
  using time_point = std::chrono::time_point<ThreadCpuClock, duration>;
  static time_point now() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return time_point(duration(std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec));
  }
};

Timing score_machine(const Machine& m, const cr::Config& c) {
  using clock = ThreadCpuClock;
  const auto t0 = clock::now();
  std::vector<cr::Day> days;
  days.reserve(kDays);
  const std::int64_t today = cr::day_of(kNow);
  for (std::int64_t d = today - (kDays - 1) * cr::kDayMs; d <= today; d += cr::kDayMs) {
    const auto plan = cr::plan_day(m.kind->schedule, m.kind->declared, d, c);
    const auto lo = std::lower_bound(m.presence.begin(), m.presence.end(), d);
    const auto hi = std::lower_bound(lo, m.presence.end(), d + cr::kDayMs);
    const auto present = cr::minutes_of_day(
        std::span<const std::int64_t>(m.presence)
            .subspan(static_cast<std::size_t>(lo - m.presence.begin()), static_cast<std::size_t>(hi - lo)),
        d);
    days.push_back(cr::judge_day(plan, present, m.registered_ms, kNow, m.jobs, m.runs, c));
  }
  double check = 0;
  for (const auto& d : days) check += cr::score_as_of(days, std::min(kNow, d.day_ms + cr::kDayMs - 1), c).score;
  const auto now = cr::score_as_of(days, kNow, c);
  const auto t1 = clock::now();
  std::vector<std::int64_t> future;
  for (int k = 1; k <= kDays; ++k) {
    const auto plan = cr::plan_day(m.kind->schedule, m.kind->declared, today + k * cr::kDayMs, c);
    future.push_back(static_cast<std::int64_t>((plan.scheduled & ~plan.excused).count()));
  }
  const auto rec = cr::recovery(days, kNow, future, c);
  std::size_t words = 0;
  for (const auto& d : days)
    for (const auto& e : d.events)
      words += cr::describe(e, *m.kind->schedule.zone, d.uptime(), c).size() + cr::advice(e).size();
  const auto t2 = clock::now();
  Timing t;
  t.recompute_us = std::chrono::duration<double, std::micro>(t1 - t0).count();
  t.endpoint_us = std::chrono::duration<double, std::micro>(t2 - t1).count();
  t.score = now.score + 0 * (check + rec.days + static_cast<double>(words));
  return t;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(
      std::min<double>(static_cast<double>(v.size() - 1), p / 100.0 * static_cast<double>(v.size())));
  return v[i];
}

long peak_rss_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

//! The worker's rounds against a store of `n` machines with two windows (60 days) of presence each.
int store_rounds(std::size_t n, std::string db) {
  const bool temp = db.empty();
  if (temp) db = "sqlite:/tmp/gpunex-reliability-bench-" + std::to_string(::getpid()) + ".db";
  auto st = gpunex::store::open_store(db);
  gpunex::store::migrate(*st);
  const std::int64_t first_day = cr::day_of(kNow) - (2 * kDays - 1) * cr::kDayMs;
  const auto fill_start = std::chrono::steady_clock::now();
  st->transact([&](gpunex::store::Tx& tx) {
    tx.exec("INSERT INTO users (id, email, full_name, password_hash, created_at, email_verified_at) VALUES ('u1', 'p@x', 'P', 'x', 0, 0)");
    tx.exec(
        "INSERT INTO applications (id, user_id, status, form, created_at, updated_at) VALUES ('a1', 'u1', "
        "'approved', '{}', 0, 0)");
    tx.exec(
        "INSERT INTO providers (id, user_id, application_id, tier, created_at) VALUES ('p1', 'u1', 'a1', "
        "'community', 0)");
  });
  for (std::size_t i = 0; i < n; ++i) {
    st->transact([&](gpunex::store::Tx& tx) {
      const std::string id = "m" + std::to_string(100000 + i);
      tx.exec(
          "INSERT INTO machines (id, provider_id, fingerprint, hostname, host, simulated, agent_version, "
          "protocol_version, status, driver_version, cuda_version, created_at, registered_at, last_seen_at, "
          "last_seq) VALUES (?, 'p1', ?, 'h', '{}', 1, '0.1.0', 1, 'online', '550', '12.4', ?, ?, 0, 0)",
          {id, id, first_day - cr::kDayMs, first_day - cr::kDayMs});
      // Every minute up to now, but an outage of a few hours on one day in ten.
      const std::int64_t out_from = first_day + static_cast<std::int64_t>(i % 20) * 3 * cr::kDayMs + 7 * 3'600'000;
      tx.exec(
          "INSERT INTO presence_minute (machine_id, minute, beats) WITH RECURSIVE t(m) AS (SELECT ? UNION ALL "
          "SELECT m + 60000 FROM t WHERE m + 60000 < ?) SELECT ?, m, 1 FROM t WHERE m < ? OR m >= ?",
          {first_day, kNow - cr::kMinuteMs, id, out_from, out_from + 3 * 3'600'000});
    });
  }
  const double fill_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - fill_start).count();
  const gpunex::server::reliability::JobSource no_rentals = [](gpunex::store::Tx&, const std::string&, std::int64_t) {
    return std::vector<cr::Job>{};
  };
  gpunex::server::reliability::Settings settings;
  const auto round = [&](std::int64_t now) {
    const auto a = std::chrono::steady_clock::now();
    gpunex::server::reliability::run_round(*st, no_rentals, settings, now);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
  };
  round(kNow - kDays * cr::kDayMs);  // the older window's days, as thirty days of rounds would have left them
  const double first = round(kNow);
  // The next rounds, a minute apart: each has only its minute's presence to judge (the median of ten: one
  // round of a hundred machines takes about 10 ms).
  std::vector<double> nexts;
  for (int k = 1; k <= 10; ++k) nexts.push_back(round(kNow + k * cr::kMinuteMs));
  const double next = percentile(nexts, 50);
  std::printf("reliability worker on %s: %zu machines with 60 days of presence rows (filled in %.1f s)\n",
              st->describe().c_str(), n, fill_s);
  std::printf("  first round (30 days judged from presence, stored): %.2f s, %.2f ms a machine\n", first,
              first * 1000 / static_cast<double>(n));
  std::printf("  next round (a minute later: today's new minutes):   %.3f s, %.3f ms a machine (median of 10)\n", next,
              next * 1000 / static_cast<double>(n));
  std::printf("  peak memory %.1f MiB\n", static_cast<double>(peak_rss_kib()) / 1024.0);
  st.reset();
  if (temp) {
    const std::string path = db.substr(7);
    for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t machines = 20000;
  unsigned threads = 2;
  std::string json_path;
  std::size_t store_machines = 0;
  std::string db;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--store" && i + 1 < argc) {
      store_machines = std::stoul(argv[++i]);
      continue;
    }
    if (a == "--db" && i + 1 < argc) {
      db = argv[++i];
      continue;
    }
    if (a == "--machines" && i + 1 < argc)
      machines = std::stoul(argv[++i]);
    else if (a == "--threads" && i + 1 < argc)
      threads = static_cast<unsigned>(std::stoul(argv[++i]));
    else if (a == "--json" && i + 1 < argc)
      json_path = argv[++i];
    else {
      std::fprintf(stderr, "usage: %s [--machines N] [--threads T] [--json FILE] | --store N [--db URL]\n", argv[0]);
      return 2;
    }
  }
  if (store_machines > 0) return store_rounds(store_machines, db);
  const auto ks = kinds();
  const cr::Config c;
  std::vector<Timing> timings(machines);
  std::atomic<std::size_t> next{0};
  std::atomic<std::int64_t> present_minutes{0};
  // Each thread makes a machine's inputs (not timed), scores it (timed), and drops it: the memory
  // is one machine's inputs per thread, as in the worker's rounds.
  const auto started = std::chrono::steady_clock::now();
  std::atomic<std::int64_t> busy_ns{0};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < std::max(1u, threads); ++t) {
    pool.emplace_back([&] {
      for (std::size_t i = next++; i < machines; i = next++) {
        const Machine m = make_machine(i, ks);
        present_minutes += static_cast<std::int64_t>(m.presence.size());
        const auto a = ThreadCpuClock::now();
        timings[i] = score_machine(m, c);
        busy_ns += (ThreadCpuClock::now() - a).count();
      }
    });
  }
  for (auto& t : pool) t.join();
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  std::vector<double> recompute, endpoint, both;
  double score_sum = 0;
  for (const auto& t : timings) {
    recompute.push_back(t.recompute_us);
    endpoint.push_back(t.endpoint_us);
    both.push_back(t.recompute_us + t.endpoint_us);
    score_sum += t.score;
  }
  const double scoring_s = static_cast<double>(busy_ns.load()) / 1e9 / std::max(1u, threads);
  std::printf("reliability: %zu machines, %d days of minute presence each (%.1f M present minutes), %u thread(s)\n",
              machines, kDays, static_cast<double>(present_minutes.load()) / 1e6, threads);
  std::printf("  %-44s %10s %10s %10s\n", "per machine (µs)", "p50", "p99", "max");
  std::printf("  %-44s %10.0f %10.0f %10.0f\n", "full recompute (30 days, history, score)", percentile(recompute, 50),
              percentile(recompute, 99), percentile(recompute, 100));
  std::printf("  %-44s %10.0f %10.0f %10.0f\n", "endpoint extras (recovery, event words)", percentile(endpoint, 50),
              percentile(endpoint, 99), percentile(endpoint, 100));
  std::printf("  %-44s %10.0f %10.0f %10.0f\n", "one machine, all of it", percentile(both, 50), percentile(both, 99),
              percentile(both, 100));
  std::printf(
      "  scoring time, all machines: %.2f s CPU per thread on %u thread(s) (wall %.2f s with making the "
      "inputs); peak memory %.1f MiB; mean score %.2f\n",
      scoring_s, threads, wall_s, static_cast<double>(peak_rss_kib()) / 1024.0,
      score_sum / static_cast<double>(machines));
  const bool ok = scoring_s < 60 && percentile(both, 99) < 5000;
  std::printf("  targets: full recompute under 60 s on 2 cores, one machine under 5 ms: %s\n", ok ? "met" : "MISSED");
  if (!json_path.empty()) {
    nlohmann::json j = {
        {"machines", machines},
        {"days", kDays},
        {"threads", threads},
        {"present_minutes", present_minutes.load()},
        {"recompute_us",
         {{"p50", percentile(recompute, 50)}, {"p99", percentile(recompute, 99)}, {"max", percentile(recompute, 100)}}},
        {"endpoint_us",
         {{"p50", percentile(endpoint, 50)}, {"p99", percentile(endpoint, 99)}, {"max", percentile(endpoint, 100)}}},
        {"machine_us", {{"p50", percentile(both, 50)}, {"p99", percentile(both, 99)}, {"max", percentile(both, 100)}}},
        {"scoring_s", scoring_s},
        {"wall_s", wall_s},
        {"peak_rss_mib", static_cast<double>(peak_rss_kib()) / 1024.0},
        {"targets_met", ok}};
    std::ofstream(json_path) << j.dump(2) << "\n";
  }
  return ok ? 0 : 1;
}
