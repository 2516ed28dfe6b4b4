#include "core/json_reader.hpp"

#include <cmath>

namespace gpunex::core {

namespace {

constexpr int kMaxDepth = 32;

bool too_deep(const nlohmann::json& j, int depth) {
  if (depth > kMaxDepth) return true;
  if (j.is_object() || j.is_array()) {
    for (const auto& v : j) {
      if (too_deep(v, depth + 1)) return true;
    }
  }
  return false;
}

std::string type_name(const nlohmann::json& j) {
  if (j.is_null()) return "null";
  if (j.is_boolean()) return "boolean";
  if (j.is_number()) return "number";
  if (j.is_string()) return "string";
  if (j.is_array()) return "array";
  return "object";
}

}  // namespace

Result<nlohmann::json> parse_json_object(std::string_view body) {
  // Depth is checked by a callback while parsing, so a deeply nested body cannot exhaust the stack.
  int depth = 0;
  bool deep = false;
  auto cb = [&](int d, nlohmann::json::parse_event_t ev, nlohmann::json&) {
    if (ev == nlohmann::json::parse_event_t::object_start || ev == nlohmann::json::parse_event_t::array_start) {
      depth = d;
      if (d >= kMaxDepth) deep = true;
    }
    return !deep;
  };
  nlohmann::json j = nlohmann::json::parse(body, cb, /*allow_exceptions=*/false);
  if (deep) return Error::make(ErrorCode::invalid_json, "request body nests deeper than 32 levels");
  if (j.is_discarded()) return Error::make(ErrorCode::invalid_json, "request body is not valid JSON");
  if (!j.is_object()) return Error::make(ErrorCode::invalid_json, "request body must be a JSON object");
  if (too_deep(j, 0)) return Error::make(ErrorCode::invalid_json, "request body nests deeper than 32 levels");
  return j;
}

ObjectReader::ObjectReader(const nlohmann::json& obj, std::string path) : obj_(obj), path_(std::move(path)) {
  if (!obj_.is_object()) {
    fail(Error::make(ErrorCode::invalid_field, (path_.empty() ? std::string("body") : path_) + " must be an object",
                     path_.empty() ? std::nullopt : std::optional<std::string>(path_)));
  }
}

std::string ObjectReader::path_of(std::string_view key) const {
  if (path_.empty()) return std::string(key);
  return path_ + "." + std::string(key);
}

void ObjectReader::fail(Error e) {
  if (!error_) error_ = std::move(e);
}

const nlohmann::json* ObjectReader::lookup(std::string_view key, bool required) {
  seen_.emplace(key);
  if (failed() || !obj_.is_object()) return nullptr;
  auto it = obj_.find(std::string(key));
  if (it == obj_.end() || it->is_null()) {
    if (required) fail(Error::make(ErrorCode::missing_field, path_of(key) + " is required", path_of(key)));
    return nullptr;
  }
  return &*it;
}

const nlohmann::json* ObjectReader::required_value(std::string_view key) { return lookup(key, true); }
const nlohmann::json* ObjectReader::optional_value(std::string_view key) { return lookup(key, false); }

std::string ObjectReader::required_string(std::string_view key, std::size_t min_len, std::size_t max_len) {
  const auto* v = lookup(key, true);
  if (!v) return {};
  if (!v->is_string()) {
    fail(Error::make(ErrorCode::invalid_field, path_of(key) + " must be a string, not " + type_name(*v), path_of(key)));
    return {};
  }
  const auto& s = v->get_ref<const std::string&>();
  if (s.size() < min_len) {
    fail(Error::make(ErrorCode::invalid_field,
                     min_len == 1 ? path_of(key) + " must not be empty"
                                  : path_of(key) + " must be at least " + std::to_string(min_len) + " characters",
                     path_of(key)));
    return {};
  }
  if (s.size() > max_len) {
    fail(Error::make(ErrorCode::invalid_field,
                     path_of(key) + " must be at most " + std::to_string(max_len) + " characters", path_of(key)));
    return {};
  }
  return s;
}

std::optional<std::string> ObjectReader::optional_string(std::string_view key, std::size_t max_len) {
  const auto* v = lookup(key, false);
  if (!v) return std::nullopt;
  if (!v->is_string()) {
    fail(Error::make(ErrorCode::invalid_field, path_of(key) + " must be a string, not " + type_name(*v), path_of(key)));
    return std::nullopt;
  }
  const auto& s = v->get_ref<const std::string&>();
  if (s.size() > max_len) {
    fail(Error::make(ErrorCode::invalid_field,
                     path_of(key) + " must be at most " + std::to_string(max_len) + " characters", path_of(key)));
    return std::nullopt;
  }
  return s;
}

namespace {
std::optional<std::int64_t> as_int(const nlohmann::json& v) {
  if (v.is_number_integer()) return v.get<std::int64_t>();
  if (v.is_number_unsigned()) {
    auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<std::int64_t>(u);
  }
  return std::nullopt;
}
}  // namespace

std::optional<std::int64_t> ObjectReader::check_int(std::string_view key, const nlohmann::json& v,
                                                    std::int64_t min, std::int64_t max) {
  auto i = as_int(v);
  if (!i) {
    fail(Error::make(ErrorCode::invalid_field, path_of(key) + " must be an integer", path_of(key)));
    return std::nullopt;
  }
  if (*i < min || *i > max) {
    fail(Error::make(ErrorCode::invalid_field,
                     path_of(key) + " must be between " + std::to_string(min) + " and " + std::to_string(max),
                     path_of(key)));
    return std::nullopt;
  }
  return i;
}

std::optional<std::int64_t> ObjectReader::optional_int(std::string_view key, std::int64_t min, std::int64_t max) {
  const auto* v = lookup(key, false);
  if (!v) return std::nullopt;
  return check_int(key, *v, min, max);
}

std::int64_t ObjectReader::required_int(std::string_view key, std::int64_t min, std::int64_t max) {
  const auto* v = lookup(key, true);
  if (!v) return min;
  return check_int(key, *v, min, max).value_or(min);
}

double ObjectReader::required_number(std::string_view key, double min, double max) {
  const auto* v = lookup(key, true);
  if (!v) return min;
  if (!v->is_number()) {
    fail(Error::make(ErrorCode::invalid_field, path_of(key) + " must be a number, not " + type_name(*v), path_of(key)));
    return min;
  }
  double d = v->get<double>();
  if (!std::isfinite(d) || d < min || d > max) {
    auto fmt = [](double x) {
      std::string s = std::to_string(x);
      while (!s.empty() && s.back() == '0') s.pop_back();
      if (!s.empty() && s.back() == '.') s.pop_back();
      return s;
    };
    fail(Error::make(ErrorCode::invalid_field, path_of(key) + " must be between " + fmt(min) + " and " + fmt(max),
                     path_of(key)));
    return min;
  }
  return d;
}

std::optional<bool> ObjectReader::optional_bool(std::string_view key) {
  const auto* v = lookup(key, false);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) {
    fail(Error::make(ErrorCode::invalid_field, path_of(key) + " must be true or false", path_of(key)));
    return std::nullopt;
  }
  return v->get<bool>();
}

