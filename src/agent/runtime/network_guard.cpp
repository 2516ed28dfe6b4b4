#include "agent/runtime/network_guard.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <functional>
#include <mutex>
#include <sstream>

#include "util/process.hpp"

namespace gpunex::agent::runtime {

namespace {

using core::Error;
using core::ErrorCode;

constexpr std::chrono::seconds kIptablesTimeout{30};
const std::vector<std::string> kEstablished{"-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "RETURN"};

bool fit_for_comment(const std::string& id) {
  return !id.empty() && id.size() <= 200 && std::all_of(id.begin(), id.end(), [](unsigned char c) {
    return std::isalnum(c) != 0 || c == '_' || c == '-' || c == '.';
  });
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// "-A GPUNEX-INPUT -s 10.89.0.0/24 -m comment --comment \"gpunex:r1\" -j REJECT" → its words, unquoted.
// The guard's own rules have no spaces inside a word, so this reads every rule it wrote.
std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) {
    if (w.size() >= 2 && w.front() == '"' && w.back() == '"') w = w.substr(1, w.size() - 2);
    out.push_back(std::move(w));
  }
  return out;
}

class IptablesGuard final : public NetworkGuard {
 public:
  IptablesGuard(std::string iptables, GuardChains chains)
      : iptables_(std::move(iptables)), chains_(std::move(chains)) {}

  std::string describe() const override {
    return iptables_ + " (chains " + chains_.input + ", " + chains_.forward + ")";
  }

  core::Status check() override {
    std::lock_guard lock(mu_);
    return ensure_chains();
  }

  core::Status fence(const std::string& rental_id, const RentalNetwork& network) override {
    auto rules = fence_rules(chains_, rental_id, network);
    if (!rules) return std::move(rules).error();
    std::lock_guard lock(mu_);
    if (auto ready = ensure_chains(); !ready) return ready;
    const bool whole = std::all_of(rules->rbegin(), rules->rend(), [&](const GuardRule& r) {
      return holds(with({"-C", r.chain}, r.args));
    });
    if (whole) return core::ok_status();
    // Its own rules, and any left on its subnets by a rental whose network is gone (an agent that
    // died before removing them): a subnet is one network's at a time, and this one's now.
    auto cleared = remove_rules([&](const std::vector<std::string>& w) {
      if (std::find(w.begin(), w.end(), fence_comment(rental_id)) != w.end()) return true;
      const auto s = std::find(w.begin(), w.end(), "-s");
      return s != w.end() && s + 1 != w.end() &&
             std::find(network.subnets.begin(), network.subnets.end(), *(s + 1)) != network.subnets.end();
    });
    if (!cleared) return cleared;
    for (const auto& r : *rules) {
      if (auto added = must(with({"-A", r.chain}, r.args)); !added) return added;
    }
    return core::ok_status();
  }

  core::Status unfence(const std::string& rental_id) override {
    if (!fit_for_comment(rental_id)) return core::ok_status();  // never fenced
    std::lock_guard lock(mu_);
    const std::string comment = fence_comment(rental_id);
    return remove_rules(
        [&](const std::vector<std::string>& w) { return std::find(w.begin(), w.end(), comment) != w.end(); });
  }

 private:
  static std::vector<std::string> with(std::vector<std::string> head, const std::vector<std::string>& tail) {
    head.insert(head.end(), tail.begin(), tail.end());
    return head;
  }

  core::Result<util::ProcessResult> run(const std::vector<std::string>& args) {
    return util::run_process(with({iptables_, "-w", "10"}, args), kIptablesTimeout);
  }

  // Whether the command succeeds (a check, -C or -S, that finds what it asks about).
  bool holds(const std::vector<std::string>& args) {
    auto r = run(args);
    return r && r->exit_code == 0;
  }

  core::Status must(const std::vector<std::string>& args) {
    auto r = run(args);
    if (!r) return std::move(r).error();
    if (r->exit_code == 0) return core::ok_status();
    std::string command = iptables_;
    for (const auto& a : args) command += " " + a;
    std::string why = trimmed(r->err.empty() ? r->out : r->err);
    if (why.empty()) why = "exit status " + std::to_string(r->exit_code);
    return Error::make(ErrorCode::unavailable, "the network guard could not run `" + command + "`: " + why +
                                                   " (the agent needs root to fence rentals' networks)");
  }

  // The chain, its first rule (answers to connections already let through go on), and a jump to it
  // as the first rule of `parent`.
  core::Status ensure_chain(const std::string& chain, const std::string& parent) {
    if (!holds({"-S", chain})) {
      if (auto made = must({"-N", chain}); !made && !holds({"-S", chain})) return made;  // or another agent made it
    }
    if (!holds(with({"-C", chain}, kEstablished))) {
      if (auto first = must(with({"-I", chain, "1"}, kEstablished)); !first) return first;
    }
    return ensure_first_jump(chain, parent);
  }

