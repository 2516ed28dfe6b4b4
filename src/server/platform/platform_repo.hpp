#pragma once
// Every SQL statement of the platform area, and nothing else: users and their
// roles, sessions, Idempotency-Key answers, the mail outbox, in-app
// notifications and the schema version readiness reports. Typed rows and enums
// in and out; no other file reads or writes these tables. Rules (hashing,
// retries, paging) stay with the callers; one function = one statement or a
// fixed pair of them in the caller's transaction.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/account.hpp"
#include "store/store.hpp"

namespace gpunex::server::platform_repo {

// ---- users, roles, sessions ----

struct UserRow {
  std::string id;
  std::string email;
  std::string full_name;
  std::int64_t created_at_ms = 0;
  std::optional<std::int64_t> email_verified_at_ms;  // when the account confirmed `email`; none: not yet
};

//! Inserts the user; false when the e-mail is taken (nothing written then).
bool insert_user(store::Tx& tx, const UserRow& user, const std::string& password_hash);
std::optional<UserRow> find_user(store::Tx& tx, const std::string& user_id);
//! The account with this e-mail, exactly as stored (the caller normalises it).
std::optional<UserRow> find_user_by_email(store::Tx& tx, const std::string& email);
//! Grants `role` (a role already held stays as it was).
void grant_role(store::Tx& tx, const std::string& user_id, core::Role role, std::int64_t granted_at_ms);
//! The user's roles, by name.
std::vector<core::Role> roles_of(store::Tx& tx, const std::string& user_id);
//! Takes `role` back (one not held: nothing).
void revoke_role(store::Tx& tx, const std::string& user_id, core::Role role);
//! Whether any account holds `role`.
bool any_user_with_role(store::Tx& tx, core::Role role);
//! The accounts holding any of `roles`, each once, by id.
std::vector<std::string> users_with_roles(store::Tx& tx, const std::vector<core::Role>& roles);
//! How many accounts hold `role`, their rows locked until the transaction ends (PostgreSQL: FOR UPDATE), so two
//! transactions that each count before taking the role from one cannot both see another holder.
std::int64_t count_users_with_role_locked(store::Tx& tx, core::Role role);
//! Replaces the account's password hash.
void set_password_hash(store::Tx& tx, const std::string& user_id, const std::string& password_hash);

//! What a login checks: the account's id and password hash, found by (normalised) e-mail.
struct Credentials {
  std::string user_id;
  std::string password_hash;
};
std::optional<Credentials> find_credentials(store::Tx& tx, const std::string& email);

//! The account's address once it is confirmed: where its mail goes. None before.
std::optional<std::string> verified_email(store::Tx& tx, const std::string& user_id);
//! Moves the account to `email`, confirmed at `now_ms`; false when another account has that address.
bool set_verified_email(store::Tx& tx, const std::string& user_id, const std::string& email, std::int64_t now_ms);

//! A link that confirms `email` for the account; the store keeps only the token's SHA-256.
struct EmailConfirmationRow {
  std::string token_hash;
  std::string user_id;
  std::string email;
  std::int64_t created_at_ms = 0;
  std::int64_t expires_at_ms = 0;
  std::optional<std::int64_t> used_at_ms;
};
void insert_email_confirmation(store::Tx& tx, const EmailConfirmationRow& c);
std::optional<EmailConfirmationRow> find_email_confirmation(store::Tx& tx, const std::string& token_hash);
//! Marks it used; false when it was used already (the one who marked it first wins).
bool use_email_confirmation(store::Tx& tx, const std::string& token_hash, std::int64_t now_ms);
//! Marks every unused confirmation of the account used: once one is opened, an older link (to this
//! address or another) can no longer move the account.
void use_all_email_confirmations(store::Tx& tx, const std::string& user_id, std::int64_t now_ms);
//! Marks used every unused link that would move the account to another address than `email` (its own):
//! a password set because it leaked also stops a move its intruder asked for.
void use_email_changes(store::Tx& tx, const std::string& user_id, const std::string& email, std::int64_t now_ms);
//! The address of the account's newest unused, unexpired confirmation, if any.
std::optional<std::string> pending_email(store::Tx& tx, const std::string& user_id, std::int64_t now_ms);
//! How many confirmations the account was sent since `since_ms` (a resend limit).
std::int64_t count_email_confirmations_since(store::Tx& tx, const std::string& user_id, std::int64_t since_ms);
//! When the oldest of those was sent (none: nullopt).
std::optional<std::int64_t> first_email_confirmation_since(store::Tx& tx, const std::string& user_id,
                                                           std::int64_t since_ms);

//! A link that sets a forgotten password; the store keeps only the token's SHA-256.
struct PasswordResetRow {
  std::string token_hash;
  std::string user_id;
  std::string email;  // where it was mailed
  std::int64_t created_at_ms = 0;
  std::int64_t expires_at_ms = 0;
  std::optional<std::int64_t> used_at_ms;
};
void insert_password_reset(store::Tx& tx, const PasswordResetRow& r);
std::optional<PasswordResetRow> find_password_reset(store::Tx& tx, const std::string& token_hash);
//! Marks this link used; false when it was used already (the one who marked it first wins: a second
//! opening waits on the first's row lock on PostgreSQL, then finds nothing to mark).
bool use_password_reset(store::Tx& tx, const std::string& token_hash, std::int64_t now_ms);
//! Marks every unused reset link of the account used (one was opened, or the password changed).
void use_password_resets(store::Tx& tx, const std::string& user_id, std::int64_t now_ms);
//! How many reset links the account was sent since `since_ms` (a limit per hour).
std::int64_t count_password_resets_since(store::Tx& tx, const std::string& user_id, std::int64_t since_ms);

struct SessionRow {
  std::string token_hash;
  std::string user_id;
  std::string csrf_token;
  std::int64_t created_at_ms = 0;
  std::int64_t expires_at_ms = 0;
};
void insert_session(store::Tx& tx, const SessionRow& session);
//! Deletes the user's sessions expired at `now_ms`.
void delete_expired_sessions(store::Tx& tx, const std::string& user_id, std::int64_t now_ms);
//! The session with this token hash, if it has not expired at `now_ms`.
std::optional<SessionRow> find_live_session(store::Tx& tx, const std::string& token_hash, std::int64_t now_ms);
void delete_session(store::Tx& tx, const std::string& token_hash);
//! Deletes every session of the user, live or not, but the one with `keep_hash` (empty: none kept);
//! answers how many.
std::int64_t delete_user_sessions(store::Tx& tx, const std::string& user_id, const std::string& keep_hash = "");

// ---- Idempotency-Key answers ----

//! The status of a reserved key whose request committed a transaction (its answer is not stored yet).
inline constexpr int kIdempotencyCommitted = -1;
//! A key's row: reserved (in progress) until the answer is stored. The reservation's time is its token:
//! the attempt that reserved (or took over) the key at that time owns it.
struct IdempotencyRecord {
  std::string request_hash;
  int status = 0;  // the stored answer's HTTP status; 0 while nothing of the request is committed; or -1
  std::string body;
  std::int64_t reserved_at = 0;
  bool in_progress() const { return status <= 0; }
};
std::optional<IdempotencyRecord> find_idempotency_key(store::Tx& tx, const std::string& scope, const std::string& key);
//! Reserves the key as in progress (a concurrent reservation of the same key wins; nothing happens then).
void reserve_idempotency_key(store::Tx& tx, const std::string& scope, const std::string& key,
                             const std::string& request_hash, std::int64_t now_ms);
//! Takes over a reservation made at `reserved_at` whose request committed nothing (its replica died):
//! the key is then reserved at `now_ms`. False when it is not so (committed, answered, or taken already).
bool take_over_idempotency_key(store::Tx& tx, const std::string& scope, const std::string& key,
                               std::int64_t reserved_at, std::int64_t now_ms);
//! In each write transaction of the attempt holding the reservation made at `reserved_at`: marks the
//! key kIdempotencyCommitted. False when another attempt took the key over (roll the transaction back).
bool fence_idempotency_key(store::Tx& tx, const std::string& scope, const std::string& key, std::int64_t reserved_at);
//! Stores the answer of the reservation made at `reserved_at`.
void complete_idempotency_key(store::Tx& tx, const std::string& scope, const std::string& key, std::int64_t reserved_at,
                              int status, const std::string& body);
//! Forgets the reservation made at `reserved_at` if nothing of its request was committed (it failed; a
//! retry runs it again).
void release_idempotency_key(store::Tx& tx, const std::string& scope, const std::string& key, std::int64_t reserved_at);
//! Deletes the keys made before `made_before_ms`, and those still in progress made before `abandoned_before_ms`.
std::int64_t delete_old_idempotency_keys(store::Tx& tx, std::int64_t made_before_ms,
                                         std::int64_t abandoned_before_ms);

// ---- the mail outbox ----

//! A queued mail; `secret` is kept apart from the body until it is sent.
struct OutboxRow {
  std::string id;
  std::string kind;
  std::string to;
  std::string subject;
  std::string body;
  std::optional<std::string> secret;
  std::int64_t created_at_ms = 0;
  std::int64_t attempts = 0;
};
//! Queues a mail, due at once.
void insert_mail(store::Tx& tx, const OutboxRow& mail);
//! Unsent mails due at `now_ms`, the longest waiting first.
std::vector<OutboxRow> find_due_mails(store::Tx& tx, std::int64_t now_ms, int limit);
//! The mails not sent yet (given up aside): how many, and when the oldest was queued.
struct OutboxBacklog {
  std::int64_t pending = 0;
  std::optional<std::int64_t> oldest_created_ms;
};
OutboxBacklog outbox_backlog(store::Tx& tx);
//! Sent: counts the attempt, erases the secret.
void set_mail_sent(store::Tx& tx, const std::string& id, std::int64_t now_ms);
//! Failed: counts the attempt, keeps `error`, due again at `next_attempt_ms`.
void set_mail_failed(store::Tx& tx, const std::string& id, const std::string& error, std::int64_t next_attempt_ms);
//! Given up: counts the attempt, keeps `error`, never due again, erases the secret.
void set_mail_given_up(store::Tx& tx, const std::string& id, const std::string& error);

// ---- in-app notifications ----

struct NotificationRow {
  std::string id;
  std::string user_id;
  std::string kind;
  std::string title;
  std::string body;
  std::optional<std::string> link;
  std::int64_t created_at_ms = 0;
  std::optional<std::int64_t> read_at_ms;
};
void insert_notification(store::Tx& tx, const NotificationRow& n);
//! One of the user's notifications.
std::optional<NotificationRow> find_notification(store::Tx& tx, const std::string& user_id, const std::string& id);
//! Where a keyset page starts: after this item in newest-first order.
struct NotificationCursor {
  std::int64_t created_at_ms = 0;
  std::string id;
};
//! Up to `limit` of the user's notifications, newest first, after `after` when given.
std::vector<NotificationRow> notifications_page(store::Tx& tx, const std::string& user_id,
                                                const std::optional<NotificationCursor>& after, std::size_t limit);
std::int64_t count_unread_notifications(store::Tx& tx, const std::string& user_id);
void set_notification_read(store::Tx& tx, const std::string& id, std::int64_t now_ms);

// ---- the schema ----

//! The highest migration applied to the store (0 when none).
std::int64_t applied_schema_version(store::Tx& tx);

//! A fact about this database's servers (table server_facts), e.g. the server secret's fingerprint.
struct ServerFact {
  std::string value;
  std::int64_t recorded_at = 0;
};
std::optional<ServerFact> find_server_fact(store::Tx& tx, const std::string& name);
//! Records the fact unless one is recorded under the name already (the first server to start wins).
void record_server_fact_if_absent(store::Tx& tx, const std::string& name, const std::string& value,
                                  std::int64_t now_ms);
//! Records the fact, replacing any recorded before.
void replace_server_fact(store::Tx& tx, const std::string& name, const std::string& value, std::int64_t now_ms);

//! The last instant the machines sweep watched the fleet (the server fact fleet_watched_until, which it
//! replaces every round in the transaction that records an outage found on resuming); nullopt: never.
std::optional<std::int64_t> fleet_watched_until(store::Tx& tx);
void record_fleet_watched_until(store::Tx& tx, std::int64_t at_ms);

//! A stretch of time the platform was not watching its fleet (migration 32): from the last time it
//! watched, through when it watched again, to when every agent still running was back.
struct PlatformOutage {
  std::int64_t started_at_ms = 0;
  std::int64_t resumed_at_ms = 0;
  std::int64_t ended_at_ms = 0;
};
void insert_platform_outage(store::Tx& tx, const PlatformOutage& o);
//! The latest outage (none: nullopt).
std::optional<PlatformOutage> last_platform_outage(store::Tx& tx);
//! The outages that overlap [from_ms, to_ms), oldest first.
std::vector<PlatformOutage> platform_outages_between(store::Tx& tx, std::int64_t from_ms, std::int64_t to_ms);

}  // namespace gpunex::server::platform_repo
