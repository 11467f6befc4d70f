// Continuous batching must not change a single token: N concurrent greedy requests through the
// service (N = 1, 2, 4, 8; F32 KV; prompts of different lengths arriving while others decode;
// chunked prefill next to decode steps) each yield exactly the tokens of the same request run
// alone with generate() on a fresh Context — an independent driver of the same engine.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/context.h"
#include "engine/sampler.h"
#include "generation/generate.h"
#include "model/model.h"
#include "service/inference_service.h"
#include "support/service_fixture.h"
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

void run_case(const Case& c, int n, int32_t step_tokens) {
  SCOPED_TRACE(std::string(c.model) + " N=" + std::to_string(n) + " step_tokens=" + std::to_string(step_tokens));
  std::shared_ptr<const Model> model = test::shared_service_model(c.model);
  const std::unique_ptr<Tokenizer> tok = Tokenizer::from_gguf(model->gguf());
  constexpr int32_t kCtx = 192;

  ServiceParams params = test::service_params(kCtx, n, 8, TensorType::F32);
  params.step_tokens = step_tokens;
  InferenceService service(model, params);

  std::vector<test::Outcome> got(static_cast<size_t>(n));
  test::Finishes finished;
  std::vector<char> chained(static_cast<size_t>(n), 0);  // scheduler thread only
  // Request i + 1 arrives from request i's third token: prompts join while others decode.
  std::function<void(int)> submit = [&](int i) {
    ServiceRequest r = test::greedy_request(c.prompts[static_cast<size_t>(i)], kMaxTokens, /*stop_at_eog=*/true);
    auto chain = [&, i] {
      if (chained[static_cast<size_t>(i)] || i + 1 >= n) return;
      chained[static_cast<size_t>(i)] = 1;
      submit(i + 1);
    };
    got[static_cast<size_t>(i)].attach(r, [chain](int index) {
      if (index == 2) chain();
      return true;
    });
    auto record = std::move(r.on_finish);
    r.on_finish = [&finished, chain, record](RequestResult& res) {
      chain();  // a request that ended before its third token
      record(res);
      finished.add();
    };
    service.submit(std::move(r));
  };
  submit(0);
  ASSERT_TRUE(finished.wait(n)) << finished.count() << " of " << n << " finished";
  const ServiceMetrics m = service.metrics();
  std::vector<size_t> lengths, prompt_lengths;
  for (int i = 0; i < n; ++i) {
    const std::vector<int32_t> prompt = tok->encode(c.prompts[static_cast<size_t>(i)], true, false);
    prompt_lengths.push_back(prompt.size());
    test::SoloParams sp;
    sp.n_ctx = kCtx;
    sp.max_tokens = kMaxTokens;
    const std::vector<int32_t> want = test::solo_greedy(*model, tok.get(), prompt, sp).tokens;
    const test::Outcome& o = got[static_cast<size_t>(i)];
    EXPECT_NE(o.result.finish_reason, FinishReason::kError) << "request " << i;
    EXPECT_EQ(o.tokens, want) << "request " << i << " differs from its solo run";
    lengths.push_back(want.size());
  }
  // Batching happened: several sequences were decoded in one forward. Request 1 is queued from
  // request 0's third token and admitted in the next step, which prefills up to step_tokens - 1
  // of its prompt beside request 0's decode token; after p such steps it has its first token and
  // decodes in the next one, beside request 0 if request 0 is still running then, i.e. if it
  // samples more than 3 + p tokens (its solo run says how many).
  EXPECT_LE(m.max_decode_batch, n);
  if (n == 1) {
    EXPECT_EQ(m.max_decode_batch, 1);
  } else {
    const size_t p = (prompt_lengths[1] + static_cast<size_t>(step_tokens) - 2) / static_cast<size_t>(step_tokens - 1);
    ASSERT_GT(lengths[0], 3 + p) << "this case cannot show batching: request 0 ends before request 1 decodes";
    EXPECT_GE(m.max_decode_batch, 2) << "requests that overlapped were never decoded in one step";
  }
  std::printf("  %s N=%d step_tokens %d: at most %d sequences decoded in one step, %llu steps\n", c.model, n,
              step_tokens, m.max_decode_batch, static_cast<unsigned long long>(m.steps));
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
