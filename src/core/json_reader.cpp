#include "core/json_reader.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <utility>

#include "core/text.hpp"

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

//! The schema a describe_body() run builds, and the stand-ins its readers were given for nested objects
//! and list items, each tied to the schema node a reader made on it writes into.
class SchemaDescriber {
 public:
  nlohmann::json schema = nlohmann::json::object();

  //! A stand-in object, or a list of one stand-in object (its items), described at `node`.
  const nlohmann::json* stand_in(bool list, nlohmann::json* node) {
    if (!list) {
      stand_ins_.push_back(nlohmann::json::object());
      nodes_[&stand_ins_.back()] = node;
      return &stand_ins_.back();
    }
    stand_ins_.push_back(nlohmann::json::array({nlohmann::json::object()}));
    auto& items = (*node)["items"];
    if (items.is_null()) items = nlohmann::json::object();
    nodes_[&stand_ins_.back()[0]] = &items;
    return &stand_ins_.back();
  }
  nlohmann::json* node_of(const nlohmann::json* j) const {
    auto it = nodes_.find(j);
    return it == nodes_.end() ? nullptr : it->second;
  }

 private:
  std::deque<nlohmann::json> stand_ins_;  // a deque: their addresses are the keys of nodes_
  std::map<const nlohmann::json*, nlohmann::json*> nodes_;
};

namespace {

thread_local SchemaDescriber* t_describer = nullptr;

//! An optional field reads null as absent, so its schema admits null.
void admit_null(nlohmann::json& schema) {
  if (!schema.is_object()) return;
  if (auto props = schema.find("properties"); props != schema.end() && props->is_object()) {
    const auto required = schema.value("required", nlohmann::json::array());
    for (auto& [key, field] : props->items()) {
      admit_null(field);
      if (std::find(required.begin(), required.end(), key) != required.end()) continue;
      if (auto e = field.find("enum"); e != field.end()) e->push_back(nullptr);
      if (auto t = field.find("type"); t != field.end() && t->is_string()) *t = {t->get<std::string>(), "null"};
    }
  }
  if (auto items = schema.find("items"); items != schema.end()) admit_null(*items);
  if (auto any = schema.find("anyOf"); any != schema.end()) {
    for (auto& alternative : *any) admit_null(alternative);
  }
}

void add_note(nlohmann::json& field, std::string_view note) {
  std::string d = field.value("description", std::string());
  if (d.find(note) != std::string::npos) return;
  field["description"] = d.empty() ? std::string(note) : d + " " + std::string(note);
}

}  // namespace

nlohmann::json describe_body(const std::function<void(const nlohmann::json&)>& parse) {
  SchemaDescriber d;
  const nlohmann::json& body = *d.stand_in(false, &d.schema);
  struct Active {
    SchemaDescriber* outer;
    ~Active() { t_describer = outer; }
  } active{std::exchange(t_describer, &d)};
  parse(body);
  admit_null(d.schema);
  if (d.schema.empty()) d.schema = {{"type", "object"}};  // no reader was made on the body
  return std::move(d.schema);
}

Result<nlohmann::json> parse_json_object(std::string_view body) {
  // Depth is checked by a callback while parsing, so a deeply nested body cannot exhaust the stack.
  // Keys are checked there too: nlohmann keeps the last of two equal keys, and a proxy or another reader
  // may keep the first, so a body with a key given twice means two things and is refused.
  using Event = nlohmann::json::parse_event_t;
  bool deep = false;
  std::optional<std::string> duplicate;
  // A NUL in a string: no store text can hold it (PostgreSQL's libpq cuts the value there, so
  // "id\0junk" would match "id"), and no field means it; refused naming the key it came under.
  std::optional<std::string> nul;
  std::string last_key;
  std::vector<std::string> under;  // the key each open object was given under ("" for the body)
  std::vector<std::set<std::string, std::less<>>> keys;  // the keys of each object being parsed
  auto cb = [&](int d, Event ev, nlohmann::json& parsed) {
    if (ev == Event::object_start || ev == Event::array_start) {
      if (d >= kMaxDepth) deep = true;
      if (ev == Event::object_start) {
        keys.emplace_back();
        under.push_back(last_key);
      }
    } else if (ev == Event::object_end) {
      if (!keys.empty()) keys.pop_back();
      if (!under.empty()) under.pop_back();
    } else if (ev == Event::key && !keys.empty() && parsed.is_string()) {
      last_key = parsed.get<std::string>();
      // A key with a NUL is named by the object it is in (env: {"A\0B": …} names "env").
      if (last_key.find('\0') != std::string::npos && !nul) {
        nul = !under.empty() && !under.back().empty() ? under.back() : last_key.substr(0, last_key.find('\0'));
      }
      if (!keys.back().insert(last_key).second && !duplicate) duplicate = last_key;
    } else if (ev == Event::value && parsed.is_string() && !nul &&
               parsed.get_ref<const std::string&>().find('\0') != std::string::npos) {
      nul = last_key;
    }
    return !deep && !duplicate && !nul;
  };
  nlohmann::json j = nlohmann::json::parse(body, cb, /*allow_exceptions=*/false);
  if (deep) return Error::make(ErrorCode::invalid_json, "request body nests deeper than 32 levels");
  if (duplicate) {
    return Error::make(ErrorCode::duplicate_field,
                       "Field \"" + *duplicate + "\" is given twice in one object; give it once", *duplicate);
  }
  if (nul) return Error::make(ErrorCode::invalid_field, "Field \"" + *nul + "\" holds a NUL character", *nul);
  if (j.is_discarded()) return Error::make(ErrorCode::invalid_json, "request body is not valid JSON");
  if (!j.is_object()) return Error::make(ErrorCode::invalid_json, "request body must be a JSON object");
  if (too_deep(j, 0)) return Error::make(ErrorCode::invalid_json, "request body nests deeper than 32 levels");
  return j;
}

