#include "agent/agent.hpp"

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "agent/bench/bench_runner.hpp"
#include "agent/host_info.hpp"
#include "agent/runtime/container_runtime.hpp"
#include "protocol/heartbeat.hpp"
#include "protocol/rentals.hpp"
#include "util/clock.hpp"
#include "util/http_client.hpp"
#include "util/log.hpp"

namespace gpunex::agent {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr const char* kHeartbeatPath = "/v1/agent/heartbeat";
constexpr const char* kKeyRefusedLine =
    "API key refused by the server (revoked or invalid): create a new key in the dashboard and restart the agent";

//! The error code and message of an API error body, when it is one.
std::pair<std::string, std::string> api_error(const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains("error") || !j["error"].is_object()) return {"", body.substr(0, 200)};
  const auto& e = j["error"];
  return {e.value("code", std::string()), e.value("message", std::string())};
}

//! Waits until `until` or a stop, in short slices so a signal ends the agent promptly.
void sleep_until(Clock::time_point until, const std::atomic<bool>& stop) {
  while (!stop.load() && Clock::now() < until) {
    std::this_thread::sleep_for(std::min<Clock::duration>(until - Clock::now(), milliseconds(200)));
  }
}

class Runner;

//! What the rentals poll thread shares with the Runner. The server holds its request for up to wait_s
//! and it cannot be cut short, so at shutdown the thread is left to finish it alone: from then on it
//! touches only this, and it reaches the Runner only while `runner` is set (under `mu`).
struct PollLink {
  std::mutex mu;
  std::condition_variable cv;
  Runner* runner = nullptr;
};

struct PollSettings {
  std::string server_url;
  std::string api_key;
  std::string ca_file;
  unsigned wait_s = 25;
  milliseconds backoff_initial{1000};
  milliseconds backoff_max{protocol::kAgentRetryMaxMs};
};

//! The rentals long poll: GET kAgentRentalsPath, hand the answer to the Runner, ask again.
void poll_rentals(std::shared_ptr<PollLink> link, PollSettings settings);

class Runner {
 public:
  Runner(const AgentConfig& cfg, gpu::GpuBackend& backend, AgentState& state, std::atomic<bool>& stop)
      : cfg_(cfg),
        backend_(backend),
        state_(state),
        stop_(stop),
        rng_(std::random_device{}()),
        client_(cfg.server_url, util::HttpClientOptions{cfg.request_timeout, cfg.ca_file, true, ""}) {}
  ~Runner() { stop_rentals(); }
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  ExitCode run();

  // For the rentals poll thread.
  std::string machine_id() {
    std::lock_guard lock(mu_);
    return state_.identity().machine_id;
  }
  void apply_rentals(const protocol::AgentRentals& rentals) {
    if (rentals_) rentals_->apply(rentals);
  }
  std::optional<std::string> rentals_blocked() { return rentals_ ? rentals_->blocked() : std::nullopt; }
  void rentals_key_refused() {
    key_refused_.store(true);
    wake();
  }

 private:
  enum class Outcome { delivered, retry_later, rejected, machine_unknown, key_refused };

  Outcome post(const std::string& path, const std::string& body, nlohmann::json* reply);
  ExitCode register_machine();
  core::Status take_heartbeat();
  //! Sends spooled messages oldest first until the spool is empty or a send fails.
  Outcome flush();
  //! Acts on the commands of a heartbeat reply (run_benchmark; others are logged).
  void handle_commands(const std::vector<protocol::Command>& commands);
  void backoff(const char* what, const std::string& detail);
  //! Sleeps until `until`, a stop, or a wake() (a rental event to send at once).
  void wait_until(Clock::time_point until);
  void wake();
  std::size_t spooled();
  //! Makes the container runtime and the RentalManager, and starts the rentals poll.
  void start_rentals();
  //! Cuts the rentals poll loose and stops the RentalManager (containers keep running).
  void stop_rentals();
  //! The RentalManager's event sink: the event goes into the spool under the next seq, and the
  //! main loop is woken to send it.
  void queue_rental_event(protocol::RentalEvent event, bool droppable);

