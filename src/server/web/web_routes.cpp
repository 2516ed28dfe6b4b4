// Serves the embedded dashboard. The dashboard routes with the URL fragment
// (#/login, #/roles), so the server needs only "/" and each asset's path.

#include "server/app.hpp"
#include "server/web/web.hpp"

namespace gpunex::server {

namespace {

http::Response serve(const web::Asset& a) {
  http::Response r;
  r.content_type = std::string(a.content_type);
  r.body = std::string(a.body);
  r.header("Cache-Control", a.path == "/index.html" ? "no-cache" : "public, max-age=300");
  r.header("Content-Security-Policy",
           "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
           "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'");
  return r;
}

}  // namespace

void register_web(App& app) {
  for (const auto& asset : web::assets()) {
    const web::Asset* a = &asset;
    app.route(http::Method::get, std::string(a->path), RouteOptions::public_route(),
              [a](Ctx&) { return serve(*a); });
  }
  if (const auto* index = web::find_asset("/index.html")) {
    app.route(http::Method::get, "/", RouteOptions::public_route(), [index](Ctx&) { return serve(*index); });
  }
}

}  // namespace gpunex::server
