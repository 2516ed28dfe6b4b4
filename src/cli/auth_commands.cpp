// gpunex login | logout | whoami | password change | password forgot

#include <termios.h>
#include <unistd.h>

#include <csignal>
#include <iostream>

#include "cli/cli.hpp"

namespace gpunex::cli {

namespace {

// The terminal's settings while a password is typed without echo: Ctrl-C must not leave echo off.
termios g_saved_tty{};
volatile std::sig_atomic_t g_echo_off = 0;

void restore_echo_and_reraise(int sig) {
  if (g_echo_off) ::tcsetattr(STDIN_FILENO, TCSANOW, &g_saved_tty);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

class LoginCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* c = parent.add_subcommand("login", "log in and keep the session token (mode 0600)");
    c->add_option("--email", email_, "account e-mail (asked for on the terminal when not given)");
    c->add_flag("--password-stdin", password_stdin_,
                "read the password from standard input (without it, the password is asked for on the terminal "
                "and not shown)");
    return c;
  }
  int run(Context& ctx) override {
    if (email_.empty()) {
      if (password_stdin_ || !stdin_is_terminal())
        return ctx.fail("--email is required when there is no terminal to ask on");
      email_ = ask("E-mail: ");
    }
    const std::string password = read_secret("Password: ", password_stdin_);
    auto r = ctx.client()->request("POST", "/v1/auth/login",
                                   nlohmann::json{{"email", email_}, {"password", password}}.dump());
    if (!r) return ctx.fail(r.error().message);
    if (r->status != 200) {
      const int rc = report_http_error(ctx, *r);
      // Accounts are made, and forgotten passwords set, in the dashboard: say where.
      if (r->status == 401 && !ctx.json) {
        *ctx.err << "no account yet? sign up at " << ctx.server << "/#/signup; forgot the password? " << ctx.server
                 << "/#/forgot-password\n";
      }
      return rc;
    }
    auto j = nlohmann::json::parse(r->body);
    save_credentials(Credentials{ctx.server, j["token"], j["user"]["email"]});
    ctx.print(nlohmann::json{{"server", ctx.server}, {"user", j["user"]}},
              "Logged in to " + ctx.server + " as " + j["user"]["email"].get<std::string>());
    return 0;
  }

 private:
  std::string email_;
  bool password_stdin_ = false;
};

class LogoutCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    return parent.add_subcommand("logout", "end the session on the server and forget the token");
  }
  int run(Context& ctx) override {
    auto saved = load_credentials();
    if (!saved) {
      ctx.print(nlohmann::json{{"status", "not_logged_in"}, {"server", ctx.server}},
                "Not logged in to " + ctx.server + "; nothing to do.");
      return 0;
    }
    if (saved->server != ctx.server) {
      // The saved login is another server's: logging out of this one must not lose it.
      const std::string message = "not logged in to " + ctx.server + "; the saved login (" + saved->email + " on " +
                                  saved->server + ") is kept";
      return ctx.fail(message, nlohmann::json{{"error", {{"code", "not_logged_in"}, {"message", message}}}});
    }
    auto r = call(ctx, "POST", "/v1/auth/logout");
    if (!r) return ctx.fail(r.error().message);  // the server was not reached: keep the token to retry
    forget_credentials();
    ctx.print(nlohmann::json{{"status", "logged_out"}, {"server", ctx.server}, {"email", saved->email}},
              "Logged out of " + ctx.server + " (" + saved->email + ").");
    return 0;
  }
};

class WhoamiCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    return parent.add_subcommand("whoami", "show the account you are logged in as");
  }
  int run(Context& ctx) override {
    if (!ctx.token()) return ctx.fail("not logged in to " + ctx.server + "; run `gpunex login`");
    auto r = call(ctx, "GET", "/v1/me");
    if (!r) return ctx.fail(r.error().message);
    if (r->status != 200) return report_http_error(ctx, *r);
    auto j = nlohmann::json::parse(r->body);
    std::string roles;
    for (const auto& role : j["roles"]) roles += (roles.empty() ? "" : ", ") + role.get<std::string>();
    ctx.print(j, j["email"].get<std::string>() + " (" + j["full_name"].get<std::string>() + ")\nroles: " + roles);
    return 0;
  }
};

CLI::App* password_group(CLI::App& parent) {
  return command_group(parent, "password", "change your password, or have a link that sets a forgotten one mailed");
}

