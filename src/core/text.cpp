#include "core/text.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>

namespace gpunex::core {

bool is_valid_email(std::string_view email) {
  if (email.size() < 3 || email.size() > 254) return false;
  auto at = email.find('@');
  if (at == std::string_view::npos || at == 0 || email.find('@', at + 1) != std::string_view::npos) return false;
  auto local = email.substr(0, at);
  auto domain = email.substr(at + 1);
  if (local.size() > 64 || domain.empty()) return false;
  for (char c : email) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f || c == '<' || c == '>' || c == ',' || c == ';' || c == '"' || c == '\\') return false;
  }
  auto dot = domain.find('.');
  if (dot == std::string_view::npos || dot == 0 || domain.back() == '.' || domain.find("..") != std::string_view::npos)
    return false;
  return local.front() != '.' && local.back() != '.' && is_single_line_text(email);
}

std::string to_lower_ascii(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c); });
  return out;
}

std::string trim(std::string_view s) {
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return std::string(s);
}

namespace {
//! Bidirectional embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069): they make text read
//! differently from what it is ("exe.txt" shown for "txt.exe"), so no stored or shown text may hold them.
bool is_bidi_control(std::uint32_t cp) { return (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069); }
}  // namespace

bool equal_ignoring_ascii_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

bool is_single_line_text(std::string_view s) {
  return is_clean_utf8(s) && s.find_first_of("\t\n") == std::string_view::npos;
}

std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;  // no overlong forms
    if (c == 0xED) hi = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;  // nothing past U+10FFFF
  } else {
    return 0;
  }
  if (i + n > s.size() || byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  }
  return n;
}

bool is_clean_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_sequence_length(s, i);
    if (n == 0) return false;
    const auto c = static_cast<unsigned char>(s[i]);
    std::uint32_t cp = n == 1 ? c : c & (0x7F >> n);
    for (std::size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    if ((cp < 0x20 && cp != '\t' && cp != '\n') || (cp >= 0x7F && cp <= 0x9F) || is_bidi_control(cp)) return false;
    i += n;
  }
  return true;
}

bool is_host_name_or_address(std::string_view host) {
  if (host.empty() || host.size() > 253) return false;
  const std::string text(host);
  unsigned char addr[16];
  if (host.find(':') != std::string_view::npos) return inet_pton(AF_INET6, text.c_str(), addr) == 1;
  if (inet_pton(AF_INET, text.c_str(), addr) == 1) return true;
  std::size_t label = 0;
  for (std::size_t i = 0; i <= host.size(); ++i) {
    if (i == host.size() || host[i] == '.') {
      if (label == 0 || label > 63 || host[i - 1] == '-' || host[i - label] == '-') return false;
      label = 0;
      continue;
    }
    const char c = host[i];
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
    ++label;
  }
  // All digits and dots, yet not an IPv4 address ("300.1.2.3", "1.2.3"): a typo, not a name.
  return host.find_first_not_of("0123456789.") != std::string_view::npos;
}

std::string host_port(std::string_view host, int port) {
  const bool v6 = host.find(':') != std::string_view::npos;
  return (v6 ? "[" : "") + std::string(host) + (v6 ? "]:" : ":") + std::to_string(port);
}

std::string redact_url_credentials(std::string_view url) {
  const auto scheme_end = url.find("://");
  const std::size_t start = scheme_end == std::string_view::npos ? 0 : scheme_end + 3;
  const auto authority_end = url.find_first_of("/?#", start);
  const auto authority = url.substr(start, authority_end == std::string_view::npos ? std::string_view::npos
                                                                                    : authority_end - start);
  const auto at = authority.rfind('@');
  if (at == std::string_view::npos) return std::string(url);
  return std::string(url.substr(0, start)) + "***" + std::string(url.substr(start + at));
}

std::string format_number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6f", v);
  std::string s = buf;
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  const std::size_t digits_from = s.front() == '-' ? 1 : 0;
  std::size_t int_end = s.find('.');
  if (int_end == std::string::npos) int_end = s.size();
  for (std::size_t i = int_end; i > digits_from + 3; i -= 3) s.insert(i - 3, ",");
  return s;
}

std::string capitalize(std::string_view s) {
  std::string out(s);
  if (!out.empty() && out[0] >= 'a' && out[0] <= 'z') out[0] = static_cast<char>(out[0] - 32);
  return out;
}

int lower_hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace gpunex::core
