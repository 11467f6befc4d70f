// Decoders as embedders (Qwen3-Embedding's way: the last token's normed final state). The
// hidden state an embeddings Context returns is checked against an independent relation: the
// ordinary Context's logits for the same prompt must be the output head times it (the head
// multiplied here in double from the GGUF tensor). Pooling, batching and chunking on top.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "core/error.h"
#include "engine/batch.h"
#include "engine/context.h"
#include "engine/embedder.h"
#include "engine/pooling.h"
#include "kernels/kernels.h"
#include "model/model.h"
#include "support/synthetic_model.h"

namespace edgellm {
namespace {

test::SyntheticModelSpec qwen3_spec() {
  test::SyntheticModelSpec s;
  s.arch = "qwen3";
  s.n_vocab = 300;
  s.n_embd = 256;
  s.n_layer = 2;
  s.n_ff = 512;
  s.n_head = 8;
  s.n_head_kv = 4;
  s.head_dim = 64;  // n_head * head_dim != n_embd, as in the real qwen3
  s.tied = true;
  s.write_vocab = true;
  s.seed = 5;
  return s;
}

std::vector<std::vector<int32_t>> prompts() {
  return {
      {1, 17, 42, 99, 7, 250, 3, 3, 12},
      {1, 5},
      {1, 200, 201, 202, 203, 204, 205, 206, 207, 208, 209, 210, 211, 212, 213, 214, 215, 216, 217, 218, 219, 220, 221},
      {1}};
}

std::vector<EmbedInput> inputs() {
  std::vector<EmbedInput> in;
  for (const auto& p : prompts()) in.push_back(EmbedInput{p, {}});
  return in;
}

TEST(DecoderEmbeddings, LastTokenStateIsWhatTheHeadMultiplies) {
  const auto model = Model::from_gguf(test::synthetic_model(qwen3_spec()));
  const HParams& hp = model->hparams();
  Embedder emb(*model, EmbedderParams{});
  EXPECT_EQ(emb.default_pooling(), PoolingType::kLast);
  std::vector<float> h;
  emb.embed(inputs(), PoolingType::kLast, /*normalize=*/-1, h);
  ASSERT_EQ(h.size(), prompts().size() * static_cast<size_t>(hp.n_embd));

  // The head (token_embd, tied) as doubles from the file.
  const gguf::TensorInfo* head = model->gguf().find_tensor("token_embd.weight");
  ASSERT_NE(head, nullptr);
  std::vector<float> row(static_cast<size_t>(hp.n_embd));
  double worst = 0, scale = 0;
  for (size_t p = 0; p < prompts().size(); ++p) {
    ContextParams cp;
    cp.n_ctx = 64;
    Context ctx(*model, cp);
    Batch b;
    b.add_sequence(0, prompts()[p], 0);
    ctx.decode(b);
    const float* logits = ctx.logits(0);
    for (int32_t v = 0; v < hp.n_vocab; ++v) {
      kernels::dequantize_row(head->type, head->data + static_cast<size_t>(v) * head->row_bytes(), row.data(),
                              hp.n_embd);
      double dot = 0;
      for (int32_t i = 0; i < hp.n_embd; ++i)
        dot += static_cast<double>(row[static_cast<size_t>(i)]) * h[p * hp.n_embd + i];
      worst = std::max(worst, std::abs(dot - logits[v]));
      scale = std::max(scale, std::abs(dot));
    }
  }
  std::printf("[ measured ] logits - head . embedding: worst %.3g (largest logit %.3g)\n", worst, scale);
  EXPECT_LT(worst, 1e-6 * scale);  // measured 3.9e-7 for logits up to 3.7: float rounding of 256-long dots
}

TEST(DecoderEmbeddings, MeanIsTheAverageOfTheTokenStates) {
  const auto model = Model::from_gguf(test::synthetic_model(qwen3_spec()));
  const int32_t E = model->hparams().n_embd;
  Embedder emb(*model, EmbedderParams{});
  std::vector<float> tokens, mean;
  emb.embed(inputs(), PoolingType::kNone, -1, tokens);
  emb.embed(inputs(), PoolingType::kMean, -1, mean);
  size_t row = 0;
  for (size_t p = 0; p < prompts().size(); ++p) {
    const size_t n = prompts()[p].size();
    for (int32_t i = 0; i < E; ++i) {
      double sum = 0;
      for (size_t t = 0; t < n; ++t) sum += tokens[(row + t) * E + i];
      EXPECT_NEAR(mean[p * E + i], sum / static_cast<double>(n), 1e-6) << p << " " << i;
    }
    // The last token's row of pooling none is pooling last's vector; cls is the first row.
    std::vector<float> last, first;
    emb.embed({inputs()[p]}, PoolingType::kLast, -1, last);
    emb.embed({inputs()[p]}, PoolingType::kCls, -1, first);
    EXPECT_TRUE(std::equal(last.begin(), last.end(), tokens.begin() + static_cast<int64_t>((row + n - 1) * E)));
    EXPECT_TRUE(std::equal(first.begin(), first.end(), tokens.begin() + static_cast<int64_t>(row * E)));
    row += n;
  }
}

TEST(DecoderEmbeddings, BatchedEqualsOneByOneAndChunkingDoesNotMatter) {
  const auto model = Model::from_gguf(test::synthetic_model(qwen3_spec()));
  Embedder together(*model, EmbedderParams{});
  std::vector<float> batched;
  together.embed(inputs(), PoolingType::kLast, 2, batched);
  EXPECT_EQ(together.forwards(), 1);
  std::vector<float> solo;
  for (const auto& in : inputs()) together.embed({in}, PoolingType::kLast, 2, solo);
  EXPECT_EQ(batched, solo);
  // Forwards of 8 tokens: the 23-token prompt runs in three chunks of its one decode call.
  EmbedderParams small;
  small.n_batch = 8;
  small.n_ctx = 32;
  Embedder chunked(*model, small);
  std::vector<float> pieces;
  chunked.embed(inputs(), PoolingType::kLast, 2, pieces);
  EXPECT_GT(chunked.forwards(), 1);
  ASSERT_EQ(pieces.size(), batched.size());
  double worst = 0;
  for (size_t i = 0; i < pieces.size(); ++i)
    worst = std::max(worst, static_cast<double>(std::abs(pieces[i] - batched[i])));
  std::printf("[ measured ] 8-token chunks vs one chunk: worst difference %.3g\n", worst);
  EXPECT_EQ(worst, 0.0);  // prompt attention keeps each query's sums in order however chunked
}

TEST(DecoderEmbeddings, EmbeddingsContextRefusesLogitsAndTheOtherWayRound) {
  const auto model = Model::from_gguf(test::synthetic_model(qwen3_spec()));
  ContextParams cp;
  cp.n_ctx = 32;
  cp.embeddings = true;
  Context e(*model, cp);
  Batch b;
  b.add_sequence(0, {1, 2, 3}, 0);
  e.decode(b);
  EXPECT_NE(e.embeddings(0), nullptr);
  EXPECT_THROW(e.logits(0), Error);
  cp.embeddings = false;
  Context l(*model, cp);
  l.decode(b);
  EXPECT_THROW(l.embeddings(0), Error);
  // Rank pooling needs a classification head this model does not have.
  Embedder emb(*model, EmbedderParams{});
  std::vector<float> out;
  EXPECT_THROW(emb.embed(inputs(), PoolingType::kRank, 2, out), Error);
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace edgellm
