// server/platform/platform_repo.*: typed rows in and out of a real (in-memory SQLite) store.

#include "server/platform/platform_repo.hpp"

#include <gtest/gtest.h>

#include "store/migrations.hpp"
#include "test_time.hpp"

using namespace gpunex;  // NOLINT: test file
namespace repo = server::platform_repo;

namespace {

using gpunex::test_support::kNow;

class PlatformRepo : public ::testing::Test {
 protected:
  template <class F>
  auto tx(F&& f) {
    return store_->transact([&](store::Tx& t) { return f(t); });
  }
  void SetUp() override {
    store_ = store::open_store("sqlite::memory:");
    store::migrate(*store_);
    ASSERT_TRUE(tx([](store::Tx& t) { return repo::insert_user(t, {"u1", "a@x", "Ada", kNow, kNow}, "hash"); }));
  }
  std::unique_ptr<store::Store> store_;
};

}  // namespace

TEST_F(PlatformRepo, UsersAndRoles) {
  EXPECT_FALSE(tx([](store::Tx& t) { return repo::insert_user(t, {"u2", "a@x", "Other", kNow, std::nullopt}, "h"); }));
  EXPECT_EQ(tx([](store::Tx& t) { return repo::find_user(t, "u1"); })->full_name, "Ada");
  EXPECT_EQ(tx([](store::Tx& t) { return repo::find_credentials(t, "a@x"); })->password_hash, "hash");
  EXPECT_FALSE(tx([](store::Tx& t) { return repo::any_user_with_role(t, core::Role::admin); }));
  tx([](store::Tx& t) {
    repo::grant_role(t, "u1", core::Role::reviewer, kNow);
    repo::grant_role(t, "u1", core::Role::admin, kNow);
    repo::grant_role(t, "u1", core::Role::admin, kNow + 1);  // held already: unchanged
    return 0;
  });
  EXPECT_TRUE(tx([](store::Tx& t) { return repo::any_user_with_role(t, core::Role::admin); }));
  EXPECT_EQ(tx([](store::Tx& t) { return repo::roles_of(t, "u1"); }),
            (std::vector<core::Role>{core::Role::admin, core::Role::reviewer}));
}

TEST_F(PlatformRepo, EmailConfirmationsAndVerifiedAddresses) {
  ASSERT_TRUE(tx([](store::Tx& t) { return repo::insert_user(t, {"u2", "b@x", "Bea", kNow, std::nullopt}, "h"); }));
  EXPECT_EQ(tx([](store::Tx& t) { return repo::verified_email(t, "u1"); }), "a@x");
  EXPECT_FALSE(tx([](store::Tx& t) { return repo::verified_email(t, "u2"); })) << "not confirmed: no mail goes there";
  tx([](store::Tx& t) {
    repo::insert_email_confirmation(t, {"t1", "u2", "b@x", kNow, kNow + 100, {}});
    repo::insert_email_confirmation(t, {"t2", "u2", "new@x", kNow + 1, kNow + 100, {}});
    return 0;
  });
  EXPECT_EQ(tx([](store::Tx& t) { return repo::pending_email(t, "u2", kNow + 2); }), "new@x") << "the newest";
  EXPECT_FALSE(tx([](store::Tx& t) { return repo::pending_email(t, "u2", kNow + 100); })) << "expired";
  EXPECT_EQ(tx([](store::Tx& t) { return repo::count_email_confirmations_since(t, "u2", kNow + 1); }), 1);
  EXPECT_TRUE(tx([](store::Tx& t) { return repo::use_email_confirmation(t, "t2", kNow + 3); }));
  EXPECT_FALSE(tx([](store::Tx& t) { return repo::use_email_confirmation(t, "t2", kNow + 4); })) << "once";
  EXPECT_EQ(tx([](store::Tx& t) { return repo::find_email_confirmation(t, "t2"); })->used_at_ms, kNow + 3);
  EXPECT_EQ(tx([](store::Tx& t) { return repo::pending_email(t, "u2", kNow + 5); }), "b@x");
  EXPECT_FALSE(tx([](store::Tx& t) { return repo::set_verified_email(t, "u2", "a@x", kNow); })) << "u1's address";
  EXPECT_TRUE(tx([](store::Tx& t) { return repo::set_verified_email(t, "u2", "new@x", kNow + 6); }));
  EXPECT_EQ(tx([](store::Tx& t) { return repo::verified_email(t, "u2"); }), "new@x");
  EXPECT_EQ(tx([](store::Tx& t) { return repo::find_user(t, "u2"); })->email_verified_at_ms, kNow + 6);
  // A password set again stops a move to another address, not a link to the account's own.
  tx([](store::Tx& t) {
    repo::insert_email_confirmation(t, {"t3", "u2", "new@x", kNow + 7, kNow + 100, {}});
    repo::insert_email_confirmation(t, {"t4", "u2", "elsewhere@x", kNow + 8, kNow + 100, {}});
    repo::use_email_changes(t, "u2", "new@x", kNow + 9);
    return 0;
  });
  EXPECT_FALSE(tx([](store::Tx& t) { return repo::find_email_confirmation(t, "t3"); })->used_at_ms);
  EXPECT_EQ(tx([](store::Tx& t) { return repo::find_email_confirmation(t, "t4"); })->used_at_ms, kNow + 9);
}

