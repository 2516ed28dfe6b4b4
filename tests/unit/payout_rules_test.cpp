// When and where providers are paid (core/payout_calendar, core/payout_destination; issue #18):
// the payout calendar over a century of dates, Easter and TARGET2 closing days, minimums; base58,
// which Solana addresses can sign (on the Ed25519 curve) against the reference's vectors, IBANs
// and BICs; the earnings tracker's groups and their CSV.
#include <gtest/gtest.h>

#include "core/earnings.hpp"
#include "core/payout_calendar.hpp"
#include "core/payout_destination.hpp"
#include "server/billing/earnings.hpp"

using namespace gpunex::core::payout;  // NOLINT: test file
using namespace date;                  // NOLINT: test file

namespace {

sys_days ymd(int y, unsigned m, unsigned d) {
  return sys_days{year{y} / month{m} / day{d}};
}

std::string str(sys_days d) {
  return date::format("%F", d);
}

TEST(PayoutCalendar, EasterOnKnownYears) {
  // Published dates of Western Easter.
  const std::vector<std::pair<int, sys_days>> known = {
      {1961, ymd(1961, 4, 2)},   {2000, ymd(2000, 4, 23)}, {2008, ymd(2008, 3, 23)}, {2011, ymd(2011, 4, 24)},
      {2019, ymd(2019, 4, 21)},  {2024, ymd(2024, 3, 31)}, {2025, ymd(2025, 4, 20)}, {2026, ymd(2026, 4, 5)},
      {2027, ymd(2027, 3, 28)},  {2038, ymd(2038, 4, 25)}, {2285, ymd(2285, 3, 22)}};
  for (const auto& [y, easter] : known) EXPECT_EQ(str(sys_days{easter_sunday(year{y})}), str(easter)) << y;
}

TEST(PayoutCalendar, Target2ClosingDays) {
  for (auto d : {ymd(2026, 1, 1), ymd(2026, 4, 3), ymd(2026, 4, 6), ymd(2026, 5, 1), ymd(2026, 12, 25),
                 ymd(2026, 12, 26), ymd(2024, 3, 29), ymd(2024, 4, 1)}) {
    EXPECT_TRUE(target2_closed(d)) << str(d);
  }
  for (auto d : {ymd(2026, 1, 2), ymd(2026, 4, 5), ymd(2026, 4, 7), ymd(2026, 12, 24), ymd(2026, 12, 31)}) {
    EXPECT_FALSE(target2_closed(d)) << str(d);
  }
}

TEST(PayoutCalendar, WeeklyIsMondayAndForSepaTheNextBusinessDayWhenTarget2IsClosed) {
  // Easter Monday 6 April 2026: a SEPA payout goes on the Tuesday, a wallet payout on the Monday.
  EXPECT_EQ(next_payout_day(Schedule::weekly, Method::sepa, ymd(2026, 4, 2)), ymd(2026, 4, 7));
  EXPECT_EQ(next_payout_day(Schedule::weekly, Method::sepa, ymd(2026, 4, 6)), ymd(2026, 4, 7));
  EXPECT_EQ(next_payout_day(Schedule::weekly, Method::sepa, ymd(2026, 4, 7)), ymd(2026, 4, 7)) << "the day itself";
  EXPECT_EQ(next_payout_day(Schedule::weekly, Method::sepa, ymd(2026, 4, 8)), ymd(2026, 4, 13));
  EXPECT_EQ(next_payout_day(Schedule::weekly, Method::solana_usdc, ymd(2026, 4, 2)), ymd(2026, 4, 6));
  // An ordinary week: Monday, and Monday itself.
  EXPECT_EQ(next_payout_day(Schedule::weekly, Method::sepa, ymd(2026, 12, 9)), ymd(2026, 12, 14));
  EXPECT_EQ(next_payout_day(Schedule::weekly, Method::sepa, ymd(2026, 12, 14)), ymd(2026, 12, 14));
  EXPECT_EQ(next_payout_day(Schedule::weekly, Method::solana_usdc, ymd(2026, 12, 13)), ymd(2026, 12, 14));
  // Christmas 2028: Monday the 25th and Tuesday the 26th are closed, so SEPA pays Wednesday the 27th; and
  // 1 January 2029 is a Monday and closed: Tuesday the 2nd.
  EXPECT_EQ(next_payout_day(Schedule::weekly, Method::sepa, ymd(2028, 12, 25)), ymd(2028, 12, 27));
  EXPECT_EQ(next_payout_day(Schedule::weekly, Method::sepa, ymd(2028, 12, 28)), ymd(2029, 1, 2));
}

TEST(PayoutCalendar, ThePeriodStartsOnItsWeeksMondayOrItsMonthsFirstDay) {
  // Wednesday 9 December 2026; Monday 7 December; a Sunday counts with the week before it.
  EXPECT_EQ(period_start(Schedule::weekly, ymd(2026, 12, 9)), ymd(2026, 12, 7));
  EXPECT_EQ(period_start(Schedule::weekly, ymd(2026, 12, 7)), ymd(2026, 12, 7));
  EXPECT_EQ(period_start(Schedule::weekly, ymd(2026, 12, 13)), ymd(2026, 12, 7));
  EXPECT_EQ(period_start(Schedule::weekly, ymd(2027, 1, 1)), ymd(2026, 12, 28)) << "across the year";
  EXPECT_EQ(period_start(Schedule::monthly, ymd(2026, 12, 9)), ymd(2026, 12, 1));
  EXPECT_EQ(period_start(Schedule::monthly, ymd(2026, 12, 1)), ymd(2026, 12, 1));
  EXPECT_EQ(period_start(Schedule::monthly, ymd(2028, 2, 29)), ymd(2028, 2, 1));
}

TEST(PayoutCalendar, MonthlyIsTheFirstBusinessDaySkippingTarget2ForSepa) {
  // 1 January 2026 is a Thursday and a TARGET2 holiday.
  EXPECT_EQ(next_payout_day(Schedule::monthly, Method::sepa, ymd(2025, 12, 15)), ymd(2026, 1, 2));
  EXPECT_EQ(next_payout_day(Schedule::monthly, Method::solana_usdc, ymd(2025, 12, 15)), ymd(2026, 1, 1));
  // 1 May 2026 is a Friday: SEPA waits for Monday the 4th.
  EXPECT_EQ(next_payout_day(Schedule::monthly, Method::sepa, ymd(2026, 4, 2)), ymd(2026, 5, 4));
  // Easter Monday 1 April 2024.
  EXPECT_EQ(next_payout_day(Schedule::monthly, Method::sepa, ymd(2024, 3, 5)), ymd(2024, 4, 2));
  EXPECT_EQ(next_payout_day(Schedule::monthly, Method::solana_usdc, ymd(2024, 3, 5)), ymd(2024, 4, 1));
  // A month starting on a weekend: 1 August 2026 is a Saturday.
  EXPECT_EQ(next_payout_day(Schedule::monthly, Method::solana_usdc, ymd(2026, 7, 2)), ymd(2026, 8, 3));
  // The day itself, when it is the payout day.
  EXPECT_EQ(next_payout_day(Schedule::monthly, Method::sepa, ymd(2026, 6, 1)), ymd(2026, 6, 1));
  EXPECT_EQ(next_payout_day(Schedule::weekly, Method::sepa, ymd(2026, 12, 7)), ymd(2026, 12, 7));
  EXPECT_EQ(next_payout_day(Schedule::weekly, Method::sepa, ymd(2026, 12, 4)), ymd(2026, 12, 7));
}

TEST(PayoutCalendar, ThePendingPayoutOnAPayoutDayIsTodaysOnlyUntilItsRunPaysOrWhenItPaysNothing) {
  const Minimums m;  // weekly 20 USDC, monthly 1 USDC
  const auto pending = [&](sys_days today, gpunex::core::MicroUsdc balance, gpunex::core::MicroUsdc payable_today,
                           bool paid_today, Schedule s = Schedule::weekly) {
    const auto p = pending_payout(s, Method::solana_usdc, today, balance, payable_today, paid_today, m);
    return str(p.day) + " " + std::to_string(p.amount);
  };
  // Friday 4 December 2026: Monday the 7th pays the balance as it stands.
  EXPECT_EQ(pending(ymd(2026, 12, 4), 30'000'000, 30'000'000, false), "2026-12-07 30000000");
  // Monday the 7th, before its run: what was earned before 00:00 UTC, not what was earned today.
  EXPECT_EQ(pending(ymd(2026, 12, 7), 31'000'000, 25'000'000, false), "2026-12-07 25000000");
  // Monday, its run done: today's earnings wait for the 14th.
  EXPECT_EQ(pending(ymd(2026, 12, 7), 1'000'000, 25'000'000, true), "2026-12-14 1000000");
  // Monday, what was earned before today under the minimum: today's run pays nothing, the 14th the balance.
  EXPECT_EQ(pending(ymd(2026, 12, 7), 21'000'000, 5'000'000, false), "2026-12-14 21000000");
  EXPECT_EQ(pending(ymd(2026, 12, 7), 0, 0, false), "2026-12-14 0");
  // Monthly: 1 December 2026 (a Tuesday), its run done: USDC waits for Friday 1 January 2027.
  EXPECT_EQ(pending(ymd(2026, 12, 1), 2'000'000, 0, true, Schedule::monthly), "2027-01-01 2000000");
}

// Over every day of a century, checked against the definitions rather than the code's arithmetic.
TEST(PayoutCalendar, EveryDayOfACenturyGetsTheRightPayoutDay) {
  for (sys_days from = ymd(2000, 1, 1); from < ymd(2100, 1, 1); from += days(1)) {
    const auto w = next_payout_day(Schedule::weekly, Method::solana_usdc, from);
    ASSERT_EQ(weekday{w}, Monday) << str(from);
    ASSERT_TRUE(w >= from && w < from + days(7)) << str(from);
    // SEPA: the first business day on or after its week's Monday, on or after `from`, and no later week's.
    const auto s = next_payout_day(Schedule::weekly, Method::sepa, from);
    ASSERT_GE(s, from) << str(from);
    ASSERT_TRUE(business_day(s, Method::sepa)) << str(from);
    const sys_days monday = s - (weekday{s} - Monday);
    for (sys_days d = monday; d < s; d += days(1)) ASSERT_FALSE(business_day(d, Method::sepa)) << str(from);
    ASSERT_LT(s, from + days(10)) << str(from);  // this week's or next week's, never later
    for (auto m : {Method::sepa, Method::solana_usdc}) {
      const auto p = next_payout_day(Schedule::monthly, m, from);
      ASSERT_GE(p, from) << str(from);
      ASSERT_TRUE(business_day(p, m)) << str(from);
      // No earlier business day in p's month: it is the first.
      const year_month_day pd{p};
      for (sys_days d = sys_days{pd.year() / pd.month() / 1}; d < p; d += days(1)) {
        ASSERT_FALSE(business_day(d, m)) << str(from) << " " << str(d);
      }
      ASSERT_LE(static_cast<unsigned>(pd.day()), 5u) << "a month's first business day is within its first five days";
      // And no payout day was skipped: the month of `from` had its first business day before `from`.
      if (year_month_day{from}.month() != pd.month()) {
        ASSERT_LT(next_payout_day(Schedule::monthly, m, sys_days{year_month_day{from}.year() / year_month_day{from}.month() / 1}), from);
      }
    }
  }
}

TEST(PayoutCalendar, CutoffAndMinimums) {
  EXPECT_EQ(cutoff_ms(ymd(2026, 12, 7)), 1'796'601'600'000);
  Minimums m;
  EXPECT_FALSE(pays(Schedule::weekly, 19'999'999, m));
  EXPECT_TRUE(pays(Schedule::weekly, 20'000'000, m));
  EXPECT_TRUE(pays(Schedule::monthly, 1'000'000, m));
  EXPECT_FALSE(pays(Schedule::monthly, 999'999, m));
  EXPECT_FALSE(pays(Schedule::monthly, 0, Minimums{0, 0}));
  EXPECT_FALSE(parse_schedule("daily"));
  EXPECT_EQ(parse_schedule("daily").error().field, "schedule");
  EXPECT_EQ(*parse_method("sepa"), Method::sepa);
}

TEST(PayoutDestination, Base58RoundTripsAndKeepsLeadingZeros) {
  auto system = base58_decode("11111111111111111111111111111111");
  ASSERT_TRUE(system);
  EXPECT_EQ(*system, std::vector<std::uint8_t>(32, 0));
  for (const char* a : {"TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA", "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
                        "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL"}) {
    auto bytes = base58_decode(a);
    ASSERT_TRUE(bytes) << a;
    EXPECT_EQ(bytes->size(), 32u) << a;
    EXPECT_EQ(base58_encode(*bytes), a);
  }
  EXPECT_EQ(base58_encode({0, 0, 1}), "112");
  EXPECT_FALSE(base58_decode("0OIl"));
}

TEST(PayoutDestination, WalletsAreOnTheCurveAndTokenAccountsAreNot) {
  // The reference's vectors: each wallet and its associated token account (a program-derived address).
  const std::vector<std::pair<const char*, const char*>> vectors = {
      {"GJRs4FwHtemZ5ZE9x3FNvJ8TMwitKTh21yxdRPqn7npE", "DeqZejBFrRwWraY4g4besYmibTY1QcV1Fcg6VfoEvn4T"},
      {"9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM", "FGETo8T8wMcN2wCjav8VK6eh3dLk63evNDPxzLSJra8B"},
      {"8meoEbDNDAogUcAm88F5coEASwyLbqcAMr47WwhpukUx", "GLX7bTkwHg52vsqhZqg5h9C78Vg6G63tCqtD8JHCNmTo"}};
  for (const auto& [wallet, ata] : vectors) {
    EXPECT_TRUE(parse_solana_wallet(wallet)) << wallet;
    auto refused = parse_solana_wallet(ata);
    ASSERT_FALSE(refused) << ata;
    EXPECT_EQ(refused.error().detail_code, "off_curve_address");
    EXPECT_EQ(refused.error().field, "wallet_address");
  }
  auto short_one = parse_solana_wallet("9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYt");
  ASSERT_FALSE(short_one);
  EXPECT_NE(short_one.error().message.find("32 bytes"), std::string::npos) << short_one.error().message;
  // On the curve, yet nobody's wallet: programs and mints (USDC sent there is lost).
  for (const char* program : {"11111111111111111111111111111111", "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
                              "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"}) {
    auto refused = parse_solana_wallet(program);
    ASSERT_FALSE(refused) << program;
    EXPECT_EQ(refused.error().detail_code, "not_a_wallet") << program;
  }
  auto alphabet = parse_solana_wallet("0WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM", "destination");
  ASSERT_FALSE(alphabet);
  EXPECT_EQ(alphabet.error().field, "destination");
}

TEST(PayoutDestination, IbansPassMod97AndTheirCountrysLength) {
  EXPECT_TRUE(valid_iban("DE89370400440532013000"));
  EXPECT_TRUE(valid_iban("NL91ABNA0417164300"));
  EXPECT_TRUE(valid_iban(normalize_iban("de89 3704 0044 0532 0130 00")));
  EXPECT_FALSE(valid_iban("DE89370400440532013001")) << "one digit changed";
  EXPECT_FALSE(valid_iban("DE98370400440532013000")) << "check digits swapped";
  EXPECT_FALSE(valid_iban("DE8937040044053201300")) << "a digit short";
  EXPECT_FALSE(valid_iban("US89370400440532013000")) << "not a SEPA country";
  EXPECT_FALSE(valid_iban("NL91ABNA04171643O0")) << "a letter O among the digits";
  EXPECT_TRUE(sepa_country("FR"));
  EXPECT_FALSE(sepa_country("US"));
}

TEST(PayoutDestination, Bics) {
  for (const char* ok : {"DEUTDEFF", "DEUTDEFF500", "ABNANL2A", "BNPAFRPPXXX"}) EXPECT_TRUE(valid_bic(ok)) << ok;
  for (const char* bad : {"DEUTDEF", "DEUTDE1F", "DEUTDEFO", "deutdeff", "DEUTDEFF50", "DEU1DEFF"}) {
    EXPECT_FALSE(valid_bic(bad)) << bad;
  }
}

}  // namespace

// ---- the earnings tracker's groups (core/earnings) ----

namespace {

using gpunex::core::earnings::Earning;
using gpunex::core::earnings::GroupBy;

TEST(Earnings, EveryGroupingAddsUpAndGpusSplitARentalExactly) {
  const std::int64_t day1 = 1'796'342'400'000;  // 2026-12-04T00:00:00Z
  const std::vector<Earning> es = {
      {day1 + 1000, 1'000'001, true, "r1", "m1", "L40S", {"GPU-a", "GPU-b", "GPU-c"}},
      {day1 + 86'400'000, 500, true, "r2", "m2", "H100", {"GPU-z"}},
      {day1 + 90'000'000, 7, false, "r3", "m1", "L40S", {"GPU-a"}}};
  for (auto by : {GroupBy::day, GroupBy::gpu, GroupBy::model, GroupBy::machine}) {
    gpunex::core::MicroUsdc settled = 0, unsettled = 0;
    for (const auto& g : gpunex::core::earnings::group(es, by)) {
      settled += g.settled;
      unsettled += g.unsettled;
    }
    EXPECT_EQ(settled, 1'000'501);
    EXPECT_EQ(unsettled, 7);
  }
  const auto gpus = gpunex::core::earnings::group(es, GroupBy::gpu);
  ASSERT_EQ(gpus.size(), 4u);
  EXPECT_EQ(gpus[0].key, "GPU-a");
  EXPECT_EQ(gpus[0].settled, 333'335) << "the remainder of the split goes to the rental's first GPU";
  EXPECT_EQ(gpus[0].unsettled, 7);
  EXPECT_EQ(gpus[1].settled, 333'333);
  const auto days = gpunex::core::earnings::group(es, GroupBy::day);
  ASSERT_EQ(days.size(), 2u);
  EXPECT_EQ(days[0].key, "2026-12-04");
  EXPECT_EQ(days[1].key, "2026-12-05");
  EXPECT_EQ(days[1].total(), 507);
  EXPECT_EQ(gpunex::core::earnings::sum_since(es, day1 + 86'400'000), 507);
  EXPECT_EQ(gpunex::core::earnings::parse_group_by("week").error().field, "group_by");
}

// ---- the earnings tracker's CSV (server/billing/earnings) ----

TEST(EarningsCsv, OneRowPerGroupQuotedWhereASpreadsheetNeedsIt) {
  using gpunex::server::billing::EarningsReport;
  const auto ms = [](sys_days d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d.time_since_epoch()).count();
  };
  EarningsReport r;
  r.query.from_ms = ms(ymd(2026, 11, 4));
  r.query.to_ms = ms(ymd(2026, 12, 4));  // exclusive: the last day is the 3rd
  r.query.by = gpunex::core::earnings::GroupBy::model;
  r.groups = {{"L40S", 1'500'000, 250'000}, {"Odd, \"model\"", 1, 0}, {"=SUM(A1)", 0, 2}};
  EXPECT_EQ(gpunex::server::billing::to_csv(r),
            "model,settled_usdc,unsettled_usdc,total_usdc\r\n"
            "L40S,1.500000,0.250000,1.750000\r\n"
            "\"Odd, \"\"model\"\"\",0.000001,0.000000,0.000001\r\n"
            "'=SUM(A1),0.000000,0.000002,0.000002\r\n");
  EXPECT_EQ(gpunex::server::billing::csv_file_name(r), "gpunex-earnings-2026-11-04-2026-12-03-by-model.csv");
  r.groups.clear();
  EXPECT_EQ(gpunex::server::billing::to_csv(r), "model,settled_usdc,unsettled_usdc,total_usdc\r\n");
}

}  // namespace
