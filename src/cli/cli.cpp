#include "cli/cli.hpp"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

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
  if (!j.is_object() || !j.contains("token")) return std::nullopt;
  return Credentials{j.value("server", ""), j.value("token", ""), j.value("email", "")};
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
  std::error_code ec;
  fs::remove(config_dir() + "/credentials.json", ec);
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
                                      const std::optional<nlohmann::json>& body) {
  auto client = ctx.client();
  std::vector<std::pair<std::string, std::string>> headers;
  if (auto t = ctx.token()) headers.emplace_back("Authorization", "Bearer " + *t);
  std::optional<std::string> text;
  if (body) text = body->dump();
  return client->request(method, path, text, headers);
}

int report_http_error(const Context& ctx, const util::HttpResponse& r) {
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  std::string msg = "server answered " + std::to_string(r.status);
  if (j.is_object() && j.contains("error") && j["error"].is_object()) {
    const auto& e = j["error"];
    msg = e.value("message", msg);
    if (e.contains("field") && e["field"].is_string()) msg += " (field: " + e["field"].get<std::string>() + ")";
    // Every other invalid field, one line each, so a file with several mistakes is fixed in one go.
    if (e.contains("fields") && e["fields"].is_array()) {
      for (std::size_t i = 1; i < e["fields"].size(); ++i) {
        const auto& f = e["fields"][i];
        if (!f.is_object() || !f.contains("message") || !f["message"].is_string()) continue;
        msg += "\nerror: " + f["message"].get<std::string>();
        if (f.contains("field") && f["field"].is_string()) msg += " (field: " + f["field"].get<std::string>() + ")";
      }
    }
  }
  if (r.status == 401) msg += "; run `gpunex login`";
  return ctx.fail(msg, j.is_object() ? j : nlohmann::json(nullptr));
}

}  // namespace gpunex::cli
