// The KV prefix cache through the service: requests whose prompts share prefixes of different
// lengths (a partial block, exactly block-aligned, identical prompts, a prompt of exactly one
// block) are served with the cached prefix and yield exactly the tokens of the same request run
// alone with generate() on a fresh Context (no cache) — greedy, F32 KV, stories260K and
// tiny-zh-poems. The reused count is checked against an independent computation from the
// prompts and the KV the earlier requests left (prompt + decoded answer). Then a pool of a few
// blocks with many concurrent requests: evictions happen, no request exceeds the pool, each
// equals its solo run, and a request that can never fit fails with kOutOfMemory.
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/error.h"
#include "engine/context.h"
#include "engine/memory_plan.h"
#include "engine/sampler.h"
#include "generation/generate.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "service/inference_service.h"
#include "support/service_fixture.h"
#include "support/test_env.h"
#include "tokenizer/tokenizer.h"

namespace edgellm {
namespace {

constexpr int32_t kCtx = 256;
constexpr int32_t kMaxTokens = 12;

std::vector<int32_t> solo_tokens(const Model& model, const std::vector<int32_t>& prompt) {
  test::SoloParams sp;
  sp.n_ctx = kCtx;
  sp.generation.max_tokens = kMaxTokens;
  sp.generation.ignore_eog = true;
  return test::solo_greedy(model, nullptr, prompt, sp).tokens;
}

using test::Finishes;
using test::Outcome;

// Every answer has kMaxTokens tokens (end-of-generation ignored): the KV it leaves is known exactly.
ServiceRequest token_request(const std::vector<int32_t>& prompt, Outcome* out, Finishes* w) {
  ServiceRequest r = test::greedy_request(prompt, kMaxTokens);
  out->attach(r, {}, w);
  return r;
}

size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

// Prompts over one long base text: prefixes of every kind against block size T.
std::vector<std::vector<int32_t>> shared_prompts(const std::vector<int32_t>& base, int32_t T, int32_t other) {
  auto prefix = [&](int32_t n) { return std::vector<int32_t>(base.begin(), base.begin() + n); };
  auto with_tail = [&](int32_t n, int32_t tail) {
    std::vector<int32_t> p = prefix(n);
    for (int32_t i = 0; i < tail; ++i) p.push_back(other + i);
    return p;
  };
  return {
      prefix(3 * T + 5),      // cold
      prefix(3 * T + 5),      // identical: reuse 3 T (the 4th block was partial)
      with_tail(2 * T, 3),    // shares exactly 2 blocks
      prefix(2 * T),          // identical to a block-aligned prefix: reuse 2 T - 1 (shared partial copy)
      prefix(2 * T),          // again
      with_tail(T + 7, 9),    // shares one block and part of the next
      prefix(T),              // exactly one block
      with_tail(0, 20),       // nothing shared
      prefix(4 * T + 3),      // longer than anything before
  };
}

void run_sequential(const char* model_name, const std::string& text) {
  SCOPED_TRACE(model_name);
  std::shared_ptr<const Model> model = test::shared_service_model(model_name);
  const std::unique_ptr<Tokenizer> tok = Tokenizer::from_gguf(model->gguf());
  ServiceParams params;
  params.context.n_ctx = kCtx;
  params.context.n_seq_max = 2;
  params.context.kv_type = TensorType::F32;
  params.max_queued = 4;
  InferenceService service(model, params);
  const int32_t T = service.context_params().kv_block_tokens;
  const std::vector<int32_t> base = tok->encode(text, true, false);
  ASSERT_GE(static_cast<int32_t>(base.size()), 4 * T + 3) << "the base text is too short";
  const std::vector<std::vector<int32_t>> prompts = shared_prompts(base, T, tok->n_vocab() / 2);

  std::vector<std::vector<int32_t>> kv_left;  // what each finished request left in the KV
  uint64_t expect_cached_total = 0;
  uint64_t prompt_total = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    const std::vector<int32_t>& prompt = prompts[i];
    Outcome out;
    Finishes w;
    service.submit(token_request(prompt, &out, &w));
    ASSERT_TRUE(w.wait(1));
    ASSERT_EQ(out.result.finish_reason, FinishReason::kLength) << out.result.error;
    EXPECT_EQ(out.tokens, solo_tokens(*model, prompt)) << "differs from the solo run without cache";
    // Reference of the reuse: the longest common prefix with any earlier KV, in whole blocks,
    // at most prompt - 1 (the pool is large: nothing was evicted).
    size_t best = 0;
    for (const auto& kv : kv_left) best = std::max(best, common_prefix(prompt, kv));
    const int32_t n = static_cast<int32_t>(prompt.size());
    const int32_t expect = std::min<int32_t>(n - 1, static_cast<int32_t>(best) / T * T);
    EXPECT_EQ(out.result.stats.cached_tokens, expect);
    EXPECT_EQ(out.result.stats.prompt_tokens, n);
    expect_cached_total += static_cast<uint64_t>(expect);
    prompt_total += static_cast<uint64_t>(n);
    std::vector<int32_t> kv = prompt;  // the last sampled token is never decoded
    kv.insert(kv.end(), out.tokens.begin(), out.tokens.end() - 1);
    kv_left.push_back(kv);
  }
  const ServiceMetrics m = service.metrics();
  EXPECT_EQ(m.prompt_tokens_cached, expect_cached_total);
  EXPECT_EQ(m.prompt_tokens, prompt_total);
  EXPECT_NEAR(m.prefix_hit_rate(), static_cast<double>(expect_cached_total) / prompt_total, 1e-12);
  EXPECT_EQ(m.kv_blocks_used, 0);
  EXPECT_GT(m.kv_blocks_cached, 0);
  EXPECT_EQ(m.kv_blocks_used + m.kv_blocks_cached + m.kv_blocks_free, m.kv_blocks_total);
  const Json j = m.to_json();
  EXPECT_NE(j.find("prefix_hit_rate"), nullptr);
  EXPECT_NE(m.to_prometheus().find("edgellm_kv_blocks_cached "), std::string::npos);
}

const char* kStoryText =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the sun. One day, she saw a "
    "big red ball in the park. She ran to the ball and kicked it very hard. The ball flew over the trees and landed "
    "in the pond. Lily was sad, but then a friendly duck swam to the ball and pushed it back to her.";
const char* kPoemText =
    "床前明月光，疑是地上霜。举头望明月，低头思故乡。春眠不觉晓，处处闻啼鸟。夜来风雨声，花落知多少。白日依山尽，黄河入海流。"
    "欲穷千里目，更上一层楼。千山鸟飞绝，万径人踪灭。孤舟蓑笠翁，独钓寒江雪。";

TEST(PrefixCacheService, StoriesSequentialPrefixesEqualSoloRuns) { run_sequential("stories260K.gguf", kStoryText); }
TEST(PrefixCacheService, PoemsSequentialPrefixesEqualSoloRuns) { run_sequential("tiny-zh-poems.gguf", kPoemText); }

// A pool of 12 blocks (3 requests' worth; less than one n_ctx sequence), 4 sequences, 16
// requests over 4 prefix families at once: admission makes requests wait for blocks, allocation evicts cached blocks, and every
// request still equals its solo run; the blocks in use never exceed the pool.
TEST(PrefixCacheService, SmallPoolConcurrentRequestsEvictAndStayExact) {
  std::shared_ptr<const Model> model = test::shared_service_model("stories260K.gguf");
  const std::unique_ptr<Tokenizer> tok = Tokenizer::from_gguf(model->gguf());
  ServiceParams params;
  params.context.n_ctx = kCtx;
  params.context.n_seq_max = 4;
  params.context.kv_type = TensorType::F32;
  const size_t block_bytes = KvCache::block_bytes(kv_cache_params(model->hparams(), params.context));
  params.context.kv_budget_bytes = 12 * block_bytes + block_bytes / 2;  // 12 whole blocks
  params.max_queued = 32;
  InferenceService service(model, params);
  ASSERT_EQ(service.metrics().kv_blocks_total, 12);
  EXPECT_EQ(service.metrics().kv_pool_bytes, 12 * block_bytes);
  const int32_t T = params.context.kv_block_tokens;

  const std::vector<int32_t> base = tok->encode(kStoryText, true, false);
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 16; ++i) {
    const int32_t family = i % 4;
    std::vector<int32_t> p(base.begin(), base.begin() + 2 * T + (i * 5) % T);
    p[1] = 300 + family;  // 4 families that share nothing beyond BOS
    if (i >= 8) p.push_back(400 + i);
    prompts.push_back(p);
  }
  std::vector<Outcome> outs(prompts.size() + 1);
  Finishes w;
  for (size_t i = 0; i < prompts.size(); ++i) service.submit(token_request(prompts[i], &outs[i], &w));
  // One request that can never fit: more blocks than the pool.
  std::vector<int32_t> huge(base.begin(), base.begin() + 20);
  ServiceRequest big = token_request(huge, &outs.back(), &w);
  big.generation.max_tokens = 24 * T;
  service.submit(std::move(big));
  int32_t max_used = 0;
  for (;;) {
    const ServiceMetrics m = service.metrics();
    max_used = std::max(max_used, m.kv_blocks_used);
    EXPECT_LE(m.kv_blocks_used + m.kv_blocks_cached, m.kv_blocks_total);
    if (w.wait(static_cast<int>(outs.size()), std::chrono::milliseconds(2))) break;
  }
  EXPECT_LE(max_used, 12);
  EXPECT_EQ(outs.back().result.finish_reason, FinishReason::kError);
  EXPECT_EQ(outs.back().result.error_code, ErrorCode::kOutOfMemory);
  for (size_t i = 0; i < prompts.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    ASSERT_EQ(outs[i].result.finish_reason, FinishReason::kLength) << outs[i].result.error;
    EXPECT_EQ(outs[i].tokens, solo_tokens(*model, prompts[i]));
  }
  const ServiceMetrics m = service.metrics();
  EXPECT_GT(m.kv_evictions, 0u) << "the pool never filled; the test does not test eviction";
  EXPECT_GT(m.prompt_tokens_cached, 0u) << "no request hit the cache";
}

