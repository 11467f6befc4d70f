// The Embedder on BERT encoders against a naive BERT written here: plain loops in double over
// weights dequantized from the GGUF tensors themselves (kernels::dequantize_row, tested on its
// own by the kernel tests), bidirectional attention per sequence, LayerNorm, GELU with std::erf,
// pooling and normalisation from their definitions. Synthetic models of real shapes
// (bge-small-en: 384 wide, 12 heads of 32, FFN 1536, CLS pooling; all-MiniLM-L6: mean pooling;
// a ms-marco MiniLM cross-encoder with a classification head), the real bge vocabulary, F32 /
// F16 / Q8_0 / Q4_0 weights.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/fp16.h"
#include "engine/embedder.h"
#include "engine/pooling.h"
#include "kernels/kernels.h"
#include "model/model.h"
#include "support/synthetic_model.h"
#include "support/test_env.h"
#include "tokenizer/tokenizer.h"

namespace edgellm {
namespace {

// --------------------------------------------------------------------------- the naive BERT
using Vec = std::vector<double>;

struct NaiveBert {
  const Model& m;
  // Round every matmul input to int8 blocks as the engine's activations are for Q8_0 / Q4_0
  // weights (written here from ggml's Q8_0 definition: per 32 values d = max|x| / 127, code =
  // round(x / d), the value code x d rounded to F16).
  bool q8_inputs = false;

  // Row r of a matrix tensor as doubles, from the GGUF tensor (the engine may have repacked its
  // own view of the weights).
  Vec row(const WeightView& w, int64_t r) const {
    const gguf::TensorInfo* t = m.gguf().find_tensor(std::string(w.name));
    std::vector<float> f(static_cast<size_t>(w.n_in));
    kernels::dequantize_row(t->type, t->data + static_cast<size_t>(r) * t->row_bytes(), f.data(), w.n_in);
    return Vec(f.begin(), f.end());
  }
  // [n_out][n_in]
  std::vector<Vec> dense(const WeightView& w) const {
    std::vector<Vec> out;
    for (int64_t r = 0; r < w.n_out; ++r) out.push_back(row(w, r));
    return out;
  }
  static Vec vec(const VectorView& v, int64_t n) {
    return v.present() ? Vec(v.data, v.data + v.n) : Vec(static_cast<size_t>(n), 0.0);
  }
  static Vec q8_round(const Vec& x) {
    Vec r = x;
    for (size_t b = 0; b + 32 <= r.size(); b += 32) {
      float amax = 0;
      for (size_t i = b; i < b + 32; ++i) amax = std::max(amax, std::fabs(static_cast<float>(r[i])));
      const float d = amax / 127.0f;
      const float id = d != 0 ? 1.0f / d : 0.0f;
      // The codes from the float scale, the value from its F16 rounding (kernels: BlockQ8_0 d).
      const double d16 = fp16_to_fp32(fp32_to_fp16(d));
      for (size_t i = b; i < b + 32; ++i) r[i] = std::round(static_cast<float>(r[i]) * id) * d16;
    }
    return r;
  }
  Vec matvec(const std::vector<Vec>& w, const Vec& x_in, const Vec& b) const {
    const Vec x = q8_inputs ? q8_round(x_in) : x_in;
    Vec y(w.size());
    for (size_t r = 0; r < w.size(); ++r) {
      double s = b[r];
      for (size_t c = 0; c < x.size(); ++c) s += w[r][c] * x[c];
      y[r] = s;
    }
    return y;
  }
  static void layer_norm(Vec& x, const Vec& w, const Vec& b, double eps) {
    double mean = 0;
    for (double v : x) mean += v;
    mean /= static_cast<double>(x.size());
    double var = 0;
    for (double v : x) var += (v - mean) * (v - mean);
    var /= static_cast<double>(x.size());
    for (size_t i = 0; i < x.size(); ++i) x[i] = (x[i] - mean) / std::sqrt(var + eps) * w[i] + b[i];
  }

