#pragma once
// Providers and their API keys. A key is "gpx_" + base64url of 32 random bytes,
// returned once at creation and stored only as its SHA-256 with a short
// display prefix; a revoked key stops authenticating at once.

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "store/store.hpp"

namespace gpunex::server {

struct Provider {
  std::string id;
  std::string user_id;
  std::string application_id;
  std::string tier;
  std::int64_t created_at_ms = 0;
  nlohmann::json to_json() const;
};

std::optional<Provider> find_provider_by_user(store::Tx& tx, const std::string& user_id);
//! The provider profile of the signed-in caller, or 404 not_a_provider.
core::Result<Provider> provider_of_user(store::Tx& tx, const std::string& user_id);
//! Creates the provider (role, row) for an approved application.
Provider create_provider(store::Tx& tx, const std::string& user_id, const std::string& application_id,
                         const std::string& tier, std::int64_t now_ms);

inline constexpr const char* kApiKeyPrefix = "gpx_";

//! A new key; `key` is the only copy of the secret.
struct NewApiKey {
  std::string id;
  std::string key;
  std::string prefix;
  std::int64_t created_at_ms = 0;
};
NewApiKey create_api_key(store::Tx& tx, const std::string& provider_id, std::int64_t now_ms);
//! {items: [{id, prefix, created_at, last_used_at, revoked_at}], next_cursor}, newest first.
//! The provider's API keys, newest first (a JSON array).
nlohmann::json list_api_keys(store::Tx& tx, const std::string& provider_id);
//! Revokes one of the provider's keys (a second revoke keeps the first time); 404 when not theirs.
core::Result<nlohmann::json> revoke_api_key(store::Tx& tx, const std::string& provider_id, const std::string& key_id,
                                            std::int64_t now_ms);

//! A live (unrevoked) key found by its secret.
struct ApiKeyInfo {
  std::string key_id;
  std::string provider_id;
  std::string user_id;
  std::optional<std::int64_t> last_used_at_ms;
};
std::optional<ApiKeyInfo> find_api_key(store::Tx& tx, const std::string& key);
//! The same, by the key's SHA-256 (hex), as stored.
std::optional<ApiKeyInfo> find_api_key_by_hash(store::Tx& tx, const std::string& key_hash);
//! Records use, at most once a minute per key (so a busy agent does not write on every request).
void touch_api_key(store::Tx& tx, const std::string& key_id, std::int64_t now_ms);

}  // namespace gpunex::server
