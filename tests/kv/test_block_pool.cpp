// BlockPool: allocation order, reference counts, free list, exhaustion.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "core/error.h"
#include "kv/block_pool.h"

namespace edgellm {
namespace {

TEST(BlockPool, AllocatesEveryBlockOnceThenReportsEmpty) {
  BlockPool pool(5, 100);
  EXPECT_EQ(pool.n_blocks(), 5);
  EXPECT_EQ(pool.total_bytes(), 500u);
  std::set<int32_t> got;
  for (int i = 0; i < 5; ++i) {
    const int32_t b = pool.allocate();
    ASSERT_GE(b, 0);
    EXPECT_EQ(pool.refcount(b), 1);
    got.insert(b);
  }
  EXPECT_EQ(got.size(), 5u);
  EXPECT_EQ(pool.n_free(), 0);
  EXPECT_EQ(pool.allocate(), -1);
}

TEST(BlockPool, StorageIsAlignedAndWritable) {
  BlockPool pool(4, 64);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(pool.storage()) % 64, 0u);
  std::fill(pool.storage(), pool.storage() + pool.total_bytes(), static_cast<uint8_t>(7));
  EXPECT_TRUE(std::all_of(pool.storage(), pool.storage() + pool.total_bytes(), [](uint8_t v) { return v == 7; }));
}

TEST(BlockPool, HandsOutLowestIdsFirstAndReusesTheLastReleased) {
  // KvCache relies on this: a sequence grown from empty gets consecutive ids, so its rows form one
  // run in every plane; a truncated sequence that grows again gets the same ids back in order.
  BlockPool pool(6, 8);
  for (int32_t want = 0; want < 4; ++want) EXPECT_EQ(pool.allocate(), want);
  pool.release(3);
  pool.release(2);
  EXPECT_EQ(pool.allocate(), 2);
  EXPECT_EQ(pool.allocate(), 3);
}

TEST(BlockPool, RefcountKeepsSharedBlocksUntilLastRelease) {
  BlockPool pool(2, 16);
  const int32_t a = pool.allocate();
  pool.retain(a);
  pool.retain(a);
  EXPECT_EQ(pool.refcount(a), 3);
  pool.release(a);
  pool.release(a);
  EXPECT_EQ(pool.n_free(), 1);
  pool.release(a);
  EXPECT_EQ(pool.n_free(), 2);
  EXPECT_EQ(pool.refcount(a), 0);
  // A freed block is handed out again.
  EXPECT_GE(pool.allocate(), 0);
  EXPECT_GE(pool.allocate(), 0);
  EXPECT_EQ(pool.allocate(), -1);
}

TEST(BlockPool, MisuseIsAnErrorNotACrash) {
  BlockPool pool(2, 16);
  try {
    pool.release(1);
    FAIL() << "release of a free block must throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInternal);
  }
  EXPECT_THROW(pool.retain(7), Error);
  EXPECT_THROW(pool.retain(-1), Error);
  EXPECT_THROW(BlockPool(0, 16), Error);
  EXPECT_THROW(BlockPool(4, 0), Error);
}

TEST(BlockPool, ResetFreesEverything) {
  BlockPool pool(3, 8);
  pool.allocate();
  pool.allocate();
  pool.reset();
  EXPECT_EQ(pool.n_free(), 3);
  EXPECT_EQ(pool.allocate(), 0);  // lowest ids first after a reset
}

}  // namespace
}  // namespace edgellm
