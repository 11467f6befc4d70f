// KvCache: block tables, growth, truncation, fork with copy-on-write, exhaustion (kContextFull
// leaves every sequence as it was), element types.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/fp16.h"
#include "kv/kv_cache.h"
#include "kernels/kernels.h"

namespace edgellm {
namespace {

KvCacheParams small(TensorType type = TensorType::F32, int32_t n_blocks = 8) {
  KvCacheParams p;
  p.n_layer = 2;
  p.n_head_kv = 2;
  p.head_dim = 32;
  p.type_k = type;
  p.type_v = type;
  p.block_tokens = 4;
  p.n_seq_max = 3;
  p.n_ctx = 32;
  p.n_blocks = n_blocks;
  return p;
}

// A recognisable value per (seq tag, layer, kv, head, pos, i).
float value(int tag, int layer, int kv, int head, int pos, int i) {
  return static_cast<float>(tag * 1000 + layer * 100 + kv * 50 + head * 10 + pos) + static_cast<float>(i) / 64.0f;
}

void write_positions(KvCache& c, int32_t seq, int tag, int32_t from, int32_t to) {
  const auto& p = c.params();
  std::vector<float> row(static_cast<size_t>(p.head_dim));
  for (int32_t pos = from; pos < to; ++pos) {
    for (int l = 0; l < p.n_layer; ++l) {
      for (int h = 0; h < p.n_head_kv; ++h) {
        for (int i = 0; i < p.head_dim; ++i) row[static_cast<size_t>(i)] = value(tag, l, 0, h, pos, i);
        c.store_k_row(row.data(), c.k_row(seq, l, h, pos));
        for (int i = 0; i < p.head_dim; ++i) row[static_cast<size_t>(i)] = value(tag, l, 1, h, pos, i);
        c.store_v_row(row.data(), c.v_row(seq, l, h, pos));
      }
    }
  }
}

// Checks positions [from, to) of `seq` hold `tag`'s values, read through the block table the way
// attention reads them (k_rows / v_rows of a block + slot).
// tol (relative) applies to K and V unless tol_v >= 0 is given for V.
void expect_positions(const KvCache& c, int32_t seq, int tag, int32_t from, int32_t to, float tol = 0,
                      float tol_v = -1) {
  const auto& p = c.params();
  std::vector<float> row(static_cast<size_t>(p.head_dim));
  const auto& table = c.block_table(seq);
  for (int32_t pos = from; pos < to; ++pos) {
    const int32_t block = table[static_cast<size_t>(pos / p.block_tokens)];
    for (int l = 0; l < p.n_layer; ++l) {
      for (int h = 0; h < p.n_head_kv; ++h) {
        for (int kv = 0; kv < 2; ++kv) {
          const uint8_t* rows = kv == 0 ? c.k_rows(block, l, h) : c.v_rows(block, l, h);
          const size_t row_bytes = kv == 0 ? c.k_row_bytes() : c.v_row_bytes();
          kernels::dequantize_row(kv == 0 ? p.type_k : p.type_v, rows + static_cast<size_t>(pos % p.block_tokens) * row_bytes,
                                  row.data(), p.head_dim);
          const float t = kv == 1 && tol_v >= 0 ? tol_v : tol;
          for (int i = 0; i < p.head_dim; ++i) {
            const float want = value(tag, l, kv, h, pos, i);
            ASSERT_NEAR(row[static_cast<size_t>(i)], want, t * std::abs(want))
                << "seq " << seq << " pos " << pos << " layer " << l << " head " << h << " kv " << kv << " i " << i;
          }
        }
      }
    }
  }
}

TEST(KvCache, SizesFollowTheLayout) {
  const KvCacheParams p = small();
  // 2 layers x (K, V) x 2 heads x 32 floats
  EXPECT_EQ(KvCache::bytes_per_token(p), 2u * 2 * 2 * 32 * 4);
  EXPECT_EQ(KvCache::block_bytes(p), 4 * KvCache::bytes_per_token(p));
  KvCacheParams h = small(TensorType::F16);
  EXPECT_EQ(KvCache::bytes_per_token(h), 2u * 2 * 2 * 32 * 2);
  KvCacheParams q = small(TensorType::Q8_0);
  EXPECT_EQ(KvCache::bytes_per_token(q), 2u * 2 * 2 * 34);  // one q8_0 block (34 bytes) per head row
  KvCacheParams q4 = small(TensorType::Q4_0);
  EXPECT_EQ(KvCache::bytes_per_token(q4), 2u * 2 * 2 * 18);  // one q4_0 block (18 bytes) per head row
  q4.type_v = TensorType::F16;  // 2 layers x 2 heads x (18 + 64)
  EXPECT_EQ(KvCache::bytes_per_token(q4), 2u * 2 * (18 + 32 * 2));
}

TEST(KvCache, GrowWriteReadAcrossBlocks) {
  KvCache c(small());
  c.seq_grow(0, 10);  // 3 blocks of 4
  EXPECT_EQ(c.seq_length(0), 10);
  EXPECT_EQ(c.block_table(0).size(), 3u);
  EXPECT_EQ(c.pool().n_free(), 5);
  write_positions(c, 0, 1, 0, 10);
  c.seq_grow(1, 5);
  write_positions(c, 1, 2, 0, 5);
  expect_positions(c, 0, 1, 0, 10);
  expect_positions(c, 1, 2, 0, 5);
}

TEST(KvCache, TruncateFreesWholeBlocksOnly) {
  KvCache c(small());
  c.seq_grow(0, 12);
  write_positions(c, 0, 1, 0, 12);
  c.seq_truncate(0, 5);
  EXPECT_EQ(c.seq_length(0), 5);
  EXPECT_EQ(c.block_table(0).size(), 2u);
  EXPECT_EQ(c.pool().n_free(), 6);
  expect_positions(c, 0, 1, 0, 5);
  c.seq_clear(0);
  EXPECT_EQ(c.pool().n_free(), 8);
  EXPECT_THROW(c.seq_truncate(0, -1), Error);
}

TEST(KvCache, ForkSharesFullBlocksAndCopiesThePartialOne) {
  KvCache c(small());
  c.seq_grow(0, 10);
  write_positions(c, 0, 1, 0, 10);
  c.seq_fork(0, 1);
  const auto& a = c.block_table(0);
  const auto& b = c.block_table(1);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(a[0], b[0]);
  EXPECT_EQ(a[1], b[1]);
  EXPECT_NE(a[2], b[2]);  // partial last block: copied
  EXPECT_EQ(c.pool().refcount(a[0]), 2);
  EXPECT_EQ(c.pool().refcount(a[2]), 1);
  EXPECT_EQ(c.pool().n_free(), 4);
  expect_positions(c, 1, 1, 0, 10);

  // Both continue independently: neither sees the other's new positions.
  c.seq_grow(0, 12);
  write_positions(c, 0, 1, 10, 12);
  c.seq_grow(1, 12);
  write_positions(c, 1, 2, 10, 12);
  expect_positions(c, 0, 1, 0, 12);
  expect_positions(c, 1, 1, 0, 10);
  expect_positions(c, 1, 2, 10, 12);

  // Freeing the source keeps the shared blocks alive for the fork.
  c.seq_clear(0);
  expect_positions(c, 1, 1, 0, 10);
  EXPECT_EQ(c.pool().refcount(c.block_table(1)[0]), 1);
}

TEST(KvCache, TruncatingIntoASharedBlockCopiesItBeforeWriting) {
  KvCache c(small());
  c.seq_grow(0, 8);
  write_positions(c, 0, 1, 0, 8);
  c.seq_fork(0, 1);  // both full blocks shared
  c.seq_truncate(1, 6);
  c.seq_grow(1, 8);  // writes into shared block 1 → must be a private copy
  EXPECT_NE(c.block_table(0)[1], c.block_table(1)[1]);
  write_positions(c, 1, 2, 6, 8);
  expect_positions(c, 0, 1, 0, 8);
  expect_positions(c, 1, 1, 0, 6);
  expect_positions(c, 1, 2, 6, 8);
}

TEST(KvCache, RunningOutIsContextFullAndChangesNothing) {
  KvCache c(small(TensorType::F32, 4));
  c.seq_grow(0, 12);  // 3 blocks
  write_positions(c, 0, 1, 0, 12);
  c.seq_grow(1, 3);   // 1 block: pool empty
  write_positions(c, 1, 2, 0, 3);
  const auto table0 = c.block_table(0);
  try {
    c.seq_grow(0, 13);
    FAIL() << "growing past the pool must throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kContextFull);
    EXPECT_NE(std::string(e.what()).find("KV cache is full"), std::string::npos) << e.what();
  }
  EXPECT_EQ(c.seq_length(0), 12);
  EXPECT_EQ(c.block_table(0), table0);
  c.seq_grow(1, 4);  // still fits in its (now full) block
  c.seq_fork(1, 2);  // only full blocks: shared, no free block needed
  EXPECT_EQ(c.seq_length(2), 4);
  EXPECT_EQ(c.pool().refcount(c.block_table(1)[0]), 2);
  EXPECT_THROW(c.seq_grow(2, 5), Error);  // but it cannot grow
  EXPECT_EQ(c.seq_length(2), 4);
  expect_positions(c, 0, 1, 0, 12);
  expect_positions(c, 1, 2, 0, 3);
  // Context limit, independent of the pool.
  KvCache big(small(TensorType::F32, 100));
  try {
    big.seq_grow(0, 33);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kContextFull);
  }
}

TEST(KvCache, ForkWithoutAFreeBlockForThePartialCopyFails) {
  KvCache c(small(TensorType::F32, 2));
  c.seq_grow(0, 6);  // 2 blocks, last partial, pool empty
  try {
    c.seq_fork(0, 1);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kContextFull);
  }
  EXPECT_EQ(c.seq_length(1), 0);
  EXPECT_EQ(c.pool().refcount(c.block_table(0)[0]), 1);
}

