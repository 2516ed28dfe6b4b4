#include "core/json_reader.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

using gpunex::core::ErrorCode;
using gpunex::core::ObjectReader;
using gpunex::core::parse_json_object;

TEST(JsonReader, RejectsMalformedJson) {
  auto r = parse_json_object("{\"a\":");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::invalid_json);
}

TEST(JsonReader, RejectsNonObjectBody) {
  auto r = parse_json_object("[1,2]");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::invalid_json);
}

TEST(JsonReader, RejectsDeepNesting) {
  std::string deep = "{\"a\":" + std::string(100, '[') + std::string(100, ']') + "}";
  auto r = parse_json_object(deep);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::invalid_json);
}

// Containers may open up to level 31 (the body's object is level 0); one at level 32 is refused, and
// outranks a key given twice before it.
TEST(JsonReader, NestingStopsAtLevel32) {
  auto nested = [](int levels) {
    return "{\"a\":" + std::string(static_cast<std::size_t>(levels), '[') +
           std::string(static_cast<std::size_t>(levels), ']') + "}";
  };
  EXPECT_TRUE(parse_json_object(nested(31)).ok());
  auto r = parse_json_object(nested(32));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "request body nests deeper than 32 levels");
  auto both = parse_json_object("{\"b\":1,\"b\":2," + nested(40).substr(1));
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(both.error().code, ErrorCode::invalid_json);
}

// The checked parse builds the document nlohmann's own parser builds.
TEST(JsonReader, BuildsTheDocumentNlohmannBuilds) {
  for (
      const char* body : {
          R"({})",
          R"({"a":[],"b":{},"c":null,"d":true,"e":false})",
          R"({"n":[0,-1,9223372036854775807,-9223372036854775808,18446744073709551615,1.5,-2.5e-3,1E3]})",
          R"({"s":"caf\u00e9 \ud83d\ude00 \"q\" \\ \/","t":["x",{"u":[{"v":[1,[2,[3]]]}]}]})",
          R"( { "spaced" : [ 1 , 2 ] , "z" : { "y" : { } } } )",
          R"({"telemetry":[{"index":0,"uuid":"GPU-1","at":"2026-12-02T10:00:00Z","temperature_c":51,"power_w":301.5,"clock_events":[]}]})",
      }) {
    auto r = parse_json_object(body);
    ASSERT_TRUE(r.ok()) << body << ": " << r.error().message;
    EXPECT_EQ(*r, nlohmann::json::parse(body)) << body;
    EXPECT_EQ(r->dump(), nlohmann::json::parse(body).dump()) << body;
  }
  for (const char* bad : {"", " ", "{", "{\"a\":1,}", "{\"a\":1} x", "{\"a\":01}", "{'a':1}", "{\"a\":[1,]}"}) {
    auto r = parse_json_object(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().message, "request body is not valid JSON") << bad;
  }
}

TEST(JsonReader, NamesMissingField) {
  auto j = parse_json_object(R"({"email":"a@b.c"})");
  ASSERT_TRUE(j.ok());
  ObjectReader r(*j);
  r.required_string("email");
  r.required_string("password");
  auto s = r.finish();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::missing_field);
  EXPECT_EQ(s.error().field, "password");
}

TEST(JsonReader, NamesWrongType) {
  auto j = parse_json_object(R"({"count": "3"})");
  ObjectReader r(*j);
  r.required_int("count", 1, 10);
  auto s = r.finish();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::invalid_field);
  EXPECT_EQ(s.error().field, "count");
}

TEST(JsonReader, NamesOutOfRange) {
  auto j = parse_json_object(R"({"count": 0})");
  ObjectReader r(*j);
  r.required_int("count", 1, 10);
  auto s = r.finish();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().field, "count");
  EXPECT_NE(s.error().message.find("between 1 and 10"), std::string::npos);
}

TEST(JsonReader, RefusesUnknownField) {
  auto j = parse_json_object(R"({"email":"a","admin":true})");
  ObjectReader r(*j);
  r.required_string("email");
  auto s = r.finish();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::unknown_field);
  EXPECT_EQ(s.error().field, "admin");
}

// finish() knows a field as read when it was read present, null, or more than once; a field asked for but
// absent adds nothing; every field never read is refused, each named once.
TEST(JsonReader, RefusesExactlyTheFieldsNeverRead) {
  auto j = parse_json_object(R"({"a":"x","b":null,"c":1,"d":true,"e":[],"f":{}})");
  ObjectReader r(*j);
  r.required_string("a");
  r.required_string("a");
  EXPECT_FALSE(r.optional_int("b", 0, 10));
  r.optional_string("missing");
  r.required_value("e");
  auto s = r.finish();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::unknown_field);
  std::vector<std::string> refused;
  for (const auto& f : s.error().fields) refused.push_back(f.field);
  EXPECT_EQ(refused, (std::vector<std::string>{"c", "d", "f"}));

  auto all = parse_json_object(R"({"a":"x","b":null})");
  ObjectReader every(*all);
  every.required_string("a");
  every.optional_string("b");
  EXPECT_TRUE(every.finish().ok());
}

