// server/onboarding/onboarding_repo.*: typed rows in and out of a real (in-memory SQLite) store,
// and the guarded status moves that give two reviewers deciding at once one move.

#include "server/onboarding/onboarding_repo.hpp"

#include "server/onboarding/providers.hpp"

#include <gtest/gtest.h>

#include "provider_store.hpp"
#include "test_time.hpp"

using namespace gpunex;  // NOLINT: test file
using core::ApplicationStatus;
namespace onboarding = server::onboarding_repo;

namespace {

using gpunex::test_support::kNow;

class OnboardingRepo : public ::testing::Test {
 protected:
  template <class F>
  auto tx(F&& f) {
    return store_->transact([&](store::Tx& t) { return f(t); });
  }
  void SetUp() override {
    store_ = test_support::store_with_provider();
    store_->transact([](store::Tx& tx) {
      tx.exec("INSERT INTO users (id, email, full_name, password_hash, created_at, email_verified_at) VALUES ('u2', 'a@x', 'A', 'x', 0, 0)");
    });
  }
  server::Application draft(const std::string& id, std::int64_t at = kNow) {
    server::Application a;
    a.id = id;
    a.user_id = "u2";
    a.status = ApplicationStatus::draft;
    a.form.full_name = "Ada";
    a.form.email = "a@x";
    a.created_at_ms = a.updated_at_ms = at;
    return a;
  }
  std::unique_ptr<store::Store> store_;
};

}  // namespace

TEST_F(OnboardingRepo, ApplicationRoundTripsWithTypedStatusAndTier) {
  tx([&](store::Tx& t) {
    onboarding::insert_application(t, draft("app1"));
    return 0;
  });
  auto a = tx([](store::Tx& t) { return onboarding::find_application(t, "app1"); });
  ASSERT_TRUE(a);
  EXPECT_EQ(a->status, ApplicationStatus::draft);
  EXPECT_EQ(a->user_id, "u2");
  EXPECT_FALSE(a->tier);
  EXPECT_EQ(tx([](store::Tx& t) { return onboarding::find_open_application_id(t, "u2"); }), "app1");

  EXPECT_TRUE(
      tx([](store::Tx& t) { return onboarding::move_to_submitted(t, "app1", ApplicationStatus::draft, kNow + 1); }));
  const onboarding::DecisionRecord approve{ApplicationStatus::approved, "rev", core::Tier::enterprise};
  EXPECT_TRUE(tx([&](store::Tx& t) {
    return onboarding::move_to_decided(t, "app1", ApplicationStatus::submitted, approve, kNow + 2);
  }));
  a = tx([](store::Tx& t) { return onboarding::find_application(t, "app1"); });
  EXPECT_EQ(a->status, ApplicationStatus::approved);
  EXPECT_EQ(a->tier, core::Tier::enterprise);
  EXPECT_EQ(a->submitted_at_ms, kNow + 1);
  EXPECT_EQ(a->decided_at_ms, kNow + 2);
  EXPECT_FALSE(tx([](store::Tx& t) { return onboarding::find_open_application_id(t, "u2"); }));
}

TEST_F(OnboardingRepo, AMoveFromAStaleStatusChangesNothing) {
  tx([&](store::Tx& t) {
    onboarding::insert_application(t, draft("app1"));
    return 0;
  });
  EXPECT_FALSE(tx([](store::Tx& t) {
    return onboarding::move_status(t, "app1", ApplicationStatus::submitted, ApplicationStatus::needs_info, kNow);
  }));
  EXPECT_FALSE(tx([](store::Tx& t) {
    return onboarding::move_to_decided(t, "app1", ApplicationStatus::submitted,
                                       {ApplicationStatus::rejected, "rev", std::nullopt}, kNow);
  }));
  core::ApplicationForm f;
  f.full_name = "Changed";
  EXPECT_FALSE(
      tx([&](store::Tx& t) { return onboarding::update_form(t, "app1", ApplicationStatus::needs_info, f, kNow); }));
  EXPECT_TRUE(tx([&](store::Tx& t) { return onboarding::update_form(t, "app1", ApplicationStatus::draft, f, kNow); }));
  EXPECT_EQ(tx([](store::Tx& t) { return onboarding::find_application(t, "app1"); })->status, ApplicationStatus::draft);
}

TEST_F(OnboardingRepo, HistoryKeepsItsOrderAndStatuses) {
  tx([&](store::Tx& t) {
    onboarding::insert_application(t, draft("app1"));
    onboarding::append_history(t, "app1", {kNow, "u2", std::nullopt, ApplicationStatus::draft, "started"});
    onboarding::append_history(t, "app1",
                               {kNow + 1, "u2", ApplicationStatus::draft, ApplicationStatus::submitted, "sub"});
    return 0;
  });
  auto h = tx([](store::Tx& t) { return onboarding::history_of(t, "app1"); });
  ASSERT_EQ(h.size(), 2u);
  EXPECT_FALSE(h[0].from);
  EXPECT_EQ(h[1].from, ApplicationStatus::draft);
  EXPECT_EQ(h[1].to, ApplicationStatus::submitted);
  EXPECT_EQ(h[1].note, "sub");
}

