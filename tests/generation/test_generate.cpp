// The generation loop on the real stories260K model: greedy output against the reference file,
// stop strings spanning tokens, every finish reason, prompt limits, continuation of a sequence.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/json.h"
#include "engine/context.h"
#include "generation/generate.h"
#include "engine/sampler.h"
#include "model/model.h"
#include "support/greedy_reference.h"
#include "support/test_env.h"
#include "tokenizer/tokenizer.h"

namespace edgellm {
namespace {

using Reference = test::GreedyReference;

std::vector<int32_t> prefix(const std::vector<int32_t>& v, size_t n) {
  return std::vector<int32_t>(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(std::min(n, v.size())));
}

class GeneratorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = Model::load(test::shared_model("stories260K.gguf")).release();
    tokenizer_ = Tokenizer::from_gguf(model_->gguf()).release();
    refs_ = new std::vector<Reference>(test::load_greedy_references("stories260K-greedy.jsonl"));
  }
  static void TearDownTestSuite() {
    delete refs_;
    delete tokenizer_;
    delete model_;
  }

  // F32 KV so that greedy ids are exactly the reference engine's (it ran in F32).
  static std::unique_ptr<Context> make_context(int32_t n_ctx = 256, int32_t n_batch = 512) {
    ContextParams cp;
    cp.n_ctx = n_ctx;
    cp.n_batch = n_batch;
    cp.n_threads = 1;
    cp.kv_type = TensorType::F32;
    return std::make_unique<Context>(*model_, cp);
  }
  static Sampler greedy() {
    SamplerParams p;
    p.temperature = 0.0f;
    return Sampler(p, model_->hparams().n_vocab);
  }
  static const Reference& ref(size_t i) { return (*refs_)[i]; }

  static Model* model_;
  static Tokenizer* tokenizer_;
  static std::vector<Reference>* refs_;
};

Model* GeneratorTest::model_ = nullptr;
Tokenizer* GeneratorTest::tokenizer_ = nullptr;
std::vector<Reference>* GeneratorTest::refs_ = nullptr;

TEST_F(GeneratorTest, GreedyIdsMatchTheReference) {
  ASSERT_FALSE(refs_->empty());
  for (size_t i = 0; i < refs_->size(); ++i) {
    auto ctx = make_context();
    Sampler s = greedy();
    GenerationParams gp;
    gp.max_tokens = static_cast<int32_t>(ref(i).output.size());
    const GenerationResult r = generate(*ctx, s, nullptr, ref(i).prompt, gp);
    EXPECT_EQ(r.tokens, ref(i).output) << "prompt " << i;
    EXPECT_EQ(r.finish_reason, FinishReason::kLength);
    EXPECT_TRUE(r.text.empty());  // no tokenizer: ids only
  }
}

TEST_F(GeneratorTest, StreamedTextMatchesTheReferenceText) {
  auto ctx = make_context();
  Sampler s = greedy();
  GenerationParams gp;
  gp.max_tokens = static_cast<int32_t>(ref(0).output.size());
  std::string streamed;
  int calls = 0;
  GenerationCallbacks cb;
  cb.on_token = [&](int32_t, std::string_view t) {
    streamed += t;
    ++calls;
    return true;
  };
  const GenerationResult r = generate(*ctx, s, tokenizer_, ref(0).prompt, gp, cb);
  EXPECT_EQ(r.tokens, ref(0).output);
  EXPECT_EQ(r.text, ref(0).text);
  EXPECT_EQ(streamed, r.text);
  EXPECT_GE(calls, static_cast<int>(r.tokens.size()));
}