TEST_F(PlatformRepo, PasswordResetsAreUsedTogetherOnce) {
  tx([](store::Tx& t) {
    repo::insert_password_reset(t, {"r1", "u1", "a@x", kNow, kNow + 100, {}});
    repo::insert_password_reset(t, {"r2", "u1", "a@x", kNow + 1, kNow + 100, {}});
    return 0;
  });
  EXPECT_EQ(tx([](store::Tx& t) { return repo::count_password_resets_since(t, "u1", kNow); }), 2);
  EXPECT_EQ(tx([](store::Tx& t) { return repo::count_password_resets_since(t, "u1", kNow + 1); }), 1);
  EXPECT_EQ(tx([](store::Tx& t) { return repo::find_password_reset(t, "r2"); })->email, "a@x");
  EXPECT_FALSE(tx([](store::Tx& t) { return repo::find_password_reset(t, "r3"); }));
  EXPECT_TRUE(tx([](store::Tx& t) { return repo::use_password_reset(t, "r2", kNow + 2); }));
  EXPECT_FALSE(tx([](store::Tx& t) { return repo::use_password_reset(t, "r2", kNow + 3); })) << "once";
  EXPECT_FALSE(tx([](store::Tx& t) { return repo::find_password_reset(t, "r1"); })->used_at_ms) << "only that one";
  tx([](store::Tx& t) {
    repo::use_password_resets(t, "u1", kNow + 4);
    return 0;
  });
  EXPECT_EQ(tx([](store::Tx& t) { return repo::find_password_reset(t, "r1"); })->used_at_ms, kNow + 4);
  EXPECT_EQ(tx([](store::Tx& t) { return repo::find_password_reset(t, "r2"); })->used_at_ms, kNow + 2);
  EXPECT_EQ(tx([](store::Tx& t) { return repo::count_password_resets_since(t, "u1", kNow); }), 2) << "used still count";
}

TEST_F(PlatformRepo, SessionsExpire) {
  tx([](store::Tx& t) {
    repo::insert_session(t, {"h1", "u1", "csrf", kNow, kNow + 10});
    repo::insert_session(t, {"h2", "u1", "csrf", kNow, kNow + 1000});
    return 0;
  });
  EXPECT_TRUE(tx([](store::Tx& t) { return repo::find_live_session(t, "h1", kNow + 9); }));
  EXPECT_FALSE(tx([](store::Tx& t) { return repo::find_live_session(t, "h1", kNow + 10); }));
  tx([](store::Tx& t) {
    repo::delete_expired_sessions(t, "u1", kNow + 10);
    return 0;
  });
  EXPECT_FALSE(tx([](store::Tx& t) { return repo::find_live_session(t, "h1", kNow); }));
  EXPECT_EQ(tx([](store::Tx& t) { return repo::find_live_session(t, "h2", kNow); })->csrf_token, "csrf");
}