  const AgentConfig& cfg_;
  gpu::GpuBackend& backend_;
  AgentState& state_;
  std::atomic<bool>& stop_;
  std::mt19937_64 rng_;
  util::HttpClient client_;
  // mu_ guards spool_ and state_'s sequence and machine id: rental events come from other threads.
  std::mutex mu_;
  std::condition_variable wake_cv_;
  bool woken_ = false;
  std::atomic<bool> key_refused_{false};
  std::optional<Spool> spool_;
  protocol::HostInfo host_;
  std::vector<protocol::GpuInfo> gpus_;
  std::mutex backend_mu_;  // the benchmark thread samples the GPUs too
  std::optional<bench::BackgroundBench> bench_;
  std::vector<bool> gpu_lost_;
  unsigned interval_s_ = 15;
  unsigned attempt_ = 0;
  Clock::time_point retry_at_{};
  std::uint64_t delivered_ = 0;
  std::unique_ptr<runtime::ContainerRuntime> own_runtime_;
  std::unique_ptr<runtime::NetworkGuard> guard_;
  std::unique_ptr<RentalManager> rentals_;  // after spool_: gone before it
  std::shared_ptr<PollLink> poll_link_;
};

Runner::Outcome Runner::post(const std::string& path, const std::string& body, nlohmann::json* reply) {
  auto resp = client_.request("POST", path, body, {{"Authorization", "Bearer " + cfg_.api_key}});
  if (!resp) {
    backoff("server unreachable", resp.error().message);
    return Outcome::retry_later;
  }
  if (resp->status >= 200 && resp->status < 300) {
    attempt_ = 0;
    if (reply != nullptr) *reply = nlohmann::json::parse(resp->body, nullptr, false);
    return Outcome::delivered;
  }
  if (is_key_refused(resp->status, resp->body)) return Outcome::key_refused;
  auto [code, message] = api_error(resp->body);
  if (resp->status == 404) {
    util::log_event("warn", "the server does not know this machine; registering again",
                    {{"path", path}, {"code", code}, {"message", message}});
    return Outcome::machine_unknown;
  }
  if (resp->status == 429 || resp->status >= 500 || resp->status == 408) {
    backoff("server busy or failing", "HTTP " + std::to_string(resp->status) + " " + code + " " + message);
    return Outcome::retry_later;
  }
  util::log_event("error", "the server refused a message",
                  {{"path", path}, {"status", resp->status}, {"code", code}, {"message", message}});
  return Outcome::rejected;
}

void Runner::backoff(const char* what, const std::string& detail) {
  const milliseconds delay = backoff_delay(attempt_, cfg_.backoff_initial, cfg_.backoff_max, rng_);
  ++attempt_;
  retry_at_ = Clock::now() + delay;
  util::log_event("warn", what,
                  {{"detail", detail}, {"retry_in_ms", delay.count()}, {"attempt", attempt_}, {"spooled", spooled()}});
}

std::size_t Runner::spooled() {
  std::lock_guard lock(mu_);
  return spool_ ? spool_->size() : 0;
}

void Runner::wake() {
  {
    std::lock_guard lock(mu_);
    woken_ = true;
  }
  wake_cv_.notify_all();
}

void Runner::wait_until(Clock::time_point until) {
  std::unique_lock lock(mu_);
  // In short slices: a signal sets stop_ and cannot notify.
  while (!stop_.load() && !woken_ && !key_refused_.load() && Clock::now() < until) {
    wake_cv_.wait_for(lock, std::min<Clock::duration>(until - Clock::now(), milliseconds(200)));
  }
  woken_ = false;
}

