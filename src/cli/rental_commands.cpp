// gpunex rent, rentals list | show | logs | stop: a customer's rentals (POST /v1/rentals and the
// rental's own paths). One Command per verb; every answer is a Rental (or a page of them) printed
// as JSON with --json, else as a table or summary for people.

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "cli/cli.hpp"
#include "core/page_limits.hpp"
#include "core/rental.hpp"
#include "util/crypto.hpp"

namespace gpunex::cli {

namespace {

CLI::App* rentals_group(CLI::App& parent) {
  return command_group(parent, "rentals", "your rentals: list, show, logs, stop");
}

//! "1 h 02 min", "3 min 05 s", "42 s" from whole seconds.
std::string duration_text(const nlohmann::json& seconds) {
  if (!seconds.is_number_integer()) return "-";
  const auto s = seconds.get<std::int64_t>();
  const auto two = [](std::int64_t v) { return (v < 10 ? "0" : "") + std::to_string(v); };
  if (s >= 3600) return std::to_string(s / 3600) + " h " + two(s % 3600 / 60) + " min";
  if (s >= 60) return std::to_string(s / 60) + " min " + two(s % 60) + " s";
  return std::to_string(s) + " s";
}

//! "2 × L4", from gpu_count (or the length of gpus) and the model.
std::string gpus_text(const nlohmann::json& r) {
  const auto& count = member(r, "gpu_count");
  const std::size_t n = count.is_number_integer() ? count.get<std::size_t>() : member(r, "gpus").size();
  return std::to_string(n) + " × " + format_text(member(r, "model"));
}

//! Why it ended, in words: the server's end_text, else the same words from the reason.
std::string end_text(const nlohmann::json& r) {
  if (member(r, "end_text").is_string()) return member(r, "end_text").get<std::string>();
  const auto& reason = member(r, "end_reason");
  if (!reason.is_string()) return member(r, "state") == "ended" ? "Ended" : "-";
  auto parsed = core::rental::parse_end_reason(reason.get<std::string>());
  if (!parsed) return reason.get<std::string>();
  const auto& code = member(r, "exit_code");
  return core::rental::end_text(*parsed, code.is_number_integer() ? std::optional<int>(code.get<int>()) : std::nullopt,
                                member(r, "oom").is_boolean() && member(r, "oom").get<bool>());
}

//! 2 as "2", 2.5 as "2.5": the fewest digits that give the number back.
std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  return buf;
}

//! A word of the command as a shell would need it to be typed.
std::string shell_word(const std::string& w) {
  if (!w.empty() && w.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=@%+,") ==
                        std::string::npos)
    return w;
  std::string out = "'";
  for (char c : w) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string rentals_text(const nlohmann::json& page) {
  const auto& items = member(page, "items");
  if (items.empty()) return "no rentals yet: find GPUs with `gpunex offers search`, then `gpunex rent`";
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : items) {
    rows.push_back({format_text(member(r, "id")), format_text(member(r, "state")), gpus_text(r),
                    format_text(member(r, "machine_id")), format_text(member(r, "cost_per_hour")),
                    format_text(member(r, "cost_so_far")), duration_text(member(r, "seconds_metered")),
                    format_text(member(r, "created_at")), member(r, "state") == "ended" ? end_text(r) : "-"});
  }
  std::string out =
      format_table({"ID", "STATE", "GPUS", "MACHINE", "USDC/H", "COST SO FAR", "RUN TIME", "CREATED", "ENDED"}, rows);
  if (member(page, "next_cursor").is_string())
    out += "more with --cursor " + member(page, "next_cursor").get<std::string>();
  return out;
}

std::string rental_text(const nlohmann::json& r) {
  const std::string state = format_text(member(r, "state"));
  std::string out = "Rental " + format_text(member(r, "id")) + "  " + state + "\n";
  const auto field = [&](const std::string& name, const std::string& value) {
    out += name + std::string(name.size() < 16 ? 16 - name.size() : 1, ' ') + value + "\n";
  };
  std::string gpus = gpus_text(r);
  std::string uuids;
  for (const auto& g : member(r, "gpus")) uuids += (uuids.empty() ? "" : ", ") + format_text(g);
  if (!uuids.empty()) gpus += ": " + uuids;
  field("GPUs:", gpus);
  const bool live = state == "starting" || state == "running" || state == "stopping";
  field("Machine:", format_text(member(r, "machine_id")) +
                        (live && member(r, "machine_online") == false
                             ? "  OFFLINE: its agent is not heard from; back within 5 minutes or the rental ends, "
                               "billed to its last heartbeat"
                             : ""));
  field("Price:", format_text(member(r, "usdc_per_gpu_hour")) + " USDC per GPU-hour, " +
                      format_text(member(r, "cost_per_hour")) + " USDC per hour");
  field(state == "ended" ? "Cost:" : "Cost so far:", format_text(member(r, "cost_so_far")) + " USDC for " +
                                                         duration_text(member(r, "seconds_metered")) + " running");
  field("Image:", format_text(member(r, "image")));
  std::string command;
  for (const auto& w : member(r, "command")) command += (command.empty() ? "" : " ") + shell_word(format_text(w));
  field("Command:", command.empty() ? "the image's own" : command);
  std::string env;
  for (const auto& n : member(r, "env_names")) env += (env.empty() ? "" : ", ") + format_text(n);
  if (!env.empty()) field("Env:", env + " (values not shown)");
  std::string ports;
  for (const auto& p : member(r, "ports")) {
    ports += (ports.empty() ? "" : ", ") + format_fixed(member(p, "container_port"), 0);
    ports += format_text(member(r, "state")) == "ended" ? std::string(" (closed)")
             : member(p, "address").is_string()         ? " → " + member(p, "address").get<std::string>()
             : member(p, "host_port").is_number()       ? " → host port " + format_fixed(member(p, "host_port"), 0)
                                                        : std::string(" (bound when it runs)");
  }
  if (!ports.empty()) field("Ports:", ports);
  if (member(r, "ssh").is_string()) field("SSH:", member(r, "ssh").get<std::string>());
  const auto& max_hours = member(r, "max_hours");
  field("Max hours:",
        max_hours.is_number() ? number_text(max_hours.get<double>()) : "none (until stopped or the balance runs out)");
  if (member(r, "available_until").is_string() && state != "ended") {
    field("Machine available until:",
          member(r, "available_until").get<std::string>() +
              " (the end of availability it was rented with: its schedule may stop it then)");
  }
  field("Created:", format_text(member(r, "created_at")));
  if (member(r, "running_since").is_string()) field("Running since:", member(r, "running_since").get<std::string>());
  if (member(r, "ended_at").is_string()) field("Ended:", member(r, "ended_at").get<std::string>());
  if (state == "ended") field("Why:", end_text(r));
  // The engine's or the agent's words (an image that cannot be pulled, no container engine): what the
  // customer needs to act on.
  if (member(r, "error").is_string()) field("Error:", member(r, "error").get<std::string>());
  return out;
}

class RentCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* c = parent.add_subcommand("rent", "rent GPUs and run a container on them (POST /v1/rentals)");
    c->footer(
        "Either one offer (--machine, as `gpunex offers search` lists it) or filters (--model and the others):\n"
        "the scheduler then picks the best-ranked machine with enough free GPUs.\n"
        "Examples:\n"
        "  gpunex rent --model L4 --max-price 0.60 --image docker.io/library/ubuntu:22.04 -- nvidia-smi\n"
        "  gpunex rent --machine mch_1 --gpus 2 --image pytorch/pytorch:latest --port 8888 --max-hours 4 \\\n"
        "      --ssh-key ~/.ssh/id_ed25519.pub --env HF_TOKEN=hf_... -- sleep infinity\n"
        "A retry never rents twice: each request carries an Idempotency-Key (printed when the answer is lost).");
    auto* machine = c->add_option("--machine", machine_, "the machine of one offer")->type_name("ID");
    c->add_option("--model", model_, "GPU model, e.g. L4 or \"rtx 4090\" (with --machine: which of its models)")
        ->type_name("MODEL");
    c->add_option("--region", region_, "filters: region, e.g. eu-west")->type_name("REGION")->excludes(machine);
    min_reliability_opt_ = c->add_option("--min-reliability", min_reliability_, "filters: least reliability, 0 to 100")
                               ->type_name("0-100")
                               ->excludes(machine);
    c->add_option("--max-price", max_price_, "filters: most USDC per GPU-hour, e.g. 1.20")
        ->type_name("USDC")
        ->excludes(machine);
    c->add_option("--gpus", gpus_, "how many GPUs, on one machine (default 1)")->type_name("N");
    c->add_option("--image", image_, "container image, e.g. docker.io/library/ubuntu:22.04")
        ->type_name("REF")
        ->required();
    c->add_option("--env", env_, "an environment variable for the container; repeat for more")
        ->type_name("NAME=VALUE")
        ->allow_extra_args(false);
    c->add_option("--port", ports_, "a container port to expose; repeat for more")
        ->type_name("N")
        ->allow_extra_args(false);
    max_hours_opt_ = c->add_option("--max-hours", max_hours_,
                                   "stop it after this many hours, at least 0.0167 (a minute) (default: until stopped)")
                         ->type_name("H");
    c->add_option("--ssh-key", ssh_key_file_,
                  "an SSH public key file, passed to the container as $PUBLIC_KEY; opens its port 22 (the image runs "
                  "sshd), and `gpunex rentals show` gives the ssh command once it runs")
        ->type_name("FILE");
    c->add_option("--idempotency-key", idempotency_key_,
                  "send this key instead of a new one: rerunning with the same key never rents twice")
        ->type_name("KEY");
    c->add_option("COMMAND", command_, "after --: the command and its arguments (default: the image's own)");
    return c;
  }

  int run(Context& ctx) override {
    ctx.flag_of_field = {{"gpu_count", "--gpus"},
                         {"machine_id", "--machine"},
                         {"ports", "--port"},
                         {"ssh_public_key", "--ssh-key"},
                         {"command", "COMMAND after --"}};
    if (machine_.empty() && model_.empty())
      return ctx.fail("say what to rent: --machine ID (one offer) or --model MODEL (with optional filters)");
    nlohmann::json body = {{"gpu_count", gpus_}, {"image", image_}};
    if (!machine_.empty()) {
      body["machine_id"] = machine_;
      if (!model_.empty()) body["model"] = model_;
    } else {
      nlohmann::json filters = {{"model", model_}};
      if (!region_.empty()) filters["region"] = region_;
      if (min_reliability_opt_->count() > 0) filters["min_reliability"] = min_reliability_;
      if (!max_price_.empty()) filters["max_price"] = max_price_;
      body["filters"] = std::move(filters);
    }
    if (!command_.empty()) body["command"] = command_;
    if (!env_.empty()) {
      nlohmann::json env = nlohmann::json::object();
      for (const auto& e : env_) {
        const auto eq = e.find('=');
        if (eq == std::string::npos || eq == 0) return ctx.fail("--env " + e + ": write it as NAME=VALUE");
        const std::string name = e.substr(0, eq);
        if (env.contains(name)) return ctx.fail("--env " + name + " is given twice");
        env[name] = e.substr(eq + 1);
      }
      body["env"] = std::move(env);
    }
    if (!ports_.empty()) body["ports"] = ports_;
    if (max_hours_opt_->count() > 0) body["max_hours"] = max_hours_;
    if (!ssh_key_file_.empty()) {
      std::ifstream in(ssh_key_file_);
      if (!in) return ctx.fail("--ssh-key: cannot read " + ssh_key_file_);
      std::stringstream text;
      text << in.rdbuf();
      std::string key = text.str();
      while (!key.empty() && (key.back() == '\n' || key.back() == '\r' || key.back() == ' ')) key.pop_back();
      if (key.find("PRIVATE KEY") != std::string::npos)
        return ctx.fail("--ssh-key: " + ssh_key_file_ + " is a private key; give the public one (the .pub file)");
      body["ssh_public_key"] = key;
    }
    if (!ctx.token()) return ctx.fail("not logged in to " + ctx.server + "; run `gpunex login`");

    // One key for this rent, sent again on every retry: the server answers a repeat with the first
    // rental instead of renting twice.
    const std::string key = idempotency_key_.empty() ? "rent-" + util::random_token(18) : idempotency_key_;
    const std::vector<std::pair<std::string, std::string>> headers = {{"Idempotency-Key", key}};
    core::Result<util::HttpResponse> r = call(ctx, "POST", "/v1/rentals", body, headers);
    for (int attempt = 1; attempt < 4 && (!r || r->status == 502 || r->status == 503 || r->status == 504); ++attempt) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500 * attempt));
      r = call(ctx, "POST", "/v1/rentals", body, headers);
    }
    if (!r) {
      return ctx.fail(r.error().message + "; whether it was rented is unknown: `gpunex rentals list` shows it, or " +
                      "rerun with --idempotency-key " + key + " (that never rents twice)");
    }
    if (r->status < 200 || r->status >= 300) return report_http_error(ctx, *r);
    const auto rental = nlohmann::json::parse(r->body, nullptr, false);
    if (!rental.is_object()) return ctx.fail("the server's answer to POST /v1/rentals is not JSON");
    const std::string id = format_text(member(rental, "id"));
    ctx.print(rental, rental_text(rental) + "\nFollow it with `gpunex rentals show " + id +
                          "` and `gpunex rentals logs " + id + "`; stop it with `gpunex rentals stop " + id + "`.");
    return 0;
  }

 private:
  std::string machine_, model_, region_, max_price_, image_, ssh_key_file_, idempotency_key_;
  double min_reliability_ = 0;
  double max_hours_ = 0;
  int gpus_ = 1;
  std::vector<std::string> env_, command_;
  std::vector<int> ports_;
  CLI::Option* min_reliability_opt_ = nullptr;
  CLI::Option* max_hours_opt_ = nullptr;
};