TEST_F(PlatformRepo, IdempotencyKeyLifecycle) {
  tx([](store::Tx& t) {
    repo::reserve_idempotency_key(t, "u1", "k", "req", kNow);
    repo::reserve_idempotency_key(t, "u1", "k", "other", kNow);  // taken: unchanged
    return 0;
  });
  auto r = tx([](store::Tx& t) { return repo::find_idempotency_key(t, "u1", "k"); });
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->in_progress());
  EXPECT_EQ(r->request_hash, "req");
  EXPECT_EQ(r->reserved_at, kNow);
  tx([](store::Tx& t) {
    repo::complete_idempotency_key(t, "u1", "k", kNow + 1, 500, "{}");  // not this reservation's: nothing
    repo::release_idempotency_key(t, "u1", "k", kNow + 1);
    return 0;
  });
  EXPECT_TRUE(tx([](store::Tx& t) { return repo::find_idempotency_key(t, "u1", "k"); })->in_progress());
  tx([](store::Tx& t) {
    repo::complete_idempotency_key(t, "u1", "k", kNow, 201, "{}");
    return 0;
  });
  r = tx([](store::Tx& t) { return repo::find_idempotency_key(t, "u1", "k"); });
  EXPECT_FALSE(r->in_progress());
  EXPECT_EQ(r->status, 201);
  EXPECT_FALSE(tx([](store::Tx& t) { return repo::take_over_idempotency_key(t, "u1", "k", kNow, kNow + 60000); }));
  tx([](store::Tx& t) {
    repo::release_idempotency_key(t, "u1", "k", kNow);  // answered: kept for replay
    return 0;
  });
  EXPECT_TRUE(tx([](store::Tx& t) { return repo::find_idempotency_key(t, "u1", "k"); }));
}

// A request's replica dies before it commits anything: a retry takes the key over, and the first attempt,
// should it go on after all, can commit nothing more. Once a transaction of the owner committed, the key
// cannot be taken over (its effects would be done twice).
TEST_F(PlatformRepo, IdempotencyKeyTakeOverAndFence) {
  tx([](store::Tx& t) {
    repo::reserve_idempotency_key(t, "u1", "dead", "req", kNow);
    repo::reserve_idempotency_key(t, "u1", "live", "req", kNow);
    return 0;
  });
  EXPECT_TRUE(tx([](store::Tx& t) { return repo::take_over_idempotency_key(t, "u1", "dead", kNow, kNow + 10000); }));
  EXPECT_FALSE(tx([](store::Tx& t) { return repo::take_over_idempotency_key(t, "u1", "dead", kNow, kNow + 10001); }));
  EXPECT_FALSE(tx([](store::Tx& t) { return repo::fence_idempotency_key(t, "u1", "dead", kNow); }));  // the first
  EXPECT_TRUE(tx([](store::Tx& t) { return repo::fence_idempotency_key(t, "u1", "dead", kNow + 10000); }));
  EXPECT_TRUE(tx([](store::Tx& t) { return repo::fence_idempotency_key(t, "u1", "dead", kNow + 10000); }));  // again
  EXPECT_EQ(tx([](store::Tx& t) { return repo::find_idempotency_key(t, "u1", "dead"); })->status,
            repo::kIdempotencyCommitted);
  EXPECT_TRUE(tx([](store::Tx& t) { return repo::fence_idempotency_key(t, "u1", "live", kNow); }));
  EXPECT_FALSE(tx([](store::Tx& t) { return repo::take_over_idempotency_key(t, "u1", "live", kNow, kNow + 60000); }));
  tx([](store::Tx& t) {
    repo::release_idempotency_key(t, "u1", "live", kNow);  // committed: not forgotten
    return 0;
  });
  EXPECT_TRUE(tx([](store::Tx& t) { return repo::find_idempotency_key(t, "u1", "live"); })->in_progress());
}

