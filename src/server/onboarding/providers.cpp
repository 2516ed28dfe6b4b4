#include "server/onboarding/providers.hpp"

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

namespace {
std::optional<Provider> provider_from(const std::optional<store::Row>& r) {
  if (!r) return std::nullopt;
  return Provider{r->str(0), r->str(1), r->str(2), r->str(3), r->i64(4)};
}
}  // namespace

std::optional<Provider> find_provider_by_user(store::Tx& tx, const std::string& user_id) {
  return provider_from(
      tx.query_one("SELECT id, user_id, application_id, tier, created_at FROM providers WHERE user_id = ?", {user_id}));
}

std::optional<Provider> find_provider(store::Tx& tx, const std::string& provider_id) {
  return provider_from(
      tx.query_one("SELECT id, user_id, application_id, tier, created_at FROM providers WHERE id = ?", {provider_id}));
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

nlohmann::json list_api_keys(store::Tx& tx, const std::string& provider_id, std::int64_t now_ms) {
  nlohmann::json items = nlohmann::json::array();
  for (const auto& r : tx.query("SELECT k.id, k.prefix, k.created_at, k.last_used_at, k.revoked_at, v.api_key_id, "
                                "v.expires_at, v.cleared_at, v.cleared_why FROM api_keys k "
                                "LEFT JOIN api_key_reveals v ON v.api_key_id = k.id "
                                "WHERE k.provider_id = ? ORDER BY k.created_at DESC, k.id",
                                {provider_id})) {
    nlohmann::json reveal = nullptr;
    if (!r.is_null(5)) {
      // cleared_at is set whenever the plaintext is cleared.
      const std::string state =
          r.is_null(7) ? (now_ms >= r.i64(6) ? "expired" : "available") : r.opt_str(8).value_or("expired");
      reveal = {{"state", state}, {"expires_at", util::rfc3339(r.i64(6))}, {"cleared_at", opt_time(r.opt_i64(7))}};
    }
    items.push_back({{"id", r.str(0)},
                     {"prefix", r.str(1)},
                     {"created_at", util::rfc3339(r.i64(2))},
                     {"last_used_at", opt_time(r.opt_i64(3))},
                     {"revoked_at", opt_time(r.opt_i64(4))},
                     {"active", r.is_null(4)},
                     {"reveal", reveal}});
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
    tx.exec("UPDATE api_key_reveals SET secret = NULL, cleared_at = ?, cleared_why = 'revoked' "
            "WHERE api_key_id = ? AND secret IS NOT NULL",
            {now_ms, key_id});
  } else {
    at = r->i64(0);
  }
  return nlohmann::json{{"id", key_id}, {"prefix", r->str(1)}, {"revoked_at", util::rfc3339(at)}, {"active", false}};
}

void keep_for_reveal(store::Tx& tx, const NewApiKey& key, const std::string& user_id, std::int64_t now_ms) {
  tx.exec("INSERT INTO api_key_reveals (api_key_id, user_id, secret, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
          {key.id, user_id, key.key, now_ms, now_ms + kApiKeyRevealDays * 86'400'000});
}

core::Result<nlohmann::json> reveal_api_key(store::Tx& tx, const std::string& provider_id, const std::string& user_id,
                                            const std::string& key_id, std::int64_t now_ms) {
  using core::Error;
  using core::ErrorCode;
  auto r = tx.query_one(
      "SELECT v.secret, v.expires_at, v.cleared_at, v.cleared_why, k.prefix FROM api_key_reveals v "
      "JOIN api_keys k ON k.id = v.api_key_id WHERE v.api_key_id = ? AND v.user_id = ? AND k.provider_id = ?",
      {key_id, user_id, provider_id});
  if (!r) return Error::make(ErrorCode::not_found, "no such API key waiting to be shown");
  const std::string why = r->opt_str(3).value_or("");
  if (why == "revealed") {
    return Error::make(ErrorCode::gone, "this API key was already shown, at " + util::rfc3339(r->i64(2)) +
                                            "; it is never shown again. If you lost it, create a new key "
                                            "and revoke this one")
        .with_code("key_already_shown");
  }
  if (why == "revoked") {
    return Error::make(ErrorCode::gone, "this API key was revoked before it was shown; create a new key")
        .with_code("key_revoked");
  }
  if (r->is_null(0) || now_ms >= r->i64(1)) {
    return Error::make(ErrorCode::gone, "this API key was not shown within " + std::to_string(kApiKeyRevealDays) +
                                            " days and is no longer kept; use the one we e-mailed you, or "
                                            "create a new key")
        .with_code("key_reveal_expired");
  }
  // Only the transaction that clears it hands it out (two reveals at once get one key).
  auto n = tx.exec("UPDATE api_key_reveals SET secret = NULL, cleared_at = ?, cleared_why = 'revealed' "
                   "WHERE api_key_id = ? AND secret IS NOT NULL",
                   {now_ms, key_id});
  if (n != 1) return Error::make(ErrorCode::gone, "this API key was already shown").with_code("key_already_shown");
  return nlohmann::json{{"id", key_id},
                        {"prefix", r->str(4)},
                        {"api_key", r->str(0)},
                        {"provider_id", provider_id},
                        {"revealed_at", util::rfc3339(now_ms)}};
}

std::int64_t expire_key_reveals(store::Tx& tx, std::int64_t now_ms) {
  return tx.exec("UPDATE api_key_reveals SET secret = NULL, cleared_at = ?, cleared_why = 'expired' "
                 "WHERE expires_at <= ? AND secret IS NOT NULL",
                 {now_ms, now_ms});
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
