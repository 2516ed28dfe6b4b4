// gpunex offers search: the marketplace's offers visible now, with the API's filters.

#include "cli/cli.hpp"
#include "core/page_limits.hpp"

namespace gpunex::cli {

namespace {

std::string offers_text(const nlohmann::json& j) {
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
    ctx.print(j, offers_text(j));
    return 0;
  }

 private:
  std::string model_, region_, min_vram_gb_, max_price_, min_reliability_, tier_, sort_, limit_, cursor_;
};

}  // namespace

std::unique_ptr<Command> make_offers_search_command() {
  return std::make_unique<OffersSearchCommand>();
}

}  // namespace gpunex::cli
