// gpunex price set|list|recommend, schedule set|show: one Command per verb.

#include <fstream>
#include <functional>
#include <sstream>

#include <toml++/toml.h>

#include "cli/cli.hpp"
#include "core/text.hpp"

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

CLI::App* price_group(CLI::App& parent) {
  return command_group(parent, "price", "your rates per GPU model (USDC per GPU-hour)");
}
CLI::App* schedule_group(CLI::App& parent) {
  return command_group(parent, "schedule", "a machine's availability schedule and maintenance windows");
}

class PriceSetCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* c = price_group(parent)->add_subcommand("set", "set the rate for a model; running rentals keep theirs");
    c->add_option("MODEL", model_, "catalog id, e.g. H100-SXM (or a name naming one model: h100 sxm, RTX4090)")
        ->required();
    c->add_option("USDC", usdc_, "USDC per GPU-hour, up to 6 decimals, e.g. 2.50")->required();
    return c;
  }
  int run(Context& ctx) override {
    return request_and_print(ctx, "PUT", "/v1/provider/prices/" + url_encode(model_),
                             nlohmann::json{{"usdc_per_gpu_hour", usdc_}}, [](const nlohmann::json& j) {
                               return j["model"].get<std::string>() + ": " + j["usdc_per_gpu_hour"].get<std::string>() +
                                      " USDC per GPU-hour from " + j["started_at"].get<std::string>();
                             });
  }

 private:
  std::string model_, usdc_;
};

class PriceListCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override { return price_group(parent)->add_subcommand("list", "your current rates"); }
  int run(Context& ctx) override {
    return request_and_print(ctx, "GET", "/v1/provider/prices", std::nullopt, [](const nlohmann::json& j) {
      std::vector<std::vector<std::string>> rows;
      std::string commission;
      for (const auto& p : member(j, "items")) {
        rows.push_back({format_text(member(p, "model")), format_text(member(p, "usdc_per_gpu_hour")),
                        format_text(member(p, "provider_receives_per_gpu_hour")),
                        format_text(member(p, "started_at"))});
        if (member(p, "commission_pct").is_number())
          commission = core::format_number(p["commission_pct"].get<double>());
      }
      if (rows.empty()) return std::string("no rates set");
      std::string out = format_table({"MODEL", "USDC/GPU-H", "YOU RECEIVE", "SINCE"}, rows);
      if (!commission.empty()) out += "you receive the rate less the platform's commission of " + commission + "%";
      return out;
    });
  }
};

class PriceRecommendCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* c = price_group(parent)->add_subcommand("recommend", "the platform's recommended rate for a model");
    c->add_option("MODEL", model_, "catalog id (or a name naming one model: l4, RTX4090)")->required();
    c->add_option("--region", region_, "region (default: yours)");
    return c;
  }
  int run(Context& ctx) override {
    std::string path = "/v1/provider/price-recommendations?model=" + url_encode(model_);
    if (!region_.empty()) path += "&region=" + url_encode(region_);
    return request_and_print(ctx, "GET", path, std::nullopt, [](const nlohmann::json& j) {
      return j["model"].get<std::string>() + " in " + j["region"].get<std::string>() + ": " +
             j["recommended"].get<std::string>() + " USDC/GPU-h (band " + j["p25"].get<std::string>() + "–" +
             j["p75"].get<std::string>() + ", basis " + j["basis"].get<std::string>() + ")";
    });
  }

 private:
  std::string model_, region_;
};

std::string schedule_text(const nlohmann::json& j) {
  std::string s = "machine " + j["machine_id"].get<std::string>() + " (" + j["timezone"].get<std::string>() +
                  "): " + (j["available_now"].get<bool>() ? "available" : "not available");
  if (j["available_until"].is_string()) s += " until " + j["available_until"].get<std::string>();
  if (j["next_window_start"].is_string()) s += "; next window " + j["next_window_start"].get<std::string>();
  // Set (not shown): what the change means for the rentals running there.
  if (const auto note = j.find("running_rentals_note"); note != j.end() && note->is_string()) {
    s += "\n" + note->get<std::string>();
  }
  return s;
}

//! A .json file is sent as is; anything else is read as TOML and sent as the same JSON.
core::Result<nlohmann::json> read_schedule_file(const std::string& file) {
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

class ScheduleSetCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* c = schedule_group(parent)->add_subcommand("set", "replace a machine's schedule from a TOML (or JSON) file");
    c->add_option("MACHINE", machine_, "machine id")->required();
    c->add_option("--file", file_, "schedule.toml: timezone, always, [[windows]], [[maintenance]]")->required();
    c->footer(
        "The file replaces the whole schedule: keep its windows when you add maintenance. For example:\n\n"
        "  timezone = \"Europe/Berlin\"\n"
        "  always = false\n"
        "  [[windows]]\n"
        "  days = [\"mon\", \"tue\", \"wed\", \"thu\", \"fri\"]\n"
        "  start = \"18:00\"\n"
        "  end = \"08:00\"          # at or before start: ends the next day\n"
        "  [[maintenance]]         # once, in UTC\n"
        "  category = \"power\"     # power, network, disk, gpu, software or other\n"
        "  note = \"new PSU\"\n"
        "  start = \"2026-12-20T09:00:00Z\"\n"
        "  end = \"2026-12-20T12:00:00Z\"\n"
        "  [[maintenance]]         # every week, in the schedule's time zone\n"
        "  category = \"software\"\n"
        "  start = \"03:00\"\n"
        "  end = \"04:00\"\n"
        "  recurrence = { days = [\"sun\"] }    # or { nth = 1, weekday = \"mon\" }: monthly\n\n"
        "Maintenance declared at least a day ahead does not count against reliability; maintenance that "
        "begins while rentals run stops them (their customers are told when you save it). Narrowing the "
        "windows stops no running rental: each runs on to the end of availability it was rented with.");
    return c;
  }
  int run(Context& ctx) override {
    auto body = read_schedule_file(file_);
    if (!body) return ctx.fail(body.error().message);
    return request_and_print(ctx, "PUT", "/v1/provider/machines/" + url_encode(machine_) + "/schedule", *body,
                             schedule_text);
  }

 private:
  std::string machine_, file_;
};

class ScheduleShowCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* c = schedule_group(parent)->add_subcommand("show", "a machine's schedule and whether it is available now");
    c->add_option("MACHINE", machine_, "machine id")->required();
    return c;
  }
  int run(Context& ctx) override {
    return request_and_print(ctx, "GET", "/v1/provider/machines/" + url_encode(machine_) + "/schedule", std::nullopt,
                             schedule_text);
  }

 private:
  std::string machine_;
};

}  // namespace

std::unique_ptr<Command> make_price_set_command() { return std::make_unique<PriceSetCommand>(); }
std::unique_ptr<Command> make_price_list_command() { return std::make_unique<PriceListCommand>(); }
std::unique_ptr<Command> make_price_recommend_command() { return std::make_unique<PriceRecommendCommand>(); }
std::unique_ptr<Command> make_schedule_set_command() { return std::make_unique<ScheduleSetCommand>(); }
std::unique_ptr<Command> make_schedule_show_command() { return std::make_unique<ScheduleShowCommand>(); }

}  // namespace gpunex::cli
