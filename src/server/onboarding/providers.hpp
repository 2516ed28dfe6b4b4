#pragma once
// Providers and their API keys. A key is "gpx_" + base64url of 32 random bytes,
// returned once at creation and stored only as its SHA-256 with a short
// display prefix; a revoked key stops authenticating at once. The one exception,
// the key issued at approval, also waits in plaintext for its owner to reveal it
// once in the dashboard (the reviewer decided, the provider was not there), for
// at most kApiKeyRevealDays. The SQL is in onboarding_repo.hpp, the reveal
// rules in core/api_key.hpp; the request pipeline authenticates keys through
// api_key_directory() (platform/api_key_auth.hpp), which reads them here.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/api_key.hpp"
#include "core/result.hpp"
#include "server/onboarding/onboarding_repo.hpp"
#include "server/platform/api_key_auth.hpp"
#include "store/store.hpp"

namespace gpunex::server {

std::optional<Provider> find_provider_by_user(store::Tx& tx, const std::string& user_id);
std::optional<Provider> find_provider(store::Tx& tx, const std::string& provider_id);
//! The provider profile of the signed-in caller, or 404 not_a_provider.
core::Result<Provider> provider_of_user(store::Tx& tx, const std::string& user_id);
//! Where to tell a provider something: its user and that user's e-mail.
struct ProviderContact {
  std::string user_id;
  std::string email;
};
std::optional<ProviderContact> provider_contact(store::Tx& tx, const std::string& provider_id);
//! The provider a live (unrevoked) API key belongs to.
std::optional<std::string> provider_of_api_key(store::Tx& tx, const std::string& api_key_id);
//! Creates the provider (role, row) for an approved application.
Provider create_provider(store::Tx& tx, const std::string& user_id, const std::string& application_id,
                         core::Tier tier, std::int64_t now_ms);

//! A new key; `key` is the only copy of the secret.
struct NewApiKey {
  std::string id;
  std::string key;
  std::string prefix;
  std::int64_t created_at_ms = 0;
};
NewApiKey create_api_key(store::Tx& tx, const std::string& provider_id, std::int64_t now_ms);
//! The provider's API keys, newest first (a JSON array of {id, prefix, created_at, last_used_at,
//! revoked_at, active, reveal}); `reveal` is null, or for the key issued at approval
//! {state: available|revealed|revoked|expired, expires_at, cleared_at}.
nlohmann::json list_api_keys(store::Tx& tx, const std::string& provider_id, std::int64_t now_ms);
//! Revokes one of the provider's keys (a second revoke keeps the first time) and clears its
//! one-time reveal; 404 when not theirs.
core::Result<nlohmann::json> revoke_api_key(store::Tx& tx, const std::string& provider_id, const std::string& key_id,
                                            std::int64_t now_ms);

//! How long the key issued at approval waits for its owner to reveal it in the dashboard; after
//! that the sealed copy is cleared and a new key is made on the API keys page.
inline constexpr std::int64_t kApiKeyRevealDays = core::kApiKeyRevealDays;

//! Keeps `key` for one reveal by `user_id` (the approval's key; the same transaction), sealed under
//! `server_secret` (Config::server_secret): the store holds no key in clear.
void keep_for_reveal(store::Tx& tx, const NewApiKey& key, const std::string& user_id, const std::string& server_secret,
                     std::int64_t now_ms);
//! Hands the kept key of one of the provider's keys to its owner once and clears it:
//! {id, prefix, api_key, provider_id, revealed_at}. 404 when the key is not theirs or was never
//! kept; 410 (key_already_shown, key_revoked, key_reveal_expired) when it is no more; 500 when it was
//! sealed under another server secret.
core::Result<nlohmann::json> reveal_api_key(store::Tx& tx, const std::string& provider_id, const std::string& user_id,
                                            const std::string& key_id, const std::string& server_secret,
                                            std::int64_t now_ms);
//! Clears the plaintext of every reveal past its expiry; the number cleared.
std::int64_t expire_key_reveals(store::Tx& tx, std::int64_t now_ms);

//! A live (unrevoked) key found by its secret (kApiKeyPrefix, platform/api_key_auth.hpp, starts it).
using LiveApiKey = onboarding_repo::LiveApiKey;
std::optional<LiveApiKey> find_api_key(store::Tx& tx, const std::string& key);
//! The same, by the key's SHA-256 (hex), as stored.
std::optional<LiveApiKey> find_api_key_by_hash(store::Tx& tx, const std::string& key_hash);
//! Records use, at most once a minute per key (so a busy agent does not write on every request).
void touch_api_key(store::Tx& tx, const std::string& key_id, std::int64_t now_ms);
//! The keys as the request pipeline authenticates with them: find_api_key_by_hash and touch_api_key.
std::unique_ptr<const ApiKeyDirectory> api_key_directory();

}  // namespace gpunex::server
