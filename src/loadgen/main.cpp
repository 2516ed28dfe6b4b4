// gpunex-loadgen: simulates N agents against a server from one process.
//
// Every simulated agent registers a machine (unique fingerprint, host facts,
// 1-8 GPUs of catalog models) and then heartbeats every interval with
// telemetry and an increasing seq; the agents' heartbeats are spread evenly
// over the interval. All requests go through one curl_multi handle on one
// thread with a pool of C keep-alive connections, so 20,000 agents need no
// thread per agent. Latency is measured per request, from the moment the
// request is handed to libcurl to its completion.

#include <curl/curl.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "gpu/sim/sim_catalog.hpp"
#include "protocol/heartbeat.hpp"
#include "protocol/register.hpp"
#include "util/clock.hpp"

namespace {

using Clock = std::chrono::steady_clock;
namespace sim = gpunex::gpu::sim;

const char* kCpus[] = {"AMD EPYC 9654 96-Core Processor", "AMD EPYC 7763 64-Core Processor",
                       "Intel(R) Xeon(R) Platinum 8480+", "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz",
                       "AMD Ryzen Threadripper PRO 5975WX 32-Cores"};
const int kCpuCores[] = {192, 128, 112, 64, 32};
const char* kOs[] = {"Ubuntu 22.04.4 LTS", "Ubuntu 24.04.1 LTS", "Debian GNU/Linux 12 (bookworm)",
                     "Rocky Linux 9.4 (Blue Onyx)"};
const char* kKernels[] = {"5.15.0-117-generic", "6.8.0-45-generic", "6.1.0-25-amd64", "5.14.0-427.el9.x86_64"};

struct Gpu {
  int model = 0;
  std::string uuid;
  int mem_used_mib = 0;
  double power_w = 0;
  int util = 0;
  int temp = 40;
};

struct Agent {
  std::string fingerprint;
  std::string machine_id;
  std::vector<Gpu> gpus;
  gpunex::protocol::HostInfo host;
  std::int64_t seq = 0;
  bool registered = false;
};

struct Stats {
  std::vector<double> latencies_ms;
  std::uint64_t ok = 0;
  std::uint64_t errors = 0;
  std::uint64_t transport_errors = 0;
  std::uint64_t http_errors = 0;
  std::uint64_t missed = 0;  // beats that fell due but were never sent (every connection busy)
  std::string first_error;

