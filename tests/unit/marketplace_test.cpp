#include "core/marketplace.hpp"

#include <gtest/gtest.h>

#include "core/rfc3339.hpp"

using namespace gpunex::core;  // NOLINT: test file

namespace {

UtcTime utc(const std::string& s) {
  const auto ms = parse_rfc3339_ms(s);
  EXPECT_TRUE(ms.has_value()) << s;
  return UtcTime{std::chrono::seconds{ms.value_or(0) / 1000}};
}

OfferCandidate candidate(std::string id, std::string model, MicroUsdc price, double perf) {
  OfferCandidate c;
  c.machine_id = std::move(id);
  c.model = std::move(model);
  c.gpu_count_available = 2;
  c.price = price;
  c.perf_score = perf;
  c.region = "eu-central";
  c.vram_gib = 48;
  return c;
}

std::vector<std::string> ids(const std::vector<Offer>& offers) {
  std::vector<std::string> out;
  for (const auto& o : offers) out.push_back(o.candidate.machine_id);
  return out;
}

}  // namespace

TEST(Marketplace, RanksByValueWithinTheModel) {
  std::vector<OfferCandidate> c = {candidate("m-dear", "L40S", 2'000'000, 50), candidate("m-mid", "L40S", 1'000'000, 50),
                                   candidate("m-cheap", "L40S", 500'000, 50)};
  auto offers = assemble_offers(c, utc("2026-01-05T12:00:00Z"), {});
  EXPECT_EQ(ids(offers), (std::vector<std::string>{"m-cheap", "m-mid", "m-dear"}));
  EXPECT_DOUBLE_EQ(offers[1].rank.value_factor, 1.0);  // the median offer
  EXPECT_DOUBLE_EQ(offers[1].rank.rank, 0.9);          // prior reliability 90
  EXPECT_TRUE(offers[1].rank.reliability_is_prior);
  auto j = to_json(offers[0]);
  EXPECT_EQ(j["usdc_per_gpu_hour"], "0.500000");
  EXPECT_EQ(j["reliability_is_prior"], true);
  EXPECT_EQ(j["rank_explanation"]["reliability"]["source"], "prior");
  EXPECT_EQ(j["location"]["region"], "eu-central");
  EXPECT_TRUE(j["available_until"].is_null());
}

TEST(Marketplace, EnterpriseAndCommitmentBoost) {
  auto a = candidate("m-a", "L4", 1'000'000, 20);
  auto b = candidate("m-b", "L4", 1'000'000, 20);
  b.tier = Tier::enterprise;
  b.commitment_months = 12;
  auto offers = assemble_offers({a, b}, utc("2026-01-05T12:00:00Z"), {});
  ASSERT_EQ(ids(offers), (std::vector<std::string>{"m-b", "m-a"}));
  EXPECT_NEAR(offers[0].rank.rank, 0.9 * 1.15 * 1.10, 1e-12);
}

TEST(Marketplace, OutsideItsWindowAMachineIsHidden) {
  auto in = candidate("m-in", "L4", 1'000'000, 20);
  auto out = candidate("m-out", "L4", 1'000'000, 20);
  auto s = parse_schedule(nlohmann::json::parse(
      R"({"timezone": "UTC", "always": false, "windows": [{"days": ["mon"], "start": "08:00", "end": "18:00"}]})"));
  ASSERT_TRUE(s.ok());
  in.schedule = std::make_shared<const Schedule>(*s);
  auto later = *s;
  later.windows[0].start_min = 13 * 60;  // opens 13:00
  out.schedule = std::make_shared<const Schedule>(later);
  auto offers = assemble_offers({in, out}, utc("2026-01-05T12:00:00Z"), {});  // a Monday
  ASSERT_EQ(ids(offers), std::vector<std::string>{"m-in"});
  EXPECT_TRUE(to_json(offers[0])["available_until"].is_null());  // filled only for the page shown
  fill_available_until(offers[0], utc("2026-01-05T12:00:00Z"));
  EXPECT_EQ(to_json(offers[0])["available_until"], "2026-01-05T18:00:00Z");
}

TEST(Marketplace, FiltersDoNotChangeTheRank) {
  std::vector<OfferCandidate> c = {candidate("m-1", "L40S", 2'000'000, 50), candidate("m-2", "L40S", 1'000'000, 50),
                                   candidate("m-3", "L40S", 500'000, 50)};
  c[0].region = "us-east";
  OfferFilter f;
  f.region = "us-east";
  auto offers = assemble_offers(c, utc("2026-01-05T12:00:00Z"), f);
  ASSERT_EQ(offers.size(), 1u);
  EXPECT_DOUBLE_EQ(offers[0].rank.value_factor, 0.5);  // against the median of all three
}

TEST(Marketplace, FiltersAndSorts) {
  auto h100 = candidate("m-h100", "H100-SXM", 2'500'000, 100);
  h100.vram_gib = 80;
  h100.tier = Tier::enterprise;
  h100.reliability = 99;
  auto l4 = candidate("m-l4", "L4", 400'000, 15);
  l4.vram_gib = 24;
  l4.reliability = 70;
  auto l40s = candidate("m-l40s", "L40S", 900'000, 45);
  const std::vector<OfferCandidate> all = {h100, l4, l40s};
  const auto now = utc("2026-01-05T12:00:00Z");
  OfferFilter f;
  f.sort = OfferSort::price;
  EXPECT_EQ(ids(assemble_offers(all, now, f)), (std::vector<std::string>{"m-l4", "m-l40s", "m-h100"}));
  f.sort = OfferSort::perf;
  EXPECT_EQ(ids(assemble_offers(all, now, f)), (std::vector<std::string>{"m-h100", "m-l40s", "m-l4"}));
  f.min_vram_gb = 48;
  EXPECT_EQ(ids(assemble_offers(all, now, f)), (std::vector<std::string>{"m-h100", "m-l40s"}));
  f.max_price = 1'000'000;
  EXPECT_EQ(ids(assemble_offers(all, now, f)), (std::vector<std::string>{"m-l40s"}));
  OfferFilter g;
  g.min_reliability = 80;  // l40s carries the prior 90, l4 scores 70
  EXPECT_EQ(ids(assemble_offers(all, now, g)), (std::vector<std::string>{"m-h100", "m-l40s"}));
  g.tier = Tier::enterprise;
  EXPECT_EQ(ids(assemble_offers(all, now, g)), (std::vector<std::string>{"m-h100"}));
  OfferFilter m;
  m.model = "L4";
  EXPECT_EQ(ids(assemble_offers(all, now, m)), (std::vector<std::string>{"m-l4"}));
  EXPECT_EQ(parse_offer_sort("perf"), OfferSort::perf);
  EXPECT_EQ(parse_offer_sort("cheapest"), std::nullopt);
}

TEST(Marketplace, UnpricedOrEmptyIsNotAnOffer) {
  auto a = candidate("m-a", "L4", 0, 20);
  auto b = candidate("m-b", "L4", 1'000'000, 20);
  b.gpu_count_available = 0;
  EXPECT_TRUE(assemble_offers({a, b}, utc("2026-01-05T12:00:00Z"), {}).empty());
}
