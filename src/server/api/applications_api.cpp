// /v1/applications (the applicant) and /v1/review/applications (reviewers):
// draft, edit (PUT replaces the form, PATCH merges into it), submit, read, the
// review queue and decisions.

#include "core/json_reader.hpp"
#include "core/merge_patch.hpp"
#include "core/text.hpp"
#include "server/api/handlers.hpp"
#include "server/api/openapi.hpp"
#include "server/api/routes.hpp"
#include "server/platform/request_pipeline.hpp"
#include "server/onboarding/applications.hpp"
#include "server/platform/paging.hpp"
#include "store/store.hpp"

namespace gpunex::server {

using core::Error;
using core::ErrorCode;
using http::Method;
using http::Response;

namespace {

Error not_found() {
  return Error::make(ErrorCode::not_found, "no such application");
}

bool is_reviewer(const User& u) {
  return u.has_role(core::Role::reviewer) || u.has_role(core::Role::admin);
}

//! The application if the caller owns it (or, with `reviewers_too`, reviews); else 404, never 403.
core::Result<Application> visible_application(store::Tx& tx, const Ctx& ctx, bool reviewers_too) {
  auto app = load_application(tx, ctx.req.param("id"));
  if (!app) return not_found();
  const User& u = ctx.principal->user;
  if (app->user_id != u.id && !(reviewers_too && is_reviewer(u))) return not_found();
  return std::move(*app);
}

Response respond(const core::Result<nlohmann::json>& r, int status = 200) {
  if (!r) return Response::error(r.error());
  return Response::json(status, *r);
}

Response create(Ctx& ctx) {
  auto body = ctx.json_body();
  if (!body) return Response::error(body.error());
  auto r = ctx.store().transact([&](store::Tx& tx) -> core::Result<nlohmann::json> {
    auto form = read_form(tx, *body);
    if (!form) return std::move(form).error();
    auto app = create_application(tx, ctx.principal->user, *form, ctx.now_ms());
    if (!app) return std::move(app).error();
    return to_json(*app, ctx.now_ms());
  });
  return respond(r, 201);
}

//! How an edit's body meets the stored form: PUT sends the whole form, PATCH a JSON Merge Patch of it.
enum class EditMode { replace, merge_patch };

Response edit(Ctx& ctx, EditMode mode) {
  auto body = ctx.json_body();
  if (!body) return Response::error(body.error());
  auto r = ctx.store().transact([&](store::Tx& tx) -> core::Result<nlohmann::json> {
    auto app = visible_application(tx, ctx, false);
    if (!app) return std::move(app).error();
    // The state is checked before the body, so editing a submitted application is 409 whatever it sends.
    if (auto s = core::apply_action(app->status, core::ApplicationAction::edit); !s) return std::move(s).error();
    // A patch is validated as the whole form it makes, so its errors name the same paths as a PUT's.
    const nlohmann::json doc = mode == EditMode::merge_patch ? core::merge_patch(core::to_json(app->form), *body)
                                                            : *body;
    auto form = read_form(tx, doc);
    if (!form) return std::move(form).error();
    auto edited = edit_application(tx, std::move(*app), *form, ctx.now_ms());
    if (!edited) return std::move(edited).error();
    return to_json(*edited, ctx.now_ms());
  });
  return respond(r);
}

Response put_application(Ctx& ctx) { return edit(ctx, EditMode::replace); }
Response patch_application(Ctx& ctx) { return edit(ctx, EditMode::merge_patch); }

Response submit(Ctx& ctx) {
  auto r = ctx.store().transact([&](store::Tx& tx) -> core::Result<nlohmann::json> {
    auto app = visible_application(tx, ctx, false);
    if (!app) return std::move(app).error();
    auto done = submit_application(tx, std::move(*app), ctx.principal->user, ctx.config().base_url(), ctx.now_ms());
    if (!done) return std::move(done).error();
    return to_json(*done, ctx.now_ms());
  });
  return respond(r);
}

Response get_one(Ctx& ctx) {
  auto r = ctx.store().transact(
      [&](store::Tx& tx) -> core::Result<nlohmann::json> {
        auto app = visible_application(tx, ctx, true);
        if (!app) return std::move(app).error();
        return to_json(*app, ctx.now_ms());
      },
      store::TxMode::read);
  return respond(r);
}

Response list_mine(Ctx& ctx) {
  return list_response(ctx, [&](store::Tx& tx) {
    nlohmann::json items = nlohmann::json::array();
    for (const auto& a : list_user_applications(tx, ctx.principal->user.id))
      items.push_back(to_json(a, ctx.now_ms()));
    return items;
  });
}

Response queue(Ctx& ctx) {
  auto status_s =
      ctx.req.query_param("status").value_or(std::string(core::status_name(core::ApplicationStatus::submitted)));
  auto status = core::parse_status(status_s);
  if (!status) {
    return Response::error(ErrorCode::invalid_field,
                           "status must be one of draft, submitted, needs_info, approved, rejected", "status");
  }
  return list_response(ctx, [&](store::Tx& tx) {
    nlohmann::json items = nlohmann::json::array();
    const auto now = ctx.now_ms();
    for (const auto& a : review_queue(tx, *status)) items.push_back(queue_entry_json(a, now));
    return items;
  });
}

//! add_model of a decision: the catalog model to add, which "other" entries it is for
//! (add_model.model_other) and its reference price (add_model.reference_usdc_per_gpu_hour).
core::Status read_add_model(nlohmann::json model, Decision& d) {
  // add_model.model_other says which "other" entries the model is for; the rest describes the model.
  if (model.is_object() && model.contains("model_other")) {
    if (!model["model_other"].is_string()) {
      return Error::make(ErrorCode::invalid_field, "add_model.model_other must be a string", "add_model.model_other");
    }
    d.add_model_for = model["model_other"].get<std::string>();
    model.erase("model_other");
  }
  // add_model.reference_usdc_per_gpu_hour: the reviewer's reference price, a decimal string of
  // USDC like every rate; without it the model has no recommendation until providers list it.
  constexpr const char* kRefField = "add_model.reference_usdc_per_gpu_hour";
  if (model.is_object() && model.contains("reference_usdc_per_gpu_hour")) {
    const auto& raw = model["reference_usdc_per_gpu_hour"];
    if (!raw.is_string()) {
      return Error::make(ErrorCode::invalid_field, std::string(kRefField) + " must be a decimal string such as \"2.50\"",
                         kRefField)
          .with_code("invalid_amount");
    }
    auto rate = core::parse_rate(raw.get<std::string>());
    if (!rate) {
      Error e = std::move(rate).error();
      e.message = std::string(kRefField) + ": " + e.message;
      e.field = kRefField;
      return e;
    }
    d.add_model_reference_price = *rate;
    model.erase("reference_usdc_per_gpu_hour");
  }
  auto m = core::parse_gpu_model(model, "add_model");
  if (!m) return std::move(m).error();
  d.add_model = std::move(*m);
  return core::ok_status();
}

//! While describing: add_model's schema, as read_add_model and core::parse_gpu_model read it.
void describe_add_model(const nlohmann::json& stand_in) {
  core::ObjectReader m(stand_in, "add_model");
  m.describe_field("model_other", {{"type", "string"}});
  m.describe_field("reference_usdc_per_gpu_hour",
                   {{"type", "string"}, {"description", "A decimal USDC string such as \"2.50\"."}});
  (void)core::parse_gpu_model(stand_in, "add_model");
}

//! A reviewer's decision body: {decision, tier?, note?, add_model?}.
core::Result<Decision> read_decision(const nlohmann::json& body) {
  core::ObjectReader r(body);
  Decision d;
  const std::string decision = r.required_string("decision", 1, 20);
  r.describe_field("decision", {{"enum", {"approve", "reject", "needs_info"}}});  // parse_decision's
  auto tier = r.optional_string("tier", 20);
  r.describe_field("tier", {{"enum", {"community", "enterprise"}}, {"description", "Only with approve."}});
  auto note = r.optional_text("note", 4000);
  r.describe_field("note", {{"description", "Required unless the decision is approve."}});
  const auto* add_model = r.optional_value("add_model", core::ObjectReader::Shape::object);
  if (r.describing()) describe_add_model(*add_model);
  if (auto s = r.finish(); !s) return std::move(s).error();
  auto action = core::parse_decision(decision);
  if (!action) return Error::make(ErrorCode::invalid_field, "decision must be approve, reject or needs_info", "decision");
  d.action = *action;
  d.note = note ? core::trim(*note) : "";
  if (d.action != core::ApplicationAction::approve && d.note.empty()) {
    return Error::make(ErrorCode::missing_field, "note is required: tell the applicant why", "note");
  }
  if (tier) {
    if (d.action != core::ApplicationAction::approve) {
      return Error::make(ErrorCode::invalid_field, "tier is only for approve", "tier");
    }
    d.tier = core::parse_tier(*tier);
    if (!d.tier) return Error::make(ErrorCode::invalid_field, "tier must be community or enterprise", "tier");
  }
  if (add_model) {
    if (d.action != core::ApplicationAction::approve) {
      return Error::make(ErrorCode::invalid_field, "add_model is only for approve", "add_model");
    }
    if (auto s = read_add_model(*add_model, d); !s) return std::move(s).error();
  }
  return d;
}

Response decide(Ctx& ctx) {
  auto decision = ctx.read_body(read_decision);
  if (!decision) return Response::error(decision.error());
  const Decision& d = *decision;
  auto result = ctx.store().transact([&](store::Tx& tx) -> core::Result<DecisionResult> {
    auto app = load_application(tx, ctx.req.param("id"));
    if (!app) return not_found();
    if (app->user_id == ctx.principal->user.id) {
      return Error::make(ErrorCode::forbidden, "you cannot review your own application").with_code("own_application");
    }
    const auto& cfg = ctx.config();
    const DecisionSettings settings{cfg.base_url(), cfg.server_secret, cfg.mail_carries_secrets()};
    return decide_application(tx, std::move(*app), ctx.principal->user, d, settings, ctx.now_ms());
  });
  if (!result) return Response::error(result.error());
  nlohmann::json out = {{"application", to_json(result->app, ctx.now_ms())}};
  if (result->api_key) {
    // The key itself goes to the applicant only (the mail, one reveal on their application page):
    // the reviewer learns that it was issued, never its value.
    out["provider_id"] = *result->provider_id;
    out["api_key_id"] = *result->api_key_id;
    out["api_key_delivery"] = ctx.config().mail_carries_secrets()
                                  ? "e-mailed to the applicant and revealed once on their application page"
                                  : "revealed once on the applicant's application page (the mail carries a link)";
    out["tier"] = core::tier_name(*result->app.tier);
  }
  return Response::json(200, out);
}

}  // namespace

void register_applications_api(App& app) {
  namespace oa = openapi;
  // The form as core::parse_application_form reads it (a draft's is read the same way).
  const auto form_schema = oa::body_of([](const nlohmann::json& b) { return core::parse_application_form(b, {}); });
  const auto status = oa::one_of({"draft", "submitted", "needs_info", "approved", "rejected"});
  const auto tier = oa::one_of({"community", "enterprise"});
  const auto when = oa::nullable(oa::timestamp());
  const auto window = oa::closed_record({{"days", oa::array(oa::text(3, 3))}, {"start", oa::text(5, 5)}, {"end", oa::text(5, 5)}},
                                        {"days", "start", "end"});
  const auto gpu_entry = oa::closed_record(
      {{"model", oa::text(1)},
       {"model_other", oa::text()},
       {"count", oa::integer(core::kMinGpuCount, core::kMaxGpuCount)},
       {"system_ram_gb", oa::number()},
       {"download_gbps", oa::number()},
       {"upload_gbps", oa::number()},
       {"availability", {{"oneOf", {{{"const", "24/7"}},
                                    oa::closed_record({{"timezone", oa::text(1)}, {"windows", oa::array(window)}},
                                                      {"timezone", "windows"})}}}},
       {"location", oa::closed_record({{"city", oa::text()}, {"country", oa::text()}, {"region", oa::text()}},
                                      {"city", "country", "region"})}},
      {"model", "count", "system_ram_gb", "download_gbps", "upload_gbps", "availability", "location"});
  const auto application = oa::component(
      "Application",
      oa::closed_record(
          {{"id", oa::text(1)},
           {"user_id", oa::text(1)},
           {"full_name", oa::text()},
           {"email", oa::text()},
           {"company", oa::nullable(oa::text())},
           {"gpus", oa::array(gpu_entry)},
           {"ups", oa::boolean()},
           {"commitment_months", oa::integer(0, 1200)},
           {"maintenance_notes", oa::text()},
           {"status", status},
           {"editable", oa::boolean()},
           {"suggested_tier", tier},
           {"tier_reasons", oa::array(oa::closed_record(
                                {{"rule", oa::text(1)}, {"passed", oa::boolean()}, {"reason", oa::text()}},
                                {"rule", "passed", "reason"}))},
           {"tier", oa::nullable(tier)},
           {"created_at", oa::timestamp()},
           {"updated_at", oa::timestamp()},
           {"submitted_at", when},
           {"decided_at", when},
           {"expected_review_by", when},
           {"review_overdue", oa::boolean()},
           {"history", oa::array(oa::closed_record({{"at", oa::timestamp()},
                                                    {"by", oa::text()},
                                                    {"from", oa::nullable(status)},
                                                    {"to", status},
                                                    {"note", oa::text()}},
                                                   {"at", "by", "from", "to", "note"}))}},
          {"id", "user_id", "full_name", "email", "company", "gpus", "ups", "commitment_months", "maintenance_notes",
           "status", "editable", "suggested_tier", "tier_reasons", "tier", "created_at", "updated_at", "submitted_at",
           "decided_at", "expected_review_by", "review_overdue", "history"}));
  const auto queue_entry = oa::record(
      {{"id", oa::text(1)},
       {"user_id", oa::text(1)},
       {"status", status},
       {"full_name", oa::text()},
       {"email", oa::text()},
       {"company", oa::nullable(oa::text())},
       {"gpu_count", oa::integer(0, 1LL << 31)},
       {"models", oa::array(oa::text())},
       {"gpus", oa::array(oa::closed_record({{"model", oa::text()}, {"count", oa::integer(0, 1LL << 31)}}, {"model", "count"}))},
       {"gpus_text", oa::text()},
       {"suggested_tier", tier},
       {"submitted_at", when},
       {"first_submitted_at", when},
       {"age_ms", oa::integer(0, 1LL << 53)},
       {"age_business_days", oa::integer(0, 1LL << 31)},
       {"expected_review_by", oa::timestamp()}},
      {"id", "user_id", "status", "full_name", "email", "gpu_count", "models", "gpus", "gpus_text", "suggested_tier",
       "submitted_at"});
  app.route(
      Method::post, "/v1/applications",
      RouteOptions::signed_in().doc(
          {.summary = "Create a draft provider application", .body = form_schema, .responses = {{201, application}}}),
      create);
  app.route(Method::get, "/v1/applications",
            RouteOptions::signed_in().doc(
                {.summary = "My applications", .query = {"limit", "cursor"}, .responses = {{200, oa::page(application)}}}),
            list_mine);
  app.route(Method::get, "/v1/applications/{id}",
            RouteOptions::signed_in().doc(
                {.summary = "One application, with its history (owner or reviewer)", .responses = {{200, application}}}),
            get_one);
  app.route(Method::put, "/v1/applications/{id}",
            RouteOptions::signed_in().doc({.summary = "Replace a draft's form (draft or needs_info)",
                                           .body = form_schema,
                                           .responses = {{200, application}}}),
            put_application);
  app.route(Method::patch, "/v1/applications/{id}",
            RouteOptions::signed_in().doc({.summary = "Change part of a draft's form: a JSON Merge Patch (RFC 7396)",
                                           .body = oa::merge_patch_of(form_schema),
                                           .responses = {{200, application}}}),
            patch_application);
  app.route(Method::post, "/v1/applications/{id}/submit",
            RouteOptions::signed_in().doc({.summary = "Submit an application for review", .responses = {{200, application}}}),
            submit);
  app.route(Method::get, "/v1/review/applications",
            RouteOptions::for_roles({"reviewer"}).doc(
                {.summary = "The review queue", .query = {"status", "limit", "cursor"}, .responses = {{200, oa::page(queue_entry)}}}),
            queue);
  // The approval answer names the issued key (never its value); replays stay sealed all the same.
  app.route(Method::post, "/v1/review/applications/{id}/decision",
            RouteOptions::for_roles({"reviewer"})
                .sealed_idempotency()
                .doc({.summary = "Decide on a submitted application: approve, reject or needs_info",
                      .body = oa::body_of(read_decision),
                      .responses = {{200, oa::closed_record({{"application", application},
                                                             {"provider_id", oa::text(1)},
                                                             {"api_key_id", oa::text(1)},
                                                             {"api_key_delivery", oa::text(1)},
                                                             {"tier", tier}},
                                                            {"application"})}}}),
            decide);
}

}  // namespace gpunex::server
