// The application form, state machine, tier rules and business days (core/application.hpp).
#include "core/application.hpp"
#include "core/gpu_catalog.hpp"
#include "core/json_reader.hpp"
#include "test_time.hpp"

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace core = gpunex::core;
using core::ApplicationAction;
using core::ApplicationStatus;
using core::ErrorCode;
using core::Tier;
using nlohmann::json;

namespace {

core::FormCheckers checkers() {
  return {[](std::string_view tz) { return tz == "Europe/Berlin" || tz == "UTC"; },
          [](std::string_view m) { return m == "L40S" || m == "RTX-4090"; },
          [](std::string_view m) { return core::model_hint(m, core::builtin_catalog()); }};
}

json gpu() {
  return {{"model", "L40S"},        {"count", 2},
          {"system_ram_gb", 256},   {"download_gbps", 10},
          {"upload_gbps", 5},       {"availability", "24/7"},
          {"location", {{"city", "Berlin"}, {"country", "DE"}, {"region", "eu-central"}}}};
}

json enterprise_app() {
  return {{"full_name", "Ada Lovelace"}, {"email", "Ada@Example.com"}, {"company", "Analytical Engines GmbH"},
          {"gpus", {gpu(), gpu()}},       {"ups", true},                {"commitment_months", 12},
          {"maintenance_notes", "Sundays 02:00-04:00"}};
}

//! Parses `body` and expects an error naming `field`.
void expect_field_error(const json& body, const std::string& field) {
  auto r = core::parse_application_form(body, checkers());
  ASSERT_FALSE(r.ok()) << "accepted: " << body.dump();
  ASSERT_TRUE(r.error().field.has_value()) << r.error().message;
  EXPECT_EQ(*r.error().field, field) << r.error().message;
}

using gpunex::test_support::kDay;
// 2024-01-01 00:00 UTC was a Monday.
constexpr std::int64_t kMonday = 1'704'067'200'000;

}  // namespace

TEST(ApplicationForm, AcceptsAFullApplication) {
  auto r = core::parse_application_form(enterprise_app(), checkers());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->email, "ada@example.com");
  EXPECT_EQ(r->gpus.size(), 2u);
  EXPECT_TRUE(r->gpus[0].availability.always);
  // to_json round-trips.
  auto again = core::parse_application_form(core::to_json(*r), checkers());
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(core::to_json(*again), core::to_json(*r));
}

TEST(ApplicationForm, AcceptsAWeeklySchedule) {
  auto body = enterprise_app();
  body["gpus"][1]["availability"] = {
      {"timezone", "Europe/Berlin"},
      {"windows", {{{"days", {"mon", "tue"}}, {"start", "18:00"}, {"end", "08:00"}}}}};
  auto r = core::parse_application_form(body, checkers());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->gpus[1].availability.always);
  EXPECT_EQ(r->gpus[1].availability.windows[0].start_min, 18 * 60);
  EXPECT_EQ(core::to_json(*r)["gpus"][1]["availability"]["windows"][0]["end"], "08:00");
}

TEST(ApplicationForm, CountBounds) {
  for (int bad : {0, 1025, -1}) {
    auto b = enterprise_app();
    b["gpus"][1]["count"] = bad;
    expect_field_error(b, "gpus[1].count");
  }
  auto b = enterprise_app();
  b["gpus"][0]["count"] = 1024;
  EXPECT_TRUE(core::parse_application_form(b, checkers()).ok());
  b["gpus"][0]["count"] = 1.5;
  expect_field_error(b, "gpus[0].count");
}

TEST(ApplicationForm, RamBounds) {
  for (int bad : {0, 16385}) {
    auto b = enterprise_app();
    b["gpus"][0]["system_ram_gb"] = bad;
    expect_field_error(b, "gpus[0].system_ram_gb");
  }
}

TEST(ApplicationForm, SpeedBounds) {
  for (double bad : {0.0, 0.009, 400.5}) {
    auto b = enterprise_app();
    b["gpus"][0]["download_gbps"] = bad;
    expect_field_error(b, "gpus[0].download_gbps");
    b = enterprise_app();
    b["gpus"][1]["upload_gbps"] = bad;
    expect_field_error(b, "gpus[1].upload_gbps");
  }
  auto b = enterprise_app();
  b["gpus"][0]["download_gbps"] = 0.01;
  b["gpus"][0]["upload_gbps"] = 400;
  EXPECT_TRUE(core::parse_application_form(b, checkers()).ok());
}

