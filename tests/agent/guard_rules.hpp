#pragma once
// The network guard's rules on this host as the agent tests read them: `iptables -S` of its chains.

#include <chrono>
#include <string>

#include "agent/runtime/network_guard.hpp"
#include "util/process.hpp"

namespace gpunex::testing {

inline std::string guard_rules() {
  const agent::runtime::GuardChains chains;
  std::string out;
  for (const auto& chain : {chains.input, chains.forward}) {
    auto r = util::run_process({"iptables", "-w", "10", "-S", chain}, std::chrono::seconds(30));
    if (r.ok()) out += r->out;
  }
  return out;
}

}  // namespace gpunex::testing
