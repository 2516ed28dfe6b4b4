// gpunex machines list | machines show ID | reliability: a provider's machines and their reliability, as the
// dashboard's Machines and Performance pages show them.

#include <algorithm>
#include <map>
#include <vector>

#include "cli/cli.hpp"

namespace gpunex::cli {

CLI::App* machines_group(CLI::App& parent) {
  return command_group(parent, "machines", "your machines, their GPUs and their rentals (providers)");
}

namespace {

//! The figures the list's row and the show's summary both print, from the same JSON, so they cannot differ.
struct GpuFigures {
  std::string gpus;    // "2 × L40S"
  std::string listed;  // "1/2"
  std::string perf;    // mean perf score of the scored GPUs, "-" when none is scored
};

std::string gpu_model(const nlohmann::json& g) {
  if (member(g, "model").is_string()) return member(g, "model").get<std::string>();
  return g.value("name", std::string("unknown model"));
}

GpuFigures gpu_figures(const nlohmann::json& machine) {
  std::map<std::string, int> by_model;
  int present = 0, listed = 0, scored = 0;
  double perf_sum = 0;
  for (const auto& g : member(machine, "gpus")) {
    if (!g.value("present", true)) continue;  // removed from the host: kept in history, not counted
    ++present;
    ++by_model[gpu_model(g)];
    if (g.value("listed", false)) ++listed;
    if (member(g, "perf_score").is_number()) {
      perf_sum += member(g, "perf_score").get<double>();
      ++scored;
    }
  }
  GpuFigures f;
  for (const auto& [model, n] : by_model) f.gpus += (f.gpus.empty() ? "" : ", ") + std::to_string(n) + " × " + model;
  if (f.gpus.empty()) f.gpus = "none";
  f.listed = std::to_string(listed) + "/" + std::to_string(present);
  f.perf = scored > 0 ? format_score(perf_sum / scored) : "-";
  return f;
}

//! Every page of the list at `path` (which has its own query: the cursor follows with &), in order, into
//! `items`; `last` is the last page (for what it says beside its items). 0, or the exit code after printing.
int get_every_page(Context& ctx, const std::string& path, nlohmann::json& items, nlohmann::json& last) {
  items = nlohmann::json::array();
  std::string cursor;
  do {
    if (int rc = get_json(ctx, path + (cursor.empty() ? "" : "&cursor=" + url_encode(cursor)), last); rc != 0)
      return rc;
    for (auto& m : last["items"]) items.push_back(std::move(m));
    cursor = last["next_cursor"].is_string() ? last["next_cursor"].get<std::string>() : "";
  } while (!cursor.empty());
  return 0;
}

std::string status_text(const nlohmann::json& m) {
  return m.value("status", std::string("?")) + (m.value("simulated", false) ? " (simulated)" : "");
}

//! Whether customers can rent it now: "yes", or "no: why".
std::string offered_text(const nlohmann::json& m) {
  if (m.value("offered", false)) return "yes";
  return member(m, "not_offered_reason").is_string() ? "no: " + member(m, "not_offered_reason").get<std::string>()
                                                     : "no";
}

class MachinesListCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    return machines_group(parent)->add_subcommand(
        "list", "your machines: status, GPUs, how many are listed, whether customers can rent them");
  }
  int run(Context& ctx) override {
    // Every page, so a script gets the whole list in one answer.
    nlohmann::json items, page;
    if (int rc = get_every_page(ctx, "/v1/provider/machines?limit=200", items, page); rc != 0) return rc;

    std::vector<std::vector<std::string>> rows;
    std::string why_not;  // under the table: each machine not offered, and why
    for (const auto& m : items) {
      const auto f = gpu_figures(m);
      const bool offered = m.value("offered", false);
      rows.push_back({format_text(member(m, "id")), status_text(m), m.value("hostname", std::string()), f.gpus,
                      f.listed, offered ? "yes" : "no", f.perf, format_text(member(m, "last_seen_at"))});
      if (!offered && member(m, "not_offered_reason").is_string()) {
        why_not += "\n" + format_text(member(m, "id")) +
                   " is not offered: " + member(m, "not_offered_reason").get<std::string>();
      }
    }
    const std::string human =
        rows.empty()
            ? "no machines yet: install the agent with `curl -fsSL " + ctx.server +
                  "/agent/install.sh | bash` and one of your API keys"
            : format_table({"ID", "STATUS", "HOST", "GPUS", "LISTED", "OFFERED", "PERF", "LAST SEEN"}, rows) + why_not;
    ctx.print(nlohmann::json{{"items", std::move(items)}, {"next_cursor", nullptr}}, human);
    return 0;
  }
};