TEST_F(OnboardingRepo, ReviewOrderKeepsTheFirstSubmission) {
  tx([&](store::Tx& t) {
    for (const char* id : {"early", "late"}) {
      onboarding::insert_application(t, draft(id));
    }
    // "early" was first submitted first, sent back and resubmitted after "late".
    onboarding::append_history(t, "early", {kNow, "u2", ApplicationStatus::draft, ApplicationStatus::submitted, ""});
    onboarding::append_history(t, "late", {kNow + 5, "u2", ApplicationStatus::draft, ApplicationStatus::submitted, ""});
    onboarding::move_to_submitted(t, "late", ApplicationStatus::draft, kNow + 5);
    onboarding::move_to_submitted(t, "early", ApplicationStatus::draft, kNow + 9);
    return 0;
  });
  auto q = tx([](store::Tx& t) { return onboarding::applications_in_review_order(t, ApplicationStatus::submitted); });
  ASSERT_EQ(q.size(), 2u);
  EXPECT_EQ(q[0].id, "early");
  EXPECT_EQ(q[0].first_submitted_at_ms, kNow);
  EXPECT_EQ(q[1].id, "late");
}

TEST_F(OnboardingRepo, ProvidersAndTheirKeys) {
  EXPECT_EQ(tx([](store::Tx& t) { return onboarding::find_provider_by_user(t, "u1"); })->id, "p1");
  EXPECT_EQ(tx([](store::Tx& t) { return onboarding::provider_tiers(t); }).at("p1"), core::Tier::community);
  tx([](store::Tx& t) {
    onboarding::insert_api_key(t, {"k1", "p1", "hash1", "gpx_abc", kNow, std::nullopt, std::nullopt, std::nullopt});
    return 0;
  });
  auto live = tx([](store::Tx& t) { return onboarding::find_live_api_key_by_hash(t, "hash1"); });
  ASSERT_TRUE(live);
  EXPECT_EQ(live->user_id, "u1");
  EXPECT_EQ(tx([](store::Tx& t) { return onboarding::live_api_key_provider(t, "k1"); }), "p1");
  tx([](store::Tx& t) {
    onboarding::set_api_key_revoked(t, "k1", kNow + 1);
    return 0;
  });
  EXPECT_FALSE(tx([](store::Tx& t) { return onboarding::find_live_api_key_by_hash(t, "hash1"); }));
  EXPECT_FALSE(tx([](store::Tx& t) { return onboarding::live_api_key_provider(t, "k1"); }));
  EXPECT_EQ(tx([](store::Tx& t) { return onboarding::find_api_key_of(t, "p1", "k1"); })->revoked_at_ms, kNow + 1);
}

TEST_F(OnboardingRepo, AKeptKeyIsClearedOnce) {
  tx([](store::Tx& t) {
    onboarding::insert_api_key(t, {"k1", "p1", "hash1", "gpx_abc", kNow, std::nullopt, std::nullopt, std::nullopt});
    onboarding::insert_kept_key(t, "k1", "u1", "gpx_secret", kNow, kNow + 100);
    return 0;
  });
  auto kept = tx([](store::Tx& t) { return onboarding::find_kept_key(t, "p1", "u1", "k1"); });
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->secret, "gpx_secret");
  EXPECT_TRUE(kept->state.has_secret);
  EXPECT_EQ(tx([](store::Tx& t) { return onboarding::clear_kept_key(t, "k1", core::RevealCleared::revealed, kNow); }),
            1);
  EXPECT_EQ(tx([](store::Tx& t) { return onboarding::clear_kept_key(t, "k1", core::RevealCleared::revealed, kNow); }),
            0);
  kept = tx([](store::Tx& t) { return onboarding::find_kept_key(t, "p1", "u1", "k1"); });
  EXPECT_FALSE(kept->secret);
  EXPECT_EQ(kept->state.cleared_why, core::RevealCleared::revealed);
  auto keys = tx([](store::Tx& t) { return onboarding::api_keys_of(t, "p1"); });
  ASSERT_EQ(keys.size(), 1u);
  ASSERT_TRUE(keys[0].kept);
  EXPECT_EQ(core::reveal_state(*keys[0].kept, kNow), core::RevealState::revealed);
}

TEST_F(OnboardingRepo, ProviderContactIsItsUsersEmail) {
  auto c = tx([](store::Tx& t) { return server::provider_contact(t, "p1"); });
  ASSERT_TRUE(c);
  EXPECT_EQ(c->user_id, "u1");
  EXPECT_EQ(c->email, "p@x");
  EXPECT_FALSE(tx([](store::Tx& t) { return server::provider_contact(t, "nobody"); }));
}
