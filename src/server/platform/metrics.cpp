#include "server/platform/metrics.hpp"

#include <cstdio>

#include "core/protocol_version.hpp"
#include "store/migrations.hpp"

namespace gpunex::server {

namespace {

std::string escape_label(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string fmt_double(double d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", d);
  return buf;
}

}  // namespace

void Histogram::observe(double seconds) {
  for (std::size_t i = 0; i < kBounds.size(); ++i) {
    if (seconds <= kBounds[i]) ++buckets_[i];
  }
  ++count_;
  sum_ += seconds;
}

void Histogram::render(std::string& out, std::string_view name, std::string_view labels) const {
  std::string sep = labels.empty() ? "" : ",";
  for (std::size_t i = 0; i < kBounds.size(); ++i) {
    out += std::string(name) + "_bucket{" + std::string(labels) + sep + "le=\"" + fmt_double(kBounds[i]) + "\"} " +
           std::to_string(buckets_[i]) + "\n";
  }
  out += std::string(name) + "_bucket{" + std::string(labels) + sep + "le=\"+Inf\"} " + std::to_string(count_) + "\n";
  std::string lb = labels.empty() ? "" : "{" + std::string(labels) + "}";
  out += std::string(name) + "_sum" + lb + " " + fmt_double(sum_) + "\n";
  out += std::string(name) + "_count" + lb + " " + std::to_string(count_) + "\n";
}

namespace {

//! The map's entry for key, made (with owned strings) only the first time.
template <class Map, class Key, class Make>
auto& entry(Map& map, const Key& key, Make make) {
  auto it = map.find(key);
  if (it == map.end()) it = map.emplace(make(), typename Map::mapped_type{}).first;
  return it->second;
}

}  // namespace

void Metrics::observe_request(std::string_view method, std::string_view route, int status, double seconds) {
  std::lock_guard lock(mu_);
  ++entry(requests_, std::tuple<std::string_view, std::string_view, int>{method, route, status},
          [&] { return std::tuple<std::string, std::string, int>{method, route, status}; });
  entry(request_latency_, route, [&] { return std::string(route); }).observe(seconds);
}

void Metrics::observe_store(std::string_view op, double seconds) {
  std::lock_guard lock(mu_);
  entry(store_latency_, op, [&] { return std::string(op); }).observe(seconds);
}

void Metrics::observe_group_commit(std::size_t requests) {
  std::lock_guard lock(mu_);
  ++group_commit_batches_;
  group_commit_requests_ += requests;
}

void Metrics::observe_offer_reload(double seconds) {
  std::lock_guard lock(mu_);
  offer_reload_.observe(seconds);
}

void Metrics::count_worker_failure(std::string_view worker) {
  std::lock_guard lock(mu_);
  auto it = worker_failures_.find(worker);
  if (it == worker_failures_.end()) it = worker_failures_.emplace(std::string(worker), 0).first;
  ++it->second;
}

std::string Metrics::render() const {
  std::lock_guard lock(mu_);
  std::string out;
  // Which build answers (the Prometheus "info" convention: a constant 1 with the facts as labels).
  out += "# HELP gpunex_build_info The server's release, store schema and agent protocol versions.\n";
  out += "# TYPE gpunex_build_info gauge\n";
  out += std::string("gpunex_build_info{version=\"") + core::kReleaseVersion + "\",schema_version=\"" +
         std::to_string(store::migrations().back().version) + "\",protocol_version=\"" +
         std::to_string(core::kProtocolVersion) + "\"} 1\n";
  out += "# HELP gpunex_http_requests_total HTTP requests by method, route and status.\n";
  out += "# TYPE gpunex_http_requests_total counter\n";
  for (const auto& [key, n] : requests_) {
    const auto& [method, route, status] = key;
    out += "gpunex_http_requests_total{method=\"" + escape_label(method) + "\",route=\"" + escape_label(route) +
           "\",status=\"" + std::to_string(status) + "\"} " + std::to_string(n) + "\n";
  }
  out += "# HELP gpunex_http_request_duration_seconds Time from parsed request to response, by route.\n";
  out += "# TYPE gpunex_http_request_duration_seconds histogram\n";
  for (const auto& [route, h] : request_latency_) {
    h.render(out, "gpunex_http_request_duration_seconds", "route=\"" + escape_label(route) + "\"");
  }
  out += "# HELP gpunex_store_statement_duration_seconds Store statement latency by kind.\n";
  out += "# TYPE gpunex_store_statement_duration_seconds histogram\n";
  for (const auto& [op, h] : store_latency_) {
    h.render(out, "gpunex_store_statement_duration_seconds", "op=\"" + escape_label(op) + "\"");
  }
  out += "# HELP gpunex_group_commit_batches_total Transactions that committed queued requests' writes together.\n";
  out += "# TYPE gpunex_group_commit_batches_total counter\n";
  out += "gpunex_group_commit_batches_total " + std::to_string(group_commit_batches_) + "\n";
  out += "# HELP gpunex_group_commit_requests_total Requests whose writes those transactions committed.\n";
  out += "# TYPE gpunex_group_commit_requests_total counter\n";
  out += "gpunex_group_commit_requests_total " + std::to_string(group_commit_requests_) + "\n";
  out += "# HELP gpunex_offer_cache_reload_seconds Reloads of the marketplace's offers after a change.\n";
  out += "# TYPE gpunex_offer_cache_reload_seconds histogram\n";
  offer_reload_.render(out, "gpunex_offer_cache_reload_seconds", "");
  out += "# HELP gpunex_worker_round_failures_total Background worker rounds that failed (logged), by worker.\n";
  out += "# TYPE gpunex_worker_round_failures_total counter\n";
  for (const auto& [worker, n] : worker_failures_) {
    out += "gpunex_worker_round_failures_total{worker=\"" + escape_label(worker) + "\"} " + std::to_string(n) + "\n";
  }
  return out;
}

}  // namespace gpunex::server
