#include "core/json_reader.hpp"

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