// Admission counts a block shared with running requests once (InferenceService::committed_blocks):
// 4 requests with a 96-token system prompt (6 full blocks, cached by a first request) and their
// own 5-token questions each reserve 8 blocks (prompt + 12 answer tokens); a 12-block pool holds
// one such reservation, but the 6 shared blocks plus 2 of each request's own fit 3 at a time.
// Counted by reservations alone they ran one after another.
TEST(PrefixCacheService, RequestsSharingASystemPromptRunSideBySide) {
  std::shared_ptr<const Model> model = test::shared_service_model("stories260K.gguf");
  const std::unique_ptr<Tokenizer> tok = Tokenizer::from_gguf(model->gguf());
  ServiceParams params;
  params.context.n_ctx = kCtx;
  params.context.n_seq_max = 4;
  params.context.kv_type = TensorType::F32;
  ASSERT_EQ(params.context.kv_block_tokens, 16);
  params.context.kv_budget_bytes = 12 * KvCache::block_bytes(kv_cache_params(model->hparams(), params.context));
  params.max_queued = 8;
  InferenceService service(model, params);
  ASSERT_EQ(service.metrics().kv_blocks_total, 12);

  std::vector<int32_t> system = tok->encode(kStoryText, true, false);
  for (int32_t i = 0; static_cast<int32_t>(system.size()) < 96; ++i) system.push_back(200 + i);
  system.resize(96);
  Finishes w;
  std::vector<Outcome> outs(5);
  {
    std::vector<int32_t> warm = system;
    warm.push_back(7);
    ServiceRequest r = token_request(warm, &outs[0], &w);
    r.generation.max_tokens = 1;
    service.submit(std::move(r));
    ASSERT_TRUE(w.wait(1, std::chrono::seconds(60)));
  }
  std::vector<std::vector<int32_t>> prompts;
  std::mutex active_mutex;  // the scheduler thread counts, the test reads at the end
  int active = 0, max_active = 0;
  std::vector<char> started(4, 0);
  service.pause();  // all four queued before admission looks at them (none finishes first)
  for (int i = 0; i < 4; ++i) {
    std::vector<int32_t> p = system;
    for (int j = 0; j < 5; ++j) p.push_back(300 + 10 * i + j);
    prompts.push_back(p);
    ServiceRequest r = token_request(p, &outs[static_cast<size_t>(i) + 1], &w);
    auto on_token = r.on_token;
    r.on_token = [on_token, i, &started, &active_mutex, &active, &max_active](const TokenEvent& ev) {
      {
        std::lock_guard<std::mutex> lock(active_mutex);
        if (ev.token >= 0 && !started[static_cast<size_t>(i)]) {
          started[static_cast<size_t>(i)] = 1;
          max_active = std::max(max_active, ++active);
        }
      }
      return on_token(ev);
    };
    auto on_finish = r.on_finish;
    r.on_finish = [on_finish, &active_mutex, &active](RequestResult& res) {
      {
        std::lock_guard<std::mutex> lock(active_mutex);
        --active;
      }
      on_finish(res);
    };
    service.submit(std::move(r));
  }
  service.resume();
  ASSERT_TRUE(w.wait(5, std::chrono::seconds(60)));
  for (size_t i = 0; i < prompts.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    ASSERT_EQ(outs[i + 1].result.finish_reason, FinishReason::kLength) << outs[i + 1].result.error;
    EXPECT_EQ(outs[i + 1].tokens, solo_tokens(*model, prompts[i]));
    EXPECT_EQ(outs[i + 1].result.stats.cached_tokens, 96);
  }
  std::lock_guard<std::mutex> lock(active_mutex);
  EXPECT_EQ(max_active, 3) << "requests sharing the system prompt's blocks ran side by side";
}

}  // namespace
}  // namespace edgellm

namespace edgellm {
namespace {

// The pool from a fraction of the available memory: a large fraction is capped at twice the
// full sequences, a tiny one is a clear out-of-KV-memory error, an out-of-range one invalid.
TEST(KvBudget, FractionOfAvailableMemory) {
  std::shared_ptr<const Model> model = test::shared_service_model("stories260K.gguf");
  ContextParams cp;
  cp.n_ctx = 64;
  cp.n_seq_max = 2;
  cp.kv_budget_fraction = 1.0;
  {
    Context ctx(*model, cp);
    EXPECT_EQ(ctx.kv_blocks_total(), 2 * 2 * (64 / cp.kv_block_tokens));  // the cap: this model's KV is tiny
    EXPECT_EQ(ctx.params().kv_budget_bytes, ctx.kv_cache().pool().total_bytes());
  }
  cp.kv_budget_fraction = 1e-15;
  try {
    Context ctx(*model, cp);
    FAIL() << "expected kOutOfMemory";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfMemory);
    EXPECT_NE(std::string(e.what()).find("out of KV memory"), std::string::npos) << e.what();
  }
  cp.kv_budget_fraction = -0.5;
  EXPECT_THROW(Context(*model, cp), Error);
}

}  // namespace
}  // namespace edgellm