  double pct(double p) {
    if (latencies_ms.empty()) return 0;
    std::sort(latencies_ms.begin(), latencies_ms.end());
    const auto i = static_cast<std::size_t>(p / 100.0 * static_cast<double>(latencies_ms.size() - 1) + 0.5);
    return latencies_ms[std::min(i, latencies_ms.size() - 1)];
  }
};

enum class Kind { reg, heartbeat };

struct Slot {
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  std::string body;
  std::string reply;
  std::size_t agent = 0;
  Kind kind = Kind::reg;
  Clock::time_point started;
  bool busy = false;
  bool measured = false;
};

std::size_t on_write(char* data, std::size_t size, std::size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

class LoadGen {
 public:
  LoadGen(std::string server, std::string api_key, std::size_t agents, int connections, std::uint64_t seed)
      : server_(std::move(server)), rng_(seed), agents_(agents) {
    while (!server_.empty() && server_.back() == '/') server_.pop_back();
    multi_ = curl_multi_init();
    curl_multi_setopt(multi_, CURLMOPT_MAX_TOTAL_CONNECTIONS, static_cast<long>(connections));
    curl_multi_setopt(multi_, CURLMOPT_MAX_HOST_CONNECTIONS, static_cast<long>(connections));
    curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS, static_cast<long>(connections));
    slots_.resize(static_cast<std::size_t>(connections));
    const std::string auth = "Authorization: Bearer " + api_key;
    for (auto& s : slots_) {
      s.easy = curl_easy_init();
      s.headers = curl_slist_append(s.headers, auth.c_str());
      s.headers = curl_slist_append(s.headers, "Content-Type: application/json");
      s.headers = curl_slist_append(s.headers, "Expect:");
      curl_easy_setopt(s.easy, CURLOPT_HTTPHEADER, s.headers);
      curl_easy_setopt(s.easy, CURLOPT_WRITEFUNCTION, on_write);
      curl_easy_setopt(s.easy, CURLOPT_WRITEDATA, &s.reply);
      curl_easy_setopt(s.easy, CURLOPT_PRIVATE, &s);
      curl_easy_setopt(s.easy, CURLOPT_TIMEOUT_MS, 30000L);
      curl_easy_setopt(s.easy, CURLOPT_NOSIGNAL, 1L);
      curl_easy_setopt(s.easy, CURLOPT_TCP_NODELAY, 1L);
      curl_easy_setopt(s.easy, CURLOPT_TCP_KEEPALIVE, 1L);
      free_.push_back(&s);
    }
    const std::uint64_t run = rng_();
    char run_id[20];
    std::snprintf(run_id, sizeof run_id, "%08" PRIx64, run & 0xffffffffu);
    for (std::size_t i = 0; i < agents_.size(); ++i) make_agent(agents_[i], run_id, i);
  }

  ~LoadGen() {
    for (auto& s : slots_) {
      if (s.busy) curl_multi_remove_handle(multi_, s.easy);
      curl_easy_cleanup(s.easy);
      curl_slist_free_all(s.headers);
    }
    curl_multi_cleanup(multi_);
  }

  //! Registers every agent, C at a time; returns the seconds it took.
  double register_all(Stats& st) {
    const auto t0 = Clock::now();
    std::size_t next = 0;
    auto last_report = t0;
    while (!g_stop) {
      while (next < agents_.size() && !free_.empty()) send(next++, Kind::reg, true);
      if (next >= agents_.size() && free_.size() == slots_.size()) break;
      pump(st, 100);
      if (Clock::now() - last_report > std::chrono::seconds(5)) {
        last_report = Clock::now();
        std::fprintf(stderr, "loadgen: registering %zu/%zu (%" PRIu64 " errors)\n", next, agents_.size(), st.errors);
      }
    }
    return std::chrono::duration<double>(Clock::now() - t0).count();
  }

  //! Heartbeats for `duration_s`; agent i's k-th beat is due at start + k*interval + i*interval/N.
  double heartbeat(double interval_s, double duration_s, Stats& st, double& max_lag_ms) {
    const auto t0 = Clock::now();
    const auto end = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(duration_s));
    const double step = interval_s / static_cast<double>(agents_.size());
    std::uint64_t k = 0;  // beats scheduled so far (over all agents)
    std::deque<std::pair<std::size_t, Clock::time_point>> due;
    auto last_report = t0;
    std::uint64_t last_ok = 0;
    while (!g_stop) {
      const auto now = Clock::now();
      if (now >= end) break;
      for (;;) {
        const auto at = t0 + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(static_cast<double>(k) * step));
        if (at > now || at >= end) break;
        const std::size_t i = k % agents_.size();
        ++k;
        if (agents_[i].registered) due.emplace_back(i, at);
      }
      while (!due.empty() && !free_.empty()) {
        const double lag = std::chrono::duration<double, std::milli>(now - due.front().second).count();
        max_lag_ms = std::max(max_lag_ms, lag);
        send(due.front().first, Kind::heartbeat, true);
        due.pop_front();
      }
      pump(st, 5);
      if (now - last_report > std::chrono::seconds(5)) {
        const double secs = std::chrono::duration<double>(now - last_report).count();
        std::fprintf(stderr, "loadgen: %.0f heartbeats/s, %" PRIu64 " errors, %zu queued\n",
                     static_cast<double>(st.ok - last_ok) / secs, st.errors, due.size());
        last_report = now;
        last_ok = st.ok;
      }
    }
    // Drain what is in flight so every sent beat is counted.
    const auto drain_end = Clock::now() + std::chrono::seconds(30);
    while (free_.size() != slots_.size() && Clock::now() < drain_end) pump(st, 100);
    st.missed += due.size();  // due but never sent: the server did not keep up over C connections
    return std::chrono::duration<double>(Clock::now() - t0).count();
  }

  std::size_t registered() const {
    return static_cast<std::size_t>(
        std::count_if(agents_.begin(), agents_.end(), [](const Agent& a) { return a.registered; }));
  }

 private:
  template <class T>
  T pick(const T* arr, std::size_t n) {
    return arr[rng_() % n];
  }
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  void make_agent(Agent& a, const char* run_id, std::size_t i) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "loadgen-%s-%08zx-%016" PRIx64, run_id, i, static_cast<std::uint64_t>(rng_()));
    a.fingerprint = buf;
    const std::size_t ci = rng_() % std::size(kCpus);
    const int model = static_cast<int>(rng_() % sim::catalog().size());
    static const int kCounts[] = {1, 1, 2, 2, 4, 4, 8, 8, 8, 3, 6};
    const int n = kCounts[rng_() % std::size(kCounts)];
    const int vram = static_cast<int>(sim::catalog()[model].vram_gib) * n;
    std::snprintf(buf, sizeof buf, "gpu-node-%s-%05zu", run_id, i);
    a.host.hostname = buf;
    a.host.cpu_model = kCpus[ci];
    a.host.cpu_cores = kCpuCores[ci];
    a.host.ram_mib = std::max(65536, vram * 2 * 1024);
    a.host.disk_free_mib = uniform(500, 8000) * 1024;
    a.host.os = pick(kOs, std::size(kOs));
    a.host.kernel = pick(kKernels, std::size(kKernels));
    a.host.docker_version = "27.3.1";
    for (int g = 0; g < n; ++g) {
      Gpu gpu;
      gpu.model = model;
      std::snprintf(buf, sizeof buf, "GPU-%08x-%04x-%04x-%04x-%012" PRIx64, static_cast<unsigned>(rng_()),
                    static_cast<unsigned>(rng_() & 0xffff), static_cast<unsigned>(rng_() & 0xffff),
                    static_cast<unsigned>(rng_() & 0xffff), static_cast<std::uint64_t>(rng_() & 0xffffffffffffULL));
      gpu.uuid = buf;
      gpu.util = uniform(0, 100);
      a.gpus.push_back(std::move(gpu));
    }
  }

  std::string register_body(const Agent& a) {
    gpunex::protocol::RegisterRequest req;
    req.agent_version = "0.1.0-loadgen";
    req.machine_fingerprint = a.fingerprint;
    req.host = a.host;
    req.simulated = true;
    for (std::size_t g = 0; g < a.gpus.size(); ++g) {
      const sim::CatalogEntry& m = sim::catalog()[a.gpus[g].model];
      char bus[32];
      std::snprintf(bus, sizeof bus, "00000000:%02zX:00.0", 0x18 + g * 0x10);
      char serial[32];
      std::snprintf(serial, sizeof serial, "13240%08u", static_cast<unsigned>(rng_() % 100000000));
      gpunex::protocol::GpuInfo info;
      info.index = static_cast<std::int64_t>(g);
      info.uuid = a.gpus[g].uuid;
      info.name = m.nvml_name;
      info.serial = serial;
      info.memory_mib = m.memory_mib;
      info.driver_version = "550.90.07";
      info.cuda_version = "12.4";
      info.pci_bus_id = bus;
      info.pcie_gen_current = info.pcie_gen_max = m.pcie_gen;
      info.pcie_width_current = info.pcie_width_max = 16;
      info.power_limit_w = m.tdp_w;
      info.compute_capability = m.compute_capability;
      req.gpus.push_back(std::move(info));
    }
    return req.to_json().dump();
  }

  std::string heartbeat_body(Agent& a) {
    gpunex::protocol::HeartbeatRequest hb;
    hb.machine_id = a.machine_id;
    hb.seq = ++a.seq;
    hb.sent_at_ms = gpunex::util::system_now_ms();
    for (std::size_t g = 0; g < a.gpus.size(); ++g) {
      Gpu& gpu = a.gpus[g];
      const sim::CatalogEntry& m = sim::catalog()[gpu.model];
      // A random walk of utilisation; the rest follows from it.
      gpu.util = std::clamp(gpu.util + uniform(-15, 15), 0, 100);
      const int mem = static_cast<int>(m.memory_mib);
      gpu.mem_used_mib = gpu.util == 0 ? 0 : std::min(mem, mem * std::min(100, gpu.util + 20) / 100);
      gpu.power_w = static_cast<double>(m.tdp_w) * (0.1 + 0.85 * gpu.util / 100.0);
      gpu.temp = 32 + gpu.util / 2 + uniform(0, 4);
      gpunex::protocol::TelemetrySample s;
      s.index = static_cast<std::int64_t>(g);
      s.uuid = gpu.uuid;
      s.at_ms = *hb.sent_at_ms;
      s.memory_used_mib = gpu.mem_used_mib;
      s.temperature_c = gpu.temp;
      s.power_w = static_cast<double>(static_cast<int>(gpu.power_w * 10)) / 10.0;
      s.power_limit_w = m.tdp_w;
      s.util_gpu_pct = gpu.util;
      s.util_mem_pct = gpu.util * 3 / 4;
      s.sm_clock_mhz = gpu.util > 0 ? m.max_sm_clock_mhz : 210;
      s.mem_clock_mhz = gpu.util > 0 ? m.mem_clock_mhz : 405;
      if (gpu.util > 95 && uniform(0, 3) == 0) s.clock_events.push_back("sw_power_cap");
      s.ecc_corrected = 0;
      s.ecc_uncorrected = 0;
      hb.telemetry.push_back(std::move(s));
    }
    return hb.to_json().dump();
  }

  void send(std::size_t agent, Kind kind, bool measured) {
    Slot* s = free_.back();
    free_.pop_back();
    s->agent = agent;
    s->kind = kind;
    s->measured = measured;
    s->reply.clear();
    s->body = kind == Kind::reg ? register_body(agents_[agent]) : heartbeat_body(agents_[agent]);
    const std::string url = server_ + (kind == Kind::reg ? "/v1/agent/register" : "/v1/agent/heartbeat");
    curl_easy_setopt(s->easy, CURLOPT_URL, url.c_str());
    curl_easy_setopt(s->easy, CURLOPT_POSTFIELDS, s->body.c_str());
    curl_easy_setopt(s->easy, CURLOPT_POSTFIELDSIZE, static_cast<long>(s->body.size()));
    s->busy = true;
    s->started = Clock::now();
    curl_multi_add_handle(multi_, s->easy);
  }

  //! Runs libcurl for up to `wait_ms` and books every finished request.
  void pump(Stats& st, int wait_ms) {
    int running = 0;
    curl_multi_perform(multi_, &running);
    int numfds = 0;
    curl_multi_poll(multi_, nullptr, 0, wait_ms, &numfds);
    curl_multi_perform(multi_, &running);
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi_, &left)) {
      if (msg->msg != CURLMSG_DONE) continue;
      Slot* s = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, reinterpret_cast<char**>(&s));
      const auto done = Clock::now();
      const CURLcode rc = msg->data.result;
      curl_multi_remove_handle(multi_, s->easy);
      s->busy = false;
      long status = 0;
      curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &status);
      Agent& a = agents_[s->agent];
      bool ok = rc == CURLE_OK && status == 200;
      if (ok && s->kind == Kind::reg) {
        auto j = nlohmann::json::parse(s->reply, nullptr, false);
        if (j.is_object() && j.contains("machine_id") && j["machine_id"].is_string()) {
          a.machine_id = j["machine_id"].get<std::string>();
          a.registered = true;
        } else {
          ok = false;
        }
      }
      if (ok) {
        ++st.ok;
        if (s->measured) st.latencies_ms.push_back(std::chrono::duration<double, std::milli>(done - s->started).count());
      } else {
        ++st.errors;
        if (rc != CURLE_OK) ++st.transport_errors; else ++st.http_errors;
        if (st.first_error.empty()) {
          st.first_error = rc != CURLE_OK ? std::string(curl_easy_strerror(rc))
                                          : "HTTP " + std::to_string(status) + " " + s->reply.substr(0, 300);
        }
      }
      free_.push_back(s);
    }
  }

  std::string server_;
  std::mt19937_64 rng_;
  std::vector<Agent> agents_;
  CURLM* multi_ = nullptr;
  std::vector<Slot> slots_;
  std::vector<Slot*> free_;
};

