#include "core/marketplace.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_set>

#include "core/rfc3339.hpp"
#include "test_time.hpp"

using namespace gpunex::core;  // NOLINT: test file
using gpunex::test_support::utc;

namespace {

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
  m.models = std::vector<std::string>{"L4"};
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

namespace {

std::shared_ptr<const Schedule> schedule(const char* json) {
  auto s = parse_schedule(nlohmann::json::parse(json));
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
  return std::make_shared<const Schedule>(s.ok() ? std::move(s).value() : always_available());
}

// Schedules with every kind of change: windows over a daylight-saving switch (Berlin, 29 March
// 2026), weekly and monthly maintenance, a one-off maintenance window.
std::vector<std::shared_ptr<const Schedule>> varied_schedules() {
  return {schedule(R"({"timezone": "Europe/Berlin", "always": false, "windows": [
                       {"days": ["mon", "tue", "wed", "thu", "fri"], "start": "19:00", "end": "08:00"},
                       {"days": ["sat", "sun"], "start": "02:30", "end": "24:00"}]})"),
          schedule(R"({"timezone": "America/New_York", "always": false,
                       "windows": [{"days": ["sun", "mon", "tue", "wed", "thu", "fri", "sat"], "start": "21:00", "end": "07:00"}],
                       "maintenance": [{"category": "software", "recurrence": {"days": ["wed"]}, "start": "22:00", "end": "23:00"}]})"),
          schedule(R"({"timezone": "UTC", "always": true, "maintenance": [
                       {"category": "power", "recurrence": {"nth": 1, "weekday": "sun"}, "start": "02:00", "end": "04:00"},
                       {"category": "gpu", "start": "2026-03-30T10:00:00Z", "end": "2026-03-30T13:30:00Z"}]})"),
          schedule(R"({"timezone": "UTC", "always": true})")};
}

}  // namespace

TEST(Marketplace, NextChangeBoundsTheStretchOfEqualAvailability) {
  for (const auto& s : varied_schedules()) {
    for (UtcTime t = utc("2026-03-27T00:00:00Z"); t < utc("2026-04-07T00:00:00Z"); t += std::chrono::minutes{7}) {
      const bool now = is_available(*s, t);
      const auto change = next_change(*s, t, std::chrono::hours{24});
      const UtcTime end = change.value_or(t + std::chrono::hours{24});
      ASSERT_GT(end, t);
      // Same availability up to the change (checked a second before it and halfway).
      EXPECT_EQ(is_available(*s, end - std::chrono::seconds{1}), now) << date::format("%FT%TZ", t);
      EXPECT_EQ(is_available(*s, t + (end - t) / 2), now) << date::format("%FT%TZ", t);
    }
  }
}

TEST(Marketplace, AvailabilityMemoAnswersAsIsAvailable) {
  AvailabilityMemo memo;
  const auto schedules = varied_schedules();
  for (UtcTime t = utc("2026-03-27T00:00:00Z"); t < utc("2026-04-07T00:00:00Z"); t += std::chrono::seconds{547}) {
    for (const auto& s : schedules) {
      const auto a = memo.at(s, t);
      ASSERT_EQ(a.available, is_available(*s, t)) << date::format("%FT%TZ", t);
      EXPECT_GT(a.until, t);
    }
  }
  // Asked about an earlier instant (a clock set back), it works it out again.
  for (const auto& s : schedules)
    EXPECT_EQ(memo.at(s, utc("2026-03-29T01:30:00Z")).available, is_available(*s, utc("2026-03-29T01:30:00Z")));
}

