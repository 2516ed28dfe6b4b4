#pragma once
// Reads a JSON request body field by field, so that every bad input turns into
// an error that names the field at fault (as a JSON path such as
// "gpus[1].location.city") in words a person understands ("GPU 2: city is
// required"), every invalid field of a body is reported at once, and fields the
// endpoint does not take are refused rather than silently dropped.
//
// The same reading code also describes the body: run once by describe_body(), each reader records the
// fields it is asked for as a JSON Schema (the API document's request bodies), so the document cannot
// say something the validators do not check.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"

namespace gpunex::core {

//! Parses a request body that must be one JSON object. Limits nesting depth.
Result<nlohmann::json> parse_json_object(std::string_view body);

//! How a person knows a field: its name in a sentence ("host system RAM") and the unit of its numbers ("GB").
struct FieldLabel {
  std::string name;
  std::string unit;
};
//! Labels by JSON key; a key without one reads as itself with spaces ("full_name" → "full name").
using FieldLabels = std::map<std::string, FieldLabel, std::less<>>;

class SchemaDescriber;

//! Runs `parse` once on a stand-in body and answers the JSON Schema of what its ObjectReaders asked for:
//! each field's type and bounds, which are required, no other field (finish() refuses unknown ones), and
//! nested objects and list items read by readers made on the stand-ins that required_object,
//! required_array and a value read with a Shape answered. Readers return defaults and record no error
//! while describing; finish() answers an error, so code after it (which relies on a clean read) is not
//! run. A field that is absent and null alike is optional, so an optional field's schema admits null.
//! Used once per route when the API document is built, never per request.
nlohmann::json describe_body(const std::function<void(const nlohmann::json&)>& parse);

//! Reads fields of one JSON object; records every error and returns defaults for
//! bad fields, so a handler can read every field and check once with finish().
class ObjectReader {
 public:
  //! `obj` must outlive the reader; `path` is the JSON path of obj ("" for the root); `context` names obj
  //! for a person at the start of each message ("GPU 2"; the path when empty and not the root).
  explicit ObjectReader(const nlohmann::json& obj, std::string path = "", std::string context = "",
                        FieldLabels labels = {});

  std::string required_string(std::string_view key, std::size_t min_len = 1, std::size_t max_len = 1000);
  std::optional<std::string> optional_string(std::string_view key, std::size_t max_len = 1000);
  //! A string shown on one line (a name, a host name, a version): refused with control characters
  //! (tab and newline included) or bidirectional overrides, which would make it read as something else.
  std::string required_line(std::string_view key, std::size_t min_len = 1, std::size_t max_len = 1000);
  std::optional<std::string> optional_line(std::string_view key, std::size_t max_len = 1000);
  //! A multi-line text (notes): tab and newline allowed, other control characters and bidi overrides refused.
  std::optional<std::string> optional_text(std::string_view key, std::size_t max_len = 1000);
  std::int64_t required_int(std::string_view key, std::int64_t min, std::int64_t max);
  std::optional<std::int64_t> optional_int(std::string_view key, std::int64_t min, std::int64_t max);
  double required_number(std::string_view key, double min, double max);
  bool required_bool(std::string_view key);
  std::optional<bool> optional_bool(std::string_view key);
  //! What a raw value is described as: any value, or an object or a list (then the caller's readers on
  //! it, or on its items, describe their fields).
  enum class Shape { any, object, list };
  //! The raw value of a field, present and not null, or nullptr (recording missing_field). `shape`
  //! matters only while describing: a stand-in of that shape is answered instead of nullptr.
  const nlohmann::json* required_value(std::string_view key, Shape shape = Shape::any);
  const nlohmann::json* optional_value(std::string_view key, Shape shape = Shape::any);
  //! A nested object or array; nullptr (and an error) when absent or of another type.
  const nlohmann::json* required_object(std::string_view key);
  const nlohmann::json* required_array(std::string_view key, std::size_t min_items, std::size_t max_items);

  //! Whether this reader describes (inside describe_body) rather than reads.
  bool describing() const { return schema_ != nullptr; }
  //! While describing: merges `schema` into the schema of field `key`, for a value the caller checks by
  //! hand (a money string, a list of port numbers). Nothing otherwise; but the caller builds `schema` all
  //! the same, so a request's hot path (the heartbeat's) calls it under `if (r.describing())`.
  void describe_field(std::string_view key, const nlohmann::json& schema);
  //! While describing: field `key` may also be `schema` ("24/7" where a schedule object is read
  //! otherwise). Call it once the field's own schema is complete. Nothing otherwise.
  void describe_alternative(std::string_view key, const nlohmann::json& schema);
  //! While describing: the fields read until the next call are required only when `condition` holds
  //! ("method is sepa"), so they are described as optional with that note; "" ends it. Nothing otherwise.
  void describe_when(std::string_view condition);

  //! The JSON path of a field of this object, e.g. "gpus[0].count".
  std::string path_of(std::string_view key) const;
  //! A field's name for a person, with its object's context: "Full name", "GPU 2: number of GPUs".
  std::string name_of(std::string_view key) const;
  //! A sentence about this object for a person: "GPU 2: <text>", or `text` capitalised at the root.
  std::string sentence(std::string_view text) const;
  //! The context of an object nested in this one: "Window 1" at the root, "GPU 2, window 1" below it.
  std::string nested_context(std::string_view name) const;
  //! Records an error found by the caller; every error is kept (and each field listed once).
  void fail(Error e);
  //! Records that `key` is invalid: `what` completes its name ("must be one of 3, 6, 12 or 24 months").
  void invalid(std::string_view key, std::string_view what, std::string detail_code = "");
  //! Whether any error was recorded. Always while describing: checks of the defaults are skipped.
  bool failed() const { return describing() || !errors_.empty(); }
  //! Whether the field `key` was recorded as invalid (so checks on its value are pointless); always
  //! while describing.
  bool failed(std::string_view key) const { return describing() || errors_.has(path_of(key)); }
  //! Checks for fields that were never read (unknown_field) and returns every error, the first one leading.
  Status finish();

 private:
  const nlohmann::json* lookup(std::string_view key, bool required);
  std::optional<std::int64_t> check_int(std::string_view key, const nlohmann::json& v, std::int64_t min,
                                        std::int64_t max);
  void refuse_unclean(std::string_view key);
  void fail_at(ErrorCode code, std::string_view key, std::string_view what);
  const FieldLabel* label_of(std::string_view key) const;
  //! While describing: the schema node of field `key` (recorded as required unless in a describe_when).
  nlohmann::json& describe(std::string_view key, bool required);
  const nlohmann::json* describe_value(std::string_view key, bool required, Shape shape);
  const nlohmann::json& obj_;
  std::string path_;
  std::string context_;
  FieldLabels labels_;
  // The fields read, as their values in obj_ (stable: nothing changes obj_ while it is read), for finish()'s
  // unknown-field check: a pointer each, not a string and a tree node each (a heartbeat reads about 70).
  std::vector<const nlohmann::json*> seen_;
  ErrorList errors_;
  SchemaDescriber* describer_ = nullptr;  // set while describing
  nlohmann::json* schema_ = nullptr;      // this object's schema, in describer_'s tree
  std::string condition_;                 // describe_when's
};

}  // namespace gpunex::core