  // Final hidden states [n][E] of each sequence (tokens, types).
  std::vector<std::vector<Vec>> forward(const std::vector<EmbedInput>& inputs) const {
    const HParams& hp = m.hparams();
    const int64_t E = hp.n_embd, hd = hp.head_dim;
    const double eps = hp.norm_eps;
    std::vector<std::vector<Vec>> xs;
    for (const EmbedInput& in : inputs) {
      std::vector<Vec> x;
      for (size_t i = 0; i < in.tokens.size(); ++i) {
        Vec e = row(m.token_embd(), in.tokens[i]);
        const Vec p = row(m.position_embd(), static_cast<int64_t>(i));
        const Vec ty = row(m.token_types(), in.types.empty() ? 0 : in.types[i]);
        for (int64_t c = 0; c < E; ++c) e[c] += p[c] + ty[c];
        layer_norm(e, vec(m.embd_norm(), E), vec(m.embd_norm_b(), E), eps);
        x.push_back(std::move(e));
      }
      xs.push_back(std::move(x));
    }
    for (int il = 0; il < hp.n_layer; ++il) {  // layer by layer: one layer's matrices at a time
      const LayerWeights& L = m.layer(il);
      const auto wq = dense(L.wq), wk = dense(L.wk), wv = dense(L.wv), wo = dense(L.wo);
      const auto wu = dense(L.ffn_up), wd = dense(L.ffn_down);
      for (auto& x : xs) {
        const size_t T = x.size();
        std::vector<Vec> q(T), k(T), v(T);
        for (size_t t = 0; t < T; ++t) {
          q[t] = matvec(wq, x[t], vec(L.bq, hp.n_embd_q()));
          k[t] = matvec(wk, x[t], vec(L.bk, hp.n_embd_kv()));
          v[t] = matvec(wv, x[t], vec(L.bv, hp.n_embd_kv()));
        }
        for (size_t t = 0; t < T; ++t) {
          Vec att(static_cast<size_t>(hp.n_embd_q()), 0.0);
          for (int h = 0; h < hp.n_head; ++h) {
            const int hk = h / hp.n_gqa();
            Vec s(T);
            double mx = -1e300;
            for (size_t p = 0; p < T; ++p) {  // every position: bidirectional
              double d = 0;
              for (int64_t i = 0; i < hd; ++i) d += q[t][h * hd + i] * k[p][hk * hd + i];
              s[p] = d / std::sqrt(static_cast<double>(hd));
              mx = std::max(mx, s[p]);
            }
            double sum = 0;
            for (double& e : s) sum += (e = std::exp(e - mx));
            for (size_t p = 0; p < T; ++p) {
              for (int64_t i = 0; i < hd; ++i) att[h * hd + i] += s[p] / sum * v[p][hk * hd + i];
            }
          }
          Vec y = matvec(wo, att, vec(L.bo, E));
          for (int64_t c = 0; c < E; ++c) y[c] += x[t][c];
          layer_norm(y, vec(L.attn_out_norm, E), vec(L.attn_out_norm_b, E), eps);
          Vec u = matvec(wu, y, vec(L.ffn_up_b, hp.n_ff));
          for (double& a : u) a = 0.5 * a * (1.0 + std::erf(a / std::sqrt(2.0)));
          Vec z = matvec(wd, u, vec(L.ffn_down_b, E));
          for (int64_t c = 0; c < E; ++c) z[c] += y[c];
          layer_norm(z, vec(L.layer_out_norm, E), vec(L.layer_out_norm_b, E), eps);
          x[t] = std::move(z);
        }
      }
    }
    return xs;
  }

