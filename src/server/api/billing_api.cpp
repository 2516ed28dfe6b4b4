// Customer money: GET /v1/billing/balance, GET /v1/billing/history, and the operators'
// GET and POST /v1/admin/credits; the provider's GET /v1/provider/earnings (JSON, or ?format=csv).

#include "core/json_reader.hpp"
#include "core/ledger.hpp"
#include "core/rfc3339.hpp"
#include "core/text.hpp"
#include "server/api/handlers.hpp"
#include "server/api/openapi.hpp"
#include "server/api/routes.hpp"
#include "server/billing/credits.hpp"
#include "server/billing/earnings.hpp"
#include "server/billing/ledger_repo.hpp"
#include "server/payouts/payout_runs.hpp"
#include "server/payouts/payout_settings.hpp"
#include "server/rentals/rentals.hpp"
#include "util/time.hpp"

namespace gpunex::server {

namespace {

using http::Response;
namespace ledger = core::ledger;

Response get_balance(Ctx& ctx) {
  return respond(
      ctx,
      [&](store::Tx& tx) -> core::Result<nlohmann::json> {
        const auto& user = ctx.principal->user.id;
        const auto now = ctx.now_ms();
        const auto balance = billing::balance(tx, ledger::Account::customer(user));
        // What running rentals have used since their last settlement is spent already: available is
        // the balance less that, and it lasts hours_left (whole hours; minutes_left, whole minutes) at
        // their current spend.
        const auto accrual = rentals::customer_accrual(tx, user, now);
        const auto available = balance - accrual.unsettled;
        const core::MicroUsdc spend_per_hour = accrual.per_hour;
        const auto hours = ledger::hours_left(available, spend_per_hour);
        const auto minutes = ledger::minutes_left(available, spend_per_hour);
        return nlohmann::json{{"balance", core::format_usdc(balance)},
                              {"available", core::format_usdc(available)},
                              {"unsettled", core::format_usdc(accrual.unsettled)},
                              {"currency", "USDC"},
                              {"spend_per_hour", core::format_usdc(spend_per_hour)},
                              {"hours_left", hours < 0 ? nlohmann::json(nullptr) : nlohmann::json(hours)},
                              {"minutes_left", minutes < 0 ? nlohmann::json(nullptr) : nlohmann::json(minutes)},
                              // How to add credit, as the operator wrote it (null: not written).
                              {"payment_instructions", ctx.config().payment_instructions.empty()
                                                           ? nlohmann::json(nullptr)
                                                           : nlohmann::json(ctx.config().payment_instructions)}};
      },
      store::TxMode::read);
}

Response get_history(Ctx& ctx) {
  return list_response(ctx, [&](store::Tx& tx) {
    auto items = nlohmann::json::array();
    for (const auto& h : billing::history(tx, ledger::Account::customer(ctx.principal->user.id))) {
      items.push_back({{"id", h.transaction_id},
                       {"at", util::rfc3339(h.at_ms)},
                       {"kind", ledger::to_string(h.kind)},
                       {"reason", h.reason},
                       {"reference", h.reference},
                       {"amount", core::format_usdc(h.amount)}});
    }
    return items;
  });
}

//! ?from= and ?to= as RFC 3339 times or dates (YYYY-MM-DD, midnight UTC); by default the last 30 days.
core::Result<std::int64_t> time_param(Ctx& ctx, const char* name, std::int64_t fallback) {
  const auto v = ctx.req.query_param(name);
  if (!v || v->empty()) return fallback;
  const std::string text = v->size() == 10 ? *v + "T00:00:00Z" : *v;
  const auto ms = core::parse_rfc3339_ms(text);
  if (!ms) {
    return core::Error::make(core::ErrorCode::invalid_field,
                             std::string(name) + " must be a date (2026-12-01) or an RFC 3339 time", name);
  }
  return *ms;
}

Response provider_earnings(Ctx& ctx) {
  constexpr std::int64_t kDay = 86'400'000;
  const auto now = ctx.now_ms();
  billing::EarningsQuery q;
  auto to = time_param(ctx, "to", now + 1);
  if (!to) return Response::error(to.error());
  auto from = time_param(ctx, "from", *to - 30 * kDay);
  if (!from) return Response::error(from.error());
  if (*from >= *to) {
    return Response::error(core::Error::make(core::ErrorCode::invalid_field, "from must be before to", "from"));
  }
  if (*to - *from > 366 * kDay) {
    return Response::error(
        core::Error::make(core::ErrorCode::invalid_field, "a range is at most 366 days", "from"));
  }
  q.from_ms = *from;
  q.to_ms = *to;
  if (const auto g = ctx.req.query_param("group_by"); g && !g->empty()) {
    auto by = core::earnings::parse_group_by(*g);
    if (!by) return Response::error(by.error());
    q.by = *by;
  }
  // ?format=csv: the groups as a spreadsheet file; the JSON answer is the default.
  const auto format = ctx.req.query_param("format").value_or("json");
  if (format != "json" && format != "csv") {
    return Response::error(core::Error::make(core::ErrorCode::invalid_field, "format must be json or csv", "format"));
  }
  billing::PayoutPlan plan;
  plan.minimums.weekly = ctx.config().payout_min_weekly_micro;
  plan.minimums.monthly = ctx.config().payout_min_monthly_micro;
  plan.usdc_payouts_configured = !ctx.config().solana_rpc_url.empty();
  std::optional<billing::EarningsReport> report;
  auto r = ctx.store().transact(
      [&](store::Tx& tx) -> core::Result<bool> {
        const std::string pid = caller_provider(ctx, tx);
        if (pid.empty()) return not_a_provider();
        // The settings in force at `at_ms` (a new destination waiting its cool-down is not yet in force now).
        const auto in_force = [&](std::int64_t at_ms) {
          billing::PayoutPlan p = plan;
          if (const auto settings = payouts::current_settings(tx, pid, at_ms)) {
            p.schedule = settings->schedule;
            p.method = settings->method;
          }
          return p;
        };
        plan = in_force(now);
        // Today's run, when today is a payout day: paid already, or what it pays (earned before 00:00 UTC).
        const auto today =
            date::floor<date::days>(date::sys_time<std::chrono::milliseconds>(std::chrono::milliseconds(now)));
        plan.paid_today = payouts::has_payout(tx, pid, today);
        plan.payable_today = payouts::payable(tx, pid, core::payout::cutoff_ms(today));
        report = billing::provider_earnings(tx, pid, q, plan, now);
        // A later payout day is paid under the settings in force when its run starts (00:00 UTC that day):
        // a change that waits out its cool-down until before then decides its method and schedule.
        for (int i = 0; i < 2; ++i) {
          const std::int64_t day_ms =
              std::chrono::duration_cast<std::chrono::milliseconds>(report->pending.day.time_since_epoch()).count();
          if (report->pending.day == today) break;
          const auto then = in_force(day_ms);
          if (then.schedule == plan.schedule && then.method == plan.method) break;
          plan = then;
          report = billing::provider_earnings(tx, pid, q, plan, now);
        }
        return true;
      },
      store::TxMode::read);
  if (!r) return Response::error(r.error());
  if (format == "json") return Response::json(200, billing::to_json(*report));
  Response csv;
  csv.content_type = "text/csv; charset=utf-8";
  csv.body = billing::to_csv(*report);
  csv.header("Content-Disposition", "attachment; filename=\"" + billing::csv_file_name(*report) + "\"");
  return csv;
}

//! POST /v1/admin/credits {email, amount, reference}.
core::Result<billing::CreditRequest> read_credit(const nlohmann::json& body) {
  core::ObjectReader r(body, "", "", {{"amount", {"credit amount", "USDC"}}});
  billing::CreditRequest request;
  request.email = r.required_string("email", 3, 254);
  r.describe_field("amount", {{"type", "string"}, {"description", "A decimal USDC string such as \"100.00\"."}});
  if (const auto* amount = r.required_value("amount"); amount && !amount->is_string()) {
    // A JSON number is a binary float: money travels as a decimal string.
    r.invalid("amount", "must be a decimal string such as \"100.00\"", "invalid_amount");
  } else if (amount) {
    request.amount = amount->get<std::string>();
  }
  request.reference = r.required_line("reference", 1, 200);
  if (!r.failed("email") && !core::is_valid_email(core::trim(request.email))) {
    r.invalid("email", "must be an e-mail address such as name@example.com");
  }
  if (auto s = r.finish(); !s) return std::move(s).error();
  return request;
}

Response post_credit(Ctx& ctx) {
  auto request = ctx.read_body(read_credit);
  if (!request) return Response::error(request.error());
  auto result = ctx.store().transact(
      [&](store::Tx& tx) { return billing::add_credit(tx, *request, ctx.principal->user.id, ctx.now_ms()); });
  if (!result) return Response::error(result.error());
  return Response::json(result->repeated ? 200 : 201, {{"transaction_id", result->transaction_id},
                                                       {"user_id", result->user_id},
                                                       {"email", result->email},
                                                       {"amount", core::format_usdc(result->amount)},
                                                       {"balance", core::format_usdc(result->balance)},
                                                       {"repeated", result->repeated}});
}

//! GET /v1/admin/credits: every credit, newest first, for the operators' books.
Response get_credits(Ctx& ctx) {
  return list_response(ctx, [&](store::Tx& tx) {
    auto items = nlohmann::json::array();
    for (const auto& c : billing::credits(tx)) {
      items.push_back({{"id", c.transaction_id},
                       {"at", util::rfc3339(c.at_ms)},
                       {"user_id", c.user_id},
                       {"email", c.email},
                       {"amount", core::format_usdc(c.amount)},
                       {"reference", c.reference},
                       {"by", c.by}});
    }
    return items;
  });
}

}  // namespace

void register_billing_api(App& app) {
  namespace oa = openapi;
  const auto credit = oa::closed_record({{"transaction_id", oa::text(1)},
                                         {"user_id", oa::text(1)},
                                         {"email", oa::text(1)},
                                         {"amount", oa::money()},
                                         {"balance", {{"type", "string"}, {"pattern", "^-?[0-9]+(\\.[0-9]{1,6})?$"}}},
                                         {"repeated", oa::boolean()}},
                                        {"transaction_id", "user_id", "email", "amount", "balance", "repeated"});
  const nlohmann::json signed_money = {{"type", "string"}, {"pattern", "^-?[0-9]+(\\.[0-9]{1,6})?$"}};
  app.route(http::Method::get, "/v1/billing/balance",
            RouteOptions::signed_in().doc(
                {.summary = "My balance and what is being spent",
                 .responses = {{200, oa::closed_record({{"balance", signed_money},
                                                        {"available", signed_money},
                                                        {"unsettled", signed_money},
                                                        {"currency", oa::one_of({"USDC"})},
                                                        {"spend_per_hour", oa::money()},
                                                        {"hours_left", oa::nullable(oa::number())},
                                                        {"minutes_left", oa::nullable(oa::number())},
                                                        {"payment_instructions", oa::nullable(oa::text())}},
                                                       {"balance", "available", "unsettled", "currency",
                                                        "spend_per_hour", "hours_left", "minutes_left"})}}}),
            get_balance);
  app.route(http::Method::get, "/v1/billing/history",
            RouteOptions::signed_in().doc(
                {.summary = "My ledger history",
                 .query = {"limit", "cursor"},
                 .responses = {{200, oa::page(oa::record({{"id", oa::text(1)},
                                                          {"at", oa::timestamp()},
                                                          {"kind", oa::text(1)},
                                                          {"reason", oa::text()},
                                                          {"reference", oa::nullable(oa::text())},
                                                          {"amount", signed_money}},
                                                         {"id", "at", "kind", "amount"}))}}}),
            get_history);
  app.route(http::Method::get, "/v1/admin/credits",
            RouteOptions::for_roles({"admin"}).doc(
                {.summary = "Every credit, newest first",
                 .query = {"limit", "cursor"},
                 .responses = {{200, oa::page(oa::closed_record(
                                         {{"id", oa::text(1)},
                                          {"at", oa::timestamp()},
                                          {"user_id", oa::text(1)},
                                          {"email", oa::text(1)},
                                          {"amount", oa::money()},
                                          {"reference", oa::text(1)},
                                          {"by", oa::text(1)}},
                                         {"id", "at", "user_id", "email", "amount", "reference", "by"}))}}}),
            get_credits);
  app.route(http::Method::post, "/v1/admin/credits",
            RouteOptions::for_roles({"admin"}).doc(
                {.summary = "Credit a customer's balance (one ledger transaction per payment reference)",
                 .body = openapi::body_of(read_credit),
                 // 201 for a new credit; 200 when the payment reference was credited before (nothing added).
                 .responses = {{201, credit}, {200, credit}}}),
            post_credit);
  app.route(
      http::Method::get, "/v1/provider/earnings",
      RouteOptions::for_roles({"provider"})
          .api_key_allowed()
          .doc({.summary = "My earnings, grouped (?format=csv: the groups as CSV)",
                .query = {"from", "to", "group_by", "format"},
                .responses = {{200, oa::record({{"from", oa::timestamp()},
                                                {"to", oa::timestamp()},
                                                {"group_by", oa::one_of({"day", "gpu", "model", "machine"})},
                                                {"currency", oa::one_of({"USDC"})},
                                                {"total", oa::money()},
                                                {"settled", oa::money()},
                                                {"unsettled", oa::money()},
                                                {"groups", oa::array(oa::closed_record(
                                                               {{"key", oa::text()},
                                                                {"settled", oa::money()},
                                                                {"unsettled", oa::money()},
                                                                {"total", oa::money()}},
                                                               {"key", "settled", "unsettled", "total"}))},
                                                {"today", oa::money()},
                                                {"last_7_days", oa::money()},
                                                {"last_30_days", oa::money()},
                                                {"this_period", oa::closed_record({{"from", oa::timestamp()},
                                                                                   {"amount", oa::money()}},
                                                                                  {"from", "amount"})},
                                                {"balance", oa::money()},
                                                {"pending_payout",
                                                 oa::closed_record(
                                                     {{"schedule", oa::one_of({"weekly", "monthly"})},
                                                      {"method", oa::nullable(oa::one_of({"solana_usdc", "sepa"}))},
                                                      {"next_date", oa::text(10, 10)},
                                                      {"amount", oa::money()},
                                                      {"minimum", oa::money()},
                                                      {"above_minimum", oa::boolean()},
                                                      {"held_reason", oa::nullable(oa::text(1))}},
                                                     {"schedule", "method", "next_date", "amount",
                                                      "minimum", "above_minimum", "held_reason"})}},
                                               {"from", "to", "group_by", "currency", "total", "settled", "unsettled",
                                                "groups", "balance", "pending_payout"})}}}),
      provider_earnings);
}

}  // namespace gpunex::server
