#include "server/providers.hpp"

#include "util/crypto.hpp"
#include "util/time.hpp"

namespace gpunex::server {

namespace {
nlohmann::json opt_time(const std::optional<std::int64_t>& t) {
  return t ? nlohmann::json(util::rfc3339(*t)) : nlohmann::json(nullptr);
}
}  // namespace

nlohmann::json Provider::to_json() const {
  return {{"provider_id", id},
          {"user_id", user_id},
          {"application_id", application_id},
          {"tier", tier},
          {"created_at", util::rfc3339(created_at_ms)}};
}

std::optional<Provider> find_provider_by_user(store::Tx& tx, const std::string& user_id) {
  auto r =
      tx.query_one("SELECT id, user_id, application_id, tier, created_at FROM providers WHERE user_id = ?", {user_id});
  if (!r) return std::nullopt;
  return Provider{r->str(0), r->str(1), r->str(2), r->str(3), r->i64(4)};
}

Provider create_provider(store::Tx& tx, const std::string& user_id, const std::string& application_id,
                         const std::string& tier, std::int64_t now_ms) {
  Provider p{util::new_id("prv"), user_id, application_id, tier, now_ms};
  tx.exec("INSERT INTO providers (id, user_id, application_id, tier, created_at) VALUES (?, ?, ?, ?, ?)",
          {p.id, p.user_id, p.application_id, p.tier, now_ms});
  tx.exec(
      "INSERT INTO user_roles (user_id, role, granted_at) VALUES (?, 'provider', ?) "
      "ON CONFLICT (user_id, role) DO NOTHING",
      {user_id, now_ms});
  return p;
}

NewApiKey create_api_key(store::Tx& tx, const std::string& provider_id, std::int64_t now_ms) {
  NewApiKey k;
  k.id = util::new_id("key");
  k.key = std::string(kApiKeyPrefix) + util::random_token(32);
  k.prefix = k.key.substr(0, 12);
  k.created_at_ms = now_ms;
  tx.exec("INSERT INTO api_keys (id, provider_id, key_hash, prefix, created_at) VALUES (?, ?, ?, ?, ?)",
          {k.id, provider_id, util::sha256_hex(k.key), k.prefix, now_ms});
  return k;
}

nlohmann::json list_api_keys(store::Tx& tx, const std::string& provider_id) {
  nlohmann::json items = nlohmann::json::array();
  for (const auto& r : tx.query("SELECT id, prefix, created_at, last_used_at, revoked_at FROM api_keys "
                                "WHERE provider_id = ? ORDER BY created_at DESC, id",
                                {provider_id})) {
    items.push_back({{"id", r.str(0)},
                     {"prefix", r.str(1)},
                     {"created_at", util::rfc3339(r.i64(2))},
                     {"last_used_at", opt_time(r.opt_i64(3))},
                     {"revoked_at", opt_time(r.opt_i64(4))},
                     {"active", r.is_null(4)}});
  }
  return items;
}

core::Result<nlohmann::json> revoke_api_key(store::Tx& tx, const std::string& provider_id, const std::string& key_id,
                                            std::int64_t now_ms) {
  auto r =
      tx.query_one("SELECT revoked_at, prefix FROM api_keys WHERE id = ? AND provider_id = ?", {key_id, provider_id});
  if (!r) return core::Error::make(core::ErrorCode::not_found, "no such API key");
  std::int64_t at = now_ms;
  if (r->is_null(0)) {
    tx.exec("UPDATE api_keys SET revoked_at = ? WHERE id = ?", {now_ms, key_id});
  } else {
    at = r->i64(0);
  }
  return nlohmann::json{{"id", key_id}, {"prefix", r->str(1)}, {"revoked_at", util::rfc3339(at)}, {"active", false}};
}

std::optional<ApiKeyInfo> find_api_key(store::Tx& tx, const std::string& key) {
  return find_api_key_by_hash(tx, util::sha256_hex(key));
}

std::optional<ApiKeyInfo> find_api_key_by_hash(store::Tx& tx, const std::string& key_hash) {
  auto r = tx.query_one(
      "SELECT k.id, k.provider_id, p.user_id, k.last_used_at FROM api_keys k "
      "JOIN providers p ON p.id = k.provider_id WHERE k.key_hash = ? AND k.revoked_at IS NULL",
      {key_hash});
  if (!r) return std::nullopt;
  return ApiKeyInfo{r->str(0), r->str(1), r->str(2), r->opt_i64(3)};
}

void touch_api_key(store::Tx& tx, const std::string& key_id, std::int64_t now_ms) {
  tx.exec("UPDATE api_keys SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at <= ?)",
          {now_ms, key_id, now_ms - 60'000});
}

core::Result<Provider> provider_of_user(store::Tx& tx, const std::string& user_id) {
  auto p = find_provider_by_user(tx, user_id);
  if (!p) {
    return core::Error::make(core::ErrorCode::not_found, "this account has no provider profile")
        .with_code("not_a_provider");
  }
  return std::move(*p);
}

}  // namespace gpunex::server
