#pragma once
// Prometheus metrics kept in memory: requests by route and status, request
// latency, store statement latency, group-commit batches. Rendered in the text
// exposition format.

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>

namespace gpunex::server {

//! A fixed-bucket latency histogram (seconds).
class Histogram {
 public:
  static constexpr std::array<double, 12> kBounds = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                     0.05,   0.1,   0.25,   0.5,   1.0,  5.0};
  void observe(double seconds);
  //! Appends `name_bucket{labels,le=...}`, `name_sum`, `name_count` lines.
  void render(std::string& out, std::string_view name, std::string_view labels) const;

 private:
  std::array<std::uint64_t, kBounds.size()> buckets_{};
  std::uint64_t count_ = 0;
  double sum_ = 0;
};

class Metrics {
 public:
  void observe_request(std::string_view method, std::string_view route, int status, double seconds);
  void observe_store(std::string_view op, double seconds);
  //! One group-commit transaction that committed `requests` requests' writes.
  void observe_group_commit(std::size_t requests);
  //! One reload of the marketplace's offer cache (every candidate read again).
  void observe_offer_reload(double seconds);
  //! A round of background worker `worker` that threw (it is logged, and the next round tries again).
  void count_worker_failure(std::string_view worker);
  //! The Prometheus text exposition of everything observed.
  std::string render() const;

 private:
  mutable std::mutex mu_;
  // Transparent comparators: a request or statement finds its entry without building strings.
  //! Orders (method, route, status) keys, owned or viewed alike, so a lookup builds no strings. (Comparing
  //! tuple<string...> with tuple<string_view...> directly compiles with GCC's library only under GCC.)
  struct RequestKeyLess {
    using is_transparent = void;
    template <class A, class B>
    bool operator()(const A& a, const B& b) const {
      return std::tuple<std::string_view, std::string_view, int>{std::get<0>(a), std::get<1>(a), std::get<2>(a)} <
             std::tuple<std::string_view, std::string_view, int>{std::get<0>(b), std::get<1>(b), std::get<2>(b)};
    }
  };
  std::map<std::tuple<std::string, std::string, int>, std::uint64_t, RequestKeyLess> requests_;
  std::map<std::string, Histogram, std::less<>> request_latency_;  // by route
  std::map<std::string, Histogram, std::less<>> store_latency_;    // by statement kind
  std::map<std::string, std::uint64_t, std::less<>> worker_failures_;  // by worker
  std::uint64_t group_commit_batches_ = 0;
  std::uint64_t group_commit_requests_ = 0;
  Histogram offer_reload_;
};

}  // namespace gpunex::server
