#pragma once
// A small blocking HTTP client over libcurl, used by the CLI and the agent.

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace gpunex::util {

struct HttpResponse {
  long status = 0;
  std::string body;
  std::multimap<std::string, std::string> headers;  // lower-case names
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
  const std::string& base_url() const { return base_url_; }

 private:
  std::string base_url_;
  HttpClientOptions options_;
  void* curl_;  // CURL*, reused so connections are kept alive
};

}  // namespace gpunex::util
