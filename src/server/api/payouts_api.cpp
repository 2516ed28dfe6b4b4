// A provider's payout settings (issue #18): GET and PUT /v1/provider/payout-settings. A signed-in
// provider only (never an API key: a stolen agent key must not redirect the money), and a new
// destination needs the account's password again.

#include "core/payout_calendar.hpp"
#include "server/api/handlers.hpp"
#include "server/api/routes.hpp"
#include "server/onboarding/providers.hpp"
#include "server/payouts/payout_settings.hpp"
#include "server/platform/notifications.hpp"
#include "server/platform/platform_repo.hpp"
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
  return respond(ctx, [&](store::Tx& tx) -> core::Result<nlohmann::json> {
    const std::string pid = caller_provider(ctx, tx);
    if (pid.empty()) return not_a_provider();
    const auto history = payouts::settings_json(tx, pid, now)["history"];
    const bool same_destination = !history.empty() &&
                                  history[0]["method"] == core::payout::to_string(wanted->method) &&
                                  history[0]["destination"] == wanted->destination;
    if (!same_destination) {
      if (password.empty()) {
        return Error::make(ErrorCode::missing_field, "a new payout destination needs your password again", "password");
      }
      const auto creds = platform_repo::find_credentials(tx, ctx.principal->user.email);
      if (!creds || !util::verify_password(password, creds->password_hash)) {
        return Error::make(ErrorCode::forbidden, "the password is not right", "password").with_code("wrong_password");
      }
    }
    const auto change = payouts::record_change(tx, pid, *wanted, ctx.principal->user.id, cooldown_ms, now);
    if (change.new_destination) {
      if (auto who = provider_contact(tx, pid)) {
        announce(tx, who->user_id, who->email,
                 mail::payout_destination_changed(payouts::method_text(change.settings.method),
                                                  payouts::destination_text(change.settings),
                                                  change.settings.effective_at_ms, link),
                 std::nullopt, now);
      }
    }
    return payouts::settings_json(tx, pid, now);
  });
}

}  // namespace

void register_payouts_api(App& app) {
  const auto provider = RouteOptions::for_roles({"provider"});
  app.route(http::Method::get, "/v1/provider/payout-settings", provider, get_settings);
  // A change is confirmed with the account password (argon2): checked off the I/O threads.
  app.route(http::Method::put, "/v1/provider/payout-settings", RouteOptions::for_roles({"provider"}).slow_work(),
            put_settings);
}

}  // namespace gpunex::server
