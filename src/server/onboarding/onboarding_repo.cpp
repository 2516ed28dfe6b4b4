#include "server/onboarding/onboarding_repo.hpp"

namespace gpunex::server::onboarding_repo {

using core::ApplicationStatus;

namespace {

std::string name_of(ApplicationStatus s) { return std::string(core::status_name(s)); }

ApplicationStatus status_of(const std::string& s) { return core::parse_status(s).value_or(ApplicationStatus::draft); }

std::string form_text(const core::ApplicationForm& form) { return core::to_json(form).dump(); }

constexpr const char* kApplicationCols =
    "id, user_id, status, form, created_at, updated_at, submitted_at, decided_at, tier";

Application application_from(const store::Row& r) {
  Application a;
  a.id = r.str(0);
  a.user_id = r.str(1);
  a.status = status_of(r.str(2));
  // The stored form was validated when written; it is re-read without the outside checks.
  core::FormCheckers trust{[](std::string_view) { return true; }, [](std::string_view) { return true; }};
  auto form = core::parse_application_form(nlohmann::json::parse(r.str(3)), trust);
  if (form) a.form = std::move(*form);
  a.created_at_ms = r.i64(4);
  a.updated_at_ms = r.i64(5);
  a.submitted_at_ms = r.opt_i64(6);
  a.decided_at_ms = r.opt_i64(7);
  if (auto tier = r.opt_str(8)) a.tier = core::parse_tier(*tier);
  return a;
}

}  // namespace

// ---- applications ----

void insert_application(store::Tx& tx, const Application& a) {
  tx.exec("INSERT INTO applications (id, user_id, status, form, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
          {a.id, a.user_id, name_of(a.status), form_text(a.form), a.created_at_ms, a.updated_at_ms});
}

std::optional<Application> find_application(store::Tx& tx, const std::string& id) {
  auto r = tx.query_one(std::string("SELECT ") + kApplicationCols + " FROM applications WHERE id = ?", {id});
  if (!r) return std::nullopt;
  return application_from(*r);
}

std::vector<HistoryEntry> history_of(store::Tx& tx, const std::string& application_id) {
  std::vector<HistoryEntry> out;
  for (const auto& h : tx.query("SELECT at, by_user, from_status, to_status, note FROM application_history "
                                "WHERE application_id = ? ORDER BY seq",
                                {application_id})) {
    std::optional<ApplicationStatus> from;
    if (auto f = h.opt_str(2)) from = status_of(*f);
    out.push_back(HistoryEntry{h.i64(0), h.str(1), from, status_of(h.str(3)), h.str(4)});
  }
  return out;
}

void append_history(store::Tx& tx, const std::string& application_id, const HistoryEntry& step) {
  auto seq = tx.query_one("SELECT COALESCE(MAX(seq), 0) + 1 FROM application_history WHERE application_id = ?",
                          {application_id});
  const store::Value from = step.from ? store::Value(name_of(*step.from)) : store::Value(nullptr);
  tx.exec("INSERT INTO application_history (application_id, seq, at, by_user, from_status, to_status, note) "
          "VALUES (?, ?, ?, ?, ?, ?, ?)",
          {application_id, seq->i64(0), step.at_ms, step.by, from, name_of(step.to), step.note});
}

std::optional<std::string> find_open_application_id(store::Tx& tx, const std::string& user_id) {
  std::string in;
  store::Params params{user_id};
  for (auto s : core::all_statuses()) {
    if (!core::is_open(s)) continue;
    in += in.empty() ? "?" : ", ?";
    params.emplace_back(name_of(s));
  }
  auto r = tx.query_one("SELECT id FROM applications WHERE user_id = ? AND status IN (" + in + ")", params);
  if (!r) return std::nullopt;
  return r->str(0);
}

std::vector<Application> applications_of_user(store::Tx& tx, const std::string& user_id) {
  std::vector<Application> out;
  for (const auto& r : tx.query(std::string("SELECT ") + kApplicationCols +
                                    " FROM applications WHERE user_id = ? ORDER BY created_at DESC, id",
                                {user_id})) {
    out.push_back(application_from(r));
  }
  return out;
}

std::vector<Application> applications_in_review_order(store::Tx& tx, ApplicationStatus status) {
  std::vector<Application> out;
  for (const auto& r : tx.query(std::string("SELECT ") + kApplicationCols +
                                    ", (SELECT MIN(h.at) FROM application_history h WHERE h.application_id = "
                                    "applications.id AND h.to_status = ?) AS first_submitted_at "
                                    "FROM applications WHERE status = ? "
                                    "ORDER BY first_submitted_at, submitted_at, created_at, id",
                                {name_of(ApplicationStatus::submitted), name_of(status)})) {
    out.push_back(application_from(r));
    out.back().first_submitted_at_ms = r.opt_i64(9);
  }
  return out;
}

bool update_form(store::Tx& tx, const std::string& id, ApplicationStatus expected, const core::ApplicationForm& form,
                 std::int64_t now_ms) {
  return tx.exec("UPDATE applications SET form = ?, updated_at = ? WHERE id = ? AND status = ?",
                 {form_text(form), now_ms, id, name_of(expected)}) == 1;
}

void replace_form(store::Tx& tx, const std::string& id, const core::ApplicationForm& form) {
  tx.exec("UPDATE applications SET form = ? WHERE id = ?", {form_text(form), id});
}

bool move_status(store::Tx& tx, const std::string& id, ApplicationStatus from, ApplicationStatus to,
                 std::int64_t now_ms) {
  return tx.exec("UPDATE applications SET status = ?, updated_at = ? WHERE id = ? AND status = ?",
                 {name_of(to), now_ms, id, name_of(from)}) == 1;
}

bool move_to_submitted(store::Tx& tx, const std::string& id, ApplicationStatus from, std::int64_t now_ms) {
  return tx.exec("UPDATE applications SET status = ?, updated_at = ?, submitted_at = ? WHERE id = ? AND status = ?",
                 {name_of(ApplicationStatus::submitted), now_ms, now_ms, id, name_of(from)}) == 1;
}

bool move_to_decided(store::Tx& tx, const std::string& id, ApplicationStatus from, const DecisionRecord& d,
                     std::int64_t now_ms) {
  if (d.tier) {
    return tx.exec("UPDATE applications SET status = ?, updated_at = ?, decided_at = ?, decided_by = ?, tier = ? "
                   "WHERE id = ? AND status = ?",
                   {name_of(d.to), now_ms, now_ms, d.by, std::string(core::tier_name(*d.tier)), id, name_of(from)}) ==
           1;
  }
  return tx.exec("UPDATE applications SET status = ?, updated_at = ?, decided_at = ?, decided_by = ? "
                 "WHERE id = ? AND status = ?",
                 {name_of(d.to), now_ms, now_ms, d.by, id, name_of(from)}) == 1;
}

// ---- providers ----

namespace {

constexpr const char* kProviderCols = "id, user_id, application_id, tier, created_at";

std::optional<Provider> provider_from(const std::optional<store::Row>& r) {
  if (!r) return std::nullopt;
  return Provider{r->str(0), r->str(1), r->str(2), r->str(3), r->i64(4)};
}

}  // namespace

void insert_provider(store::Tx& tx, const Provider& p) {
  tx.exec("INSERT INTO providers (id, user_id, application_id, tier, created_at) VALUES (?, ?, ?, ?, ?)",
          {p.id, p.user_id, p.application_id, p.tier, p.created_at_ms});
}

std::optional<Provider> find_provider(store::Tx& tx, const std::string& provider_id) {
  return provider_from(
      tx.query_one(std::string("SELECT ") + kProviderCols + " FROM providers WHERE id = ?", {provider_id}));
}

std::optional<Provider> find_provider_by_user(store::Tx& tx, const std::string& user_id) {
  return provider_from(
      tx.query_one(std::string("SELECT ") + kProviderCols + " FROM providers WHERE user_id = ?", {user_id}));
}

std::unordered_map<std::string, core::Tier> provider_tiers(store::Tx& tx, const std::vector<std::string>* providers) {
  std::string sql = "SELECT id, tier FROM providers";
  store::Params params;
  if (providers) {
    sql += " WHERE id" + store::in_list(providers->size());
    params.assign(providers->begin(), providers->end());
  }
  std::unordered_map<std::string, core::Tier> out;
  for (const auto& r : tx.query(sql, params)) {
    out.emplace(r.str(0), core::parse_tier(r.str(1)).value_or(core::Tier::community));
  }
  return out;
}

// ---- API keys ----

void insert_api_key(store::Tx& tx, const ApiKeyRow& k) {
  tx.exec("INSERT INTO api_keys (id, provider_id, key_hash, prefix, created_at) VALUES (?, ?, ?, ?, ?)",
          {k.id, k.provider_id, k.key_hash, k.prefix, k.created_at_ms});
}

std::vector<ApiKeyRow> api_keys_of(store::Tx& tx, const std::string& provider_id) {
  std::vector<ApiKeyRow> out;
  for (const auto& r : tx.query("SELECT k.id, k.prefix, k.created_at, k.last_used_at, k.revoked_at, v.api_key_id, "
                                "v.expires_at, v.cleared_at, v.cleared_why FROM api_keys k "
                                "LEFT JOIN api_key_reveals v ON v.api_key_id = k.id "
                                "WHERE k.provider_id = ? ORDER BY k.created_at DESC, k.id",
                                {provider_id})) {
    ApiKeyRow k{r.str(0), provider_id, "", r.str(1), r.i64(2), r.opt_i64(3), r.opt_i64(4), std::nullopt};
    if (!r.is_null(5)) {
      std::optional<core::RevealCleared> why;
      if (auto w = r.opt_str(8)) why = core::parse_reveal_cleared(*w);
      // The secret is cleared exactly when cleared_at is set.
      k.kept = core::KeptKey{r.is_null(7), r.i64(6), r.opt_i64(7), why};
    }
    out.push_back(std::move(k));
  }
  return out;
}

std::optional<ApiKeyRow> find_api_key_of(store::Tx& tx, const std::string& provider_id, const std::string& key_id) {
  auto r = tx.query_one("SELECT id, prefix, created_at, last_used_at, revoked_at FROM api_keys "
                        "WHERE id = ? AND provider_id = ?",
                        {key_id, provider_id});
  if (!r) return std::nullopt;
  return ApiKeyRow{r->str(0), provider_id, "", r->str(1), r->i64(2), r->opt_i64(3), r->opt_i64(4), std::nullopt};
}

void set_api_key_revoked(store::Tx& tx, const std::string& key_id, std::int64_t now_ms) {
  tx.exec("UPDATE api_keys SET revoked_at = ? WHERE id = ?", {now_ms, key_id});
  store::notify_change(tx, "api_key:" + key_id);  // other replicas evict it from their caches on commit
}

std::optional<LiveApiKey> find_live_api_key_by_hash(store::Tx& tx, const std::string& key_hash) {
  auto r = tx.query_one(
      "SELECT k.id, k.provider_id, p.user_id, k.last_used_at FROM api_keys k "
      "JOIN providers p ON p.id = k.provider_id WHERE k.key_hash = ? AND k.revoked_at IS NULL",
      {key_hash});
  if (!r) return std::nullopt;
  return LiveApiKey{r->str(0), r->str(1), r->str(2), r->opt_i64(3)};
}

std::optional<std::string> live_api_key_provider(store::Tx& tx, const std::string& key_id) {
  auto r = tx.query_one("SELECT provider_id FROM api_keys WHERE id = ? AND revoked_at IS NULL", {key_id});
  if (!r) return std::nullopt;
  return r->str(0);
}

std::string live_api_key_of_sql(std::string_view provider_column) {
  return "EXISTS (SELECT 1 FROM api_keys k WHERE k.id = ? AND k.revoked_at IS NULL AND k.provider_id = " +
         std::string(provider_column) + ")";
}

void touch_api_key(store::Tx& tx, const std::string& key_id, std::int64_t now_ms, std::int64_t not_after_ms) {
  tx.exec("UPDATE api_keys SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at <= ?)",
          {now_ms, key_id, not_after_ms});
}

// ---- the approval key's one-time reveal ----

void insert_kept_key(store::Tx& tx, const std::string& key_id, const std::string& user_id, const std::string& secret,
                     std::int64_t now_ms, std::int64_t expires_at_ms) {
  tx.exec("INSERT INTO api_key_reveals (api_key_id, user_id, secret, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
          {key_id, user_id, secret, now_ms, expires_at_ms});
}

std::optional<KeptKeyRow> find_kept_key(store::Tx& tx, const std::string& provider_id, const std::string& user_id,
                                        const std::string& key_id) {
  auto r = tx.query_one(
      "SELECT v.secret, v.expires_at, v.cleared_at, v.cleared_why, k.prefix FROM api_key_reveals v "
      "JOIN api_keys k ON k.id = v.api_key_id WHERE v.api_key_id = ? AND v.user_id = ? AND k.provider_id = ?",
      {key_id, user_id, provider_id});
  if (!r) return std::nullopt;
  std::optional<core::RevealCleared> why;
  if (auto w = r->opt_str(3)) why = core::parse_reveal_cleared(*w);
  return KeptKeyRow{core::KeptKey{!r->is_null(0), r->i64(1), r->opt_i64(2), why}, r->opt_str(0), r->str(4)};
}

std::int64_t clear_kept_key(store::Tx& tx, const std::string& key_id, core::RevealCleared why, std::int64_t now_ms) {
  return tx.exec("UPDATE api_key_reveals SET secret = NULL, cleared_at = ?, cleared_why = ? "
                 "WHERE api_key_id = ? AND secret IS NOT NULL",
                 {now_ms, std::string(core::reveal_cleared_name(why)), key_id});
}

std::int64_t clear_expired_kept_keys(store::Tx& tx, std::int64_t now_ms) {
  return tx.exec("UPDATE api_key_reveals SET secret = NULL, cleared_at = ?, cleared_why = ? "
                 "WHERE expires_at <= ? AND secret IS NOT NULL",
                 {now_ms, std::string(core::reveal_cleared_name(core::RevealCleared::expired)), now_ms});
}

}  // namespace gpunex::server::onboarding_repo
