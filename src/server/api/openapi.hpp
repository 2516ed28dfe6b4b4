#pragma once
// The API document, OpenAPI 3.1, served at GET /v1/openapi.json: built from the App's route table
// (path, method, who may call it, from each route's RouteOptions) and the RouteDoc written beside each
// route (summary, query parameters, the request body's JSON Schema, the success answers' JSON Schemas),
// so it lists exactly the routes the server answers. A request body's schema comes from the route's own
// parser (body_of), so it says what the validators check. The small schema builders below are for those
// RouteDocs; an object several answers share is a component (`component` once, `ref` elsewhere).

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/json_reader.hpp"
#include "server/platform/request_pipeline.hpp"

namespace gpunex::server::openapi {

//! A string of `min`..`max` characters (max 0: no upper bound).
nlohmann::json text(int min = 0, int max = 0);
//! One of these strings.
nlohmann::json one_of(std::initializer_list<const char*> values);
//! USDC as a decimal string with up to 6 decimals ("1.850000").
nlohmann::json money();
nlohmann::json integer(long long min, long long max);
nlohmann::json number();
nlohmann::json boolean();
nlohmann::json array(nlohmann::json items, int max_items = 0);
//! An object of these members, `required` among them; no other member (the API refuses unknown fields).
nlohmann::json object(std::vector<std::pair<std::string, nlohmann::json>> members,
                      std::vector<std::string> required);
//! Any JSON object (its members checked by the handler, not described here). For an answer, or a
//! request body no ObjectReader reads (say why beside it).
nlohmann::json any_object();
//! A request body's schema: `parse` (the route's parser, called with the body) run once describing
//! (core::describe_body), so the schema is what its ObjectReaders check. Called when the route is
//! registered, never per request.
template <class Parse>
nlohmann::json body_of(Parse parse) {
  return core::describe_body([&](const nlohmann::json& body) { (void)parse(body); });
}
//! The JSON Merge Patch (RFC 7396) of a body `schema` describes: any of its members, null to remove one,
//! each nested object patched the same way; a list is replaced whole, so its items keep their schema.
nlohmann::json merge_patch_of(const nlohmann::json& schema);
//! `schema` or null.
nlohmann::json nullable(nlohmann::json schema);
//! An answer's object: these members, `required` among them; others may appear (an answer may grow a
//! field without breaking a client), unlike `object`, which is for request bodies.
nlohmann::json record(std::vector<std::pair<std::string, nlohmann::json>> members,
                      std::vector<std::string> required);
//! Like `record`, and no other member: for answers whose every member is listed here.
nlohmann::json closed_record(std::vector<std::pair<std::string, nlohmann::json>> members,
                             std::vector<std::string> required);
//! Every one of these schemas at once (a shared object with members of its own added).
nlohmann::json all_of(std::vector<nlohmann::json> schemas);
//! An RFC 3339 UTC time ("2027-01-08T10:00:00Z").
nlohmann::json timestamp();
//! One page of a list: {items: [item...], next_cursor: string or null}.
nlohmann::json page(nlohmann::json item);
//! A schema shared by several answers, kept under components/schemas/`name`: registered at its first
//! call (a second call must pass the same schema), answered as a $ref to it.
nlohmann::json component(const std::string& name, nlohmann::json schema);
//! A $ref to the component `name` (registered by `component`, or the built-in "Error"); the document
//! refuses to build while a ref names no component.
nlohmann::json ref(const std::string& name);

//! The OpenAPI 3.1 document of every route in `app` not marked internal.
nlohmann::json document(const App& app);

}  // namespace gpunex::server::openapi
