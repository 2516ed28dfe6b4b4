// Accounts in a real (in-memory SQLite) store: the password is kept only as an argon2id hash.

#include "server/platform/accounts.hpp"

#include <gtest/gtest.h>

#include <string>

#include "store/store.hpp"
#include "util/clock.hpp"
#include "util/crypto.hpp"

using namespace gpunex;  // NOLINT: test file

namespace {

const util::SystemClock kClock;

TEST(Accounts, PasswordIsStoredAsASaltedArgon2idHash) {
  util::init_crypto();
  auto store = store::open_store("sqlite::memory:");
  store::migrate(*store);
  const std::string password = "correct-horse-battery";
  const auto stored_hash = [&](const std::string& email) {
    auto user = server::create_user(*store, server::NewUser{email, password, "Ann", "customer"}, kClock.now_ms(), true);
    EXPECT_TRUE(user.ok());
    return store->transact(
        [&](store::Tx& tx) { return tx.query_one("SELECT password_hash FROM users WHERE id = ?", {user->id})->str(0); },
        store::TxMode::read);
  };
  const std::string hash = stored_hash("ann@example.com");
  EXPECT_EQ(hash.rfind("$argon2id$v=19$", 0), 0u) << hash;
  EXPECT_EQ(hash.find(password), std::string::npos);
  // Salted: the same password gives another hash.
  EXPECT_NE(stored_hash("bob@example.com"), hash);

  EXPECT_TRUE(server::login(*store, "ann@example.com", password, 60'000, kClock.now_ms()).ok());
  EXPECT_FALSE(server::login(*store, "ann@example.com", "correct-horse-batterz", 60'000, kClock.now_ms()).ok());
}

}  // namespace