ExitCode Runner::register_machine() {
  const bool same_server = state_.identity().server_url == cfg_.server_url;
  // The engine's version from the engine rentals use (Podman's socket is not Docker's).
  HostSources sources;
  sources.docker_socket = runtime::docker_socket_path(cfg_.rentals.docker_host.empty() ? runtime::docker_host_from_env()
                                                                                       : cfg_.rentals.docker_host);
  host_ = read_host_info(state_.data_dir(), sources);
  if (!cfg_.public_host.empty()) host_.public_host = cfg_.public_host;
  const std::string body = register_request(state_, host_, gpus_, backend_.simulated(), same_server).to_json().dump();
  while (!stop_.load()) {
    nlohmann::json reply;
    switch (post("/v1/agent/register", body, &reply)) {
      case Outcome::delivered: {
        auto registered = protocol::parse_register_reply(reply);
        if (!registered) {
          util::log_event("error", registered.error().message, {{"reply", reply.dump()}});
          return ExitCode::failure;
        }
        const std::string& id = registered->machine_id;
        core::Status saved = [&] {
          std::lock_guard lock(mu_);
          return state_.set_machine_id(id, cfg_.server_url);
        }();
        if (auto& s = saved; !s) {
          util::log_event("error", s.error().message);
          return ExitCode::failure;
        }
        if (registered->heartbeat_interval_s) interval_s_ = std::max(1u, *registered->heartbeat_interval_s);
        if (cfg_.heartbeat_interval_s) interval_s_ = *cfg_.heartbeat_interval_s;
        util::log_event("info", "registered",
                        {{"machine_id", id},
                         {"heartbeat_interval_s", interval_s_},
                         {"gpus", gpus_.size()},
                         {"simulated", backend_.simulated()}});
        return ExitCode::ok;
      }
      case Outcome::key_refused:
        util::log_event("error", kKeyRefusedLine);
        return ExitCode::key_refused;
      case Outcome::rejected:
      case Outcome::machine_unknown:
        // The server will not take this registration as it stands; retrying the same body cannot help.
        return ExitCode::failure;
      case Outcome::retry_later:
        sleep_until(retry_at_, stop_);
        break;
    }
  }
  return ExitCode::ok;
}

core::Status Runner::take_heartbeat() {
  protocol::HeartbeatRequest hb;
  for (std::size_t i = 0; i < gpus_.size(); ++i) {
    const protocol::GpuInfo& g = gpus_[i];
    auto s = [&] {
      std::lock_guard lock(backend_mu_);
      return backend_.sample(static_cast<unsigned>(g.index));
    }();
    if (s) {
      hb.telemetry.push_back(std::move(*s));
      if (gpu_lost_[i]) {
        gpu_lost_[i] = false;
        hb.events.push_back({std::string(protocol::kGpuRecovered), g.uuid, util::system_now_ms(), std::nullopt});
      }
      continue;
    }
    protocol::TelemetrySample failed;
    failed.index = g.index;
    failed.uuid = g.uuid;
    failed.at_ms = util::system_now_ms();
    failed.error = s.error().message;
    hb.telemetry.push_back(std::move(failed));
    if (!gpu_lost_[i]) {
      gpu_lost_[i] = true;
      util::log_event("error", "GPU stopped answering", {{"uuid", g.uuid}, {"error", s.error().message}});
      hb.events.push_back({std::string(protocol::kGpuLost), g.uuid, util::system_now_ms(), s.error().message});
    }
  }
  // The seq is taken and the message spooled in one step, so the spool holds every seq in order.
  std::lock_guard lock(mu_);
  auto seq = state_.next_seq();
  if (!seq) return std::move(seq).error();
  hb.machine_id = state_.identity().machine_id;
  hb.seq = static_cast<std::int64_t>(*seq);
  hb.sent_at_ms = util::system_now_ms();
  const SpoolKind kind = hb.events.empty() ? SpoolKind::telemetry : SpoolKind::event;
  auto dropped = spool_->push(SpoolEntry{*seq, kind, kHeartbeatPath, hb.to_json().dump()});
  if (!dropped) return std::move(dropped).error();
  if (*dropped > 0) {
    util::log_event("warn", "spool full: dropped the oldest telemetry",
                    {{"dropped", *dropped}, {"spooled", spool_->size()}, {"bytes", spool_->bytes()}});
  }
  return core::ok_status();
}

void Runner::handle_commands(const std::vector<protocol::Command>& commands) {
  for (const auto& c : commands) {
    if (c.type != protocol::kRunBenchmark && c.type != protocol::kSpotCheck) {
      util::log_event("info", "command not handled by this agent version", {{"command", c.to_json()}});
      continue;
    }
    if (!bench_) {
      bench::BenchRunConfig bc{cfg_.server_url,        cfg_.api_key,       cfg_.ca_file, state_.data_dir(),
                               cfg_.bench_storage_mib, cfg_.bench_net_mib, cfg_.test_lie};
      bench_.emplace(backend_, backend_mu_, std::move(bc));
    }
    if (c.type == protocol::kSpotCheck) {
      if (!bench_->start_spot_check(c, gpus_, state_.identity().machine_id)) {
        util::log_event("warn", "a spot check came while a benchmark run is going; it is left unanswered",
                        {{"challenges", c.challenges.size()}});
      }
      continue;
    }
    if (!bench_->start(c, gpus_, state_.identity().machine_id)) {
      util::log_event("warn", "a benchmark run is already going; the new request waits for the next one",
                      {{"command", c.to_json()}});
    }
  }
}