  // Pooled (and for rank: scored) outputs, then normalised: the Embedder's contract.
  std::vector<Vec> embed(const std::vector<EmbedInput>& inputs, PoolingType pooling, int normalize) const {
    std::vector<Vec> out;
    for (const auto& h : forward(inputs)) {
      if (pooling == PoolingType::kNone) {
        for (const Vec& r : h) out.push_back(normalized(r, normalize));
        continue;
      }
      Vec p(h[0].size(), 0.0);
      if (pooling == PoolingType::kMean) {
        for (const Vec& r : h)
          for (size_t c = 0; c < p.size(); ++c) p[c] += r[c] / static_cast<double>(h.size());
      } else if (pooling == PoolingType::kLast) {
        p = h.back();
      } else {
        p = h.front();  // cls, rank
      }
      if (pooling == PoolingType::kRank) {
        const int64_t E = m.hparams().n_embd;
        Vec t = matvec(dense(m.cls()), p, vec(m.cls_b(), E));
        for (double& a : t) a = std::tanh(a);
        out.push_back(matvec(dense(m.cls_out()), t, vec(m.cls_out_b(), m.hparams().n_cls_out)));
        continue;
      }
      out.push_back(normalized(p, normalize));
    }
    return out;
  }
  static Vec normalized(Vec v, int normalize) {
    if (normalize == 2) {
      double ss = 0;
      for (double a : v) ss += a * a;
      for (double& a : v) a /= std::sqrt(ss);
    }
    return v;
  }
};

double cosine(const float* a, const Vec& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    ab += a[i] * b[i];
    aa += static_cast<double>(a[i]) * a[i];
    bb += b[i] * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

test::SyntheticModelSpec bert_spec(int32_t n_layer, int32_t pooling, TensorType type, int32_t n_cls_out = 0) {
  test::SyntheticModelSpec s;
  s.arch = "bert";
  s.n_vocab = 30522;
  s.n_embd = 384;
  s.n_layer = n_layer;
  s.n_ff = 1536;
  s.n_head = 12;
  s.n_head_kv = 12;
  s.n_ctx_train = 512;
  s.rms_eps = 1e-12f;
  s.pooling = pooling;
  s.n_cls_out = n_cls_out;
  s.weight_type = type;
  s.vocab_file = test::shared_testdata("vocab/ggml-vocab-bert-bge.gguf");
  s.seed = 7;
  return s;
}

// Texts of several lengths and scripts, tokenized with the real bge vocabulary.
const std::vector<std::string>& texts() {
  static const std::vector<std::string> t = {
      "Hello world",
      "The quick brown fox jumps over the lazy dog while the cat watches from the warm windowsill.",
      "\xE6\x88\x91\xE7\x9A\x84\xE7\xAC\x94\xE8\xAE\xB0\xE5\x9C\xA8\xE5\x93\xAA\xE9\x87\x8C\xEF\xBC\x9F",  // 我的笔记在哪里？
      "Caf\xC3\xA9 d\xC3\xA9j\xC3\xA0 vu: numbers 3.14159 and 2,718 -- punctuation!?",
      "a",
  };
  return t;
}

struct Loaded {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
};

Loaded load(const test::SyntheticModelSpec& spec) {
  Loaded l;
  l.model = Model::from_gguf(test::synthetic_model(spec));
  l.tokenizer = Tokenizer::from_gguf(l.model->gguf());
  return l;
}

std::vector<EmbedInput> inputs_of(const Tokenizer& tok, int32_t n_ctx) {
  std::vector<EmbedInput> in;
  for (const auto& t : texts()) in.push_back(text_input(tok, t, n_ctx, Truncation::kRefuse));
  return in;
}

// Worst cosine of each output against the reference; prints it (the measured values are the
// tolerances' comments).
double worst_cosine(const std::vector<float>& got, const std::vector<Vec>& want, const char* what) {
  double worst = 1.0;
  const size_t dims = want.at(0).size();
  EXPECT_EQ(got.size(), want.size() * dims) << what;
  for (size_t i = 0; i < want.size() && (i + 1) * dims <= got.size(); ++i) {
    worst = std::min(worst, cosine(got.data() + i * dims, want[i]));
  }
  std::printf("[ measured ] %s: worst cosine %.9f\n", what, worst);
  return worst;
}

// Cosine >= 0.9999 per text is the bar, against the exact reference. Measured worst
// with 2 layers (AVX-512 host): F32 and F16 1 - 1e-10 or closer; Q8_0 and Q4_0 ~0.99995: the
// int8 rounding of the quantized weights' matmul inputs, which the exact reference does not do
// (with 3 layers 0.99991: it grows with depth, see OneLayerWithInt8InputsModelled).
constexpr double kMinCosine = 0.9999;

class EncoderVsNaive : public ::testing::TestWithParam<TensorType> {};

TEST_P(EncoderVsNaive, BgeSmallShapeEveryPooling) {
  // bge-small-en-v1.5's shape with 2 of its 12 layers (the naive pass is O(layers)), CLS declared.
  const Loaded l = load(bert_spec(2, /*cls*/ 2, GetParam()));
  Embedder emb(*l.model, EmbedderParams{});
  EXPECT_EQ(emb.default_pooling(), PoolingType::kCls);
  const std::vector<EmbedInput> in = inputs_of(*l.tokenizer, emb.n_ctx());
  const NaiveBert naive{*l.model};
  const std::string type = tensor_type_name(GetParam());
  for (const PoolingType p : {PoolingType::kCls, PoolingType::kMean, PoolingType::kLast, PoolingType::kNone}) {
    std::vector<float> got;
    emb.embed(in, p, 2, got);
    const std::string what = "bge-small " + type + " pooling " + pooling_type_name(p);
    EXPECT_GE(worst_cosine(got, naive.embed(in, p, 2), what.c_str()), kMinCosine) << what;
  }
  // Unnormalised (-1) too: the vectors themselves, not only their directions.
  std::vector<float> raw;
  emb.embed(in, PoolingType::kMean, -1, raw);
  const auto want = naive.embed(in, PoolingType::kMean, -1);
  double worst_rel = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    double diff = 0, norm = 0;
    for (size_t c = 0; c < want[i].size(); ++c) {
      diff += std::pow(raw[i * want[i].size() + c] - want[i][c], 2);
      norm += want[i][c] * want[i][c];
    }
    worst_rel = std::max(worst_rel, std::sqrt(diff / norm));
  }
  std::printf("[ measured ] bge-small %s mean unnormalised: worst relative L2 error %.3g\n", type.c_str(), worst_rel);
  EXPECT_LT(worst_rel, 0.015);  // 1 - cos ~ err^2 / 2: the same bar; measured in the printed line
}

TEST_P(EncoderVsNaive, MiniLmShapeMeanPooling) {
  // all-MiniLM-L6-v2: 6 layers, mean pooling declared.
  const Loaded l = load(bert_spec(6, /*mean*/ 1, GetParam()));
  Embedder emb(*l.model, EmbedderParams{});
  EXPECT_EQ(emb.default_pooling(), PoolingType::kMean);
  const std::vector<EmbedInput> in = inputs_of(*l.tokenizer, emb.n_ctx());
  std::vector<float> got;
  emb.embed(in, PoolingType::kUnspecified, 2, got);
  const std::string what = std::string("MiniLM-L6 ") + tensor_type_name(GetParam()) + " mean";
  EXPECT_GE(worst_cosine(got, NaiveBert{*l.model}.embed(in, PoolingType::kMean, 2), what.c_str()), kMinCosine);
}

// Quantized weights with the reference rounding every matmul input as the engine does. Over
// several layers that cannot be followed (a rounding step flipped by float noise moves the next
// layer's inputs by 1e-4, which flips many more: the modelled reference is then no closer than
// the exact one), so one layer: what is left is float rounding, and a bug hiding inside the
// 1e-4 budget of the test above shows here.
TEST(EncoderVsNaiveQuantized, OneLayerWithInt8InputsModelled) {
  for (const TensorType type : {TensorType::Q8_0, TensorType::Q4_0}) {
    const Loaded l = load(bert_spec(1, 1, type));
    Embedder emb(*l.model, EmbedderParams{});
    const std::vector<EmbedInput> in = inputs_of(*l.tokenizer, emb.n_ctx());
    std::vector<float> got;
    emb.embed(in, PoolingType::kNone, 2, got);
    const std::string what = std::string("1 layer ") + tensor_type_name(type) + " per token, int8 inputs modelled";
    const double modelled = worst_cosine(got, NaiveBert{*l.model, true}.embed(in, PoolingType::kNone, 2), what.c_str());
    const double exact = worst_cosine(got, NaiveBert{*l.model}.embed(in, PoolingType::kNone, 2), "  exact reference");
    // Measured: q4_0 1 - 4e-10, q8_0 1 - 2.4e-6 (a flipped rounding step within the layer's four
    // rounded inputs), against 1 - 2.6e-5 / 2.8e-5 for the exact reference.
    EXPECT_GE(modelled, 1.0 - 1e-5) << what;
    EXPECT_LT(1.0 - modelled, (1.0 - exact) / 5) << "the modelled rounding should explain most of the error";
  }
}

INSTANTIATE_TEST_SUITE_P(Types, EncoderVsNaive,
                         ::testing::Values(TensorType::F32, TensorType::F16, TensorType::Q8_0, TensorType::Q4_0),
                         [](const auto& info) { return std::string(tensor_type_name(info.param)); });

TEST(EncoderRerank, CrossEncoderScoresMatchTheNaiveHead) {
  // A ms-marco-MiniLM-shaped cross-encoder (2 layers): [CLS] query [SEP] document [SEP] with
  // token types 0 / 1, the pooler (cls, tanh) and the one-output classifier (cls.output).
  const Loaded l = load(bert_spec(2, /*rank*/ 4, TensorType::F16, /*n_cls_out=*/1));
  Embedder emb(*l.model, EmbedderParams{});
  EXPECT_EQ(emb.default_pooling(), PoolingType::kRank);
  std::vector<EmbedInput> in;
  for (const auto& doc : texts())
    in.push_back(pair_input(*l.tokenizer, "where are my notes?", doc, 512, Truncation::kRefuse));
  EXPECT_EQ(in[0].tokens.front(), 101);
  EXPECT_EQ(in[0].tokens.back(), 102);
  EXPECT_EQ(in[0].types.back(), 1);
  EXPECT_EQ(in[0].types.front(), 0);
  std::vector<float> got;
  emb.embed(in, PoolingType::kRank, 2, got);  // scores are never normalised
  const auto want = NaiveBert{*l.model}.embed(in, PoolingType::kRank, 2);
  ASSERT_EQ(got.size(), want.size());
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i][0]));
  std::printf("[ measured ] cross-encoder F16: worst score error %.3g\n", worst);
  EXPECT_LT(worst, 2e-6);  // measured 1.7e-7
  // The second segment's token type matters: all-zero types give other scores.
  std::vector<EmbedInput> zero = in;
  for (auto& e : zero) e.types.assign(e.tokens.size(), 0);
  std::vector<float> zero_scores;
  emb.embed(zero, PoolingType::kRank, 2, zero_scores);
  EXPECT_GT(std::abs(zero_scores[1] - got[1]), 10 * worst);
  // Rank on a model without a head is refused, saying why.
  const Loaded plain = load(bert_spec(1, 2, TensorType::F16));
  Embedder e2(*plain.model, EmbedderParams{});
  std::vector<float> out;
  try {
    e2.embed(in, PoolingType::kRank, 2, out);
    FAIL() << "rank without cls.output accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("cls.output"), std::string::npos) << e.what();
  }
}