// store::ScopedCommitCheck, as the idempotency fence uses it: run last in each write transaction while it
// lives, a throw rolls that transaction back; read transactions and those after it do not run it.
TEST_F(PlatformRepo, ACommitCheckRunsInEachWriteTransactionAndCanRollItBack) {
  int runs = 0;
  {
    store::ScopedCommitCheck check([&](store::Tx&) {
      if (++runs == 2) throw std::runtime_error("refused");
    });
    tx([](store::Tx& t) {
      repo::reserve_idempotency_key(t, "u1", "a", "req", kNow);
      return 0;
    });
    EXPECT_THROW(tx([](store::Tx& t) {
                   repo::reserve_idempotency_key(t, "u1", "b", "req", kNow);
                   return 0;
                 }),
                 std::runtime_error);
    store_->transact([](store::Tx& t) { return repo::find_idempotency_key(t, "u1", "a"); }, store::TxMode::read);
  }
  tx([](store::Tx& t) {
    repo::reserve_idempotency_key(t, "u1", "c", "req", kNow);
    return 0;
  });
  EXPECT_EQ(runs, 2);
  EXPECT_TRUE(tx([](store::Tx& t) { return repo::find_idempotency_key(t, "u1", "a"); }));
  EXPECT_FALSE(tx([](store::Tx& t) { return repo::find_idempotency_key(t, "u1", "b"); }));
  EXPECT_TRUE(tx([](store::Tx& t) { return repo::find_idempotency_key(t, "u1", "c"); }));
}

TEST_F(PlatformRepo, OutboxAndNotifications) {
  tx([](store::Tx& t) {
    repo::insert_mail(t, {"m1", "kind", "a@x", "S", "B", std::string("secret"), kNow, 0});
    repo::insert_notification(t, {"n1", "u1", "k", "T1", "B", std::string("/l"), kNow, std::nullopt});
    repo::insert_notification(t, {"n2", "u1", "k", "T2", "B", std::nullopt, kNow + 1, std::nullopt});
    return 0;
  });
  auto due = tx([](store::Tx& t) { return repo::find_due_mails(t, kNow, 10); });
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].secret, "secret");
  tx([](store::Tx& t) {
    repo::set_mail_sent(t, "m1", kNow);
    return 0;
  });
  EXPECT_TRUE(tx([](store::Tx& t) { return repo::find_due_mails(t, kNow, 10); }).empty());

  auto page = tx([](store::Tx& t) { return repo::notifications_page(t, "u1", std::nullopt, 10); });
  ASSERT_EQ(page.size(), 2u);
  EXPECT_EQ(page[0].id, "n2");  // newest first
  EXPECT_FALSE(page[0].link);
  auto rest = tx([&](store::Tx& t) {
    return repo::notifications_page(t, "u1", repo::NotificationCursor{page[0].created_at_ms, page[0].id}, 10);
  });
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].id, "n1");
  EXPECT_EQ(tx([](store::Tx& t) { return repo::count_unread_notifications(t, "u1"); }), 2);
  tx([](store::Tx& t) {
    repo::set_notification_read(t, "n1", kNow);
    return 0;
  });
  EXPECT_EQ(tx([](store::Tx& t) { return repo::count_unread_notifications(t, "u1"); }), 1);
  EXPECT_FALSE(tx([](store::Tx& t) { return repo::find_notification(t, "someone-else", "n1"); }));
}

TEST_F(PlatformRepo, SchemaVersionIsTheLastMigration) {
  EXPECT_EQ(tx([](store::Tx& t) { return repo::applied_schema_version(t); }), store::migrations().back().version);
}