Runner::Outcome Runner::flush() {
  while (!stop_.load()) {
    SpoolEntry e;
    std::string machine_id;
    {
      std::lock_guard lock(mu_);
      auto front = spool_->front();
      if (!front) {
        // A damaged file cannot be sent; remove it so it does not block the rest.
        util::log_event("error", front.error().message + "; removed");
        if (auto seq = spool_->first_seq(); seq) (void)spool_->remove(*seq);
        continue;
      }
      if (!front->has_value()) return Outcome::delivered;
      e = std::move(**front);
      machine_id = state_.identity().machine_id;
    }
    // The machine id is set at send time: a re-registration may have changed it since spooling.
    auto body = nlohmann::json::parse(e.body, nullptr, false);
    if (body.is_object()) body["machine_id"] = machine_id;
    nlohmann::json reply;
    Outcome out = post(e.endpoint, body.is_object() ? body.dump() : e.body, &reply);
    if (out == Outcome::delivered || out == Outcome::rejected) {
      if (out == Outcome::delivered && e.endpoint == kHeartbeatPath) {
        ++delivered_;
        const protocol::HeartbeatReply answer = protocol::parse_heartbeat_reply(reply);
        if (!answer.commands.empty()) handle_commands(answer.commands);
        if (answer.heartbeat_interval_s && !cfg_.heartbeat_interval_s) {
          interval_s_ = std::max(1u, *answer.heartbeat_interval_s);
        }
      }
      {
        std::lock_guard lock(mu_);
        if (auto s = spool_->remove(e.seq); !s) util::log_event("error", s.error().message);
      }
      if (cfg_.max_heartbeats > 0 && delivered_ >= cfg_.max_heartbeats) return Outcome::delivered;
      continue;
    }
    return out;
  }
  return Outcome::retry_later;
}

ExitCode Runner::run() {
  if (backend_.simulated()) {
    util::log_event("warn", "SIMULATED GPUs: " + backend_.describe() + " (not real hardware; registered as simulated)");
  }
  auto gpus = backend_.list_gpus();
  if (!gpus) {
    util::log_event("error", "GPU discovery failed: " + gpus.error().message);
    return ExitCode::failure;
  }
  gpus_ = std::move(*gpus);
  if (cfg_.test_lie == bench::LieMode::vram) {
    for (auto& g : gpus_) g.memory_mib *= bench::kVramLieFactor;  // registered, not present
  }
  gpu_lost_.assign(gpus_.size(), false);
  util::log_event("info", "GPUs found", {{"backend", backend_.describe()}, {"count", gpus_.size()}});

  auto spool = Spool::open(state_.data_dir() + "/spool", cfg_.spool);
  if (!spool) {
    util::log_event("error", spool.error().message);
    return ExitCode::failure;
  }
  spool_.emplace(std::move(*spool));
  if (spool_->size() > 0) util::log_event("info", "spooled messages from an earlier run", {{"count", spool_->size()}});

  if (ExitCode rc = register_machine(); rc != ExitCode::ok || stop_.load()) return rc;
  start_rentals();

  Clock::time_point next_beat = Clock::now();
  while (!stop_.load()) {
    if (key_refused_.load()) {
      util::log_event("error", kKeyRefusedLine);
      return ExitCode::key_refused;
    }
    const Clock::time_point now = Clock::now();
    if (now >= next_beat) {
      if (auto s = take_heartbeat(); !s) {
        util::log_event("error", "cannot spool a heartbeat: " + s.error().message);
        return ExitCode::failure;
      }
      next_beat += std::chrono::seconds(interval_s_);
      if (next_beat < now) next_beat = now + std::chrono::seconds(interval_s_);
    }
    if (spooled() > 0 && Clock::now() >= retry_at_) {
      switch (flush()) {
        case Outcome::key_refused:
          util::log_event("error", kKeyRefusedLine);
          return ExitCode::key_refused;
        case Outcome::machine_unknown:
          if (ExitCode rc = register_machine(); rc != ExitCode::ok) return rc;
          continue;
        case Outcome::rejected:
        case Outcome::delivered:
        case Outcome::retry_later:
          break;
      }
      if (cfg_.max_heartbeats > 0 && delivered_ >= cfg_.max_heartbeats) return ExitCode::ok;
    }
    Clock::time_point wake = next_beat;
    if (spooled() > 0) wake = std::min(wake, std::max(retry_at_, Clock::now() + milliseconds(10)));
    wait_until(wake);
  }
  std::lock_guard lock(mu_);
  util::log_event("info", "stopping", {{"spooled", spool_->size()}, {"last_seq", state_.last_seq()}});
  return ExitCode::ok;
}

