// Serves the embedded dashboard. The dashboard routes with the URL fragment
// (#/login, #/roles), so the server needs only "/" and each asset's path.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <string>

#include "server/web/web_routes.hpp"

#include "server/platform/request_pipeline.hpp"
#include "server/web/web.hpp"

namespace gpunex::server {

namespace {

//! The owner of the embedded assets' bytes, which live as long as the program: a response points at
//! them instead of copying each asset into every answer.
const std::shared_ptr<const void>& embedded_bytes() {
  static const std::shared_ptr<const void> owner(static_cast<const void*>(&owner), [](const void*) {});
  return owner;
}

http::Response serve(const web::Asset& a, bool embedded = true) {
  http::Response r;
  r.content_type = std::string(a.content_type);
  if (embedded) {
    r.shared_body(embedded_bytes(), a.body);
  } else {
    r.body = std::string(a.body);
  }
  r.header("Cache-Control", a.path == "/index.html" ? "no-cache" : "public, max-age=300");
  r.header("Content-Security-Policy",
           "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
           "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'");
  return r;
}

std::string_view content_type_for(std::string_view name) {
  auto ends = [&](std::string_view ext) { return name.size() >= ext.size() && name.substr(name.size() - ext.size()) == ext; };
  if (ends(".html")) return "text/html; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  if (ends(".js")) return "text/javascript; charset=utf-8";
  if (ends(".svg")) return "image/svg+xml";
  if (ends(".png")) return "image/png";
  if (ends(".json")) return "application/json";
  return "application/octet-stream";
}

// Development mode (web_dir set): assets are read from disk on every request, so
// dashboard work needs no rebuild. Only plain file names directly in the folder.
http::Response serve_from_dir(const std::string& dir, const std::string& name) {
  // A NUL would end the name at the OS ("index.html\0.png" opens index.html, typed as a PNG).
  if (name.empty() || name.find('/') != std::string::npos || name.find("..") != std::string::npos ||
      name.front() == '.' || name.find('\0') != std::string::npos) {
    return http::Response::error(core::ErrorCode::not_found, "no such file");
  }
  // Regular files only, opened without following a symlink: a link in the folder must not serve
  // what it points at (/etc/passwd, the database).
  const std::string file = dir + "/" + name;
  const int fd = ::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    if (fd >= 0) ::close(fd);
    // The npm library (uPlot) lives in web/node_modules, not in the folder: its embedded copy.
    if (const auto* vendored = web::find_asset("/" + name)) return serve(*vendored);
    return http::Response::error(core::ErrorCode::not_found, "no such file: /" + name);
  }
  std::string text;
  char buf[65536];
  for (;;) {
    const auto n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  web::Asset a{name == "index.html" ? "/index.html" : "/dev", content_type_for(name), text};
  return serve(a, /*embedded=*/false);  // text goes away with this call
}

}  // namespace

void register_web(App& app) {
  if (!app.config().web_dir.empty()) {
    const std::string dir = app.config().web_dir;
    app.route(http::Method::get, "/{file}", RouteOptions::public_route().doc({.internal = true}),
              [dir](Ctx& ctx) { return serve_from_dir(dir, ctx.req.param("file")); });
    app.route(http::Method::get, "/", RouteOptions::public_route().doc({.internal = true}),
              [dir](Ctx&) { return serve_from_dir(dir, "index.html"); });
    return;
  }
  for (const auto& asset : web::assets()) {
    const web::Asset* a = &asset;
    app.route(http::Method::get, std::string(a->path), RouteOptions::public_route().doc({.internal = true}),
              [a](Ctx&) { return serve(*a); });
  }
  if (const auto* index = web::find_asset("/index.html")) {
    app.route(http::Method::get, "/", RouteOptions::public_route().doc({.internal = true}), [index](Ctx&) { return serve(*index); });
  }
}

}  // namespace gpunex::server
