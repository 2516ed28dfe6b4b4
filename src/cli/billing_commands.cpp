// gpunex balance: the signed-in account's prepaid USDC, how long it lasts at the current spend,
// and (--history) the ledger lines behind it. gpunex payouts: a provider's payouts, where they go,
// and the next one.

#include "cli/cli.hpp"
#include "core/page_limits.hpp"

namespace gpunex::cli {

namespace {

//! "about 3 hours", "about 1 hour", or under an hour "about 40 minutes" (0: "nothing").
std::string time_left_text(std::int64_t minutes) {
  if (minutes <= 0) return "nothing";
  const auto [n, unit] =
      minutes < 60 ? std::pair{minutes, std::string("minute")} : std::pair{minutes / 60, std::string("hour")};
  return "about " + std::to_string(n) + " " + unit + (n == 1 ? "" : "s");
}

std::string balance_text(const nlohmann::json& b, const nlohmann::json* history) {
  // What the customer can spend: the balance less what running rentals have used since their last
  // settlement (the balance itself moves only when they are settled, hourly or at their end).
  const std::string currency = format_text(member(b, "currency"));
  std::string out;
  if (format_text(member(b, "unsettled")) == "0.000000" || !member(b, "unsettled").is_string()) {
    out = "balance: " + format_text(member(b, "balance")) + " " + currency;
  } else {
    out = "available: " + format_text(member(b, "available")) + " " + currency + " (balance " +
          format_text(member(b, "balance")) + ", less " + format_text(member(b, "unsettled")) +
          " used by running rentals since their last settlement)";
  }
  const auto& minutes = member(b, "minutes_left");
  if (!minutes.is_number_integer()) {
    out += "; nothing is being spent now";
  } else {
    const auto m = minutes.get<std::int64_t>();
    out += "; " + time_left_text(m) + " left at " + format_text(member(b, "spend_per_hour")) + " USDC/hour" +
           (m < 60 ? ": your running rentals stop when it is used up" : "");
  }
  out += "\nto add credit: " + (member(b, "payment_instructions").is_string()
                                    ? member(b, "payment_instructions").get<std::string>()
                                    : std::string("ask the operator of this GPUnex how to pay, quoting your account's "
                                                  "e-mail; they add the credit when your payment arrives"));
  if (history == nullptr) return out;
  out += "\n";
  const auto& items = member(*history, "items");
  if (items.empty()) return out + "no transactions yet";
  std::vector<std::vector<std::string>> rows;
  for (const auto& i : items) {
    rows.push_back({format_text(member(i, "at")), format_text(member(i, "kind")), format_text(member(i, "amount")),
                    format_text(member(i, "reference")), format_text(member(i, "id"))});
  }
  out += format_table({"AT", "KIND", "USDC", "REFERENCE", "TRANSACTION"}, rows);
  if (member(*history, "next_cursor").is_string()) {
    out += "more with --cursor " + member(*history, "next_cursor").get<std::string>();
  }
  return out;
}

class BalanceCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* c = parent.add_subcommand("balance", "your prepaid USDC balance (GET /v1/billing/balance)");
    c->add_flag("--history", history_, "also list the transactions behind it, newest first");
    c->add_option("--limit", limit_,
                  "transactions per page, 1 to " + std::to_string(core::kMaxPageLimit) + " (default " +
                      std::to_string(core::kDefaultPageLimit) + ")")
        ->type_name("N");
    c->add_option("--cursor", cursor_, "the next page of transactions, as the previous page said")->type_name("CURSOR");
    return c;
  }
  int run(Context& ctx) override {
    nlohmann::json balance;
    if (int rc = get_json(ctx, "/v1/billing/balance", balance)) return rc;
    if (!history_) {
      ctx.print(balance, balance_text(balance, nullptr));
      return 0;
    }
    std::string query;
    if (!limit_.empty()) query += "?limit=" + url_encode(limit_);
    if (!cursor_.empty()) query += (query.empty() ? "?" : "&") + std::string("cursor=") + url_encode(cursor_);
    nlohmann::json history;
    if (int rc = get_json(ctx, "/v1/billing/history" + query, history)) return rc;
    nlohmann::json both = balance;
    both["history"] = history;
    ctx.print(both, balance_text(balance, &history));
    return 0;
  }

 private:
  bool history_ = false;
  std::string limit_, cursor_;
};

