#pragma once
// Provider API key rules without I/O: when a key's use is worth recording, and
// the one-time reveal of the key issued at approval (its states and why a
// reveal is refused).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace gpunex::core {

//! A key's last use is written at most once per this interval (a busy agent does not write on every request).
inline constexpr std::int64_t kApiKeyTouchIntervalMs = 60'000;
//! Whether a use at `now_ms` should be recorded, given the last recorded one.
bool api_key_use_due(std::optional<std::int64_t> last_used_at_ms, std::int64_t now_ms);

//! How long the key issued at approval waits for its owner to reveal it in the dashboard.
inline constexpr std::int64_t kApiKeyRevealDays = 7;

//! Why a kept plaintext was cleared (api_key_reveals.cleared_why).
enum class RevealCleared { revealed, revoked, expired };
std::string_view reveal_cleared_name(RevealCleared c);
std::optional<RevealCleared> parse_reveal_cleared(std::string_view s);

//! What the dashboard shows for a kept key: still there to open, or cleared and why.
enum class RevealState { available, revealed, revoked, expired };
std::string_view reveal_state_name(RevealState s);

//! A kept key as stored: when it expires and, once cleared, when and why.
struct KeptKey {
  bool has_secret = false;
  std::int64_t expires_at_ms = 0;
  std::optional<std::int64_t> cleared_at_ms;
  std::optional<RevealCleared> cleared_why;
};

//! Its state at `now_ms`: a plaintext past its expiry reads as expired before the worker clears it.
RevealState reveal_state(const KeptKey& k, std::int64_t now_ms);
//! Whether it may be handed out at `now_ms`; else 410 saying why (key_already_shown, key_revoked,
//! key_reveal_expired).
Status check_reveal(const KeptKey& k, std::int64_t now_ms, const std::string& cleared_at_text);

}  // namespace gpunex::core
