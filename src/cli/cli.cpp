#include "cli/cli.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "core/marketplace.hpp"

namespace gpunex::cli {

namespace fs = std::filesystem;

std::string config_dir() {
  if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && *x) return std::string(x) + "/gpunex";
  const char* home = std::getenv("HOME");
  return std::string(home ? home : ".") + "/.config/gpunex";
}

std::optional<Credentials> load_credentials() {
  std::ifstream in(config_dir() + "/credentials.json");
  if (!in) return std::nullopt;
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_object() || !j.contains("token") || !j["token"].is_string() || j["token"].get<std::string>().empty())
    return std::nullopt;
  return Credentials{j.value("server", ""), j.value("token", ""), j.value("email", "")};
}

std::optional<std::string> saved_server() {
  std::ifstream in(config_dir() + "/credentials.json");
  if (!in) return std::nullopt;
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_object() || !j.contains("server") || !j["server"].is_string() || j["server"].get<std::string>().empty())
    return std::nullopt;
  return j["server"].get<std::string>();
}

void save_credentials(const Credentials& c) {
  const std::string dir = config_dir();
  fs::create_directories(dir);
  ::chmod(dir.c_str(), 0700);
  const std::string path = dir + "/credentials.json";
  const std::string tmp = path + ".tmp";
  {
    // Create with 0600 before writing the secret, so it is never readable by others.
    mode_t old = ::umask(0077);
    std::ofstream out(tmp, std::ios::trunc);
    ::umask(old);
    out << nlohmann::json{{"server", c.server}, {"token", c.token}, {"email", c.email}}.dump(2) << "\n";
  }
  ::chmod(tmp.c_str(), 0600);
  fs::rename(tmp, path);
}

void forget_credentials() {
  const auto server = saved_server();
  std::error_code ec;
  fs::remove(config_dir() + "/credentials.json", ec);
  // The token goes; the server stays, so the next `gpunex login` goes where the last one did.
  if (server) save_credentials({*server, "", ""});
}

std::optional<std::string> Context::token() const {
  auto c = load_credentials();
  if (!c || c->server != server) return std::nullopt;
  return c->token;
}

std::unique_ptr<util::HttpClient> Context::client() const { return std::make_unique<util::HttpClient>(server); }

void Context::print(const nlohmann::json& value, const std::string& human) const {
  if (json) {
    *out << value.dump(2) << "\n";
  } else {
    *out << human;
    if (!human.empty() && human.back() != '\n') *out << "\n";
  }
}

int Context::fail(const std::string& message, const nlohmann::json& detail) const {
  if (json) {
    nlohmann::json e = detail.is_object() ? detail : nlohmann::json{{"error", {{"message", message}}}};
    *out << e.dump(2) << "\n";
  } else {
    *err << "error: " << message << "\n";
  }
  return 1;
}

core::Result<util::HttpResponse> call(Context& ctx, const std::string& method, const std::string& path,
                                      const std::optional<nlohmann::json>& body,
                                      const std::vector<std::pair<std::string, std::string>>& extra_headers) {
  auto client = ctx.client();
  std::vector<std::pair<std::string, std::string>> headers = extra_headers;
  if (auto t = ctx.token()) headers.emplace_back("Authorization", "Bearer " + *t);
  std::optional<std::string> text;
  if (body) text = body->dump();
  return client->request(method, path, text, headers);
}

namespace {

//! " (field: max_hours, --max-hours)": the API's field, and the option of the verb that gave it when there
//! is one (the field's last part, dashed, or the verb's own name for it).
std::string field_note(const Context& ctx, const std::string& field) {
  std::string flag;
  if (auto it = ctx.flag_of_field.find(field); it != ctx.flag_of_field.end()) {
    flag = it->second;
  } else if (ctx.command != nullptr) {
    // The whole path (add_model.fp8_tensor_tflops: --add-model-fp8-tensor-tflops), else its last part
    // (filters.max_price: --max-price).
    const auto dashed = [](std::string s) {
      s = s.substr(0, s.find('['));
      std::replace_if(
          s.begin(), s.end(), [](char c) { return c == '_' || c == '.'; }, '-');
      return "--" + s;
    };
    for (const auto& name : {dashed(field), dashed(field.substr(field.rfind('.') + 1))}) {
      if (name.size() > 2 && ctx.command->get_option_no_throw(name) != nullptr) {
        flag = name;
        break;
      }
    }
  }
  return " (field: " + field + (flag.empty() ? "" : ", " + flag) + ")";
}

}  // namespace

