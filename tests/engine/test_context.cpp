// Context behaviour around the forward pass: input validation (errors, never crashes), the
// cache state left after an error, sequence fork / truncate semantics, chunking, and that
// nothing allocates per decode step.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "engine/context.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "platform/memory_stats.h"
#include "support/test_env.h"

// Every heap allocation of this test process is counted, to prove decode steps make none.
namespace {
std::atomic<int64_t> g_heap_allocations{0};
}  // namespace

// GCC flags free() on memory it knows came from operator new; here both sides are ours.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void* operator new(std::size_t n) {
  g_heap_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

namespace edgellm {
namespace {

class ContextTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { model_ = Model::load(test::shared_model("stories260K.gguf")).release(); }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }
  static ContextParams params() {
    ContextParams p;
    p.n_ctx = 64;
    p.n_batch = 8;
    p.n_seq_max = 3;
    p.kv_type = TensorType::F32;
    p.n_threads = 2;
    return p;
  }
  static std::vector<float> logits_copy(const Context& c, int i) {
    const float* l = c.logits(i);
    return std::vector<float>(l, l + model_->hparams().n_vocab);
  }
  // Prompt chunks run attention by query blocks (GEMMs) and single steps entry by entry, with
  // different F32 summation orders (engine/forward_attention.cpp): their logits agree to
  // rounding, not bit for bit.
  static float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    float worst = a.size() == b.size() ? 0.0f : INFINITY;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
    return worst;
  }
  static constexpr float kOrderTol = 1e-4f;
  static Model* model_;
};
Model* ContextTest::model_ = nullptr;

template <typename Fn>
ErrorCode error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.code();
  }
  return ErrorCode::kInternal;  // "no error" sentinel for the expectations below
}

const std::vector<int32_t> kPrompt = {1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315};

