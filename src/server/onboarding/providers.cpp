#include "server/onboarding/providers.hpp"

#include "core/account.hpp"
#include "server/platform/platform_repo.hpp"
#include "util/crypto.hpp"
#include "util/time.hpp"

namespace gpunex::server {

namespace {

constexpr std::int64_t kDayMs = 86'400'000;

class OnboardingApiKeys final : public ApiKeyDirectory {
 public:
  std::optional<ApiKeyInfo> find_by_hash(store::Tx& tx, const std::string& key_hash) const override {
    auto k = find_api_key_by_hash(tx, key_hash);
    if (!k) return std::nullopt;
    return ApiKeyInfo{std::move(k->key_id), std::move(k->user_id), k->last_used_at_ms};
  }
  void record_use(store::Tx& tx, const std::string& key_id, std::int64_t now_ms) const override {
    touch_api_key(tx, key_id, now_ms);
  }
};

}  // namespace

nlohmann::json Provider::to_json() const {
  return {{"provider_id", id},
          {"user_id", user_id},
          {"application_id", application_id},
          {"tier", tier},
          {"created_at", util::rfc3339(created_at_ms)}};
}

std::optional<Provider> find_provider_by_user(store::Tx& tx, const std::string& user_id) {
  return onboarding_repo::find_provider_by_user(tx, user_id);
}

std::optional<Provider> find_provider(store::Tx& tx, const std::string& provider_id) {
  return onboarding_repo::find_provider(tx, provider_id);
}

std::optional<ProviderContact> provider_contact(store::Tx& tx, const std::string& provider_id) {
  auto p = onboarding_repo::find_provider(tx, provider_id);
  if (!p) return std::nullopt;
  auto u = platform_repo::find_user(tx, p->user_id);
  if (!u) return std::nullopt;
  return ProviderContact{u->id, u->email};
}

std::optional<std::string> provider_of_api_key(store::Tx& tx, const std::string& api_key_id) {
  return onboarding_repo::live_api_key_provider(tx, api_key_id);
}

Provider create_provider(store::Tx& tx, const std::string& user_id, const std::string& application_id,
                         core::Tier tier, std::int64_t now_ms) {
  Provider p{util::new_id("prv"), user_id, application_id, std::string(core::tier_name(tier)), now_ms};
  onboarding_repo::insert_provider(tx, p);
  platform_repo::grant_role(tx, user_id, core::Role::provider, now_ms);
  return p;
}

NewApiKey create_api_key(store::Tx& tx, const std::string& provider_id, std::int64_t now_ms) {
  NewApiKey k;
  k.id = util::new_id("key");
  k.key = std::string(kApiKeyPrefix) + util::random_token(32);
  k.prefix = k.key.substr(0, 12);
  k.created_at_ms = now_ms;
  onboarding_repo::insert_api_key(tx, {k.id, provider_id, util::sha256_hex(k.key), k.prefix, now_ms, std::nullopt,
                                       std::nullopt, std::nullopt});
  return k;
}

nlohmann::json list_api_keys(store::Tx& tx, const std::string& provider_id, std::int64_t now_ms) {
  nlohmann::json items = nlohmann::json::array();
  for (const auto& k : onboarding_repo::api_keys_of(tx, provider_id)) {
    nlohmann::json reveal = nullptr;
    if (k.kept) {
      reveal = {{"state", core::reveal_state_name(core::reveal_state(*k.kept, now_ms))},
                {"expires_at", util::rfc3339(k.kept->expires_at_ms)},
                {"cleared_at", util::rfc3339_or_null(k.kept->cleared_at_ms)}};
    }
    items.push_back({{"id", k.id},
                     {"prefix", k.prefix},
                     {"created_at", util::rfc3339(k.created_at_ms)},
                     {"last_used_at", util::rfc3339_or_null(k.last_used_at_ms)},
                     {"revoked_at", util::rfc3339_or_null(k.revoked_at_ms)},
                     {"active", !k.revoked_at_ms.has_value()},
                     {"reveal", reveal}});
  }
  return items;
}

core::Result<nlohmann::json> revoke_api_key(store::Tx& tx, const std::string& provider_id, const std::string& key_id,
                                            std::int64_t now_ms) {
  auto k = onboarding_repo::find_api_key_of(tx, provider_id, key_id);
  if (!k) return core::Error::make(core::ErrorCode::not_found, "no such API key");
  std::int64_t at = now_ms;
  if (!k->revoked_at_ms) {
    onboarding_repo::set_api_key_revoked(tx, key_id, now_ms);
    onboarding_repo::clear_kept_key(tx, key_id, core::RevealCleared::revoked, now_ms);
  } else {
    at = *k->revoked_at_ms;
  }
  return nlohmann::json{{"id", key_id}, {"prefix", k->prefix}, {"revoked_at", util::rfc3339(at)}, {"active", false}};
}

namespace {
// The seal's context: a secret sealed for one purpose never opens under another.
constexpr std::string_view kRevealSeal = "api_key_reveal";
}  // namespace

void keep_for_reveal(store::Tx& tx, const NewApiKey& key, const std::string& user_id, const std::string& server_secret,
                     std::int64_t now_ms) {
  // Sealed with the key's id inside, so a sealed copy moved onto another row does not open there.
  onboarding_repo::insert_kept_key(tx, key.id, user_id, util::seal(kRevealSeal, server_secret + "\n" + key.id, key.key),
                                   now_ms, now_ms + kApiKeyRevealDays * kDayMs);
}

core::Result<nlohmann::json> reveal_api_key(store::Tx& tx, const std::string& provider_id, const std::string& user_id,
                                            const std::string& key_id, const std::string& server_secret,
                                            std::int64_t now_ms) {
  using core::Error;
  using core::ErrorCode;
  auto kept = onboarding_repo::find_kept_key(tx, provider_id, user_id, key_id);
  if (!kept) return Error::make(ErrorCode::not_found, "no such API key waiting to be shown");
  const auto& cleared_at = kept->state.cleared_at_ms;
  if (auto s = core::check_reveal(kept->state, now_ms, cleared_at ? util::rfc3339(*cleared_at) : ""); !s) {
    return std::move(s).error();
  }
  // A row from before keys were sealed holds the key itself (it starts with the key prefix, which base64 never does).
  const std::string& stored = *kept->secret;
  auto key = stored.rfind(kApiKeyPrefix, 0) == 0
                 ? std::optional<std::string>(stored)
                 : util::unseal(kRevealSeal, server_secret + "\n" + key_id, stored);
  if (!key) {
    return Error::make(ErrorCode::internal, "the kept key was sealed under another server secret (server_secret)");
  }
  // Only the transaction that clears it hands it out (two reveals at once get one key).
  if (onboarding_repo::clear_kept_key(tx, key_id, core::RevealCleared::revealed, now_ms) != 1) {
    return Error::make(ErrorCode::gone, "this API key was already shown").with_code("key_already_shown");
  }
  return nlohmann::json{{"id", key_id},
                        {"prefix", kept->prefix},
                        {"api_key", *key},
                        {"provider_id", provider_id},
                        {"revealed_at", util::rfc3339(now_ms)}};
}

std::int64_t expire_key_reveals(store::Tx& tx, std::int64_t now_ms) {
  return onboarding_repo::clear_expired_kept_keys(tx, now_ms);
}

std::optional<LiveApiKey> find_api_key(store::Tx& tx, const std::string& key) {
  return find_api_key_by_hash(tx, util::sha256_hex(key));
}

std::optional<LiveApiKey> find_api_key_by_hash(store::Tx& tx, const std::string& key_hash) {
  return onboarding_repo::find_live_api_key_by_hash(tx, key_hash);
}

void touch_api_key(store::Tx& tx, const std::string& key_id, std::int64_t now_ms) {
  onboarding_repo::touch_api_key(tx, key_id, now_ms, now_ms - core::kApiKeyTouchIntervalMs);
}

std::unique_ptr<const ApiKeyDirectory> api_key_directory() { return std::make_unique<OnboardingApiKeys>(); }

core::Result<Provider> provider_of_user(store::Tx& tx, const std::string& user_id) {
  auto p = find_provider_by_user(tx, user_id);
  if (!p) {
    return core::Error::make(core::ErrorCode::not_found, "this account has no provider profile")
        .with_code("not_a_provider");
  }
  return std::move(*p);
}

}  // namespace gpunex::server