ObjectReader::ObjectReader(const nlohmann::json& obj, std::string path, std::string context, FieldLabels labels)
    : obj_(obj), path_(std::move(path)), context_(std::move(context)), labels_(std::move(labels)) {
  if (context_.empty()) context_ = path_;
  if (t_describer != nullptr) {
    if (auto* node = t_describer->node_of(&obj_); node != nullptr) {
      describer_ = t_describer;
      schema_ = node;
      (*node)["type"] = "object";
      if (!node->contains("properties")) (*node)["properties"] = nlohmann::json::object();
      (*node)["additionalProperties"] = false;
      return;
    }
  }
  if (!obj_.is_object()) {
    const std::string what = path_.empty() ? std::string("The request body") : context_;
    fail(Error::make(ErrorCode::invalid_field, what + " must be a JSON object, not " + type_name(obj_),
                     path_.empty() ? std::nullopt : std::optional<std::string>(path_)));
  }
}

std::string ObjectReader::path_of(std::string_view key) const {
  if (path_.empty()) return std::string(key);
  return path_ + "." + std::string(key);
}

const FieldLabel* ObjectReader::label_of(std::string_view key) const {
  auto it = labels_.find(key);
  return it == labels_.end() ? nullptr : &it->second;
}

std::string ObjectReader::name_of(std::string_view key) const {
  if (const auto* l = label_of(key)) return sentence(l->name);
  std::string name(key);
  std::replace(name.begin(), name.end(), '_', ' ');
  return sentence(name);
}

std::string ObjectReader::sentence(std::string_view text) const {
  if (context_.empty()) return capitalize(text);
  return context_ + ": " + std::string(text);
}

std::string ObjectReader::nested_context(std::string_view name) const {
  if (context_.empty()) return capitalize(name);
  return context_ + ", " + std::string(name);
}

void ObjectReader::fail(Error e) {
  if (describing()) return;  // a stand-in's defaults are not errors
  errors_.add(std::move(e));
}

nlohmann::json& ObjectReader::describe(std::string_view key, bool required) {
  seen_.emplace(key);
  auto& field = (*schema_)["properties"][std::string(key)];
  if (field.is_null()) field = nlohmann::json::object();
  if (required && !condition_.empty()) {
    add_note(field, "Required when " + condition_ + ".");
  } else if (required) {
    auto& list = (*schema_)["required"];
    if (!list.is_array()) list = nlohmann::json::array();
    if (std::find(list.begin(), list.end(), key) == list.end()) list.push_back(std::string(key));
  }
  return field;
}

void ObjectReader::describe_field(std::string_view key, const nlohmann::json& schema) {
  if (!describing()) return;
  auto& field = (*schema_)["properties"][std::string(key)];
  if (field.is_null()) field = nlohmann::json::object();
  for (const auto& [k, v] : schema.items()) {
    if (k == "description" && v.is_string()) {
      add_note(field, v.get<std::string>());
    } else if (k == "items" && field.contains("items") && field["items"].is_object() && v.is_object()) {
      field["items"].update(v);
    } else {
      field[k] = v;
    }
  }
}

void ObjectReader::describe_alternative(std::string_view key, const nlohmann::json& schema) {
  if (!describing()) return;
  auto& field = (*schema_)["properties"][std::string(key)];
  nlohmann::json own = field.is_null() ? nlohmann::json::object() : std::move(field);
  field = {{"anyOf", {schema, std::move(own)}}};
}

void ObjectReader::describe_when(std::string condition) {
  if (describing()) condition_ = std::move(condition);
}

