// gpunex: the command-line client. It speaks only the public REST API.

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <vector>

#include <toml++/toml.h>

#include "cli/cli.hpp"
#include "core/protocol_version.hpp"

using namespace gpunex;  // NOLINT: main only

namespace {

// --server, then GPUNEX_SERVER, then `server = "..."` in the config file, then the last login's server
// (kept after a logout).
std::string resolve_server(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* e = std::getenv("GPUNEX_SERVER"); e && *e) return e;
  try {
    auto tbl = toml::parse_file(cli::config_dir() + "/config.toml");
    if (auto s = tbl["server"].value<std::string>()) return *s;
  } catch (const std::exception&) {
    // no config file, or unreadable: fall through
  }
  if (auto s = cli::saved_server()) return *s;
  return "http://127.0.0.1:8080";
}

//! For a parse that stopped at a word that is no command ("gpunex catalog", "gpunex machines frob"): the
//! line that names it and the commands there, instead of CLI11's "A subcommand is required". Empty when the
//! error is another.
std::string unknown_command_text(const CLI::App& app) {
  const CLI::App* at = &app;
  std::string path = "gpunex";
  for (bool deeper = true; deeper;) {
    deeper = false;
    for (const CLI::App* sub : at->get_subcommands({})) {
      if (!sub->parsed()) continue;
      at = sub;
      path += " " + sub->get_name();
      deeper = true;
      break;
    }
  }
  const auto left = at->remaining();
  if (left.empty() || left.front().starts_with("-") || at->get_subcommands({}).empty()) return {};
  std::string names;
  for (const CLI::App* sub : at->get_subcommands({})) names += (names.empty() ? "" : ", ") + sub->get_name();
  return "'" + left.front() + "' is not a command of `" + path + "`; the commands are: " + names + " (`" + path +
         " --help` says more)";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gpunex: the GPUnex command-line client"};
  std::string server_flag;
  bool json = false;
  app.add_option("--server", server_flag, "server URL (default: $GPUNEX_SERVER, config.toml, last login)");
  app.add_flag("--json", json, "print JSON instead of text");
  app.set_version_flag("--version", std::string("gpunex ") + gpunex::core::kReleaseVersion);
  app.require_subcommand(1);
  app.footer(
      "Exit status: 0 done; 1 the server refused the request, could not be reached, or a file could not be "
      "read; 2 the command line is wrong (an unknown command or option, a missing or bad value).");

  std::vector<std::pair<CLI::App*, std::unique_ptr<cli::Command>>> commands;
  for (auto make :
       {cli::make_login_command, cli::make_logout_command, cli::make_whoami_command, cli::make_password_change_command,
        cli::make_password_forgot_command, cli::make_apply_command, cli::make_application_status_command,
        cli::make_review_list_command, cli::make_review_show_command, cli::make_review_approve_command,
        cli::make_review_reject_command, cli::make_review_needs_info_command, cli::make_keys_list_command,
        cli::make_keys_rotate_command, cli::make_keys_revoke_command, cli::make_price_set_command,
        cli::make_price_list_command, cli::make_price_recommend_command, cli::make_schedule_set_command,
        cli::make_schedule_show_command, cli::make_machines_list_command, cli::make_machines_show_command,
        cli::make_machines_rentals_command, cli::make_machines_stop_rental_command, cli::make_machines_remove_command,
        cli::make_reliability_command, cli::make_fleet_command, cli::make_offers_search_command,
        cli::make_balance_command, cli::make_credit_command, cli::make_earnings_command, cli::make_rent_command,
        cli::make_rentals_list_command, cli::make_rentals_show_command, cli::make_rentals_logs_command,
        // `payouts set` before `payouts`: the first parsed command runs, and `payouts` is parsed with it.
        cli::make_rentals_stop_command, cli::make_payouts_set_command, cli::make_payouts_command}) {
    auto cmd = make();
    CLI::App* sub = cmd->add_to(app);
    sub->add_flag("--json", json, "print JSON instead of text");
    commands.emplace_back(sub, std::move(cmd));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // A command line that is wrong exits 2, whatever CLI11's own code for the kind of mistake (104-109);
    // --help and --version exit 0.
    if (const auto text = unknown_command_text(app); !text.empty() && dynamic_cast<const CLI::RequiredError*>(&e)) {
      std::cerr << text << "\n";
      return 2;
    }
    return app.exit(e) == 0 ? 0 : 2;
  }

  cli::Context ctx;
  ctx.server = resolve_server(server_flag);
  while (!ctx.server.empty() && ctx.server.back() == '/') ctx.server.pop_back();
  ctx.json = json;
  ctx.out = &std::cout;
  ctx.err = &std::cerr;
  for (auto& [sub, cmd] : commands) {
    if (!sub->parsed()) continue;
    ctx.command = sub;
    return cmd->run(ctx);
  }
  return 2;
}
