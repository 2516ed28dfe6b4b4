// Boost.Beast messages to and from Request/Response, and parse_raw_request (the fuzz target's entry).

#include "server/http/beast_message.hpp"

#include <algorithm>
#include <cctype>
#include <random>
#include <stdexcept>

namespace gpunex::http {

namespace detail {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Header names and values from handlers must not smuggle in new lines.
bool safe_header(std::string_view name, std::string_view value) {
  auto bad = [](char c) { return c == '\r' || c == '\n' || c == '\0'; };
  return !name.empty() && std::none_of(name.begin(), name.end(), bad) && std::none_of(value.begin(), value.end(), bad);
}

}  // namespace

bool valid_request_id(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  return std::all_of(id.begin(), id.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == ':'; });
}

std::string new_request_id() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char digits[] = "0123456789abcdef";
  std::string id(16, '0');
  auto v = rng();
  for (auto& c : id) {
    c = digits[v & 0xF];
    v >>= 4;
  }
  return id;
}

namespace {

void add_field(std::string& fields, std::string_view name, std::string_view value) {
  fields.append(name);
  fields += ": ";
  fields.append(value);
  fields += "\r\n";
}

bool carries_no_body(unsigned status) {
  return status < 200 || status == 204 || status == 304;
}

}  // namespace

std::string WireResponse::header_block() const {
  const auto reason = bhttp::obsolete_reason(bhttp::int_to_status(status));
  std::string out;
  out.reserve(fields.size() + 96);
  out += version == 10 ? "HTTP/1.0 " : "HTTP/1.1 ";
  out += std::to_string(status);
  out += ' ';
  out.append(reason.data(), reason.size());
  out += "\r\n";
  out += fields;
  if (content_length) add_field(out, "Content-Length", std::to_string(*content_length));
  // HTTP/1.1 keeps a connection unless told; HTTP/1.0 closes it unless told.
  if (version >= 11 && !keep_alive) out += "Connection: close\r\n";
  if (version < 11 && keep_alive) out += "Connection: keep-alive\r\n";
  out += "\r\n";
  return out;
}

WireResponse make_error(unsigned version, core::ErrorCode code, std::string message) {
  Response r = Response::error(code, std::move(message));
  WireResponse res;
  res.status = static_cast<unsigned>(r.status);
  res.version = version;
  add_field(res.fields, "Server", "gpunex");
  add_field(res.fields, "Content-Type", r.content_type);
  res.owned = std::move(r.body);
  res.content_length = res.owned.size();
  res.keep_alive = false;
  return res;
}

core::Result<Request> request_from_header(const bhttp::request_header<>& msg) {
  Request req;
  req.method = parse_method(std::string_view(msg.method_string().data(), msg.method_string().size()));
  req.target = std::string(msg.target());
  for (const auto& f : msg) {
    req.headers.emplace(lower(std::string_view(f.name_string().data(), f.name_string().size())),
                        std::string(f.value()));
  }
  std::string_view target = req.target;
  auto q = target.find('?');
  req.raw_path = std::string(target.substr(0, q));
  if (q != std::string_view::npos) req.query = parse_query(target.substr(q + 1), &req.repeated_query);
  auto decoded = percent_decode(req.raw_path, false);
  if (!decoded || req.raw_path.empty() || req.raw_path.front() != '/') {
    return core::Error::make(core::ErrorCode::bad_request, "bad request target");
  }
  req.path = std::move(*decoded);
  return req;
}

core::Result<Request> request_from_message(BeastRequest&& msg) {
  auto req = request_from_header(msg);
  if (!req) return req;
  req->body_length = msg.body().length;
  req->body = std::move(msg.body().bytes);
  return req;
}

WireResponse to_wire(Response r, unsigned version, const std::string& request_id, bool keep_alive, bool head) {
  if (r.status < 100 || r.status > 999) throw std::invalid_argument("a status is three digits");
  WireResponse res;
  res.status = static_cast<unsigned>(r.status);
  res.version = version;
  res.keep_alive = keep_alive;
  res.fields.reserve(256);
  add_field(res.fields, "Server", "gpunex");
  if (!r.content_type.empty() && safe_header("Content-Type", r.content_type)) {
    add_field(res.fields, "Content-Type", r.content_type);
  }
  bool has_request_id = false;
  for (const auto& [name, value] : r.headers) {
    if (!safe_header(name, value)) continue;
    if (beast::iequals(name, "x-request-id")) has_request_id = true;
    add_field(res.fields, name, value);
  }
  if (!has_request_id) add_field(res.fields, "X-Request-Id", request_id);
  if (!carries_no_body(res.status)) {
    res.owned = std::move(r.body);
    res.owner = std::move(r.body_owner);
    res.shared = r.shared;
    res.content_length = res.body().size();
  }
  res.send_body = !head;
  return res;
}

}  // namespace detail

core::Result<Request> parse_raw_request(std::string_view raw, std::size_t body_limit) {
  namespace beast = boost::beast;
  namespace bhttp = boost::beast::http;
  namespace net = boost::asio;
  bhttp::request_parser<detail::RequestBody> parser;
  parser.header_limit(16 * 1024);
  parser.body_limit(body_limit);
  parser.eager(true);
  beast::error_code ec;
  std::size_t offset = 0;
  while (!ec && !parser.is_done() && offset < raw.size()) {
    std::size_t used = parser.put(net::buffer(raw.data() + offset, raw.size() - offset), ec);
    if (used == 0) break;
    offset += used;
  }
  if (ec == bhttp::error::need_more) ec = {};
  if (!ec && !parser.is_done() && parser.got_some()) parser.put_eof(ec);
  if (ec || !parser.is_done()) {
    return core::Error::make(core::ErrorCode::bad_request, "malformed HTTP request");
  }
  return detail::request_from_message(parser.release());
}

}  // namespace gpunex::http