TEST(ApplicationForm, CommitmentFromTheAllowedSet) {
  for (int ok : {3, 6, 12, 24}) {
    auto b = enterprise_app();
    b["commitment_months"] = ok;
    EXPECT_TRUE(core::parse_application_form(b, checkers()).ok()) << ok;
  }
  for (int bad : {0, 1, 5, 18, 36}) {
    auto b = enterprise_app();
    b["commitment_months"] = bad;
    expect_field_error(b, "commitment_months");
  }
}

TEST(ApplicationForm, Email) {
  auto b = enterprise_app();
  b["email"] = "not-an-address";
  expect_field_error(b, "email");
}

TEST(ApplicationForm, RequiredFields) {
  for (const char* key : {"full_name", "email", "gpus", "ups", "commitment_months"}) {
    auto b = enterprise_app();
    b.erase(key);
    expect_field_error(b, key);
  }
  for (const char* key : {"model", "count", "system_ram_gb", "download_gbps", "upload_gbps", "availability", "location"}) {
    auto b = enterprise_app();
    b["gpus"][1].erase(key);
    expect_field_error(b, std::string("gpus[1].") + key);
  }
  for (const char* key : {"city", "country", "region"}) {
    auto b = enterprise_app();
    b["gpus"][1]["location"].erase(key);
    expect_field_error(b, std::string("gpus[1].location.") + key);
    b = enterprise_app();
    b["gpus"][1]["location"][key] = "   ";
    expect_field_error(b, std::string("gpus[1].location.") + key);
  }
  auto b = enterprise_app();
  b["gpus"] = json::array();
  expect_field_error(b, "gpus");
  b = enterprise_app();
  b.erase("company");
  b.erase("maintenance_notes");
  EXPECT_TRUE(core::parse_application_form(b, checkers()).ok());
}

// Issue #14: a body with several bad fields answers every one of them, in words a person understands.
TEST(ApplicationForm, ListsEveryInvalidFieldForAPerson) {
  auto b = enterprise_app();
  b["full_name"] = "  ";
  b["commitment_months"] = 9;
  b["gpus"][1]["system_ram_gb"] = 20000;
  b["gpus"][1]["location"].erase("country");
  b["gpus"][1]["availability"] = {{"timezone", "Europe/Atlantis"},
                                  {"windows", {{{"days", {"mon", "caturday"}}, {"start", "7:00"}, {"end", "08:00"}}}}};
  auto r = core::parse_application_form(b, checkers());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().field, "full_name");
  EXPECT_EQ(r.error().message, "Full name is required");
  std::vector<std::pair<std::string, std::string>> got;
  for (const auto& f : r.error().fields) got.emplace_back(f.field, f.message);
  const std::vector<std::pair<std::string, std::string>> want = {
      {"full_name", "Full name is required"},
      {"commitment_months", "Commitment period must be 3, 6, 12 or 24 months"},
      {"gpus[1].system_ram_gb", "GPU 2: host system RAM must be between 1 and 16,384 GB"},
      {"gpus[1].availability.timezone",
       "GPU 2 schedule: time zone \"Europe/Atlantis\" is not known; use a name such as Europe/Berlin"},
      {"gpus[1].availability.windows[0].days[1]",
       "GPU 2 schedule, window 1: day 2 must be one of mon, tue, wed, thu, fri, sat, sun"},
      {"gpus[1].availability.windows[0].start",
       "GPU 2 schedule, window 1: start time must be a time HH:MM between 00:00 and 23:59"},
      {"gpus[1].location.country", "GPU 2: country is required"},
  };
  EXPECT_EQ(got, want);
  EXPECT_EQ(r.error().fields.back().code, "missing_field");
}

TEST(ApplicationForm, UnknownFieldsAreRefused) {
  auto b = enterprise_app();
  b["gpus"][0]["location"]["planet"] = "Earth";
  expect_field_error(b, "gpus[0].location.planet");
  b = enterprise_app();
  b["status"] = "approved";
  expect_field_error(b, "status");
}

