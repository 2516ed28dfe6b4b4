#include "agent/bench/storage_bench.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <thread>

namespace gpunex::agent::bench {

namespace {

using core::Error;
using core::ErrorCode;
using Clock = std::chrono::steady_clock;

Error io_error(const std::string& what, int err) {
  return Error::make(ErrorCode::unavailable, what + ": " + std::strerror(err));
}

//! The temporary file: closed and unlinked on every path.
struct TempFile {
  int fd = -1;
  std::string path;
  TempFile() = default;
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (fd >= 0) ::close(fd);
    if (!path.empty()) ::unlink(path.c_str());
  }
};

struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<unsigned char, AlignedFree>;

AlignedBuffer aligned(std::size_t bytes) {
  void* p = nullptr;
  if (::posix_memalign(&p, 4096, bytes) != 0) return nullptr;
  return AlignedBuffer(static_cast<unsigned char*>(p));
}

//! The sequential passes' buffer, on one transparent huge page where the kernel allows it
//! (MADV_HUGEPAGE works with THP set to "always" or "madvise"), else on ordinary pages.
//!
//! Why: a 1 MiB direct I/O reaches the device as one segment per physically contiguous run of its
//! buffer. On 4 KiB pages scattered in physical memory that is up to 256 segments, which virtual disks
//! handle one at a time: on this project's Firecracker VMs (virtio-blk, max_segments 254) fio's 1 MiB
//! reads ran at 1.0-1.3 GB/s from malloc'd pages and 1.9-2.4 GB/s from huge pages, same file, same
//! minute. On a huge page the figure is the disk's, not the page allocator's luck.
class IoBuffer {
 public:
  explicit IoBuffer(std::size_t bytes) {
    constexpr std::size_t kHuge = 2u << 20;
    const std::size_t span = (bytes + kHuge - 1) / kHuge * kHuge;
    // Map one huge page more than needed, so a 2 MiB-aligned span fits inside.
    void* m = ::mmap(nullptr, span + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED) {
      map_ = static_cast<unsigned char*>(m);
      map_bytes_ = span + kHuge;
      const auto addr = reinterpret_cast<std::uintptr_t>(map_);
      data_ = reinterpret_cast<unsigned char*>((addr + kHuge - 1) / kHuge * kHuge);
      ::madvise(data_, span, MADV_HUGEPAGE);  // advice only: ordinary pages if refused
    }
  }
  IoBuffer(const IoBuffer&) = delete;
  IoBuffer& operator=(const IoBuffer&) = delete;
  ~IoBuffer() {
    if (map_ != nullptr) ::munmap(map_, map_bytes_);
  }
  unsigned char* get() const { return data_; }

 private:
  unsigned char* map_ = nullptr;
  std::size_t map_bytes_ = 0;
  unsigned char* data_ = nullptr;
};

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

core::Result<double> sequential_pass(int fd, std::uint64_t file_bytes, std::uint32_t block, unsigned char* buf,
                                     bool write) {
  const auto t0 = Clock::now();
  const auto salt = static_cast<std::uint64_t>(t0.time_since_epoch().count());  // differs per pass
  for (std::uint64_t off = 0; off < file_bytes; off += block) {
    // Every 4 KiB of the file gets its own contents (as fio scrambles its buffers), so storage that
    // deduplicates or compresses identical blocks is not measured faster than it is.
    if (write) {
      for (std::uint32_t at = 0; at < block; at += 4096) {
        const std::uint64_t stamp = (off + at) ^ salt;
        std::memcpy(buf + at, &stamp, sizeof stamp);
      }
    }
    ssize_t n = write ? ::pwrite(fd, buf, block, static_cast<off_t>(off))
                      : ::pread(fd, buf, block, static_cast<off_t>(off));
    if (n < 0 && errno == EINTR) {
      off -= block;
      continue;
    }
    if (n != static_cast<ssize_t>(block)) {
      return io_error(write ? "writing the benchmark file" : "reading the benchmark file", n < 0 ? errno : EIO);
    }
  }
  if (write && ::fdatasync(fd) != 0) return io_error("fdatasync of the benchmark file", errno);
  const double s = seconds_since(t0);
  return static_cast<double>(file_bytes) / 1e6 / std::max(s, 1e-9);
}

core::Result<double> random_read_sample(int fd, std::uint64_t file_bytes, unsigned threads,
                                        std::chrono::milliseconds duration, unsigned seed) {
  std::atomic<std::uint64_t> total{0};
  std::atomic<int> failure{0};
  std::vector<std::thread> pool;
  const std::uint64_t blocks = file_bytes / 4096;
  const auto t0 = Clock::now();
  const auto deadline = t0 + duration;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      auto buf = aligned(4096);
      if (!buf) {
        failure = ENOMEM;
        return;
      }
      std::mt19937_64 rng(seed * 7919 + t);
      std::uniform_int_distribution<std::uint64_t> pick(0, blocks - 1);
      std::uint64_t done = 0;
      while (Clock::now() < deadline) {
        for (int i = 0; i < 64; ++i) {
          ssize_t n = ::pread(fd, buf.get(), 4096, static_cast<off_t>(pick(rng) * 4096));
          if (n != 4096) {
            if (n < 0 && errno == EINTR) continue;
            failure = n < 0 ? errno : EIO;
            return;
          }
          ++done;
        }
      }
      total += done;
    });
  }
  for (auto& th : pool) th.join();
  if (failure != 0) return io_error("random reads of the benchmark file", failure);
  return static_cast<double>(total.load()) / std::max(seconds_since(t0), 1e-9);
}

}  // namespace

