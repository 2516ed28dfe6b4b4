#include "server/fleet/listing_notice.hpp"

#include <cstdio>

namespace gpunex::server {

std::string notice_figure(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, v >= 100 ? "%.0f" : "%.2f", v);
  return buf;
}

std::string gpu_display_name(std::int64_t index, const std::string& model_or_name, const std::string& hostname) {
  return "GPU " + std::to_string(index) + " (" + model_or_name + ") on " + hostname;
}

ListingNotice delisted_notice(const std::string& gpu_name, const std::vector<core::bench::Finding>& failures) {
  const auto fmt = notice_figure;
  std::string body = gpu_name + " is delisted: customers cannot rent it until a benchmark run passes.\n";
  for (const auto& f : failures) {
    body += "\n- " + f.label + ": measured " + fmt(f.measured) + " " + f.unit + ", expected " + fmt(f.expected) +
            (f.expected > 0 ? " (ratio " + fmt(f.ratio()) + ")" : "") + ".\n  What to do: " + f.recommendation;
  }
  body += "\n\nAfter fixing it, re-run the benchmarks from the Benchmarks tab.";
  return ListingNotice{"gpu_delisted", gpu_name + " delisted: " + failures.front().label, std::move(body)};
}

ListingNotice relisted_notice(const std::string& gpu_name, std::optional<double> quality_ratio) {
  return ListingNotice{"gpu_relisted", gpu_name + " relisted",
                       gpu_name + " passed its benchmarks" +
                           (quality_ratio ? " (quality ratio " + notice_figure(*quality_ratio) + ")" : std::string()) +
                           " and is listed again."};
}

}  // namespace gpunex::server
