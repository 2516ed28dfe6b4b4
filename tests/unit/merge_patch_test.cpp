// JSON Merge Patch: every example of RFC 7396 Appendix A, and the worked example of §3.
#include "core/merge_patch.hpp"

#include <gtest/gtest.h>

using gpunex::core::merge_patch;
using nlohmann::json;

namespace {

struct Example {
  const char* original;
  const char* patch;
  const char* result;
};

}  // namespace

TEST(MergePatch, Rfc7396AppendixA) {
  const Example examples[] = {
      {R"({"a":"b"})", R"({"a":"c"})", R"({"a":"c"})"},
      {R"({"a":"b"})", R"({"b":"c"})", R"({"a":"b","b":"c"})"},
      {R"({"a":"b"})", R"({"a":null})", R"({})"},
      {R"({"a":"b","b":"c"})", R"({"a":null})", R"({"b":"c"})"},
      {R"({"a":["b"]})", R"({"a":"c"})", R"({"a":"c"})"},
      {R"({"a":"c"})", R"({"a":["b"]})", R"({"a":["b"]})"},
      {R"({"a":{"b":"c"}})", R"({"a":{"b":"d","c":null}})", R"({"a":{"b":"d"}})"},
      {R"({"a":[{"b":"c"}]})", R"({"a":[1]})", R"({"a":[1]})"},
      {R"(["a","b"])", R"(["c","d"])", R"(["c","d"])"},
      {R"({"a":"b"})", R"(["c"])", R"(["c"])"},
      {R"({"a":"foo"})", R"(null)", R"(null)"},
      {R"({"a":"foo"})", R"("bar")", R"("bar")"},
      {R"({"e":null})", R"({"a":1})", R"({"e":null,"a":1})"},
      {R"([1,2])", R"({"a":"b","c":null})", R"({"a":"b"})"},
      {R"({})", R"({"a":{"bb":{"ccc":null}}})", R"({"a":{"bb":{}}})"},
  };
  for (const auto& e : examples) {
    EXPECT_EQ(merge_patch(json::parse(e.original), json::parse(e.patch)), json::parse(e.result))
        << e.original << " + " << e.patch;
  }
}

TEST(MergePatch, Rfc7396Section3Example) {
  const json target = json::parse(R"({
    "title": "Goodbye!",
    "author": {"givenName": "John", "familyName": "Doe"},
    "tags": ["example", "sample"],
    "content": "This will be unchanged"
  })");
  const json patch = json::parse(R"({
    "title": "Hello!",
    "phoneNumber": "+01-123-456-7890",
    "author": {"familyName": null},
    "tags": ["example"]
  })");
  const json expected = json::parse(R"({
    "title": "Hello!",
    "author": {"givenName": "John"},
    "tags": ["example"],
    "content": "This will be unchanged",
    "phoneNumber": "+01-123-456-7890"
  })");
  EXPECT_EQ(merge_patch(target, patch), expected);
}

TEST(MergePatch, EmptyPatchChangesNothing) {
  const json target = json::parse(R"({"a":{"b":[1,2]},"c":null})");
  EXPECT_EQ(merge_patch(target, json::object()), target);
}
