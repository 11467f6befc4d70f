// Throughput of the forward pass on the two real models (prefill and decode tokens per second,
// 1 and 2 threads). Prints the numbers for the benchmark table in docs/; the only assertion is
// that the runs produce logits, so a loaded CI machine cannot make it flaky.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "engine/context.h"
#include "model/model.h"
#include "support/test_env.h"

namespace edgellm {
namespace {

constexpr int32_t kPrefillTokens = 128;
constexpr int32_t kDecodeTokens = 128;

void measure(const std::string& name, int threads) {
  auto model = Model::load(test::shared_model(name));
  ContextParams cp;
  cp.n_ctx = kPrefillTokens + kDecodeTokens + 1;
  cp.n_threads = threads;
  Context ctx(*model, cp);
  std::vector<int32_t> prompt(kPrefillTokens);
  for (int32_t i = 0; i < kPrefillTokens; ++i) prompt[static_cast<size_t>(i)] = 1 + (i * 37) % (model->hparams().n_vocab - 1);
  Batch b;
  b.add_sequence(0, prompt, 0);
  const auto t0 = std::chrono::steady_clock::now();
  ctx.decode(b);
  const auto t1 = std::chrono::steady_clock::now();
  for (int32_t i = 0; i < kDecodeTokens; ++i) {
    b.clear();
    b.add(0, 5 + i, ctx.seq_length(0), true);
    ctx.decode(b);
  }
  const auto t2 = std::chrono::steady_clock::now();
  ASSERT_EQ(ctx.n_outputs(), 1);
  const double prefill = kPrefillTokens / std::chrono::duration<double>(t1 - t0).count();
  const double decode = kDecodeTokens / std::chrono::duration<double>(t2 - t1).count();
  std::printf("  %-20s threads %d  prefill %8.0f tok/s  decode %8.0f tok/s  (f16 kv, %d+%d tokens)\n", name.c_str(),
              threads, prefill, decode, kPrefillTokens, kDecodeTokens);
}

TEST(ForwardSpeed, RealModels) {
  for (const char* m : {"stories260K.gguf", "tiny-zh-poems.gguf"}) {
    for (int threads : {1, 2}) measure(m, threads);
  }
}

}  // namespace
}  // namespace edgellm