TEST(JsonReader, NestedPaths) {
  auto j = parse_json_object(R"({"gpus":[{"location":{"city":5}}]})");
  ObjectReader r(*j);
  const auto* gpus = r.required_array("gpus", 1, 10);
  ASSERT_NE(gpus, nullptr);
  ObjectReader g((*gpus)[0], r.path_of("gpus") + "[0]");
  const auto* loc = g.required_object("location");
  ASSERT_NE(loc, nullptr);
  ObjectReader l(*loc, g.path_of("location"));
  l.required_string("city");
  auto s = l.finish();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().field, "gpus[0].location.city");
}

TEST(JsonReader, AcceptsValidObject) {
  auto j = parse_json_object(R"({"email":"a@b.c","n":5,"ok":true,"note":null})");
  ObjectReader r(*j);
  EXPECT_EQ(r.required_string("email"), "a@b.c");
  EXPECT_EQ(r.required_int("n", 0, 10), 5);
  EXPECT_TRUE(r.required_bool("ok"));
  EXPECT_FALSE(r.optional_string("note").has_value());
  EXPECT_TRUE(r.finish().ok());
}

TEST(JsonReader, ListsEveryInvalidFieldFirstOneLeading) {
  auto j = parse_json_object(R"({"name":"","count":0,"ok":"yes","extra":1})");
  ObjectReader r(*j);
  r.required_string("name");
  r.required_int("count", 1, 10);
  r.required_bool("ok");
  r.required_string("email");
  auto s = r.finish();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::invalid_field);
  EXPECT_EQ(s.error().field, "name");
  EXPECT_EQ(s.error().message, "Name is required");
  std::vector<std::string> fields;
  for (const auto& f : s.error().fields) fields.push_back(f.field);
  EXPECT_EQ(fields, (std::vector<std::string>{"name", "count", "ok", "email", "extra"}));
  EXPECT_EQ(s.error().fields[3].code, "missing_field");
  EXPECT_EQ(s.error().fields[4].code, "unknown_field");
}

TEST(JsonReader, MessagesNameFieldsForPeople) {
  auto j = parse_json_object(R"({"system_ram_gb":20000,"full_name":7,"count":2000})");
  gpunex::core::FieldLabels labels = {{"system_ram_gb", {"host system RAM", "GB"}}};
  ObjectReader r(*j, "gpus[1]", "GPU 2", labels);
  r.required_int("system_ram_gb", 1, 16384);
  r.required_string("full_name");
  r.required_int("count", 1, 1024);
  auto s = r.finish();
  ASSERT_FALSE(s.ok());
  ASSERT_EQ(s.error().fields.size(), 3u);
  EXPECT_EQ(s.error().fields[0].field, "gpus[1].system_ram_gb");
  EXPECT_EQ(s.error().fields[0].message, "GPU 2: host system RAM must be between 1 and 16,384 GB");
  EXPECT_EQ(s.error().fields[1].message, "GPU 2: full name must be text, not number");
  EXPECT_EQ(s.error().fields[2].message, "GPU 2: count must be between 1 and 1,024");

  // At the root, without labels, a key reads as words and the sentence starts with a capital.
  auto k = parse_json_object(R"({})");
  ObjectReader root(*k);
  root.required_string("full_name");
  EXPECT_EQ(root.finish().error().message, "Full name is required");
}

TEST(JsonReader, FailedNamesOnlyTheFieldAtFault) {
  auto j = parse_json_object(R"({"a":"x","b":3})");
  ObjectReader r(*j);
  r.required_int("a", 0, 10);
  r.required_int("b", 0, 10);
  EXPECT_TRUE(r.failed());
  EXPECT_TRUE(r.failed("a"));
  EXPECT_FALSE(r.failed("b"));
}