TEST(Marketplace, ABookServesSearchesAsAssembleOffersDoes) {
  // 300 candidates over three models, some with schedules, some unpriced: every search of the
  // book, at every instant of its life, equals a fresh assemble_offers at that instant.
  const auto schedules = varied_schedules();
  std::vector<OfferCandidate> all;
  const char* models[] = {"L4", "L40S", "H100-SXM"};
  const char* regions[] = {"eu-central", "us-east"};
  for (int i = 0; i < 300; ++i) {
    auto c = candidate("m-" + std::to_string(1000 + (i * 37) % 300), models[i % 3], 400'000 + (i * 7919) % 20 * 50'000,
                       10 + (i * 13) % 40);
    c.region = regions[i % 2];
    c.tier = i % 5 == 0 ? Tier::enterprise : Tier::community;
    c.commitment_months = (i % 4) * 4;
    c.vram_gib = i % 3 == 2 ? 80 : 48;
    if (i % 7 == 0) c.reliability = 60 + i % 40;
    if (i % 3 != 0) c.schedule = schedules[i % schedules.size()];
    if (i % 31 == 0) c.price = 0;
    all.push_back(std::move(c));
  }
  std::vector<OfferFilter> filters(5);
  filters[1].models = std::vector<std::string>{"L40S"};
  filters[1].sort = OfferSort::price;
  filters[2].region = "us-east";
  filters[2].sort = OfferSort::perf;
  filters[2].min_vram_gb = 60;
  filters[3].tier = Tier::enterprise;
  filters[3].min_reliability = 80;
  filters[4].max_price = 900'000;
  filters[4].sort = OfferSort::price;
  const auto key = [](const std::vector<Offer>& offers) {
    std::vector<std::tuple<std::string, std::string, double>> out;
    for (const auto& o : offers) out.emplace_back(o.candidate.machine_id, o.candidate.model, o.rank.rank);
    return out;
  };

  AvailabilityMemo memo;
  const auto shared = std::make_shared<const std::vector<OfferCandidate>>(all);
  std::shared_ptr<const OfferBook> book;
  int rebuilt = 0;
  for (UtcTime t = utc("2026-03-27T00:00:00Z"); t < utc("2026-04-03T00:00:00Z"); t += std::chrono::minutes{53}) {
    if (!book || t >= book->valid_until()) {
      book = std::make_shared<const OfferBook>(shared, t, memo);
      ++rebuilt;
    }
    for (const auto& f : filters) {
      const auto want = assemble_offers(all, t, f);
      const auto got = book->search(f);
      ASSERT_EQ(got.total, want.size()) << date::format("%FT%TZ", t);
      ASSERT_EQ(key(got.items), key(want)) << date::format("%FT%TZ", t);
      // A page is that slice of the whole.
      const auto page = book->search(f, 5, 7);
      EXPECT_EQ(page.total, want.size());
      const std::vector<Offer> slice(want.begin() + std::min<std::size_t>(5, want.size()),
                                     want.begin() + std::min<std::size_t>(12, want.size()));
      EXPECT_EQ(key(page.items), key(slice));
    }
  }
  EXPECT_LT(rebuilt, 7 * 24 * 60 / 53);  // not rebuilt for every search
  EXPECT_GT(rebuilt, 7);                 // but at each window's change
}

