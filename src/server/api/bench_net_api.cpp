// /v1/bench/net/*: what the agent's network benchmarks measure against. Provider API keys
// (or a provider's session) only, and bounded: a download answers at most kMaxDownloadBytes,
// an upload is counted as it streams in (never kept) and refused (413) above kMaxUploadBytes.

#include <algorithm>
#include <charconv>
#include <memory>
#include <random>

#include "server/api/openapi.hpp"
#include "server/api/routes.hpp"
#include "server/platform/request_pipeline.hpp"

namespace gpunex::server {

namespace {

constexpr std::uint64_t kMaxDownloadBytes = 16ull << 20;
constexpr std::uint64_t kMaxUploadBytes = 16ull << 20;

//! Incompressible bytes, made once and shared (not copied) by every download.
std::shared_ptr<const std::string> payload() {
  static const auto bytes = [] {
    auto s = std::make_shared<std::string>(kMaxDownloadBytes, '\0');
    std::mt19937_64 rng(0x6770756e6578ULL);
    for (std::size_t i = 0; i + 8 <= s->size(); i += 8) {
      const std::uint64_t v = rng();
      std::copy_n(reinterpret_cast<const char*>(&v), 8, s->data() + i);
    }
    return std::shared_ptr<const std::string>(std::move(s));
  }();
  return bytes;
}

http::Response ping(Ctx&) { return http::Response::json(200, {{"ok", true}}); }

http::Response download(Ctx& ctx) {
  const auto q = ctx.req.query_param("bytes");
  std::uint64_t n = 0;
  if (!q || std::from_chars(q->data(), q->data() + q->size(), n).ec != std::errc{} || n == 0 ||
      n > kMaxDownloadBytes) {
    return http::Response::error(core::ErrorCode::invalid_field,
                                 "bytes must be a whole number from 1 to " + std::to_string(kMaxDownloadBytes),
                                 "bytes");
  }
  http::Response r;
  r.content_type = "application/octet-stream";
  auto bytes = payload();
  const std::string_view view(bytes->data(), n);
  r.shared_body(std::move(bytes), view);
  r.header("Cache-Control", "no-store");
  return r;
}

http::Response upload(Ctx& ctx) {
  return http::Response::json(200, {{"bytes", ctx.req.body_length}});
}

}  // namespace

void register_bench_net_api(App& app) {
  using http::Method;
  auto opts = RouteOptions::for_roles({"provider"}).api_key_allowed().no_idempotency();
  app.route(Method::get, "/v1/bench/net/ping", opts.doc({.summary = "Agent network benchmark: latency",
                      .responses = {{200, openapi::closed_record({{"ok", openapi::boolean()}}, {"ok"})}}}),
            ping);
  app.route(Method::get, "/v1/bench/net/download",
            opts.doc({.summary = "Agent network benchmark: download bytes", .query = {"bytes"}, .responses = {{200, nullptr}}}),
            download);
  app.route(Method::post, "/v1/bench/net/upload", RouteOptions(opts).counted_body(kMaxUploadBytes).doc({.summary = "Agent network benchmark: upload bytes",
                  .responses = {{200, openapi::closed_record({{"bytes", openapi::integer(0, 1LL << 40)}}, {"bytes"})}}}),
            upload);
}

}  // namespace gpunex::server
