// Process memory readings and the engine buffer accounting.
#include <gtest/gtest.h>

#include <cstring>

#include "platform/memory_stats.h"

namespace edgellm {
namespace {

TEST(MemoryStats, ReadsRssAndPeak) {
  const ProcessMemory m = read_process_memory();
  ASSERT_TRUE(m.valid);
  EXPECT_GT(m.rss_bytes, 0u);
  EXPECT_GE(m.peak_bytes, m.rss_bytes);
}

TEST(MemoryStats, LargeBufferIsZeroAndResidentOnlyWhereWritten) {
  // 64 MB: zero to read, but (a direct mapping, not zero-filled) resident only once written;
  // written, RSS rises by most of it. Slack covers the allocator and the rest of the process.
  constexpr size_t kBytes = 64u << 20;
  constexpr size_t kSlack = 8u << 20;
  const ProcessMemory before = read_process_memory();
  AlignedBuffer b(kBytes, "test");
  const ProcessMemory created = read_process_memory();
  if (AlignedBuffer::maps_directly(kBytes)) {  // not under ASan: its heap keeps redzones
    EXPECT_LT(created.rss_bytes, before.rss_bytes + kSlack);
  }
  for (size_t i = 0; i < kBytes; i += 4096) ASSERT_EQ(b.data()[i], 0) << i;
  EXPECT_EQ(b.data()[kBytes - 1], 0);
  std::memset(b.data(), 0xab, kBytes);
  const ProcessMemory written = read_process_memory();
  EXPECT_GE(written.rss_bytes + kSlack, before.rss_bytes + kBytes);
  EXPECT_GE(written.peak_bytes, written.rss_bytes);
  b = AlignedBuffer();
  // A new buffer where the written one was is zero again (a heap could hand the dirty one back).
  for (int round = 0; round < 3; ++round) {
    AlignedBuffer c(kBytes, "test");
    for (size_t i = 0; i < kBytes; i += 4096) ASSERT_EQ(c.data()[i], 0) << "round " << round << " byte " << i;
    std::memset(c.data(), 0xcd, kBytes);
  }
  // Uninitialized large buffers are writable end to end, aligned, and accounted.
  const size_t base = engine_memory().current();
  AlignedBuffer u(kBytes + 5, "test", AlignedBuffer::Uninitialized{});
  EXPECT_EQ(reinterpret_cast<uintptr_t>(u.data()) % AlignedBuffer::kAlignment, 0u);
  u.data()[kBytes + 4] = 7;
  EXPECT_EQ(engine_memory().current(), base + kBytes + 5);
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