TEST(EncoderBatching, BatchedEqualsOneByOne) {
  // Inputs of different lengths in one forward against each alone, and in another order: the
  // same bits (attention never crosses a sequence; every matmul row is computed the same way
  // whatever rows are next to it).
  for (const TensorType type : {TensorType::F16, TensorType::Q8_0}) {
    const Loaded l = load(bert_spec(2, 1, type));
    Embedder emb(*l.model, EmbedderParams{});
    const std::vector<EmbedInput> in = inputs_of(*l.tokenizer, emb.n_ctx());
    std::vector<float> batched;
    emb.embed(in, PoolingType::kNone, -1, batched);
    EXPECT_EQ(emb.forwards(), 1);
    std::vector<float> solo;
    for (const EmbedInput& e : in) emb.embed({e}, PoolingType::kNone, -1, solo);
    ASSERT_EQ(batched.size(), solo.size());
    size_t differ = 0;
    for (size_t i = 0; i < batched.size(); ++i) differ += batched[i] != solo[i];
    EXPECT_EQ(differ, 0u) << tensor_type_name(type) << ": " << differ << " of " << batched.size() << " values differ";
    // Reversed order, and the long text twice next to the short ones.
    std::vector<EmbedInput> rev(in.rbegin(), in.rend());
    std::vector<float> reversed;
    emb.embed(rev, PoolingType::kMean, 2, reversed);
    std::vector<float> forward_order;
    emb.embed(in, PoolingType::kMean, 2, forward_order);
    const size_t E = 384;
    for (size_t i = 0; i < in.size(); ++i) {
      EXPECT_TRUE(std::equal(forward_order.begin() + i * E, forward_order.begin() + (i + 1) * E,
                             reversed.begin() + (in.size() - 1 - i) * E))
          << "input " << i;
    }
  }
}

