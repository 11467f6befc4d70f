// The bandwidth probe reads every word of its buffer (checked through the checksum, computed
// here in closed form) and reports a positive rate.
#include <gtest/gtest.h>

#include "tools/bench/memory_bandwidth.h"
#include "core/error.h"

namespace edgellm::bench {
namespace {

// The buffer holds word i = i, so one pass sums to n(n-1)/2 (mod 2^64).
uint64_t expected_checksum(size_t bytes, int passes) {
  const uint64_t n = bytes / sizeof(uint64_t);
  const uint64_t one = (n % 2 == 0) ? (n / 2) * (n - 1) : n * ((n - 1) / 2);
  return one * static_cast<uint64_t>(passes);
}

TEST(MemoryBandwidth, SmallBufferOneAndTwoThreads) {
  for (const int threads : {1, 2}) {
    BandwidthOptions o;
    o.buffer_bytes = size_t{8} << 20;  // 8 MiB: fast; the rate is a cache rate, only > 0 is checked
    o.n_threads = threads;
    o.passes = 2;
    const BandwidthResult r = measure_read_bandwidth(o);
    EXPECT_GT(r.gbps, 0.0);
    EXPECT_GT(r.seconds, 0.0);
    EXPECT_EQ(r.bytes, o.buffer_bytes);
    EXPECT_EQ(r.n_threads, threads);
    EXPECT_EQ(r.checksum, expected_checksum(o.buffer_bytes, o.passes)) << threads << " thread(s) skipped words";
  }
}

TEST(MemoryBandwidth, OddSizesAreReadCompletelyUpToWholeLines) {
  BandwidthOptions o;
  o.buffer_bytes = 4096 * 3 + 64 * 5;  // not a multiple of the thread count's share
  o.n_threads = 3;
  o.passes = 1;
  const BandwidthResult r = measure_read_bandwidth(o);
  EXPECT_EQ(r.bytes, o.buffer_bytes);
  EXPECT_EQ(r.checksum, expected_checksum(o.buffer_bytes, 1));
}

TEST(MemoryBandwidth, RejectsBadOptions) {
  BandwidthOptions o;
  o.buffer_bytes = 100;
  EXPECT_THROW(measure_read_bandwidth(o), Error);
  o.buffer_bytes = 1 << 20;
  o.n_threads = 0;
  EXPECT_THROW(measure_read_bandwidth(o), Error);
  o.n_threads = 1;
  o.passes = 0;
  EXPECT_THROW(measure_read_bandwidth(o), Error);
}

}  // namespace
}  // namespace edgellm::bench
