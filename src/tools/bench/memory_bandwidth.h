// Memory-read bandwidth of this machine, the ceiling of single-stream decode: every weight byte
// is read once per generated token, so tokens/s can never exceed bandwidth / bytes per token.
//
// Method: stream-read a buffer much larger than the last-level cache (default 1 GiB; this
// machine's L3 is 260 MiB) with N threads, each summing its own contiguous slice with the widest
// loads the CPU has (AVX-512: four streams per thread); the best of a few passes counts
// (first-touch page faults happen before timing).
#pragma once

#include <cstddef>
#include <cstdint>

namespace edgellm::bench {

struct BandwidthOptions {
  size_t buffer_bytes = size_t{1} << 30;  // 1 GiB
  int n_threads = 1;
  int passes = 3;                          // best of
};

struct BandwidthResult {
  double gbps = 0;         // best pass, 1e9 bytes per second
  double seconds = 0;      // time of the best pass
  size_t bytes = 0;        // bytes read per pass
  int n_threads = 0;
  uint64_t checksum = 0;   // sum of every word read (keeps the reads observable)
};

// Throws Error(kOutOfMemory) if the buffer cannot be allocated, Error(kInvalidArgument) for a
// buffer under 4 KiB or n_threads / passes < 1.
BandwidthResult measure_read_bandwidth(const BandwidthOptions& options);

}  // namespace edgellm::bench