void Runner::start_rentals() {
  RentalManagerOptions o = cfg_.rentals;
  if (o.docker_host.empty()) o.docker_host = runtime::docker_host_from_env();
  runtime::ContainerRuntime* engine = cfg_.container_runtime;
  if (engine == nullptr) {
    own_runtime_ = runtime::make_docker_runtime(o.docker_host);
    engine = own_runtime_.get();
  }
  o.machine_id = machine_id();
  o.machine_gpus.clear();
  for (const auto& g : gpus_) o.machine_gpus.push_back(g.uuid);
  o.host_ram_bytes = host_.ram_mib * 1024 * 1024;
  o.cpu_cores = static_cast<double>(host_.cpu_cores);
  o.simulated_gpus = backend_.simulated();
  if (cfg_.network_guard == "none") {
    guard_ = runtime::make_no_guard();
    util::log_event("warn",
                    "no network guard (--network-guard none): rentals' containers can reach this host and its LAN "
                    "unless the host's own firewall stops them",
                    {});
  } else {
    guard_ = runtime::make_iptables_guard();  // checked by the RentalManager's first pass
  }
  rentals_ = std::make_unique<RentalManager>(
      *engine, *guard_, std::move(o),
      [this](protocol::RentalEvent e, bool droppable) { queue_rental_event(std::move(e), droppable); });
  poll_link_ = std::make_shared<PollLink>();
  poll_link_->runner = this;
  PollSettings settings{cfg_.server_url,     cfg_.api_key,         cfg_.ca_file,
                        cfg_.rentals_wait_s, cfg_.backoff_initial, cfg_.backoff_max};
  std::thread(poll_rentals, poll_link_, std::move(settings)).detach();
}

void Runner::stop_rentals() {
  if (poll_link_) {
    {
      std::lock_guard lock(poll_link_->mu);
      poll_link_->runner = nullptr;
    }
    poll_link_->cv.notify_all();
    poll_link_.reset();
  }
  rentals_.reset();
}

void Runner::queue_rental_event(protocol::RentalEvent event, bool droppable) {
  util::log_event("debug", "rental event",
                  {{"rental", event.rental_id},
                   {"type", protocol::to_string(event.type)},
                   {"reason", event.reason ? std::string(core::rental::to_string(*event.reason)) : ""}});
  {
    std::lock_guard lock(mu_);
    if (!spool_) return;
    auto seq = state_.next_seq();
    if (!seq) {
      util::log_event("error", "cannot take a sequence number for a rental event: " + seq.error().message,
                      {{"rental", event.rental_id}});
      return;
    }
    protocol::RentalEventsRequest req;
    req.machine_id = state_.identity().machine_id;
    req.seq = static_cast<std::int64_t>(*seq);
    req.events.push_back(std::move(event));
    const std::string body = req.to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    auto dropped = spool_->push(SpoolEntry{*seq, droppable ? SpoolKind::telemetry : SpoolKind::event,
                                           std::string(protocol::kRentalEventsPath), body});
    if (!dropped) {
      util::log_event("error", "cannot spool a rental event: " + dropped.error().message);
      return;
    }
    if (*dropped > 0) {
      util::log_event("warn", "spool full: dropped the oldest telemetry and logs",
                      {{"dropped", *dropped}, {"spooled", spool_->size()}});
    }
    woken_ = true;
  }
  wake_cv_.notify_all();
}

