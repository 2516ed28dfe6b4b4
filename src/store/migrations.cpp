// The schema, as numbered migrations in the portable dialect. Append only:
// never edit a migration that has shipped; add a new one.

#include "store/migrations.hpp"

namespace gpunex::store {

const std::vector<Migration>& migrations() {
  static const std::vector<Migration> list = {
      {1, "accounts, sessions, leases, idempotency",
       R"sql(
CREATE TABLE users (
  id TEXT PRIMARY KEY,
  email TEXT NOT NULL UNIQUE,
  full_name TEXT NOT NULL,
  password_hash TEXT NOT NULL,
  created_at BIGINT NOT NULL
);
CREATE TABLE user_roles (
  user_id TEXT NOT NULL REFERENCES users(id),
  role TEXT NOT NULL,
  granted_at BIGINT NOT NULL,
  PRIMARY KEY (user_id, role)
);
CREATE TABLE sessions (
  token_hash TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users(id),
  csrf_token TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL
);
CREATE INDEX sessions_user ON sessions (user_id);
CREATE TABLE leases (
  name TEXT PRIMARY KEY,
  holder TEXT NOT NULL,
  expires_at BIGINT NOT NULL
);
CREATE TABLE idempotency_keys (
  scope TEXT NOT NULL,
  idem_key TEXT NOT NULL,
  request_hash TEXT NOT NULL,
  status BIGINT NOT NULL,
  body TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (scope, idem_key)
);
)sql"},
  };
  return list;
}

}  // namespace gpunex::store