//! gpunex credit: an admin adds prepaid credit to a customer (POST /v1/admin/credits), as the dashboard's
//! Credit page and `gpunex-server admin credit` do; a reference is never credited twice, so a retry is safe.
class CreditCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* c = parent.add_subcommand("credit", "add prepaid USDC credit to a customer's balance (admins)");
    c->add_option("--email", email_, "the customer's e-mail")->required();
    c->add_option("--amount", amount_, "USDC, a decimal such as 100.00")->required()->type_name("USDC");
    c->add_option("--reference", reference_,
                  "the payment it is for (a bank transfer, an invoice); the same reference is never credited twice")
        ->required();
    return c;
  }
  int run(Context& ctx) override {
    if (!ctx.token()) return ctx.fail("not logged in to " + ctx.server + "; run `gpunex login`");
    auto r = call(ctx, "POST", "/v1/admin/credits",
                  nlohmann::json{{"email", email_}, {"amount", amount_}, {"reference", reference_}});
    if (!r) return ctx.fail(r.error().message);
    if (r->status != 200 && r->status != 201) return report_http_error(ctx, *r);
    const auto j = nlohmann::json::parse(r->body, nullptr, false);
    ctx.print(j, std::string(j.value("repeated", false) ? "Already credited: " : "Credited ") +
                     format_text(member(j, "amount")) + " USDC to " + format_text(member(j, "email")) +
                     " (transaction " + format_text(member(j, "transaction_id")) + "); balance " +
                     format_text(member(j, "balance")) + " USDC");
    return 0;
  }

 private:
  std::string email_, amount_, reference_;
};

std::string payouts_text(const nlohmann::json& settings, const nlohmann::json& earnings, const nlohmann::json& list) {
  std::string out;
  const auto& current = member(settings, "current");
  if (current.is_object()) {
    out += "paid " + format_text(member(current, "schedule")) + " to " + format_text(member(current, "destination_text")) +
           " (" + format_text(member(current, "method")) + ")\n";
  } else {
    out += "no payout destination yet: set one with `gpunex payouts set` or on the dashboard's Earnings page\n";
  }
  const auto& pending = member(settings, "pending");
  if (pending.is_object()) {
    out += "changing to " + format_text(member(pending, "destination_text")) + " from " +
           format_text(member(pending, "effective_at")) + "\n";
  }
  const auto& next = member(earnings, "pending_payout");
  if (next.is_object()) {
    out +=
        "next payout " + format_text(member(next, "next_date")) + ": " + format_text(member(next, "amount")) +
        " USDC so far, minimum " + format_text(member(next, "minimum")) +
        (member(next, "above_minimum") == true ? "" : " (not reached yet)") +
        (member(next, "method").is_string() ? "" : "; nothing is paid until you choose a method (gpunex payouts set)") +
        "\n";
    if (member(next, "held_reason").is_string()) out += member(next, "held_reason").get<std::string>() + "\n";
  }
  const auto& items = member(list, "items");
  if (items.empty()) return out + "no payouts yet";
  std::vector<std::vector<std::string>> rows;
  for (const auto& p : items) {
    // Where it went (the destination when it was made), and how to find it: the bank's end-to-end id, or
    // the Solana transaction's signature with its confirmation.
    const auto& sepa = member(p, "sepa");
    const auto& solana = member(p, "solana");
    const std::string reference =
        sepa.is_object()
            ? format_text(member(sepa, "end_to_end_id")) + " (" + format_text(member(sepa, "eur_amount")) + " EUR)"
        : solana.is_object() ? format_text(member(solana, "signature")) + " (" +
                                   (member(solana, "confirmation_status").is_string()
                                        ? member(solana, "confirmation_status").get<std::string>()
                                        : std::string("not confirmed yet")) +
                                   ")"
                             : "";
    const auto& reason = member(p, "failure_reason");
    rows.push_back({format_text(member(p, "payout_day")), format_text(member(p, "amount")),
                    format_text(member(p, "method")), format_text(member(p, "destination_text")),
                    format_text(member(p, "status")), reference, reason.is_string() ? reason.get<std::string>() : "",
                    format_text(member(p, "id"))});
  }
  return out + format_table({"DAY", "USDC", "METHOD", "TO", "STATUS", "REFERENCE", "WHY", "PAYOUT"}, rows);
}

CLI::App* payouts_group(CLI::App& parent) {
  auto* g = command_group(parent, "payouts",
                          "your payouts as a provider, where they go and the next one (GET /v1/provider/payouts); "
                          "`payouts set` changes where they go");
  g->require_subcommand(0, 1);  // `gpunex payouts` alone lists them
  return g;
}

std::string settings_text(const nlohmann::json& settings) {
  std::string out;
  const auto& current = member(settings, "current");
  if (current.is_object()) {
    out += "Paid " + format_text(member(current, "schedule")) + " to " +
           format_text(member(current, "destination_text")) + " (" + format_text(member(current, "method")) + ")";
  }
  const auto& pending = member(settings, "pending");
  if (pending.is_object()) {
    out += std::string(out.empty() ? "" : "\n") + "From " + format_text(member(pending, "effective_at")) + ": paid " +
           format_text(member(pending, "schedule")) + " to " + format_text(member(pending, "destination_text")) + " (" +
           format_text(member(pending, "method")) +
           "); a new destination waits out a cooling-off period, and you are notified";
  }
  return out.empty() ? "no payout destination" : out;
}

