// The ledger's rules (core/ledger): balanced transactions, rounding once on the running total with
// the remainder to the platform, and a property test that posts random sequences of credits,
// settlements, payouts, corrections and refused transactions and checks that every account sums
// to zero and no posting is lost or half-applied.
#include "core/ledger.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

using namespace gpunex;                // NOLINT: test file
using namespace gpunex::core::ledger;  // NOLINT: test file
using core::MicroUsdc;

namespace {

TEST(Ledger, UsageIsPricePerGpuHourTimesSecondsTimesGpusRoundedDown) {
  EXPECT_EQ(usage_total(500'000, 1, 3'600'000), 500'000);         // an L4 at 0.50 for one hour
  EXPECT_EQ(usage_total(1'850'000, 1, 1'000), 513);               // 1.85/h for 1 s = 513.88… → 513
  EXPECT_EQ(usage_total(1'850'000, 4, 90 * 60'000), 11'100'000);  // 4 GPUs for 90 minutes
  EXPECT_EQ(usage_total(1'850'000, 1, 0), 0);
  EXPECT_EQ(usage_total(1'850'000, 1, -5), 0);
  // No overflow at the largest rate on many GPUs for ten years.
  EXPECT_EQ(usage_total(1000 * core::kMicroPerUsdc, 1024, 10LL * 365 * 86'400'000),
            1000LL * core::kMicroPerUsdc * 1024 * 10 * 365 * 24);
}

TEST(Ledger, ProviderGetsItsShareRoundedDownAndThePlatformTheRemainder) {
  EXPECT_EQ(provider_share(1000, 2000), 800);
  EXPECT_EQ(provider_share(1001, 2000), 800);  // 800.8 → 800; the platform gets 201
  EXPECT_EQ(provider_share(1000, 0), 1000);
  EXPECT_EQ(provider_share(1000, 10'000), 0);
  auto plan = plan_settlement(1'000'001, 1, 3'600'000, 2000, {});
  EXPECT_EQ(plan.charge, 1'000'001);
  EXPECT_EQ(plan.provider, 800'000);
  EXPECT_EQ(plan.commission, 200'001);
}

TEST(Ledger, SettlingEverySecondAddsUpToSettlingOnce) {
  const MicroUsdc rate = 1'850'000;  // 513.88… micro-USDC a second: every second rounds
  Settled settled;
  MicroUsdc charged = 0, provider = 0, commission = 0;
  for (std::int64_t s = 1; s <= 3600; ++s) {
    auto p = plan_settlement(rate, 3, s * 1000, 2000, settled);
    charged += p.charge;
    provider += p.provider;
    commission += p.commission;
    settled = p.after;
  }
  const auto once = plan_settlement(rate, 3, 3'600'000, 2000, {});
  EXPECT_EQ(charged, once.charge);
  EXPECT_EQ(provider, once.provider);
  EXPECT_EQ(commission, once.commission);
  EXPECT_EQ(charged, 5'550'000);
  EXPECT_EQ(provider, 4'440'000);
}

// The worker settles up to its own "now" while the agent's report of the end is on its way: the
// final settlement, at the end the agent reports, gives the difference back.
TEST(Ledger, ASettlementAheadOfTheReportedEndIsGivenBack) {
  const MicroUsdc rate = 3'600'000;  // one micro-USDC a millisecond
  auto ahead = plan_settlement(rate, 1, 9'398, 2000, {});
  auto final = plan_settlement(rate, 1, 8'330, 2000, ahead.after);
  EXPECT_EQ(final.charge, -1'068);
  EXPECT_EQ(final.charge, final.provider + final.commission);
  EXPECT_EQ(ahead.charge + final.charge, 8'330);
  EXPECT_EQ(ahead.provider + final.provider, provider_share(8'330, 2000));
  Book book;
  ASSERT_TRUE(book.post(*credit("c", "usr_a", 1'000'000, "usr_admin", "wire", 0)));
  ASSERT_TRUE(book.post(settlement_transaction("s1", ahead, "usr_a", "prv_1", "rnt_1", 1)));
  ASSERT_TRUE(book.post(settlement_transaction("s2", final, "usr_a", "prv_1", "rnt_1", 2)));
  EXPECT_EQ(book.balance(Account::customer("usr_a")), 1'000'000 - 8'330);
  EXPECT_EQ(book.total(), 0);
}

TEST(Ledger, UnbalancedZeroOrMalformedTransactionsAreRefusedAndChangeNothing) {
  Book book;
  ASSERT_TRUE(book.post(*credit("tx1", "usr_a", 5'000'000, "usr_admin", "wire 42", 0)));
  Transaction unbalanced{"tx2",
                         TxKind::correction,
                         "usr_admin",
                         "typo",
                         "",
                         0,
                         {{Account::customer("usr_a"), 10}, {Account::incoming(), -9}}};
  EXPECT_FALSE(book.post(unbalanced));
  Transaction zero{
      "tx3", TxKind::correction, "usr_admin", "", "", 0, {{Account::customer("usr_a"), 0}, {Account::incoming(), 0}}};
  EXPECT_FALSE(book.post(zero));
  Transaction ownerless{"tx4",
                        TxKind::correction,
                        "usr_admin",
                        "",
                        "",
                        0,
                        {{Account{AccountKind::customer_balance, ""}, 5}, {Account::incoming(), -5}}};
  EXPECT_FALSE(book.post(ownerless));
  EXPECT_FALSE(book.post(*credit("tx1", "usr_a", 1, "usr_admin", "again", 0))) << "an id is posted once";
  EXPECT_FALSE(credit("tx5", "usr_a", 0, "usr_admin", "", 0).ok());
  EXPECT_EQ(book.balance(Account::customer("usr_a")), 5'000'000);
  EXPECT_EQ(book.transactions(), 1u);
  EXPECT_EQ(book.total(), 0);
}

TEST(Ledger, AccountNamesAndKindsRoundTrip) {
  for (const auto& a : {Account::customer("usr_1"), Account::provider("prv_1"), Account::commission(),
                        Account::incoming(), Account::outgoing()}) {
    auto back = parse_account(account_name(a));
    ASSERT_TRUE(back.ok()) << account_name(a);
    EXPECT_EQ(*back, a);
  }
  EXPECT_FALSE(parse_account("customer:").ok());
  EXPECT_FALSE(parse_account("bank:1").ok());
  for (auto k : {TxKind::credit, TxKind::settlement, TxKind::payout, TxKind::correction}) {
    EXPECT_EQ(*parse_tx_kind(to_string(k)), k);
  }
  EXPECT_FALSE(parse_tx_kind("gift").ok());
}

TEST(Ledger, HoursLeftAtTheCurrentSpend) {
  EXPECT_EQ(hours_left(10'000'000, 1'850'000), 5);
  EXPECT_EQ(hours_left(10'000'000, 0), -1);
  EXPECT_EQ(hours_left(-3, 1'000), 0);
}

TEST(Ledger, MinutesLeftAtTheCurrentSpend) {
  EXPECT_EQ(minutes_left(1'000'000, 1'500'000), 40);  // 1 USDC at 1.5 an hour: 40 minutes
  EXPECT_EQ(minutes_left(1'000'000, 0), -1);
  EXPECT_EQ(minutes_left(0, 1'000), 0);
  EXPECT_EQ(minutes_left(9'000'000'000'000'000, 1), 540'000'000'000'000'000);  // no overflow
}

TEST(Ledger, LowBalanceWarnsOncePerFallAndRearmsAfterATopUp) {
  constexpr MicroUsdc per_hour = 2'000'000;                              // 2 USDC an hour: the warning line is 2 USDC
  EXPECT_EQ(low_balance(2'000'000, per_hour, false), LowBalance::none);  // exactly an hour left
  EXPECT_EQ(low_balance(1'999'999, per_hour, false), LowBalance::warn);
  EXPECT_EQ(low_balance(-5, per_hour, false), LowBalance::warn);
  // Warned: nothing more while it falls.
  EXPECT_EQ(low_balance(500'000, per_hour, true), LowBalance::none);
  EXPECT_EQ(low_balance(1'999'999, per_hour, true), LowBalance::none);
  // Lasting an hour again (a top-up, or half the spend stopped): re-armed, to warn at the next fall.
  EXPECT_EQ(low_balance(2'000'000, per_hour, true), LowBalance::rearm);
  EXPECT_EQ(low_balance(1'500'000, per_hour / 2, true), LowBalance::rearm);
  // Nothing running: no warning, and a standing one is re-armed.
  EXPECT_EQ(low_balance(0, 0, false), LowBalance::none);
  EXPECT_EQ(low_balance(0, 0, true), LowBalance::rearm);
}

// ---- the property test ----

struct Rental {
  std::string customer, provider;
  MicroUsdc rate;
  int gpus;
  std::int64_t elapsed_ms = 0;
  Settled settled;
};

// Posts a random sequence and checks the ledger's invariants after every step.
void run_random_sequence(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  const std::vector<std::string> customers{"usr_a", "usr_b", "usr_c"};
  const std::vector<std::string> providers{"prv_x", "prv_y"};
  const BasisPoints commission = static_cast<BasisPoints>(pick(0, 5000));

  Book book;
  std::vector<Transaction> posted;
  std::map<Account, MicroUsdc> expected;  // recomputed from the posted list, independently of Book
  std::vector<Rental> rentals;
  int next_id = 0;
  auto id = [&] { return "tx" + std::to_string(++next_id); };
  auto post = [&](const Transaction& tx) {
    const auto before_total = book.transactions();
    auto s = book.post(tx);
    ASSERT_TRUE(s.ok()) << "seed " << seed << ": " << s.error().message;
    ASSERT_EQ(book.transactions(), before_total + 1);
    posted.push_back(tx);
    for (const auto& e : tx.entries) expected[e.account] += e.amount;
  };

  for (int step = 0; step < 400; ++step) {
    switch (pick(0, 5)) {
      case 0: {  // an operator's credit
        auto tx = credit(id(), customers[pick(0, 2)], pick(1, 50'000'000), "usr_admin", "ref", step);
        ASSERT_TRUE(tx.ok());
        post(*tx);
        break;
      }
      case 1: {  // a new rental
        rentals.push_back(
            {customers[pick(0, 2)], providers[pick(0, 1)], pick(1, 5'000'000), static_cast<int>(pick(1, 8)), 0, {}});
        break;
      }
      case 2: {  // a rental runs on and is settled
        if (rentals.empty()) break;
        auto& r = rentals[pick(0, static_cast<std::int64_t>(rentals.size()) - 1)];
        r.elapsed_ms += pick(0, 7'200'000);
        auto plan = plan_settlement(r.rate, r.gpus, r.elapsed_ms, commission, r.settled);
        ASSERT_EQ(plan.charge, plan.provider + plan.commission);
        ASSERT_GE(plan.provider, 0);
        ASSERT_GE(plan.commission, 0);
        r.settled = plan.after;
        auto tx = settlement_transaction(id(), plan, r.customer, r.provider, "rnt", step);
        if (tx.entries.size() >= 2) post(tx);
        break;
      }
      case 3: {  // a payout of part of a provider's earnings
        const auto& p = providers[pick(0, 1)];
        const auto earned = book.balance(Account::provider(p));
        if (earned <= 0) break;
        const auto amount = pick(1, earned);
        post({id(),
              TxKind::payout,
              "system:payouts",
              "payout",
              "pay",
              step,
              {{Account::provider(p), -amount}, {Account::outgoing(), amount}}});
        ASSERT_GE(book.balance(Account::provider(p)), 0);
        break;
      }
      case 4: {  // a correction reverses an earlier transaction
        if (posted.empty()) break;
        Transaction rev = posted[pick(0, static_cast<std::int64_t>(posted.size()) - 1)];
        rev.id = id();
        rev.kind = TxKind::correction;
        for (auto& e : rev.entries) e.amount = -e.amount;
        post(rev);
        break;
      }
      case 5: {  // a refused transaction changes nothing
        const auto balances = book.balances();
        Transaction bad{
            id(),
            TxKind::correction,
            "usr_admin",
            "bad",
            "",
            step,
            {{Account::customer(customers[pick(0, 2)]), pick(1, 1000)}, {Account::incoming(), -pick(1001, 2000)}}};
        ASSERT_FALSE(book.post(bad).ok());
        ASSERT_FALSE(book.post(posted.empty() ? bad : posted.back()).ok()) << "a repeated id is refused";
        ASSERT_EQ(book.balances(), balances);
        break;
      }
    }
    // Every transaction balances, so the ledger sums to zero; every posting is there.
    ASSERT_EQ(book.total(), 0) << "seed " << seed << " step " << step;
    ASSERT_EQ(book.transactions(), posted.size());
    std::size_t entries = 0;
    for (const auto& tx : posted) entries += tx.entries.size();
    ASSERT_EQ(book.entries(), entries);
    for (const auto& [account, b] : expected) ASSERT_EQ(book.balance(account), b) << account_name(account);
  }
  // Each rental's settlements add up to its rounded running total, split once.
  for (const auto& r : rentals) {
    EXPECT_EQ(r.settled.charged, usage_total(r.rate, r.gpus, r.elapsed_ms));
    EXPECT_EQ(r.settled.provider, provider_share(r.settled.charged, commission));
  }
}

TEST(LedgerProperty, RandomSequencesSumToZeroAndLoseNoPosting) {
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    run_random_sequence(seed);
    if (HasFatalFailure()) return;
  }
}

}  // namespace
