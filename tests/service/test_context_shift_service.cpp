// Context shift through the service: concurrent endless streams (greedy, past end-of-text,
// several shifts each, n_keep 4 / 9 / the whole prompt) whose prompts share a prefix, so the
// prefix cache shares their first blocks and a shift must copy the shared ones it rewrites. Each
// stream equals the same request run alone with generate() on a fresh Context without the cache,
// and the pool ends with no block in use.
#include <gtest/gtest.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/context.h"
#include "engine/sampler.h"
#include "generation/generate.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "service/inference_service.h"
#include "support/test_env.h"
#include "tokenizer/tokenizer.h"

namespace edgellm {
namespace {

constexpr int32_t kCtx = 96;
constexpr int32_t kMaxTokens = 300;

std::vector<int32_t> solo_tokens(const Model& model, const std::vector<int32_t>& prompt, int32_t n_keep,
                                 int32_t* shifts) {
  ContextParams cp;
  cp.n_ctx = kCtx;
  cp.kv_type = TensorType::F32;
  Context ctx(model, cp);
  SamplerParams sp;
  sp.temperature = 0;
  Sampler sampler(sp, model.hparams().n_vocab);
  GenerationParams gp;
  gp.max_tokens = kMaxTokens;
  gp.ignore_eog = true;
  gp.context_shift = true;
  gp.n_keep = n_keep;
  GenerationResult r = generate(ctx, sampler, nullptr, prompt, gp);
  EXPECT_EQ(r.finish_reason, FinishReason::kLength) << r.error;
  *shifts = r.context_shifts;
  return r.tokens;
}

struct Outcome {
  std::vector<int32_t> tokens;
  RequestResult result;
};

TEST(ContextShiftService, ConcurrentStreamsEqualTheirSoloRuns) {
  std::shared_ptr<const Model> model = Model::load(test::shared_model("stories260K.gguf"));
  const std::unique_ptr<Tokenizer> tok = Tokenizer::from_gguf(model->gguf());
  ServiceParams params;
  params.context.n_ctx = kCtx;
  params.context.n_seq_max = 3;
  params.context.kv_type = TensorType::F32;
  params.max_queued = 4;
  InferenceService service(model, params);

  const std::string system = "Once upon a time, there was a little girl named Lily. She loved to play outside.";
  const std::vector<std::string> tails = {" One day", " Her dog", " The sun was"};
  const std::vector<int32_t> keeps = {4, 9, -1};
  std::vector<Outcome> outs(tails.size());
  std::mutex mutex;
  std::condition_variable cv;
  int finished = 0;
  std::vector<std::vector<int32_t>> prompts;
  {
    // A first request leaves the shared prefix's full blocks in the prefix cache; the streams
    // then map them into their tables (shared by all three) and their first shift rewrites them.
    ServiceRequest warm;
    warm.tokens = tok->encode(system, true, false);
    warm.max_tokens = 1;
    warm.deadline_ms = 0;
    warm.on_finish = [&](const RequestResult&) {
      std::lock_guard<std::mutex> lock(mutex);
      ++finished;
      cv.notify_all();
    };
    service.submit(std::move(warm));
    std::unique_lock<std::mutex> lock(mutex);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return finished == 1; }));
    finished = 0;
  }
  for (size_t i = 0; i < tails.size(); ++i) {
    prompts.push_back(tok->encode(system + tails[i], true, false));
    ServiceRequest r;
    r.tokens = prompts.back();
    r.sampling.temperature = 0;
    r.max_tokens = kMaxTokens;
    r.ignore_eog = true;
    r.deadline_ms = 0;
    r.context_shift = true;
    r.n_keep = keeps[i];
    Outcome* out = &outs[i];
    r.on_token = [out, &mutex](const TokenEvent& ev) {
      std::lock_guard<std::mutex> lock(mutex);
      if (ev.token >= 0) out->tokens.push_back(ev.token);
      return true;
    };
    r.on_finish = [out, &mutex, &cv, &finished](const RequestResult& res) {
      std::lock_guard<std::mutex> lock(mutex);
      out->result = res;
      ++finished;
      cv.notify_all();
    };
    service.submit(std::move(r));
  }
  {
    std::unique_lock<std::mutex> lock(mutex);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(120), [&] { return finished == 3; }));
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    SCOPED_TRACE("stream " + std::to_string(i));
    ASSERT_EQ(outs[i].result.finish_reason, FinishReason::kLength) << outs[i].result.error;
    int32_t shifts = 0;
    EXPECT_EQ(outs[i].tokens, solo_tokens(*model, prompts[i], keeps[i], &shifts));
    EXPECT_GE(shifts, 3);
    EXPECT_EQ(static_cast<int32_t>(outs[i].tokens.size()), kMaxTokens);
  }
  const ServiceMetrics m = service.metrics();
  EXPECT_GE(m.prompt_tokens_cached, 3u * 16u);  // every stream mapped the cached prefix block(s)
  EXPECT_EQ(m.kv_blocks_used, 0);
}

