#include "core/json_reader.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <utility>

#include "core/text.hpp"

namespace gpunex::core {

namespace {

constexpr int kMaxDepth = 32;

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

namespace {

//! Builds the body's DOM from nlohmann's SAX events (as its own DOM parser does), checking as it goes:
//! - depth: a deeply nested body is stopped at level 32, before it can exhaust anything;
//! - keys given twice: nlohmann keeps the last of two equal keys, and a proxy or another reader may keep
//!   the first, so such a body means two things and is refused;
//! - a NUL in a string: no store text can hold it (PostgreSQL's libpq cuts the value there, so
//!   "id\0junk" would match "id"), and no field means it; refused naming the key it came under.
//! The first problem of each kind is kept and parsing goes on (a deeper one found later outranks a
//! duplicate), except for depth, which stops it. A SAX handler of our own instead of parse()'s callback:
//! no std::function call and key set per event, which was most of a heartbeat's parse.
class CheckedDomBuilder {
 public:
  using json = nlohmann::json;
  bool deep = false;
  std::optional<std::string> duplicate;
  std::optional<std::string> nul;
  bool syntax_error = false;
  json root;

  bool null() { return put(nullptr); }
  bool boolean(bool v) { return put(v); }
  bool number_integer(json::number_integer_t v) { return put(v); }
  bool number_unsigned(json::number_unsigned_t v) { return put(v); }
  bool number_float(json::number_float_t v, const json::string_t& /*text*/) { return put(v); }
  bool string(json::string_t& v) {
    if (!nul && v.find('\0') != std::string::npos) nul = last_key_;
    return put(std::move(v));
  }
  bool binary(json::binary_t& /*v*/) { return false; }  // JSON text has none
  bool start_object(std::size_t /*elements*/) {
    if (!open(json::object())) return false;
    under_.push_back(last_key_);
    return true;
  }
  bool key(json::string_t& k) {
    // A key with a NUL is named by the object it is in (env: {"A\0B": …} names "env").
    if (!nul && k.find('\0') != std::string::npos) {
      nul = !under_.back().empty() ? under_.back() : k.substr(0, k.find('\0'));
    }
    // One lookup: the key's place, new or (given twice) the earlier one, which the later value replaces.
    auto [it, added] = stack_.back()->get_ref<json::object_t&>().try_emplace(std::move(k));
    if (!added && !duplicate) duplicate = it->first;
    element_ = &it->second;
    last_key_ = it->first;
    return true;
  }
  bool end_object() {
    stack_.pop_back();
    under_.pop_back();
    return true;
  }
  bool start_array(std::size_t /*elements*/) { return open(json::array()); }
  bool end_array() {
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t /*position*/, const std::string& /*token*/, const json::exception& /*e*/) {
    syntax_error = true;
    return false;
  }

 private:
  //! Places a value where the parser is: the root, the open array's end, or the key just read.
  template <class V>
  json* place(V&& v) {
    if (stack_.empty()) {
      root = json(std::forward<V>(v));
      return &root;
    }
    json& parent = *stack_.back();
    if (parent.is_array()) {
      parent.emplace_back(std::forward<V>(v));
      return &parent.back();
    }
    *element_ = json(std::forward<V>(v));
    return element_;
  }
  template <class V>
  bool put(V&& v) {
    place(std::forward<V>(v));
    return true;
  }
  bool open(json container) {
    if (stack_.size() >= static_cast<std::size_t>(kMaxDepth)) {
      deep = true;
      return false;
    }
    stack_.push_back(place(std::move(container)));
    return true;
  }

  std::vector<json*> stack_;        // the open objects and arrays, innermost last
  std::vector<std::string> under_;  // the key each open object was given under ("" for the body)
  json* element_ = nullptr;         // where the open object's next value goes
  std::string last_key_;
};

}  // namespace

Result<nlohmann::json> parse_json_object(std::string_view body) {
  CheckedDomBuilder b;
  nlohmann::json::sax_parse(body.begin(), body.end(), &b, nlohmann::json::input_format_t::json, /*strict=*/true,
                            /*ignore_comments=*/false);
  if (b.deep) return Error::make(ErrorCode::invalid_json, "request body nests deeper than 32 levels");
  if (b.duplicate) {
    return Error::make(ErrorCode::duplicate_field,
                       "Field \"" + *b.duplicate + "\" is given twice in one object; give it once", *b.duplicate);
  }
  if (b.nul) return Error::make(ErrorCode::invalid_field, "Field \"" + *b.nul + "\" holds a NUL character", *b.nul);
  if (b.syntax_error) return Error::make(ErrorCode::invalid_json, "request body is not valid JSON");
  if (!b.root.is_object()) return Error::make(ErrorCode::invalid_json, "request body must be a JSON object");
  return std::move(b.root);
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
    return;
  }
  seen_.reserve(obj_.size());
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

void ObjectReader::describe_when(std::string_view condition) {
  if (describing()) condition_ = condition;
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
  if (!obj_.is_object()) return nullptr;
  auto it = obj_.find(key);
  if (it != obj_.end()) seen_.push_back(&*it);
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
    for (auto it = obj_.begin(); it != obj_.end(); ++it) {
      if (std::find(seen_.begin(), seen_.end(), &*it) != seen_.end()) continue;
      const std::string& k = it.key();
      fail(Error::make(ErrorCode::unknown_field,
                       "Unknown field \"" + path_of(k) + "\": this request does not take it", path_of(k)));
    }
  }
  return errors_.status();
}

}  // namespace gpunex::core