// Issue 14 item 17: a model filter resolves to catalog ids (core::model_filter_matches); the book
// keeps the offers of any of them, and a filter that named no model keeps none.
TEST(Marketplace, ModelFilterKeepsTheModelsItNamed) {
  std::vector<OfferCandidate> c = {candidate("m-1", "A100-SXM-80GB", 1'500'000, 30),
                                   candidate("m-2", "A100-PCIE-80GB", 1'400'000, 28),
                                   candidate("m-3", "L40S", 900'000, 25)};
  OfferFilter f;
  f.models = std::vector<std::string>{"A100-SXM-80GB", "A100-PCIE-80GB"};
  f.sort = OfferSort::price;
  EXPECT_EQ(ids(assemble_offers(c, utc("2026-01-05T12:00:00Z"), f)), (std::vector<std::string>{"m-2", "m-1"}));
  f.models = std::vector<std::string>{};
  EXPECT_TRUE(assemble_offers(c, utc("2026-01-05T12:00:00Z"), f).empty());
  f.models.reset();
  EXPECT_EQ(assemble_offers(c, utc("2026-01-05T12:00:00Z"), f).size(), 3u);
}

// Issue 20: a book patched after each of many random market changes (prices, GPU counts, perf,
// schedules, reliability, machines leaving and arriving, a provider's machines all at once) serves
// every search, in every order and page, exactly as a book built from scratch at that instant.
TEST(Marketplace, APatchedBookSearchesAsABookBuiltAnew) {
  const auto schedules = varied_schedules();
  const char* models[] = {"L4", "L40S", "H100-SXM", "A100"};
  const char* regions[] = {"eu-central", "us-east"};
  std::mt19937 rng(20);
  const auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  // Machine n's candidates now: none, or one to three models. Prices, perf scores and reliabilities
  // come from small sets, so ties (broken by machine id, then model) are common.
  const auto machine = [&](int n) {
    std::vector<OfferCandidate> out;
    const int k = pick(4);
    for (int j = 0; j < k; ++j) {
      auto c = candidate("m-" + std::to_string(n), models[(n + j) % 4], 300'000 + pick(6) * 100'000, 10 + pick(5) * 5);
      c.gpu_count_available = pick(8) == 0 ? 0 : 1 + pick(4);
      if (pick(9) == 0) c.price = 0;
      c.region = regions[pick(2)];
      c.tier = pick(4) == 0 ? Tier::enterprise : Tier::community;
      c.commitment_months = pick(3) * 6;
      c.vram_gib = j == 2 ? 80 : 48;
      if (pick(3) != 0) c.reliability = 50 + pick(6) * 10;
      if (pick(2) == 0) c.schedule = schedules[static_cast<std::size_t>(pick(static_cast<int>(schedules.size())))];
      out.push_back(std::move(c));
    }
    return out;
  };
  constexpr int kMachines = 150;
  std::vector<std::shared_ptr<const OfferCandidate>> start;
  for (int n = 0; n < kMachines; ++n) {
    for (auto& c : machine(n)) start.push_back(std::make_shared<const OfferCandidate>(std::move(c)));
  }
  std::vector<OfferFilter> filters(6);
  filters[1].models = std::vector<std::string>{"L40S", "A100"};
  filters[1].sort = OfferSort::price;
  filters[2].region = "us-east";
  filters[2].sort = OfferSort::perf;
  filters[3].tier = Tier::enterprise;
  filters[3].min_reliability = 70;
  filters[4].max_price = 600'000;
  filters[4].min_vram_gb = 60;
  filters[5].sort = OfferSort::perf;
  const auto key = [](const std::vector<Offer>& offers) {
    std::vector<std::tuple<std::string, std::string, double, MicroUsdc, std::int64_t, double>> out;
    for (const auto& o : offers) {
      out.emplace_back(o.candidate.machine_id, o.candidate.model, o.rank.rank, o.candidate.price,
                       o.candidate.gpu_count_available, o.rank.model_median_perf_per_usdc);
    }
    return out;
  };

  AvailabilityMemo memo;
  UtcTime t = utc("2026-03-27T00:00:00Z");
  auto book = std::make_shared<const OfferBook>(std::make_shared<const CandidateSet>(start), t, memo);
  int patched = 0;
  for (int step = 0; step < 400; ++step) {
    t += std::chrono::minutes{pick(90)};
    // One to five machines change; now and then a "provider's" ten machines at once.
    std::set<int> changed;
    const int n = pick(10) == 0 ? 10 : 1 + pick(5);
    const int first = pick(kMachines + 20);  // past kMachines: a new machine
    for (int i = 0; i < n; ++i) changed.insert(n == 10 ? (first + i) % (kMachines + 20) : pick(kMachines + 20));
    std::unordered_set<std::string> ids;
    for (const int m : changed) ids.insert("m-" + std::to_string(m));
    const std::unordered_set<std::string_view> views(ids.begin(), ids.end());
    auto next = std::make_shared<CandidateSet>();
    for (const auto& c : *book->candidates()) {
      if (!views.contains(c->machine_id)) next->push_back(c);
    }
    const std::size_t added_from = next->size();
    for (const int m : changed) {
      for (auto& c : machine(m)) next->push_back(std::make_shared<const OfferCandidate>(std::move(c)));
    }
    if (t < book->valid_until()) {
      book = std::make_shared<const OfferBook>(*book, next, views, added_from, t, memo);
      ++patched;
    } else {
      book = std::make_shared<const OfferBook>(next, t, memo);
    }
    AvailabilityMemo fresh_memo;  // answers from t on: valid_until is then the next real change (or a day)
    const OfferBook fresh(next, t, fresh_memo);
    for (const auto& f : filters) {
      const auto want = fresh.search(f);
      const auto got = book->search(f);
      ASSERT_EQ(got.total, want.total) << "step " << step;
      ASSERT_EQ(key(got.items), key(want.items)) << "step " << step;
      EXPECT_EQ(key(book->search(f, 7, 9).items), key(fresh.search(f, 7, 9).items)) << "step " << step;
    }
    EXPECT_LE(book->valid_until(), fresh.valid_until());  // never served past a change of availability
  }
  EXPECT_GT(patched, 200);  // mostly patched, not rebuilt
}

// Paging by cursor: walking a search page by page gives the whole in order, in each sort; an offer
// taken (rented out, delisted) between two pages makes the next page skip nothing, as an offset did.
TEST(Marketplace, ACursorPageStartsAfterTheLastOfferSeen) {
  std::vector<OfferCandidate> all;
  for (int i = 0; i < 40; ++i) {
    // Prices and perf scores repeat, so that ties are ordered by machine and model.
    all.push_back(
        candidate("m-" + std::to_string(100 + i), i % 2 ? "L4" : "L40S", 400'000 + (i % 5) * 100'000, 10 + i % 4));
  }
  const auto now = utc("2026-03-27T12:00:00Z");
  for (const auto sort : {OfferSort::rank, OfferSort::price, OfferSort::perf}) {
    OfferFilter f;
    f.sort = sort;
    AvailabilityMemo memo;
    const OfferBook book(std::make_shared<const std::vector<OfferCandidate>>(all), now, memo);
    const auto whole = ids(book.search(f).items);
    std::vector<std::string> walked;
    auto page = book.search(f, 0, 7);
    for (int n = 0; n < 10; ++n) {
      for (const auto& o : page.items) walked.push_back(o.candidate.machine_id);
      if (!page.next) break;
      const auto cursor = parse_offer_cursor(format_offer_cursor(*page.next));
      ASSERT_TRUE(cursor);
      EXPECT_EQ(cursor->value, page.next->value);  // exactly: the 64 bits travel
      EXPECT_EQ(page.total, all.size());
      page = book.search(f, *cursor, 7);
    }
    EXPECT_EQ(walked, whole);

    // The first page's offers are taken before the second page is asked for (the book is built anew
    // without them, their ranks among the rest changed): the second page starts where the first ended.
    const auto first = book.search(f, 0, 7);
    std::vector<OfferCandidate> rest;
    for (const auto& c : all) {
      if (std::none_of(first.items.begin(), first.items.end(),
                       [&](const Offer& o) { return o.candidate.machine_id == c.machine_id; }))
        rest.push_back(c);
    }
    AvailabilityMemo memo2;
    const OfferBook after(std::make_shared<const std::vector<OfferCandidate>>(rest), now, memo2);
    const auto second = after.search(f, *first.next, 7);
    if (sort != OfferSort::rank) {  // a rank is against the model's median: it moves when offers go
      EXPECT_EQ(ids(second.items), std::vector<std::string>(whole.begin() + 7, whole.begin() + 14));
      EXPECT_EQ(ids(after.search(f, 7, 7).items).front(), whole[14]) << "an offset skips seven";
    }
  }

  // By rank: an offer taken moves its model's median, so every rank of the model moves; the next page
  // starts after the last offer seen where it stands now, skipping none and showing none twice.
  OfferFilter f;
  AvailabilityMemo memo;
  const OfferBook book(std::make_shared<const std::vector<OfferCandidate>>(all), now, memo);
  const auto first = book.search(f, 0, 7);
  ASSERT_TRUE(first.next);
  // The worst offer of the model of the page's last: far from the page, and its model's median moves.
  std::string taken;
  for (const auto& o : book.search(f).items) {
    if (o.candidate.model == first.items.back().candidate.model) taken = o.candidate.machine_id;
  }
  std::vector<OfferCandidate> rest;
  for (const auto& c : all) {
    if (c.machine_id != taken) rest.push_back(c);
  }
  AvailabilityMemo memo2;
  const OfferBook after(std::make_shared<const std::vector<OfferCandidate>>(rest), now, memo2);
  const auto now_all = after.search(f).items;
  const auto now_order = ids(now_all);
  const auto last_seen = std::find(now_order.begin(), now_order.end(), first.items.back().candidate.machine_id);
  ASSERT_NE(last_seen, now_order.end());
  EXPECT_NE(now_all[last_seen - now_order.begin()].rank.rank, first.next->value) << "its rank moved";
  const auto second = ids(after.search(f, *first.next, 7).items);
  EXPECT_EQ(second, std::vector<std::string>(last_seen + 1, std::min(last_seen + 8, now_order.end())));
  for (const auto& o : first.items) {
    EXPECT_EQ(std::count(second.begin(), second.end(), o.candidate.machine_id), 0) << "shown twice";
  }
  // The offer the cursor names is gone itself: the page starts after its rank.
  std::vector<OfferCandidate> without_it;
  for (const auto& c : all) {
    if (c.machine_id != first.items.back().candidate.machine_id) without_it.push_back(c);
  }
  AvailabilityMemo memo3;
  const OfferBook gone(std::make_shared<const std::vector<OfferCandidate>>(without_it), now, memo3);
  const auto page = gone.search(f, *first.next, 7);
  ASSERT_FALSE(page.items.empty());
  for (const auto& o : page.items) EXPECT_LE(o.rank.rank, first.next->value);
  for (const auto* bad : {"", "rank", "rank~00~m-1~L4", "best~3ff0000000000000~m-1~L4", "rank~3ff0000000000000~~L4",
                          "rank~3ff0000000000000~m-1~", "rank~7ff0000000000000~m-1~L4", "rank~3ff000000000000g~m-1~L4",
                          "rank~3ff0000000000000~m-1~L4~x"}) {
    EXPECT_FALSE(parse_offer_cursor(bad)) << bad;
  }
}

// Why a machine is not offered: the first cause in the order a provider fixes them.
TEST(Marketplace, NotOfferedSaysTheFirstCause) {
  MachineOfferFacts f;
  EXPECT_EQ(not_offered_reason(f), "offline: its agent is not heard from");
  f.online = true;
  f.rentals_blocked = "no container engine answers";
  EXPECT_EQ(not_offered_reason(f), "its agent cannot run rentals: no container engine answers");
  f.rentals_blocked.reset();
  f.simulated_hidden = true;
  EXPECT_EQ(not_offered_reason(f), "simulated GPUs are offered only in the operator's demo mode");
  f.simulated_hidden = false;
  EXPECT_EQ(not_offered_reason(f), "no GPU is listed: see its benchmarks");
  f.listed_models = {"L40S", "L40S", "L4"};
  f.available_now = false;
  EXPECT_EQ(not_offered_reason(f), "outside its availability schedule, or in maintenance");
  f.available_now = true;
  f.unpriced_models = {"L4", "L40S"};
  EXPECT_EQ(not_offered_reason(f), "no rate set for L4, L40S");
  f.unpriced_models = {"L4"};  // the L40S have a rate: rented
  EXPECT_EQ(not_offered_reason(f), "every listed GPU is rented");
  f.listed_free = 1;
  EXPECT_EQ(not_offered_reason(f), "not in the marketplace now (it catches up within seconds of a change)");
}
