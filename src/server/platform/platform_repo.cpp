#include "server/platform/platform_repo.hpp"

#include <algorithm>
#include <cstdlib>
#include <limits>

namespace gpunex::server::platform_repo {

namespace {

store::Value opt_value(const std::optional<std::string>& s) { return s ? store::Value(*s) : store::Value(nullptr); }

std::string role_value(core::Role r) { return std::string(core::role_name(r)); }

}  // namespace

// ---- users, roles, sessions ----

bool insert_user(store::Tx& tx, const UserRow& user, const std::string& password_hash) {
  auto inserted = tx.query(
      "INSERT INTO users (id, email, full_name, password_hash, created_at, email_verified_at) VALUES (?, ?, ?, ?, ?, ?) "
      "ON CONFLICT (email) DO NOTHING RETURNING id",
      {user.id, user.email, user.full_name, password_hash, user.created_at_ms,
       user.email_verified_at_ms ? store::Value(*user.email_verified_at_ms) : store::Value(nullptr)});
  return !inserted.empty();
}

namespace {

constexpr const char* kUserColumns = "SELECT id, email, full_name, created_at, email_verified_at FROM users ";

UserRow user_row(const store::Row& r) {
  return UserRow{r.str(0), r.str(1), r.str(2), r.i64(3), r.opt_i64(4)};
}

}  // namespace

std::optional<UserRow> find_user(store::Tx& tx, const std::string& user_id) {
  auto r = tx.query_one(std::string(kUserColumns) + "WHERE id = ?", {user_id});
  if (!r) return std::nullopt;
  return user_row(*r);
}

std::optional<UserRow> find_user_by_email(store::Tx& tx, const std::string& email) {
  auto r = tx.query_one(std::string(kUserColumns) + "WHERE email = ?", {email});
  if (!r) return std::nullopt;
  return user_row(*r);
}

std::optional<std::string> verified_email(store::Tx& tx, const std::string& user_id) {
  auto r = tx.query_one("SELECT email FROM users WHERE id = ? AND email_verified_at IS NOT NULL", {user_id});
  if (!r) return std::nullopt;
  return r->str(0);
}

bool set_verified_email(store::Tx& tx, const std::string& user_id, const std::string& email, std::int64_t now_ms) {
  auto other = tx.query_one("SELECT id FROM users WHERE email = ? AND id <> ?", {email, user_id});
  if (other) return false;
  tx.exec("UPDATE users SET email = ?, email_verified_at = ? WHERE id = ?", {email, now_ms, user_id});
  return true;
}

void insert_email_confirmation(store::Tx& tx, const EmailConfirmationRow& c) {
  tx.exec("INSERT INTO email_confirmations (token_hash, user_id, email, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
          {c.token_hash, c.user_id, c.email, c.created_at_ms, c.expires_at_ms});
}

std::optional<EmailConfirmationRow> find_email_confirmation(store::Tx& tx, const std::string& token_hash) {
  auto r = tx.query_one(
      "SELECT token_hash, user_id, email, created_at, expires_at, used_at FROM email_confirmations "
      "WHERE token_hash = ?",
      {token_hash});
  if (!r) return std::nullopt;
  return EmailConfirmationRow{r->str(0), r->str(1), r->str(2), r->i64(3), r->i64(4), r->opt_i64(5)};
}

bool use_email_confirmation(store::Tx& tx, const std::string& token_hash, std::int64_t now_ms) {
  return !tx.query("UPDATE email_confirmations SET used_at = ? WHERE token_hash = ? AND used_at IS NULL "
                   "RETURNING token_hash",
                   {now_ms, token_hash})
              .empty();
}

void use_all_email_confirmations(store::Tx& tx, const std::string& user_id, std::int64_t now_ms) {
  tx.exec("UPDATE email_confirmations SET used_at = ? WHERE user_id = ? AND used_at IS NULL", {now_ms, user_id});
}

void use_email_changes(store::Tx& tx, const std::string& user_id, const std::string& email, std::int64_t now_ms) {
  tx.exec("UPDATE email_confirmations SET used_at = ? WHERE user_id = ? AND used_at IS NULL AND email <> ?",
          {now_ms, user_id, email});
}

std::optional<std::string> pending_email(store::Tx& tx, const std::string& user_id, std::int64_t now_ms) {
  auto r = tx.query_one(
      "SELECT email FROM email_confirmations WHERE user_id = ? AND used_at IS NULL AND expires_at > ? "
      "ORDER BY created_at DESC, token_hash LIMIT 1",
      {user_id, now_ms});
  if (!r) return std::nullopt;
  return r->str(0);
}

std::int64_t count_email_confirmations_since(store::Tx& tx, const std::string& user_id, std::int64_t since_ms) {
  auto r = tx.query_one("SELECT COUNT(*) FROM email_confirmations WHERE user_id = ? AND created_at >= ?",
                        {user_id, since_ms});
  return r ? r->i64(0) : 0;
}

std::optional<std::int64_t> first_email_confirmation_since(store::Tx& tx, const std::string& user_id,
                                                           std::int64_t since_ms) {
  auto r = tx.query_one("SELECT MIN(created_at) FROM email_confirmations WHERE user_id = ? AND created_at >= ?",
                        {user_id, since_ms});
  if (!r || r->is_null(0)) return std::nullopt;
  return r->i64(0);
}

void insert_password_reset(store::Tx& tx, const PasswordResetRow& r) {
  tx.exec("INSERT INTO password_resets (token_hash, user_id, email, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
          {r.token_hash, r.user_id, r.email, r.created_at_ms, r.expires_at_ms});
}

std::optional<PasswordResetRow> find_password_reset(store::Tx& tx, const std::string& token_hash) {
  auto r = tx.query_one(
      "SELECT token_hash, user_id, email, created_at, expires_at, used_at FROM password_resets WHERE token_hash = ?",
      {token_hash});
  if (!r) return std::nullopt;
  return PasswordResetRow{r->str(0), r->str(1), r->str(2), r->i64(3), r->i64(4), r->opt_i64(5)};
}

bool use_password_reset(store::Tx& tx, const std::string& token_hash, std::int64_t now_ms) {
  return !tx.query(
                "UPDATE password_resets SET used_at = ? WHERE token_hash = ? AND used_at IS NULL RETURNING token_hash",
                {now_ms, token_hash})
              .empty();
}

void use_password_resets(store::Tx& tx, const std::string& user_id, std::int64_t now_ms) {
  tx.exec("UPDATE password_resets SET used_at = ? WHERE user_id = ? AND used_at IS NULL", {now_ms, user_id});
}

std::int64_t count_password_resets_since(store::Tx& tx, const std::string& user_id, std::int64_t since_ms) {
  auto r =
      tx.query_one("SELECT COUNT(*) FROM password_resets WHERE user_id = ? AND created_at >= ?", {user_id, since_ms});
  return r ? r->i64(0) : 0;
}

void grant_role(store::Tx& tx, const std::string& user_id, core::Role role, std::int64_t granted_at_ms) {
  tx.exec("INSERT INTO user_roles (user_id, role, granted_at) VALUES (?, ?, ?) ON CONFLICT (user_id, role) DO NOTHING",
          {user_id, role_value(role), granted_at_ms});
}

std::vector<core::Role> roles_of(store::Tx& tx, const std::string& user_id) {
  std::vector<core::Role> roles;
  for (const auto& r : tx.query("SELECT role FROM user_roles WHERE user_id = ? ORDER BY role", {user_id})) {
    if (auto role = core::parse_role(r.str(0))) roles.push_back(*role);
  }
  return roles;
}

void revoke_role(store::Tx& tx, const std::string& user_id, core::Role role) {
  tx.exec("DELETE FROM user_roles WHERE user_id = ? AND role = ?", {user_id, role_value(role)});
}

bool any_user_with_role(store::Tx& tx, core::Role role) {
  return tx.query_one("SELECT user_id FROM user_roles WHERE role = ?", {role_value(role)}).has_value();
}

std::vector<std::string> users_with_roles(store::Tx& tx, const std::vector<core::Role>& roles) {
  std::vector<std::string> out;
  for (const auto role : roles) {
    for (const auto& r :
         tx.query("SELECT user_id FROM user_roles WHERE role = ? ORDER BY user_id", {role_value(role)})) {
      if (std::find(out.begin(), out.end(), r.str(0)) == out.end()) out.push_back(r.str(0));
    }
  }
  return out;
}

std::int64_t count_users_with_role_locked(store::Tx& tx, core::Role role) {
  // SQLite has no FOR UPDATE: its write transactions are one at a time already (BEGIN IMMEDIATE).
  const char* lock = tx.dialect() == store::Dialect::postgres ? " FOR UPDATE" : "";
  return static_cast<std::int64_t>(
      tx.query(std::string("SELECT user_id FROM user_roles WHERE role = ?") + lock, {role_value(role)}).size());
}

void set_password_hash(store::Tx& tx, const std::string& user_id, const std::string& password_hash) {
  tx.exec("UPDATE users SET password_hash = ? WHERE id = ?", {password_hash, user_id});
}

std::optional<Credentials> find_credentials(store::Tx& tx, const std::string& email) {
  auto r = tx.query_one("SELECT id, password_hash FROM users WHERE email = ?", {email});
  if (!r) return std::nullopt;
  return Credentials{r->str(0), r->str(1)};
}

void insert_session(store::Tx& tx, const SessionRow& s) {
  tx.exec("INSERT INTO sessions (token_hash, user_id, csrf_token, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
          {s.token_hash, s.user_id, s.csrf_token, s.created_at_ms, s.expires_at_ms});
}

void delete_expired_sessions(store::Tx& tx, const std::string& user_id, std::int64_t now_ms) {
  tx.exec("DELETE FROM sessions WHERE user_id = ? AND expires_at <= ?", {user_id, now_ms});
}

std::optional<SessionRow> find_live_session(store::Tx& tx, const std::string& token_hash, std::int64_t now_ms) {
  auto r = tx.query_one(
      "SELECT token_hash, user_id, csrf_token, created_at, expires_at FROM sessions "
      "WHERE token_hash = ? AND expires_at > ?",
      {token_hash, now_ms});
  if (!r) return std::nullopt;
  return SessionRow{r->str(0), r->str(1), r->str(2), r->i64(3), r->i64(4)};
}

void delete_session(store::Tx& tx, const std::string& token_hash) {
  tx.exec("DELETE FROM sessions WHERE token_hash = ?", {token_hash});
}

std::int64_t delete_user_sessions(store::Tx& tx, const std::string& user_id, const std::string& keep_hash) {
  return tx.exec("DELETE FROM sessions WHERE user_id = ? AND token_hash <> ?", {user_id, keep_hash});
}

// ---- Idempotency-Key answers ----

std::optional<IdempotencyRecord> find_idempotency_key(store::Tx& tx, const std::string& scope, const std::string& key) {
  auto r = tx.query_one(
      "SELECT request_hash, status, body, created_at FROM idempotency_keys WHERE scope = ? AND idem_key = ?",
      {scope, key});
  if (!r) return std::nullopt;
  return IdempotencyRecord{r->str(0), static_cast<int>(r->i64(1)), r->str(2), r->i64(3)};
}

void reserve_idempotency_key(store::Tx& tx, const std::string& scope, const std::string& key,
                             const std::string& request_hash, std::int64_t now_ms) {
  tx.exec("INSERT INTO idempotency_keys (scope, idem_key, request_hash, status, body, created_at) "
          "VALUES (?, ?, ?, 0, '', ?) ON CONFLICT (scope, idem_key) DO NOTHING",
          {scope, key, request_hash, now_ms});
}

bool take_over_idempotency_key(store::Tx& tx, const std::string& scope, const std::string& key,
                               std::int64_t reserved_at, std::int64_t now_ms) {
  return tx.exec(
             "UPDATE idempotency_keys SET created_at = ? WHERE scope = ? AND idem_key = ? AND status = 0 AND "
             "created_at = ?",
             {now_ms, scope, key, reserved_at}) == 1;
}

bool fence_idempotency_key(store::Tx& tx, const std::string& scope, const std::string& key, std::int64_t reserved_at) {
  return tx.exec(
             "UPDATE idempotency_keys SET status = ? WHERE scope = ? AND idem_key = ? AND created_at = ? AND "
             "status <= 0",
             {static_cast<std::int64_t>(kIdempotencyCommitted), scope, key, reserved_at}) == 1;
}

void complete_idempotency_key(store::Tx& tx, const std::string& scope, const std::string& key, std::int64_t reserved_at,
                              int status, const std::string& body) {
  tx.exec("UPDATE idempotency_keys SET status = ?, body = ? WHERE scope = ? AND idem_key = ? AND created_at = ?",
          {static_cast<std::int64_t>(status), body, scope, key, reserved_at});
}

void release_idempotency_key(store::Tx& tx, const std::string& scope, const std::string& key,
                             std::int64_t reserved_at) {
  tx.exec("DELETE FROM idempotency_keys WHERE scope = ? AND idem_key = ? AND created_at = ? AND status = 0",
          {scope, key, reserved_at});
}

std::int64_t delete_old_idempotency_keys(store::Tx& tx, std::int64_t made_before_ms,
                                         std::int64_t abandoned_before_ms) {
  return tx.exec("DELETE FROM idempotency_keys WHERE created_at < ? OR (status = 0 AND created_at < ?)",
                 {made_before_ms, abandoned_before_ms});
}

// ---- the mail outbox ----

void insert_mail(store::Tx& tx, const OutboxRow& m) {
  tx.exec(
      "INSERT INTO outbox (id, kind, to_addr, subject, body, secret, created_at, attempts, next_attempt_at) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?)",
      {m.id, m.kind, m.to, m.subject, m.body, opt_value(m.secret), m.created_at_ms, m.created_at_ms});
}

std::vector<OutboxRow> find_due_mails(store::Tx& tx, std::int64_t now_ms, int limit) {
  std::vector<OutboxRow> out;
  for (const auto& r : tx.query("SELECT id, kind, to_addr, subject, body, secret, created_at, attempts FROM outbox "
                                "WHERE sent_at IS NULL AND next_attempt_at <= ? ORDER BY next_attempt_at, id LIMIT ?",
                                {now_ms, std::int64_t{limit}})) {
    out.push_back(OutboxRow{r.str(0), r.str(1), r.str(2), r.str(3), r.str(4), r.opt_str(5), r.i64(6), r.i64(7)});
  }
  return out;
}

OutboxBacklog outbox_backlog(store::Tx& tx) {
  // By the outbox_due index: unsent, and not given up (set_mail_given_up's next attempt is never).
  const auto r = tx.query_one(
      "SELECT COUNT(*), MIN(created_at) FROM outbox WHERE sent_at IS NULL AND "
      "next_attempt_at < ?",
      {std::numeric_limits<std::int64_t>::max()});
  if (!r) return {};
  return OutboxBacklog{r->i64(0), r->opt_i64(1)};
}

void set_mail_sent(store::Tx& tx, const std::string& id, std::int64_t now_ms) {
  tx.exec("UPDATE outbox SET sent_at = ?, secret = NULL, attempts = attempts + 1, last_error = NULL WHERE id = ?",
          {now_ms, id});
}

void set_mail_failed(store::Tx& tx, const std::string& id, const std::string& error, std::int64_t next_attempt_ms) {
  tx.exec("UPDATE outbox SET attempts = attempts + 1, last_error = ?, next_attempt_at = ? WHERE id = ?",
          {error, next_attempt_ms, id});
}

void set_mail_given_up(store::Tx& tx, const std::string& id, const std::string& error) {
  tx.exec("UPDATE outbox SET attempts = attempts + 1, last_error = ?, next_attempt_at = ?, secret = NULL WHERE id = ?",
          {error, std::numeric_limits<std::int64_t>::max(), id});
}

// ---- in-app notifications ----

namespace {

constexpr const char* kNotificationCols = "id, user_id, kind, title, body, link, created_at, read_at";

NotificationRow notification_from(const store::Row& r) {
  return NotificationRow{r.str(0), r.str(1), r.str(2), r.str(3), r.str(4), r.opt_str(5), r.i64(6), r.opt_i64(7)};
}

}  // namespace

void insert_notification(store::Tx& tx, const NotificationRow& n) {
  tx.exec("INSERT INTO notifications (id, user_id, kind, title, body, link, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
          {n.id, n.user_id, n.kind, n.title, n.body, opt_value(n.link), n.created_at_ms});
}

std::optional<NotificationRow> find_notification(store::Tx& tx, const std::string& user_id, const std::string& id) {
  auto r = tx.query_one(std::string("SELECT ") + kNotificationCols + " FROM notifications WHERE id = ? AND user_id = ?",
                        {id, user_id});
  if (!r) return std::nullopt;
  return notification_from(*r);
}

std::vector<NotificationRow> notifications_page(store::Tx& tx, const std::string& user_id,
                                                const std::optional<NotificationCursor>& after, std::size_t limit) {
  std::vector<NotificationRow> out;
  const auto lim = static_cast<std::int64_t>(limit);
  const std::vector<store::Row> rows =
      after ? tx.query(std::string("SELECT ") + kNotificationCols +
                           " FROM notifications WHERE user_id = ? "
                           "AND (created_at < ? OR (created_at = ? AND id < ?)) "
                           "ORDER BY created_at DESC, id DESC LIMIT ?",
                       {user_id, after->created_at_ms, after->created_at_ms, after->id, lim})
            : tx.query(std::string("SELECT ") + kNotificationCols +
                           " FROM notifications WHERE user_id = ? ORDER BY created_at DESC, id DESC LIMIT ?",
                       {user_id, lim});
  for (const auto& r : rows) out.push_back(notification_from(r));
  return out;
}

std::int64_t count_unread_notifications(store::Tx& tx, const std::string& user_id) {
  auto r = tx.query_one("SELECT COUNT(*) FROM notifications WHERE user_id = ? AND read_at IS NULL", {user_id});
  return r ? r->i64(0) : 0;
}

void set_notification_read(store::Tx& tx, const std::string& id, std::int64_t now_ms) {
  tx.exec("UPDATE notifications SET read_at = ? WHERE id = ?", {now_ms, id});
}

// ---- the schema ----

std::int64_t applied_schema_version(store::Tx& tx) {
  auto r = tx.query_one("SELECT MAX(version) FROM schema_migrations");
  return r && !r->is_null(0) ? r->i64(0) : 0;
}

std::optional<ServerFact> find_server_fact(store::Tx& tx, const std::string& name) {
  auto r = tx.query_one("SELECT value, recorded_at FROM server_facts WHERE name = ?", {name});
  if (!r) return std::nullopt;
  return ServerFact{r->str(0), r->i64(1)};
}

void record_server_fact_if_absent(store::Tx& tx, const std::string& name, const std::string& value,
                                  std::int64_t now_ms) {
  tx.exec("INSERT INTO server_facts (name, value, recorded_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING",
          {name, value, now_ms});
}

void replace_server_fact(store::Tx& tx, const std::string& name, const std::string& value, std::int64_t now_ms) {
  tx.exec("DELETE FROM server_facts WHERE name = ?", {name});
  tx.exec("INSERT INTO server_facts (name, value, recorded_at) VALUES (?, ?, ?)", {name, value, now_ms});
}

namespace {
constexpr const char* kFleetWatchedUntil = "fleet_watched_until";
}  // namespace

std::optional<std::int64_t> fleet_watched_until(store::Tx& tx) {
  const auto fact = find_server_fact(tx, kFleetWatchedUntil);
  if (!fact) return std::nullopt;
  return std::strtoll(fact->value.c_str(), nullptr, 10);
}

void record_fleet_watched_until(store::Tx& tx, std::int64_t at_ms) {
  replace_server_fact(tx, kFleetWatchedUntil, std::to_string(at_ms), at_ms);
}

void insert_platform_outage(store::Tx& tx, const PlatformOutage& o) {
  tx.exec(
      "INSERT INTO platform_outages (started_at, resumed_at, ended_at) VALUES (?, ?, ?) "
      "ON CONFLICT (started_at) DO NOTHING",
      {o.started_at_ms, o.resumed_at_ms, o.ended_at_ms});
}

std::optional<PlatformOutage> last_platform_outage(store::Tx& tx) {
  auto r =
      tx.query_one("SELECT started_at, resumed_at, ended_at FROM platform_outages ORDER BY started_at DESC LIMIT 1");
  if (!r) return std::nullopt;
  return PlatformOutage{r->i64(0), r->i64(1), r->i64(2)};
}

std::vector<PlatformOutage> platform_outages_between(store::Tx& tx, std::int64_t from_ms, std::int64_t to_ms) {
  std::vector<PlatformOutage> out;
  for (const auto& r :
       tx.query("SELECT started_at, resumed_at, ended_at FROM platform_outages WHERE started_at < ? AND ended_at > ? "
                "ORDER BY started_at",
                {to_ms, from_ms})) {
    out.push_back({r.i64(0), r.i64(1), r.i64(2)});
  }
  return out;
}

}  // namespace gpunex::server::platform_repo