//! The models of `m`'s present, listed GPUs that `prices` (GET /v1/provider/prices) has no rate for: a GPU
//! that passed its benchmarks is offered only at a rate, which nothing else in the machine says.
std::vector<std::string> listed_without_rate(const nlohmann::json& m, const nlohmann::json& prices) {
  std::vector<std::string> out;
  for (const auto& g : member(m, "gpus")) {
    if (!g.value("present", true) || !g.value("listed", false) || !member(g, "model").is_string()) continue;
    const auto model = member(g, "model").get<std::string>();
    const auto& items = member(prices, "items");
    const bool priced = std::any_of(items.begin(), items.end(),
                                    [&](const nlohmann::json& p) { return p.value("model", std::string()) == model; });
    if (!priced && std::find(out.begin(), out.end(), model) == out.end()) out.push_back(model);
  }
  return out;
}

std::string machine_text(const nlohmann::json& m, const nlohmann::json& prices) {
  const auto f = gpu_figures(m);
  std::string out = "Machine " + format_text(member(m, "id")) + "  " + status_text(m) + "\n";
  const auto field = [&](const std::string& name, const std::string& value) {
    out += name + std::string(name.size() < 12 ? 12 - name.size() : 1, ' ') + value + "\n";
  };
  field("Host:", m.value("hostname", std::string()));
  if (member(m, "public_host").is_string()) {
    field("Reached at:",
          member(m, "public_host").get<std::string>() + " (rentals' ports; the agent's --public-host sets it)");
  }
  field("Last seen:", format_text(member(m, "last_seen_at")));
  field("Agent:", m.value("agent_version", std::string()) + ", driver " + m.value("driver_version", std::string()) +
                      ", CUDA " + m.value("cuda_version", std::string()));
  field("GPUs:", f.gpus);
  field("Listed:", f.listed);
  field("Offered:", offered_text(m));
  field("Perf:", f.perf);
  if (member(m, "presence_minutes_24h").is_number())
    field("Online:", format_fixed(member(m, "presence_minutes_24h"), 0) + " of the last 1440 minutes");

  std::vector<std::vector<std::string>> rows;
  for (const auto& g : member(m, "gpus")) {
    const auto& latest = member(g, "latest");  // the last telemetry sample, or null before the first
    std::string listed = g.value("listed", false) ? "yes" : "no";
    if (!g.value("listed", false) && member(g, "delist_reason").is_string())
      listed += ": " + member(g, "delist_reason").get<std::string>();
    if (!g.value("present", true)) listed = "removed";
    rows.push_back({std::to_string(g.value("index", 0)), gpu_model(g), g.value("uuid", std::string()),
                    format_fixed(g.value("memory_mib", 0) / 1024.0, 1) + " GiB", format_score(member(g, "perf_score")),
                    format_fixed(member(g, "quality_ratio"), 2), listed,
                    format_fixed(member(latest, "temperature_c"), 0), format_fixed(member(latest, "power_w"), 0),
                    format_fixed(member(latest, "util_gpu_pct"), 0)});
  }
  out += "\n" + format_table(
                    {"GPU", "MODEL", "UUID", "VRAM", "PERF", "QUALITY", "LISTED", "TEMP C", "POWER W", "UTIL %"}, rows);
  if (member(m, "rentals_blocked").is_string()) {
    out += "\nNot offered: the agent cannot run rentals here: " + format_text(member(m, "rentals_blocked")) +
           ". Its GPUs come back on the market by themselves once it can (see the agent's log).\n";
  }
  for (const auto& model : listed_without_rate(m, prices)) {
    out += "\nNo rate for " + model +
           ": its listed GPUs are not offered to customers. Set one with `gpunex price set " + model +
           " USDC_PER_GPU_HOUR` (`gpunex price recommend " + model + "` suggests one).\n";
  }
  if (member(m, "events").is_array() && !member(m, "events").empty()) {
    out += "\nRecent events:\n";
    std::size_t shown = 0;
    for (const auto& e : member(m, "events")) {
      if (++shown > 5) break;
      out += "  " + format_text(member(e, "at")) + "  " + format_text(member(e, "kind")) + "\n";
    }
  }
  return out;
}