void ObjectReader::fail_at(ErrorCode code, std::string_view key, std::string_view what) {
  fail(Error::make(code, name_of(key) + " " + std::string(what), path_of(key)));
}

void ObjectReader::invalid(std::string_view key, std::string_view what, std::string detail_code) {
  Error e = Error::make(ErrorCode::invalid_field, name_of(key) + " " + std::string(what), path_of(key));
  if (!detail_code.empty()) e.detail_code = std::move(detail_code);
  fail(std::move(e));
}

const nlohmann::json* ObjectReader::lookup(std::string_view key, bool required) {
  seen_.emplace(key);
  if (!obj_.is_object()) return nullptr;
  auto it = obj_.find(std::string(key));
  if (it == obj_.end() || it->is_null()) {
    if (required) fail_at(ErrorCode::missing_field, key, "is required");
    return nullptr;
  }
  return &*it;
}

// Described as any value: a caller that checks it by hand says more with describe_field.
const nlohmann::json* ObjectReader::required_value(std::string_view key, Shape shape) {
  if (describing()) return describe_value(key, true, shape);
  return lookup(key, true);
}

const nlohmann::json* ObjectReader::optional_value(std::string_view key, Shape shape) {
  if (describing()) return describe_value(key, false, shape);
  return lookup(key, false);
}

const nlohmann::json* ObjectReader::describe_value(std::string_view key, bool required, Shape shape) {
  auto& f = describe(key, required);
  if (shape == Shape::any) return nullptr;
  f["type"] = shape == Shape::object ? "object" : "array";
  return describer_->stand_in(shape == Shape::list, &f);
}

namespace {
std::string unit_suffix(const FieldLabel* l) { return l && !l->unit.empty() ? " " + l->unit : std::string(); }
}  // namespace

std::string ObjectReader::required_string(std::string_view key, std::size_t min_len, std::size_t max_len) {
  if (describing()) {
    auto& f = describe(key, true);
    f.update({{"type", "string"}, {"maxLength", max_len}});
    if (min_len > 0) f["minLength"] = min_len;
    return {};
  }
  const auto* v = lookup(key, true);
  if (!v) return {};
  if (!v->is_string()) {
    fail_at(ErrorCode::invalid_field, key, "must be text, not " + type_name(*v));
    return {};
  }
  const auto& s = v->get_ref<const std::string&>();
  if (s.size() < min_len) {
    fail_at(ErrorCode::invalid_field, key,
            min_len == 1 ? std::string("is required")
                         : "must be at least " + format_number(static_cast<double>(min_len)) + " characters");
    return {};
  }
  if (s.size() > max_len) {
    fail_at(ErrorCode::invalid_field, key,
            "must be at most " + format_number(static_cast<double>(max_len)) + " characters");
    return {};
  }
  return s;
}

std::optional<std::string> ObjectReader::optional_string(std::string_view key, std::size_t max_len) {
  if (describing()) {
    describe(key, false).update({{"type", "string"}, {"maxLength", max_len}});
    return std::nullopt;
  }
  const auto* v = lookup(key, false);
  if (!v) return std::nullopt;
  if (!v->is_string()) {
    fail_at(ErrorCode::invalid_field, key, "must be text, not " + type_name(*v));
    return std::nullopt;
  }
  const auto& s = v->get_ref<const std::string&>();
  if (s.size() > max_len) {
    fail_at(ErrorCode::invalid_field, key,
            "must be at most " + format_number(static_cast<double>(max_len)) + " characters");
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
    fail_at(ErrorCode::invalid_field, key, "must be a whole number");
    return std::nullopt;
  }
  if (*i < min || *i > max) {
    fail_at(ErrorCode::invalid_field, key,
            "must be between " + format_number(static_cast<double>(min)) + " and " +
                format_number(static_cast<double>(max)) + unit_suffix(label_of(key)));
    return std::nullopt;
  }
  return i;
}

std::optional<std::int64_t> ObjectReader::optional_int(std::string_view key, std::int64_t min, std::int64_t max) {
  if (describing()) {
    describe(key, false).update({{"type", "integer"}, {"minimum", min}, {"maximum", max}});
    return std::nullopt;
  }
  const auto* v = lookup(key, false);
  if (!v) return std::nullopt;
  return check_int(key, *v, min, max);
}

std::int64_t ObjectReader::required_int(std::string_view key, std::int64_t min, std::int64_t max) {
  if (describing()) {
    describe(key, true).update({{"type", "integer"}, {"minimum", min}, {"maximum", max}});
    return min;
  }
  const auto* v = lookup(key, true);
  if (!v) return min;
  return check_int(key, *v, min, max).value_or(min);
}