TEST(EncoderBatching, SplitsIntoForwardsOfNBatchTokens) {
  const Loaded l = load(bert_spec(1, 1, TensorType::F16));
  EmbedderParams p;
  p.n_ctx = 64;
  p.n_batch = 64;
  Embedder emb(*l.model, p);
  std::vector<EmbedInput> in;
  for (int i = 0; i < 10; ++i) {
    in.push_back(text_input(*l.tokenizer, std::string(static_cast<size_t>(i * 10 + 1), 'x') + " word words wording", 64,
                            Truncation::kEnd));
  }
  std::vector<float> all;
  emb.embed(in, PoolingType::kMean, 2, all);
  EXPECT_GT(emb.forwards(), 1);
  std::vector<float> solo;
  for (const auto& e : in) emb.embed({e}, PoolingType::kMean, 2, solo);
  EXPECT_EQ(all, solo);
}

TEST(EncoderInputs, LongInputsAreRefusedOrTruncated) {
  const Loaded l = load(bert_spec(1, 1, TensorType::F16));
  EmbedderParams p;
  p.n_ctx = 16;
  Embedder emb(*l.model, p);
  const std::string long_text =
      "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen";
  try {
    text_input(*l.tokenizer, long_text, emb.n_ctx(), Truncation::kRefuse);
    FAIL() << "a 17-token input was accepted for n_ctx 16";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("17 tokens"), std::string::npos) << e.what();
  }
  bool truncated = false;
  const EmbedInput cut = text_input(*l.tokenizer, long_text, emb.n_ctx(), Truncation::kEnd, &truncated);
  EXPECT_TRUE(truncated);
  ASSERT_EQ(cut.tokens.size(), 16u);
  EXPECT_EQ(cut.tokens.front(), 101);  // [CLS]
  EXPECT_EQ(cut.tokens.back(), 102);   // [SEP] kept
  // The same as the first 14 words' tokens framed by hand.
  std::vector<int32_t> manual = l.tokenizer->encode(long_text, true, false);
  manual.resize(15);
  manual.push_back(102);
  EXPECT_EQ(cut.tokens, manual);
  // Past n_ctx directly through embed(): refused, nothing appended.
  EmbedInput too_long{std::vector<int32_t>(17, 1000), {}};
  std::vector<float> out(3, 1.0f);
  EXPECT_THROW(emb.embed({too_long}, PoolingType::kMean, 2, out), Error);
  EXPECT_EQ(out.size(), 3u);
  // Bad ids and types: refused before any forward.
  EXPECT_THROW(emb.embed({EmbedInput{{101, 40000, 102}, {}}}, PoolingType::kMean, 2, out), Error);
  EXPECT_THROW(emb.embed({EmbedInput{{101, 102}, {0, 2}}}, PoolingType::kMean, 2, out), Error);
  EXPECT_THROW(emb.embed({EmbedInput{{}, {}}}, PoolingType::kMean, 2, out), Error);
  EXPECT_EQ(out.size(), 3u);
  // n_ctx beyond the model's 512 positions is refused at construction.
  EmbedderParams big;
  big.n_ctx = 513;
  EXPECT_THROW(Embedder(*l.model, big), Error);
}

TEST(EncoderInputs, AnEncoderIsNotAGenerator) {
  const Loaded l = load(bert_spec(1, 1, TensorType::F16));
  try {
    Context ctx(*l.model, ContextParams{});
    FAIL() << "a Context was made for an encoder";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("encoder"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace edgellm
