// Process memory readings and the engine buffer accounting.
#include <gtest/gtest.h>

#include <cstring>

#include "runtime/memory_stats.h"

namespace edgellm {
namespace {

TEST(MemoryStats, ReadsRssAndPeak) {
  const ProcessMemory m = read_process_memory();
  ASSERT_TRUE(m.valid);
  EXPECT_GT(m.rss_bytes, 0u);
  EXPECT_GE(m.peak_bytes, m.rss_bytes);
}

TEST(MemoryStats, TouchedBufferShowsInRss) {
  // 64 MB touched (AlignedBuffer zero-fills) must raise RSS by most of that; slack covers the
  // allocator and whatever else the process does meanwhile.
  constexpr size_t kBytes = 64u << 20;
  constexpr size_t kSlack = 8u << 20;
  const ProcessMemory before = read_process_memory();
  AlignedBuffer b(kBytes, "test");
  const ProcessMemory after = read_process_memory();
  EXPECT_GE(after.rss_bytes + kSlack, before.rss_bytes + kBytes);
  EXPECT_GE(after.peak_bytes, after.rss_bytes);
}

TEST(MemoryStats, AlignedBuffersAreAccountedAndAligned) {
  const size_t base = engine_memory().current();
  {
    AlignedBuffer a(1000, "a");
    AlignedBuffer b(3, "b");
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % AlignedBuffer::kAlignment, 0u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % AlignedBuffer::kAlignment, 0u);
    EXPECT_EQ(a.data()[999], 0);
    EXPECT_EQ(engine_memory().current(), base + 1003);
    EXPECT_GE(engine_memory().peak(), base + 1003);
    AlignedBuffer c(std::move(a));
    EXPECT_EQ(a.size(), 0u);
    EXPECT_EQ(engine_memory().current(), base + 1003);
    b = std::move(c);  // frees b's 3 bytes
    EXPECT_EQ(engine_memory().current(), base + 1000);
  }
  EXPECT_EQ(engine_memory().current(), base);
  AlignedBuffer empty;
  EXPECT_EQ(empty.data(), nullptr);
}

}  // namespace
}  // namespace edgellm
