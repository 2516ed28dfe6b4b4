#include "server/http/http.hpp"

#include <algorithm>
#include <cctype>

namespace gpunex::http {

namespace {

std::string to_lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// "/a/b" -> {"a", "b"}; "/" -> {""}; "/a/" -> {"a", ""}, so a trailing slash
// is a different path (an extra, empty segment that no pattern matches).
std::vector<std::string_view> split_path(std::string_view path) {
  std::vector<std::string_view> out;
  if (!path.empty() && path.front() == '/') path.remove_prefix(1);
  for (;;) {
    auto slash = path.find('/');
    out.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return out;
}

bool is_param(std::string_view segment) {
  return segment.size() >= 2 && segment.front() == '{' && segment.back() == '}';
}

}  // namespace

Method parse_method(std::string_view name) {
  // Methods are case-sensitive (RFC 9110 §9.1).
  if (name == "GET") return Method::get;
  if (name == "HEAD") return Method::head;
  if (name == "POST") return Method::post;
  if (name == "PUT") return Method::put;
  if (name == "PATCH") return Method::patch;
  if (name == "DELETE") return Method::del;
  if (name == "OPTIONS") return Method::options;
  return Method::other;
}

std::string_view method_name(Method m) {
  switch (m) {
    case Method::get: return "GET";
    case Method::head: return "HEAD";
    case Method::post: return "POST";
    case Method::put: return "PUT";
    case Method::patch: return "PATCH";
    case Method::del: return "DELETE";
    case Method::options: return "OPTIONS";
    case Method::other: return "OTHER";
  }
  return "OTHER";
}

std::string Request::header(std::string_view name) const {
  // Names are stored lower-case; callers mostly ask in lower case, which needs no copy.
  const bool lower = std::none_of(name.begin(), name.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
  auto it = lower ? headers.find(name) : headers.find(to_lower(name));
  return it == headers.end() ? std::string() : it->second;
}

std::optional<std::string> Request::cookie(std::string_view name) const {
  auto range = headers.equal_range(std::string_view("cookie"));
  for (auto it = range.first; it != range.second; ++it) {
    std::string_view rest = it->second;
    while (!rest.empty()) {
      auto semi = rest.find(';');
      std::string_view pair = trim(rest.substr(0, semi));
      rest = semi == std::string_view::npos ? std::string_view() : rest.substr(semi + 1);
      auto eq = pair.find('=');
      if (eq == std::string_view::npos) continue;
      if (trim(pair.substr(0, eq)) != name) continue;
      std::string_view value = trim(pair.substr(eq + 1));
      if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
        value = value.substr(1, value.size() - 2);
      }
      return std::string(value);
    }
  }
  return std::nullopt;
}

std::optional<std::string> Request::query_param(std::string_view name) const {
  auto it = query.find(name);
  if (it == query.end()) return std::nullopt;
  return it->second;
}

std::string Request::param(std::string_view name) const {
  auto it = params.find(name);
  return it == params.end() ? std::string() : it->second;
}

Response Response::json(int status, const nlohmann::json& body) {
  Response r;
  r.status = status;
  // Replace invalid UTF-8 rather than throw: a response must always be producible.
  r.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return r;
}

Response Response::error(const core::Error& e) {
  nlohmann::json field = e.field ? nlohmann::json(*e.field) : nlohmann::json(nullptr);
  nlohmann::json body = {{"code", e.code_text()}, {"message", e.message}, {"field", field}};
  // Every invalid field, so a form can mark them all at once; absent when the error is about no field.
  if (auto all = e.all_fields(); !all.empty()) {
    nlohmann::json fields = nlohmann::json::array();
    for (const auto& f : all) fields.push_back({{"field", f.field}, {"message", f.message}, {"code", f.code}});
    body["fields"] = std::move(fields);
  }
  if (!e.details.empty()) {
    nlohmann::json details = nlohmann::json::object();
    for (const auto& [name, value] : e.details) details[name] = value;
    body["details"] = std::move(details);
  }
  auto r = json(core::http_status(e.code), {{"error", std::move(body)}});
  if (e.retry_after_s) r.header("Retry-After", std::to_string(*e.retry_after_s));
  // RFC 9110: a 401 names the scheme that would be taken (a session token or an API key, both Bearer).
  if (e.code == core::ErrorCode::unauthenticated) r.header("WWW-Authenticate", "Bearer realm=\"gpunex\"");
  return r;
}

Response Response::error(core::ErrorCode code, std::string message,
                         std::optional<std::string> field) {
  return error(core::Error::make(code, std::move(message), std::move(field)));
}

std::optional<std::string> percent_decode(std::string_view s, bool form) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '%') {
      if (i + 2 >= s.size()) return std::nullopt;
      int hi = hex_value(s[i + 1]);
      int lo = hex_value(s[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && form) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::map<std::string, std::string, std::less<>> parse_query(std::string_view query, std::string* repeated) {
  std::map<std::string, std::string, std::less<>> out;
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    auto eq = pair.find('=');
    auto key = percent_decode(pair.substr(0, eq), true);
    auto value = eq == std::string_view::npos ? std::optional<std::string>("")
                                              : percent_decode(pair.substr(eq + 1), true);
    // A pair with a bad escape is dropped: guessing its meaning would be worse.
    if (!key || !value || key->empty()) continue;
    if (repeated != nullptr && repeated->empty() && out.contains(*key)) *repeated = *key;
    out.insert_or_assign(std::move(*key), std::move(*value));
  }
  return out;
}

void Router::add(Method method, std::string pattern, Handler handler, std::optional<std::uint64_t> counted_body_limit) {
  std::vector<std::string> segments;
  for (auto s : split_path(pattern)) segments.emplace_back(s);
  routes_.push_back(Route{method, std::move(pattern), std::move(segments), std::move(handler), counted_body_limit});
}

Router::Match Router::match(Method method, std::string_view path) const {
  Match result;
  // Decode segment by segment, so an encoded '/' stays inside its segment.
  std::vector<std::string> segments;
  for (auto raw : split_path(path)) {
    auto decoded = percent_decode(raw, false);
    if (!decoded) return result;
    segments.push_back(std::move(*decoded));
  }

  // Per route: does it match, and how specific is it (literal=1 per position).
  auto matches = [&](const Route& r) {
    if (r.segments.size() != segments.size()) return false;
    for (std::size_t i = 0; i < segments.size(); ++i) {
      if (is_param(r.segments[i])) {
        if (segments[i].empty()) return false;
      } else if (r.segments[i] != segments[i]) {
        return false;
      }
    }
    return true;
  };
  // Lexicographic: the first position where one is literal and the other a
  // parameter decides, so "/v1/review/applications" beats "/v1/{x}/applications".
  auto more_specific = [](const Route& a, const Route& b) {
    for (std::size_t i = 0; i < a.segments.size(); ++i) {
      bool pa = is_param(a.segments[i]);
      bool pb = is_param(b.segments[i]);
      if (pa != pb) return !pa;
    }
    return false;
  };
  auto method_fits = [](Method route, Method wanted, bool allow_get_for_head) {
    return route == wanted || (allow_get_for_head && wanted == Method::head && route == Method::get);
  };

  const Route* best = nullptr;
  bool any_path_match = false;
  bool has_head_route = false;
  for (const auto& r : routes_) {
    if (matches(r) && r.method == Method::head) has_head_route = true;
  }
  for (const auto& r : routes_) {
    if (!matches(r)) continue;
    any_path_match = true;
    auto add_allowed = [&](Method m) {
      if (std::find(result.allowed.begin(), result.allowed.end(), m) == result.allowed.end()) {
        result.allowed.push_back(m);
      }
    };
    add_allowed(r.method);
    if (r.method == Method::get) add_allowed(Method::head);
    if (!method_fits(r.method, method, !has_head_route)) continue;
    if (best == nullptr || more_specific(r, *best)) best = &r;
  }

  if (best == nullptr) {
    if (any_path_match) {
      result.kind = MatchKind::method_not_allowed;
    } else {
      result.allowed.clear();
    }
    return result;
  }
  result.kind = MatchKind::found;
  result.handler = &best->handler;
  result.index = static_cast<std::size_t>(best - routes_.data());
  result.pattern = best->pattern;
  result.counted_body_limit = best->counted_body_limit;
  for (std::size_t i = 0; i < segments.size(); ++i) {
    const auto& s = best->segments[i];
    if (is_param(s)) result.params[s.substr(1, s.size() - 2)] = segments[i];
  }
  return result;
}

}  // namespace gpunex::http
