// Payouts (issue #18). A provider's payout settings, GET and PUT /v1/provider/payout-settings: a
// signed-in provider only (never an API key: a stolen agent key must not redirect the money), and a
// new destination needs the account's password again. A provider's payouts, GET /v1/provider/payouts.
// The operators' runs and SEPA batches: GET /v1/admin/payout-runs, POST .../{id}/sepa-batch with the
// run's rate, GET /v1/admin/sepa-batches/{id}/file, POST .../{id}/sent, and POST
// /v1/admin/payouts/{id}/paid or /returned.

#include "core/json_reader.hpp"
#include "core/payout_calendar.hpp"
#include "core/sepa.hpp"
#include "server/api/handlers.hpp"
#include "server/api/openapi.hpp"
#include "server/api/routes.hpp"
#include "server/onboarding/providers.hpp"
#include "server/payouts/chain_client.hpp"
#include "server/payouts/payout_runs.hpp"
#include "server/payouts/payout_settings.hpp"
#include "server/payouts/solana_payouts.hpp"
#include "server/platform/notifications.hpp"
#include "util/crypto.hpp"

namespace gpunex::server {

namespace {

using core::Error;
using core::ErrorCode;
using http::Response;

Response get_settings(Ctx& ctx) {
  const auto now = ctx.now_ms();
  return respond(
      ctx,
      [&](store::Tx& tx) -> core::Result<nlohmann::json> {
        const std::string pid = caller_provider(ctx, tx);
        if (pid.empty()) return not_a_provider();
        return payouts::settings_json(tx, pid, now);
      },
      store::TxMode::read);
}

Response put_settings(Ctx& ctx) {
  auto body = ctx.json_body();
  if (!body) return Response::error(body.error());
  auto wanted = payouts::read_settings(*body);
  if (!wanted) return Response::error(wanted.error());
  const std::string password = body->value("password", "");
  const auto now = ctx.now_ms();
  const std::int64_t cooldown_ms = std::int64_t{ctx.config().payout_destination_cooldown_hours} * 3'600'000;
  const std::string link = ctx.config().base_url() + "/#/earnings";
  // A password given is checked (under the login throttle) before the transaction, whether or not the
  // change needs it; a new destination without one is refused inside.
  if (!password.empty()) {
    if (auto refused = recheck_password(
            ctx, password,
            Error::make(ErrorCode::forbidden, "the password is not right", "password").with_code("wrong_password"))) {
      return *refused;
    }
  }
  return respond(ctx, [&](store::Tx& tx) -> core::Result<nlohmann::json> {
    const std::string pid = caller_provider(ctx, tx);
    if (pid.empty()) return not_a_provider();
    const auto history = payouts::settings_json(tx, pid, now)["history"];
    const bool same_destination = !history.empty() &&
                                  history[0]["method"] == core::payout::to_string(wanted->method) &&
                                  history[0]["destination"] == wanted->destination;
    if (!same_destination && password.empty()) {
      return Error::make(ErrorCode::missing_field, "a new payout destination needs your password again", "password");
    }
    const auto change = payouts::record_change(tx, pid, *wanted, ctx.principal->user.id, cooldown_ms, now);
    if (change.new_destination) {
      if (auto who = provider_contact(tx, pid)) {
        announce(tx, who->user_id,
                 mail::payout_destination_changed(payouts::method_text(change.settings.method),
                                                  payouts::destination_text(change.settings),
                                                  change.settings.effective_at_ms, link),
                 std::nullopt, now);
      }
    }
    return payouts::settings_json(tx, pid, now);
  });
}

Response get_payouts(Ctx& ctx) {
  return provider_list_response(
      ctx, [](store::Tx& tx, const std::string& pid) { return payouts::provider_payouts(tx, pid); });
}

Response get_runs(Ctx& ctx) {
  auto page = page_params(ctx.req);
  if (!page) return Response::error(page.error());
  return respond(
      ctx, [&](store::Tx& tx) { return payouts::runs_page(tx, *page); }, store::TxMode::read);
}

//! The hot wallet USDC payouts leave from: its address, USDC and SOL, asked of the node now.
Response get_hot_wallet(Ctx& ctx) {
  const auto& cfg = ctx.config();
  if (cfg.solana_rpc_url.empty()) {
    return Response::json(200, {{"configured", false},
                                {"reason", "no Solana node is configured (solana_rpc_url): USDC payout runs are held"}});
  }
  auto key = payouts::load_keypair_file(cfg.solana_keypair_file);
  if (!key) return Response::error(key.error());
  const auto wallet = util::ed25519_public(*key);
  const auto mint = core::solana::key_from_base58(cfg.solana_usdc_mint);
  const auto account = core::solana::associated_token_address(wallet, *mint, util::sha256_parts);
  auto chain = payouts::make_json_rpc_client(cfg.solana_rpc_url, cfg.solana_rpc_timeout_ms);
  nlohmann::json j{{"configured", true},
                   {"address", core::solana::to_base58(wallet)},
                   {"usdc_token_account", core::solana::to_base58(account)},
                   {"mint", cfg.solana_usdc_mint}};
  auto usdc = chain->token_balance(account);
  auto sol = chain->sol_balance(wallet);
  if (!usdc || !sol) {
    j["error"] = !usdc ? usdc.error().message : sol.error().message;
    return Response::json(200, j);
  }
  j["usdc_base_units"] = std::to_string(*usdc);
  if (cfg.solana_usdc_decimals == 6) j["usdc"] = core::format_usdc(static_cast<core::MicroUsdc>(*usdc));
  j["sol_lamports"] = std::to_string(*sol);
  return Response::json(200, j);
}

std::string earnings_link(Ctx& ctx) { return ctx.config().base_url() + "/#/earnings"; }

//! POST /v1/admin/payout-runs/{id}/sepa-batch {eur_per_usdc}: the rate, in millionths of a euro per USDC.
core::Result<std::int64_t> read_sepa_rate(const nlohmann::json& body) {
  core::ObjectReader r(body, "", "", {{"eur_per_usdc", {"EUR per USDC", ""}}});
  const auto* raw = r.optional_value("eur_per_usdc");
  // A JSON number is a binary float: a rate travels as a decimal string, as money does.
  const bool number = raw != nullptr && raw->is_number();
  if (number) r.invalid("eur_per_usdc", "must be a decimal string such as \"0.92\"", "invalid_amount");
  const std::string rate_text = number ? "" : r.required_line("eur_per_usdc", 1, 20);
  std::int64_t rate = 0;
  if (!r.failed("eur_per_usdc")) {
    if (auto parsed = core::sepa::parse_rate(rate_text); parsed) {
      rate = *parsed;
    } else {
      r.fail(parsed.error());
    }
  }
  if (auto st = r.finish(); !st) return std::move(st).error();
  return rate;
}

//! POST /v1/admin/payouts/{id}/returned {reason}.
core::Result<std::string> read_return_reason(const nlohmann::json& body) {
  core::ObjectReader r(body);
  std::string reason = r.required_line("reason", 1, 200);
  if (auto st = r.finish(); !st) return std::move(st).error();
  return reason;
}

Response post_sepa_batch(Ctx& ctx) {
  auto read = ctx.read_body(read_sepa_rate);
  if (!read) return Response::error(read.error());
  const std::int64_t rate = *read;
  const auto& cfg = ctx.config();
  const payouts::Debtor debtor{cfg.sepa_debtor_name, cfg.sepa_debtor_iban, cfg.sepa_debtor_bic};
  const std::string link = earnings_link(ctx);
  auto result = ctx.store().transact([&](store::Tx& tx) {
    return payouts::create_sepa_batch(tx, ctx.req.param("id"), rate, debtor, ctx.principal->user.id, link,
                                      ctx.now_ms());
  });
  if (!result) return Response::error(result.error());
  return Response::json(201, *result);
}

Response get_batch_file(Ctx& ctx) {
  const std::string id = ctx.req.param("id");
  auto file = ctx.store().transact([&](store::Tx& tx) { return payouts::sepa_batch_file(tx, id); },
                                   store::TxMode::read);
  if (!file) return Response::error(ErrorCode::not_found, "no SEPA batch " + id);
  Response res;
  res.content_type = "application/xml; charset=utf-8";
  res.body = std::move(*file);
  res.header("Content-Disposition", "attachment; filename=\"" + id + ".pain.001.xml\"");
  return res;
}

Response post_settle(Ctx& ctx, payouts::Outcome outcome) {
  std::string reason;
  if (outcome == payouts::Outcome::returned) {
    auto read = ctx.read_body(read_return_reason);
    if (!read) return Response::error(read.error());
    reason = std::move(*read);
  }
  const std::string link = earnings_link(ctx);
  return respond(ctx, [&](store::Tx& tx) {
    return payouts::settle_payout(tx, ctx.req.param("id"), outcome, reason, link, ctx.now_ms());
  });
}

}  // namespace

void register_payouts_api(App& app) {
  const auto provider = RouteOptions::for_roles({"provider"});
  namespace oa = openapi;
  const auto setting = oa::record({{"method", oa::text(1)},
                                   {"destination", oa::any_object()},
                                   {"destination_text", oa::text()},
                                   {"schedule", oa::text(1)},
                                   {"effective_at", oa::timestamp()},
                                   {"changed_at", oa::timestamp()}},
                                  {"method", "destination", "schedule", "effective_at", "changed_at"});
  const auto settings = oa::component(
      "PayoutSettings", oa::closed_record({{"current", oa::nullable(setting)},
                                           {"pending", oa::nullable(setting)},
                                           {"history", oa::array(setting)}},
                                          {"current", "pending", "history"}));
  // A provider's payout (the run it was paid in stays the operator's).
  const auto payout = oa::record({{"id", oa::text(1)},
                                  {"payout_day", oa::text(1)},
                                  {"schedule", oa::text(1)},
                                  {"method", oa::text(1)},
                                  {"method_text", oa::text()},
                                  {"destination_text", oa::text()},
                                  {"amount", oa::money()},
                                  {"currency", oa::one_of({"USDC"})},
                                  {"status", oa::text(1)},
                                  {"failure_reason", oa::nullable(oa::text())},
                                  {"created_at", oa::timestamp()},
                                  {"updated_at", oa::timestamp()},
                                  {"sepa", oa::nullable(oa::any_object())},
                                  {"solana", oa::nullable(oa::any_object())}},
                                 {"id", "payout_day", "method", "amount", "currency", "status", "created_at"});
  app.route(http::Method::get, "/v1/provider/payout-settings",
            provider.doc({.summary = "My payout method and schedule", .responses = {{200, settings}}}), get_settings);
  // A change is confirmed with the account password (argon2): checked off the I/O threads.
  app.route(http::Method::put, "/v1/provider/payout-settings",
            RouteOptions::for_roles({"provider"})
                .slow_work()
                .doc({.summary = "Change my payout settings (confirmed with the account password)",
                      .body = oa::body_of(payouts::read_settings),
                      .responses = {{200, settings}}}),
            put_settings);
  app.route(http::Method::get, "/v1/provider/payouts", RouteOptions::for_roles({"provider"}).api_key_allowed().doc(
                {.summary = "My payouts", .query = {"limit", "cursor"}, .responses = {{200, oa::page(payout)}}}),
            get_payouts);

  const auto admin = RouteOptions::for_roles({"admin"});
  app.route(http::Method::get, "/v1/admin/payout-runs",
            admin.doc({.summary = "Payout runs",
                       .query = {"limit", "cursor"},
                       .responses = {{200, oa::page(oa::record({{"id", oa::text(1)}}, {"id"}))}}}),
            get_runs);
  // Asks the Solana node (up to solana_rpc_timeout_ms a call): off the I/O threads.
  app.route(http::Method::get, "/v1/admin/hot-wallet", RouteOptions::for_roles({"admin"}).slow_work().doc(
                {.summary = "The Solana hot wallet's balances",
                 .responses = {{200, oa::record({{"configured", oa::boolean()}}, {"configured"})}}}),
            get_hot_wallet);
  app.route(http::Method::post, "/v1/admin/payout-runs/{id}/sepa-batch",
            admin.doc({.summary = "Make a run's SEPA batch (pain.001)",
                       .body = oa::body_of(read_sepa_rate),
                       .responses = {{201, oa::any_object()}}}),
            post_sepa_batch);
  app.route(http::Method::get, "/v1/admin/sepa-batches/{id}/file",
            admin.doc({.summary = "A SEPA batch's pain.001 XML file", .responses = {{200, nullptr}}}), get_batch_file);
  app.route(http::Method::post, "/v1/admin/sepa-batches/{id}/sent",
            admin.doc({.summary = "Record that a SEPA batch was sent to the bank", .responses = {{200, oa::any_object()}}}), [](Ctx& ctx) {
    return respond(ctx, [&](store::Tx& tx) { return payouts::mark_batch_sent(tx, ctx.req.param("id"), ctx.now_ms()); });
  });
  app.route(http::Method::post, "/v1/admin/payouts/{id}/paid", admin.doc({.summary = "Record a payout as paid", .responses = {{200, oa::any_object()}}}),
            [](Ctx& ctx) { return post_settle(ctx, payouts::Outcome::paid); });
  app.route(http::Method::post, "/v1/admin/payouts/{id}/returned",
            admin.doc({.summary = "Record a payout as returned by the bank",
                       .body = oa::body_of(read_return_reason),
                       .responses = {{200, oa::any_object()}}}),
            [](Ctx& ctx) { return post_settle(ctx, payouts::Outcome::returned); });
}

}  // namespace gpunex::server