//! A page of rentals from `path` (the customer's or the provider's list), with --limit, --cursor and
//! --state as both lists take them, printed by `text`.
class RentalPageCommand : public Command {
 protected:
  CLI::App* with_options(CLI::App* c) {
    c->add_option("--limit", limit_,
                  "rentals per page, 1 to " + std::to_string(core::kMaxPageLimit) + " (default " +
                      std::to_string(core::kDefaultPageLimit) + ")")
        ->type_name("N");
    c->add_option("--cursor", cursor_, "the next page, as the previous page said")->type_name("CURSOR");
    c->add_option("--state", state_,
                  "only rentals in this state: requested, starting, running, stopping or ended (several: "
                  "comma-separated, e.g. requested,starting,running)")
        ->type_name("STATE");
    return c;
  }
  int print_page(Context& ctx, const std::string& path, std::string (*text)(const nlohmann::json&)) {
    std::string query;
    const auto add = [&](const char* name, const std::string& value) {
      if (!value.empty()) query += (query.empty() ? "?" : "&") + std::string(name) + "=" + url_encode(value);
    };
    add("state", state_);
    add("limit", limit_);
    add("cursor", cursor_);
    nlohmann::json page;
    if (int rc = get_json(ctx, path + query, page)) return rc;
    if (!member(page, "items").is_array()) return ctx.fail("the server's list of rentals has no items");
    ctx.print(page, text(page));
    return 0;
  }

