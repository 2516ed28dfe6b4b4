// /v1/auth/* and /v1/me: signup, login, logout, the current user, and its confirmed e-mail address.

#include <chrono>

#include "core/json_reader.hpp"
#include "core/text.hpp"
#include "server/api/handlers.hpp"
#include "server/api/openapi.hpp"
#include "server/api/routes.hpp"
#include "server/mail/templates.hpp"
#include "server/platform/email_addresses.hpp"
#include "server/platform/notifications.hpp"
#include "server/platform/password_resets.hpp"
#include "server/platform/platform_repo.hpp"
#include "server/platform/request_pipeline.hpp"
#include "util/crypto.hpp"

namespace gpunex::server {

using core::Error;
using core::ErrorCode;
using http::Method;
using http::Response;

namespace {

std::string cookie(std::string_view name, std::string_view value, std::int64_t max_age_s, bool http_only, bool secure) {
  std::string c = std::string(name) + "=" + std::string(value) + "; Path=/; Max-Age=" + std::to_string(max_age_s) +
                  "; SameSite=Strict";
  if (http_only) c += "; HttpOnly";
  if (secure) c += "; Secure";
  return c;
}

//! An address as typed, trimmed and lower-cased as accounts keep it; 400 naming `email` when it is none.
core::Result<std::string> address_of(const std::string& typed) {
  std::string email = core::to_lower_ascii(core::trim(typed));
  if (!core::is_valid_email(email)) {
    return Error::make(ErrorCode::invalid_field, "E-mail is not a valid e-mail address (like name@example.com)",
                       "email");
  }
  return email;
}

EmailConfirmationSettings confirmation_settings(Ctx& ctx) {
  const auto& c = ctx.config();
  return {c.base_url(), std::int64_t{c.email_confirmation_ttl_hours} * 3'600'000, c.email_confirmations_per_hour,
          c.server_secret};
}

//! POST /v1/auth/signup {email, password, full_name}.
core::Result<NewUser> read_signup(const nlohmann::json& body) {
  core::ObjectReader r(body, "", "", {{"email", {"e-mail", ""}}, {"full_name", {"full name", ""}}});
  NewUser u;
  u.email = r.required_string("email", 1, 254);
  u.password = r.required_string("password", 1, 1024);
  u.full_name = r.required_line("full_name", 1, 200);
  if (auto s = r.finish(); !s) {
    // The fields that were there are still checked, so the answer lists every problem at once.
    core::ErrorList all;
    all.add(std::move(s).error());
    NewUser present = u;
    present.email = core::trim(u.email);
    if (auto v = validate_new_user(present); !v) all.add(std::move(v).error());
    return all.status().error();
  }
  return u;
}

//! {email, password}: a login, or an address change confirmed with the password.
core::Result<std::pair<std::string, std::string>> read_credentials(const nlohmann::json& body,
                                                                   core::FieldLabels labels) {
  core::ObjectReader r(body, "", "", std::move(labels));
  std::string email = r.required_string("email", 1, 254);
  std::string password = r.required_string("password", 1, 1024);
  if (auto s = r.finish(); !s) return std::move(s).error();
  return std::pair{std::move(email), std::move(password)};
}

//! POST /v1/auth/confirm-email {token}.
core::Result<std::string> read_confirmation_token(const nlohmann::json& body) {
  core::ObjectReader r(body);
  std::string token = r.required_string("token", 1, 200);
  if (auto s = r.finish(); !s) return std::move(s).error();
  return token;
}

Response signup(Ctx& ctx) {
  auto read = ctx.read_body(read_signup);
  if (!read) return Response::error(read.error());
  const NewUser& u = *read;
  // The address is the account's once it opens the link mailed to it; until then nothing else is mailed.
  const auto settings = confirmation_settings(ctx);
  const auto now = ctx.now_ms();
  auto user = create_user(ctx.store(), u, now, /*verified=*/false, [&](store::Tx& tx, const User& made) {
    return send_email_confirmation(tx, made, made.email, /*changing=*/false, settings, now);
  });
  if (!user) return Response::error(user.error());
  return Response::json(201, user->to_json());
}

Response login_handler(Ctx& ctx) {
  auto read = ctx.read_body([](const nlohmann::json& body) { return read_credentials(body, {}); });
  if (!read) return Response::error(read.error());
  const auto& [email, password] = *read;
  // No account has such an address: say which field, as signup would.
  if (!core::is_single_line_text(email)) {
    return Response::error(Error::make(ErrorCode::invalid_field, "E-mail must not contain control characters", "email"));
  }
  // Failed logins wait per account and per address (growing, capped); the password is not even
  // checked while this client must wait, so a wait costs a guesser a guess.
  const std::string& ip = ctx.req.remote_ip;
  const std::string account = core::to_lower_ascii(core::trim(email));
  auto& throttle = ctx.app.login_throttle();
  if (const auto wait = throttle.wait(account, ip); wait.count() > 0) return must_wait("failed logins", wait);
  const std::int64_t ttl_ms = std::int64_t{ctx.config().session_ttl_hours} * 3600 * 1000;
  auto session = login(ctx.store(), email, password, ttl_ms, ctx.now_ms());
  if (!session) {
    if (session.error().code == ErrorCode::unauthenticated) throttle.failed(account, ip);
    return Response::error(session.error());
  }
  throttle.succeeded(account, ip);
  const bool secure = ctx.req.tls || ctx.req.forwarded_https || !ctx.config().tls_cert.empty();
  const std::int64_t max_age = ttl_ms / 1000;
  auto resp = Response::json(200, {{"token", session->token},
                                   {"csrf_token", session->csrf_token},
                                   {"expires_in_s", max_age},
                                   {"user", session->user.to_json()}});
  resp.header("Set-Cookie", cookie(kSessionCookie, session->token, max_age, true, secure));
  resp.header("Set-Cookie", cookie(kCsrfCookie, session->csrf_token, max_age, false, secure));
  return resp;
}

Response logout(Ctx& ctx) {
  if (!ctx.principal->session_token_hash.empty()) {
    ctx.store().transact([&](store::Tx& tx) { end_session(tx, ctx.principal->session_token_hash); });
  }
  const bool secure = ctx.req.tls || ctx.req.forwarded_https || !ctx.config().tls_cert.empty();
  auto resp = Response::json(200, {{"status", "logged_out"}});
  resp.header("Set-Cookie", cookie(kSessionCookie, "", 0, true, secure));
  resp.header("Set-Cookie", cookie(kCsrfCookie, "", 0, false, secure));
  return resp;
}

Response me(Ctx& ctx) {
  auto body = ctx.principal->user.to_json();
  const auto pending = ctx.store().transact(
      [&](store::Tx& tx) { return pending_email(tx, ctx.principal->user.id, ctx.now_ms()); }, store::TxMode::read);
  // The address a link was sent to and not opened yet (a change, or the signup address).
  body["pending_email"] = pending ? nlohmann::json(*pending) : nlohmann::json(nullptr);
  return Response::json(200, body);
}

//! POST /v1/auth/confirm-email {token}: the link from the mail, opened by the dashboard (signed in or not).
Response confirm_email_handler(Ctx& ctx) {
  auto token = ctx.read_body(read_confirmation_token);
  if (!token) return Response::error(token.error());
  const auto base_url = ctx.config().base_url();
  auto user = ctx.store().transact([&](store::Tx& tx) { return confirm_email(tx, *token, base_url, ctx.now_ms()); });
  if (!user) return Response::error(user.error());
  return Response::json(200, user->to_json());
}

//! POST /v1/me/email {email, password}: moves the account to a new address once a link mailed there is
//! opened. The password is asked again, so a session left open somewhere cannot take the account's mail.
Response change_email(Ctx& ctx) {
  auto read = ctx.read_body([](const nlohmann::json& body) {
    return read_credentials(body, {{"email", {"e-mail", ""}}});
  });
  if (!read) return Response::error(read.error());
  const auto& [email_in, password] = *read;
  const auto address = address_of(email_in);
  if (!address) return Response::error(address.error());
  const std::string& email = *address;
  const User& me = ctx.principal->user;
  if (auto refused =
          recheck_password(ctx, password, Error::make(ErrorCode::invalid_field, "Password is wrong", "password"))) {
    return *refused;
  }
  const auto settings = confirmation_settings(ctx);
  auto sent = ctx.store().transact([&](store::Tx& tx) -> core::Status {
    if (email == me.email && me.email_verified) {
      return Error::make(ErrorCode::invalid_field, "This is the account's e-mail address already", "email");
    }
    if (auto other = platform_repo::find_user_by_email(tx, email); other && other->id != me.id) {
      return Error::make(ErrorCode::conflict, "an account with this e-mail already exists", "email")
          .with_code("email_taken");
    }
    return send_email_confirmation(tx, me, email, /*changing=*/email != me.email, settings, ctx.now_ms());
  });
  if (!sent) return Response::error(sent.error());
  return Response::json(202, {{"status", "confirmation_sent"}, {"pending_email", email}});
}

//! POST /v1/me/password {current_password, new_password}.
core::Result<std::pair<std::string, std::string>> read_password_change(const nlohmann::json& body) {
  core::ObjectReader r(body, "", "",
                       {{"current_password", {"current password", ""}}, {"new_password", {"new password", ""}}});
  std::string current = r.required_string("current_password", 1, 1024);
  std::string next = r.required_string("new_password", 1, 1024);
  if (auto s = r.finish(); !s) return std::move(s).error();
  return std::pair{std::move(current), std::move(next)};
}

//! POST /v1/me/password: the account changes its own password, giving the current one; every other
//! session ends (this one stays), and the account is told by mail, in case it was not its owner.
Response change_password(Ctx& ctx) {
  auto read = ctx.read_body(read_password_change);
  if (!read) return Response::error(read.error());
  const auto& [current, next] = *read;
  if (auto refused = recheck_password(
          ctx, current, Error::make(ErrorCode::invalid_field, "Current password is wrong", "current_password"))) {
    return *refused;
  }
  const User& me = ctx.principal->user;
  const auto link = ctx.config().base_url() + "/#/account";
  const auto now = ctx.now_ms();
  auto ended = set_password(ctx.store(), me.email, next, now, ctx.principal->session_token_hash, "new_password",
                            [&](store::Tx& tx, const std::string& user_id) {
                              announce(tx, user_id, mail::password_changed(me.email, link), std::nullopt, now);
                            });
  if (!ended) return Response::error(ended.error());
  return Response::json(200, {{"status", "password_changed"}, {"other_sessions_ended", *ended}});
}

//! POST /v1/me/email/confirmation: sends the link again, to the address waiting for one.
Response resend_confirmation(Ctx& ctx) {
  const User& me = ctx.principal->user;
  const auto settings = confirmation_settings(ctx);
  std::string to;
  auto sent = ctx.store().transact([&](store::Tx& tx) -> core::Status {
    const auto pending = pending_email(tx, me.id, ctx.now_ms());
    if (!pending && me.email_verified) {
      return Error::make(ErrorCode::conflict, "the account's e-mail address is confirmed; nothing waits for a link")
          .with_code("already_confirmed");
    }
    to = pending ? *pending : me.email;
    return send_email_confirmation(tx, me, to, /*changing=*/to != me.email, settings, ctx.now_ms());
  });
  if (!sent) return Response::error(sent.error());
  return Response::json(202, {{"status", "confirmation_sent"}, {"pending_email", to}});
}

//! POST /v1/auth/password-reset {email}.
core::Result<std::string> read_reset_request(const nlohmann::json& body) {
  core::ObjectReader r(body, "", "", {{"email", {"e-mail", ""}}});
  std::string email = r.required_string("email", 1, 254);
  if (auto s = r.finish(); !s) return std::move(s).error();
  return address_of(email);
}

//! POST /v1/auth/password-reset: mails a link that sets a new password, if an account has the address.
//! The answer is the same either way (and when the account's links for the hour are spent).
Response request_reset(Ctx& ctx) {
  auto email = ctx.read_body(read_reset_request);
  if (!email) return Response::error(email.error());
  const auto& c = ctx.config();
  const PasswordResetSettings settings{c.base_url(), std::int64_t{c.password_reset_ttl_minutes} * 60'000,
                                       c.password_resets_per_hour, c.server_secret};
  auto sent =
      ctx.store().transact([&](store::Tx& tx) { return request_password_reset(tx, *email, settings, ctx.now_ms()); });
  (void)sent;  // not told: the answer must not say whether the address has an account
  return Response::json(
      202, {{"status", "reset_requested"}, {"email", *email}, {"link_valid_minutes", c.password_reset_ttl_minutes}});
}

//! POST /v1/auth/password-reset/confirm {token, new_password}.
core::Result<std::pair<std::string, std::string>> read_reset(const nlohmann::json& body) {
  core::ObjectReader r(body, "", "", {{"new_password", {"new password", ""}}});
  std::string token = r.required_string("token", 1, 200);
  std::string password = r.required_string("new_password", 1, 1024);
  if (auto s = r.finish(); !s) return std::move(s).error();
  return std::pair{std::move(token), std::move(password)};
}

//! POST /v1/auth/password-reset/confirm: the link from the mail, opened by the dashboard with the new
//! password. Every session of the account ends; the caller signs in with the new password.
Response confirm_reset(Ctx& ctx) {
  auto read = ctx.read_body(read_reset);
  if (!read) return Response::error(read.error());
  const auto& [token, password] = *read;
  auto done = reset_password(ctx.store(), token, password, ctx.config().base_url(), ctx.now_ms());
  if (!done) return Response::error(done.error());
  // Whoever opened the link reads the account's mail: earlier failed logins no longer make it wait here.
  ctx.app.login_throttle().succeeded(done->email, ctx.req.remote_ip);
  return Response::json(
      200, {{"status", "password_changed"}, {"email", done->email}, {"sessions_ended", done->sessions_ended}});
}

}  // namespace

void register_auth_api(App& app) {
  namespace oa = openapi;
  // The account as every answer shows it (GET /v1/me adds pending_email).
  const auto user = oa::component(
      "User", oa::record({{"id", oa::text(1)},
                          {"email", oa::text(1)},
                          {"email_verified", oa::boolean()},
                          {"full_name", oa::text()},
                          {"roles", oa::array(oa::one_of({"customer", "provider", "reviewer", "admin"}))},
                          {"created_at", oa::timestamp()}},
                         {"id", "email", "email_verified", "full_name", "roles", "created_at"}));
  const auto confirmation_sent = oa::closed_record(
      {{"status", oa::one_of({"confirmation_sent"})}, {"pending_email", oa::text(1)}}, {"status", "pending_email"});
  app.route(Method::post, "/v1/auth/signup",
            RouteOptions::public_route().rate_limited().sealed_idempotency().slow_work().doc(
                {.summary = "Create an account", .body = oa::body_of(read_signup), .responses = {{201, user}}}),
            signup);  // the body holds a password
  app.route(Method::post, "/v1/auth/login",
            RouteOptions::public_route().no_idempotency().rate_limited().slow_work().doc(
                {.summary = "Sign in: a session token, and the session and CSRF cookies",
                 .body = oa::body_of([](const nlohmann::json& b) { return read_credentials(b, {}); }),
                 .responses = {{200, oa::record({{"token", oa::text(1)},
                                                 {"csrf_token", oa::text(1)},
                                                 {"expires_in_s", oa::integer(1, 1LL << 40)},
                                                 {"user", user}},
                                                {"token", "csrf_token", "user"})}}}),
            login_handler);
  app.route(Method::post, "/v1/auth/logout", RouteOptions::signed_in().no_idempotency().doc(
                {.summary = "End this session",
                 .responses = {{200, oa::closed_record({{"status", oa::one_of({"logged_out"})}}, {"status"})}}}),
            logout);
  app.route(Method::get, "/v1/me",
            RouteOptions::signed_in().doc({.summary = "The signed-in account, with its pending e-mail address",
                                           .responses = {{200, oa::all_of({user, oa::record({{"pending_email", oa::nullable(oa::text(1))}},
                                                                                            {"pending_email"})})}}}),
            me);
  app.route(Method::post, "/v1/auth/confirm-email",
            RouteOptions::public_route().no_idempotency().rate_limited().doc(
                {.summary = "Open an e-mail confirmation link: the address becomes the account's",
                 .body = oa::body_of(read_confirmation_token),
                 .responses = {{200, user}}}),
            confirm_email_handler);  // the body holds the link's token
  app.route(Method::post, "/v1/me/email",
            RouteOptions::signed_in().sealed_idempotency().slow_work().doc(
                {.summary = "Change the account's e-mail address: a link is mailed to the new one",
                 .body = oa::body_of([](const nlohmann::json& b) { return read_credentials(b, {}); }),
                 .responses = {{202, confirmation_sent}}}),
            change_email);  // the body holds a password
  app.route(Method::post, "/v1/me/password",
            RouteOptions::signed_in().sealed_idempotency().slow_work().doc(
                {.summary = "Change the account's password, giving the current one: the other sessions end",
                 .body = oa::body_of(read_password_change),
                 .responses = {{200, oa::closed_record({{"status", oa::one_of({"password_changed"})},
                                                        {"other_sessions_ended", oa::integer(0, 1'000'000'000)}},
                                                       {"status", "other_sessions_ended"})}}}),
            change_password);  // the body holds passwords
  app.route(Method::post, "/v1/auth/password-reset",
            RouteOptions::public_route().no_idempotency().rate_limited().doc(
                {.summary = "Forgotten password: mail a link that sets a new one, if an account has the address "
                            "(the answer is the same either way)",
                 .body = oa::body_of(read_reset_request),
                 .responses = {{202, oa::closed_record({{"status", oa::one_of({"reset_requested"})},
                                                        {"email", oa::text(1)},
                                                        {"link_valid_minutes", oa::integer(1, 24 * 60)}},
                                                       {"status", "email", "link_valid_minutes"})}}}),
            request_reset);
  app.route(Method::post, "/v1/auth/password-reset/confirm",
            RouteOptions::public_route().no_idempotency().rate_limited().slow_work().doc(
                {.summary = "Open a password reset link with the new password: every session of the account ends",
                 .body = oa::body_of(read_reset),
                 .responses = {{200, oa::closed_record({{"status", oa::one_of({"password_changed"})},
                                                        {"email", oa::text(1)},
                                                        {"sessions_ended", oa::integer(0, 1'000'000'000)}},
                                                       {"status", "email", "sessions_ended"})}}}),
            confirm_reset);  // the body holds the link's token and a password
  app.route(Method::post, "/v1/me/email/confirmation",
            RouteOptions::signed_in().no_idempotency().doc(
                {.summary = "Mail the e-mail confirmation link again", .responses = {{202, confirmation_sent}}}),
            resend_confirmation);
}

}  // namespace gpunex::server
