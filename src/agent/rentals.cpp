#include "agent/rentals.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <exception>

#include "core/rental.hpp"
#include "core/rental_spec.hpp"
#include "core/text.hpp"
#include "util/clock.hpp"
#include "util/log.hpp"

namespace gpunex::agent {
namespace {

using core::Error;
using core::ErrorCode;
using core::rental::EndReason;
using core::rental::State;
using protocol::RentalEvent;
using protocol::RentalEventType;
using runtime::ContainerState;

constexpr std::size_t kMaxErrorBytes = 4000;  // the most the protocol takes
//! `running` is sent again for a container the server still calls starting only this long after the
//! last one: an answer may cross the event on its way.
constexpr auto kResendRunningAfter = std::chrono::seconds(60);
constexpr const char* kGone = "the rental's container is gone from this machine";

RentalEvent make_event(const std::string& id, RentalEventType type) {
  RentalEvent e;
  e.rental_id = id;
  e.type = type;
  e.at_ms = util::system_now_ms();
  return e;
}

RentalEvent ended_event(const std::string& id, std::optional<EndReason> reason) {
  RentalEvent e = make_event(id, RentalEventType::ended);
  e.reason = reason;
  return e;
}

std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = core::utf8_sequence_length(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

bool continuation(char c) {
  return (static_cast<unsigned char>(c) & 0xC0) == 0x80;
}

// The engine's words for an `error` field: valid UTF-8, at most what the protocol takes.
std::string error_text(std::string_view s) {
  std::string v = valid_utf8(s);
  if (v.size() <= kMaxErrorBytes) return v;
  std::size_t end = kMaxErrorBytes;
  while (end > 0 && continuation(v[end])) --end;
  v.resize(end);
  return v;
}

// Whether nothing on this host listens on TCP `port` (a bind succeeds). When it cannot tell, yes:
// the engine has the last word.
bool port_free(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return true;
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  const bool free = ::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return free;
}

std::vector<protocol::BoundPort> bound_ports(const std::vector<runtime::PortBinding>& ports) {
  std::vector<protocol::BoundPort> out;
  for (const auto& p : ports) out.push_back({p.container_port, p.host_port});
  return out;
}

//! A container's output once it has exited. The engine writes the log file after the process (Podman's
//! conmon does it asynchronously), so an exit can be seen before its last lines: an empty answer is
//! asked again for up to a second.
core::Result<std::string> final_logs(runtime::ContainerRuntime& runtime, const std::string& container_id, int lines) {
  auto text = runtime.logs(container_id, lines);
  for (int i = 0; i < 5 && text && text->empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    text = runtime.logs(container_id, lines);
  }
  return text;
}

std::size_t text_hash(const std::string& s) {
  return std::hash<std::string>{}(s);
}

}  // namespace

core::Result<PortRange> parse_port_range(std::string_view text) {
  auto bad = [&] {
    return Error::make(
        ErrorCode::invalid_field,
        "the public port range must be LO-HI with 1 <= LO <= HI <= 65535, not '" + std::string(text) + "'",
        "public_ports");
  };
  const auto dash = text.find('-');
  if (dash == std::string_view::npos) return bad();
  PortRange r;
  const auto lo = text.substr(0, dash);
  const auto hi = text.substr(dash + 1);
  auto a = std::from_chars(lo.data(), lo.data() + lo.size(), r.lo);
  auto b = std::from_chars(hi.data(), hi.data() + hi.size(), r.hi);
  if (lo.empty() || hi.empty() || a.ec != std::errc{} || a.ptr != lo.data() + lo.size() || b.ec != std::errc{} ||
      b.ptr != hi.data() + hi.size() || r.lo < 1 || r.hi > 65535 || r.lo > r.hi) {
    return bad();
  }
  return r;
}

ResourceShare resource_share(std::size_t rented_gpus, std::size_t machine_gpus, std::int64_t host_ram_bytes,
                             double cpu_cores) {
  if (machine_gpus == 0 || rented_gpus == 0) return {};
  const double share = std::min(1.0, static_cast<double>(rented_gpus) / static_cast<double>(machine_gpus));
  ResourceShare out;
  out.memory_bytes = static_cast<std::int64_t>(static_cast<double>(host_ram_bytes) * 0.9 * share);
  out.nano_cpus = static_cast<std::int64_t>(cpu_cores * share * 1e9);
  return out;
}

std::string log_tail(std::string_view text, std::size_t max_bytes) {
  std::string v = valid_utf8(text);
  if (v.size() <= max_bytes) return v;
  std::size_t from = v.size() - max_bytes;
  while (from < v.size() && continuation(v[from])) ++from;
  if (from > 0 && v[from - 1] != '\n') {
    // Drop the partial first line when a whole one follows it.
    const auto nl = v.find('\n', from);
    if (nl != std::string::npos && nl + 1 < v.size()) from = nl + 1;
  }
  return v.substr(from);
}

// ---- RentalManager ----

RentalManager::RentalManager(runtime::ContainerRuntime& runtime, runtime::NetworkGuard& guard,
                             RentalManagerOptions options, RentalEventSink sink)
    : runtime_(runtime), guard_(guard), opt_(std::move(options)), sink_(std::move(sink)) {
  watcher_ = std::thread([this] { watch_loop(); });
}

RentalManager::~RentalManager() {
  {
    std::lock_guard lock(mu_);
    closing_ = true;
  }
  wake_.notify_all();
  if (watcher_.joinable()) watcher_.join();
  std::size_t waiting = 0;
  {
    std::lock_guard lock(mu_);
    reap();
    waiting = workers_.size();
  }
  if (waiting > 0) {
    util::log_event("info", "waiting for the container starts and stops in progress", {{"count", waiting}});
  }
  // Workers touch only their own `done` under mu_; the list itself no longer changes.
  for (auto& w : workers_) w.thread.join();
}

void RentalManager::apply(const protocol::AgentRentals& rentals) {
  std::lock_guard turn(reconcile_mu_);
  {
    std::lock_guard lock(mu_);
    desired_.clear();
    for (const auto& r : rentals.rentals) desired_[r.id] = r;
    have_desired_ = true;
  }
  (void)reconcile();
}

std::size_t RentalManager::busy() const {
  std::lock_guard lock(mu_);
  return starting_.size() + stopping_.size();
}

std::optional<bool> RentalManager::engine_up() const {
  std::lock_guard lock(mu_);
  return engine_up_;
}

std::optional<std::string> RentalManager::blocked() const {
  std::lock_guard lock(mu_);
  if (engine_up_ == false)
    return "no container engine answers (DOCKER_HOST=" + opt_.docker_host + "): " + engine_error_;
  if (guard_error_) return "the network guard cannot fence rentals' networks: " + *guard_error_;
  return std::nullopt;
}

void RentalManager::guard_pass() {
  std::vector<std::pair<std::string, std::string>> running;  // rental, container
  {
    std::lock_guard lock(mu_);
    if (Clock::now() < next_guard_pass_) return;
    next_guard_pass_ = Clock::now() + opt_.guard_interval;
    for (const auto& [id, w] : watched_) running.emplace_back(id, w.container_id);
  }
  auto ready = guard_.check();
  {
    std::lock_guard lock(mu_);
    if (!ready && guard_error_ != ready.error().message) {
      util::log_event("warn", "the network guard cannot fence rentals' networks: no rental can start until it can",
                      {{"guard", guard_.describe()}, {"error", ready.error().message}});
    } else if (ready && (guard_error_ || !guard_checked_)) {
      util::log_event("info", "network guard ready", {{"guard", guard_.describe()}});
    }
    guard_checked_ = true;
    guard_error_ = ready ? std::nullopt : std::optional<std::string>(ready.error().message);
  }
  if (!ready) return;
  // Rules a firewall reload took away come back. A failure here is more likely passing (the engine
  // or iptables busy) than a lost fence: it blocks new rentals until a pass succeeds, and stops none.
  for (const auto& [id, container] : running) {
    auto fenced = fence(id);
    if (fenced) continue;
    std::lock_guard lock(mu_);
    const auto w = watched_.find(id);
    if (w == watched_.end() || w->second.container_id != container || settled(id)) continue;  // gone meanwhile
    util::log_event("error", "a running rental's network could not be fenced again; trying at the next pass",
                    {{"rental", id}, {"container", container}, {"error", fenced.error().message}});
    guard_error_ = fenced.error().message;
  }
}

void RentalManager::watch_loop() {
  std::unique_lock lock(mu_);
  while (!closing_) {
    lock.unlock();
    guard_pass();
    {
      std::lock_guard turn(reconcile_mu_);
      if (auto present = reconcile()) watch(*present);
    }
    lock.lock();
    reap();
    wake_.wait_for(lock, opt_.watch_interval, [this] { return closing_; });
  }
}

std::optional<RentalManager::Present> RentalManager::reconcile() {
  auto listed = runtime_.list_rental_containers();
  std::lock_guard lock(mu_);
  if (!listed) {
    no_engine(listed.error().message);
    return std::nullopt;
  }
  if (engine_up_ != true) {
    util::log_event("info", "container engine answers", {{"engine", runtime_.describe()}});
    engine_up_ = true;
  }
  Present present;
  for (auto& c : *listed) {
    // Its own: labelled with this machine, or unlabelled (made before agents labelled them, or by a tool)
    // and a rental the server gives this machine; an unlabelled one it does not is left alone, never
    // removed as a leftover.
    const bool mine = opt_.machine_id.empty() || c.machine_id == opt_.machine_id ||
                      (c.machine_id.empty() && desired_.contains(c.rental_id));
    if (mine) present.emplace(c.rental_id, std::move(c));
  }
  if (!have_desired_) return present;

  for (const auto& [id, r] : desired_) {
    if (settled(id)) continue;
    const auto found = present.find(id);
    const bool is_present = found != present.end();
    auto watched = watched_.find(id);
    if (!is_present && watched == watched_.end()) {
      // Nothing of it here.
      switch (r.state) {
        case State::requested:
        case State::starting:
          begin_start(r, present, std::nullopt);
          break;
        case State::running: {
          auto e = ended_event(id, EndReason::host_failure);
          e.error = kGone;
          util::log_event("warn", "a running rental has no container on this machine", {{"rental", id}});
          send_ended(id, std::move(e));
          break;
        }
        case State::stopping:
          send_ended(id, ended_event(id, std::nullopt));
          break;
        case State::ended:
          break;
      }
      continue;
    }
    if (r.state == State::stopping) {
      begin_stop(id, is_present ? found->second.id : watched->second.container_id);
      continue;
    }
    if (!is_present) continue;  // watched, but the engine did not list it: watch() looks closer
    const ContainerState& c = found->second;
    if (c.status == ContainerState::Status::created && watched == watched_.end() && r.state != State::running) {
      // Made but never started: a start cut short by an agent restart. Start it afresh.
      begin_start(r, present, c.id);
      continue;
    }
    if (watched == watched_.end()) {
      adopt(c);
      watched = watched_.find(id);
    }
    const bool server_waits = r.state == State::requested || r.state == State::starting;
    const bool stale =
        !watched->second.running_sent || Clock::now() - *watched->second.running_sent > kResendRunningAfter;
    if (server_waits && c.status == ContainerState::Status::running && stale) {
      auto e = make_event(id, RentalEventType::running);
      e.ports = watched->second.ports;
      watched->second.running_sent = Clock::now();
      send(std::move(e));
    }
  }
  for (const auto& [id, c] : present) {
    if (desired_.contains(id) || starting_.contains(id) || stopping_.contains(id)) continue;
    begin_remove_leftover(id, c.id);
  }
  std::erase_if(watched_, [&](const auto& w) { return !desired_.contains(w.first) && !present.contains(w.first); });
  // Once the server no longer lists a rental, it never will again: forget that it ended.
  std::erase_if(ended_, [&](const std::string& id) { return !desired_.contains(id); });
  return present;
}

void RentalManager::watch(const Present& present) {
  struct Look {
    std::string id;
    std::string container_id;
    bool running = false;
    bool logs_due = false;
  };
  std::vector<Look> looks;
  {
    std::lock_guard lock(mu_);
    const auto now = Clock::now();
    for (const auto& [id, w] : watched_) {
      if (settled(id)) continue;
      const auto found = present.find(id);
      const bool running = found != present.end() && found->second.id == w.container_id &&
                           found->second.status == ContainerState::Status::running;
      looks.push_back({id, w.container_id, running, now >= w.next_logs});
    }
  }
  for (const auto& l : looks) {
    if (l.running) {
      if (!l.logs_due) continue;
      auto text = runtime_.logs(l.container_id, opt_.log_tail_lines);
      std::lock_guard lock(mu_);
      auto w = watched_.find(l.id);
      if (w == watched_.end()) continue;
      w->second.next_logs = Clock::now() + opt_.logs_interval;
      if (!text) continue;
      std::string tail = log_tail(*text, protocol::kMaxLogBytes);
      const std::size_t hash = text_hash(tail);
      if (hash == w->second.logs_hash || (tail.empty() && w->second.logs_hash == 0)) continue;
      w->second.logs_hash = hash;
      auto e = make_event(l.id, RentalEventType::logs);
      e.logs = std::move(tail);
      send(std::move(e), true);
      continue;
    }
    auto state = runtime_.inspect(l.container_id);
    if (!state || state->status == ContainerState::Status::running) continue;  // no answer, or the list was older
    if (state->status == ContainerState::Status::missing) {
      std::lock_guard lock(mu_);
      if (watched_.erase(l.id) == 0) continue;
      util::log_event("warn", "a rental's container was removed outside the agent", {{"rental", l.id}});
      auto e = ended_event(l.id, EndReason::host_failure);
      e.error = std::string(kGone) + " (removed outside the agent)";
      send_ended(l.id, std::move(e));
      continue;
    }
    auto text = final_logs(runtime_, l.container_id, opt_.log_tail_lines);
    {
      std::lock_guard lock(mu_);
      auto w = watched_.find(l.id);
      if (w == watched_.end()) continue;
      if (text) {
        std::string tail = log_tail(*text, protocol::kMaxLogBytes);
        if (!tail.empty() && text_hash(tail) != w->second.logs_hash) {
          auto e = make_event(l.id, RentalEventType::logs);
          e.logs = std::move(tail);
          send(std::move(e), true);
        }
      }
      watched_.erase(w);
      auto e = ended_event(l.id, EndReason::container_exited);
      if (state->exit_code >= -1 && state->exit_code <= 255) e.exit_code = state->exit_code;
      e.oom = state->oom_killed || state->oom_inferred;
      if (state->finished_at_ms) e.at_ms = *state->finished_at_ms;
      util::log_event("info", "a rental's container exited",
                      {{"rental", l.id}, {"exit_code", state->exit_code}, {"oom", e.oom}});
      send_ended(l.id, std::move(e));
    }
    if (auto removed = remove(l.id, l.container_id, std::chrono::seconds(0)); !removed) {
      util::log_event("warn", "removing an exited rental container failed; it is removed as a leftover later",
                      {{"rental", l.id}, {"error", removed.error().message}});
    }
  }
}

bool RentalManager::settled(const std::string& id) const {
  return starting_.contains(id) || stopping_.contains(id) || ended_.contains(id);
}

void RentalManager::adopt(const runtime::ContainerState& c) {
  Watched w;
  w.container_id = c.id;
  w.ports = bound_ports(c.ports);
  w.next_logs = Clock::now();
  watched_[c.rental_id] = std::move(w);
  util::log_event("info", "adopted a rental container found on this machine",
                  {{"rental", c.rental_id}, {"container", c.id}});
  spawn([this, id = c.rental_id, container = c.id] { fence_adopted(id, container); });
}

void RentalManager::fence_adopted(const std::string& id, const std::string& container_id) {
  auto fenced = fence(id);
  if (fenced) return;
  {
    std::lock_guard lock(mu_);
    auto w = watched_.find(id);
    if (w == watched_.end() || w->second.container_id != container_id || settled(id)) return;
    watched_.erase(w);
    stopping_.insert(id);
  }
  util::log_event("error", "an adopted rental's network cannot be fenced: stopping it",
                  {{"rental", id}, {"error", fenced.error().message}});
  auto removed = remove(id, container_id, opt_.stop_grace);
  std::lock_guard lock(mu_);
  stopping_.erase(id);
  if (!removed) {
    util::log_event("warn", "removing an unfenced rental container failed; trying again",
                    {{"rental", id}, {"error", removed.error().message}});
    return;
  }
  auto e = ended_event(id, EndReason::host_failure);
  e.error = error_text("the provider's machine could not fence the container's network: " + fenced.error().message);
  send_ended(id, std::move(e));
}

core::Status RentalManager::fence(const std::string& id) {
  auto network = runtime_.network(id);
  if (!network) return std::move(network).error();
  return guard_.fence(id, *network);
}

core::Status RentalManager::remove(const std::string& id, const std::string& container_id, std::chrono::seconds grace) {
  auto removed = runtime_.stop_and_remove(container_id, grace);
  if (!removed) return removed;
  // Rules left behind only refuse traffic (of a subnet no container has now): a warning, not a failure.
  if (auto unfenced = guard_.unfence(id); !unfenced) {
    util::log_event("warn", "removing a rental's network rules failed",
                    {{"rental", id}, {"error", unfenced.error().message}});
  }
  return core::ok_status();
}

void RentalManager::begin_start(const protocol::AssignedRental& r, const Present& present,
                                std::optional<std::string> stale) {
  auto fail = [&](const std::string& error) {
    util::log_event("warn", "a rental cannot start", {{"rental", r.id}, {"error", error}});
    auto e = ended_event(r.id, EndReason::start_failed);
    e.error = error_text(error);
    send_ended(r.id, std::move(e));
  };
  if (!opt_.machine_gpus.empty()) {
    for (const auto& uuid : r.gpu_uuids) {
      if (std::find(opt_.machine_gpus.begin(), opt_.machine_gpus.end(), uuid) == opt_.machine_gpus.end()) {
        return fail("GPU " + uuid + " is not on this machine");
      }
    }
  }
  auto ports = take_ports(r.spec.ports.size(), present);
  if (!ports) {
    return fail("no free public port: the range " + std::to_string(opt_.public_ports.lo) + "-" +
                std::to_string(opt_.public_ports.hi) + " has fewer than " + std::to_string(r.spec.ports.size()) +
                " free");
  }
  starting_[r.id] = *ports;
  watched_.erase(r.id);
  util::log_event("info", "starting a rental", {{"rental", r.id}, {"image", r.spec.image}, {"gpus", r.gpu_uuids}});
  send(make_event(r.id, RentalEventType::starting));
  spawn([this, r, ports = std::move(*ports), stale = std::move(stale)] { start_worker(r, ports, stale); });
}

void RentalManager::begin_stop(const std::string& id, const std::string& container_id) {
  std::size_t logs_hash = 0;
  if (auto w = watched_.find(id); w != watched_.end()) {
    logs_hash = w->second.logs_hash;
    watched_.erase(w);
  }
  stopping_.insert(id);
  spawn([this, id, container_id, logs_hash] { stop_worker(id, container_id, logs_hash); });
}

void RentalManager::begin_remove_leftover(const std::string& id, const std::string& container_id) {
  watched_.erase(id);
  stopping_.insert(id);
  util::log_event("info", "removing a rental container the server does not list",
                  {{"rental", id}, {"container", container_id}});
  spawn([this, id, container_id] {
    auto removed = remove(id, container_id, opt_.stop_grace);
    std::lock_guard lock(mu_);
    stopping_.erase(id);
    if (!removed) {
      util::log_event("warn", "removing a leftover rental container failed; trying again",
                      {{"rental", id}, {"error", removed.error().message}});
    }
  });
}

void RentalManager::no_engine(const std::string& error) {
  if (engine_up_ != false) {
    util::log_event("warn",
                    "no container engine answers: rentals on this machine fail to start until one runs (set "
                    "--docker-host or DOCKER_HOST)",
                    {{"docker_host", opt_.docker_host}, {"error", error}});
  }
  engine_up_ = false;
  engine_error_ = error;
  if (!have_desired_) return;
  const std::string why = "no container engine on this machine (DOCKER_HOST=" + opt_.docker_host + "): " + error;
  for (const auto& [id, r] : desired_) {
    if (settled(id) || watched_.contains(id)) continue;  // a watched container may be fine: the engine may be back
    if (r.state == State::requested || r.state == State::starting) {
      // The machine offers GPUs it cannot run a container on: the host's failure, on the provider's side
      // (its reliability), not a start the customer's image made fail. Not charged either way: it never ran.
      auto e = ended_event(id, EndReason::host_failure);
      e.error = error_text(why);
      send_ended(id, std::move(e));
    } else if (r.state == State::stopping) {
      send_ended(id, ended_event(id, std::nullopt));  // with no engine, nothing of it can run
    }
  }
}

std::optional<std::vector<int>> RentalManager::take_ports(std::size_t n, const Present& present) const {
  std::set<int> used;
  for (const auto& [id, w] : watched_) {
    for (const auto& p : w.ports) used.insert(p.host_port);
  }
  for (const auto& [id, ports] : starting_) used.insert(ports.begin(), ports.end());
  for (const auto& [id, c] : present) {
    for (const auto& p : c.ports) used.insert(p.host_port);
  }
  std::vector<int> out;
  for (int port = opt_.public_ports.lo; port <= opt_.public_ports.hi && out.size() < n; ++port) {
    if (used.contains(port) || (opt_.probe_ports && !port_free(port))) continue;
    out.push_back(port);
  }
  if (out.size() < n) return std::nullopt;
  return out;
}

void RentalManager::spawn(std::function<void()> work) {
  Worker& w = workers_.emplace_back();
  w.thread = std::thread([this, &w, work = std::move(work)] {
    try {
      work();
    } catch (const std::exception& e) {
      util::log_event("error", "a container operation failed unexpectedly", {{"error", e.what()}});
    }
    std::lock_guard lock(mu_);
    w.done = true;
  });
}

void RentalManager::reap() {
  for (auto it = workers_.begin(); it != workers_.end();) {
    if (!it->done) {
      ++it;
      continue;
    }
    it->thread.join();
    it = workers_.erase(it);
  }
}

void RentalManager::send(protocol::RentalEvent e, bool droppable) {
  sink_(std::move(e), droppable);
}

void RentalManager::send_ended(const std::string& id, protocol::RentalEvent e) {
  ended_.insert(id);
  if (desired_.contains(id)) send(std::move(e));
}

void RentalManager::start_failed(const std::string& id, const std::string& error, EndReason reason) {
  util::log_event("warn", "a rental failed to start", {{"rental", id}, {"error", error}});
  std::lock_guard lock(mu_);
  starting_.erase(id);
  auto e = ended_event(id, reason);
  e.error = error_text(error);
  send_ended(id, std::move(e));
}

void RentalManager::start_worker(protocol::AssignedRental r, std::vector<int> host_ports,
                                 std::optional<std::string> stale) {
  const std::string& id = r.id;
  if (stale) {
    if (auto removed = remove(id, *stale, std::chrono::seconds(0)); !removed) {
      return start_failed(id, removed.error().message);
    }
  }
  std::set<std::string> layers;
  std::size_t steps = 0;
  auto image = runtime_.ensure_image(r.spec.image, [&](const runtime::PullProgress& p) {
    ++steps;
    if (!p.layer.empty()) layers.insert(p.layer);
    util::log_event("debug", "pulling the image",
                    {{"rental", id},
                     {"image", r.spec.image},
                     {"status", p.status},
                     {"layer", p.layer},
                     {"current", p.current},
                     {"total", p.total}});
  });
  if (!image) return start_failed(id, image.error().message);
  if (steps > 0) {
    util::log_event("info", "pulled the image", {{"rental", id}, {"image", r.spec.image}, {"layers", layers.size()}});
  }
  {
    std::lock_guard lock(mu_);
    if (closing_) {
      starting_.erase(id);
      util::log_event("info", "the agent is stopping: this rental's start is left to its next run", {{"rental", id}});
      return;
    }
  }

  runtime::ContainerSpec spec;
  spec.rental_id = id;
  spec.machine_id = opt_.machine_id;
  spec.image = r.spec.image;
  spec.command = r.spec.command;
  spec.env = core::rental::container_env(r.spec);
  spec.gpu_uuids = r.gpu_uuids;
  spec.simulated_gpus = opt_.simulated_gpus;
  const auto share = resource_share(r.gpu_uuids.size(), opt_.machine_gpus.size(), opt_.host_ram_bytes, opt_.cpu_cores);
  spec.memory_bytes = opt_.memory_bytes_override > 0 ? opt_.memory_bytes_override : share.memory_bytes;
  spec.nano_cpus = share.nano_cpus;
  spec.pids_limit = opt_.pids_limit;
  std::vector<protocol::BoundPort> ports;
  for (std::size_t i = 0; i < r.spec.ports.size(); ++i) {
    spec.ports.push_back({r.spec.ports[i], host_ports[i], "tcp"});
    ports.push_back({r.spec.ports[i], host_ports[i]});
  }

  auto created = runtime_.create(spec);
  if (!created) {
    (void)runtime_.remove_network(id);
    return start_failed(id, created.error().message);
  }
  // Fenced before it starts: the customer's first packet already meets the rules.
  if (auto fenced = fence(id); !fenced) {
    {
      std::lock_guard lock(mu_);
      guard_error_ = fenced.error().message;  // blocked until the next guard pass finds it can fence
    }
    (void)remove(id, *created, std::chrono::seconds(0));
    return start_failed(id, "the provider's machine could not fence the container's network: " + fenced.error().message,
                        EndReason::host_failure);
  }
  if (auto started = runtime_.start(*created); !started) {
    (void)remove(id, *created, std::chrono::seconds(0));
    return start_failed(id, started.error().message);
  }

  std::unique_lock lock(mu_);
  starting_.erase(id);
  const auto want = desired_.find(id);
  if (want == desired_.end() || want->second.state == State::stopping) {
    // The server stopped it (or forgot it) while it was starting: it never ran as far as it knows.
    stopping_.insert(id);
    lock.unlock();
    auto removed = remove(id, *created, opt_.stop_grace);
    lock.lock();
    stopping_.erase(id);
    if (!removed) {
      util::log_event("warn", "removing a rental stopped while it started failed; trying again",
                      {{"rental", id}, {"error", removed.error().message}});
      return;
    }
    send_ended(id, ended_event(id, std::nullopt));
    return;
  }
  Watched w;
  w.container_id = *created;
  w.ports = ports;
  w.running_sent = Clock::now();
  w.next_logs = Clock::now() + opt_.logs_interval;
  watched_[id] = std::move(w);
  util::log_event("info", "a rental runs", {{"rental", id}, {"container", *created}});
  auto e = make_event(id, RentalEventType::running);
  e.ports = std::move(ports);
  send(std::move(e));
}

void RentalManager::stop_worker(const std::string& id, const std::string& container_id, std::size_t logs_hash) {
  util::log_event("info", "stopping a rental", {{"rental", id}, {"grace_s", opt_.stop_grace.count()}});
  auto stopped = runtime_.stop(container_id, opt_.stop_grace);
  std::optional<int> exit_code;
  std::optional<std::string> tail;
  if (stopped) {
    if (auto s = runtime_.inspect(container_id); s && s->status == ContainerState::Status::exited) {
      if (s->exit_code >= -1 && s->exit_code <= 255) exit_code = s->exit_code;
    }
    if (auto text = final_logs(runtime_, container_id, opt_.log_tail_lines); text) {
      tail = log_tail(*text, protocol::kMaxLogBytes);
    }
  }
  auto removed = stopped ? remove(id, container_id, std::chrono::seconds(0)) : stopped;
  std::lock_guard lock(mu_);
  stopping_.erase(id);
  if (!removed) {
    util::log_event("warn", "stopping a rental's container failed; trying again",
                    {{"rental", id}, {"error", removed.error().message}});
    return;
  }
  if (tail && !tail->empty() && text_hash(*tail) != logs_hash && desired_.contains(id)) {
    auto e = make_event(id, RentalEventType::logs);
    e.logs = std::move(*tail);
    send(std::move(e), true);
  }
  auto e = ended_event(id, std::nullopt);
  e.exit_code = exit_code;
  send_ended(id, std::move(e));
}

}  // namespace gpunex::agent