//! A share (0 to 1) as a percentage with one decimal, "-" when there is none.
std::string percent_text(const nlohmann::json& share) {
  return share.is_number() ? format_fixed(nlohmann::json(share.get<double>() * 100), 1) + "%" : std::string("-");
}

//! The reliability events a provider can act on (the server lists them newest first), the `most` that take
//! the most points off now, each with those points and what to do.
std::string reliability_events_text(const nlohmann::json& events, std::size_t most, bool with_machine) {
  std::vector<nlohmann::json> costly(events.begin(), events.end());
  std::stable_sort(costly.begin(), costly.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    return member(a, "points").is_number() && member(b, "points").is_number() &&
           member(a, "points").get<double>() > member(b, "points").get<double>();
  });
  std::string out;
  std::size_t shown = 0;
  std::vector<std::string> advised;  // each piece of advice once, under the first event it is for
  for (const auto& e : costly) {
    if (++shown > most) break;
    out += "  -" + format_fixed(member(e, "points"), 1) + "  " +
           (with_machine ? format_text(member(e, "hostname")) + ": " : std::string()) + format_text(member(e, "text")) +
           "\n";
    const auto& advice = member(e, "what_to_do");
    if (advice.is_string() && std::find(advised.begin(), advised.end(), advice.get<std::string>()) == advised.end()) {
      advised.push_back(advice.get<std::string>());
      out += "         " + advised.back() + "\n";
    }
  }
  if (events.size() > most) out += "  (" + std::to_string(events.size() - most) + " more: --json lists them)\n";
  return out;
}

//! GET /v1/provider/machines/{id}/reliability as `machines show` prints it.
std::string machine_reliability_text(const nlohmann::json& r) {
  std::string out = "\nReliability: " + format_score(member(r, "score"));
  out += member(r, "state") == "new" ? " (new: the prior, until a whole day is judged)"
                                     : " (alert below " + format_score(member(r, "alert_below")) + ")";
  out += "\n";
  const auto& parts = member(r, "parts");
  out += "  uptime " + percent_text(member(member(parts, "uptime"), "value")) + ", jobs completed " +
         percent_text(member(member(parts, "job_completion"), "value")) + ", benchmark stability " +
         percent_text(member(member(parts, "stability"), "value")) + "\n";
  if (member(r, "events").is_array() && !member(r, "events").empty()) {
    out += reliability_events_text(member(r, "events"), 3, false);
  }
  const auto& recovery = member(r, "recovery");
  if (member(recovery, "days").is_number() && member(recovery, "days").get<double>() > 0) {
    out += "  recovers by " + format_text(member(recovery, "by")) + " if nothing else goes wrong\n";
  }
  return out;
}

class MachinesShowCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* c = machines_group(parent)->add_subcommand("show", "one machine: host, GPUs with scores and telemetry");
    c->add_option("ID", id_, "machine id, as `gpunex machines list` shows it")->required();
    return c;
  }
  int run(Context& ctx) override {
    nlohmann::json m;
    if (int rc = get_json(ctx, "/v1/provider/machines/" + url_encode(id_), m); rc != 0) return rc;
    nlohmann::json prices = {{"items", nlohmann::json::array()}};
    nlohmann::json reliability;
    if (!ctx.json) {
      if (int rc = get_json(ctx, "/v1/provider/prices", prices); rc != 0) return rc;
      if (int rc = get_json(ctx, "/v1/provider/machines/" + url_encode(id_) + "/reliability", reliability); rc != 0)
        return rc;
    }
    ctx.print(m, machine_text(m, prices) + (ctx.json ? std::string() : machine_reliability_text(reliability)));
    return 0;
  }

 private:
  std::string id_;
};

}  // namespace

//! gpunex reliability: the provider's score (GET /v1/provider/reliability), each machine's, and what lowered them.
class ReliabilityCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    return parent.add_subcommand("reliability",
                                 "your reliability score, each machine's, and the events that lowered them");
  }
  int run(Context& ctx) override {
    nlohmann::json r;
    if (int rc = get_json(ctx, "/v1/provider/reliability", r); rc != 0) return rc;
    std::string out;
    if (member(r, "state") == "no_machines") {
      out = "No machines yet: a machine is scored from its first day online.\n";
    } else {
      out = "Reliability: " + format_score(member(r, "score")) +
            (member(r, "state") == "new" ? " (new: the prior)" : "") + ", weighted by GPUs; alert below " +
            format_score(member(r, "alert_below")) + "; over the last " + format_fixed(member(r, "window_days"), 0) +
            " days\n\n";
      std::vector<std::vector<std::string>> rows;
      for (const auto& m : member(r, "machines")) {
        rows.push_back({format_text(member(m, "machine_id")), format_text(member(m, "hostname")),
                        format_fixed(member(m, "gpus"), 0),
                        format_score(member(m, "score")) + (member(m, "state") == "new" ? " (new)" : ""),
                        percent_text(member(m, "uptime")), percent_text(member(m, "job_completion")),
                        percent_text(member(m, "benchmark_stability"))});
      }
      out += format_table({"MACHINE", "HOST", "GPUS", "SCORE", "UPTIME", "JOBS DONE", "STABILITY"}, rows);
      if (member(r, "events").is_array() && !member(r, "events").empty()) {
        out += "\nWhat lowered it most:\n" + reliability_events_text(member(r, "events"), 5, true);
      }
    }
    ctx.print(r, out);
    return 0;
  }
};