double ObjectReader::required_number(std::string_view key, double min, double max) {
  if (describing()) {
    describe(key, true).update({{"type", "number"}, {"minimum", min}, {"maximum", max}});
    return min;
  }
  const auto* v = lookup(key, true);
  if (!v) return min;
  if (!v->is_number()) {
    fail_at(ErrorCode::invalid_field, key, "must be a number, not " + type_name(*v));
    return min;
  }
  double d = v->get<double>();
  if (!std::isfinite(d) || d < min || d > max) {
    fail_at(ErrorCode::invalid_field, key,
            "must be between " + format_number(min) + " and " + format_number(max) + unit_suffix(label_of(key)));
    return min;
  }
  return d;
}

std::optional<bool> ObjectReader::optional_bool(std::string_view key) {
  if (describing()) {
    describe(key, false)["type"] = "boolean";
    return std::nullopt;
  }
  const auto* v = lookup(key, false);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) {
    fail_at(ErrorCode::invalid_field, key, "must be true or false");
    return std::nullopt;
  }
  return v->get<bool>();
}

bool ObjectReader::required_bool(std::string_view key) {
  if (describing()) {
    describe(key, true)["type"] = "boolean";
    return false;
  }
  const auto* v = lookup(key, true);
  if (!v) return false;
  if (!v->is_boolean()) {
    fail_at(ErrorCode::invalid_field, key, "must be true or false");
    return false;
  }
  return v->get<bool>();
}

const nlohmann::json* ObjectReader::required_object(std::string_view key) {
  if (describing()) {
    auto& f = describe(key, true);
    f["type"] = "object";
    return describer_->stand_in(false, &f);
  }
  const auto* v = lookup(key, true);
  if (!v) return nullptr;
  if (!v->is_object()) {
    fail_at(ErrorCode::invalid_field, key, "must be a JSON object, not " + type_name(*v));
    return nullptr;
  }
  return v;
}

const nlohmann::json* ObjectReader::required_array(std::string_view key, std::size_t min_items, std::size_t max_items) {
  if (describing()) {
    auto& f = describe(key, true);
    f.update({{"type", "array"}, {"minItems", min_items}, {"maxItems", max_items}});
    return describer_->stand_in(true, &f);
  }
  const auto* v = lookup(key, true);
  if (!v) return nullptr;
  if (!v->is_array()) {
    fail_at(ErrorCode::invalid_field, key, "must be a list, not " + type_name(*v));
    return nullptr;
  }
  if (v->size() < min_items) {
    fail_at(ErrorCode::invalid_field, key,
            "needs at least " + format_number(static_cast<double>(min_items)) + (min_items == 1 ? " entry" : " entries"));
    return nullptr;
  }
  if (v->size() > max_items) {
    fail_at(ErrorCode::invalid_field, key,
            "can have at most " + format_number(static_cast<double>(max_items)) + (max_items == 1 ? " entry" : " entries"));
    return nullptr;
  }
  return v;
}

namespace {
constexpr std::string_view kLineNote = "One line: no control characters or bidirectional overrides.";
constexpr std::string_view kTextNote =
    "Plain text: no control characters but tab and newline, no bidirectional overrides.";
}  // namespace

std::string ObjectReader::required_line(std::string_view key, std::size_t min_len, std::size_t max_len) {
  std::string v = required_string(key, min_len, max_len);
  if (describing()) add_note(describe(key, true), kLineNote);
  if (!failed(key) && !is_single_line_text(v)) refuse_unclean(key);
  return v;
}

std::optional<std::string> ObjectReader::optional_line(std::string_view key, std::size_t max_len) {
  auto v = optional_string(key, max_len);
  if (describing()) add_note(describe(key, false), kLineNote);
  if (v && !failed(key) && !is_single_line_text(*v)) refuse_unclean(key);
  return v;
}

std::optional<std::string> ObjectReader::optional_text(std::string_view key, std::size_t max_len) {
  auto v = optional_string(key, max_len);
  if (describing()) add_note(describe(key, false), kTextNote);
  if (v && !failed(key) && !is_clean_utf8(*v)) refuse_unclean(key);
  return v;
}

void ObjectReader::refuse_unclean(std::string_view key) {
  invalid(key, "must be plain text, without control characters or bidirectional overrides");
}

Status ObjectReader::finish() {
  // Code after a finish() relies on a clean read, which a stand-in is not: it is not run.
  if (describing()) return Error::make(ErrorCode::bad_request, "a body was described, not read");
  if (obj_.is_object()) {
    for (const auto& [k, v] : obj_.items()) {
      if (seen_.contains(k)) continue;
      fail(Error::make(ErrorCode::unknown_field,
                       "Unknown field \"" + path_of(k) + "\": this request does not take it", path_of(k)));
    }
  }
  return errors_.status();
}

}  // namespace gpunex::core
