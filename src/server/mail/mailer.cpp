#include "server/mail/mailer.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>

#include <curl/curl.h>
#include <date/date.h>

#include "core/text.hpp"

namespace gpunex::server::mail {

using core::Error;
using core::ErrorCode;

namespace {

bool is_ascii(const std::string& s) {
  for (unsigned char c : s) {
    if (c >= 0x80) return false;
  }
  return true;
}

std::string base64(const std::string& in) {
  static const char* tbl = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    unsigned v = (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8) |
                 static_cast<unsigned char>(in[i + 2]);
    out += tbl[(v >> 18) & 63];
    out += tbl[(v >> 12) & 63];
    out += tbl[(v >> 6) & 63];
    out += tbl[v & 63];
  }
  if (i < in.size()) {
    unsigned v = static_cast<unsigned char>(in[i]) << 16;
    if (i + 1 < in.size()) v |= static_cast<unsigned char>(in[i + 1]) << 8;
    out += tbl[(v >> 18) & 63];
    out += tbl[(v >> 12) & 63];
    out += i + 1 < in.size() ? tbl[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

//! A header value without CR/LF (no header injection), RFC 2047-encoded when not ASCII.
std::string header_value(const std::string& v) {
  std::string clean;
  for (char c : v) clean += (c == '\r' || c == '\n') ? ' ' : c;
  if (is_ascii(clean)) return clean;
  return "=?UTF-8?B?" + base64(clean) + "?=";
}

std::string domain_of(const std::string& addr) {
  auto at = addr.rfind('@');
  return at == std::string::npos ? "localhost" : addr.substr(at + 1);
}

class SmtpMailer final : public Mailer {
 public:
  SmtpMailer(std::string url, bool require_tls) : url_(std::move(url)), require_tls_(require_tls) {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  }

  core::Status send(const Message& m) override {
    const std::string text = format_rfc5322(m);
    struct Upload {
      const std::string* text;
      std::size_t pos = 0;
    } up{&text};
    auto read_cb = +[](char* buf, std::size_t size, std::size_t n, void* userp) -> std::size_t {
      auto* u = static_cast<Upload*>(userp);
      std::size_t left = u->text->size() - u->pos;
      std::size_t len = std::min(left, size * n);
      std::copy_n(u->text->data() + u->pos, len, buf);
      u->pos += len;
      return len;
    };
    CURL* c = curl_easy_init();
    if (!c) return Error::make(ErrorCode::internal, "curl_easy_init failed");
    const std::string from = "<" + address_of(m.from) + ">";
    curl_slist* rcpt = curl_slist_append(nullptr, ("<" + address_of(m.to) + ">").c_str());
    char errbuf[CURL_ERROR_SIZE] = {0};
    curl_easy_setopt(c, CURLOPT_URL, url_.c_str());
    curl_easy_setopt(c, CURLOPT_MAIL_FROM, from.c_str());
    curl_easy_setopt(c, CURLOPT_MAIL_RCPT, rcpt);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, read_cb);
    curl_easy_setopt(c, CURLOPT_READDATA, &up);
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 20000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    if (require_tls_) curl_easy_setopt(c, CURLOPT_USE_SSL, static_cast<long>(CURLUSESSL_ALL));
    CURLcode rc = curl_easy_perform(c);
    long smtp_code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &smtp_code);
    curl_slist_free_all(rcpt);
    curl_easy_cleanup(c);
    if (rc != CURLE_OK) {
      std::string msg = errbuf[0] ? errbuf : curl_easy_strerror(rc);
      if (smtp_code) msg += " (SMTP " + std::to_string(smtp_code) + ")";
      return Error::make(ErrorCode::unavailable, msg);
    }
    return core::ok_status();
  }

  std::string describe() const override {
    return core::redact_url_credentials(url_) + (require_tls_ ? " (STARTTLS required)" : "");
  }

 private:
  std::string url_;
  bool require_tls_;
};

class FileDropMailer final : public Mailer {
 public:
  explicit FileDropMailer(std::string dir) : dir_(std::move(dir)) {}

  core::Status send(const Message& m) override {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (ec) return Error::make(ErrorCode::unavailable, "cannot create " + dir_ + ": " + ec.message());
    using namespace std::chrono;
    const std::string stamp = date::format("%Y%m%dT%H%M%S", date::floor<seconds>(sys_time<milliseconds>{milliseconds{m.date_ms}}));
    const fs::path final_path = fs::path(dir_) / (stamp + "-" + m.id + ".eml");
    const fs::path tmp = fs::path(dir_) / ("." + m.id + ".tmp");
    // Mails carry secrets (sign-in links, API keys): the folder is the server's alone (0700), each
    // file 0600 from its creation, so no other local user reads them.
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::replace, ec);
    if (ec) return Error::make(ErrorCode::unavailable, "cannot restrict " + dir_ + ": " + ec.message());
    {
      const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
      if (fd < 0) return Error::make(ErrorCode::unavailable, "cannot create " + tmp.string());
      const std::string text = format_rfc5322(m);
      bool written = ::fchmod(fd, 0600) == 0;
      for (std::size_t done = 0; written && done < text.size();) {
        const auto n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        written = n > 0;
        if (written) done += static_cast<std::size_t>(n);
      }
      written = ::close(fd) == 0 && written;
      if (!written) return Error::make(ErrorCode::unavailable, "cannot write " + tmp.string());
    }
    fs::rename(tmp, final_path, ec);
    if (ec) return Error::make(ErrorCode::unavailable, "cannot rename to " + final_path.string() + ": " + ec.message());
    return core::ok_status();
  }

  std::string describe() const override { return "files in " + dir_; }

 private:
  std::string dir_;
};

}  // namespace

std::string address_of(const std::string& mailbox) {
  auto lt = mailbox.rfind('<');
  auto gt = mailbox.rfind('>');
  if (lt != std::string::npos && gt != std::string::npos && gt > lt) return mailbox.substr(lt + 1, gt - lt - 1);
  return mailbox;
}

std::string format_rfc5322(const Message& m) {
  using namespace std::chrono;
  const auto tp = date::floor<seconds>(sys_time<milliseconds>{milliseconds{m.date_ms}});
  std::string out;
  out += "Date: " + date::format("%a, %d %b %Y %H:%M:%S +0000", tp) + "\r\n";
  out += "Message-ID: <" + m.id + "@" + domain_of(address_of(m.from)) + ">\r\n";
  out += "From: " + header_value(m.from) + "\r\n";
  out += "To: " + header_value(m.to) + "\r\n";
  out += "Subject: " + header_value(m.subject) + "\r\n";
  out += "MIME-Version: 1.0\r\n";
  out += "Content-Type: text/plain; charset=utf-8\r\n";
  out += "Content-Transfer-Encoding: 8bit\r\n";
  out += "\r\n";
  for (std::size_t i = 0; i < m.body.size(); ++i) {
    char c = m.body[i];
    if (c == '\r') continue;
    if (c == '\n') {
      out += "\r\n";
    } else {
      out += c;
    }
  }
  if (out.size() < 2 || out.substr(out.size() - 2) != "\r\n") out += "\r\n";
  return out;
}

std::unique_ptr<Mailer> make_smtp_mailer(std::string url, bool require_tls) {
  return std::make_unique<SmtpMailer>(std::move(url), require_tls);
}
std::unique_ptr<Mailer> make_file_drop_mailer(std::string dir) {
  return std::make_unique<FileDropMailer>(std::move(dir));
}

}  // namespace gpunex::server::mail