bool ObjectReader::required_bool(std::string_view key) {
  const auto* v = lookup(key, true);
  if (!v) return false;
  if (!v->is_boolean()) {
    fail(Error::make(ErrorCode::invalid_field, path_of(key) + " must be true or false", path_of(key)));
    return false;
  }
  return v->get<bool>();
}

const nlohmann::json* ObjectReader::required_object(std::string_view key) {
  const auto* v = lookup(key, true);
  if (!v) return nullptr;
  if (!v->is_object()) {
    fail(Error::make(ErrorCode::invalid_field, path_of(key) + " must be an object, not " + type_name(*v), path_of(key)));
    return nullptr;
  }
  return v;
}

const nlohmann::json* ObjectReader::required_array(std::string_view key, std::size_t min_items, std::size_t max_items) {
  const auto* v = lookup(key, true);
  if (!v) return nullptr;
  if (!v->is_array()) {
    fail(Error::make(ErrorCode::invalid_field, path_of(key) + " must be an array, not " + type_name(*v), path_of(key)));
    return nullptr;
  }
  if (v->size() < min_items || v->size() > max_items) {
    fail(Error::make(ErrorCode::invalid_field,
                     path_of(key) + " must have between " + std::to_string(min_items) + " and " +
                         std::to_string(max_items) + " items",
                     path_of(key)));
    return nullptr;
  }
  return v;
}

Status ObjectReader::finish() {
  if (error_) return *error_;
  for (const auto& [k, v] : obj_.items()) {
    if (!seen_.contains(k)) {
      return Error::make(ErrorCode::unknown_field, path_of(k) + " is not a field this endpoint takes", path_of(k));
    }
  }
  return ok_status();
}

}  // namespace gpunex::core