TEST(ApplicationForm, Models) {
  auto b = enterprise_app();
  b["gpus"][1]["model"] = "GTX-480";
  expect_field_error(b, "gpus[1].model");
  // A model written as its name, not its id: the error says which id was meant.
  b["gpus"][1]["model"] = "RTX4090";
  auto meant = core::parse_application_form(b, checkers());
  ASSERT_FALSE(meant.ok());
  EXPECT_NE(meant.error().message.find("\"RTX4090\" is not in the GPU catalog; did you mean RTX-4090?"),
            std::string::npos)
      << meant.error().message;
  b["gpus"][1]["model"] = "GTX-480";
  b["gpus"][1]["model"] = "other";
  expect_field_error(b, "gpus[1].model_other");
  b["gpus"][1]["model_other"] = "NVIDIA RTX 5090";
  EXPECT_TRUE(core::parse_application_form(b, checkers()).ok());
  b["gpus"][1]["model"] = "L40S";
  expect_field_error(b, "gpus[1].model_other");
}

TEST(ApplicationForm, AddedModelReplacesOnlyTheOtherEntriesItIsFor) {
  auto b = enterprise_app();
  b["gpus"] = {gpu(), gpu(), gpu(), gpu()};
  for (auto [i, name] : {std::pair{0, "RTX 5090"}, std::pair{2, "RTX 5080"}, std::pair{3, "RTX 5090"}}) {
    b["gpus"][i]["model"] = "other";
    b["gpus"][i]["model_other"] = name;
  }
  const auto form = core::parse_application_form(b, checkers()).value();

  auto f = form;
  auto several = core::assign_other_model(f, "", "RTX-5090", "add_model");
  ASSERT_FALSE(several.ok());
  EXPECT_EQ(several.error().field, "add_model.model_other");
  EXPECT_EQ(several.error().code, ErrorCode::missing_field);
  auto none = core::assign_other_model(f, "RTX 5070", "RTX-5070", "add_model");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().field, "add_model.model_other");
  EXPECT_EQ(none.error().message,
            "add_model.model_other \"RTX 5070\" matches no \"other\" GPU of the application; it lists \"RTX 5090\", "
            "\"RTX 5080\"");

  auto n = core::assign_other_model(f, " RTX 5090 ", "RTX-5090", "add_model");
  ASSERT_TRUE(n.ok()) << n.error().message;
  EXPECT_EQ(*n, 2);
  EXPECT_EQ(f.gpus[0].model, "RTX-5090");
  EXPECT_EQ(f.gpus[0].model_other, "");
  EXPECT_EQ(f.gpus[1].model, "L40S");
  EXPECT_EQ(f.gpus[2].model, "other");
  EXPECT_EQ(f.gpus[2].model_other, "RTX 5080");
  EXPECT_EQ(f.gpus[3].model, "RTX-5090");

  // One kind of unlisted GPU left: it needs no name.
  EXPECT_EQ(core::assign_other_model(f, "", "RTX-5080", "add_model").value(), 1);
  EXPECT_EQ(f.gpus[2].model, "RTX-5080");
  auto listed = core::assign_other_model(f, "", "RTX-5060", "add_model");
  ASSERT_FALSE(listed.ok());
  EXPECT_EQ(listed.error().field, "add_model");
}

TEST(ApplicationForm, Availability) {
  auto sched = [](json windows, std::string tz = "Europe/Berlin") {
    auto b = enterprise_app();
    b["gpus"][0]["availability"] = {{"timezone", tz}, {"windows", windows}};
    return b;
  };
  json win = {{"days", {"mon"}}, {"start", "09:00"}, {"end", "17:00"}};
  EXPECT_TRUE(core::parse_application_form(sched({win}), checkers()).ok());
  expect_field_error(sched({win}, "Mars/Olympus_Mons"), "gpus[0].availability.timezone");
  expect_field_error(sched(json::array()), "gpus[0].availability.windows");
  auto w = win;
  w["start"] = "25:00";
  expect_field_error(sched({win, w}), "gpus[0].availability.windows[1].start");
  w = win;
  w["end"] = "9:00";
  expect_field_error(sched({w}), "gpus[0].availability.windows[0].end");
  w = win;
  w["end"] = "09:00";
  expect_field_error(sched({w}), "gpus[0].availability.windows[0].end");
  w = win;
  w["end"] = "24:00";
  EXPECT_TRUE(core::parse_application_form(sched({w}), checkers()).ok());
  w = win;
  w["days"] = {"mon", "funday"};
  expect_field_error(sched({w}), "gpus[0].availability.windows[0].days[1]");
  w["days"] = {"mon", "mon"};
  expect_field_error(sched({w}), "gpus[0].availability.windows[0].days[1]");
  auto b = enterprise_app();
  b["gpus"][0]["availability"] = "weekdays";
  expect_field_error(b, "gpus[0].availability");
}

