// gpunex apply | application status | review list|show|approve|reject|needs-info | keys list|rotate|revoke

#include <algorithm>
#include <iostream>
#include <sstream>

#include <toml++/toml.h>

#include "cli/cli.hpp"
#include "core/gpu_catalog.hpp"

namespace gpunex::cli {

namespace {

nlohmann::json toml_to_json(const toml::node& n) {
  if (const auto* t = n.as_table()) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [k, v] : *t) j[std::string(k.str())] = toml_to_json(v);
    return j;
  }
  if (const auto* a = n.as_array()) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& v : *a) j.push_back(toml_to_json(v));
    return j;
  }
  if (const auto* s = n.as_string()) return s->get();
  if (const auto* i = n.as_integer()) return i->get();
  if (const auto* f = n.as_floating_point()) return f->get();
  if (const auto* b = n.as_boolean()) return b->get();
  // Dates and times have no JSON form in the API; pass them as TOML writes them.
  std::ostringstream s;
  n.visit([&](const auto& v) { s << v; });
  return s.str();
}

int need_login(Context& ctx) {
  return ctx.fail("not logged in to " + ctx.server + "; run `gpunex login`");
}

//! GET/POST/... that must answer `expect`; on success parses the body into `out`.
int request_json(Context& ctx, const std::string& method, const std::string& path,
                 const std::optional<nlohmann::json>& body, int expect, nlohmann::json& out) {
  if (!ctx.token()) return need_login(ctx);
  auto r = call(ctx, method, path, body);
  if (!r) return ctx.fail(r.error().message);
  if (r->status != expect) return report_http_error(ctx, *r);
  out = nlohmann::json::parse(r->body, nullptr, false);
  return 0;
}

std::string str(const nlohmann::json& j, const char* key, const std::string& none = "-") {
  if (!j.contains(key) || j[key].is_null()) return none;
  if (j[key].is_string()) return j[key].get<std::string>();
  return j[key].dump();
}

std::string describe_application(const nlohmann::json& a) {
  std::ostringstream s;
  s << "application " << str(a, "id") << ": " << str(a, "status") << "\n";
  s << "applicant: " << str(a, "full_name") << " <" << str(a, "email") << ">";
  if (a.contains("company") && a["company"].is_string()) s << ", " << a["company"].get<std::string>();
  s << "\n";
  if (a.contains("gpus")) {
    for (const auto& g : a["gpus"]) {
      std::string model = str(g, "model");
      if (model == "other") model = "other: " + str(g, "model_other");
      std::string avail = g["availability"].is_string() ? g["availability"].get<std::string>()
                                                        : "schedule in " + str(g["availability"], "timezone");
      s << "  " << str(g, "count") << " x " << model << ", " << str(g, "system_ram_gb") << " GB RAM, "
        << str(g, "download_gbps") << "/" << str(g, "upload_gbps") << " Gbit/s, " << avail << ", "
        << str(g["location"], "city") << " " << str(g["location"], "country") << " (" << str(g["location"], "region")
        << ")\n";
    }
  }
  if (a.contains("ups"))
    s << "UPS: " << (a["ups"].get<bool>() ? "yes" : "no") << "; commitment: " << str(a, "commitment_months")
      << " months\n";
  s << "suggested tier: " << str(a, "suggested_tier");
  if (a.contains("tier") && a["tier"].is_string()) s << "; tier: " << a["tier"].get<std::string>();
  s << "\n";
  if (a.contains("tier_reasons")) {
    for (const auto& r : a["tier_reasons"]) {
      s << "  [" << (r.value("passed", false) ? "pass" : "FAIL") << "] " << str(r, "rule");
      if (r.contains("reason") && r["reason"].is_string() && !r["reason"].get<std::string>().empty()) {
        s << ": " << r["reason"].get<std::string>();
      }
      s << "\n";
    }
  }
  if (a.contains("expected_review_by") && a["expected_review_by"].is_string()) {
    s << "expected review by: " << a["expected_review_by"].get<std::string>()
      << (a.value("review_overdue", false) ? " (overdue)" : "") << "\n";
  }
  if (a.contains("history")) {
    s << "history:\n";
    for (const auto& h : a["history"]) {
      s << "  " << str(h, "at") << "  " << str(h, "from", "(new)") << " -> " << str(h, "to") << "  by " << str(h, "by");
      if (!str(h, "note", "").empty()) s << "  \"" << h["note"].get<std::string>() << "\"";
      s << "\n";
    }
  }
  return s.str();
}

class ApplyCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* c =
        parent.add_subcommand("apply", "apply to provide GPUs from a TOML file (see docs/application.example.toml)");
    c->add_option("--file", file_, "the application, in TOML")->required()->check(CLI::ExistingFile);
    c->add_flag("--draft", draft_, "only save it as a draft; do not submit");
    return c;
  }
  int run(Context& ctx) override {
    nlohmann::json body;
    try {
      body = toml_to_json(toml::parse_file(file_));
    } catch (const toml::parse_error& e) {
      std::ostringstream s;
      s << file_ << ":" << e.source().begin.line << ":" << e.source().begin.column << ": " << e.description();
      return ctx.fail(s.str());
    }
    // An application the server still lets us edit (a draft, or one sent back for more information) is
    // replaced by the file (PUT: a key left out of the file is left out of the application); otherwise a
    // new one is made.
    nlohmann::json mine;
    if (int rc = request_json(ctx, "GET", "/v1/applications", std::nullopt, 200, mine); rc != 0) return rc;
    std::string id;
    for (const auto& a : mine["items"]) {
      if (a.value("editable", false)) {
        id = a["id"].get<std::string>();
        break;
      }
    }
    nlohmann::json app;
    if (id.empty()) {
      if (int rc = request_json(ctx, "POST", "/v1/applications", body, 201, app); rc != 0) return rc;
      id = app["id"].get<std::string>();
    } else if (int rc = request_json(ctx, "PUT", "/v1/applications/" + id, body, 200, app); rc != 0) {
      return rc;
    }
    if (!draft_) {
      if (int rc = request_json(ctx, "POST", "/v1/applications/" + id + "/submit", std::nullopt, 200, app); rc != 0) {
        return rc;
      }
    }
    std::string human = "application " + id + ": " + str(app, "status");
    if (app["expected_review_by"].is_string()) {
      human += "\nexpected review by " + app["expected_review_by"].get<std::string>() + " (1-3 business days)";
    } else if (draft_) {
      human += "\nsaved as a draft; run again without --draft to submit";
    }
    ctx.print(app, human);
    return 0;
  }

 private:
  std::string file_;
  bool draft_ = false;
};

class ApplicationStatusCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* c = command_group(parent, "application", "your provider application")
                  ->add_subcommand("status", "show your application: status, expected review date, history");
    c->add_option("id", id_, "application id (default: your latest)");
    return c;
  }
  int run(Context& ctx) override {
    nlohmann::json app;
    if (id_.empty()) {
      nlohmann::json mine;
      if (int rc = request_json(ctx, "GET", "/v1/applications", std::nullopt, 200, mine); rc != 0) return rc;
      if (mine["items"].empty()) return ctx.fail("you have no application; run `gpunex apply --file application.toml`");
      app = mine["items"][0];  // newest first
    } else if (int rc = request_json(ctx, "GET", "/v1/applications/" + id_, std::nullopt, 200, app); rc != 0) {
      return rc;
    }
    ctx.print(app, describe_application(app));
    return 0;
  }

 private:
  std::string id_;
};

class ReviewListCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* c = command_group(parent, "review", "review provider applications (reviewers)")
                  ->add_subcommand("list", "the review queue, oldest submission first");
    c->add_option("--status", status_, "draft, submitted, needs_info, approved or rejected")->default_val("submitted");
    return c;
  }
  int run(Context& ctx) override {
    nlohmann::json q;
    if (int rc = request_json(ctx, "GET", "/v1/review/applications?status=" + status_, std::nullopt, 200, q); rc != 0) {
      return rc;
    }
    std::ostringstream s;
    if (q["items"].empty()) s << "no applications with status " << status_ << "\n";
    for (const auto& a : q["items"]) {
      s << str(a, "id") << "  " << str(a, "full_name") << " <" << str(a, "email") << ">  " << str(a, "gpus_text")
        << "  suggested " << str(a, "suggested_tier") << "  submitted " << str(a, "submitted_at");
      if (a.contains("age_business_days")) s << "  age " << str(a, "age_business_days") << " business days";
      if (a.value("overdue", false)) s << "  OVERDUE";
      s << "\n";
    }
    ctx.print(q, s.str());
    return 0;
  }

 private:
  std::string status_;
};

class ReviewShowCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* c = command_group(parent, "review", "review provider applications (reviewers)")
                  ->add_subcommand("show", "one application with its suggested tier and the reason for each rule");
    c->add_option("id", id_, "application id")->required();
    return c;
  }
  int run(Context& ctx) override {
    nlohmann::json app;
    if (int rc = request_json(ctx, "GET", "/v1/applications/" + id_, std::nullopt, 200, app); rc != 0) return rc;
    ctx.print(app, describe_application(app));
    return 0;
  }

 private:
  std::string id_;
};

//! approve, reject or needs-info: one command type, three verbs.
class ReviewDecideCommand : public Command {
 public:
  ReviewDecideCommand(std::string verb, std::string decision)
      : verb_(std::move(verb)), decision_(std::move(decision)) {}

  CLI::App* add_to(CLI::App& parent) override {
    const bool approve = decision_ == "approve";
    auto* c = command_group(parent, "review", "review provider applications (reviewers)")
                  ->add_subcommand(verb_, approve                 ? "approve an application with a tier"
                                          : decision_ == "reject" ? "reject an application (a note is required)"
                                                                  : "send an application back for more information");
    c->add_option("id", id_, "application id")->required();
    auto* note = c->add_option("--note", note_, "the note for the applicant");
    if (approve) {
      c->add_option("--tier", tier_, "community or enterprise")
          ->required()
          ->check(CLI::IsMember({"community", "enterprise"}));
      add_model_options(*c);
    } else {
      note->required();
    }
    return c;
  }
  int run(Context& ctx) override {
    nlohmann::json body = {{"decision", decision_}};
    if (!note_.empty()) body["note"] = note_;
    if (!tier_.empty()) body["tier"] = tier_;
    if (!model_.empty()) body["add_model"] = model_;
    nlohmann::json r;
    if (int rc = request_json(ctx, "POST", "/v1/review/applications/" + id_ + "/decision", body, 200, r); rc != 0) {
      return rc;
    }
    std::string human = "application " + id_ + ": " + str(r["application"], "status");
    if (r.contains("api_key_id")) {
      // The key belongs to the applicant; the server never sends it to the reviewer, and says how the
      // applicant gets it (by mail only where the operator lets mail carry secrets).
      r["api_key_issued"] = true;
      human += " as " + str(r, "tier") + "\nprovider " + str(r, "provider_id") + " created; API key " +
               str(r, "api_key_id") + " issued: " + str(r, "api_key_delivery");
    }
    ctx.print(r, human);
    return 0;
  }

 private:
  //! --add-model-*: every field the catalog keeps for a model, sent as given (the server checks
  //! each and names the one at fault).
  void add_model_options(CLI::App& c) {
    auto text = [&](const std::string& flag, const std::string& key, const std::string& help) {
      c.add_option_function<std::string>(
          flag, [this, key](const std::string& v) { model_[key] = v; }, help);
    };
    text("--add-model-id", "id", "add the applicant's \"other\" GPU to the catalog with this id (e.g. RTX-5090)");
    text("--add-model-for", "model_other",
         "which \"other\" GPU it is, as the applicant wrote it (needed when they listed more than one)");
    text("--add-model-name", "name", "its display name");
    c.add_option_function<double>(
        "--add-model-vram", [this](const double& v) { model_["vram_gib"] = v; }, "its memory in GiB");
    text("--add-model-nvml-name", "nvml_name_pattern", "the name NVML reports for it (how agents' GPUs are matched)");
    for (const auto& key : core::reference_figure_names()) {
      std::string flag = "--add-model-" + key;
      std::replace(flag.begin(), flag.end(), '_', '-');
      c.add_option_function<double>(
          flag, [this, key](const double& v) { model_[key] = v; }, figure_help(key));
    }
    c.add_option_function<int>(
        "--add-model-pcie-gen", [this](const int& v) { model_["pcie_gen"] = v; }, "its PCIe generation");
    text("--add-model-compute-capability", "compute_capability", "its CUDA compute capability, e.g. 12.0");
    text("--add-model-reference-price", "reference_usdc_per_gpu_hour",
         "its reference rate in USDC per GPU-hour, e.g. 1.20: the price recommendation until providers list it");
  }

  static std::string figure_help(const std::string& key) {
    if (key == "mem_bw_gbs") return "its memory bandwidth in GB/s";
    if (key == "fp32_tflops") return "its FP32 peak in TFLOP/s";
    if (key == "fp16_tflops") return "its FP16 (non-tensor) peak in TFLOP/s";
    if (key == "fp16_tensor_tflops") return "its dense FP16 tensor-core peak in TFLOP/s";
    if (key == "bf16_tensor_tflops") return "its dense BF16 tensor-core peak in TFLOP/s";
    if (key == "fp8_tensor_tflops") return "its dense FP8 tensor-core peak in TFLOP/s (omit if it has none)";
    if (key == "tdp_w") return "its board power (TDP) in W";
    return "its " + key;
  }