TEST_F(GeneratorTest, StopStringSpanningTokensIsNeverEmitted) {
  // "med Li" starts inside " named" and ends inside " Lily": it spans a token boundary.
  const std::string stop = "med Li";
  const size_t at = ref(0).text.find(stop);
  ASSERT_NE(at, std::string::npos);
  // The first token count whose text contains the whole stop string (an independent decode).
  size_t n_needed = 0;
  for (size_t n = 1; n <= ref(0).output.size(); ++n) {
    if (tokenizer_->decode(prefix(ref(0).output, n)).find(stop) != std::string::npos) {
      n_needed = n;
      break;
    }
  }
  ASSERT_GT(n_needed, 1u);
  ASSERT_EQ(tokenizer_->decode(prefix(ref(0).output, n_needed - 1)).find(stop), std::string::npos);

  auto ctx = make_context();
  Sampler s = greedy();
  GenerationParams gp;
  gp.max_tokens = 200;
  gp.stop = {"never appears", stop};
  std::string streamed;
  GenerationCallbacks cb;
  cb.on_token = [&](int32_t, std::string_view t) {
    streamed += t;
    // Every streamed prefix stays inside the text before the stop string: nothing of "med Li"
    // leaks out while it is still undecided.
    EXPECT_LE(streamed.size(), at);
    EXPECT_EQ(ref(0).text.compare(0, streamed.size(), streamed), 0);
    return true;
  };
  const GenerationResult r = generate(*ctx, s, tokenizer_, ref(0).prompt, gp, cb);
  EXPECT_EQ(r.finish_reason, FinishReason::kStop);
  EXPECT_EQ(r.stop_string, stop);
  EXPECT_EQ(r.text, ref(0).text.substr(0, at));
  EXPECT_EQ(streamed, r.text);
  EXPECT_EQ(r.tokens, prefix(ref(0).output, n_needed));
}

TEST_F(GeneratorTest, MaxTokensAndFullContextFinishWithLength) {
  {
    auto ctx = make_context();
    Sampler s = greedy();
    GenerationParams gp;
    gp.max_tokens = 7;
    const GenerationResult r = generate(*ctx, s, tokenizer_, ref(0).prompt, gp);
    EXPECT_EQ(r.finish_reason, FinishReason::kLength);
    EXPECT_EQ(r.tokens, prefix(ref(0).output, 7));
    EXPECT_EQ(r.text, tokenizer_->decode(r.tokens));
  }
  {
    // n_ctx 16, prompt 5: tokens decoded at positions 5..15 plus the last one sampled from
    // position 15's logits, which has no position left: 16 - 5 + 1 tokens.
    auto ctx = make_context(16);
    Sampler s = greedy();
    GenerationParams gp;  // no max_tokens: runs until the context is full
    const GenerationResult r = generate(*ctx, s, tokenizer_, ref(0).prompt, gp);
    EXPECT_EQ(r.finish_reason, FinishReason::kLength);
    EXPECT_EQ(r.tokens, prefix(ref(0).output, 12));
  }
}

TEST_F(GeneratorTest, ChunkedPrefillGivesTheSameTokens) {
  auto ctx = make_context(256, 3);  // 12-token prompt in chunks of 3, 3, 3, 3
  Sampler s = greedy();
  GenerationParams gp;
  gp.max_tokens = 40;
  const GenerationResult r = generate(*ctx, s, nullptr, ref(1).prompt, gp);
  EXPECT_EQ(r.tokens, prefix(ref(1).output, 40));
  EXPECT_EQ(r.timings.prompt_tokens, static_cast<int32_t>(ref(1).prompt.size()));
}

TEST_F(GeneratorTest, CancellationByFlagAndByCallback) {
  {
    auto ctx = make_context();
    Sampler s = greedy();
    std::atomic<bool> cancel{false};
    GenerationCallbacks cb;
    int n = 0;
    cb.on_token = [&](int32_t, std::string_view) {
      if (++n == 3) cancel.store(true);
      return true;
    };
    cb.cancel = &cancel;
    const GenerationResult r = generate(*ctx, s, tokenizer_, ref(0).prompt, GenerationParams{}, cb);
    EXPECT_EQ(r.finish_reason, FinishReason::kCancelled);
    EXPECT_EQ(r.tokens, prefix(ref(0).output, 3));
  }
  {
    auto ctx = make_context();
    Sampler s = greedy();
    GenerationCallbacks cb;
    int n = 0;
    cb.on_token = [&](int32_t, std::string_view) { return ++n < 4; };
    const GenerationResult r = generate(*ctx, s, tokenizer_, ref(0).prompt, GenerationParams{}, cb);
    EXPECT_EQ(r.finish_reason, FinishReason::kCancelled);
    EXPECT_EQ(r.tokens.size(), 4u);
  }
  {
    // Cancelled before anything ran: no tokens at all.
    auto ctx = make_context();
    Sampler s = greedy();
    std::atomic<bool> cancel{true};
    GenerationCallbacks cb;
    cb.cancel = &cancel;
    const GenerationResult r = generate(*ctx, s, tokenizer_, ref(0).prompt, GenerationParams{}, cb);
    EXPECT_EQ(r.finish_reason, FinishReason::kCancelled);
    EXPECT_TRUE(r.tokens.empty());
  }
}

