// gpunex price set|list | schedule set|show | market search

#include <cctype>
#include <fstream>
#include <functional>
#include <sstream>

#include <toml++/toml.h>

#include "cli/cli.hpp"

namespace gpunex::cli {

namespace {

//! Runs one request and prints the JSON answer, or the human text made from it.
int request_and_print(Context& ctx, const std::string& method, const std::string& path,
                      const std::optional<nlohmann::json>& body,
                      const std::function<std::string(const nlohmann::json&)>& human) {
  auto r = call(ctx, method, path, body);
  if (!r) return ctx.fail(r.error().message);
  if (r->status < 200 || r->status >= 300) return report_http_error(ctx, *r);
  const auto j = nlohmann::json::parse(r->body);
  ctx.print(j, human(j));
  return 0;
}

std::string url_encode(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

class PriceCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* c = parent.add_subcommand("price", "your rates per GPU model (USDC per GPU-hour)");
    set_ = c->add_subcommand("set", "set the rate for a model; running rentals keep theirs");
    set_->add_option("MODEL", model_, "catalog id, e.g. H100-SXM")->required();
    set_->add_option("USDC", usdc_, "USDC per GPU-hour, up to 6 decimals, e.g. 2.50")->required();
    list_ = c->add_subcommand("list", "your current rates");
    recommend_ = c->add_subcommand("recommend", "the platform's recommended rate for a model");
    recommend_->add_option("MODEL", model_, "catalog id")->required();
    recommend_->add_option("--region", region_, "region (default: yours)");
    c->require_subcommand(1);
    // --json (added by main to this command) may also follow the verb: `price set L40S 2 --json`.
    for (auto* sub : c->get_subcommands({})) sub->fallthrough();
    return c;
  }
  int run(Context& ctx) override {
    if (set_->parsed()) {
      return request_and_print(ctx, "PUT", "/v1/provider/prices/" + url_encode(model_),
                               nlohmann::json{{"usdc_per_gpu_hour", usdc_}}, [](const nlohmann::json& j) {
                                 return j["model"].get<std::string>() + ": " +
                                        j["usdc_per_gpu_hour"].get<std::string>() + " USDC per GPU-hour from " +
                                        j["started_at"].get<std::string>();
                               });
    }
    if (recommend_->parsed()) {
      std::string path = "/v1/provider/price-recommendations?model=" + url_encode(model_);
      if (!region_.empty()) path += "&region=" + url_encode(region_);
      return request_and_print(ctx, "GET", path, std::nullopt, [](const nlohmann::json& j) {
        return j["model"].get<std::string>() + " in " + j["region"].get<std::string>() + ": " +
               j["recommended"].get<std::string>() + " USDC/GPU-h (band " + j["p25"].get<std::string>() + "–" +
               j["p75"].get<std::string>() + ", basis " + j["basis"].get<std::string>() + ")";
      });
    }
    return request_and_print(ctx, "GET", "/v1/provider/prices", std::nullopt, [](const nlohmann::json& j) {
      std::string out;
      for (const auto& p : j["items"])
        out += p["model"].get<std::string>() + "\t" + p["usdc_per_gpu_hour"].get<std::string>() + "\n";
      return out.empty() ? std::string("no rates set") : out.substr(0, out.size() - 1);
    });
  }

