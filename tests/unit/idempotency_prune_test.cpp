// server/app.*: prune_idempotency_keys on a real (in-memory SQLite) store. The replay itself is
// covered end to end by tests/scenarios/idempotency.scn and tests/js/api/idempotency.test.mjs.

#include <gtest/gtest.h>

#include <set>

#include "server/platform/request_pipeline.hpp"
#include "store/store.hpp"
#include "test_time.hpp"

using namespace gpunex;  // NOLINT: test file

namespace {

using gpunex::test_support::kHour;
using gpunex::test_support::kNow;

std::set<std::string> keys_left(store::Store& st) {
  std::set<std::string> out;
  st.transact([&](store::Tx& tx) {
    for (const auto& r : tx.query("SELECT idem_key FROM idempotency_keys")) out.insert(r.str(0));
  });
  return out;
}

}  // namespace

TEST(IdempotencyPrune, DropsOldAnswersAndAbandonedRequestsOnly) {
  auto st = store::open_store("sqlite::memory:");
  store::migrate(*st);
  st->transact([](store::Tx& tx) {
    auto row = [&](const std::string& key, std::int64_t status, std::int64_t created_at) {
      tx.exec(
          "INSERT INTO idempotency_keys (scope, idem_key, request_hash, status, body, created_at) "
          "VALUES ('u1', ?, 'h', ?, '{}', ?)",
          {key, status, created_at});
    };
    row("answered-25h-ago", 201, kNow - 25 * kHour);
    row("answered-23h-ago", 201, kNow - 23 * kHour);
    row("in-progress-2h", 0, kNow - 2 * kHour);  // its server died mid-request
    row("in-progress-1min", 0, kNow - 60'000);   // still running
    row("answered-just-now", 200, kNow);
  });

  const auto n = st->transact([](store::Tx& tx) { return server::prune_idempotency_keys(tx, kNow, 24 * kHour); });

  EXPECT_EQ(n, 2);
  EXPECT_EQ(keys_left(*st), (std::set<std::string>{"answered-23h-ago", "in-progress-1min", "answered-just-now"}));
  // Nothing more to do on a second pass at the same time.
  EXPECT_EQ(st->transact([](store::Tx& tx) { return server::prune_idempotency_keys(tx, kNow, 24 * kHour); }), 0);
}