//! What one run measured: registration, then the heartbeat phase.
struct RunResult {
  std::size_t agents = 0;
  int connections = 0;
  double interval_s = 0;
  std::size_t registered = 0;
  Stats reg;
  double reg_s = 0;
  Stats hb;
  double hb_s = 0;
  double max_lag_ms = 0;

  double rate() const { return hb_s > 0 ? static_cast<double>(hb.ok) / hb_s : 0; }
  double target() const { return static_cast<double>(registered) / interval_s; }
};

void print_registration(RunResult& r) {
  std::printf("registration: %zu/%zu machines in %.1f s (%.0f/s), p50 %.1f ms, p99 %.1f ms, %" PRIu64 " errors%s%s\n",
              r.registered, r.agents, r.reg_s, static_cast<double>(r.registered) / r.reg_s, r.reg.pct(50),
              r.reg.pct(99), r.reg.errors, r.reg.first_error.empty() ? "" : "; first: ", r.reg.first_error.c_str());
  std::fflush(stdout);
}

void print_heartbeats(RunResult& r) {
  Stats& hb = r.hb;
  std::printf("heartbeats: %" PRIu64 " in %.1f s = %.0f/s (target %.0f/s), p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, "
              "max %.1f ms, %" PRIu64 " errors, %" PRIu64 " beats due but never sent, max send lag %.0f ms%s%s\n",
              hb.ok, r.hb_s, r.rate(), r.target(), r.hb.pct(50), r.hb.pct(90), r.hb.pct(99), r.hb.pct(100), hb.errors,
              hb.missed, r.max_lag_ms, hb.first_error.empty() ? "" : "; first: ", hb.first_error.c_str());
}

