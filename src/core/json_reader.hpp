#pragma once
// Reads a JSON request body field by field, so that every bad input turns into
// one Error that names the field at fault (as a JSON path such as
// "gpus[1].location.city"), and fields the endpoint does not take are refused
// rather than silently dropped.

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/result.hpp"

namespace gpunex::core {

//! Parses a request body that must be one JSON object. Limits nesting depth.
Result<nlohmann::json> parse_json_object(std::string_view body);

//! Reads fields of one JSON object; remembers the first error and then returns
//! defaults, so a handler can read every field and check once with finish().
class ObjectReader {
 public:
  //! `obj` must outlive the reader; `path` is the JSON path of obj ("" for the root).
  ObjectReader(const nlohmann::json& obj, std::string path = "");

  std::string required_string(std::string_view key, std::size_t min_len = 1, std::size_t max_len = 1000);
  std::optional<std::string> optional_string(std::string_view key, std::size_t max_len = 1000);
  std::int64_t required_int(std::string_view key, std::int64_t min, std::int64_t max);
  std::optional<std::int64_t> optional_int(std::string_view key, std::int64_t min, std::int64_t max);
  double required_number(std::string_view key, double min, double max);
  bool required_bool(std::string_view key);
  std::optional<bool> optional_bool(std::string_view key);
  //! The raw value of a field, present and not null, or nullptr (recording missing_field).
  const nlohmann::json* required_value(std::string_view key);
  const nlohmann::json* optional_value(std::string_view key);
  //! A nested object or array; nullptr (and an error) when absent or of another type.
  const nlohmann::json* required_object(std::string_view key);
  const nlohmann::json* required_array(std::string_view key, std::size_t min_items, std::size_t max_items);

  //! The JSON path of a field of this object, e.g. "gpus[0].count".
  std::string path_of(std::string_view key) const;
  //! Records an error found by the caller (only the first one is kept).
  void fail(Error e);
  bool failed() const { return error_.has_value(); }
  //! Checks for fields that were never read (unknown_field) and returns the first error.
  Status finish();

 private:
  const nlohmann::json* lookup(std::string_view key, bool required);
  std::optional<std::int64_t> check_int(std::string_view key, const nlohmann::json& v, std::int64_t min,
                                        std::int64_t max);
  const nlohmann::json& obj_;
  std::string path_;
  std::set<std::string, std::less<>> seen_;
  std::optional<Error> error_;
};

}  // namespace gpunex::core
