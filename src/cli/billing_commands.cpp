// gpunex balance: the signed-in account's prepaid USDC, how long it lasts at the current spend,
// and (--history) the ledger lines behind it. gpunex payouts: a provider's payouts, where they go,
// and the next one.

#include "cli/cli.hpp"
#include "core/page_limits.hpp"

namespace gpunex::cli {

namespace {

std::string balance_text(const nlohmann::json& b, const nlohmann::json* history) {
  std::string out = "balance: " + format_text(member(b, "balance")) + " " + format_text(member(b, "currency"));
  const auto& hours = member(b, "hours_left");
  out += hours.is_number() ? "; about " + format_fixed(hours, 0) + " hours at " +
                                 format_text(member(b, "spend_per_hour")) + " USDC/hour"
                           : "; nothing is being spent now";
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

std::string payouts_text(const nlohmann::json& settings, const nlohmann::json& earnings, const nlohmann::json& list) {
  std::string out;
  const auto& current = member(settings, "current");
  if (current.is_object()) {
    out += "paid " + format_text(member(current, "schedule")) + " to " + format_text(member(current, "destination_text")) +
           " (" + format_text(member(current, "method")) + ")\n";
  } else {
    out += "no payout destination yet: set one on the dashboard's Earnings page\n";
  }
  const auto& pending = member(settings, "pending");
  if (pending.is_object()) {
    out += "changing to " + format_text(member(pending, "destination_text")) + " from " +
           format_text(member(pending, "effective_at")) + "\n";
  }
  const auto& next = member(earnings, "pending_payout");
  if (next.is_object()) {
    out += "next payout " + format_text(member(next, "next_date")) + ": " + format_text(member(next, "amount")) +
           " USDC so far, minimum " + format_text(member(next, "minimum")) +
           (member(next, "above_minimum") == true ? "" : " (not reached yet)") + "\n";
  }
  const auto& items = member(list, "items");
  if (items.empty()) return out + "no payouts yet";
  std::vector<std::vector<std::string>> rows;
  for (const auto& p : items) {
    const auto& sepa = member(p, "sepa");
    const std::string reference = sepa.is_object() ? format_text(member(sepa, "end_to_end_id")) + " (" +
                                                         format_text(member(sepa, "eur_amount")) + " EUR)"
                                                   : "";
    const auto& reason = member(p, "failure_reason");
    rows.push_back({format_text(member(p, "payout_day")), format_text(member(p, "amount")),
                    format_text(member(p, "method")), format_text(member(p, "status")), reference,
                    reason.is_string() ? reason.get<std::string>() : "", format_text(member(p, "id"))});
  }
  return out + format_table({"DAY", "USDC", "METHOD", "STATUS", "BANK REFERENCE", "WHY", "PAYOUT"}, rows);
}

class PayoutsCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    return parent.add_subcommand("payouts",
                                 "your payouts as a provider, where they go and the next one (GET /v1/provider/payouts)");
  }
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

std::unique_ptr<Command> make_balance_command() { return std::make_unique<BalanceCommand>(); }

}  // namespace gpunex::cli