TEST_F(GeneratorTest, EndOfGenerationTokenStops) {
  SamplerParams p;
  p.temperature = 0.0f;
  p.logit_bias = {{tokenizer_->eos(), 1000.0f}};  // force EOS at once
  auto ctx = make_context();
  Sampler s(p, model_->hparams().n_vocab);
  int logit_rows = 0;
  GenerationCallbacks cb;
  cb.on_logits = [&](const float*, int32_t) { ++logit_rows; };
  const GenerationResult r = generate(*ctx, s, tokenizer_, ref(0).prompt, GenerationParams{}, cb);
  EXPECT_EQ(r.finish_reason, FinishReason::kStop);
  EXPECT_EQ(r.eog_token, tokenizer_->eos());
  EXPECT_TRUE(r.tokens.empty());
  EXPECT_TRUE(r.text.empty());
  EXPECT_EQ(logit_rows, 1);  // the step that sampled EOS was still a sampled position

  // ignore_eog: end-of-generation tokens are never sampled, even when forced (llama.cpp's
  // ignore_eos). Reference: a run that bans them with a -inf logit bias instead. (Before, EOS
  // was passed through and this model then repeated it: 3 empty EOS tokens.)
  auto ctx2 = make_context();
  Sampler s2(p, model_->hparams().n_vocab);
  GenerationParams gp;
  gp.ignore_eog = true;
  gp.max_tokens = 20;
  const GenerationResult r2 = generate(*ctx2, s2, tokenizer_, ref(0).prompt, gp);
  EXPECT_EQ(r2.finish_reason, FinishReason::kLength);
  ASSERT_EQ(r2.tokens.size(), 20u);
  for (const int32_t id : r2.tokens) EXPECT_FALSE(tokenizer_->is_eog(id)) << id;
  EXPECT_FALSE(r2.text.empty());

  SamplerParams banned;
  banned.temperature = 0.0f;
  for (const int32_t id : tokenizer_->eog_ids()) banned.logit_bias.emplace_back(id, -INFINITY);
  auto ctx3 = make_context();
  Sampler s3(banned, model_->hparams().n_vocab);
  GenerationParams gp3;
  gp3.max_tokens = 20;
  EXPECT_EQ(generate(*ctx3, s3, tokenizer_, ref(0).prompt, gp3).tokens, r2.tokens);
}

TEST_F(GeneratorTest, LogitsCallbackSeesEverySampledPosition) {
  auto ctx = make_context();
  Sampler s = greedy();
  std::vector<int32_t> argmaxes;
  GenerationCallbacks cb;
  cb.on_logits = [&](const float* l, int32_t n) {
    argmaxes.push_back(static_cast<int32_t>(std::max_element(l, l + n) - l));
  };
  GenerationParams gp;
  gp.max_tokens = 20;
  const GenerationResult r = generate(*ctx, s, nullptr, ref(2).prompt, gp, cb);
  EXPECT_EQ(argmaxes, r.tokens);
  EXPECT_EQ(r.timings.prompt_tokens, static_cast<int32_t>(ref(2).prompt.size()));
  EXPECT_EQ(r.timings.decode_tokens, 19);
  EXPECT_GT(r.timings.prefill_seconds, 0.0);
  EXPECT_GE(r.timings.ttft_seconds, r.timings.prefill_seconds);
  EXPECT_GT(r.timings.decode_seconds, 0.0);
}

TEST_F(GeneratorTest, ASecondCallContinuesTheSequence) {
  auto ctx = make_context();
  Sampler s = greedy();
  GenerationParams gp;
  gp.max_tokens = 10;
  const GenerationResult a = generate(*ctx, s, nullptr, ref(0).prompt, gp);
  ASSERT_EQ(a.tokens, prefix(ref(0).output, 10));
  // The last sampled token was never decoded: it is the next call's prompt.
  const GenerationResult b = generate(*ctx, s, nullptr, {a.tokens.back()}, gp);
  EXPECT_EQ(b.tokens, std::vector<int32_t>(ref(0).output.begin() + 10, ref(0).output.begin() + 20));
}

