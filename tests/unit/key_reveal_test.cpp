// server/providers.*: the approval key's one-time reveal through a real (in-memory SQLite) store,
// including what the API cannot reach in a test's time: the slot's expiry after kApiKeyRevealDays.
// tests/js/api/key_reveal.test.mjs covers the endpoint on both drivers.

#include "server/onboarding/providers.hpp"

#include <gtest/gtest.h>

#include "provider_store.hpp"
#include "test_time.hpp"

using namespace gpunex;  // NOLINT: test file

namespace {

using gpunex::test_support::kDay;
using gpunex::test_support::kNow;
const std::string kSecret = "server-secret-for-the-key-reveal-test-0123456789";

std::string detail(const core::Result<nlohmann::json>& r) {
  return r.ok() ? "ok" : r.error().detail_code.value_or(std::string(core::code_name(r.error().code)));
}

nlohmann::json reveal_state(store::Store& st, std::int64_t at = kNow) {
  return st.transact([&](store::Tx& tx) { return server::list_api_keys(tx, "p1", at); },
                     store::TxMode::read)[0]["reveal"];
}

class KeyReveal : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = test_support::store_with_provider();
    key_ = store_->transact([](store::Tx& tx) {
      auto k = server::create_api_key(tx, "p1", kNow);
      server::keep_for_reveal(tx, k, "u1", kSecret, kNow);
      return k;
    });
  }
  core::Result<nlohmann::json> reveal(std::int64_t at, const std::string& user = "u1",
                                      const std::string& secret = kSecret) {
    return store_->transact([&](store::Tx& tx) { return server::reveal_api_key(tx, "p1", user, key_.id, secret, at); });
  }
  std::unique_ptr<store::Store> store_;
  server::NewApiKey key_;
};

}  // namespace

TEST_F(KeyReveal, OnceToItsOwner) {
  EXPECT_EQ(reveal_state(*store_)["state"], "available");
  EXPECT_EQ(detail(reveal(kNow, "u2")), "not_found");
  auto r = reveal(kNow + 1000);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)["api_key"], key_.key);
  EXPECT_EQ(detail(reveal(kNow + 2000)), "key_already_shown");
  EXPECT_EQ(reveal_state(*store_)["state"], "revealed");
  auto kept = store_->transact([&](store::Tx& tx) {
    return tx.query_one("SELECT secret FROM api_key_reveals WHERE api_key_id = ?", {key_.id})->is_null(0);
  });
  EXPECT_TRUE(kept) << "the plaintext is gone once shown";
}

// A copy of the database (a backup, a leaked dump) must not hold the key: it is sealed under the
// server's secret, which lives outside the store (issue #19).
TEST_F(KeyReveal, TheStoreHoldsItSealedUnderTheServerSecret) {
  auto stored = store_->transact([&](store::Tx& tx) {
    return tx.query_one("SELECT secret FROM api_key_reveals WHERE api_key_id = ?", {key_.id})->str(0);
  });
  EXPECT_EQ(stored.find(key_.key), std::string::npos);
  EXPECT_EQ(stored.find("gpx_"), std::string::npos);
  EXPECT_EQ(detail(reveal(kNow + 1000, "u1", "another-server-secret-0123456789abcdef")), "internal");
  auto r = reveal(kNow + 2000);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)["api_key"], key_.key);
}

TEST_F(KeyReveal, RevokingClearsIt) {
  ASSERT_TRUE(
      store_->transact([&](store::Tx& tx) { return server::revoke_api_key(tx, "p1", key_.id, kNow + 10); }).ok());
  EXPECT_EQ(detail(reveal(kNow + 20)), "key_revoked");
  EXPECT_EQ(reveal_state(*store_)["state"], "revoked");
}

TEST_F(KeyReveal, ExpiresAfterItsDays) {
  const auto expiry = kNow + server::kApiKeyRevealDays * kDay;
  EXPECT_EQ(store_->transact([&](store::Tx& tx) { return server::expire_key_reveals(tx, expiry - 1); }), 0);
  // Past its days it is refused even before the worker clears it...
  EXPECT_EQ(detail(reveal(expiry)), "key_reveal_expired");
  EXPECT_EQ(reveal_state(*store_, expiry)["state"], "expired");
  // ...and the worker's round clears the plaintext.
  EXPECT_EQ(store_->transact([&](store::Tx& tx) { return server::expire_key_reveals(tx, expiry); }), 1);
  EXPECT_EQ(reveal_state(*store_)["state"], "expired");
  EXPECT_EQ(detail(reveal(kNow + 1)), "key_reveal_expired");
}