//! gpunex fleet: every provider's machines (admins; GET /v1/admin/machines, every page) and the fleet's counts.
class FleetCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* c = parent.add_subcommand("fleet", "every provider's machines and the fleet's counts (admins)");
    c->add_option("--status", status_, "online or offline")->type_name("STATUS");
    return c;
  }
  int run(Context& ctx) override {
    nlohmann::json items, page;
    const std::string path = "/v1/admin/machines?limit=200" + (status_.empty() ? "" : "&status=" + url_encode(status_));
    if (int rc = get_every_page(ctx, path, items, page); rc != 0) return rc;
    const nlohmann::json summary = member(page, "summary");  // the whole fleet's, on every page
    std::vector<std::vector<std::string>> rows;
    for (const auto& m : items) {
      std::string gpus;
      for (const auto& g : member(m, "gpus")) {
        gpus +=
            (gpus.empty() ? "" : ", ") + format_fixed(member(g, "count"), 0) + " × " + format_text(member(g, "model"));
      }
      rows.push_back({format_text(member(m, "id")), format_text(member(m, "hostname")),
                      format_text(member(m, "provider_email")),
                      format_text(member(m, "status")) + (m.value("simulated", false) ? " (simulated)" : ""),
                      gpus.empty() ? "-" : gpus,
                      format_fixed(member(m, "gpus_listed"), 0) + "/" + format_fixed(member(m, "gpu_count"), 0),
                      format_fixed(member(m, "gpus_rented"), 0), format_text(member(m, "last_seen"))});
    }
    const auto n = [&](const char* k) { return format_fixed(member(summary, k), 0); };
    std::string out = n("machines") + " machines: " + n("online") + " online, " + n("offline") + " offline; " +
                      n("gpus") + " GPUs: " + n("gpus_listed") + " listed, " + n("gpus_rented") + " rented\n";
    out += rows.empty()
               ? std::string("no machines") + (status_.empty() ? "" : " " + status_)
               : format_table({"MACHINE", "HOST", "PROVIDER", "STATUS", "GPUS", "LISTED", "RENTED", "LAST SEEN"}, rows);
    nlohmann::json all{{"items", std::move(items)}, {"summary", summary}};
    ctx.print(all, out);
    return 0;
  }

 private:
  std::string status_;
};

class MachinesRemoveCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* c = machines_group(parent)->add_subcommand(
        "remove",
        "remove a machine you no longer run (offline, no live rental): out of your list, the marketplace and "
        "reliability, its history kept; its agent heard again brings it back");
    c->add_option("ID", id_, "machine id, as `gpunex machines list` shows it")->required();
    return c;
  }
  int run(Context& ctx) override {
    nlohmann::json out;
    if (int rc = send_json(ctx, "DELETE", "/v1/provider/machines/" + url_encode(id_), std::nullopt, out)) return rc;
    ctx.print(out, "removed " + id_ + " (its rentals and earnings stay in your history)");
    return 0;
  }

 private:
  std::string id_;
};

std::unique_ptr<Command> make_machines_remove_command() {
  return std::make_unique<MachinesRemoveCommand>();
}
std::unique_ptr<Command> make_fleet_command() {
  return std::make_unique<FleetCommand>();
}
std::unique_ptr<Command> make_machines_list_command() {
  return std::make_unique<MachinesListCommand>();
}
std::unique_ptr<Command> make_machines_show_command() {
  return std::make_unique<MachinesShowCommand>();
}
std::unique_ptr<Command> make_reliability_command() {
  return std::make_unique<ReliabilityCommand>();
}

}  // namespace gpunex::cli
