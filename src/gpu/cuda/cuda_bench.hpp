#pragma once
// GPU benchmark primitives on the CUDA runtime, cuBLAS and cuBLASLt. This
// header has no CUDA types, so the agent compiles against it whether or not
// the toolkit was found; the implementation (cuda_bench.cu) is built only
// when it was (GPUNEX_HAVE_CUDA). Every function is blocking and returns one
// figure per repeat; the caller takes the median and samples NVML meanwhile.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace gpunex::gpu::cuda {

struct DeviceProps {
  int ordinal = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  std::size_t total_mem = 0;
  std::size_t free_mem = 0;
  std::string pci_bus_id;  // "0000:17:00.0", to match NVML's GPUs
};

//! How long to measure: warm-up launches, timed launches per sample, samples.
struct Timing {
  int warmup = 10;
  int iterations = 20;
  int repeats = 5;
};

//! What the agent's suite uses (and bench/gpu-check.sh with it): ≥ 50 warm-up and 100 timed GEMMs.
inline constexpr Timing kFmaTiming{5, 10, 5};
inline constexpr Timing kGemmTiming{50, 20, 5};
inline constexpr Timing kMemoryTiming{3, 10, 5};
inline constexpr Timing kHostLinkTiming{2, 4, 5};
//! The GEMM size: 8192³ where the GPU has the memory (it saturates big GPUs), else 4096³.
inline int gemm_size_for_memory(double total_gib) { return total_gib >= 8 ? 8192 : 4096; }

int device_count();
core::Result<DeviceProps> device_props(int ordinal);

//! FMA throughput, TFLOP/s (an FMA counts 2 FLOPs; a half2 FMA 4).
core::Result<std::vector<double>> fma_fp32(int ordinal, const Timing& t);
core::Result<std::vector<double>> fma_fp16(int ordinal, const Timing& t);

enum class GemmType { fp16, bf16, fp8_e4m3 };
//! cuBLASLt GEMM (m×k · k×n, FP32 accumulate) on random normal inputs, TFLOP/s = 2mnk / time.
//! FP8 needs compute capability 8.9 or above.
core::Result<std::vector<double>> gemm_lt(int ordinal, GemmType type, int m, int n, int k, const Timing& t);
//! The same through plain cublasGemmEx with default settings: the yardstick gpu-check compares against.
core::Result<std::vector<double>> gemm_plain(int ordinal, GemmType type, int m, int n, int k, const Timing& t);

enum class MemOp { read, write, copy };
//! STREAM-style bandwidth over a buffer of `bytes` (copy counts bytes read + written), GB/s.
core::Result<std::vector<double>> memory_bandwidth(int ordinal, MemOp op, std::size_t bytes, const Timing& t);

enum class Direction { host_to_device, device_to_host };
//! Pinned-memory cudaMemcpyAsync bandwidth over `bytes`, GB/s.
core::Result<std::vector<double>> host_link(int ordinal, Direction dir, std::size_t bytes, const Timing& t);

//! The committed GEMM challenge (protocol/challenge.hpp): for each product j < products, A_j from
//! core::challenge::product_seed(seed_a, j) and B from seed_b generated on the GPU entry by entry as
//! core::challenge::matrix_entry does, C_j = A_j·B by cuBLAS GemmEx (FP16 inputs, FP32 output and compute:
//! exact, the entries being small integers and n ≤ 16384), and the digest of every row
//! (core::challenge::row_digest), leaf j·n + i for row i of C_j.
core::Result<std::vector<std::uint64_t>> challenge_row_digests(int ordinal, std::uint64_t seed_a, std::uint64_t seed_b,
                                                               int n, int products);
//! Rows `indices` (leaf numbers j·n + i) of the products, recomputed on the GPU, as integers.
core::Result<std::vector<std::vector<std::int64_t>>> challenge_rows(int ordinal, std::uint64_t seed_a,
                                                                    std::uint64_t seed_b, int n,
                                                                    const std::vector<std::uint64_t>& indices);

//! The VRAM challenge's fill: words core::challenge::vram_word(seed, i), in device buffers of up to 1 GiB,
//! held until destroyed so that the slices the server picks afterwards are read back from GPU memory.
class DeviceFill {
 public:
  //! Fills `words` words, or as many as the GPU can hold (words() says how many).
  static core::Result<std::unique_ptr<DeviceFill>> create(int ordinal, std::uint64_t seed, std::uint64_t words);
  ~DeviceFill();
  DeviceFill(const DeviceFill&) = delete;
  DeviceFill& operator=(const DeviceFill&) = delete;
  DeviceFill() = default;  // empty; create() fills one
  std::uint64_t words() const { return words_; }
  //! `count` words from word `first`, copied from the device.
  core::Result<std::vector<std::uint64_t>> read(std::uint64_t first, std::uint64_t count) const;

 private:
  int ordinal_ = 0;
  std::uint64_t words_ = 0;
  std::vector<void*> chunks_;  // device pointers, kChunkWords words each (the last may be shorter)
};

}  // namespace gpunex::gpu::cuda