TEST_F(GeneratorTest, PromptLimitsAreCheckedUpFront) {
  std::vector<int32_t> long_prompt = ref(1).prompt;  // 12 tokens, BOS first
  for (int i = 0; i < 2; ++i) long_prompt.insert(long_prompt.end(), ref(1).prompt.begin() + 1, ref(1).prompt.end());
  ASSERT_GT(long_prompt.size(), 16u);
  auto ctx = make_context(16);
  Sampler s = greedy();
  GenerationParams gp;
  gp.max_tokens = 4;
  try {
    (void)generate(*ctx, s, tokenizer_, long_prompt, gp);
    FAIL() << "an oversized prompt must be rejected";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kContextFull);
    EXPECT_NE(std::string(e.what()).find(std::to_string(long_prompt.size())), std::string::npos) << e.what();
  }
  EXPECT_EQ(ctx->seq_length(0), 0);  // nothing was run

  gp.truncate_prompt = true;
  const GenerationResult r = generate(*ctx, s, tokenizer_, long_prompt, gp);
  EXPECT_EQ(r.finish_reason, FinishReason::kLength);
  EXPECT_EQ(r.tokens.size(), 4u);
  EXPECT_EQ(r.timings.prompt_tokens, 12);  // 16 free positions minus room for the 4 tokens
  EXPECT_EQ(r.prompt_tokens_dropped, static_cast<int32_t>(long_prompt.size()) - 12);

  auto ctx2 = make_context();
  EXPECT_THROW((void)generate(*ctx2, s, tokenizer_, {}, GenerationParams{}), Error);
  EXPECT_THROW((void)generate(*ctx2, s, tokenizer_, {1, 99999}, GenerationParams{}), Error);
  GenerationParams stop_without_tokenizer;
  stop_without_tokenizer.stop = {"x"};
  EXPECT_THROW((void)generate(*ctx2, s, nullptr, {1}, stop_without_tokenizer), Error);
  Sampler wrong_vocab(SamplerParams{}, 7);
  EXPECT_THROW((void)generate(*ctx2, wrong_vocab, tokenizer_, {1}, GenerationParams{}), Error);
}

TEST_F(GeneratorTest, SeededSamplingIsReproducible) {
  auto run = [&](uint64_t seed) {
    SamplerParams p;
    p.seed = seed;
    auto ctx = make_context();
    Sampler s(p, model_->hparams().n_vocab);
    GenerationParams gp;
    gp.max_tokens = 50;
    gp.ignore_eog = true;
    return generate(*ctx, s, tokenizer_, ref(0).prompt, gp).tokens;
  };
  const auto a = run(123);
  EXPECT_EQ(a.size(), 50u);
  EXPECT_EQ(a, run(123));
  EXPECT_NE(a, run(124));
}

// Chinese text: characters span several byte tokens, so pieces arrive incomplete and the
// streaming decoder must hold them; two of the references end early on EOS.
TEST(GeneratorZh, GreedyTextAndEndOfTextMatchTheReference) {
  const auto model = Model::load(test::shared_model("tiny-zh-poems.gguf"));
  const auto tokenizer = Tokenizer::from_gguf(model->gguf());
  const std::vector<Reference> refs = test::load_greedy_references("tiny-zh-poems-greedy.jsonl");
  ASSERT_FALSE(refs.empty());
  int ended_on_eos = 0;
  for (size_t i = 0; i < refs.size(); ++i) {
    ContextParams cp;
    cp.n_ctx = 256;
    cp.n_threads = 1;
    cp.kv_type = TensorType::F32;
    Context ctx(*model, cp);
    SamplerParams sp;
    sp.temperature = 0.0f;
    Sampler s(sp, model->hparams().n_vocab);
    GenerationParams gp;
    gp.max_tokens = 100;  // the reference's limit
    std::string streamed;
    GenerationCallbacks cb;
    cb.on_token = [&](int32_t, std::string_view t) {
      streamed += t;
      return true;
    };
    const GenerationResult r = generate(ctx, s, tokenizer.get(), refs[i].prompt, gp, cb);
    EXPECT_EQ(r.tokens, refs[i].output) << "prompt " << i;
    EXPECT_EQ(r.text, refs[i].text) << "prompt " << i;
    EXPECT_EQ(streamed, r.text);
    if (refs[i].output.size() < 100) {
      ++ended_on_eos;
      EXPECT_EQ(r.finish_reason, FinishReason::kStop);
      EXPECT_TRUE(tokenizer->is_eog(r.eog_token));
    } else {
      EXPECT_EQ(r.finish_reason, FinishReason::kLength);
    }
  }
  EXPECT_GT(ended_on_eos, 0);
}

}  // namespace
}  // namespace edgellm
