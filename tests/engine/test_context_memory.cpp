// Memory: a ~150 MB synthetic Q8_0 model is loaded and run for a few tokens; the process's peak
// RSS may grow by at most the mapped file + the context's own buffers (KV pool, scratch, logits)
// + a fixed slack. A hidden copy of the weights (one more file size) would blow the bound.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "engine/context.h"
#include "model/model.h"
#include "platform/memory_stats.h"
#include "support/synthetic_model.h"
#include "support/test_env.h"

namespace edgellm {
namespace {

// Slack for everything that is neither weights nor engine buffers: thread stacks, the allocator's
// arenas, the GGUF index (tensor infos, metadata views), gtest, libstdc++ and page-table noise.
constexpr size_t kSlackBytes = 30u << 20;

TEST(ContextMemory, PeakRssIsFilePlusBuffersPlusSlack) {
  test::SyntheticModelSpec spec;
  spec.n_vocab = 32000;
  spec.n_embd = 1024;
  spec.n_layer = 10;
  spec.n_ff = 2816;
  spec.n_head = 16;
  spec.n_head_kv = 4;
  spec.weight_type = TensorType::Q8_0;
  spec.tied = true;  // the output head reads token_embd, so every weight page is touched
  const std::string path = test::temp_dir() + "/memory-test-q8_0.gguf";
  write_synthetic_model(spec, path);

  const ProcessMemory before = read_process_memory();
  ASSERT_TRUE(before.valid);
  auto model = Model::load(path);
  const size_t file_size = model->gguf().file_size();
  EXPECT_GT(file_size, 100u << 20);
  EXPECT_LT(file_size, 200u << 20);

  ContextParams cp;
  cp.n_ctx = 256;
  cp.n_batch = 64;
  cp.n_threads = 2;
  Context ctx(*model, cp);
  Batch b;
  b.add_sequence(0, {1, 2, 3, 4, 5, 6, 7, 8}, 0);
  ctx.decode(b);
  for (int i = 0; i < 3; ++i) {
    b.clear();
    b.add(0, 100 + i, ctx.seq_length(0), true);
    ctx.decode(b);
  }
  const ProcessMemory after = read_process_memory();
  const size_t buffers = ctx.allocated_bytes();
  const size_t bound = before.rss_bytes + file_size + buffers + kSlackBytes;
  std::printf("  rss before %.1f MB (peak %.1f), peak after %.1f MB; file %.1f MB, context buffers %.1f MB, bound %.1f MB\n",
              before.rss_bytes / 1048576.0, before.peak_bytes / 1048576.0, after.peak_bytes / 1048576.0,
              file_size / 1048576.0, buffers / 1048576.0, bound / 1048576.0);
  // The measurement only means something if writing the file did not already set the peak.
  ASSERT_LT(before.peak_bytes, before.rss_bytes + kSlackBytes);
  EXPECT_LE(after.peak_bytes, bound);
  // And the weights really were read through the mapping (every page is touched by a token).
  EXPECT_GE(after.peak_bytes, before.rss_bytes + file_size * 9 / 10);
}

}  // namespace
}  // namespace edgellm