  std::string verb_, decision_, id_, note_, tier_;
  nlohmann::json model_ = nlohmann::json::object();
};

class KeysListCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    return command_group(parent, "keys", "provider API keys")->add_subcommand("list", "your API keys (by prefix)");
  }
  int run(Context& ctx) override {
    nlohmann::json k;
    if (int rc = request_json(ctx, "GET", "/v1/provider/api-keys", std::nullopt, 200, k); rc != 0) return rc;
    std::ostringstream s;
    for (const auto& i : k["items"]) {
      s << str(i, "id") << "  " << str(i, "prefix") << "...  created " << str(i, "created_at") << "  last used "
        << str(i, "last_used_at", "never") << "  "
        << (i.value("active", false) ? std::string("active") : "revoked " + str(i, "revoked_at")) << "\n";
    }
    if (k["items"].empty()) s << "no API keys\n";
    ctx.print(k, s.str());
    return 0;
  }
};

class KeysRotateCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* c = command_group(parent, "keys", "provider API keys")
                  ->add_subcommand("rotate", "create a new API key (shown once), optionally revoking an old one");
    c->add_option("--revoke", revoke_,
                  "id of the key to revoke in the same step (agents still using it are refused from then on and "
                  "exit with status 4: give them the new key)");
    return c;
  }
  int run(Context& ctx) override {
    std::optional<nlohmann::json> body;
    if (!revoke_.empty()) body = nlohmann::json{{"revoke", revoke_}};
    nlohmann::json k;
    if (int rc = request_json(ctx, "POST", "/v1/provider/api-keys", body, 201, k); rc != 0) return rc;
    std::string human = k["api_key"].get<std::string>();
    if (!ctx.json) {
      *ctx.err << "New API key " << str(k, "id") << " (shown only now; keep it secret)"
               << (revoke_.empty() ? ""
                                   : "; key " + revoke_ +
                                         " is revoked: agents still using it stop (exit status 4) until they are "
                                         "given this one")
               << ":\n";
    }
    ctx.print(k, human);
    return 0;
  }

 private:
  std::string revoke_;
};

class KeysRevokeCommand : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    auto* c = command_group(parent, "keys", "provider API keys")
                  ->add_subcommand("revoke",
                                   "revoke an API key at once: agents using it are refused and stop (exit status 4)");
    c->add_option("id", id_, "key id")->required();
    return c;
  }
  int run(Context& ctx) override {
    nlohmann::json k;
    if (int rc = request_json(ctx, "DELETE", "/v1/provider/api-keys/" + id_, std::nullopt, 200, k); rc != 0) return rc;
    ctx.print(k, "revoked " + id_ + " (" + str(k, "prefix") +
                     "...): agents still using it are refused from now on and stop (exit status 4) until they are "
                     "given another key (gpunex keys rotate)");
    return 0;
  }

 private:
  std::string id_;
};

}  // namespace

std::unique_ptr<Command> make_apply_command() {
  return std::make_unique<ApplyCommand>();
}
std::unique_ptr<Command> make_application_status_command() {
  return std::make_unique<ApplicationStatusCommand>();
}
std::unique_ptr<Command> make_review_list_command() {
  return std::make_unique<ReviewListCommand>();
}
std::unique_ptr<Command> make_review_show_command() {
  return std::make_unique<ReviewShowCommand>();
}
std::unique_ptr<Command> make_review_approve_command() {
  return std::make_unique<ReviewDecideCommand>("approve", "approve");
}
std::unique_ptr<Command> make_review_reject_command() {
  return std::make_unique<ReviewDecideCommand>("reject", "reject");
}
std::unique_ptr<Command> make_review_needs_info_command() {
  return std::make_unique<ReviewDecideCommand>("needs-info", "needs_info");
}
std::unique_ptr<Command> make_keys_list_command() {
  return std::make_unique<KeysListCommand>();
}
std::unique_ptr<Command> make_keys_rotate_command() {
  return std::make_unique<KeysRotateCommand>();
}
std::unique_ptr<Command> make_keys_revoke_command() {
  return std::make_unique<KeysRevokeCommand>();
}

}  // namespace gpunex::cli
