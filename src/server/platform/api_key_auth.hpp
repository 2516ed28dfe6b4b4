#pragma once
// Provider API keys as the request pipeline authenticates with them. The keys
// and their table belong to onboarding (a key is issued to a provider, which
// platform knows nothing of); platform declares only what authentication needs
// of them (ApiKeyDirectory), and the App is handed onboarding's implementation
// where the routes are assembled (api/routes.cpp).

#include <cstdint>
#include <optional>
#include <string>

#include "store/store.hpp"

namespace gpunex::server {

//! Every provider API key starts with this ("gpx_" + base64url of 32 random bytes): a bearer token
//! with it is a key, any other is a session token.
inline constexpr const char* kApiKeyPrefix = "gpx_";

//! A live (unrevoked) key, with the user it acts for.
struct ApiKeyInfo {
  std::string key_id;
  std::string user_id;
  std::optional<std::int64_t> last_used_at_ms;
};

//! What authentication asks of the keys' owner, inside the caller's transaction.
class ApiKeyDirectory {
 public:
  virtual ~ApiKeyDirectory() = default;
  //! A live key found by its SHA-256 (hex), as stored.
  virtual std::optional<ApiKeyInfo> find_by_hash(store::Tx& tx, const std::string& key_hash) const = 0;
  //! Records the key's use at `now_ms` (the pipeline asks at most once per core::kApiKeyTouchIntervalMs).
  virtual void record_use(store::Tx& tx, const std::string& key_id, std::int64_t now_ms) const = 0;
};

}  // namespace gpunex::server