  // The jump to `chain` as the first rule of `parent`, and the only one. Present is not enough: the engine
  // (netavark, on every network it makes and on a reload) inserts its own jump at the head of FORWARD, whose
  // chain accepts a bridge's traffic, and a guard below it fences nothing. A new jump is inserted first, then
  // the others deleted by their exact rule (never by a number, which another program changing the chain
  // meanwhile would make point elsewhere): each jump carries a mark of its own ("gpunex-guard-<time>"), so
  // deleting the older ones' rules leaves the new one alone. The traffic is never unfenced in between.
  core::Status ensure_first_jump(const std::string& chain, const std::string& parent) {
    auto listed = run({"-S", parent});
    if (!listed) return std::move(listed).error();
    if (listed->exit_code != 0) return must({"-S", parent});  // says why
    std::vector<std::vector<std::string>> rules;              // the rules of `parent` in order, as words
    std::istringstream lines(listed->out);
    for (std::string line; std::getline(lines, line);) {
      auto w = words(line);
      if (!w.empty() && w[0] == "-A") rules.push_back(std::move(w));
    }
    const auto jumps_to_chain = [&](const std::vector<std::string>& w) {
      return w.size() >= 4 && w[w.size() - 2] == "-j" && w.back() == chain;
    };
    // The rule as iptables takes it back: its words after "-A parent" (a mark, or none: an agent before marks).
    const auto spec = [](const std::vector<std::string>& w) {
      return std::vector<std::string>(w.begin() + 2, w.end());
    };
    const auto count = std::count_if(rules.begin(), rules.end(), jumps_to_chain);
    if (count == 1 && jumps_to_chain(rules.front())) return core::ok_status();
    const std::string mark =
        "gpunex-guard-" + std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
    if (auto first = must({"-I", parent, "1", "-m", "comment", "--comment", mark, "-j", chain}); !first) return first;
    for (const auto& w : rules) {
      if (!jumps_to_chain(w)) continue;
      const auto old = with({"-D", parent}, spec(w));
      // Gone already (another agent's check) is as good as deleted.
      if (auto removed = must(old); !removed && holds(with({"-C", parent}, spec(w)))) return removed;
    }
    return core::ok_status();
  }

  core::Status ensure_chains() {
    if (auto in = ensure_chain(chains_.input, "INPUT"); !in) return in;
    // Docker evaluates DOCKER-USER ahead of its own rules, which accept a bridge's traffic; without
    // Docker (Podman), the guard's chain goes first in FORWARD.
    return ensure_chain(chains_.forward, holds({"-S", "DOCKER-USER"}) ? "DOCKER-USER" : "FORWARD");
  }

  // Deletes the guard's rules (those with a "gpunex:" comment) for which `pick` holds of their words.
  core::Status remove_rules(const std::function<bool(const std::vector<std::string>&)>& pick) {
    for (const auto& chain : {chains_.input, chains_.forward}) {
      auto listed = run({"-S", chain});
      if (!listed || listed->exit_code != 0) continue;  // no chain, no rules
      std::istringstream lines(listed->out);
      for (std::string line; std::getline(lines, line);) {
        auto w = words(line);
        const bool ours =
            std::any_of(w.begin(), w.end(), [](const std::string& x) { return x.starts_with("gpunex:"); });
        if (w.size() < 2 || w[0] != "-A" || !ours || !pick(w)) continue;
        w[0] = "-D";
        if (auto removed = must(w); !removed) return removed;
      }
    }
    return core::ok_status();
  }

  std::string iptables_;
  GuardChains chains_;
  std::mutex mu_;  // one change of the rules at a time (iptables -w serializes each command, not a sequence)
};

class NoGuard final : public NetworkGuard {
 public:
  std::string describe() const override { return "none"; }
  core::Status check() override { return core::ok_status(); }
  core::Status fence(const std::string&, const RentalNetwork&) override { return core::ok_status(); }
  core::Status unfence(const std::string&) override { return core::ok_status(); }
};

}  // namespace

std::string fence_comment(const std::string& rental_id) {
  return "gpunex:" + rental_id;
}

core::Result<std::vector<GuardRule>> fence_rules(const GuardChains& chains, const std::string& rental_id,
                                                 const RentalNetwork& network) {
  if (!fit_for_comment(rental_id)) {
    return Error::make(ErrorCode::invalid_field, "rental id '" + rental_id + "' cannot name its network rules");
  }
  if (network.ipv6) {
    return Error::make(ErrorCode::unavailable,
                       "the rental's network has an IPv6 subnet, which the network guard does not fence");
  }
  if (network.subnets.empty()) {
    return Error::make(ErrorCode::unavailable, "the rental's network has no IPv4 subnet to fence");
  }
  const std::vector<std::string> tag{"-m", "comment", "--comment", fence_comment(rental_id)};
  const std::vector<std::string> reject{"-j", "REJECT", "--reject-with", "icmp-admin-prohibited"};
  auto rule = [&](const std::string& chain, std::vector<std::string> match, const std::vector<std::string>& action) {
    match.insert(match.end(), tag.begin(), tag.end());
    match.insert(match.end(), action.begin(), action.end());
    return GuardRule{chain, std::move(match)};
  };
  std::vector<GuardRule> out;
  for (const auto& subnet : network.subnets) {
    // To the host: names from the gateway (Podman's resolver listens there), nothing else.
    for (const auto& gateway : network.gateways) {
      for (const char* proto : {"udp", "tcp"}) {
        out.push_back(
            rule(chains.input, {"-s", subnet, "-d", gateway, "-p", proto, "--dport", "53"}, {"-j", "RETURN"}));
      }
    }
    out.push_back(rule(chains.input, {"-s", subnet}, reject));
    // Through the host: its own subnet stays reachable, the private ranges do not.
    out.push_back(rule(chains.forward, {"-s", subnet, "-d", subnet}, {"-j", "RETURN"}));
    for (const auto range : kFencedRanges) {
      out.push_back(rule(chains.forward, {"-s", subnet, "-d", std::string(range)}, reject));
    }
  }
  return out;
}

std::unique_ptr<NetworkGuard> make_iptables_guard(std::string iptables, GuardChains chains) {
  return std::make_unique<IptablesGuard>(std::move(iptables), std::move(chains));
}

std::unique_ptr<NetworkGuard> make_no_guard() {
  return std::make_unique<NoGuard>();
}

}  // namespace gpunex::agent::runtime
