// gpunex offers search: the marketplace's offers visible now, with the API's filters.

#include "cli/cli.hpp"
#include "core/page_limits.hpp"

namespace gpunex::cli {

namespace {

//! One offer's rank_explanation as a line: rank = reliability × value × tier × commitment, each factor
//! with what it comes from (DESIGN §4's marketplace rank).
std::string why_text(const nlohmann::json& o) {
  const auto& e = member(o, "rank_explanation");
  const auto& rel = member(e, "reliability");
  const auto& value = member(e, "value");
  const auto& tier = member(e, "tier");
  const auto& commitment = member(e, "commitment");
  return format_text(member(o, "machine_id")) + " " + format_text(member(o, "model")) + ": rank " +
         format_fixed(member(e, "rank"), 4) + " = reliability " + format_fixed(member(rel, "factor"), 4) + " (" +
         format_score(member(rel, "value")) + ", " + format_text(member(rel, "source")) + ") × value " +
         format_fixed(member(value, "factor"), 4) + " (" + format_fixed(member(value, "perf_per_usdc"), 2) +
         " perf/USDC vs the model's median " + format_fixed(member(value, "model_median_perf_per_usdc"), 2) +
         ") × tier " + format_fixed(member(tier, "factor"), 4) + " (" + format_text(member(tier, "tier")) +
         ") × commitment " + format_fixed(member(commitment, "factor"), 4) + " (" +
         format_fixed(member(commitment, "months"), 0) + " months)";
}

std::string offers_text(const nlohmann::json& j, bool why) {
  if (member(j, "known_models").is_array()) {
    // The model filter named no catalog model: say which exist.
    std::string ids;
    for (const auto& m : member(j, "known_models")) ids += (ids.empty() ? "" : ", ") + format_text(member(m, "id"));
    return "no offers: no GPU model matches the model filter; models: " + ids;
  }
  if (member(j, "items").empty()) return "no offers match";
  std::vector<std::vector<std::string>> rows;
  for (const auto& o : member(j, "items")) {
    rows.push_back({format_text(member(o, "machine_id")), format_text(member(o, "model")),
                    format_fixed(member(o, "gpu_count_available"), 0), format_text(member(o, "usdc_per_gpu_hour")),
                    format_score(member(o, "perf_score")),
                    format_score(member(o, "reliability")) + (o.value("reliability_is_prior", false) ? " (prior)" : ""),
                    format_text(member(o, "tier")), format_text(member(member(o, "location"), "region")),
                    format_fixed(member(o, "rank"), 4),
                    // Only the operator's demo mode offers simulated GPUs; such an offer says so (issue 21).
                    std::string(o.value("simulated", false) ? "simulated" : "no")});
  }
  std::string out =
      format_table({"MACHINE", "MODEL", "GPUS", "USDC/GPU-H", "PERF", "RELIABILITY", "TIER", "REGION", "RANK",
                                "SIMULATED"}, rows);
  if (why) {
    for (const auto& o : member(j, "items")) out += why_text(o) + "\n";
  }
  const auto shown = member(j, "items").size();
  out += std::to_string(shown) + (shown == 1 ? " offer" : " offers");
  if (member(j, "total").is_number()) out += " of " + format_fixed(member(j, "total"), 0);
  if (member(j, "next_cursor").is_string())
    out += "; more with --cursor " + member(j, "next_cursor").get<std::string>();
  return out;
}

class OffersSearchCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* g = command_group(parent, "offers", "the marketplace: GPUs for rent now");
    g->alias("market");  // the verb's earlier name
    auto* c = g->add_subcommand("search", "offers visible now (GET /v1/marketplace/offers), best ranked first");
    c->add_option("--model", model_, "a model as you would write it: H100-SXM, \"rtx 4090\", 4090, A100")
        ->type_name("MODEL");
    c->add_option("--region", region_, "region, e.g. eu-west")->type_name("REGION");
    c->add_option("--min-vram-gb", min_vram_gb_, "least VRAM per GPU, GB")->type_name("GB");
    c->add_option("--max-price", max_price_, "most USDC per GPU-hour, e.g. 1.50")->type_name("USDC");
    c->add_option("--min-reliability", min_reliability_, "least reliability score, 0 to 100")->type_name("0-100");
    c->add_option("--tier", tier_, "community or enterprise")->type_name("TIER");
    c->add_option("--sort", sort_, "rank (default), price or perf")->type_name("ORDER");
    c->add_option("--limit", limit_,
                  "offers per page, 1 to " + std::to_string(core::kMaxOffersPageLimit) + " (default " +
                      std::to_string(core::kDefaultPageLimit) + ")")
        ->type_name("N");
    c->add_option("--cursor", cursor_, "the next page, as the previous page said")->type_name("CURSOR");
    c->add_flag("--why", why_, "also say why each offer ranks where it does (its rank's factors)");
    return c;
  }
  int run(Context& ctx) override {
    std::string query;
    for (const auto& [key, value] :
         std::vector<std::pair<std::string, std::string>>{{"model", model_},
                                                          {"region", region_},
                                                          {"min_vram_gb", min_vram_gb_},
                                                          {"max_price", max_price_},
                                                          {"min_reliability", min_reliability_},
                                                          {"tier", tier_},
                                                          {"sort", sort_},
                                                          {"limit", limit_},
                                                          {"cursor", cursor_}}) {
      if (!value.empty()) query += (query.empty() ? "?" : "&") + key + "=" + url_encode(value);
    }
    // Public: no login needed, and a stored token is sent when there is one.
    auto r = call(ctx, "GET", "/v1/marketplace/offers" + query);
    if (!r) return ctx.fail(r.error().message);
    if (r->status != 200) return report_http_error(ctx, *r);
    const auto j = nlohmann::json::parse(r->body, nullptr, false);
    if (!j.is_object() || !member(j, "items").is_array()) return ctx.fail("the server's list of offers is not JSON");
    ctx.print(j, offers_text(j, why_));
    return 0;
  }

 private:
  std::string model_, region_, min_vram_gb_, max_price_, min_reliability_, tier_, sort_, limit_, cursor_;
  bool why_ = false;
};

}  // namespace

std::unique_ptr<Command> make_offers_search_command() {
  return std::make_unique<OffersSearchCommand>();
}

}  // namespace gpunex::cli
