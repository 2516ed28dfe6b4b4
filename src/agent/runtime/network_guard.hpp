#pragma once
// Keeps a rental's container off the provider's own machine and private networks. Each rental has
// a bridge network of its own (tenants are apart), but a bridge routes anywhere the host can reach:
// the host itself (its SSH, the agent's engine, anything listening), the provider's LAN, and cloud
// metadata at 169.254.169.254. The guard rejects, for the rental's subnet, every new connection to
// the host (but DNS to the bridge's gateway, where Podman answers names) and, through the host, to
// private, shared and link-local addresses; the internet and connections into the container through
// its published ports are untouched. Rules are fenced before the container starts and removed with
// its network.
//
// The one implementation runs iptables (the nf_tables or legacy one the host has; Docker and Podman
// write their own rules with it too): two chains of its own, jumped to first from INPUT and from
// DOCKER-USER (Docker keeps that chain ahead of its own) or else FORWARD. Each rental's rules carry
// the comment "gpunex:<rental id>", by which they are found and removed. It needs root (CAP_NET_ADMIN).

#include <array>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agent/runtime/container_runtime.hpp"
#include "core/result.hpp"

namespace gpunex::agent::runtime {

//! Where a rental's container may not open a connection through the host, besides the host itself:
//! RFC 1918, shared address space (RFC 6598) and link-local (cloud metadata).
inline constexpr std::array<std::string_view, 5> kFencedRanges{"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16",
                                                               "100.64.0.0/10", "169.254.0.0/16"};

//! The guard's own chains.
struct GuardChains {
  std::string input = "GPUNEX-INPUT";
  std::string forward = "GPUNEX-FORWARD";
};

//! One iptables rule: the chain it is appended to, and the arguments after `-A CHAIN`.
struct GuardRule {
  std::string chain;
  std::vector<std::string> args;
  bool operator==(const GuardRule&) const = default;
};

//! The rules fencing one rental's network, in order (pure). An error when the network cannot be
//! fenced: no IPv4 subnet, an IPv6 one (not fenced), or a rental id unfit for a rule's comment.
core::Result<std::vector<GuardRule>> fence_rules(const GuardChains& chains, const std::string& rental_id,
                                                 const RentalNetwork& network);

//! The comment a rental's rules carry.
std::string fence_comment(const std::string& rental_id);

//! Safe to call from several threads at once.
class NetworkGuard {
 public:
  virtual ~NetworkGuard() = default;
  //! "iptables (chains GPUNEX-INPUT, GPUNEX-FORWARD)", or "none".
  virtual std::string describe() const = 0;
  //! Whether it can fence on this host (makes its chains): what the agent says at start-up.
  virtual core::Status check() = 0;
  //! Fences a rental's network; again for a network already fenced makes sure every rule is there.
  virtual core::Status fence(const std::string& rental_id, const RentalNetwork& network) = 0;
  //! Removes the rental's rules; none there is not an error.
  virtual core::Status unfence(const std::string& rental_id) = 0;
};

//! The guard over `iptables` (a program on PATH, or a path).
std::unique_ptr<NetworkGuard> make_iptables_guard(std::string iptables = "iptables", GuardChains chains = {});
//! No guard (`gpunex-agent run --network-guard none`): for a host whose own firewall keeps
//! containers off it and its LAN. Fences nothing.
std::unique_ptr<NetworkGuard> make_no_guard();

}  // namespace gpunex::agent::runtime
