#pragma once
// Every SQL statement of the onboarding area, and nothing else: provider
// applications and their history, providers, and the providers' API keys with
// the one-time reveal of the key issued at approval. Typed rows and status
// enums in and out; no other file reads or writes these tables. The rules
// (state machine, tiers, reveal states) are in core/application.hpp and
// core/api_key.hpp; the calls that combine them in applications.hpp and
// providers.hpp.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/api_key.hpp"
#include "core/application.hpp"
#include "store/store.hpp"

namespace gpunex::server {

//! One step of an application's history.
struct HistoryEntry {
  std::int64_t at_ms = 0;
  std::string by;  // user id
  std::optional<core::ApplicationStatus> from;
  core::ApplicationStatus to = core::ApplicationStatus::draft;
  std::string note;
};

//! An application as stored; `history` is filled by the calls that read it.
struct Application {
  std::string id;
  std::string user_id;
  core::ApplicationStatus status = core::ApplicationStatus::draft;
  core::ApplicationForm form;
  std::int64_t created_at_ms = 0;
  std::int64_t updated_at_ms = 0;
  std::optional<std::int64_t> submitted_at_ms;        // the latest submission
  std::optional<std::int64_t> first_submitted_at_ms;  // the first one (read by review_queue only)
  std::optional<std::int64_t> decided_at_ms;
  std::optional<core::Tier> tier;
  std::vector<HistoryEntry> history;
};

//! A provider: the user an approved application made one.
struct Provider {
  std::string id;
  std::string user_id;
  std::string application_id;
  std::string tier;  // core::tier_name
  std::int64_t created_at_ms = 0;
  nlohmann::json to_json() const;
};

namespace onboarding_repo {

// ---- applications ----

//! Inserts a new application with its status, form and times (no history).
void insert_application(store::Tx& tx, const Application& app);
//! The application without its history.
std::optional<Application> find_application(store::Tx& tx, const std::string& id);
std::vector<HistoryEntry> history_of(store::Tx& tx, const std::string& application_id);
//! Appends a step to the history (numbered after the last one).
void append_history(store::Tx& tx, const std::string& application_id, const HistoryEntry& step);
//! The id of the user's open application (core::is_open), if any.
std::optional<std::string> find_open_application_id(store::Tx& tx, const std::string& user_id);
//! The user's applications, newest first, without history.
std::vector<Application> applications_of_user(store::Tx& tx, const std::string& user_id);
//! The applications in `status`, the earliest first submission first (then the latest submission,
//! creation, id), with first_submitted_at_ms set; without history.
std::vector<Application> applications_in_review_order(store::Tx& tx, core::ApplicationStatus status);

//! Replaces the form if the status is still `expected`; false when it is not.
bool update_form(store::Tx& tx, const std::string& id, core::ApplicationStatus expected,
                 const core::ApplicationForm& form, std::int64_t now_ms);
//! Replaces the form whatever the status (a reviewer naming an unlisted GPU while deciding).
void replace_form(store::Tx& tx, const std::string& id, const core::ApplicationForm& form);

//! The status moves below happen only if the status is still `from` (two reviewers deciding at once
//! get one move); each returns whether it happened.

//! `from` → `to`, nothing else recorded.
bool move_status(store::Tx& tx, const std::string& id, core::ApplicationStatus from, core::ApplicationStatus to,
                 std::int64_t now_ms);
//! `from` → submitted, recording the submission time.
bool move_to_submitted(store::Tx& tx, const std::string& id, core::ApplicationStatus from, std::int64_t now_ms);
//! A reviewer's decision.
struct DecisionRecord {
  core::ApplicationStatus to = core::ApplicationStatus::approved;
  std::string by;
  std::optional<core::Tier> tier;  // approvals only
};
//! `from` → `d.to`, recording when, by whom and (approvals) the tier.
bool move_to_decided(store::Tx& tx, const std::string& id, core::ApplicationStatus from, const DecisionRecord& d,
                     std::int64_t now_ms);

// ---- providers ----

void insert_provider(store::Tx& tx, const Provider& p);
std::optional<Provider> find_provider(store::Tx& tx, const std::string& provider_id);
std::optional<Provider> find_provider_by_user(store::Tx& tx, const std::string& user_id);
//! Every provider's tier, by provider id (for joining in memory with rows of other areas); only
//! `providers`' when given.
std::unordered_map<std::string, core::Tier> provider_tiers(store::Tx& tx,
                                                           const std::vector<std::string>* providers = nullptr);

// ---- API keys ----

struct ApiKeyRow {
  std::string id;
  std::string provider_id;
  std::string key_hash;  // SHA-256 hex of the key
  std::string prefix;
  std::int64_t created_at_ms = 0;
  std::optional<std::int64_t> last_used_at_ms;
  std::optional<std::int64_t> revoked_at_ms;
  std::optional<core::KeptKey> kept;  // only the key issued at approval; read by api_keys_of only
};
void insert_api_key(store::Tx& tx, const ApiKeyRow& key);
//! The provider's keys, newest first, each with its kept-for-reveal state when it has one (key_hash not read).
std::vector<ApiKeyRow> api_keys_of(store::Tx& tx, const std::string& provider_id);
//! One of the provider's keys (revoked or not; key_hash not read).
std::optional<ApiKeyRow> find_api_key_of(store::Tx& tx, const std::string& provider_id, const std::string& key_id);
//! Revokes the key and tells every replica's API-key cache on commit (store::notify_change "api_key:ID").
void set_api_key_revoked(store::Tx& tx, const std::string& key_id, std::int64_t now_ms);
//! A live (unrevoked) key found by its hash, with its provider's user.
struct LiveApiKey {
  std::string key_id;
  std::string provider_id;
  std::string user_id;
  std::optional<std::int64_t> last_used_at_ms;
};
std::optional<LiveApiKey> find_live_api_key_by_hash(store::Tx& tx, const std::string& key_hash);
//! The provider of a live (unrevoked) key, by the key's id.
std::optional<std::string> live_api_key_provider(store::Tx& tx, const std::string& key_id);
//! The same check as SQL, for a read that makes it beside what it reads (the heartbeat's one read): true
//! when the key whose id is bound at its one `?` is live and of the provider in `provider_column`.
std::string live_api_key_of_sql(std::string_view provider_column);
//! Records use at `now_ms` unless the last recorded use is after `not_after_ms`.
void touch_api_key(store::Tx& tx, const std::string& key_id, std::int64_t now_ms, std::int64_t not_after_ms);

// ---- the approval key's one-time reveal ----

//! Keeps `secret` for one reveal by `user_id` until `expires_at_ms`.
void insert_kept_key(store::Tx& tx, const std::string& key_id, const std::string& user_id, const std::string& secret,
                     std::int64_t now_ms, std::int64_t expires_at_ms);
//! A kept key of the provider's, for its user: the state, the secret while kept, and the key's prefix.
struct KeptKeyRow {
  core::KeptKey state;
  std::optional<std::string> secret;
  std::string prefix;
};
std::optional<KeptKeyRow> find_kept_key(store::Tx& tx, const std::string& provider_id, const std::string& user_id,
                                        const std::string& key_id);
//! Clears the key's kept secret (if still kept) for `why`; how many were cleared (0 or 1).
std::int64_t clear_kept_key(store::Tx& tx, const std::string& key_id, core::RevealCleared why, std::int64_t now_ms);
//! Clears every kept secret past its expiry at `now_ms`; how many.
std::int64_t clear_expired_kept_keys(store::Tx& tx, std::int64_t now_ms);

}  // namespace onboarding_repo

}  // namespace gpunex::server