 private:
  std::string limit_, cursor_, state_;
};

class RentalsListCommand : public RentalPageCommand {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    return with_options(
        rentals_group(parent)->add_subcommand("list", "your rentals, newest first: state, GPUs, cost so far"));
  }
  int run(Context& ctx) override { return print_page(ctx, "/v1/rentals", rentals_text); }
};

class RentalsShowCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* c =
        rentals_group(parent)->add_subcommand("show", "one rental: state, GPUs, ports, cost so far, why it ended");
    c->add_option("ID", id_, "rental id, as `gpunex rentals list` shows it")->required();
    return c;
  }
  int run(Context& ctx) override {
    nlohmann::json rental;
    if (int rc = get_json(ctx, "/v1/rentals/" + url_encode(id_), rental)) return rc;
    ctx.print(rental, rental_text(rental));
    return 0;
  }

 private:
  std::string id_;
};

class RentalsLogsCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* c = rentals_group(parent)->add_subcommand("logs", "the tail of a rental's container output");
    c->add_option("ID", id_, "rental id")->required();
    return c;
  }
  int run(Context& ctx) override {
    nlohmann::json logs;
    if (int rc = get_json(ctx, "/v1/rentals/" + url_encode(id_) + "/logs", logs)) return rc;
    if (ctx.json) {
      ctx.print(logs, "");
      return 0;
    }
    // The output as the container wrote it, so it can be piped; what is not output goes to stderr.
    const auto& tail = member(logs, "logs");
    const std::string text = tail.is_string() ? tail.get<std::string>() : "";
    if (text.empty()) {
      *ctx.err << "no output from " << id_
               << (member(logs, "state") == "ended" ? ": it ended without writing any\n" : " yet\n");
      return 0;
    }
    *ctx.out << text;
    if (text.back() != '\n') *ctx.out << "\n";
    return 0;
  }

 private:
  std::string id_;
};

class RentalsStopCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* c = rentals_group(parent)->add_subcommand("stop", "stop a rental: its container is stopped and billing ends");
    c->add_option("ID", id_, "rental id")->required();
    return c;
  }
  int run(Context& ctx) override {
    nlohmann::json rental;
    if (int rc = send_json(ctx, "POST", "/v1/rentals/" + url_encode(id_) + "/stop", std::nullopt, rental)) return rc;
    std::string human;
    if (member(rental, "state") == "ended") {
      human = "Rental " + id_ + " ended: " + end_text(rental) + "; cost " + format_text(member(rental, "cost_so_far")) +
              " USDC";
    } else {
      human = "Rental " + id_ + " is " + format_text(member(rental, "state")) +
              ": its container gets SIGTERM, then is removed; billing ends when it has stopped (cost so far " +
              format_text(member(rental, "cost_so_far")) + " USDC)";
    }
    ctx.print(rental, human);
    return 0;
  }

 private:
  std::string id_;
};

//! A provider's view of the rentals on their machines (GET /v1/provider/rentals): never who rents.
std::string provider_rentals_text(const nlohmann::json& page) {
  const auto& items = member(page, "items");
  if (items.empty()) return "no rentals on your machines yet";
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : items) {
    std::string ended = "-";
    if (member(r, "end_reason").is_string()) {
      ended = member(r, "end_reason").get<std::string>() +
              (member(r, "provider_side") == true ? " (your side: counts against reliability)" : "");
    }
    rows.push_back({format_text(member(r, "id")), format_text(member(r, "state")), gpus_text(r),
                    format_text(member(r, "machine_id")), format_text(member(r, "earnings_per_hour")),
                    format_text(member(r, "earned_so_far")), format_text(member(r, "running_since")), ended});
  }
  std::string out =
      format_table({"ID", "STATE", "GPUS", "MACHINE", "EARNS USDC/H", "EARNED", "RUNNING SINCE", "ENDED"}, rows);
  if (member(page, "next_cursor").is_string())
    out += "more with --cursor " + member(page, "next_cursor").get<std::string>();
  return out;
}