TEST(KvCache, F16AndQ8_0RoundTrip) {
  // F16 keeps 11 significant bits (relative error <= 2^-11); Q8_0 quantizes each 32 values
  // with a step of max/127: the values here span ~1 unit around ~1000, so relative error ~1e-3.
  constexpr float kF16RelTol = 1.0f / 2048.0f;
  constexpr float kQ8RelTol = 5e-3f;
  for (auto [type, tol] : {std::pair{TensorType::F16, kF16RelTol}, std::pair{TensorType::Q8_0, kQ8RelTol}}) {
    KvCache c(small(type));
    c.seq_grow(0, 9);
    write_positions(c, 0, 1, 0, 9);
    expect_positions(c, 0, 1, 0, 9, tol);
  }
}

// K and V of different types: each plane holds its own row size, so every row reads back in its
// type. A Q4_0 row has a step of max/8 over its 32 values (relative error <= 1/16 of the block's
// largest, here ~7 % of the values); its F32 partner must come back exact, which catches a K/V
// plane mix-up (K and V values differ by kv * 50, 5 %).
TEST(KvCache, KAndVOfDifferentTypesRoundTrip) {
  constexpr float kQ4RelTol = 0.07f, kQ8RelTol = 5e-3f;
  struct Case {
    TensorType k, v;
    float tol_k, tol_v;
  };
  for (const Case& t : {Case{TensorType::Q4_0, TensorType::F32, kQ4RelTol, 0}, Case{TensorType::F32, TensorType::Q4_0, 0, kQ4RelTol},
                        Case{TensorType::Q8_0, TensorType::Q4_0, kQ8RelTol, kQ4RelTol}}) {
    KvCacheParams p = small(t.k);
    p.type_v = t.v;
    KvCache c(p);
    c.seq_grow(0, 9);
    c.seq_grow(1, 6);
    write_positions(c, 0, 1, 0, 9);
    write_positions(c, 1, 2, 0, 6);
    expect_positions(c, 0, 1, 0, 9, t.tol_k, t.tol_v);
    expect_positions(c, 1, 2, 0, 6, t.tol_k, t.tol_v);
    c.seq_fork(0, 2);  // copies the partial last block plane by plane
    expect_positions(c, 2, 1, 0, 9, t.tol_k, t.tol_v);
  }
}

TEST(KvCache, RejectsBadParameters) {
  KvCacheParams p = small(TensorType::Q8_0);
  p.head_dim = 48;  // not a multiple of 32
  EXPECT_THROW(KvCache{p}, Error);
  p = small(TensorType::Q4_K);
  EXPECT_THROW(KvCache{p}, Error);
  p = small(TensorType::F16);
  p.type_v = TensorType::Q4_0;
  p.head_dim = 48;  // V needs whole 32-value blocks
  EXPECT_THROW(KvCache{p}, Error);
  p = small();
  p.block_tokens = 0;
  EXPECT_THROW(KvCache{p}, Error);
  KvCache c(small());
  EXPECT_THROW(c.seq_length(3), Error);
  EXPECT_THROW(c.seq_grow(-1, 1), Error);
}

}  // namespace
}  // namespace edgellm
