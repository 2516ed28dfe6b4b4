// The kernels and library calls behind cuda_bench.hpp. Methods follow
// reference/benchmark-methods.md: CUDA-event timing after a warm-up, random
// normal GEMM inputs, buffers well past L2, pinned host memory.

#include "gpu/cuda/cuda_bench.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

namespace gpunex::gpu::cuda {

namespace {

using core::Error;
using core::ErrorCode;
using core::Result;

Error cuda_error(const char* what, cudaError_t e) {
  return Error::make(ErrorCode::unavailable, std::string(what) + ": " + cudaGetErrorName(e) + " (" +
                                                 cudaGetErrorString(e) + ")");
}

Error cublas_error(const char* what, cublasStatus_t s) {
  return Error::make(ErrorCode::unavailable, std::string(what) + ": cuBLAS status " + std::to_string(static_cast<int>(s)));
}

#define GPX_CUDA(call)                                          \
  do {                                                          \
    cudaError_t gpx_e = (call);                                 \
    if (gpx_e != cudaSuccess) return cuda_error(#call, gpx_e);  \
  } while (0)

#define GPX_CUBLAS(call)                                                \
  do {                                                                  \
    cublasStatus_t gpx_s = (call);                                      \
    if (gpx_s != CUBLAS_STATUS_SUCCESS) return cublas_error(#call, gpx_s); \
  } while (0)

//! Owns device memory.
struct DeviceBuffer {
  void* ptr = nullptr;
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr) cudaFree(ptr);
  }
  cudaError_t alloc(std::size_t bytes) { return cudaMalloc(&ptr, bytes); }
};

//! Owns pinned host memory.
struct PinnedBuffer {
  void* ptr = nullptr;
  PinnedBuffer() = default;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() {
    if (ptr) cudaFreeHost(ptr);
  }
};

//! A stream and two events, released on every path.
struct StreamEvents {
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  StreamEvents() = default;
  StreamEvents(const StreamEvents&) = delete;
  StreamEvents& operator=(const StreamEvents&) = delete;
  ~StreamEvents() {
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    if (stream) cudaStreamDestroy(stream);
  }
  cudaError_t create() {
    cudaError_t e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    if (e == cudaSuccess) e = cudaEventCreate(&start);
    if (e == cudaSuccess) e = cudaEventCreate(&stop);
    return e;
  }
};

//! Times `launch` (which enqueues one unit of work on the stream) and converts to work per second / unit.
template <class Launch>
Result<std::vector<double>> timed(StreamEvents& se, const Timing& t, double work_per_launch, double unit,
                                  Launch&& launch) {
  for (int i = 0; i < t.warmup; ++i) {
    if (auto s = launch(); !s) return s.error();
  }
  GPX_CUDA(cudaStreamSynchronize(se.stream));
  GPX_CUDA(cudaGetLastError());
  std::vector<double> out;
  for (int r = 0; r < std::max(1, t.repeats); ++r) {
    GPX_CUDA(cudaEventRecord(se.start, se.stream));
    for (int i = 0; i < std::max(1, t.iterations); ++i) {
      if (auto s = launch(); !s) return s.error();
    }
    GPX_CUDA(cudaEventRecord(se.stop, se.stream));
    GPX_CUDA(cudaEventSynchronize(se.stop));
    GPX_CUDA(cudaGetLastError());
    float ms = 0;
    GPX_CUDA(cudaEventElapsedTime(&ms, se.start, se.stop));
    if (ms <= 0) return Error::make(ErrorCode::internal, "a timed benchmark took no measurable time");
    out.push_back(work_per_launch * std::max(1, t.iterations) / (static_cast<double>(ms) * 1e-3) / unit);
  }
  return out;
}

core::Status launched() {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return cuda_error("kernel launch", e);
  return core::ok_status();
}

// ---- kernels ----

constexpr int kChains = 8;
constexpr int kFmaIters = 1 << 14;

__global__ void fma_fp32_kernel(float* sink, int iters, float b, float c) {
  float a[kChains];
#pragma unroll
  for (int i = 0; i < kChains; ++i) a[i] = static_cast<float>(threadIdx.x) * 1e-7f + static_cast<float>(i);
#pragma unroll 16
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int i = 0; i < kChains; ++i) a[i] = fmaf(a[i], b, c);
  }
  float s = 0;
#pragma unroll
  for (int i = 0; i < kChains; ++i) s += a[i];
  if (s == -1.2345f) sink[blockIdx.x * blockDim.x + threadIdx.x] = s;  // never true; keeps the work
}