int report_http_error(const Context& ctx, const util::HttpResponse& r) {
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  std::string msg = "server answered " + std::to_string(r.status);
  if (j.is_object() && j.contains("error") && j["error"].is_object()) {
    const auto& e = j["error"];
    msg = e.value("message", msg);
    if (e.contains("field") && e["field"].is_string()) msg += field_note(ctx, e["field"].get<std::string>());
    // Every other invalid field, one line each, so a file with several mistakes is fixed in one go.
    if (e.contains("fields") && e["fields"].is_array()) {
      for (std::size_t i = 1; i < e["fields"].size(); ++i) {
        const auto& f = e["fields"][i];
        if (!f.is_object() || !f.contains("message") || !f["message"].is_string()) continue;
        msg += "\nerror: " + f["message"].get<std::string>();
        if (f.contains("field") && f["field"].is_string()) msg += field_note(ctx, f["field"].get<std::string>());
      }
    }
  }
  // A session that ended: log in again. Not for a login (or a password check) that was itself refused.
  const bool wrong_login = j.is_object() && j.contains("error") && j["error"].is_object() &&
                           j["error"].value("code", std::string()) == "invalid_credentials";
  if (r.status == 401 && !wrong_login) msg += "; run `gpunex login`";
  return ctx.fail(msg, j.is_object() ? j : nlohmann::json(nullptr));
}

int get_json(Context& ctx, const std::string& path, nlohmann::json& out) {
  if (!ctx.token()) return ctx.fail("not logged in to " + ctx.server + "; run `gpunex login`");
  auto r = call(ctx, "GET", path);
  if (!r) return ctx.fail(r.error().message);
  if (r->status != 200) return report_http_error(ctx, *r);
  out = nlohmann::json::parse(r->body, nullptr, false);
  if (out.is_discarded()) return ctx.fail("the server's answer to GET " + path + " is not JSON");
  return 0;
}

int send_json(Context& ctx, const std::string& method, const std::string& path,
              const std::optional<nlohmann::json>& body, nlohmann::json& out) {
  if (!ctx.token()) return ctx.fail("not logged in to " + ctx.server + "; run `gpunex login`");
  auto r = call(ctx, method, path, body);
  if (!r) return ctx.fail(r.error().message);
  if (r->status < 200 || r->status >= 300) return report_http_error(ctx, *r);
  out = nlohmann::json::parse(r->body, nullptr, false);
  if (out.is_discarded()) return ctx.fail("the server's answer to " + method + " " + path + " is not JSON");
  return 0;
}

CLI::App* command_group(CLI::App& parent, const std::string& name, const std::string& description) {
  auto found = parent.get_subcommands([&](CLI::App* a) { return a->get_name() == name; });
  if (!found.empty()) return found.front();
  auto* g = parent.add_subcommand(name, description);
  g->require_subcommand(1);
  return g;
}

namespace {

// Characters on screen: UTF-8 continuation bytes take no column ("×", "–").
std::size_t display_width(const std::string& s) {
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

}  // namespace

std::string format_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width(header.size(), 0);
  const auto measure = [&](const std::vector<std::string>& row) {
    for (std::size_t i = 0; i < row.size() && i < width.size(); ++i)
      width[i] = std::max(width[i], display_width(row[i]));
  };
  measure(header);
  for (const auto& row : rows) measure(row);
  std::string out;
  const auto line = [&](const std::vector<std::string>& row) {
    std::string text;
    for (std::size_t i = 0; i < row.size() && i < width.size(); ++i) {
      text += row[i];
      if (i + 1 < row.size()) text += std::string(width[i] - display_width(row[i]) + 2, ' ');
    }
    out += text + "\n";
  };
  line(header);
  for (const auto& row : rows) line(row);
  return out;
}

const nlohmann::json& member(const nlohmann::json& j, const std::string& key) {
  static const nlohmann::json null_value;
  if (!j.is_object()) return null_value;
  const auto it = j.find(key);
  return it == j.end() ? null_value : *it;
}

std::string format_text(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : "-";
}

std::string format_fixed(const nlohmann::json& v, int decimals) {
  if (!v.is_number()) return "-";
  const double d = v.get<double>();
  if (!std::isfinite(d)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, d);
  return buf;
}

std::string format_score(const nlohmann::json& v) {
  if (!v.is_number()) return "-";
  return format_fixed(core::score_figure(v.get<double>()), 1);
}

}  // namespace gpunex::cli