 private:
  CLI::App* set_ = nullptr;
  CLI::App* list_ = nullptr;
  CLI::App* recommend_ = nullptr;
  std::string model_, usdc_, region_;
};

class ScheduleCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* c = parent.add_subcommand("schedule", "a machine's availability schedule and maintenance windows");
    set_ = c->add_subcommand("set", "replace a machine's schedule from a TOML (or JSON) file");
    set_->add_option("MACHINE", machine_, "machine id")->required();
    set_->add_option("--file", file_, "schedule.toml: timezone, always, [[windows]], [[maintenance]]")->required();
    show_ = c->add_subcommand("show", "a machine's schedule and whether it is available now");
    show_->add_option("MACHINE", machine_, "machine id")->required();
    c->require_subcommand(1);
    // --json (added by main to this command) may also follow the verb: `price set L40S 2 --json`.
    for (auto* sub : c->get_subcommands({})) sub->fallthrough();
    return c;
  }
  int run(Context& ctx) override {
    const std::string path = "/v1/provider/machines/" + url_encode(machine_) + "/schedule";
    const auto human = [](const nlohmann::json& j) {
      std::string s = "machine " + j["machine_id"].get<std::string>() + " (" + j["timezone"].get<std::string>() +
                      "): " + (j["available_now"].get<bool>() ? "available" : "not available");
      if (j["available_until"].is_string()) s += " until " + j["available_until"].get<std::string>();
      if (j["next_window_start"].is_string()) s += "; next window " + j["next_window_start"].get<std::string>();
      return s;
    };
    if (show_->parsed()) return request_and_print(ctx, "GET", path, std::nullopt, human);
    auto body = read_file(file_);
    if (!body) return ctx.fail(body.error().message);
    return request_and_print(ctx, "PUT", path, *body, human);
  }

 private:
  //! A .json file is sent as is; anything else is read as TOML and sent as the same JSON.
  static core::Result<nlohmann::json> read_file(const std::string& file) {
    using core::Error;
    using core::ErrorCode;
    std::ifstream in(file);
    if (!in) return Error::make(ErrorCode::bad_request, "cannot read " + file);
    std::stringstream text;
    text << in.rdbuf();
    try {
      if (file.size() > 5 && file.substr(file.size() - 5) == ".json") return nlohmann::json::parse(text.str());
      const toml::table tbl = toml::parse(text.str(), file);
      std::stringstream json;
      json << toml::json_formatter{tbl};
      return nlohmann::json::parse(json.str());
    } catch (const std::exception& e) {
      return Error::make(ErrorCode::bad_request, file + ": " + e.what());
    }
  }
  CLI::App* set_ = nullptr;
  CLI::App* show_ = nullptr;
  std::string machine_, file_;
};

class MarketCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* c = parent.add_subcommand("market", "the marketplace");
    search_ = c->add_subcommand("search", "offers visible now");
    search_->add_option("--model", model_, "catalog id, e.g. H100-SXM");
    search_->add_option("--region", region_, "region");
    search_->add_option("--min-vram-gb", min_vram_, "least VRAM per GPU, GB");
    search_->add_option("--max-price", max_price_, "most USDC per GPU-hour");
    search_->add_option("--min-reliability", min_reliability_, "least reliability, 0-100");
    search_->add_option("--tier", tier_, "community or enterprise");
    search_->add_option("--sort", sort_, "rank (default), price or perf");
    search_->add_option("--limit", limit_, "offers per page");
    c->require_subcommand(1);
    // --json (added by main to this command) may also follow the verb: `price set L40S 2 --json`.
    for (auto* sub : c->get_subcommands({})) sub->fallthrough();
    return c;
  }
  int run(Context& ctx) override {
    std::string query;
    for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
             {"model", model_}, {"region", region_}, {"min_vram_gb", min_vram_}, {"max_price", max_price_},
             {"min_reliability", min_reliability_}, {"tier", tier_}, {"sort", sort_}, {"limit", limit_}}) {
      if (!v.empty()) query += (query.empty() ? "?" : "&") + k + "=" + url_encode(v);
    }
    return request_and_print(ctx, "GET", "/v1/marketplace/offers" + query, std::nullopt, [](const nlohmann::json& j) {
      std::string out = "machine\tmodel\tgpus\tUSDC/GPU-h\tperf\treliability\ttier\tregion\trank";
      for (const auto& o : j["items"]) {
        std::ostringstream line;
        line << "\n"
             << o["machine_id"].get<std::string>() << "\t" << o["model"].get<std::string>() << "\t"
             << o["gpu_count_available"] << "\t" << o["usdc_per_gpu_hour"].get<std::string>() << "\t"
             << o["perf_score"] << "\t" << o["reliability"] << (o["reliability_is_prior"].get<bool>() ? " (prior)" : "")
             << "\t" << o["tier"].get<std::string>() << "\t" << o["location"]["region"].get<std::string>() << "\t"
             << o["rank"];
        out += line.str();
      }
      return j["items"].empty() ? std::string("no offers match") : out;
    });
  }

 private:
  CLI::App* search_ = nullptr;
  std::string model_, region_, min_vram_, max_price_, min_reliability_, tier_, sort_, limit_;
};

}  // namespace

std::unique_ptr<Command> make_price_command() { return std::make_unique<PriceCommand>(); }
std::unique_ptr<Command> make_schedule_command() { return std::make_unique<ScheduleCommand>(); }
std::unique_ptr<Command> make_market_command() { return std::make_unique<MarketCommand>(); }

}  // namespace gpunex::cli