__global__ void fma_fp16_kernel(__half2* sink, int iters, __half2 b, __half2 c) {
  __half2 a[kChains];
#pragma unroll
  for (int i = 0; i < kChains; ++i) a[i] = __floats2half2_rn(threadIdx.x * 1e-4f, static_cast<float>(i) * 1e-2f);
#pragma unroll 16
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int i = 0; i < kChains; ++i) a[i] = __hfma2(a[i], b, c);
  }
  __half2 s = a[0];
#pragma unroll
  for (int i = 1; i < kChains; ++i) s = __hadd2(s, a[i]);
  if (__low2float(s) == -1.2345f) sink[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

__device__ float normal_at(std::uint64_t i, std::uint64_t seed) {
  auto mix = [](std::uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
  };
  const std::uint64_t h = mix(i * 2654435761ULL + seed);
  const float u1 = (static_cast<float>(h >> 40) + 1.0f) / 16777217.0f;
  const float u2 = static_cast<float>((h >> 16) & 0xFFFFFF) / 16777216.0f;
  return sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
}

template <class T>
__device__ T from_float(float v);
template <>
__device__ __half from_float<__half>(float v) { return __float2half(v); }
template <>
__device__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16(v); }
template <>
__device__ __nv_fp8_e4m3 from_float<__nv_fp8_e4m3>(float v) { return __nv_fp8_e4m3(v); }

template <class T>
__global__ void fill_normal(T* p, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    p[i] = from_float<T>(normal_at(i, seed));
  }
}

__global__ void mem_read_kernel(const float4* __restrict__ src, std::size_t n, float* sink) {
  float acc = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    float4 v = src[i];
    acc += v.x + v.y + v.z + v.w;
  }
  if (acc == -1.2345f) *sink = acc;
}

__global__ void mem_write_kernel(float4* __restrict__ dst, std::size_t n, float v) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    dst[i] = make_float4(v, v, v, v);
  }
}

__global__ void mem_copy_kernel(const float4* __restrict__ src, float4* __restrict__ dst, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    dst[i] = src[i];
  }
}

// ---- helpers ----

Result<DeviceProps> props_of(int ordinal) {
  cudaDeviceProp p{};
  GPX_CUDA(cudaGetDeviceProperties(&p, ordinal));
  DeviceProps d;
  d.ordinal = ordinal;
  d.name = p.name;
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  d.sm_count = p.multiProcessorCount;
  d.total_mem = p.totalGlobalMem;
  char bus[32] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, ordinal) == cudaSuccess) d.pci_bus_id = bus;
  return d;
}

core::Status use_device(int ordinal) {
  GPX_CUDA(cudaSetDevice(ordinal));
  return core::ok_status();
}

struct GemmTypes {
  cudaDataType_t ab;
  cudaDataType_t cd;
  std::size_t elem;
  std::size_t out_elem;
};

GemmTypes types_of(GemmType t) {
  switch (t) {
    case GemmType::fp16: return {CUDA_R_16F, CUDA_R_16F, 2, 2};
    case GemmType::bf16: return {CUDA_R_16BF, CUDA_R_16BF, 2, 2};
    case GemmType::fp8_e4m3: return {CUDA_R_8F_E4M3, CUDA_R_16BF, 1, 2};
  }
  return {CUDA_R_16F, CUDA_R_16F, 2, 2};
}

//! Allocates A (k×m, used transposed), B (k×n) and D (m×n), filled with random normal values.
struct GemmBuffers {
  DeviceBuffer a, b, d;
};

