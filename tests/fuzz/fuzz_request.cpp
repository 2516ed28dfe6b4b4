// libFuzzer target: raw bytes → HTTP parsing → routing → authentication →
// JSON validation of the endpoint's body, against an in-memory SQLite store.
// Any crash, sanitizer report or uncaught exception is a finding.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/json_reader.hpp"
#include "server/api/routes.hpp"
#include "server/http/http.hpp"
#include "server/platform/request_pipeline.hpp"
#include "server/web/web_routes.hpp"
#include "store/store.hpp"
#include "util/crypto.hpp"

using namespace gpunex;  // NOLINT

namespace {

server::App& app() {
  static std::unique_ptr<server::App> instance = [] {
    util::init_crypto();
    server::Config cfg;
    cfg.access_log = false;
    cfg.auth_rate_limit_per_minute = 1000000;
    cfg.login_free_failures = 1000000;
    auto store = store::open_store("sqlite::memory:");
    store::migrate(*store);
    auto built = server::make_app(cfg, std::move(store));
    server::register_web(*built);
    return built;
  }();
  return *instance;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view raw(reinterpret_cast<const char*>(data), size);
  // Also exercise the JSON reader directly on the raw bytes.
  if (auto j = core::parse_json_object(raw); j.ok()) {
    core::ObjectReader r(*j);
    (void)r.optional_string("email");
    (void)r.optional_int("count", 1, 1024);
    (void)r.finish();
  }
  auto req = http::parse_raw_request(raw, 64 * 1024);
  if (!req.ok()) return 0;
  req->remote_ip = "127.0.0.1";
  auto resp = app().handle(*req);
  if (resp.status < 100 || resp.status > 599) __builtin_trap();
  return 0;
}
