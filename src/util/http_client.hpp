#pragma once
// A small blocking HTTP client over libcurl, used by the CLI and the agent.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace gpunex::util {

//! Percent-encodes everything but RFC 3986's unreserved characters (A-Z a-z 0-9 - _ . ~), for a
//! query value or a path segment.
std::string url_encode(std::string_view s);

struct HttpResponse {
  long status = 0;
  std::string body;
  std::uint64_t body_bytes = 0;                     // received; more than body.size() after a transfer()
  std::multimap<std::string, std::string> headers;  // lower-case names
};

//! A bulk transfer (the network benchmarks): bodies streamed through large buffers, never held whole.
struct TransferOptions {
  //! The request body: this many bytes, sent from `pattern` over and over (non-empty when upload_bytes > 0).
  std::uint64_t upload_bytes = 0;
  std::string_view pattern;
  //! The response body is counted in HttpResponse::body_bytes; only its first keep_bytes land in body.
  std::size_t keep_bytes = 4096;
};

struct HttpClientOptions {
  std::chrono::milliseconds timeout{30000};
  std::string ca_file;           // custom CA bundle for TLS verification
  bool verify_tls = true;
  std::string unix_socket;       // talk HTTP over a unix socket (Docker Engine API)
};

class HttpClient {
 public:
  explicit HttpClient(std::string base_url, HttpClientOptions options = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  //! Sends one request; a transport failure (refused, timeout, TLS) is an unavailable Error.
  core::Result<HttpResponse> request(const std::string& method, const std::string& path,
                                     const std::optional<std::string>& json_body = std::nullopt,
                                     const std::vector<std::pair<std::string, std::string>>& headers = {});
  //! Like request(), for large bodies: see TransferOptions.
  core::Result<HttpResponse> transfer(const std::string& method, const std::string& path, const TransferOptions& t,
                                      const std::vector<std::pair<std::string, std::string>>& headers = {});
  const std::string& base_url() const { return base_url_; }

 private:
  std::string base_url_;
  HttpClientOptions options_;
  void* curl_;  // CURL*, reused so connections are kept alive
};

}  // namespace gpunex::util