// A pool with no block to spare: 12 blocks, n_ctx 96 (6 blocks per stream), 3 streams sharing a
// 48-token prefix (3 full blocks, cached by a first request), keep 4. Admission counts the shared
// blocks once but also the copies each stream's first shift makes of them (at most one fewer than
// their holders): two streams fit at a time (3 shared + 2 x 3 own + 3 copies = 12), the third
// waits. Without the copies in the count it was admitted, and a shift found no free block.
TEST(ContextShiftService, SharedBlocksInATightPoolAreCopiedWithoutRunningOut) {
  std::shared_ptr<const Model> model = Model::load(test::shared_model("stories260K.gguf"));
  ServiceParams params;
  params.context.n_ctx = kCtx;
  params.context.n_seq_max = 3;
  params.context.kv_type = TensorType::F32;
  params.context.kv_block_tokens = 16;
  KvCacheParams kp;
  kp.n_layer = model->hparams().n_layer;
  kp.n_head_kv = model->hparams().n_head_kv;
  kp.head_dim = model->hparams().head_dim;
  kp.type_k = kp.type_v = TensorType::F32;
  kp.block_tokens = 16;
  params.context.kv_budget_bytes = 12 * KvCache::block_bytes(kp);
  params.max_queued = 4;
  InferenceService service(model, params);
  ASSERT_EQ(service.metrics().kv_blocks_total, 12);

  std::vector<int32_t> system = {1};
  for (int32_t i = 0; i < 47; ++i) system.push_back(20 + 7 * i % 400);
  std::vector<Outcome> outs(4);
  std::mutex mutex;
  std::condition_variable cv;
  int finished = 0;
  auto submit = [&](const std::vector<int32_t>& prompt, int32_t max_tokens, Outcome* out) {
    ServiceRequest r;
    r.tokens = prompt;
    r.sampling.temperature = 0;
    r.max_tokens = max_tokens;
    r.ignore_eog = true;
    r.deadline_ms = 0;
    r.context_shift = true;
    r.n_keep = 4;
    r.on_token = [out, &mutex](const TokenEvent& ev) {
      std::lock_guard<std::mutex> lock(mutex);
      if (ev.token >= 0) out->tokens.push_back(ev.token);
      return true;
    };
    r.on_finish = [out, &mutex, &cv, &finished](const RequestResult& res) {
      std::lock_guard<std::mutex> lock(mutex);
      out->result = res;
      ++finished;
      cv.notify_all();
    };
    service.submit(std::move(r));
  };
  std::vector<int32_t> warm = system;
  warm.push_back(5);
  submit(warm, 1, &outs[0]);
  {
    std::unique_lock<std::mutex> lock(mutex);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return finished == 1; }));
  }
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 3; ++i) {
    prompts.push_back(system);
    for (int j = 0; j < 3; ++j) prompts.back().push_back(450 + 3 * i + j);
    submit(prompts.back(), kMaxTokens, &outs[static_cast<size_t>(i) + 1]);
  }
  {
    std::unique_lock<std::mutex> lock(mutex);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(120), [&] { return finished == 4; }));
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    SCOPED_TRACE("stream " + std::to_string(i));
    const RequestResult& res = outs[i + 1].result;
    ASSERT_EQ(res.finish_reason, FinishReason::kLength) << res.error;
    // The third waited for a stream to end; by then the last holder's shift had taken the shared
    // blocks out of the prefix cache (their rows moved).
    EXPECT_EQ(res.stats.cached_tokens, i < 2 ? 48 : 0);
    int32_t shifts = 0;
    EXPECT_EQ(outs[i + 1].tokens, solo_tokens(*model, prompts[i], 4, &shifts));
    EXPECT_GE(shifts, 3);
  }
  EXPECT_EQ(service.metrics().kv_blocks_used, 0);
}

// A request whose n_keep leaves no window ends with an error, not a crash.
TEST(ContextShiftService, KeepWithoutRoomIsAnError) {
  std::shared_ptr<const Model> model = Model::load(test::shared_model("stories260K.gguf"));
  ServiceParams params;
  params.context.n_ctx = kCtx;
  params.context.n_seq_max = 1;
  InferenceService service(model, params);
  ServiceRequest r;
  r.tokens = {1, 400, 500};
  r.context_shift = true;
  r.n_keep = kCtx - 1;
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  RequestResult result;
  r.on_finish = [&](const RequestResult& res) {
    std::lock_guard<std::mutex> lock(mutex);
    result = res;
    done = true;
    cv.notify_all();
  };
  service.submit(std::move(r));
  std::unique_lock<std::mutex> lock(mutex);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return done; }));
  EXPECT_EQ(result.finish_reason, FinishReason::kError);
  EXPECT_NE(result.error.find("context shift"), std::string::npos) << result.error;
}

}  // namespace
}  // namespace edgellm