TEST_F(ContextTest, InvalidInputsAreErrorsAndLeaveTheCacheUntouched) {
  Context ctx(*model_, params());
  Batch b;
  b.add_sequence(0, {1, 403, 407}, 0);
  ctx.decode(b);
  ASSERT_EQ(ctx.seq_length(0), 3);

  Batch bad;
  bad.add(0, 512, 3, true);  // n_vocab is 512
  EXPECT_EQ(error_of([&] { ctx.decode(bad); }), ErrorCode::kInvalidArgument);
  bad.clear();
  bad.add(0, -1, 3, true);
  EXPECT_EQ(error_of([&] { ctx.decode(bad); }), ErrorCode::kInvalidArgument);
  bad.clear();
  bad.add(0, 5, 5, true);  // gap: expected position 3
  EXPECT_EQ(error_of([&] { ctx.decode(bad); }), ErrorCode::kInvalidArgument);
  bad.clear();
  bad.add(0, 5, 2, true);  // rewrite without truncation
  EXPECT_EQ(error_of([&] { ctx.decode(bad); }), ErrorCode::kInvalidArgument);
  bad.clear();
  bad.add(3, 5, 0, true);  // n_seq_max is 3
  EXPECT_EQ(error_of([&] { ctx.decode(bad); }), ErrorCode::kInvalidArgument);
  bad.clear();
  bad.add(0, 5, 3, false);
  bad.add(0, 6, 3, true);  // duplicate position within one batch
  EXPECT_EQ(error_of([&] { ctx.decode(bad); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ctx.seq_length(0), 3);
  EXPECT_EQ(error_of([&] { ctx.logits(5); }), ErrorCode::kInvalidArgument);

  // The message names the offending thing.
  try {
    bad.clear();
    bad.add(0, 9999, 3, true);
    ctx.decode(bad);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("token id 9999"), std::string::npos) << e.what();
  }
}

TEST_F(ContextTest, ContextOverflowIsContextFull) {
  ContextParams p = params();
  p.n_ctx = 10;
  Context ctx(*model_, p);
  Batch b;
  b.add_sequence(0, kPrompt, 0);  // 12 > 10
  EXPECT_EQ(error_of([&] { ctx.decode(b); }), ErrorCode::kContextFull);
  EXPECT_EQ(ctx.seq_length(0), 0);
}

TEST_F(ContextTest, KvBudgetExhaustionKeepsCompletedChunksOnly) {
  ContextParams p = params();
  p.kv_block_tokens = 4;
  p.n_batch = 4;
  // 3 blocks
  p.kv_budget_bytes = 3 * 4 * KvCache::bytes_per_token({5, 4, 8, TensorType::F32, TensorType::F32, 4, 1, 64, 1});
  Context ctx(*model_, p);
  EXPECT_EQ(ctx.kv_cache().pool().n_blocks(), 3);
  Batch b;
  b.add_sequence(0, std::vector<int32_t>(kPrompt.begin(), kPrompt.begin() + 8), 0);
  // Chunks of 4: seq0 [0,4) and [4,8) take 2 blocks; the third chunk (seq1 x2, seq2 x2) needs
  // 2 blocks with 1 free: seq1 grows, seq2 fails, and both are rolled back.
  b.add_sequence(1, {1, 2}, 0);
  b.add_sequence(2, {1, 2, 3}, 0);
  EXPECT_EQ(error_of([&] { ctx.decode(b); }), ErrorCode::kContextFull);
  EXPECT_EQ(ctx.seq_length(0), 8);  // its two chunks completed
  EXPECT_EQ(ctx.seq_length(1), 0);  // the failing chunk was rolled back
  EXPECT_EQ(ctx.seq_length(2), 0);
  EXPECT_EQ(ctx.kv_cache().pool().n_free(), 1);
  // The cache still works: seq 0's continuation equals a fresh run's.
  Batch step;
  step.add(0, kPrompt[8], 8, true);
  ctx.decode(step);
  const auto got = logits_copy(ctx, 0);
  Context fresh(*model_, params());
  Batch all;
  all.add_sequence(0, std::vector<int32_t>(kPrompt.begin(), kPrompt.begin() + 9), 0);
  fresh.decode(all);
  EXPECT_EQ(got, logits_copy(fresh, 0));
}

// The abort check is polled before every layer: a forward abandoned after k layers throws
// kCancelled, leaves every sequence as it was (the chunk is rolled back) and a rerun gives the
// logits of a context that never saw the aborted attempt.
TEST_F(ContextTest, AbortBetweenLayersRollsBackTheChunk) {
  struct Counter {
    int calls = 0;
    int abort_at = -1;
    static bool check(void* self) {
      auto* c = static_cast<Counter*>(self);
      return c->calls++ == c->abort_at;
    }
  };
  const int n_layer = model_->hparams().n_layer;
  std::vector<float> want;
  {
    Context ctx(*model_, params());
    Batch b;
    b.add_sequence(0, kPrompt, 0);
    ctx.decode(b);
    want = logits_copy(ctx, 0);
  }
  for (int abort_at : {0, 1, n_layer - 1}) {
    Context ctx(*model_, params());  // n_batch 8: kPrompt runs as two chunks
    Counter counter;
    counter.abort_at = abort_at;
    ctx.set_abort_check(AbortCheck{&Counter::check, &counter});
    Batch b;
    b.add_sequence(0, kPrompt, 0);
    EXPECT_EQ(error_of([&] { ctx.decode(b); }), ErrorCode::kCancelled) << "abort at layer " << abort_at;
    EXPECT_EQ(counter.calls, abort_at + 1) << "the check runs once per layer until it fires";
    EXPECT_EQ(ctx.seq_length(0), 0) << "the aborted chunk stayed in the cache";
    EXPECT_EQ(ctx.kv_blocks_free(), ctx.kv_blocks_total());
    ctx.set_abort_check(AbortCheck{});
    ctx.decode(b);
    EXPECT_EQ(logits_copy(ctx, 0), want) << "a rerun after an abort at layer " << abort_at;
  }
  // An abort in the second chunk keeps the first chunk (as for any error).
  Context ctx(*model_, params());
  Counter counter;
  counter.abort_at = n_layer + 2;  // chunk 1: n_layer checks, chunk 2: aborts before layer 2
  ctx.set_abort_check(AbortCheck{&Counter::check, &counter});
  Batch b;
  b.add_sequence(0, kPrompt, 0);
  EXPECT_EQ(error_of([&] { ctx.decode(b); }), ErrorCode::kCancelled);
  EXPECT_EQ(ctx.seq_length(0), 8);
}

// Capacity queries answer what seq_grow will take, so admission never rolls back a batch.
TEST_F(ContextTest, KvCapacityQueriesMatchWhatDecodeTakes) {
  ContextParams p = params();
  p.kv_block_tokens = 4;
  Context ctx(*model_, p);
  EXPECT_EQ(ctx.kv_blocks_for(0), 0);
  EXPECT_EQ(ctx.kv_blocks_for(5), 2);
  EXPECT_EQ(ctx.kv_blocks_needed(0, 5), 2);
  const int32_t free0 = ctx.kv_blocks_free();
  Batch b;
  b.add_sequence(0, {1, 403, 407, 261, 378}, 0);
  ctx.decode(b);
  EXPECT_EQ(ctx.kv_blocks_free(), free0 - 2);
  EXPECT_EQ(ctx.kv_blocks_needed(0, 3), 0);  // positions 5..7 fit the partial block
  EXPECT_EQ(ctx.kv_blocks_needed(0, 4), 1);
  ctx.seq_fork(0, 1);  // shares the full block, copies the partial one
  ctx.seq_truncate(1, 2);
  ctx.seq_truncate(0, 2);  // now both hold the shared first block, partially
  EXPECT_EQ(ctx.kv_blocks_needed(0, 1), 1) << "a write into a shared partial block needs a copy";
  const int32_t before = ctx.kv_blocks_free();
  Batch c;
  c.add(0, 432, 2, true);
  ctx.decode(c);
  EXPECT_EQ(ctx.kv_blocks_free(), before - 1);
}

TEST_F(ContextTest, ChunkingAndThreadsDoNotChangeLogits) {
  // Threads split work, never a sum: bit-identical logits for every chunking. Chunks of 512 and
  // 5 both run prompt attention by query blocks, whose per-query arithmetic does not depend on
  // the block boundaries: bit-identical too (kPrompt's 12 tokens split 5 + 5 + 2; a last chunk
  // of one token would run entry by entry). Chunks of 1 run entry by entry (decode): equal to
  // rounding.
  std::vector<float> ref;
  for (int32_t n_batch : {512, 5, 1}) {
    std::vector<float> one_thread;
    for (int threads : {1, 2}) {
      ContextParams p = params();
      p.n_batch = n_batch;
      p.n_threads = threads;
      Context ctx(*model_, p);
      Batch b;
      b.add_sequence(0, kPrompt, 0);
      ctx.decode(b);
      ASSERT_EQ(ctx.n_outputs(), 1);
      const auto got = logits_copy(ctx, 0);
      if (ref.empty()) ref = got;
      if (one_thread.empty()) {
        one_thread = got;
      } else {
        EXPECT_EQ(got, one_thread) << "n_batch " << n_batch << ": 2 threads vs 1";
      }
      if (n_batch > 1) {
        EXPECT_EQ(got, ref) << "n_batch " << n_batch << " threads " << threads;
      } else {
        EXPECT_LE(max_abs_diff(got, ref), kOrderTol) << "n_batch 1 threads " << threads;
      }
    }
  }
}

TEST_F(ContextTest, ForkedSequenceContinuesLikeTheOriginal) {
  Context ctx(*model_, params());
  Batch b;
  b.add_sequence(0, std::vector<int32_t>(kPrompt.begin(), kPrompt.begin() + 7), 0);  // partial block (16)
  ctx.decode(b);
  ctx.seq_fork(0, 1);
  EXPECT_EQ(ctx.seq_length(1), 7);
  b.clear();
  b.add(0, kPrompt[7], 7, true);
  b.add(1, kPrompt[7], 7, true);
  ctx.decode(b);
  EXPECT_EQ(logits_copy(ctx, 0), logits_copy(ctx, 1));
  // Diverge: seq 1 gets a different token; seq 0 must be unaffected.
  b.clear();
  b.add(1, 100, 8, true);
  ctx.decode(b);
  b.clear();
  b.add(0, kPrompt[8], 8, true);
  ctx.decode(b);
  const auto forked_then = logits_copy(ctx, 0);
  Context fresh(*model_, params());
  Batch all;
  all.add_sequence(0, std::vector<int32_t>(kPrompt.begin(), kPrompt.begin() + 9), 0);
  fresh.decode(all);
  // Steps 7 and 8 ran entry by entry here, in the fresh context as part of prompt chunks.
  EXPECT_LE(max_abs_diff(forked_then, logits_copy(fresh, 0)), kOrderTol);
}

// Interleaved sequences and a truncation scatter a sequence's blocks; attention then reads its
// cache as several runs of consecutive rows (kv_cache.h). The logits must be those of a fresh
// context holding the sequence in one run (same F32 arithmetic per row: bit-identical).
TEST_F(ContextTest, ScatteredBlocksGiveTheLogitsOfOneRun) {
  std::vector<int32_t> tokens(30);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>(1 + (i * 37) % 500);
  ContextParams p = params();
  p.kv_block_tokens = 4;
  p.n_seq_max = 2;
  Context ctx(*model_, p);
  const auto feed = [&](int32_t seq, size_t from, size_t to, int32_t pos) {
    Batch b;
    b.add_sequence(seq, std::vector<int32_t>(tokens.begin() + static_cast<std::ptrdiff_t>(from),
                                             tokens.begin() + static_cast<std::ptrdiff_t>(to)), pos);
    ctx.decode(b);
  };
  feed(0, 0, 10, 0);    // seq 0: blocks 0 1 2
  feed(1, 0, 6, 0);     // seq 1: blocks 3 4
  feed(0, 10, 20, 10);  // seq 0: + 5 6
  ctx.seq_truncate(1, 2);  // frees block 4
  feed(0, 20, 30, 20);  // seq 0: + 4 7 8
  const std::vector<int32_t>& table = ctx.kv_cache().block_table(0);
  int runs = 1;
  for (size_t i = 1; i < table.size(); ++i) runs += table[i] != table[i - 1] + 1;
  EXPECT_GE(runs, 3) << "the test needs a scattered block table";

  Context fresh(*model_, p);
  Batch all;
  all.add_sequence(0, tokens, 0);
  fresh.decode(all);
  EXPECT_EQ(logits_copy(ctx, 0), logits_copy(fresh, 0));
}

TEST_F(ContextTest, ManyLogitsBeyondNBatch) {
  ContextParams p = params();
  p.n_batch = 4;
  Context ctx(*model_, p);
  Batch b;
  for (size_t i = 0; i < kPrompt.size(); ++i) b.add(0, kPrompt[i], static_cast<int32_t>(i), true);
  ctx.decode(b);
  ASSERT_EQ(ctx.n_outputs(), 12);
  Context one(*model_, params());
  Batch first;
  first.add_sequence(0, std::vector<int32_t>(kPrompt.begin(), kPrompt.begin() + 6), 0);
  one.decode(first);
  EXPECT_EQ(logits_copy(ctx, 5), logits_copy(one, 0));
}

TEST_F(ContextTest, DecodeStepsDoNotAllocate) {
  Context ctx(*model_, params());
  Batch b;
  b.add_sequence(0, kPrompt, 0);
  ctx.decode(b);
  const size_t engine_bytes = engine_memory().current();
  const size_t allocated = ctx.allocated_bytes();
  b.clear();
  b.add(0, 300, ctx.seq_length(0), true);  // the batch's own vector is the caller's business
  const int64_t heap_before = g_heap_allocations.load();
  for (int i = 0; i < 20; ++i) {
    b.clear();
    b.add(0, 300 + i, ctx.seq_length(0), true);
    ctx.decode(b);
  }
  EXPECT_EQ(g_heap_allocations.load() - heap_before, 0) << "heap allocations during 20 decode steps";
  EXPECT_EQ(engine_memory().current(), engine_bytes);
  EXPECT_EQ(ctx.allocated_bytes(), allocated);
  EXPECT_EQ(ctx.stats().n_tokens_processed, 32);
}

TEST_F(ContextTest, BadParametersAreRejected) {
  ContextParams p = params();
  p.n_batch = 0;
  EXPECT_EQ(error_of([&] { Context c(*model_, p); }), ErrorCode::kInvalidArgument);
  p = params();
  p.kv_type = TensorType::Q4_K;
  EXPECT_EQ(error_of([&] { Context c(*model_, p); }), ErrorCode::kUnsupported);
  p = params();
  p.kv_type = TensorType::Q8_0;  // head_dim 8 is not a multiple of 32
  EXPECT_EQ(error_of([&] { Context c(*model_, p); }), ErrorCode::kUnsupported);
  p = params();
  p.kv_budget_bytes = 10;
  EXPECT_EQ(error_of([&] { Context c(*model_, p); }), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace edgellm
