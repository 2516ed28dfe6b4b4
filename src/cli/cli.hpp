#pragma once
// The gpunex CLI: shared context (server, credentials, --json output) and the
// command type each verb implements, in the manner of DCGM's dcgmi Command.

#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "util/http_client.hpp"

namespace gpunex::cli {

//! Stored login: the server it is for and the session token.
struct Credentials {
  std::string server;
  std::string token;
  std::string email;
};

//! Where the CLI keeps its files: $XDG_CONFIG_HOME/gpunex or ~/.config/gpunex.
std::string config_dir();
//! The stored login, when there is one with a token.
std::optional<Credentials> load_credentials();
//! The server of the last login, kept after a logout too.
std::optional<std::string> saved_server();
//! Writes the credentials file with mode 0600 (the folder 0700).
void save_credentials(const Credentials& c);
//! Forgets the token (and the e-mail), keeping the server.
void forget_credentials();

struct Context {
  std::string server;  // resolved: --server, GPUNEX_SERVER, config file, stored login, default
  bool json = false;
  std::ostream* out = nullptr;
  std::ostream* err = nullptr;
  //! The verb that runs, so that an API error naming a field also names the option it came from
  //! (`max_hours` is --max-hours); `flag_of_field` for those whose option is named otherwise (gpu_count: --gpus).
  const CLI::App* command = nullptr;
  std::map<std::string, std::string> flag_of_field;

  //! A client for the server, with the stored token when it is for this server.
  std::unique_ptr<util::HttpClient> client() const;
  std::optional<std::string> token() const;
  //! Prints either the JSON value or the human text.
  void print(const nlohmann::json& value, const std::string& human) const;
  //! Prints an API error (JSON error body or transport failure) and returns the exit code.
  int fail(const std::string& message, const nlohmann::json& detail = nullptr) const;
};

//! One verb: registers its options, then runs.
class Command {
 public:
  virtual ~Command() = default;
  virtual CLI::App* add_to(CLI::App& parent) = 0;
  virtual int run(Context& ctx) = 0;
};

std::unique_ptr<Command> make_login_command();
std::unique_ptr<Command> make_logout_command();
std::unique_ptr<Command> make_whoami_command();
std::unique_ptr<Command> make_password_change_command();
std::unique_ptr<Command> make_password_forgot_command();
// Provider onboarding (onboarding_commands.cpp).
std::unique_ptr<Command> make_apply_command();
std::unique_ptr<Command> make_application_status_command();
std::unique_ptr<Command> make_review_list_command();
std::unique_ptr<Command> make_review_show_command();
std::unique_ptr<Command> make_review_approve_command();
std::unique_ptr<Command> make_review_reject_command();
std::unique_ptr<Command> make_review_needs_info_command();
std::unique_ptr<Command> make_keys_list_command();
std::unique_ptr<Command> make_keys_rotate_command();
std::unique_ptr<Command> make_keys_revoke_command();
// Prices, schedules and the marketplace (market_commands.cpp).
std::unique_ptr<Command> make_price_set_command();
std::unique_ptr<Command> make_price_list_command();
std::unique_ptr<Command> make_price_recommend_command();
std::unique_ptr<Command> make_schedule_set_command();
std::unique_ptr<Command> make_schedule_show_command();
//! `gpunex machines`, the group of a provider's machine commands (machine_commands.cpp, rental_commands.cpp).
CLI::App* machines_group(CLI::App& parent);
// Machines and the marketplace for everyday use (machine_commands.cpp, offers_commands.cpp).
std::unique_ptr<Command> make_machines_list_command();
std::unique_ptr<Command> make_machines_show_command();
std::unique_ptr<Command> make_machines_remove_command();
std::unique_ptr<Command> make_reliability_command();
std::unique_ptr<Command> make_fleet_command();
std::unique_ptr<Command> make_offers_search_command();
std::unique_ptr<Command> make_balance_command();
std::unique_ptr<Command> make_credit_command();
std::unique_ptr<Command> make_payouts_command();
std::unique_ptr<Command> make_payouts_set_command();
// A provider's earnings (earnings_commands.cpp).
std::unique_ptr<Command> make_earnings_command();
// Renting GPUs (rental_commands.cpp).
std::unique_ptr<Command> make_rent_command();
//! gpunex machines rentals | stop-rental ID: the rentals on a provider's machines.
std::unique_ptr<Command> make_machines_rentals_command();
std::unique_ptr<Command> make_machines_stop_rental_command();
std::unique_ptr<Command> make_rentals_list_command();
std::unique_ptr<Command> make_rentals_show_command();
std::unique_ptr<Command> make_rentals_logs_command();
std::unique_ptr<Command> make_rentals_stop_command();

//! Whether standard input is a terminal (a password can be asked for without echo).
bool stdin_is_terminal();
//! A line typed at the terminal after `prompt` (on standard error), echoed.
std::string ask(const std::string& prompt);
//! A password: from standard input when `from_stdin` (or when it is not a terminal), else typed without echo.
std::string read_secret(const std::string& prompt, bool from_stdin);

//! Sends a request with the stored token (and `headers`, e.g. Idempotency-Key); a transport failure is an error.
core::Result<util::HttpResponse> call(Context& ctx, const std::string& method, const std::string& path,
                                      const std::optional<nlohmann::json>& body = std::nullopt,
                                      const std::vector<std::pair<std::string, std::string>>& headers = {});
//! Turns a non-2xx response into an exit code with the server's error message printed.
int report_http_error(const Context& ctx, const util::HttpResponse& r);
//! GETs `path` and parses the JSON answer into `out`; on failure prints it and returns the exit code (0: ok).
int get_json(Context& ctx, const std::string& path, nlohmann::json& out);
//! Sends `body` (or nothing) with `method` and parses the 2xx JSON answer into `out`; 0, or the exit code.
int send_json(Context& ctx, const std::string& method, const std::string& path,
              const std::optional<nlohmann::json>& body, nlohmann::json& out);

//! The group subcommand ("machines", "offers") under `parent`, made on first use; it needs a verb.
CLI::App* command_group(CLI::App& parent, const std::string& name, const std::string& description);
//! Percent-encodes one path segment or query value.
using util::url_encode;
//! Text columns for people: each padded to its widest cell (UTF-8 aware), two spaces apart.
std::string format_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);
//! j[key] when j is an object that has it, else null: safe on a const value whatever the server sent.
const nlohmann::json& member(const nlohmann::json& j, const std::string& key);
//! A JSON string as is, or "-" when it is null or not a string.
std::string format_text(const nlohmann::json& v);
//! A JSON number with `decimals` places, or "-" when it is null or not a number.
std::string format_fixed(const nlohmann::json& v, int decimals);
//! A score (perf, reliability) with one decimal, rounded first as the offers give it (core::score_figure),
//! so a GPU's, a machine's and an offer's figure read alike; "-" when it is null.
std::string format_score(const nlohmann::json& v);

}  // namespace gpunex::cli
