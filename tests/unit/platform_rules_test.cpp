// The pure rules of the platform and onboarding areas: core/account.* (roles),
// core/api_key.* (key use, the one-time reveal's states and refusals) and the
// application status helpers of core/application.* (names, open, decisions).

#include <gtest/gtest.h>

#include "core/account.hpp"
#include "core/api_key.hpp"
#include "core/application.hpp"
#include "test_time.hpp"

using namespace gpunex;  // NOLINT: test file
using core::ApplicationAction;
using core::ApplicationStatus;

namespace {

using gpunex::test_support::kNow;

std::string detail(const core::Status& s) { return s.ok() ? "ok" : s.error().detail_code.value_or("?"); }

}  // namespace

TEST(Roles, NamesRoundTrip) {
  for (auto r : core::all_roles()) EXPECT_EQ(core::parse_role(core::role_name(r)), r);
  EXPECT_EQ(core::role_name(core::Role::admin), "admin");
  EXPECT_FALSE(core::parse_role("root"));
  EXPECT_FALSE(core::parse_role("Admin"));
  EXPECT_EQ(core::all_roles().size(), 4u);
}

TEST(Roles, EveryAccountIsACustomer) {
  EXPECT_EQ(core::initial_roles(core::Role::customer), std::vector<core::Role>{core::Role::customer});
  EXPECT_EQ(core::initial_roles(core::Role::reviewer),
            (std::vector<core::Role>{core::Role::customer, core::Role::reviewer}));
}

TEST(ApiKeyUse, RecordedAtMostOncePerInterval) {
  EXPECT_TRUE(core::api_key_use_due(std::nullopt, kNow));
  EXPECT_TRUE(core::api_key_use_due(kNow - core::kApiKeyTouchIntervalMs, kNow));
  EXPECT_FALSE(core::api_key_use_due(kNow - core::kApiKeyTouchIntervalMs + 1, kNow));
  EXPECT_FALSE(core::api_key_use_due(kNow, kNow));
}

TEST(KeptKeyRules, ClearedNamesRoundTrip) {
  for (auto c : {core::RevealCleared::revealed, core::RevealCleared::revoked, core::RevealCleared::expired}) {
    EXPECT_EQ(core::parse_reveal_cleared(core::reveal_cleared_name(c)), c);
  }
  EXPECT_FALSE(core::parse_reveal_cleared("available"));
}

TEST(KeptKeyRules, StateFollowsExpiryUntilCleared) {
  core::KeptKey k{true, kNow + 10, std::nullopt, std::nullopt};
  EXPECT_EQ(core::reveal_state(k, kNow), core::RevealState::available);
  EXPECT_EQ(core::reveal_state(k, kNow + 10), core::RevealState::expired);  // before the worker clears it
  k = {false, kNow + 10, kNow, core::RevealCleared::revealed};
  EXPECT_EQ(core::reveal_state(k, kNow), core::RevealState::revealed);
  k.cleared_why = core::RevealCleared::revoked;
  EXPECT_EQ(core::reveal_state(k, kNow), core::RevealState::revoked);
  k.cleared_why = std::nullopt;  // cleared for a reason this version does not know: shown as expired
  EXPECT_EQ(core::reveal_state(k, kNow), core::RevealState::expired);
  EXPECT_EQ(core::reveal_state_name(core::RevealState::available), "available");
}

TEST(KeptKeyRules, RefusalsSayWhy) {
  const core::KeptKey kept{true, kNow + 10, std::nullopt, std::nullopt};
  EXPECT_TRUE(core::check_reveal(kept, kNow, "").ok());
  EXPECT_EQ(detail(core::check_reveal(kept, kNow + 10, "")), "key_reveal_expired");
  auto shown = core::check_reveal({false, kNow + 10, kNow, core::RevealCleared::revealed}, kNow, "2023-11-14T22:13:20Z");
  EXPECT_EQ(detail(shown), "key_already_shown");
  EXPECT_EQ(shown.error().code, core::ErrorCode::gone);
  EXPECT_NE(shown.error().message.find("2023-11-14T22:13:20Z"), std::string::npos);
  EXPECT_EQ(detail(core::check_reveal({false, kNow + 10, kNow, core::RevealCleared::revoked}, kNow, "")), "key_revoked");
  EXPECT_EQ(detail(core::check_reveal({false, kNow + 10, kNow, core::RevealCleared::expired}, kNow, "")),
            "key_reveal_expired");
}

TEST(ApplicationStatusNames, RoundTrip) {
  for (auto s : core::all_statuses()) EXPECT_EQ(core::parse_status(core::status_name(s)), s);
  EXPECT_EQ(core::all_statuses().size(), 5u);
  EXPECT_FALSE(core::parse_status("approve"));
}

TEST(ApplicationStatusNames, OpenUntilDecided) {
  EXPECT_TRUE(core::is_open(ApplicationStatus::draft));
  EXPECT_TRUE(core::is_open(ApplicationStatus::submitted));
  EXPECT_TRUE(core::is_open(ApplicationStatus::needs_info));
  EXPECT_FALSE(core::is_open(ApplicationStatus::approved));
  EXPECT_FALSE(core::is_open(ApplicationStatus::rejected));
}

TEST(ApplicationStatusNames, DecisionNames) {
  EXPECT_EQ(core::parse_decision("approve"), ApplicationAction::approve);
  EXPECT_EQ(core::parse_decision("reject"), ApplicationAction::reject);
  EXPECT_EQ(core::parse_decision("needs_info"), ApplicationAction::request_info);
  EXPECT_FALSE(core::parse_decision("request_info"));
  EXPECT_FALSE(core::parse_decision("submit"));
}

TEST(ApplicationStatusNames, DecidedApplicationsRefuseEveryAction) {
  for (auto from : {ApplicationStatus::approved, ApplicationStatus::rejected}) {
    for (auto a : {ApplicationAction::edit, ApplicationAction::submit, ApplicationAction::approve,
                   ApplicationAction::reject, ApplicationAction::request_info}) {
      auto r = core::apply_action(from, a);
      ASSERT_FALSE(r.ok());
      EXPECT_EQ(r.error().code, core::ErrorCode::conflict);
      EXPECT_EQ(r.error().detail_code, "invalid_state");
    }
  }
}