core::Status make_gemm_buffers(GemmBuffers& g, GemmType type, int m, int n, int k, cudaStream_t s) {
  const auto ty = types_of(type);
  const std::size_t na = static_cast<std::size_t>(k) * m, nb = static_cast<std::size_t>(k) * n;
  GPX_CUDA(g.a.alloc(na * ty.elem));
  GPX_CUDA(g.b.alloc(nb * ty.elem));
  GPX_CUDA(g.d.alloc(static_cast<std::size_t>(m) * n * ty.out_elem));
  auto fill = [&](void* p, std::size_t count, std::uint64_t seed) {
    switch (type) {
      case GemmType::fp16: fill_normal<<<1024, 256, 0, s>>>(static_cast<__half*>(p), count, seed); break;
      case GemmType::bf16: fill_normal<<<1024, 256, 0, s>>>(static_cast<__nv_bfloat16*>(p), count, seed); break;
      case GemmType::fp8_e4m3: fill_normal<<<1024, 256, 0, s>>>(static_cast<__nv_fp8_e4m3*>(p), count, seed); break;
    }
  };
  fill(g.a.ptr, na, 1);
  fill(g.b.ptr, nb, 2);
  GPX_CUDA(cudaGetLastError());
  GPX_CUDA(cudaStreamSynchronize(s));
  return core::ok_status();
}

core::Status check_gemm_args(const DeviceProps& p, GemmType type, int m, int n, int k) {
  if (m <= 0 || n <= 0 || k <= 0 || m % 16 != 0 || n % 16 != 0 || k % 16 != 0) {
    return Error::make(ErrorCode::invalid_field, "GEMM dimensions must be positive multiples of 16");
  }
  if (type == GemmType::fp8_e4m3 && p.cc_major * 10 + p.cc_minor < 89) {
    return Error::make(ErrorCode::unprocessable, "FP8 GEMM needs compute capability 8.9 or above");
  }
  const auto ty = types_of(type);
  const double need = (static_cast<double>(k) * m + static_cast<double>(k) * n) * ty.elem +
                      static_cast<double>(m) * n * ty.out_elem + (64 << 20);
  std::size_t free_b = 0, total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess && need > static_cast<double>(free_b)) {
    return Error::make(ErrorCode::unavailable, "not enough free GPU memory for the GEMM");
  }
  return core::ok_status();
}

//! Releases cuBLASLt descriptors on every path.
struct LtHandles {
  cublasLtHandle_t lt = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  LtHandles() = default;
  LtHandles(const LtHandles&) = delete;
  LtHandles& operator=(const LtHandles&) = delete;
  ~LtHandles() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
    if (lt) cublasLtDestroy(lt);
  }
};

struct CublasHandle {
  cublasHandle_t h = nullptr;
  CublasHandle() = default;
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  ~CublasHandle() {
    if (h) cublasDestroy(h);
  }
};

}  // namespace

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

Result<DeviceProps> device_props(int ordinal) {
  if (auto s = use_device(ordinal); !s) return s.error();
  auto p = props_of(ordinal);
  if (!p) return p;
  std::size_t free_b = 0, total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) p->free_mem = free_b;
  return p;
}

Result<std::vector<double>> fma_fp32(int ordinal, const Timing& t) {
  if (auto s = use_device(ordinal); !s) return s.error();
  auto p = props_of(ordinal);
  if (!p) return p.error();
  StreamEvents se;
  GPX_CUDA(se.create());
  const int threads = 256, blocks = p->sm_count * 8;
  DeviceBuffer sink;
  GPX_CUDA(sink.alloc(static_cast<std::size_t>(threads) * blocks * sizeof(float)));
  const double flops = 2.0 * kChains * kFmaIters * static_cast<double>(threads) * blocks;
  return timed(se, t, flops, 1e12, [&]() {
    fma_fp32_kernel<<<blocks, threads, 0, se.stream>>>(static_cast<float*>(sink.ptr), kFmaIters, 0.9999f, 1e-4f);
    return launched();
  });
}

Result<std::vector<double>> fma_fp16(int ordinal, const Timing& t) {
  if (auto s = use_device(ordinal); !s) return s.error();
  auto p = props_of(ordinal);
  if (!p) return p.error();
  StreamEvents se;
  GPX_CUDA(se.create());
  const int threads = 256, blocks = p->sm_count * 8;
  DeviceBuffer sink;
  GPX_CUDA(sink.alloc(static_cast<std::size_t>(threads) * blocks * sizeof(__half2)));
  const double flops = 4.0 * kChains * kFmaIters * static_cast<double>(threads) * blocks;
  const __half2 b = __floats2half2_rn(0.999f, 0.999f), c = __floats2half2_rn(1e-3f, 1e-3f);
  return timed(se, t, flops, 1e12, [&]() {
    fma_fp16_kernel<<<blocks, threads, 0, se.stream>>>(static_cast<__half2*>(sink.ptr), kFmaIters, b, c);
    return launched();
  });
}