// Security (issue #19): a key given twice means two things to two readers (nlohmann keeps the last).
TEST(JsonReader, RefusesDuplicateKeysNamingTheField) {
  auto r = parse_json_object(R"({"email":"a@b.c","role":"customer","role":"admin"})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::duplicate_field);
  EXPECT_EQ(r.error().field, "role");
  auto nested = parse_json_object(R"({"gpus":[{"count":1,"count":2}]})");
  ASSERT_FALSE(nested.ok());
  EXPECT_EQ(nested.error().code, ErrorCode::duplicate_field);
  EXPECT_EQ(nested.error().field, "count");
  // The same key in two sibling objects is fine.
  EXPECT_TRUE(parse_json_object(R"({"a":{"x":1},"b":{"x":2},"c":[{"x":1},{"x":2}]})").ok());
}

// A NUL in any string of a body is refused naming its key: PostgreSQL's libpq cut a parameter at the NUL,
// so "id\u0000junk" matched "id" (issue #19).
TEST(JsonReader, RefusesANulInAnyStringNamingTheKey) {
  auto r = parse_json_object(R"({"email":"a@b.c\u0000junk","amount":"1.00"})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::invalid_field);
  EXPECT_EQ(r.error().field, "email");
  auto nested = parse_json_object(R"({"gpus":[{"uuid":"GPU-1","name":"x\u0000"}]})");
  ASSERT_FALSE(nested.ok());
  EXPECT_EQ(nested.error().field, "name");
  EXPECT_EQ(parse_json_object(R"({"k\u0000ey":1})").error().field, "k");
  EXPECT_EQ(parse_json_object(R"({"env":{"A\u0000B":"x"}})").error().field, "env");
  EXPECT_TRUE(parse_json_object(R"({"text":"tab\tand\nnewline are for the fields to judge"})").ok());
}

TEST(JsonReader, LinesRefuseControlCharactersAndBidiOverrides) {
  for (const std::string& bad : {std::string("host\x1b[31m"), std::string("a\nb"), std::string("a\tb"),
                                std::string("a\x7f"), std::string("\xc2\x85x"), std::string("evil\xe2\x80\xaegpj.exe"),
                                std::string("x\xe2\x81\xa6y")}) {
    nlohmann::json j = {{"hostname", bad}};
    ObjectReader r(j);
    r.required_line("hostname");
    auto s = r.finish();
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.error().code, ErrorCode::invalid_field);
    EXPECT_EQ(s.error().field, "hostname");
  }
  nlohmann::json j = {{"hostname", "gpu-01 (Zürich)"}, {"notes", "line 1\nline 2"}};
  ObjectReader r(j);
  EXPECT_EQ(r.required_line("hostname"), "gpu-01 (Zürich)");
  EXPECT_EQ(r.optional_text("notes"), "line 1\nline 2");
  EXPECT_TRUE(r.finish().ok());
  nlohmann::json rlo = {{"notes", "a\xe2\x80\xae"}};
  ObjectReader r2(rlo);
  r2.optional_text("notes");
  EXPECT_FALSE(r2.finish().ok());
}

// ---- describing: the JSON Schema of what a parser reads (the API document's request bodies) ----

namespace {

using gpunex::core::describe_body;
using nlohmann::json;

bool lists(const json& list, const std::string& v) {
  return list.is_array() && std::find(list.begin(), list.end(), v) != list.end();
}

}  // namespace

TEST(JsonReaderDescribe, RecordsEachFieldsTypeBoundsAndWhetherItIsRequired) {
  const json s = describe_body([](const json& body) {
    ObjectReader r(body);
    r.required_string("email", 3, 254);
    r.required_line("name", 1, 200);
    r.optional_text("notes", 4000);
    r.optional_int("count", 1, 64);
    r.required_number("gbps", 0.1, 400);
    r.required_bool("ups");
    (void)r.finish();
  });
  EXPECT_EQ(s["type"], "object");
  EXPECT_EQ(s["additionalProperties"], false);  // finish() refuses unknown fields
  EXPECT_EQ(s["required"], json({"email", "name", "gbps", "ups"}));
  const auto& p = s["properties"];
  EXPECT_EQ(p["email"], json({{"type", "string"}, {"minLength", 3}, {"maxLength", 254}}));
  EXPECT_EQ(p["name"]["maxLength"], 200);
  EXPECT_NE(p["name"]["description"].get<std::string>().find("One line"), std::string::npos);
  EXPECT_NE(p["notes"]["description"].get<std::string>().find("Plain text"), std::string::npos);
  // An optional field reads null as absent: its schema admits null.
  EXPECT_EQ(p["notes"]["type"], json({"string", "null"}));
  EXPECT_EQ(p["count"], json({{"type", {"integer", "null"}}, {"minimum", 1}, {"maximum", 64}}));
  EXPECT_EQ(p["gbps"]["type"], "number");
  EXPECT_EQ(p["gbps"]["minimum"], 0.1);
  EXPECT_EQ(p["ups"]["type"], "boolean");
}

TEST(JsonReaderDescribe, NestedReadersDescribeObjectsAndListItems) {
  const json s = describe_body([](const json& body) {
    ObjectReader r(body);
    if (const auto* loc = r.required_object("location")) {
      ObjectReader l(*loc, "location");
      l.required_string("city", 1, 100);
      (void)l.finish();
    }
    if (const auto* gpus = r.required_array("gpus", 1, 50)) {
      for (std::size_t i = 0; i < gpus->size(); ++i) {
        ObjectReader g((*gpus)[i], "gpus[" + std::to_string(i) + "]");
        g.required_int("count", 1, 1024);
        g.optional_line("model_other", 200);
        (void)g.finish();
      }
    }
    if (const auto* filters = r.optional_value("filters", ObjectReader::Shape::object)) {
      ObjectReader f(*filters, "filters");
      f.optional_line("region", 100);
      (void)f.finish();
    }
    (void)r.optional_value("anything");
    (void)r.finish();
  });
  const auto& p = s["properties"];
  EXPECT_EQ(p["location"]["type"], "object");
  EXPECT_EQ(p["location"]["additionalProperties"], false);
  EXPECT_EQ(p["location"]["required"], json({"city"}));
  EXPECT_EQ(p["gpus"]["type"], "array");
  EXPECT_EQ(p["gpus"]["minItems"], 1);
  EXPECT_EQ(p["gpus"]["maxItems"], 50);
  const auto& item = p["gpus"]["items"];
  EXPECT_EQ(item["type"], "object");
  EXPECT_EQ(item["required"], json({"count"}));
  EXPECT_EQ(item["properties"]["model_other"]["type"], json({"string", "null"}));
  EXPECT_EQ(p["filters"]["type"], json({"object", "null"}));
  EXPECT_EQ(p["filters"]["properties"]["region"]["maxLength"], 100);
  EXPECT_EQ(p["anything"], json::object());  // a raw value nobody describes: any value
  EXPECT_FALSE(lists(s["required"], "filters"));
}

TEST(JsonReaderDescribe, HandCheckedFieldsBranchesAndAlternatives) {
  const json s = describe_body([](const json& body) {
    ObjectReader r(body);
    const auto method = r.required_string("method", 1, 32);
    r.describe_field("method", {{"enum", {"sepa", "solana_usdc"}}});
    if (r.describing() || method == "sepa") {
      r.describe_when("method is sepa");
      r.required_string("iban", 15, 42);
    }
    r.describe_when("");
    (void)r.required_value("availability", ObjectReader::Shape::object);
    r.describe_alternative("availability", {{"const", "24/7"}});
    (void)r.finish();
  });
  const auto& p = s["properties"];
  EXPECT_EQ(p["method"]["enum"], json({"sepa", "solana_usdc"}));
  EXPECT_EQ(p["method"]["maxLength"], 32);
  // A field required in one branch only is optional, with a note saying when it is required.
  EXPECT_FALSE(lists(s["required"], "iban"));
  EXPECT_EQ(p["iban"]["description"], "Required when method is sepa.");
  EXPECT_TRUE(lists(s["required"], "method"));
  EXPECT_TRUE(lists(s["required"], "availability"));
  ASSERT_TRUE(p["availability"].contains("anyOf"));
  EXPECT_EQ(p["availability"]["anyOf"][0], json({{"const", "24/7"}}));
  EXPECT_EQ(p["availability"]["anyOf"][1]["type"], "object");
}

TEST(JsonReaderDescribe, DescribingRecordsNoErrorAndStopsAtFinish) {
  bool after_finish = false;
  bool failed = false;
  (void)describe_body([&](const json& body) {
    ObjectReader r(body);
    r.required_string("a");
    r.invalid("a", "is wrong");
    failed = r.failed("a") && r.failed();  // so checks on the defaults are skipped
    if (auto st = r.finish(); !st) return;
    after_finish = true;
  });
  EXPECT_TRUE(failed);
  EXPECT_FALSE(after_finish);
}

TEST(JsonReaderDescribe, ReadingIsUnchangedByTheDescribingCalls) {
  auto j = parse_json_object(R"({"method":"sepa","filters":{"region":"eu"}})");
  ASSERT_TRUE(j.ok());
  ObjectReader r(*j);
  EXPECT_FALSE(r.describing());
  EXPECT_EQ(r.required_string("method"), "sepa");
  r.describe_field("method", {{"enum", {"x"}}});  // nothing outside describe_body
  r.describe_when("never");
  const auto* f = r.optional_value("filters", ObjectReader::Shape::object);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ((*f)["region"], "eu");
  EXPECT_EQ(r.optional_value("absent", ObjectReader::Shape::list), nullptr);
  EXPECT_FALSE(r.failed());
  EXPECT_TRUE(r.finish().ok());
  // A reader made while a description runs, on a value that is not a stand-in, reads as ever.
  (void)describe_body([&](const json&) {
    ObjectReader inner(*j);
    EXPECT_FALSE(inner.describing());
    EXPECT_EQ(inner.required_string("method"), "sepa");
  });
}
