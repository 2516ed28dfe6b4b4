// gpunex balance: the signed-in account's prepaid USDC, how long it lasts at the current spend,
// and (--history) the ledger lines behind it.

#include "cli/cli.hpp"

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
    c->add_option("--limit", limit_, "transactions per page, 1 to 500 (default 50)")->type_name("N");
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

}  // namespace

std::unique_ptr<Command> make_balance_command() { return std::make_unique<BalanceCommand>(); }

}  // namespace gpunex::cli
