#include "agent/bench/network_bench.hpp"

#include <algorithm>
#include <cstring>
#include <random>

#include <nlohmann/json.hpp>

#include "util/http_client.hpp"

namespace gpunex::agent::bench {

namespace {

using core::Error;
using core::ErrorCode;
using Clock = std::chrono::steady_clock;

util::HttpClient client_for(const NetworkOptions& o) {
  util::HttpClientOptions opts;
  opts.ca_file = o.ca_file;
  opts.timeout = std::chrono::milliseconds(std::max<long long>(o.max_time_per_case.count(), 1000) * 2);
  return util::HttpClient(o.server_url, opts);
}

std::vector<std::pair<std::string, std::string>> auth(const NetworkOptions& o) {
  if (o.api_key.empty()) return {};
  return {{"Authorization", "Bearer " + o.api_key}};
}

core::Status check(const core::Result<util::HttpResponse>& r, const std::string& what) {
  if (!r) return Error::make(ErrorCode::unavailable, what + ": " + r.error().message);
  if (r->status != 200) {
    return Error::make(ErrorCode::unavailable, what + ": HTTP " + std::to_string(r->status) + " " + r->body.substr(0, 200));
  }
  return core::ok_status();
}

double mbps(std::uint64_t bytes, Clock::time_point t0) {
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  return static_cast<double>(bytes) * 8.0 / 1e6 / std::max(s, 1e-9);
}

//! Incompressible bytes that uploads cycle through (no link or proxy can shrink them).
std::string random_bytes(std::size_t n) {
  std::string s(n, '\0');
  std::mt19937_64 rng(0x75706c6f6164ULL);
  for (std::size_t i = 0; i + 8 <= n; i += 8) {
    const std::uint64_t v = rng();
    std::memcpy(s.data() + i, &v, 8);
  }
  return s;
}

}  // namespace

core::Result<std::vector<double>> measure_latency(const NetworkOptions& o) {
  auto client = client_for(o);
  const auto headers = auth(o);
  // One unmeasured request opens the connection (and the TLS session) that the pings reuse.
  if (auto s = check(client.request("GET", "/v1/bench/net/ping", std::nullopt, headers), "ping"); !s) return s.error();
  std::vector<double> rtt;
  const auto deadline = Clock::now() + o.max_time_per_case;
  for (unsigned i = 0; i < std::max(1u, o.pings) && Clock::now() < deadline; ++i) {
    const auto t0 = Clock::now();
    auto r = client.request("GET", "/v1/bench/net/ping", std::nullopt, headers);
    if (auto s = check(r, "ping"); !s) return s.error();
    rtt.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  return rtt;
}

core::Result<std::vector<double>> measure_download(const NetworkOptions& o) {
  auto client = client_for(o);
  const auto headers = auth(o);
  const std::uint64_t per_request = std::max<std::uint64_t>(1, std::min(o.request_bytes, o.download_bytes));
  // One unmeasured request opens the connection, and makes the server ready its payload.
  if (auto s = check(client.transfer("GET", "/v1/bench/net/download?bytes=1", {}, headers), "download"); !s) {
    return s.error();
  }
  std::vector<double> out;
  const auto deadline = Clock::now() + o.max_time_per_case;
  const unsigned samples = std::max(1u, o.samples);
  for (unsigned k = 0; k < samples && Clock::now() < deadline; ++k) {
    // Each sample gets an equal share of what is left of the time budget.
    const auto sample_deadline = Clock::now() + (deadline - Clock::now()) / (samples - k);
    std::uint64_t got = 0;
    const auto t0 = Clock::now();
    while (got < o.download_bytes && Clock::now() < sample_deadline) {
      const std::uint64_t n = std::min(per_request, o.download_bytes - got);
      auto r = client.transfer("GET", "/v1/bench/net/download?bytes=" + std::to_string(n), {}, headers);
      if (auto s = check(r, "download"); !s) return s.error();
      if (r->body_bytes != n) {
        return Error::make(ErrorCode::unavailable,
                           "download: asked for " + std::to_string(n) + " bytes, got " + std::to_string(r->body_bytes));
      }
      got += n;
    }
    out.push_back(mbps(got, t0));
  }
  return out;
}

core::Result<std::vector<double>> measure_upload(const NetworkOptions& o) {
  auto client = client_for(o);
  const auto headers = auth(o);
  const std::uint64_t per_request = std::max<std::uint64_t>(1, std::min(o.upload_chunk, o.upload_bytes));
  const std::string pattern = random_bytes(1 << 20);
  if (auto s = check(client.request("GET", "/v1/bench/net/ping", std::nullopt, headers), "upload"); !s) {
    return s.error();
  }
  std::vector<double> out;
  const auto deadline = Clock::now() + o.max_time_per_case;
  const unsigned samples = std::max(1u, o.samples);
  for (unsigned k = 0; k < samples && Clock::now() < deadline; ++k) {
    const auto sample_deadline = Clock::now() + (deadline - Clock::now()) / (samples - k);
    std::uint64_t sent = 0;
    const auto t0 = Clock::now();
    while (sent < o.upload_bytes && Clock::now() < sample_deadline) {
      util::TransferOptions t;
      t.upload_bytes = std::min(per_request, o.upload_bytes - sent);
      t.pattern = pattern;
      auto r = client.transfer("POST", "/v1/bench/net/upload", t, headers);
      if (auto s = check(r, "upload"); !s) return s.error();
      // The server counts what arrived: a short count means the figure would be wrong.
      const auto reply = nlohmann::json::parse(r->body, nullptr, false);
      if (!reply.is_object() || !reply.contains("bytes") || reply["bytes"] != t.upload_bytes) {
        return Error::make(ErrorCode::unavailable, "upload: sent " + std::to_string(t.upload_bytes) +
                                                       " bytes, the server answered " + r->body.substr(0, 200));
      }
      sent += t.upload_bytes;
    }
    out.push_back(mbps(sent, t0));
  }
  return out;
}

}  // namespace gpunex::agent::bench