//! gpunex password change: POST /v1/me/password. Every other session of the account ends; this login stays.
class PasswordChangeCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* c = password_group(parent)->add_subcommand(
        "change",
        "change your password (asked for on the terminal, or two lines on standard input: the current "
        "one, then the new one); every other place you are signed in is signed out");
    c->add_flag("--password-stdin", stdin_, "read the current password, then the new one, from standard input");
    return c;
  }
  int run(Context& ctx) override {
    if (!ctx.token()) return ctx.fail("not logged in to " + ctx.server + "; run `gpunex login`");
    const bool typed = !stdin_ && stdin_is_terminal();
    const std::string current = read_secret("Current password: ", stdin_);
    const std::string next = read_secret("New password (at least 10 characters): ", stdin_);
    if (typed && read_secret("The new password again: ", false) != next) {
      return ctx.fail("the new passwords typed differ; nothing was changed");
    }
    auto r =
        call(ctx, "POST", "/v1/me/password", nlohmann::json{{"current_password", current}, {"new_password", next}});
    if (!r) return ctx.fail(r.error().message);
    if (r->status != 200) return report_http_error(ctx, *r);
    const auto j = nlohmann::json::parse(r->body, nullptr, false);
    const auto ended = j.is_object() ? j.value("other_sessions_ended", 0) : 0;
    ctx.print(j, "Password changed" +
                     (ended > 0 ? "; " + std::to_string(ended) +
                                      (ended == 1 ? " other session was" : " other sessions were") + " signed out."
                                : "."));
    return 0;
  }

 private:
  bool stdin_ = false;
};

//! gpunex password forgot --email E: POST /v1/auth/password-reset (no login needed).
class PasswordForgotCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* c = password_group(parent)->add_subcommand(
        "forgot", "mail a link that sets a new password to your account's address (open it in a browser)");
    c->add_option("--email", email_, "your account's e-mail address")->required();
    return c;
  }
  int run(Context& ctx) override {
    auto r = ctx.client()->request("POST", "/v1/auth/password-reset", nlohmann::json{{"email", email_}}.dump());
    if (!r) return ctx.fail(r.error().message);
    if (r->status != 202) return report_http_error(ctx, *r);
    const auto j = nlohmann::json::parse(r->body, nullptr, false);
    ctx.print(j, "If an account has the address " + format_text(member(j, "email")) +
                     ", a link that sets a new password was mailed to it; it works once, for " +
                     format_fixed(member(j, "link_valid_minutes"), 0) +
                     " minutes. Open it in a browser, then `gpunex login` with the new password.");
    return 0;
  }

 private:
  std::string email_;
};

}  // namespace

bool stdin_is_terminal() {
  return ::isatty(STDIN_FILENO) == 1;
}

std::string ask(const std::string& prompt) {
  std::cerr << prompt << std::flush;
  std::string line;
  std::getline(std::cin, line);
  return line;
}

std::string read_secret(const std::string& prompt, bool from_stdin) {
  std::string line;
  if (from_stdin || !stdin_is_terminal()) {
    std::getline(std::cin, line);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return line;
  }
  ::tcgetattr(STDIN_FILENO, &g_saved_tty);
  termios quiet = g_saved_tty;
  quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
  quiet.c_lflag |= ECHONL;  // the Enter key still moves to the next line
  auto old_int = std::signal(SIGINT, restore_echo_and_reraise);
  auto old_term = std::signal(SIGTERM, restore_echo_and_reraise);
  g_echo_off = 1;
  ::tcsetattr(STDIN_FILENO, TCSANOW, &quiet);
  // The prompt only once echo is off, so nothing typed after it can be shown.
  std::cerr << prompt << std::flush;
  std::getline(std::cin, line);
  ::tcsetattr(STDIN_FILENO, TCSANOW, &g_saved_tty);
  g_echo_off = 0;
  std::signal(SIGINT, old_int);
  std::signal(SIGTERM, old_term);
  return line;
}

std::unique_ptr<Command> make_login_command() { return std::make_unique<LoginCommand>(); }
std::unique_ptr<Command> make_logout_command() { return std::make_unique<LogoutCommand>(); }
std::unique_ptr<Command> make_whoami_command() { return std::make_unique<WhoamiCommand>(); }
std::unique_ptr<Command> make_password_change_command() {
  return std::make_unique<PasswordChangeCommand>();
}
std::unique_ptr<Command> make_password_forgot_command() {
  return std::make_unique<PasswordForgotCommand>();
}

}  // namespace gpunex::cli
