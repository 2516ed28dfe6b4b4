// Payout runs and SEPA files (issue #18): the ledger's payout transactions, the pain.001.001.03
// writer (checked by the official XSD with xmllint, for 1 and 1,000 transfers), SEPA's character
// rules, and the payouts worker on a store: a provider is paid once per payout day whatever the
// retries, below the minimum not at all, and a returned payout comes back to the provider.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "core/ledger.hpp"
#include "core/money.hpp"
#include "core/payout_destination.hpp"
#include "core/sepa.hpp"
#include "core/solana.hpp"
#include "provider_store.hpp"
#include "server/billing/ledger_repo.hpp"
#include "server/payouts/payout_runs.hpp"
#include "server/payouts/payout_settings.hpp"
#include "server/payouts/solana_payouts.hpp"
#include "test_time.hpp"
#include "util/ed25519.hpp"

using namespace gpunex;  // NOLINT: test file
namespace sepa = core::sepa;
namespace ledger = core::ledger;

namespace {

// ---- the ledger's payout transactions ----

TEST(PayoutLedger, StartedPaidAndReturnedBalanceAndMoveTheMoneyWhereTheySay) {
  ledger::Book book;
  ASSERT_TRUE(book.post(*ledger::credit("c", "cust", 100, "admin", "ref", 0)));
  ASSERT_TRUE(book.post({"s", ledger::TxKind::settlement, "w", "use", "r1", 1,
                         {{ledger::Account::customer("cust"), -100}, {ledger::Account::provider("p"), 100}}}));
  ASSERT_TRUE(book.post(*ledger::payout_started("t1", "p", 60, "pay_1", 2)));
  EXPECT_EQ(book.balance(ledger::Account::provider("p")), 40);
  EXPECT_EQ(book.balance(ledger::Account::in_flight()), 60);
  ASSERT_TRUE(book.post(*ledger::payout_paid("t2", 60, "pay_1", 3)));
  EXPECT_EQ(book.balance(ledger::Account::in_flight()), 0);
  EXPECT_EQ(book.balance(ledger::Account::outgoing()), 60);
  ASSERT_TRUE(book.post(*ledger::payout_started("t3", "p", 40, "pay_2", 4)));
  ASSERT_TRUE(book.post(*ledger::payout_returned("t4", "p", 40, "pay_2", "account closed", 5)));
  EXPECT_EQ(book.balance(ledger::Account::provider("p")), 40);
  EXPECT_EQ(book.total(), 0);
  // pay_1 was paid; its bank returns it days later: the money comes back from money_out.
  ASSERT_TRUE(book.post(*ledger::paid_payout_returned("t7", "p", 60, "pay_1", "account closed", 7)));
  EXPECT_EQ(book.balance(ledger::Account::outgoing()), 0);
  EXPECT_EQ(book.balance(ledger::Account::provider("p")), 100);
  EXPECT_EQ(book.total(), 0);
  EXPECT_FALSE(ledger::paid_payout_returned("t8", "p", 0, "pay_1", "nothing", 8));
  EXPECT_FALSE(ledger::payout_started("t5", "p", 0, "pay_3", 6));
  EXPECT_FALSE(ledger::payout_paid("t6", 5, "", 6));
  EXPECT_EQ(ledger::account_name(ledger::Account::in_flight()), "platform:payouts_in_flight");
  EXPECT_EQ(*ledger::parse_account("platform:payouts_in_flight"), ledger::Account::in_flight());
  EXPECT_EQ(*ledger::parse_tx_kind("payout_return"), ledger::TxKind::payout_return);
}

// ---- SEPA's rules ----

TEST(Sepa, TextIsCleanedToSepasCharactersNeverWrittenRaw) {
  EXPECT_TRUE(sepa::sepa_text("Jean-Luc O'Neil (GmbH) 1/2 +?:.,"));
  EXPECT_FALSE(sepa::sepa_text("Müller"));
  EXPECT_FALSE(sepa::sepa_text("a<b>"));
  EXPECT_EQ(sepa::sepa_clean("Jürgen Müller-Straße", 70), "Jurgen Muller-Strasse");
  EXPECT_EQ(sepa::sepa_clean("Ærøskøbing & Søn", 70), "AEroskobing + Son");
  EXPECT_EQ(sepa::sepa_clean("<script>alert(1)</script>", 70), "script alert(1) /script");
  EXPECT_EQ(sepa::sepa_clean("a\nb\tc\x01" "d", 70), "a b c d");
  EXPECT_EQ(sepa::sepa_clean("漢字 Li", 70), "Li");
  EXPECT_EQ(sepa::sepa_clean("Jo\xC3"
                             "e\xFF"
                             "Li",
                             70),
            "Jo e Li")
      << "a broken byte is a space; what follows is kept";
  EXPECT_EQ(sepa::sepa_clean(std::string(100, 'x'), 70).size(), 70U);
  EXPECT_EQ(sepa::sepa_clean("  spaced   out  ", 70), "spaced out");
  for (const auto& raw : {"Ünïcödé ☃ \u202Eevil", "\xff\xfe broken utf8", "\"quotes\" & <tags>"}) {
    EXPECT_TRUE(sepa::sepa_text(sepa::sepa_clean(raw, 140))) << raw;
  }
}

TEST(Sepa, RatesAndCentsRoundDownAndRefuseNonsense) {
  EXPECT_EQ(*sepa::parse_rate("0.92"), 920'000);
  EXPECT_EQ(*sepa::parse_rate("1"), 1'000'000);
  EXPECT_FALSE(sepa::parse_rate("0.001"));
  EXPECT_FALSE(sepa::parse_rate("1000"));
  EXPECT_FALSE(sepa::parse_rate("-1"));
  EXPECT_FALSE(sepa::parse_rate("0,92"));
  EXPECT_EQ(sepa::parse_rate("x").error().field, "eur_per_usdc");
  EXPECT_EQ(sepa::eur_cents(20'000'000, 920'000), 1840);   // 20 USDC at 0.92
  EXPECT_EQ(sepa::eur_cents(1'234'567, 1'000'000), 123);   // 1.234567 EUR → 1.23
  EXPECT_EQ(sepa::eur_cents(9'999, 1'000'000), 0);         // below a cent
  EXPECT_EQ(sepa::cents_text(123), "1.23");
  EXPECT_EQ(sepa::cents_text(5), "0.05");
  EXPECT_EQ(sepa::cents_text(99'999'999'999), "999999999.99");
}

sepa::Batch sample_batch(int transfers) {
  sepa::Batch b;
  b.message_id = "GPUNEX-0123456789abcdef0123";
  b.payment_id = b.message_id + "-1";
  b.created_at_ms = 1'796'000'000'123;
  b.execution_date = "2026-12-07";
  b.debtor_name = "GPUnex Platform GmbH";
  b.debtor_iban = "DE89370400440532013000";
  b.debtor_bic = "COBADEFFXXX";
  for (int i = 0; i < transfers; ++i) {
    sepa::Transfer t;
    t.end_to_end_id = "GPX-" + std::to_string(100000 + i);
    t.cents = 1 + i * 137;
    t.creditor_name = i % 2 ? "Zoë Ørsted & Co <b>" : "Jan de Vries";
    t.iban = i % 2 ? "NL91ABNA0417164300" : "DE89370400440532013000";
    if (i % 3 == 0) t.bic = "ABNANL2A";
    t.remittance = "GPUnex payout 2026-12-07 " + std::to_string(i) + " USDC";
    b.transfers.push_back(t);
  }
  return b;
}

//! xmllint's verdict on `xml` against the official schema (scripts/deps.sh fetches it).
int xsd_valid(const std::string& xml, const std::string& name) {
  const std::string xsd = GPUNEX_SEPA_XSD;
  if (!std::filesystem::exists(xsd)) ADD_FAILURE() << xsd << " is missing: run scripts/deps.sh";
  const auto path = std::filesystem::temp_directory_path() / ("gpunex-" + name + ".xml");
  std::ofstream(path) << xml;
  const std::string cmd = "xmllint --noout --schema '" + xsd + "' '" + path.string() + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  std::filesystem::remove(path);
  return rc;
}

TEST(Sepa, FilesOfOneAndAThousandTransfersValidateAgainstTheOfficialSchema) {
  for (int n : {1, 1000}) {
    auto file = sepa::pain001(sample_batch(n));
    ASSERT_TRUE(file) << file.error().message;
    EXPECT_EQ(xsd_valid(*file, "pain-" + std::to_string(n)), 0) << "n=" << n;
    EXPECT_NE(file->find("<NbOfTxs>" + std::to_string(n) + "</NbOfTxs>"), std::string::npos);
    EXPECT_EQ(file->find("<b>"), std::string::npos);
    EXPECT_EQ(file->find("Ø"), std::string::npos);
  }
  const auto one = *sepa::pain001(sample_batch(3));
  EXPECT_NE(one.find("<CtrlSum>4.14</CtrlSum>"), std::string::npos) << one;  // 0.01 + 1.38 + 2.75
  EXPECT_NE(one.find("<Nm>Zoe Orsted + Co b</Nm>"), std::string::npos) << one;
  EXPECT_NE(one.find("<InstdAmt Ccy=\"EUR\">1.38</InstdAmt>"), std::string::npos);
  // The schema itself catches what the writer must never produce.
  std::string broken = one;
  broken.replace(broken.find("<PmtMtd>TRF</PmtMtd>"), 20, "");
  EXPECT_NE(xsd_valid(broken, "broken"), 0);
}

TEST(Sepa, WhatBreaksTheRulesIsRefusedNamingIt) {
  auto b = sample_batch(2);
  b.transfers[1].iban = "DE89370400440532013001";  // one digit altered: mod 97 fails
  EXPECT_EQ(sepa::pain001(b).error().field, "transfers[1].iban");
  b = sample_batch(2);
  b.transfers[0].cents = 0;
  EXPECT_EQ(sepa::pain001(b).error().field, "transfers[0].amount");
  b = sample_batch(2);
  b.transfers[0].cents = 100'000'000'000;
  EXPECT_EQ(sepa::pain001(b).error().field, "transfers[0].amount");
  b = sample_batch(1);
  b.message_id = "has_underscore";
  EXPECT_EQ(sepa::pain001(b).error().field, "message_id");
  b = sample_batch(1);
  b.message_id = std::string(36, 'A');
  EXPECT_EQ(sepa::pain001(b).error().field, "message_id");
  b = sample_batch(0);
  EXPECT_EQ(sepa::pain001(b).error().field, "transfers");
  b = sample_batch(1);
  b.transfers[0].creditor_name = "漢字";
  EXPECT_EQ(sepa::pain001(b).error().field, "transfers[0].creditor_name");
}

// ---- the payouts worker on a store ----

using gpunex::test_support::kDay;
// Monday 2026-12-07 00:00 UTC and the days around it, as epoch ms (a Monday by construction:
// 1970-01-05 was a Monday, so Mondays are 4 days + a multiple of 7 after the epoch).
constexpr std::int64_t kMonday = (4 + 7 * 2970) * kDay;
static_assert((kMonday / kDay - 4) % 7 == 0);

class PayoutRuns : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = test_support::store_with_provider();
    store_->transact([](store::Tx& tx) {
      tx.exec("INSERT INTO users (id, email, full_name, password_hash, created_at, email_verified_at) VALUES ('c1', 'c@x', 'C', 'x', 0, 0)");
    });
  }
  //! The provider earns `amount` at `at_ms` (a settlement from customer c1).
  void earn(core::MicroUsdc amount, std::int64_t at_ms) {
    auto posted = store_->transact([&](store::Tx& tx) {
      ledger::Transaction t{"set_" + std::to_string(++n_), ledger::TxKind::settlement, "test", "use", "r", at_ms,
                            {{ledger::Account::customer("c1"), -amount}, {ledger::Account::provider("p1"), amount}}};
      return server::billing::post(tx, t);
    });
    ASSERT_TRUE(posted) << posted.error().message;
  }
  void choose(const std::string& method, const std::string& schedule) {
    nlohmann::json body{{"method", method}, {"schedule", schedule}};
    if (method == "sepa") {
      body["account_holder"] = "Jurgen Provider";
      body["iban"] = "DE89370400440532013000";
    } else {
      body["wallet_address"] = "GJRs4FwHtemZ5ZE9x3FNvJ8TMwitKTh21yxdRPqn7npE";
    }
    auto s = server::payouts::read_settings(body);
    ASSERT_TRUE(s) << s.error().message;
    store_->transact([&](store::Tx& tx) { server::payouts::record_change(tx, "p1", *s, "u1", 0, 0); });
  }
  core::MicroUsdc balance(const ledger::Account& a) {
    return store_->transact([&](store::Tx& tx) { return server::billing::balance(tx, a); });
  }
  nlohmann::json payouts() {
    return store_->transact([&](store::Tx& tx) { return server::payouts::provider_payouts(tx, "p1"); });
  }
  server::payouts::RoundResult round(std::int64_t now_ms, bool solana = true) {
    server::payouts::RunSettings s;
    s.solana_configured = solana;
    return server::payouts::run_due_payouts(*store_, s, now_ms);
  }
  std::unique_ptr<store::Store> store_;
  int n_ = 0;
};

// A wallet address pasted with a space or a line break around it is the address between them.
TEST(PayoutSettings, AWalletPastedWithSpacesIsTrimmed) {
  auto s = server::payouts::read_settings({{"method", "solana_usdc"},
                                           {"schedule", "weekly"},
                                           {"wallet_address", "  GJRs4FwHtemZ5ZE9x3FNvJ8TMwitKTh21yxdRPqn7npE\n"}});
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->destination["wallet_address"], "GJRs4FwHtemZ5ZE9x3FNvJ8TMwitKTh21yxdRPqn7npE");
  auto program = server::payouts::read_settings(
      {{"method", "solana_usdc"}, {"schedule", "weekly"}, {"wallet_address", "11111111111111111111111111111111"}});
  ASSERT_FALSE(program);
  EXPECT_EQ(program.error().field, "wallet_address");
  auto iban = server::payouts::read_settings(
      {{"method", "sepa"}, {"schedule", "weekly"}, {"account_holder", "Ada"}, {"iban", "DE89370400440532013001"}});
  ASSERT_FALSE(iban);
  EXPECT_EQ(iban.error().message.rfind("IBAN is not a valid IBAN", 0), 0U) << iban.error().message;
}

TEST_F(PayoutRuns, AMondayRunPaysWhatWasSettledBeforeItOnceWhateverTheRetries) {
  choose("sepa", "weekly");
  earn(15'000'000, kMonday - 3 * kDay);
  earn(10'000'000, kMonday - kDay);
  earn(7'000'000, kMonday + 3'600'000);  // after the cut-off: next week's
  EXPECT_EQ(round(kMonday - kDay).created, 0);  // Sunday: not a payout day
  EXPECT_EQ(round(kMonday + 4 * 3'600'000).created, 1);
  EXPECT_EQ(round(kMonday + 5 * 3'600'000).created, 0);  // the worker's next round
  EXPECT_EQ(round(kMonday + 2 * kDay).created, 0);        // Wednesday looks back at Monday: paid
  const auto list = payouts();
  ASSERT_EQ(list.size(), 1U);
  EXPECT_EQ(list[0]["amount"], "25.000000");
  EXPECT_EQ(list[0]["status"], "awaiting_batch");
  EXPECT_EQ(list[0]["payout_day"], "2026-12-07");
  EXPECT_EQ(balance(ledger::Account::provider("p1")), 7'000'000);
  EXPECT_EQ(balance(ledger::Account::in_flight()), 25'000'000);
}

TEST_F(PayoutRuns, BelowTheMinimumNothingMovesAndALateWorkerStillPaysMonday) {
  choose("sepa", "weekly");
  earn(19'999'999, kMonday - kDay);
  auto r = round(kMonday + 1000);
  EXPECT_EQ(r.created, 0);
  EXPECT_EQ(r.below_minimum, 1);
  earn(5'000'000, kMonday + 2 * kDay);
  // Next Monday the worker was down; on Tuesday it pays next Monday's run.
  EXPECT_EQ(round(kMonday + 8 * kDay).created, 1);
  EXPECT_EQ(payouts()[0]["amount"], "24.999999");
  EXPECT_EQ(payouts()[0]["payout_day"], "2026-12-14");
}

TEST_F(PayoutRuns, SolanaPayoutsAreHeldWithoutAChainClientAndTheEarningsStay) {
  choose("solana_usdc", "weekly");
  earn(30'000'000, kMonday - kDay);
  auto r = round(kMonday + 1000, /*solana=*/false);
  EXPECT_EQ(r.created, 0);
  EXPECT_EQ(r.held, 1);
  EXPECT_EQ(balance(ledger::Account::provider("p1")), 30'000'000);
  const auto runs = store_->transact([&](store::Tx& tx) {
    return *server::payouts::runs_page(tx, {10, std::nullopt});
  })["items"];
  ASSERT_EQ(runs.size(), 1U);
  EXPECT_EQ(runs[0]["status"], "held");
  EXPECT_NE(runs[0]["held_reason"].get<std::string>().find("hot wallet"), std::string::npos);
}

TEST_F(PayoutRuns, AnAdminIsToldOnceWhenARunIsHeldForWantOfAHotWallet) {
  store_->transact([](store::Tx& tx) {
    tx.exec("INSERT INTO users (id, email, full_name, password_hash, created_at) VALUES ('a1', 'a@x', 'A', 'x', 0)");
    tx.exec("INSERT INTO user_roles (user_id, role, granted_at) VALUES ('a1', 'admin', 0)");
  });
  choose("solana_usdc", "weekly");
  earn(30'000'000, kMonday - kDay);
  server::payouts::RunSettings s;
  s.base_url = "https://gpunex.example";
  for (int i = 0; i < 3; ++i) EXPECT_EQ(server::payouts::run_due_payouts(*store_, s, kMonday + 1000 + i).held, 1);
  const auto rows = store_->transact([](store::Tx& tx) {
    return tx.query("SELECT user_id, kind, title, body, link FROM notifications WHERE kind = 'payout_run_held'");
  });
  ASSERT_EQ(rows.size(), 1U);  // the run became held once, however many rounds passed
  EXPECT_EQ(rows[0].str(0), "a1");
  EXPECT_EQ(rows[0].str(2), "The payout run of 2026-12-07 is held");
  EXPECT_NE(rows[0].str(3).find("no Solana hot wallet is configured"), std::string::npos);
  EXPECT_EQ(rows[0].str(4), "https://gpunex.example/#/payouts");
}

TEST_F(PayoutRuns, ASepaBatchIsAValidFileThenSentThenPaidOrReturnedToTheProvider) {
  choose("sepa", "monthly");
  earn(50'000'000, kMonday - 10 * kDay);
  // December 2026's first business day is Tuesday 1 December.
  const std::int64_t dec1 = kMonday - 6 * kDay;
  ASSERT_EQ(round(dec1 + 1000).created, 1);
  const auto runs = store_->transact([&](store::Tx& tx) {
    return *server::payouts::runs_page(tx, {10, std::nullopt});
  })["items"];
  const std::string run_id = runs[0]["id"];
  const server::payouts::Debtor debtor{"GPUnex Platform", "DE89370400440532013000", "COBADEFFXXX"};
  auto batch = store_->transact([&](store::Tx& tx) {
    return server::payouts::create_sepa_batch(tx, run_id, 920'000, debtor, "admin", "link", dec1 + 2000);
  });
  ASSERT_TRUE(batch) << batch.error().message;
  EXPECT_EQ((*batch)["total_eur"], "46.00");
  // Nothing is left to batch: a second batch is refused, not a second file.
  auto again = store_->transact([&](store::Tx& tx) {
    return server::payouts::create_sepa_batch(tx, run_id, 920'000, debtor, "admin", "link", dec1 + 3000);
  });
  EXPECT_EQ(again.error().code, core::ErrorCode::conflict);
  const std::string batch_id = (*batch)["id"];
  const auto file = store_->transact([&](store::Tx& tx) { return server::payouts::sepa_batch_file(tx, batch_id); });
  ASSERT_TRUE(file);
  EXPECT_EQ(xsd_valid(*file, "run"), 0);
  EXPECT_NE(file->find("<InstdAmt Ccy=\"EUR\">46.00</InstdAmt>"), std::string::npos);

  const std::string payout_id = payouts()[0]["id"];
  auto settle = [&](server::payouts::Outcome o) {
    return store_->transact([&](store::Tx& tx) {
      return server::payouts::settle_payout(tx, payout_id, o, "account closed", "link", dec1 + 5000);
    });
  };
  // Not sent yet: neither paid nor returned (the file may still reach the bank).
  EXPECT_EQ(settle(server::payouts::Outcome::paid).error().code, core::ErrorCode::conflict);
  EXPECT_EQ(settle(server::payouts::Outcome::returned).error().code, core::ErrorCode::conflict);
  ASSERT_TRUE(store_->transact([&](store::Tx& tx) { return server::payouts::mark_batch_sent(tx, batch_id, dec1 + 4000); }));
  EXPECT_EQ(payouts()[0]["status"], "sent");
  auto returned = settle(server::payouts::Outcome::returned);
  ASSERT_TRUE(returned) << returned.error().message;
  EXPECT_EQ((*returned)["status"], "returned");
  EXPECT_TRUE(settle(server::payouts::Outcome::returned));  // said twice: the same answer, no second credit
  EXPECT_EQ(settle(server::payouts::Outcome::paid).error().code, core::ErrorCode::conflict);
  EXPECT_EQ(balance(ledger::Account::provider("p1")), 50'000'000);
  EXPECT_EQ(balance(ledger::Account::in_flight()), 0);
  const auto mails = store_->transact([&](store::Tx& tx) {
    return tx.query_one("SELECT COUNT(*) FROM outbox WHERE kind = 'payout_returned' AND to_addr = 'p@x'")->i64(0);
  });
  EXPECT_EQ(mails, 1);
}

TEST_F(PayoutRuns, APaidPayoutLeavesThroughMoneyOut) {
  choose("sepa", "weekly");
  earn(40'000'000, kMonday - kDay);
  ASSERT_EQ(round(kMonday + 1000).created, 1);
  const std::string run_id = store_->transact([&](store::Tx& tx) {
    return *server::payouts::runs_page(tx, {10, std::nullopt});
  })["items"][0]["id"];
  const server::payouts::Debtor debtor{"GPUnex Platform", "DE89370400440532013000", ""};
  auto batch = store_->transact([&](store::Tx& tx) {
    return server::payouts::create_sepa_batch(tx, run_id, 1'000'000, debtor, "admin", "link", kMonday + 2000);
  });
  ASSERT_TRUE(batch);
  ASSERT_TRUE(store_->transact(
      [&](store::Tx& tx) { return server::payouts::mark_batch_sent(tx, (*batch)["id"], kMonday + 3000); }));
  const std::string payout_id = payouts()[0]["id"];
  for (int i = 0; i < 2; ++i) {
    auto paid = store_->transact([&](store::Tx& tx) {
      return server::payouts::settle_payout(tx, payout_id, server::payouts::Outcome::paid, "", "link", kMonday + 4000);
    });
    ASSERT_TRUE(paid);
    EXPECT_EQ((*paid)["status"], "paid");
  }
  EXPECT_EQ(balance(ledger::Account::outgoing()), 40'000'000);
  EXPECT_EQ(balance(ledger::Account::in_flight()), 0);
  EXPECT_EQ(balance(ledger::Account::provider("p1")), 0);
}

}  // namespace

// ---- the Solana sender against a scripted chain: the moment a transaction lands ----

namespace {

//! A chain whose one pending transaction lands at the next look at the block height, which that same
//! look also carries past the transaction's last valid height: the race between "is it known?" and
//! "has it expired?" that must never end in a second signature.
class LandsWhileAsked : public server::payouts::ChainClient {
 public:
  std::uint64_t height = 100;
  bool land_at_next_height = false;
  std::set<std::string> sent, landed;
  std::string pending;
  core::Result<server::payouts::LatestBlockhash> latest_blockhash() override {
    server::payouts::LatestBlockhash b;
    b.blockhash.fill(static_cast<std::uint8_t>(height));
    b.last_valid_block_height = height + 5;
    return b;
  }
  core::Result<std::string> send_transaction(const core::solana::Bytes& wire) override {
    const std::string sig = core::payout::base58_encode(core::solana::Bytes(wire.begin() + 1, wire.begin() + 65));
    sent.insert(sig);
    pending = sig;
    return sig;
  }
  core::Result<std::vector<std::optional<server::payouts::SignatureStatus>>> signature_statuses(
      const std::vector<std::string>& sigs) override {
    std::vector<std::optional<server::payouts::SignatureStatus>> out;
    for (const auto& s : sigs) {
      if (landed.count(s)) {
        out.push_back(server::payouts::SignatureStatus{std::nullopt, "finalized"});
      } else {
        out.emplace_back(std::nullopt);
      }
    }
    return out;
  }
  core::Result<std::uint64_t> block_height() override {
    if (land_at_next_height && !pending.empty()) {
      landed.insert(pending);
      height += 50;  // past every last valid height handed out so far
      land_at_next_height = false;
    }
    return height;
  }
  core::Result<std::uint64_t> token_balance(const core::solana::Key&) override { return std::uint64_t{1} << 40; }
  core::Result<std::uint64_t> sol_balance(const core::solana::Key&) override { return std::uint64_t{1} << 40; }
};

}  // namespace

TEST_F(PayoutRuns, ATransactionThatLandsWhileTheSenderLooksIsPaidOnceNeverSignedAgain) {
  choose("solana_usdc", "weekly");
  earn(30'000'000, kMonday - kDay);
  ASSERT_EQ(round(kMonday + 1000).created, 1);
  LandsWhileAsked chain;
  server::payouts::SolanaSettings s;
  s.hot_wallet = util::ed25519_from_seed({9});
  s.mint = *core::solana::key_from_base58("EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v");
  auto first = server::payouts::send_solana_payouts(*store_, chain, s, "https://gpunex.example", kMonday + 2000);
  EXPECT_EQ(first.signed_now, 1);
  ASSERT_EQ(chain.sent.size(), 1U);
  chain.land_at_next_height = true;
  auto second = server::payouts::send_solana_payouts(*store_, chain, s, "https://gpunex.example", kMonday + 3000);
  EXPECT_EQ(second.signed_now, 0) << "a transaction that may still land is never replaced";
  EXPECT_EQ(second.paid, 1);
  EXPECT_EQ(chain.sent.size(), 1U);
  EXPECT_EQ(payouts()[0]["status"], "paid");
  EXPECT_EQ(balance(ledger::Account::outgoing()), 30'000'000);
}