TEST(HhMm, Parses) {
  EXPECT_EQ(core::parse_hh_mm("00:00"), 0);
  EXPECT_EQ(core::parse_hh_mm("23:59"), 23 * 60 + 59);
  EXPECT_FALSE(core::parse_hh_mm("24:00"));
  EXPECT_EQ(core::parse_hh_mm("24:00", true), 24 * 60);
  EXPECT_FALSE(core::parse_hh_mm("12:60"));
  EXPECT_FALSE(core::parse_hh_mm("1200"));
  EXPECT_EQ(core::format_hh_mm(8 * 60 + 5), "08:05");
}

TEST(StateMachine, Transitions) {
  using S = ApplicationStatus;
  using A = ApplicationAction;
  EXPECT_EQ(*core::apply_action(S::draft, A::submit), S::submitted);
  EXPECT_EQ(*core::apply_action(S::submitted, A::request_info), S::needs_info);
  EXPECT_EQ(*core::apply_action(S::needs_info, A::submit), S::submitted);
  EXPECT_EQ(*core::apply_action(S::submitted, A::approve), S::approved);
  EXPECT_EQ(*core::apply_action(S::submitted, A::reject), S::rejected);
  EXPECT_TRUE(core::apply_action(S::draft, A::edit).ok());
  EXPECT_TRUE(core::apply_action(S::needs_info, A::edit).ok());
  for (auto s : {S::submitted, S::approved, S::rejected}) {
    auto r = core::apply_action(s, A::edit);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, ErrorCode::conflict);
    EXPECT_FALSE(core::apply_action(s, A::submit).ok());
  }
  for (auto s : {S::draft, S::needs_info, S::approved, S::rejected}) {
    EXPECT_FALSE(core::apply_action(s, A::approve).ok());
    EXPECT_FALSE(core::apply_action(s, A::reject).ok());
    EXPECT_FALSE(core::apply_action(s, A::request_info).ok());
  }
  EXPECT_EQ(core::parse_status("needs_info"), S::needs_info);
  EXPECT_FALSE(core::parse_status("pending"));
}

TEST(Tier, EnterpriseWhenEveryRulePasses) {
  auto f = core::parse_application_form(enterprise_app(), checkers());
  ASSERT_TRUE(f.ok());
  auto a = core::assess_tier(*f);
  EXPECT_EQ(a.suggested, Tier::enterprise);
  ASSERT_EQ(a.rules.size(), 5u);
  for (const auto& r : a.rules) EXPECT_TRUE(r.passed) << r.rule;
  EXPECT_EQ(*core::choose_tier(a, std::nullopt), Tier::enterprise);
  EXPECT_EQ(*core::choose_tier(a, Tier::community), Tier::community);  // reviewer may pick Community
}

TEST(Tier, EachRuleCanFail) {
  struct Case {
    std::string rule;
    std::function<void(json&)> change;
  };
  std::vector<Case> cases = {
      {"ups", [](json& b) { b["ups"] = false; }},
      {"availability",
       [](json& b) {
         b["gpus"][1]["availability"] = {{"timezone", "UTC"},
                                         {"windows", {{{"days", {"sat"}}, {"start", "00:00"}, {"end", "24:00"}}}}};
       }},
      {"bandwidth", [](json& b) { b["gpus"][1]["upload_gbps"] = 0.5; }},
      {"bandwidth", [](json& b) { b["gpus"][0]["download_gbps"] = 0.99; }},
      {"commitment", [](json& b) { b["commitment_months"] = 3; }},
      {"company", [](json& b) { b.erase("company"); }},
  };
  for (const auto& c : cases) {
    auto b = enterprise_app();
    c.change(b);
    auto f = core::parse_application_form(b, checkers());
    ASSERT_TRUE(f.ok()) << f.error().message;
    auto a = core::assess_tier(*f);
    EXPECT_EQ(a.suggested, Tier::community) << c.rule;
    int failed = 0;
    for (const auto& r : a.rules) {
      if (!r.passed) {
        ++failed;
        EXPECT_EQ(r.rule, c.rule);
        EXPECT_FALSE(r.reason.empty());
      }
    }
    EXPECT_EQ(failed, 1) << c.rule;
    auto chosen = core::choose_tier(a, Tier::enterprise);
    ASSERT_FALSE(chosen.ok()) << c.rule;
    EXPECT_EQ(chosen.error().code, ErrorCode::unprocessable);
    EXPECT_EQ(chosen.error().field, "tier");
    EXPECT_NE(chosen.error().message.find("'" + c.rule + "'"), std::string::npos) << chosen.error().message;
    EXPECT_EQ(*core::choose_tier(a, std::nullopt), Tier::community);
  }
}