//! The whole run as one JSON object (--json).
void print_json(RunResult& r) {
  nlohmann::json out = {
      {"agents", r.agents},
      {"connections", r.connections},
      {"interval_s", r.interval_s},
      {"registration",
       {{"registered", r.registered},
        {"seconds", r.reg_s},
        {"errors", r.reg.errors},
        {"p50_ms", r.reg.pct(50)},
        {"p99_ms", r.reg.pct(99)},
        {"first_error", r.reg.first_error}}},
      {"heartbeats",
       {{"seconds", r.hb_s},
        {"ok", r.hb.ok},
        {"errors", r.hb.errors},
        {"transport_errors", r.hb.transport_errors},
        {"http_errors", r.hb.http_errors},
        {"missed", r.hb.missed},
        {"per_second", r.rate()},
        {"target_per_second", r.target()},
        {"p50_ms", r.hb.pct(50)},
        {"p90_ms", r.hb.pct(90)},
        {"p99_ms", r.hb.pct(99)},
        {"max_ms", r.hb.pct(100)},
        {"max_send_lag_ms", r.max_lag_ms},
        {"first_error", r.hb.first_error}}}};
  std::printf("%s\n", out.dump().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gpunex-loadgen: simulates N agents (register, then heartbeats) against a gpunex-server"};
  std::string server;
  std::string api_key;
  RunResult r;
  r.agents = 100;
  r.interval_s = 15;
  r.connections = 64;
  double duration = 60;
  bool json = false;
  std::uint64_t seed = std::random_device{}();
  app.add_option("--server", server, "server URL, e.g. http://127.0.0.1:8080")->required();
  app.add_option("--api-key", api_key, "a provider API key (gpx_...)")->envname("GPUNEX_API_KEY")->required();
  app.add_option("--agents", r.agents, "simulated agents")->check(CLI::Range(1, 1000000));
  app.add_option("--interval", r.interval_s, "seconds between an agent's heartbeats")->check(CLI::Range(0.01, 3600.0));
  app.add_option("--duration", duration, "seconds of heartbeats after registration")->check(CLI::Range(0.1, 86400.0));
  app.add_option("--connections", r.connections, "keep-alive connections")->check(CLI::Range(1, 10000));
  app.add_option("--seed", seed, "random seed (default: random)");
  app.add_flag("--json", json, "print one JSON object");
  CLI11_PARSE(app, argc, argv);

  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  {
    LoadGen lg(server, api_key, r.agents, r.connections, seed);
    r.reg_s = lg.register_all(r.reg);
    r.registered = lg.registered();
    if (!json) print_registration(r);
    // A marker for bench/heartbeats.sh, which measures the server's CPU from here on (heartbeats only).
    std::fprintf(stderr, "loadgen: %zu agents registered; heartbeats start\n", r.registered);
    std::fflush(stderr);
    if (r.registered > 0 && !g_stop) r.hb_s = lg.heartbeat(r.interval_s, duration, r.hb, r.max_lag_ms);
  }
  if (json) {
    print_json(r);
  } else {
    print_heartbeats(r);
  }
  curl_global_cleanup();
  return r.registered == 0 || r.reg.errors + r.hb.errors + r.hb.missed > 0 ? 1 : 0;
}
