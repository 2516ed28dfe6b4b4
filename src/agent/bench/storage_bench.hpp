#pragma once
// Storage benchmarks on the agent's data folder, with direct I/O so the page
// cache does not flatter the disk: sequential write and read in 1 MiB blocks
// (one thread, one request in flight, like fio --ioengine=psync --iodepth=1)
// and random 4 KiB reads from several threads. The test file is bounded and
// removed afterwards, whatever happens.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace gpunex::agent::bench {

struct StorageOptions {
  std::string dir;                              // the data folder
  std::uint64_t file_bytes = 256ull << 20;      // bounded; shrunk to a quarter of the free space
  std::uint32_t block_bytes = 1u << 20;         // sequential block size
  unsigned passes = 3;                          // samples for the sequential cases
  unsigned rand_threads = 4;
  std::chrono::milliseconds rand_sample{1000};  // each random-read sample runs this long
  unsigned rand_samples = 3;
};

struct StorageFigures {
  std::vector<double> seq_write_mbs;  // one per pass, MB/s (10^6 bytes)
  std::vector<double> seq_read_mbs;
  std::vector<double> rand_read_iops;
  std::uint64_t file_bytes = 0;       // what was actually used
};

//! Runs the three storage cases on one temporary file in opts.dir. `which` picks them:
//! bit 0 seq_write, bit 1 seq_read, bit 2 rand_read (the reads write the file first).
core::Result<StorageFigures> run_storage(const StorageOptions& opts, unsigned which = 7);

}  // namespace gpunex::agent::bench