core::Result<StorageFigures> run_storage(const StorageOptions& opts, unsigned which) {
  struct statvfs vfs {};
  if (::statvfs(opts.dir.c_str(), &vfs) != 0) return io_error("data folder " + opts.dir, errno);
  const std::uint64_t free_bytes = static_cast<std::uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  const std::uint32_t block = std::max<std::uint32_t>(4096, opts.block_bytes / 4096 * 4096);
  std::uint64_t file_bytes = std::min<std::uint64_t>(opts.file_bytes, free_bytes / 4) / block * block;
  if (file_bytes < 16ull * block) {
    return Error::make(ErrorCode::unavailable, "not enough free space in " + opts.dir + " for the storage benchmark");
  }

  TempFile f;
  std::string templ = opts.dir + "/.gpunex-bench-XXXXXX";
  std::vector<char> name(templ.begin(), templ.end());
  name.push_back('\0');
  int tmp = ::mkstemp(name.data());
  if (tmp < 0) return io_error("creating a file in " + opts.dir, errno);
  f.path = name.data();
  ::close(tmp);
  f.fd = ::open(f.path.c_str(), O_RDWR | O_DIRECT | O_CLOEXEC);
  if (f.fd < 0) {
    const int err = errno;
    if (err == EINVAL) {
      return Error::make(ErrorCode::unprocessable,
                         "the file system of " + opts.dir + " does not support direct I/O (O_DIRECT)");
    }
    return io_error("opening " + f.path + " with O_DIRECT", err);
  }

  IoBuffer buf(block);
  if (buf.get() == nullptr) return io_error("allocating the I/O buffer", errno);
  std::mt19937_64 rng(42);
  for (std::size_t i = 0; i < block; i += 8) {
    const std::uint64_t v = rng();
    std::memcpy(buf.get() + i, &v, 8);
  }

  StorageFigures out;
  out.file_bytes = file_bytes;
  // The reads need the file written; the first pass is always made, and kept as a sample when asked for.
  for (unsigned p = 0; p < std::max(1u, opts.passes); ++p) {
    auto w = sequential_pass(f.fd, file_bytes, block, buf.get(), true);
    if (!w) return w.error();
    if ((which & 1u) != 0) out.seq_write_mbs.push_back(*w);
    if ((which & 1u) == 0) break;
  }
  if ((which & 2u) != 0) {
    for (unsigned p = 0; p < std::max(1u, opts.passes); ++p) {
      auto r = sequential_pass(f.fd, file_bytes, block, buf.get(), false);
      if (!r) return r.error();
      out.seq_read_mbs.push_back(*r);
    }
  }
  if ((which & 4u) != 0) {
    for (unsigned s = 0; s < std::max(1u, opts.rand_samples); ++s) {
      auto r = random_read_sample(f.fd, file_bytes, std::max(1u, opts.rand_threads), opts.rand_sample, s + 1);
      if (!r) return r.error();
      out.rand_read_iops.push_back(*r);
    }
  }
  return out;
}

}  // namespace gpunex::agent::bench
