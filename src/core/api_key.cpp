#include "core/api_key.hpp"

namespace gpunex::core {

bool api_key_use_due(std::optional<std::int64_t> last_used_at_ms, std::int64_t now_ms) {
  return !last_used_at_ms || *last_used_at_ms <= now_ms - kApiKeyTouchIntervalMs;
}

std::string_view reveal_cleared_name(RevealCleared c) {
  switch (c) {
    case RevealCleared::revealed: return "revealed";
    case RevealCleared::revoked: return "revoked";
    case RevealCleared::expired: return "expired";
  }
  return "expired";
}

std::optional<RevealCleared> parse_reveal_cleared(std::string_view s) {
  for (auto c : {RevealCleared::revealed, RevealCleared::revoked, RevealCleared::expired}) {
    if (reveal_cleared_name(c) == s) return c;
  }
  return std::nullopt;
}

std::string_view reveal_state_name(RevealState s) {
  switch (s) {
    case RevealState::available: return "available";
    case RevealState::revealed: return "revealed";
    case RevealState::revoked: return "revoked";
    case RevealState::expired: return "expired";
  }
  return "expired";
}

RevealState reveal_state(const KeptKey& k, std::int64_t now_ms) {
  if (!k.cleared_at_ms) return now_ms >= k.expires_at_ms ? RevealState::expired : RevealState::available;
  switch (k.cleared_why.value_or(RevealCleared::expired)) {
    case RevealCleared::revealed: return RevealState::revealed;
    case RevealCleared::revoked: return RevealState::revoked;
    case RevealCleared::expired: return RevealState::expired;
  }
  return RevealState::expired;
}

Status check_reveal(const KeptKey& k, std::int64_t now_ms, const std::string& cleared_at_text) {
  if (k.cleared_why == RevealCleared::revealed) {
    return Error::make(ErrorCode::gone, "this API key was already shown, at " + cleared_at_text +
                                            "; it is never shown again. If you lost it, create a new key "
                                            "and revoke this one")
        .with_code("key_already_shown");
  }
  if (k.cleared_why == RevealCleared::revoked) {
    return Error::make(ErrorCode::gone, "this API key was revoked before it was shown; create a new key")
        .with_code("key_revoked");
  }
  if (!k.has_secret || now_ms >= k.expires_at_ms) {
    return Error::make(ErrorCode::gone, "this API key was not shown within " + std::to_string(kApiKeyRevealDays) +
                                            " days and is no longer kept; use the one we e-mailed you, or "
                                            "create a new key")
        .with_code("key_reveal_expired");
  }
  return ok_status();
}

}  // namespace gpunex::core
