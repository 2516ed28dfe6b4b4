// The agent's GPU benchmark primitives (src/gpu/cuda/cuda_bench.cu) with the
// suite's sizes and timings, plus a plain cublasGemmEx GEMM of the same size,
// as "key median" lines for bench/gpu-check.sh. Built by nvcc alone, so it
// runs on a GPU machine that lacks the agent's other libraries.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "gpu/cuda/cuda_bench.hpp"

namespace cu = gpunex::gpu::cuda;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void print(const char* key, const gpunex::core::Result<std::vector<double>>& r) {
  if (r.ok() && !r.value().empty()) {
    std::printf("%s %.3f\n", key, median(r.value()));
  } else {
    std::printf("%s ERROR %s\n", key, r.ok() ? "no samples" : r.error().message.c_str());
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const int dev = argc > 1 ? std::stoi(argv[1]) : 0;
  if (cu::device_count() <= dev) {
    std::fprintf(stderr, "gpu_check: no CUDA device %d\n", dev);
    return 1;
  }
  auto p = cu::device_props(dev);
  if (!p.ok()) {
    std::fprintf(stderr, "gpu_check: %s\n", p.error().message.c_str());
    return 1;
  }
  const int s = cu::gemm_size_for_memory(static_cast<double>(p.value().total_mem) / (1ull << 30));
  std::printf("name %s\ncc %d.%d\ngemm_size %d\n", p.value().name.c_str(), p.value().cc_major, p.value().cc_minor, s);
  print("compute.fp32", cu::fma_fp32(dev, cu::kFmaTiming));
  print("compute.fp16", cu::fma_fp16(dev, cu::kFmaTiming));
  print("compute.fp16_tensor", cu::gemm_lt(dev, cu::GemmType::fp16, s, s, s, cu::kGemmTiming));
  print("plain.fp16_tensor", cu::gemm_plain(dev, cu::GemmType::fp16, s, s, s, cu::kGemmTiming));
  print("compute.bf16_tensor", cu::gemm_lt(dev, cu::GemmType::bf16, s, s, s, cu::kGemmTiming));
  print("plain.bf16_tensor", cu::gemm_plain(dev, cu::GemmType::bf16, s, s, s, cu::kGemmTiming));
  if (p.value().cc_major * 10 + p.value().cc_minor >= 89) {
    print("compute.fp8_tensor", cu::gemm_lt(dev, cu::GemmType::fp8_e4m3, s, s, s, cu::kGemmTiming));
  }
  print("memory.read", cu::memory_bandwidth(dev, cu::MemOp::read, 1ull << 30, cu::kMemoryTiming));
  print("memory.write", cu::memory_bandwidth(dev, cu::MemOp::write, 1ull << 30, cu::kMemoryTiming));
  print("memory.copy", cu::memory_bandwidth(dev, cu::MemOp::copy, 1ull << 30, cu::kMemoryTiming));
  print("host_link.h2d", cu::host_link(dev, cu::Direction::host_to_device, 512ull << 20, cu::kHostLinkTiming));
  print("host_link.d2h", cu::host_link(dev, cu::Direction::device_to_host, 512ull << 20, cu::kHostLinkTiming));
  return 0;
}