Result<std::vector<double>> gemm_lt(int ordinal, GemmType type, int m, int n, int k, const Timing& t) {
  if (auto s = use_device(ordinal); !s) return s.error();
  auto p = props_of(ordinal);
  if (!p) return p.error();
  if (auto s = check_gemm_args(*p, type, m, n, k); !s) return s.error();
  StreamEvents se;
  GPX_CUDA(se.create());
  GemmBuffers buf;
  if (auto s = make_gemm_buffers(buf, type, m, n, k, se.stream); !s) return s.error();
  const auto ty = types_of(type);

  LtHandles h;
  GPX_CUBLAS(cublasLtCreate(&h.lt));
  GPX_CUBLAS(cublasLtMatmulDescCreate(&h.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  // "TN": A is stored k×m and transposed, as cuBLASLt requires for FP8; the same for every type.
  const cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
  GPX_CUBLAS(cublasLtMatmulDescSetAttribute(h.op, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa));
  GPX_CUBLAS(cublasLtMatmulDescSetAttribute(h.op, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof transb));
  GPX_CUBLAS(cublasLtMatrixLayoutCreate(&h.a, ty.ab, k, m, k));
  GPX_CUBLAS(cublasLtMatrixLayoutCreate(&h.b, ty.ab, k, n, k));
  GPX_CUBLAS(cublasLtMatrixLayoutCreate(&h.c, ty.cd, m, n, m));

  const std::size_t workspace_bytes = 64u << 20;
  DeviceBuffer workspace;
  GPX_CUDA(workspace.alloc(workspace_bytes));
  GPX_CUBLAS(cublasLtMatmulPreferenceCreate(&h.pref));
  GPX_CUBLAS(cublasLtMatmulPreferenceSetAttribute(h.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                                                  sizeof workspace_bytes));
  cublasLtMatmulHeuristicResult_t heur{};
  int found = 0;
  GPX_CUBLAS(cublasLtMatmulAlgoGetHeuristic(h.lt, h.op, h.a, h.b, h.c, h.c, h.pref, 1, &heur, &found));
  if (found == 0) return Error::make(ErrorCode::unavailable, "cuBLASLt found no algorithm for this GEMM");

  const float alpha = 1.0f, beta = 0.0f;
  const double flops = 2.0 * m * static_cast<double>(n) * k;
  return timed(se, t, flops, 1e12, [&]() -> core::Status {
    GPX_CUBLAS(cublasLtMatmul(h.lt, h.op, &alpha, buf.a.ptr, h.a, buf.b.ptr, h.b, &beta, buf.d.ptr, h.c, buf.d.ptr,
                              h.c, &heur.algo, workspace.ptr, workspace_bytes, se.stream));
    return core::ok_status();
  });
}

Result<std::vector<double>> gemm_plain(int ordinal, GemmType type, int m, int n, int k, const Timing& t) {
  if (type == GemmType::fp8_e4m3) {
    return Error::make(ErrorCode::unprocessable, "plain cublasGemmEx has no FP8 GEMM; use cuBLASLt");
  }
  if (auto s = use_device(ordinal); !s) return s.error();
  auto p = props_of(ordinal);
  if (!p) return p.error();
  if (auto s = check_gemm_args(*p, type, m, n, k); !s) return s.error();
  StreamEvents se;
  GPX_CUDA(se.create());
  GemmBuffers buf;
  if (auto s = make_gemm_buffers(buf, type, m, n, k, se.stream); !s) return s.error();
  const auto ty = types_of(type);
  CublasHandle h;
  GPX_CUBLAS(cublasCreate(&h.h));
  GPX_CUBLAS(cublasSetStream(h.h, se.stream));
  const float alpha = 1.0f, beta = 0.0f;
  const double flops = 2.0 * m * static_cast<double>(n) * k;
  return timed(se, t, flops, 1e12, [&]() -> core::Status {
    GPX_CUBLAS(cublasGemmEx(h.h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, buf.a.ptr, ty.ab, k, buf.b.ptr, ty.ab, k,
                            &beta, buf.d.ptr, ty.cd, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return core::ok_status();
  });
}

Result<std::vector<double>> memory_bandwidth(int ordinal, MemOp op, std::size_t bytes, const Timing& t) {
  if (auto s = use_device(ordinal); !s) return s.error();
  auto p = props_of(ordinal);
  if (!p) return p.error();
  std::size_t free_b = 0, total_b = 0;
  GPX_CUDA(cudaMemGetInfo(&free_b, &total_b));
  const std::size_t buffers = op == MemOp::copy ? 2 : 1;
  bytes = std::min(bytes, free_b / (buffers + 1)) / 16 * 16;
  if (bytes < (64u << 20)) return Error::make(ErrorCode::unavailable, "not enough free GPU memory for the test");
  StreamEvents se;
  GPX_CUDA(se.create());
  DeviceBuffer src, dst, sink;
  GPX_CUDA(src.alloc(bytes));
  GPX_CUDA(sink.alloc(sizeof(float)));
  GPX_CUDA(cudaMemsetAsync(src.ptr, 0, bytes, se.stream));
  if (op == MemOp::copy) GPX_CUDA(dst.alloc(bytes));
  const std::size_t n4 = bytes / sizeof(float4);
  const int threads = 256;
  const int blocks = static_cast<int>(std::min<std::size_t>((n4 + threads - 1) / threads,
                                                            static_cast<std::size_t>(p->sm_count) * 32));
  const double moved = static_cast<double>(bytes) * (op == MemOp::copy ? 2.0 : 1.0);
  return timed(se, t, moved, 1e9, [&]() {
    switch (op) {
      case MemOp::read:
        mem_read_kernel<<<blocks, threads, 0, se.stream>>>(static_cast<const float4*>(src.ptr), n4,
                                                           static_cast<float*>(sink.ptr));
        break;
      case MemOp::write:
        mem_write_kernel<<<blocks, threads, 0, se.stream>>>(static_cast<float4*>(src.ptr), n4, 1.0f);
        break;
      case MemOp::copy:
        mem_copy_kernel<<<blocks, threads, 0, se.stream>>>(static_cast<const float4*>(src.ptr),
                                                           static_cast<float4*>(dst.ptr), n4);
        break;
    }
    return launched();
  });
}

Result<std::vector<double>> host_link(int ordinal, Direction dir, std::size_t bytes, const Timing& t) {
  if (auto s = use_device(ordinal); !s) return s.error();
  StreamEvents se;
  GPX_CUDA(se.create());
  PinnedBuffer host;
  GPX_CUDA(cudaMallocHost(&host.ptr, bytes));
  DeviceBuffer dev;
  GPX_CUDA(dev.alloc(bytes));
  std::fill_n(static_cast<unsigned char*>(host.ptr), bytes, static_cast<unsigned char>(0x5a));
  return timed(se, t, static_cast<double>(bytes), 1e9, [&]() -> core::Status {
    if (dir == Direction::host_to_device) {
      GPX_CUDA(cudaMemcpyAsync(dev.ptr, host.ptr, bytes, cudaMemcpyHostToDevice, se.stream));
    } else {
      GPX_CUDA(cudaMemcpyAsync(host.ptr, dev.ptr, bytes, cudaMemcpyDeviceToHost, se.stream));
    }
    return core::ok_status();
  });
}

// ---- benchmark challenges (protocol/challenge.hpp) ----

namespace {

// The same functions as core::challenge::matrix_entry and vram_word (core/challenge.cpp); a change to
// one is a change to both, or every real GPU fails its challenges (challenge_test pins the values).
__device__ std::uint64_t challenge_splitmix(std::uint64_t x) {
  std::uint64_t z = x + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

//! Entries of a challenge matrix as FP16 (the small integers are exact in it): core::challenge::matrix_entry.
__global__ void challenge_matrix_kernel(__half* m, std::uint64_t seed, std::uint64_t count) {
  for (std::uint64_t k = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; k < count;
       k += static_cast<std::uint64_t>(gridDim.x) * blockDim.x) {
    const std::uint64_t r = challenge_splitmix(seed ^ (k * 0xd1b54a32d192ed03ULL)) >> 32;
    m[k] = __int2half_rn(static_cast<int>(static_cast<std::int64_t>((r * 17) >> 32) - 8));
  }
}

//! core::challenge::product_seed.
std::uint64_t host_product_seed(std::uint64_t seed_a, std::uint64_t product) {
  std::uint64_t z = (seed_a ^ (product * 0xa0761d6478bd642fULL)) + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

//! core::challenge::row_digest of each row of a row-major n×n FP32 product (exact integers): one block
//! per row, the sum modulo 2^64 by atomicAdd (addition commutes, so the order does not matter).
__global__ void challenge_row_digest_kernel(const float* c, int n, unsigned long long* leaves) {
  const std::uint64_t row = blockIdx.x;
  unsigned long long sum = 0;
  for (int col = threadIdx.x; col < n; col += blockDim.x) {
    const auto v = static_cast<std::int64_t>(llrintf(c[row * n + col]));
    sum += challenge_splitmix(static_cast<std::uint64_t>(v) ^ (static_cast<std::uint64_t>(col) * 0xc2b2ae3d27d4eb4fULL));
  }
  atomicAdd(&leaves[row], sum);
}

__global__ void challenge_fill_kernel(std::uint64_t* w, std::uint64_t seed, std::uint64_t first, std::uint64_t count) {
  for (std::uint64_t k = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; k < count;
       k += static_cast<std::uint64_t>(gridDim.x) * blockDim.x) {
    w[k] = challenge_splitmix(seed ^ ((first + k) * 0x9e6c63d0676a9a99ULL));
  }
}

constexpr std::uint64_t kChunkWords = (1ull << 30) / 8;  // 1 GiB per device buffer

}  // namespace

namespace {

//! The challenge's buffers and handle: B once, A_j and C_j per product (FP16 in, FP32 out, FP32 compute:
//! the tensor-core GEMM the FP16 figure measures, exact while every |c| < 2^24).
struct ChallengeGemm {
  int n = 0;
  std::uint64_t count = 0;
  DeviceBuffer a, b, c;
  CublasHandle h;

  core::Status init(int ordinal, std::uint64_t seed_b, int size) {
    if (size < 1 || size > 16384) return Error::make(ErrorCode::invalid_field, "challenge n out of range");
    if (auto s = use_device(ordinal); !s) return s;
    n = size;
    count = static_cast<std::uint64_t>(n) * static_cast<std::uint64_t>(n);
    GPX_CUDA(a.alloc(count * sizeof(__half)));
    GPX_CUDA(b.alloc(count * sizeof(__half)));
    GPX_CUDA(c.alloc(count * sizeof(float)));
    GPX_CUBLAS(cublasCreate(&h.h));
    challenge_matrix_kernel<<<1024, 256>>>(static_cast<__half*>(b.ptr), seed_b, count);
    return launched();
  }

  //! C = A_j·B, row-major: column-major Cᵀ = Bᵀ·Aᵀ, so cuBLAS reads the row-major buffers as their transposes.
  core::Status product(std::uint64_t seed_a, std::uint64_t j) {
    challenge_matrix_kernel<<<1024, 256>>>(static_cast<__half*>(a.ptr), host_product_seed(seed_a, j), count);
    if (auto s = launched(); !s) return s;
    const float one = 1.0f, zero = 0.0f;
    GPX_CUBLAS(cublasGemmEx(h.h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b.ptr, CUDA_R_16F, n, a.ptr, CUDA_R_16F, n,
                            &zero, c.ptr, CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return core::ok_status();
  }
};

}  // namespace

Result<std::vector<std::uint64_t>> challenge_row_digests(int ordinal, std::uint64_t seed_a, std::uint64_t seed_b, int n,
                                                         int products) {
  if (products < 1) return Error::make(ErrorCode::invalid_field, "challenge products out of range");
  ChallengeGemm g;
  if (auto s = g.init(ordinal, seed_b, n); !s) return s.error();
  const std::uint64_t rows = static_cast<std::uint64_t>(n) * static_cast<std::uint64_t>(products);
  DeviceBuffer leaves;
  GPX_CUDA(leaves.alloc(rows * sizeof(unsigned long long)));
  GPX_CUDA(cudaMemset(leaves.ptr, 0, rows * sizeof(unsigned long long)));
  for (int j = 0; j < products; ++j) {
    if (auto s = g.product(seed_a, static_cast<std::uint64_t>(j)); !s) return s.error();
    challenge_row_digest_kernel<<<n, 256>>>(static_cast<const float*>(g.c.ptr), n,
                                            static_cast<unsigned long long*>(leaves.ptr) +
                                                static_cast<std::uint64_t>(j) * static_cast<std::uint64_t>(n));
    if (auto s = launched(); !s) return s.error();
  }
  std::vector<std::uint64_t> out(rows);
  GPX_CUDA(cudaMemcpy(out.data(), leaves.ptr, rows * sizeof(std::uint64_t), cudaMemcpyDeviceToHost));
  return out;
}

Result<std::vector<std::vector<std::int64_t>>> challenge_rows(int ordinal, std::uint64_t seed_a, std::uint64_t seed_b,
                                                              int n, const std::vector<std::uint64_t>& indices) {
  ChallengeGemm g;
  if (auto s = g.init(ordinal, seed_b, n); !s) return s.error();
  std::vector<std::vector<std::int64_t>> out(indices.size());
  std::vector<float> row(static_cast<std::size_t>(n));
  // Product by product (each recomputed once), the picked rows copied back.
  std::vector<std::size_t> order(indices.size());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return indices[x] < indices[y]; });
  std::uint64_t current = UINT64_MAX;
  for (const auto k : order) {
    const std::uint64_t j = indices[k] / static_cast<std::uint64_t>(n), i = indices[k] % static_cast<std::uint64_t>(n);
    if (j != current) {
      if (auto s = g.product(seed_a, j); !s) return s.error();
      current = j;
    }
    GPX_CUDA(cudaMemcpy(row.data(), static_cast<const float*>(g.c.ptr) + i * static_cast<std::uint64_t>(n),
                        static_cast<std::size_t>(n) * sizeof(float), cudaMemcpyDeviceToHost));
    out[k].resize(row.size());
    for (std::size_t c = 0; c < row.size(); ++c) out[k][c] = std::llrint(row[c]);
  }
  return out;
}

Result<std::unique_ptr<DeviceFill>> DeviceFill::create(int ordinal, std::uint64_t seed, std::uint64_t words) {
  if (auto s = use_device(ordinal); !s) return s.error();
  auto f = std::make_unique<DeviceFill>();
  f->ordinal_ = ordinal;
  while (f->words_ < words) {
    const std::uint64_t n = std::min(kChunkWords, words - f->words_);
    void* p = nullptr;
    if (cudaMalloc(&p, n * 8) != cudaSuccess) {
      cudaGetLastError();  // out of memory: keep what was filled, the server's slices beyond it fail
      break;
    }
    f->chunks_.push_back(p);
    challenge_fill_kernel<<<1024, 256>>>(static_cast<std::uint64_t*>(p), seed, f->words_, n);
    if (auto s = launched(); !s) return s.error();
    f->words_ += n;
  }
  GPX_CUDA(cudaDeviceSynchronize());
  return Result<std::unique_ptr<DeviceFill>>(std::move(f));
}

DeviceFill::~DeviceFill() {
  for (void* p : chunks_) cudaFree(p);
}

Result<std::vector<std::uint64_t>> DeviceFill::read(std::uint64_t first, std::uint64_t count) const {
  if (first + count > words_) return Error::make(ErrorCode::invalid_field, "slice outside the fill");
  if (auto s = use_device(ordinal_); !s) return s.error();
  std::vector<std::uint64_t> out(count);
  std::uint64_t done = 0;
  while (done < count) {
    const std::uint64_t at = first + done;
    const std::uint64_t chunk = at / kChunkWords, off = at % kChunkWords;
    const std::uint64_t n = std::min(count - done, kChunkWords - off);
    GPX_CUDA(cudaMemcpy(out.data() + done, static_cast<const std::uint64_t*>(chunks_[chunk]) + off, n * 8,
                        cudaMemcpyDeviceToHost));
    done += n;
  }
  return out;
}

}  // namespace gpunex::gpu::cuda