void poll_rentals(std::shared_ptr<PollLink> link, PollSettings s) {
  util::HttpClient client(s.server_url,
                          util::HttpClientOptions{std::chrono::seconds(s.wait_s + 15), s.ca_file, true, ""});
  std::mt19937_64 rng(std::random_device{}());
  std::string known;
  unsigned attempt = 0;
  bool failing = false;
  for (;;) {
    std::string path;
    {
      std::lock_guard lock(link->mu);
      if (link->runner == nullptr) return;
      path = std::string(protocol::kAgentRentalsPath) + "?machine_id=" + util::url_encode(link->runner->machine_id()) +
             "&known=" + util::url_encode(known) + "&wait_s=" + std::to_string(s.wait_s);
      if (const auto blocked = link->runner->rentals_blocked()) {
        path += "&" + std::string(protocol::kBlockedParam) + "=" + util::url_encode(protocol::blocked_text(*blocked));
      }
    }
    const auto asked = Clock::now();
    auto resp = client.request("GET", path, std::nullopt, {{"Authorization", "Bearer " + s.api_key}});
    std::unique_lock lock(link->mu);
    if (link->runner == nullptr) return;
    std::string problem;
    milliseconds pause{0};
    if (!resp) {
      problem = resp.error().message;
    } else if (resp->status >= 200 && resp->status < 300) {
      auto rentals = protocol::parse_agent_rentals(nlohmann::json::parse(resp->body, nullptr, false));
      if (!rentals) {
        problem = "the server's rentals answer is not understood: " + rentals.error().message;
      } else {
        if (failing) util::log_event("info", "the rentals poll is answered again");
        failing = false;
        attempt = 0;
        link->runner->apply_rentals(*rentals);
        // An answer at once with nothing new: the server did not hold the poll; do not spin.
        if (rentals->version == known && Clock::now() - asked < std::chrono::seconds(1)) pause = milliseconds(1000);
        known = rentals->version;
      }
    } else if (is_key_refused(resp->status, resp->body)) {
      link->runner->rentals_key_refused();
      return;
    } else {
      auto [code, message] = api_error(resp->body);
      problem = (resp->status == 404 ? "the server does not know this machine (yet): " : "") + std::string("HTTP ") +
                std::to_string(resp->status) + " " + code + " " + message;
    }
    if (!problem.empty()) {
      pause = backoff_delay(attempt++, s.backoff_initial, s.backoff_max, rng);
      util::log_event(failing ? "debug" : "warn", "the rentals poll failed; asking again",
                      {{"detail", problem}, {"retry_in_ms", pause.count()}});
      failing = true;
    }
    if (pause.count() > 0) link->cv.wait_for(lock, pause, [&] { return link->runner == nullptr; });
  }
}

}  // namespace

std::chrono::milliseconds backoff_delay(unsigned attempt, milliseconds initial, milliseconds max,
                                        std::mt19937_64& rng) {
  const unsigned shift = std::min(attempt, 20u);
  const std::int64_t cap = std::min<std::int64_t>(max.count(), initial.count() << shift);
  std::uniform_int_distribution<std::int64_t> half(0, cap / 2);
  return milliseconds(cap - cap / 2 + half(rng));
}

protocol::RegisterRequest register_request(const AgentState& state, protocol::HostInfo host,
                                           std::vector<protocol::GpuInfo> gpus, bool simulated,
                                           bool include_machine_id) {
  protocol::RegisterRequest req;
  req.agent_version = kAgentVersion;
  req.machine_fingerprint = state.identity().fingerprint;
  if (include_machine_id && !state.identity().machine_id.empty()) req.machine_id = state.identity().machine_id;
  req.host = std::move(host);
  req.gpus = std::move(gpus);
  req.simulated = simulated;
  return req;
}

bool is_key_refused(long status, const std::string& body) {
  if (status != 401) return false;
  // Only our own API's error body counts, so a proxy's stray 401 page is retried instead.
  auto j = nlohmann::json::parse(body, nullptr, false);
  return j.is_object() && j.contains("error") && j["error"].is_object();
}

ExitCode run_agent(const AgentConfig& config, gpu::GpuBackend& backend, AgentState& state, std::atomic<bool>& stop) {
  Runner runner(config, backend, state, stop);
  return runner.run();
}

}  // namespace gpunex::agent