TEST(Tier, ExactlyOneGbpsIsEnough) {
  auto b = enterprise_app();
  b["gpus"][0]["download_gbps"] = 1;
  b["gpus"][0]["upload_gbps"] = 1;
  auto f = core::parse_application_form(b, checkers());
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(core::assess_tier(*f).suggested, Tier::enterprise);
}

TEST(BusinessDays, SkipsWeekends) {
  const auto mon10 = kMonday + 10 * 3600'000;
  EXPECT_EQ(core::add_business_days(mon10, 1), mon10 + kDay);       // Tue
  EXPECT_EQ(core::add_business_days(mon10, 3), mon10 + 3 * kDay);   // Thu
  const auto fri10 = mon10 + 4 * kDay;
  EXPECT_EQ(core::add_business_days(fri10, 1), fri10 + 3 * kDay);   // Mon
  EXPECT_EQ(core::add_business_days(fri10, 3), fri10 + 5 * kDay);   // Wed
  const auto sat10 = mon10 + 5 * kDay;
  EXPECT_EQ(core::add_business_days(sat10, 1), mon10 + 7 * kDay);   // Mon
  EXPECT_EQ(core::add_business_days(sat10, 3), mon10 + 9 * kDay);   // Wed
  const auto sun10 = mon10 + 6 * kDay;
  EXPECT_EQ(core::add_business_days(sun10, 3), mon10 + 9 * kDay);   // Wed
  EXPECT_EQ(core::add_business_days(mon10, 0), mon10);
  EXPECT_EQ(core::add_business_days(mon10, 5), mon10 + 7 * kDay);   // next Mon
}

TEST(BusinessDays, Between) {
  const auto fri10 = kMonday + 4 * kDay + 10 * 3600'000;
  EXPECT_EQ(core::business_days_between(fri10, fri10), 0);
  EXPECT_EQ(core::business_days_between(fri10, fri10 + 3 * kDay - 1), 0);  // Mon 09:59
  EXPECT_EQ(core::business_days_between(fri10, fri10 + 3 * kDay), 1);      // Mon 10:00
  EXPECT_EQ(core::business_days_between(fri10, fri10 + 5 * kDay), 3);      // Wed 10:00
  EXPECT_EQ(core::business_days_between(fri10, fri10 - kDay), 0);
}

// The API document's body of POST /v1/applications is parse_application_form described: the limits
// it checks (a hand-written schema had a location of optional 200-character fields; the form requires
// each, of at most 100).
TEST(ApplicationForm, ItsParserDescribesTheBodyItReads) {
  const json s = core::describe_body([](const json& body) { (void)core::parse_application_form(body, {}); });
  EXPECT_EQ(s["required"], json({"full_name", "email", "gpus", "ups", "commitment_months"}));
  EXPECT_EQ(s["properties"]["commitment_months"]["enum"], json({3, 6, 12, 24}));
  const auto& gpu = s["properties"]["gpus"]["items"];
  EXPECT_EQ(gpu["required"],
            json({"model", "count", "system_ram_gb", "download_gbps", "upload_gbps", "availability", "location"}));
  EXPECT_EQ(gpu["properties"]["count"]["minimum"], core::kMinGpuCount);
  const auto& location = gpu["properties"]["location"];
  EXPECT_EQ(location["required"], json({"city", "country", "region"}));
  EXPECT_EQ(location["properties"]["city"]["maxLength"], 100);
  // Availability: "24/7" or a weekly schedule.
  const auto& availability = gpu["properties"]["availability"]["anyOf"];
  ASSERT_EQ(availability.size(), 2u);
  EXPECT_EQ(availability[0]["const"], "24/7");
  EXPECT_EQ(availability[1]["required"], json({"timezone", "windows"}));
  EXPECT_EQ(availability[1]["properties"]["windows"]["items"]["properties"]["days"]["items"]["enum"][0], "mon");
}
