// gpunex earnings: a provider's earnings tracker (GET /v1/provider/earnings, issue #18): the range's
// total (settled and not settled yet), today and the last 7 and 30 days, the pending payout, and
// the groups (--group-by day, gpu, model or machine); --csv prints the server's CSV instead.

#include <cctype>
#include <ostream>

#include "cli/cli.hpp"

namespace gpunex::cli {

namespace {

std::string method_text(const nlohmann::json& m) {
  if (m == "solana_usdc") return "USDC on Solana";
  if (m == "sepa") return "SEPA transfer";
  return "no payout method chosen yet";
}

std::string earnings_text(const nlohmann::json& e) {
  std::string out = "earnings from " + format_text(member(e, "from")) + " to " + format_text(member(e, "to")) + ": " +
                    format_text(member(e, "total")) + " USDC (settled " + format_text(member(e, "settled")) +
                    ", not settled yet " + format_text(member(e, "unsettled")) + ")\n";
  out += "today " + format_text(member(e, "today")) + ", last 7 days " + format_text(member(e, "last_7_days")) +
         ", last 30 days " + format_text(member(e, "last_30_days")) + " USDC\n";
  const auto& p = member(e, "pending_payout");
  const auto& period = member(e, "this_period");
  out += std::string(member(p, "schedule") == "monthly" ? "this month" : "this week") + " (since " +
         format_text(member(period, "from")) + "): " + format_text(member(period, "amount")) + " USDC\n";
  out += "pending payout: " + format_text(member(p, "amount")) + " USDC on " + format_text(member(p, "next_date")) +
         " (" + format_text(member(p, "schedule")) + ", " + method_text(member(p, "method")) + "); " +
         (member(p, "above_minimum") == true ? "above the minimum of " : "below the minimum of ") +
         format_text(member(p, "minimum")) + " USDC\n";
  if (member(p, "held_reason").is_string()) out += member(p, "held_reason").get<std::string>() + "\n";
  const auto& groups = member(e, "groups");
  if (!groups.is_array() || groups.empty()) return out + "no earnings in this range";
  std::vector<std::vector<std::string>> rows;
  for (const auto& g : groups) {
    rows.push_back({format_text(member(g, "key")), format_text(member(g, "settled")),
                    format_text(member(g, "unsettled")), format_text(member(g, "total"))});
  }
  std::string key = format_text(member(e, "group_by"));
  for (auto& c : key) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  out += format_table({key, "SETTLED", "NOT SETTLED", "TOTAL USDC"}, rows);
  return out;
}

class EarningsCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* c = parent.add_subcommand("earnings", "your earnings as a provider (GET /v1/provider/earnings)");
    c->add_option("--group-by", group_by_, "day (default), gpu, model or machine")
        ->check(CLI::IsMember({"day", "gpu", "model", "machine"}))
        ->type_name("BY");
    c->add_option("--from", from_, "the first day (2026-11-01) or an RFC 3339 time; default 30 days before --to")
        ->type_name("DATE");
    c->add_option("--to", to_, "the end, exclusive (2026-12-01) or an RFC 3339 time; default now")->type_name("DATE");
    c->add_flag("--csv", csv_, "print the groups as CSV (for a spreadsheet) instead");
    return c;
  }
  int run(Context& ctx) override {
    if (csv_ && ctx.json) return ctx.fail("--csv and --json exclude each other");
    std::string query = "?group_by=" + url_encode(group_by_);
    if (!from_.empty()) query += "&from=" + url_encode(from_);
    if (!to_.empty()) query += "&to=" + url_encode(to_);
    if (!csv_) {
      nlohmann::json earnings;
      if (int rc = get_json(ctx, "/v1/provider/earnings" + query, earnings)) return rc;
      ctx.print(earnings, earnings_text(earnings));
      return 0;
    }
    if (!ctx.token()) return ctx.fail("not logged in to " + ctx.server + "; run `gpunex login`");
    auto r = call(ctx, "GET", "/v1/provider/earnings" + query + "&format=csv");
    if (!r) return ctx.fail(r.error().message);
    if (r->status != 200) return report_http_error(ctx, *r);
    *ctx.out << r->body;
    return 0;
  }

 private:
  std::string group_by_ = "day", from_, to_;
  bool csv_ = false;
};

}  // namespace

std::unique_ptr<Command> make_earnings_command() {
  return std::make_unique<EarningsCommand>();
}

}  // namespace gpunex::cli