class MachinesRentalsCommand : public RentalPageCommand {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    return with_options(machines_group(parent)->add_subcommand(
        "rentals", "the rentals on your machines, newest first: state, GPUs, what they earn you"));
  }
  int run(Context& ctx) override { return print_page(ctx, "/v1/provider/rentals", provider_rentals_text); }
};

class MachinesStopRentalCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* c = machines_group(parent)->add_subcommand(
        "stop-rental",
        "stop a customer's rental on your machine: it ends as stopped by the provider, which counts against the "
        "machine's reliability (to stop taking work, narrow the schedule instead: running rentals finish)");
    c->add_option("ID", id_, "rental id, as `gpunex machines rentals` shows it")->required();
    return c;
  }
  int run(Context& ctx) override {
    nlohmann::json rental;
    if (int rc = send_json(ctx, "POST", "/v1/provider/rentals/" + url_encode(id_) + "/stop", std::nullopt, rental))
      return rc;
    std::string human;
    if (member(rental, "state") == "ended") {
      // It had not started (ended at once), or had ended before: its end reason says which.
      human = "Rental " + id_ + " ended: " + format_text(member(rental, "end_reason")) + "; earned " +
              format_text(member(rental, "earned_so_far")) + " USDC";
    } else {
      human = "Rental " + id_ + " is " + format_text(member(rental, "state")) +
              ": its container gets SIGTERM, then is removed; its customer is told it was stopped by the provider "
              "(earned so far " +
              format_text(member(rental, "earned_so_far")) + " USDC)";
    }
    ctx.print(rental, human);
    return 0;
  }

 private:
  std::string id_;
};

}  // namespace

std::unique_ptr<Command> make_machines_rentals_command() {
  return std::make_unique<MachinesRentalsCommand>();
}
std::unique_ptr<Command> make_machines_stop_rental_command() {
  return std::make_unique<MachinesStopRentalCommand>();
}
std::unique_ptr<Command> make_rent_command() {
  return std::make_unique<RentCommand>();
}
std::unique_ptr<Command> make_rentals_list_command() {
  return std::make_unique<RentalsListCommand>();
}
std::unique_ptr<Command> make_rentals_show_command() {
  return std::make_unique<RentalsShowCommand>();
}
std::unique_ptr<Command> make_rentals_logs_command() {
  return std::make_unique<RentalsLogsCommand>();
}
std::unique_ptr<Command> make_rentals_stop_command() {
  return std::make_unique<RentalsStopCommand>();
}

}  // namespace gpunex::cli
