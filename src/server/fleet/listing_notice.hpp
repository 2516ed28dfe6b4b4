#pragma once
// The text a provider receives when a benchmark run delists or relists one of
// its GPUs (notification and e-mail alike). Pure: title and body from typed
// input; kept apart so that it can join the mail templates module.

#include <optional>
#include <string>
#include <vector>

#include "core/benchmark.hpp"

namespace gpunex::server {

//! A notification's kind ("gpu_delisted", "gpu_relisted"), title and body.
struct ListingNotice {
  std::string kind, title, body;
};

//! How a notice names a GPU: "GPU 0 (H100-SXM) on host-a"; `model_or_name` is the catalog id, else the NVML name.
std::string gpu_display_name(std::int64_t index, const std::string& model_or_name, const std::string& hostname);

//! The GPU is delisted: every failed check with measured vs expected and what to do. `failures` is not empty.
ListingNotice delisted_notice(const std::string& gpu_name, const std::vector<core::bench::Finding>& failures);
//! The GPU passed after being delisted, with its quality ratio when it has one.
ListingNotice relisted_notice(const std::string& gpu_name, std::optional<double> quality_ratio);

//! A figure as the notices print it: whole above 100, else two decimals.
std::string notice_figure(double v);

}  // namespace gpunex::server
