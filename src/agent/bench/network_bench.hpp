#pragma once
// Network benchmarks against the GPUnex server's /v1/bench/net/ endpoints, over
// the agent's own HTTP client (so TLS and proxies count as they do for real
// traffic): latency p50/p99 over a bounded number of pings, and download and
// upload throughput bounded in bytes and in time.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace gpunex::agent::bench {

struct NetworkOptions {
  std::string server_url;                     // "https://gpunex.example.com"
  std::string api_key;                        // provider API key (Bearer)
  std::string ca_file;
  unsigned pings = 50;
  std::uint64_t download_bytes = 256ull << 20;  // per sample, fetched in requests of request_bytes
  std::uint64_t upload_bytes = 128ull << 20;    // per sample, sent in requests of upload_chunk
  std::uint64_t request_bytes = 16ull << 20;    // the server caps this too
  std::uint64_t upload_chunk = 16ull << 20;     // the server caps this too (413 above)
  unsigned samples = 3;
  std::chrono::milliseconds max_time_per_case{10000};
};

//! Round-trip times in milliseconds, one per ping.
core::Result<std::vector<double>> measure_latency(const NetworkOptions& o);
//! Mbit/s per sample.
core::Result<std::vector<double>> measure_download(const NetworkOptions& o);
core::Result<std::vector<double>> measure_upload(const NetworkOptions& o);

}  // namespace gpunex::agent::bench
