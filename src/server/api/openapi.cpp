#include "server/api/openapi.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string_view>

#include "server/api/routes.hpp"

namespace gpunex::server {

namespace openapi {

using nlohmann::json;

json text(int min, int max) {
  json s = {{"type", "string"}};
  if (min > 0) s["minLength"] = min;
  if (max > 0) s["maxLength"] = max;
  return s;
}

json one_of(std::initializer_list<const char*> values) {
  json e = json::array();
  for (const char* v : values) e.push_back(v);
  return {{"type", "string"}, {"enum", e}};
}

json money() { return {{"type", "string"}, {"pattern", "^[0-9]+(\\.[0-9]{1,6})?$"}, {"examples", {"1.850000"}}}; }

json integer(long long min, long long max) { return {{"type", "integer"}, {"minimum", min}, {"maximum", max}}; }

json number() { return {{"type", "number"}}; }

json boolean() { return {{"type", "boolean"}}; }

json array(json items, int max_items) {
  json a = {{"type", "array"}, {"items", std::move(items)}};
  if (max_items > 0) a["maxItems"] = max_items;
  return a;
}

json object(std::vector<std::pair<std::string, json>> members, std::vector<std::string> required) {
  json props = json::object();
  for (auto& [name, schema] : members) props[name] = std::move(schema);
  json o = {{"type", "object"}, {"properties", std::move(props)}, {"additionalProperties", false}};
  if (!required.empty()) o["required"] = std::move(required);
  return o;
}

json any_object() { return {{"type", "object"}}; }

json merge_patch_of(const json& schema) {
  if (!schema.is_object() || !schema.contains("properties")) return schema;
  json patch = schema;
  patch.erase("required");
  for (auto& [key, member] : patch["properties"].items()) {
    json inner = merge_patch_of(member);
    // null removes the member; a schema that admits null already says so.
    if (auto t = inner.find("type"); t != inner.end() && t->is_string()) {
      *t = {t->get<std::string>(), "null"};
    } else if (t == inner.end() || !t->is_array()) {
      inner = {{"anyOf", {std::move(inner), {{"type", "null"}}}}};
    }
    if (auto e = inner.find("enum"); e != inner.end() && std::find(e->begin(), e->end(), nullptr) == e->end()) {
      e->push_back(nullptr);
    }
    member = std::move(inner);
  }
  return patch;
}

json nullable(json schema) { return {{"oneOf", {std::move(schema), {{"type", "null"}}}}}; }

json record(std::vector<std::pair<std::string, json>> members, std::vector<std::string> required) {
  json o = object(std::move(members), std::move(required));
  o.erase("additionalProperties");
  return o;
}

json closed_record(std::vector<std::pair<std::string, json>> members, std::vector<std::string> required) {
  return object(std::move(members), std::move(required));
}

json all_of(std::vector<json> schemas) { return {{"allOf", std::move(schemas)}}; }

json timestamp() { return {{"type", "string"}, {"format", "date-time"}}; }

json page(json item) {
  return record({{"items", array(std::move(item))}, {"next_cursor", {{"type", {"string", "null"}}}}},
                {"items", "next_cursor"});
}

namespace {

struct Components {
  std::mutex mu;
  std::map<std::string, json> schemas;
};

Components& shared_components() {
  static Components c;
  return c;
}

}  // namespace

json component(const std::string& name, json schema) {
  auto& c = shared_components();
  std::lock_guard lock(c.mu);
  auto [it, added] = c.schemas.emplace(name, schema);
  if (!added && it->second != schema) throw std::logic_error("component schema " + name + " registered twice, differently");
  return ref(name);
}

json ref(const std::string& name) { return {{"$ref", "#/components/schemas/" + name}}; }

namespace {

std::string status_text(int status) {
  switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    default: return "success";
  }
}

//! Every "$ref" in `j` names something in `doc` (a component registered by no route would otherwise
//! surface only in a client).
void check_refs(const json& j, const json& doc) {
  if (j.is_object()) {
    if (auto it = j.find("$ref"); it != j.end() && it->is_string()) {
      const auto target = it->get<std::string>();
      if (target.rfind("#/", 0) != 0 || !doc.contains(json::json_pointer(target.substr(1)))) {
        throw std::logic_error("the API document refers to " + target + ", which it does not have");
      }
    }
    for (const auto& [k, v] : j.items()) check_refs(v, doc);
  } else if (j.is_array()) {
    for (const auto& v : j) check_refs(v, doc);
  }
}

bool is_param(std::string_view segment) {
  return segment.size() > 2 && segment.front() == '{' && segment.back() == '}';
}

std::vector<std::string> segments_of(const std::string& pattern) {
  std::vector<std::string> out;
  std::size_t start = 1;
  while (start <= pattern.size()) {
    const auto end = pattern.find('/', start);
    const auto seg = pattern.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!seg.empty()) out.push_back(seg);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

//! "/v1/provider/machines/{id}" -> "provider"; routes outside /v1 -> "system".
std::string tag_of(const std::string& pattern) {
  const auto segs = segments_of(pattern);
  if (segs.size() >= 2 && segs[0] == "v1") return segs[1];
  if (!segs.empty() && segs[0] == "agent") return "agent";
  return "system";
}

std::string operation_id(http::Method method, const std::string& pattern) {
  std::string id(http::method_name(method));
  for (auto& c : id) c = static_cast<char>(c - 'A' + 'a');
  for (const auto& seg : segments_of(pattern)) {
    id += '_';
    for (char c : seg) {
      if (c == '{' || c == '}') continue;
      id += (c == '-' || c == '.') ? '_' : c;
    }
  }
  return id;
}

bool is_mutation(http::Method m) {
  return m == http::Method::post || m == http::Method::put || m == http::Method::patch || m == http::Method::del;
}

json security_of(const RouteOptions& o) {
  if (o.access == Access::anyone) return json::array();  // none needed
  if (o.api_key_only) return json::array({{{"api_key", json::array()}}});
  json s = json::array({{{"session_cookie", json::array()}}, {{"session_token", json::array()}}});
  if (o.allow_api_key) s.push_back({{"api_key", json::array()}});
  return s;
}

std::string who_of(const RouteOptions& o) {
  if (o.access == Access::anyone) return "Anyone; no authentication needed.";
  if (o.api_key_only) return "The agent: a provider API key (Bearer gpx_...) only.";
  std::string who = o.roles.empty() ? "Any signed-in account" : "An account with the role";
  for (std::size_t i = 0; i < o.roles.size(); ++i) who += (i ? " or " : " ") + o.roles[i];
  if (!o.roles.empty() && o.roles != std::vector<std::string>{"admin"}) who += " (admins pass every role check)";
  who += o.allow_api_key ? "; a provider API key (Bearer gpx_...) is accepted too." : "; a session only (no API key).";
  return who;
}

json operation(const RouteInfo& r) {
  const auto& o = r.options;
  const auto& d = o.documentation;
  json op = {{"operationId", operation_id(r.method, r.pattern)},
             {"summary", d.summary},
             {"description", who_of(o)},
             {"tags", {tag_of(r.pattern)}},
             {"security", security_of(o)},
             {"x-gpunex-access", o.access == Access::anyone ? "anyone"
                                 : o.api_key_only             ? "agent-key"
                                 : o.roles.empty()            ? "signed-in"
                                                              : "role"}};
  if (!o.roles.empty()) op["x-gpunex-roles"] = o.roles;
  if (o.access != Access::anyone) op["x-gpunex-api-key"] = o.allow_api_key;

  json params = json::array();
  for (const auto& seg : segments_of(r.pattern)) {
    if (!is_param(seg)) continue;
    params.push_back({{"name", seg.substr(1, seg.size() - 2)},
                      {"in", "path"},
                      {"required", true},
                      {"schema", {{"type", "string"}}}});
  }
  for (const auto& q : d.query) {
    params.push_back({{"name", q}, {"in", "query"}, {"required", false}, {"schema", {{"type", "string"}}}});
  }
  if (is_mutation(r.method) && o.idempotent) {
    params.push_back({{"name", "Idempotency-Key"},
                      {"in", "header"},
                      {"required", false},
                      {"description", "a repeat with the same key answers the first answer again"},
                      {"schema", text(1, 255)}});
  }
  if (is_mutation(r.method) && o.access != Access::anyone) {
    params.push_back({{"name", "X-CSRF-Token"},
                      {"in", "header"},
                      {"required", false},
                      {"description", "required with the session cookie: the csrf_token login answered"},
                      {"schema", {{"type", "string"}}}});
  }
  if (!params.empty()) op["parameters"] = std::move(params);

  if (o.counted_body_limit) {
    op["requestBody"] = {{"required", false},
                         {"content", {{"application/octet-stream",
                                       {{"schema", {{"type", "string"}, {"contentMediaType", "application/octet-stream"}}}}}}}};
  } else if (!d.body.is_null()) {
    op["requestBody"] = {{"required", !d.body_optional}, {"content", {{"application/json", {{"schema", d.body}}}}}};
  }
  if (d.responses.empty()) {
    op["responses"] = {{"2XX", {{"description", "success"}}}, {"default", {{"$ref", "#/components/responses/Error"}}}};
    return op;
  }
  json responses = json::object();
  for (const auto& [status, schema] : d.responses) {
    json r = {{"description", status_text(status)}};
    if (!schema.is_null()) r["content"] = {{"application/json", {{"schema", schema}}}};
    // ?format=csv answers the same as CSV (the earnings).
    if (!schema.is_null() && std::find(d.query.begin(), d.query.end(), "format") != d.query.end()) {
      r["content"]["text/csv"] = {{"schema", {{"type", "string"}}}};
    }
    responses[std::to_string(status)] = std::move(r);
  }
  responses["4XX"] = {{"$ref", "#/components/responses/Error"}};
  responses["5XX"] = {{"$ref", "#/components/responses/Error"}};
  op["responses"] = std::move(responses);
  return op;
}

json components() {
  const json field_error = object({{"field", text()}, {"message", text()}, {"code", text()}}, {"field", "message"});
  json error_schema = {{"type", "object"},
                       {"required", {"error"}},
                       {"properties",
                        {{"error",
                          {{"type", "object"},
                           {"required", {"code", "message"}},
                           {"properties",
                            {{"code", {{"type", "string"}, {"pattern", "^[a-z0-9_]+$"}}},
                             {"message", {{"type", "string"}}},
                             {"field", {{"type", {"string", "null"}}}},
                             {"fields", array(field_error)},
                             {"details", {{"type", "object"}, {"additionalProperties", {{"type", "string"}}}}}}}}}}}};
  json schemas = {{"Error", std::move(error_schema)}};
  {
    auto& c = shared_components();
    std::lock_guard lock(c.mu);
    for (const auto& [name, schema] : c.schemas) schemas[name] = schema;
  }
  return {
      {"schemas", std::move(schemas)},
      {"responses",
       {{"Error",
         {{"description", "an error: 4xx for the caller's, 5xx for the server's"},
          {"content", {{"application/json", {{"schema", {{"$ref", "#/components/schemas/Error"}}}}}}}}}}},
      {"securitySchemes",
       {{"session_cookie",
         {{"type", "apiKey"},
          {"in", "cookie"},
          {"name", kSessionCookie},
          {"description", "the browser session login sets; changes also send the X-CSRF-Token header"}}},
        {"session_token",
         {{"type", "http"}, {"scheme", "bearer"}, {"description", "a session token from POST /v1/auth/login"}}},
        {"api_key",
         {{"type", "http"},
          {"scheme", "bearer"},
          {"bearerFormat", "gpx_..."},
          {"description", "a provider API key: for the agent and provider automation"}}}}}};
}

}  // namespace

json document(const App& app) {
  json paths = json::object();
  for (const auto& r : app.route_table()) {
    if (r.options.documentation.internal) continue;
    if (r.options.documentation.summary.empty()) {
      throw std::logic_error("route " + std::string(http::method_name(r.method)) + " " + r.pattern +
                             " has no summary for the API document");
    }
    std::string method(http::method_name(r.method));
    for (auto& c : method) c = static_cast<char>(c - 'A' + 'a');
    paths[r.pattern][method] = operation(r);
  }
  json doc = {{"openapi", "3.1.0"},
          {"jsonSchemaDialect", "https://spec.openapis.org/oas/3.1/dialect/base"},
          {"info",
           {{"title", "GPUnex API"},
            {"version", "1"},
            {"description",
             "The GPUnex control plane's REST API, generated from the server's route table. JSON in and out; errors "
             "are {\"error\": {code, message, field}}; lists take ?limit=&cursor= and answer {items, next_cursor}; "
             "money is a decimal string of USDC."}}},
          {"paths", std::move(paths)},
          {"components", components()}};
  check_refs(doc, doc);
  return doc;
}

}  // namespace openapi

void register_openapi_api(App& app) {
  // Built at the first request, once every route (the dashboard's too) is in the table.
  auto built = std::make_shared<std::pair<std::once_flag, std::string>>();
  app.route(http::Method::get, "/v1/openapi.json",
            RouteOptions::public_route().doc({.summary = "This API's OpenAPI 3.1 document",
                                              .responses = {{200, openapi::record({{"openapi", openapi::text(1)}, {"paths", openapi::any_object()}},
                                                                                  {"openapi", "paths"})}}}),
            [built](Ctx& ctx) {
              std::call_once(built->first, [&] { built->second = openapi::document(ctx.app).dump(); });
              http::Response resp;
              resp.body = built->second;
              return resp;
            });
}

}  // namespace gpunex::server