//! gpunex payouts set: PUT /v1/provider/payout-settings, confirmed with the account password.
class PayoutsSetCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* c = payouts_group(parent)->add_subcommand(
        "set", "where and how often you are paid: USDC on Solana (--wallet) or SEPA (--iban, --account-holder)");
    c->add_option("--wallet", wallet_, "your Solana wallet address (base58): USDC is sent to its token account")
        ->type_name("ADDRESS");
    c->add_option("--iban", iban_, "the IBAN of an account in a SEPA country")->type_name("IBAN");
    c->add_option("--account-holder", holder_, "the account holder's name, as the bank knows it")->type_name("NAME");
    c->add_option("--bic", bic_, "the bank's BIC (optional)")->type_name("BIC");
    c->add_option("--schedule", schedule_,
                  "weekly (Mondays, above the weekly minimum) or monthly (default: as now, else weekly)")
        ->check(CLI::IsMember({"weekly", "monthly"}))
        ->type_name("WHEN");
    c->add_flag("--password-stdin", password_stdin_,
                "read the account password from standard input (else it is asked for on the terminal)");
    c->footer(
        "Examples:\n"
        "  gpunex payouts set --wallet 7xKX...AsU\n"
        "  gpunex payouts set --iban 'DE89 3704 0044 0532 0130 00' --account-holder 'Ada Lovelace' --schedule monthly\n"
        "A new destination takes effect after a cooling-off period (the answer says from when), and you are\n"
        "notified of the change.");
    return c;
  }
  int run(Context& ctx) override {
    if (wallet_.empty() == iban_.empty()) return ctx.fail("give either --wallet (USDC on Solana) or --iban (SEPA)");
    if (!iban_.empty() && holder_.empty()) return ctx.fail("--account-holder is required with --iban");
    if (iban_.empty() && (!holder_.empty() || !bic_.empty())) {
      return ctx.fail("--account-holder and --bic go with --iban");
    }
    nlohmann::json now;
    if (int rc = get_json(ctx, "/v1/provider/payout-settings", now)) return rc;
    std::string schedule = schedule_;
    if (schedule.empty()) {
      const auto& in_force = member(now, "pending").is_object() ? member(now, "pending") : member(now, "current");
      schedule = member(in_force, "schedule").is_string() ? member(in_force, "schedule").get<std::string>() : "weekly";
    }
    nlohmann::json body{{"schedule", schedule}};
    if (!wallet_.empty()) {
      body["method"] = "solana_usdc";
      body["wallet_address"] = wallet_;
    } else {
      body["method"] = "sepa";
      body["iban"] = iban_;
      body["account_holder"] = holder_;
      if (!bic_.empty()) body["bic"] = bic_;
    }
    body["password"] = read_secret("Password: ", password_stdin_);
    auto r = call(ctx, "PUT", "/v1/provider/payout-settings", body);
    if (!r) return ctx.fail(r.error().message);
    if (r->status < 200 || r->status >= 300) return report_http_error(ctx, *r);
    auto settings = nlohmann::json::parse(r->body, nullptr, false);
    if (settings.is_discarded()) return ctx.fail("the server's answer is not JSON");
    ctx.print(settings, settings_text(settings));
    return 0;
  }

 private:
  std::string wallet_, iban_, holder_, bic_, schedule_;
  bool password_stdin_ = false;
};

class PayoutsCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override { return payouts_group(parent); }
  int run(Context& ctx) override {
    nlohmann::json settings, earnings, list;
    if (int rc = get_json(ctx, "/v1/provider/payout-settings", settings)) return rc;
    if (int rc = get_json(ctx, "/v1/provider/earnings", earnings)) return rc;
    if (int rc = get_json(ctx, "/v1/provider/payouts", list)) return rc;
    if (!member(list, "items").is_array()) return ctx.fail("the server's list of payouts has no items");
    nlohmann::json all = list;
    all["settings"] = settings;
    all["pending_payout"] = member(earnings, "pending_payout");
    ctx.print(all, payouts_text(settings, earnings, list));
    return 0;
  }
};

}  // namespace

std::unique_ptr<Command> make_payouts_command() { return std::make_unique<PayoutsCommand>(); }
std::unique_ptr<Command> make_payouts_set_command() {
  return std::make_unique<PayoutsSetCommand>();
}

std::unique_ptr<Command> make_balance_command() { return std::make_unique<BalanceCommand>(); }
std::unique_ptr<Command> make_credit_command() {
  return std::make_unique<CreditCommand>();
}

}  // namespace gpunex::cli
