#pragma once
// A migrated in-memory SQLite store with the catalog and one approved provider
// (user u1, application a1, provider p1, community tier), for the unit tests of
// server code that works on a provider's rows.

#include <memory>

#include "server/onboarding/gpu_catalog.hpp"
#include "store/store.hpp"
#include "util/clock.hpp"

namespace gpunex::test_support {

//! The approved provider's rows: user u1, application a1, provider p1 (community tier).
inline void insert_provider(store::Tx& tx) {
  tx.exec(
      "INSERT INTO users (id, email, full_name, password_hash, created_at, email_verified_at) VALUES ('u1', 'p@x', "
      "'P', 'x', 0, 0)");
  tx.exec(
      "INSERT INTO applications (id, user_id, status, form, created_at, updated_at) "
      "VALUES ('a1', 'u1', 'approved', '{}', 0, 0)");
  tx.exec(
      "INSERT INTO providers (id, user_id, application_id, tier, created_at) "
      "VALUES ('p1', 'u1', 'a1', 'community', 0)");
}

inline std::unique_ptr<store::Store> store_with_provider() {
  auto store = store::open_store("sqlite::memory:");
  store::migrate(*store);
  server::seed_catalog(*store, util::SystemClock{}.now_ms());
  store->transact([](store::Tx& tx) { insert_provider(tx); });
  return store;
}

}  // namespace gpunex::test_support
