// Continuous batching must not change a single token: N concurrent greedy requests through the
// service (N = 1, 2, 4, 8; F32 KV; prompts of different lengths arriving while others decode;
// chunked prefill next to decode steps) each yield exactly the tokens of the same request run
// alone with generate() on a fresh Context — an independent driver of the same engine.
#include <gtest/gtest.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/context.h"
#include "engine/sampler.h"
#include "generation/generate.h"
#include "model/model.h"
#include "service/inference_service.h"
#include "support/test_env.h"
#include "tokenizer/tokenizer.h"

namespace edgellm {
namespace {

constexpr int32_t kMaxTokens = 40;

struct Case {
  const char* model;
  std::vector<std::string> prompts;  // different lengths
};

const Case kStories{"stories260K.gguf",
                    {"Once upon a time", "The little dog ran to the park and saw a big red ball. He",
                     "Lily", "One day, a girl named Sue went to the store with her mom to buy",
                     "Tom and his friend played in the garden", "The sun was hot. The cat",
                     "There was a boy who liked to read books about trains and boats and planes and",
                     "A bird"}};
const Case kPoems{"tiny-zh-poems.gguf",
                  {"床前明月光", "春眠不觉晓，处处闻啼鸟。夜来风雨声，", "白日依山尽", "山", "千山鸟飞绝，万径人踪灭。",
                   "红豆生南国", "锄禾日当午，汗滴禾下土。谁知盘中餐，", "江"}};

std::vector<int32_t> solo_tokens(const Model& model, const Tokenizer& tok, const std::vector<int32_t>& prompt,
                                 int32_t n_ctx) {
  ContextParams cp;
  cp.n_ctx = n_ctx;
  cp.kv_type = TensorType::F32;
  Context ctx(model, cp);
  SamplerParams sp;
  sp.temperature = 0;
  Sampler sampler(sp, model.hparams().n_vocab);
  GenerationParams gp;
  gp.max_tokens = kMaxTokens;
  return generate(ctx, sampler, &tok, prompt, gp).tokens;
}

struct Collected {
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<std::vector<int32_t>> tokens;
  std::vector<FinishReason> reasons;
  int finished = 0;
};

void run_case(const Case& c, int n, int32_t step_tokens) {
  SCOPED_TRACE(std::string(c.model) + " N=" + std::to_string(n) + " step_tokens=" + std::to_string(step_tokens));
  std::shared_ptr<const Model> model = Model::load(test::shared_model(c.model));
  const std::unique_ptr<Tokenizer> tok = Tokenizer::from_gguf(model->gguf());
  constexpr int32_t kCtx = 192;

  ServiceParams params;
  params.context.n_ctx = kCtx;
  params.context.n_seq_max = n;
  params.context.kv_type = TensorType::F32;
  params.max_queued = 8;
  params.step_tokens = step_tokens;
  InferenceService service(model, params);

  Collected got;
  got.tokens.resize(static_cast<size_t>(n));
  got.reasons.resize(static_cast<size_t>(n), FinishReason::kError);
  std::vector<char> chained(static_cast<size_t>(n), 0);  // scheduler thread only
  // Request i + 1 arrives from request i's third token: prompts join while others decode.
  std::function<void(int)> submit = [&](int i) {
    ServiceRequest r;
    r.prompt = c.prompts[static_cast<size_t>(i)];
    r.sampling.temperature = 0;
    r.max_tokens = kMaxTokens;
    r.deadline_ms = 0;
    auto chain = [&, i] {
      if (chained[static_cast<size_t>(i)] || i + 1 >= n) return;
      chained[static_cast<size_t>(i)] = 1;
      submit(i + 1);
    };
    r.on_token = [&, i, chain](const TokenEvent& ev) {
      if (ev.token >= 0) {
        std::lock_guard<std::mutex> lock(got.mutex);
        got.tokens[static_cast<size_t>(i)].push_back(ev.token);
      }
      if (ev.index == 2) chain();
      return true;
    };
    r.on_finish = [&, i, chain](const RequestResult& res) {
      chain();  // a request that ended before its third token
      std::lock_guard<std::mutex> lock(got.mutex);
      got.reasons[static_cast<size_t>(i)] = res.finish_reason;
      ++got.finished;
      got.cv.notify_all();
    };
    service.submit(std::move(r));
  };
  submit(0);
  {
    std::unique_lock<std::mutex> lock(got.mutex);
    ASSERT_TRUE(got.cv.wait_for(lock, std::chrono::seconds(120), [&] { return got.finished == n; }))
        << got.finished << " of " << n << " finished";
  }
  const ServiceMetrics m = service.metrics();
  for (int i = 0; i < n; ++i) {
    const std::vector<int32_t> prompt = tok->encode(c.prompts[static_cast<size_t>(i)], true, false);
    const std::vector<int32_t> want = solo_tokens(*model, *tok, prompt, kCtx);
    EXPECT_NE(got.reasons[static_cast<size_t>(i)], FinishReason::kError) << "request " << i;
    EXPECT_EQ(got.tokens[static_cast<size_t>(i)], want) << "request " << i << " differs from its solo run";
  }
  if (n > 1) {
    // Batching happened: more batch entries than steps (several sequences per forward).
    EXPECT_GT(m.step_tokens, m.steps);
  }
}

TEST(BatchingExact, StoriesEveryWidth) {
  for (int n : {1, 2, 4, 8}) run_case(kStories, n, 256);
}

TEST(BatchingExact, PoemsEveryWidth) {
  for (int n : {1, 2, 4, 8}) run_case(kPoems, n, 256);
}

// A step budget smaller than the prompts: each prompt is prefilled over several steps, in the
// same batches as the other sequences' decode tokens.
TEST(BatchingExact, ChunkedPrefillBesideDecode) {
  run_case(kStories, 4, 9);
  run_case(kPoems, 8, 12);
}

}  // namespace
}  // namespace edgellm
