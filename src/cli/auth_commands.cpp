// gpunex login | logout | whoami

#include <termios.h>
#include <unistd.h>

#include <iostream>

#include "cli/cli.hpp"

namespace gpunex::cli {

namespace {

std::string read_secret(const std::string& prompt, bool from_stdin) {
  std::string line;
  if (from_stdin || !::isatty(STDIN_FILENO)) {
    std::getline(std::cin, line);
    return line;
  }
  std::cerr << prompt << std::flush;
  termios old{};
  tcgetattr(STDIN_FILENO, &old);
  termios quiet = old;
  quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
  tcsetattr(STDIN_FILENO, TCSANOW, &quiet);
  std::getline(std::cin, line);
  tcsetattr(STDIN_FILENO, TCSANOW, &old);
  std::cerr << "\n";
  return line;
}

class LoginCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* c = parent.add_subcommand("login", "log in and keep the session token (mode 0600)");
    c->add_option("--email", email_, "account e-mail")->required();
    c->add_flag("--password-stdin", password_stdin_, "read the password from standard input");
    return c;
  }
  int run(Context& ctx) override {
    const std::string password = read_secret("Password: ", password_stdin_);
    auto r = ctx.client()->request("POST", "/v1/auth/login",
                                   nlohmann::json{{"email", email_}, {"password", password}}.dump());
    if (!r) return ctx.fail(r.error().message);
    if (r->status != 200) return report_http_error(ctx, *r);
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

}  // namespace

std::unique_ptr<Command> make_login_command() { return std::make_unique<LoginCommand>(); }
std::unique_ptr<Command> make_logout_command() { return std::make_unique<LogoutCommand>(); }
std::unique_ptr<Command> make_whoami_command() { return std::make_unique<WhoamiCommand>(); }

}  // namespace gpunex::cli
