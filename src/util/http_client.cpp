#include "util/http_client.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <memory>
#include <mutex>

namespace gpunex::util {

namespace {

std::once_flag curl_once;

// Large socket reads and upload writes for transfer(), as iperf3 uses (libcurl caps these at
// CURL_MAX_READ_SIZE and 2 MiB); the defaults (16 and 64 KiB) cost a system call and a callback per sliver.
constexpr long kTransferReadBuffer = 512L << 10;
constexpr long kTransferUploadBuffer = 2L << 20;

size_t write_body(char* ptr, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(ptr, size * n);
  return size * n;
}

// transfer(): counts the response body, keeps its first keep_bytes.
struct Sink {
  HttpResponse* resp;
  std::size_t keep;
};

size_t count_body(char* ptr, size_t size, size_t n, void* user) {
  auto* sink = static_cast<Sink*>(user);
  const std::size_t len = size * n;
  sink->resp->body_bytes += len;
  if (sink->resp->body.size() < sink->keep) {
    sink->resp->body.append(ptr, std::min(len, sink->keep - sink->resp->body.size()));
  }
  return len;
}

// transfer(): the request body, `left` bytes cycled out of `pattern`.
struct Source {
  std::string_view pattern;
  std::uint64_t left;
  std::size_t at = 0;
};

size_t read_body(char* buf, size_t size, size_t n, void* user) {
  auto* src = static_cast<Source*>(user);
  const std::size_t room = size * n;
  std::size_t done = 0;
  while (done < room && src->left > 0) {
    const std::size_t take =
        static_cast<std::size_t>(std::min<std::uint64_t>({room - done, src->left, src->pattern.size() - src->at}));
    std::memcpy(buf + done, src->pattern.data() + src->at, take);
    done += take;
    src->left -= take;
    src->at = (src->at + take) % src->pattern.size();
  }
  return done;
}

size_t write_header(char* ptr, size_t size, size_t n, void* user) {
  std::string line(ptr, size * n);
  auto colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ')) value.erase(value.begin());
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n')) value.pop_back();
    static_cast<std::multimap<std::string, std::string>*>(user)->emplace(std::move(name), std::move(value));
  }
  return size * n;
}

struct SlistFree {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};
using Slist = std::unique_ptr<curl_slist, SlistFree>;

Slist append(Slist list, const std::string& line) {
  curl_slist* grown = curl_slist_append(list.get(), line.c_str());
  if (grown == nullptr) return list;
  (void)list.release();
  return Slist(grown);
}

// Resets the handle and sets what every request shares.
void prepare(CURL* curl, const std::string& url, const std::string& method, const HttpClientOptions& o,
             HttpResponse& resp) {
  curl_easy_reset(curl);
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(o.timeout.count()));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, write_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &resp.body);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, write_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &resp.headers);
  if (!o.unix_socket.empty()) curl_easy_setopt(curl, CURLOPT_UNIX_SOCKET_PATH, o.unix_socket.c_str());
  if (!o.ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, o.ca_file.c_str());
  if (!o.verify_tls) {
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (method == "HEAD") curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
}

core::Result<HttpResponse> perform(CURL* curl, const std::string& base_url, Slist list, HttpResponse&& resp) {
  list = append(std::move(list), "Expect:");
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list.get());
  CURLcode rc = curl_easy_perform(curl);
  if (rc != CURLE_OK) {
    return core::Error::make(core::ErrorCode::unavailable, "cannot reach " + base_url + ": " + curl_easy_strerror(rc));
  }
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &resp.status);
  return std::move(resp);
}

Slist header_list(const std::vector<std::pair<std::string, std::string>>& headers) {
  Slist list;
  for (const auto& [k, v] : headers) list = append(std::move(list), k + ": " + v);
  return list;
}

}  // namespace

HttpClient::HttpClient(std::string base_url, HttpClientOptions options)
    : base_url_(std::move(base_url)), options_(std::move(options)) {
  std::call_once(curl_once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  while (!base_url_.empty() && base_url_.back() == '/') base_url_.pop_back();
  curl_ = curl_easy_init();
}

HttpClient::~HttpClient() { curl_easy_cleanup(static_cast<CURL*>(curl_)); }

core::Result<HttpResponse> HttpClient::request(const std::string& method, const std::string& path,
                                               const std::optional<std::string>& json_body,
                                               const std::vector<std::pair<std::string, std::string>>& headers) {
  auto* curl = static_cast<CURL*>(curl_);
  HttpResponse resp;
  const std::string url = base_url_ + path;
  prepare(curl, url, method, options_, resp);
  Slist list = header_list(headers);
  if (json_body) {
    list = append(std::move(list), "Content-Type: application/json");
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, json_body->data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(json_body->size()));
  }
  auto r = perform(curl, base_url_, std::move(list), std::move(resp));
  if (r) r->body_bytes = r->body.size();
  return r;
}

core::Result<HttpResponse> HttpClient::transfer(const std::string& method, const std::string& path,
                                                const TransferOptions& t,
                                                const std::vector<std::pair<std::string, std::string>>& headers) {
  if (t.upload_bytes > 0 && t.pattern.empty()) {
    return core::Error::make(core::ErrorCode::internal, "transfer: an upload needs a non-empty pattern");
  }
  auto* curl = static_cast<CURL*>(curl_);
  HttpResponse resp;
  const std::string url = base_url_ + path;
  prepare(curl, url, method, options_, resp);
  Sink sink{&resp, t.keep_bytes};
  Source source{t.pattern, t.upload_bytes};
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, count_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(curl, CURLOPT_BUFFERSIZE, kTransferReadBuffer);
  Slist list = header_list(headers);
  if (t.upload_bytes > 0) {
    list = append(std::move(list), "Content-Type: application/octet-stream");
    curl_easy_setopt(curl, CURLOPT_UPLOAD_BUFFERSIZE, kTransferUploadBuffer);
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_READFUNCTION, read_body);
    curl_easy_setopt(curl, CURLOPT_READDATA, &source);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(t.upload_bytes));
  }
  return perform(curl, base_url_, std::move(list), std::move(resp));
}

std::string url_encode(std::string_view s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

}  // namespace gpunex::util
