// The op count behind "% int8 peak" (bench/prefill_ops.h) against hand computations from the
// published hyper-parameters: TinyLlama-1.1B and Qwen2.5-0.5B (tensor shapes from `edgellm
// synth`'s tensor list, no file written), and loaded models (a tiny synthetic Q8_0 file,
// stories260K in F32).
#include <gtest/gtest.h>

#include <string>

#include "tools/bench/prefill_ops.h"
#include "core/error.h"
#include "model/model.h"
#include "tools/quant/quant_rules.h"
#include "support/test_env.h"
#include "tools/synth/synth_model.h"

namespace edgellm::bench {
namespace {

// The matmuls of a synthetic file's tensor list: every 2-D tensor but the embedding table, which
// is the head only when tied (no output.weight).
PrefillShape shape_of(const std::string& name, quant::FileType ftype) {
  const synth::ModelShape& s = synth::find_model_shape(name);
  PrefillShape out;
  for (const synth::SynthTensor& t : synth::plan_synth_tensors(s, ftype, s.n_layer)) {
    if (t.ne.size() != 2) continue;
    const bool embd = t.name == "token_embd.weight";
    if (embd && !s.tied_embeddings) continue;
    out.matrices.push_back({t.ne[0], t.ne[1], embd || t.name == "output.weight", t.type});
  }
  out.n_layer = s.n_layer;
  out.n_head = s.n_head;
  out.head_dim = s.head_dim;
  return out;
}

TEST(PrefillOps, TinyLlamaByHand) {
  // TinyLlama-1.1B: n_embd 2048, 22 layers, n_ff 5632, 32 heads of 64, 4 KV heads, vocab 32000.
  // Per layer MACs per token: q 2048*2048 + k, v 2 * 2048*256 + o 2048*2048 + gate, up, down
  // 3 * 2048*5632 = 4194304 + 1048576 + 4194304 + 34603008 = 44040192; x 22 = 968884224.
  // Head: 2048 * 32000 = 65536000 MACs, once for the last token.
  const PrefillShape shape = shape_of("tinyllama-1.1b", quant::FileType::kMostlyQ4_0);
  const PrefillOps ops = count_prefill_ops(shape, 512, 1, 0);
  EXPECT_DOUBLE_EQ(ops.head_ops, 2.0 * 65536000.0);
  EXPECT_DOUBLE_EQ(ops.matmul_ops, 2.0 * (512.0 * 968884224.0 + 65536000.0));
  // Attention: 22 layers x 32 heads x 64 x (q.k + p.v) per pair; 512 * 513 / 2 = 131328 pairs.
  EXPECT_DOUBLE_EQ(ops.attention_ops, 2.0 * 2.0 * 22 * 32 * 64 * 131328.0);
  EXPECT_TRUE(ops.int8);
  // At depth 100 with 8 logits: 8 head products; pairs 16 * 100 + 16 * 17 / 2 = 1736.
  const PrefillOps d = count_prefill_ops(shape, 16, 8, 100);
  EXPECT_DOUBLE_EQ(d.matmul_ops, 2.0 * (16.0 * 968884224.0 + 8.0 * 65536000.0));
  EXPECT_DOUBLE_EQ(d.attention_ops, 2.0 * 2.0 * 22 * 32 * 64 * 1736.0);
}

TEST(PrefillOps, Qwen25HalfBByHandTiedHead) {
  // Qwen2.5-0.5B: n_embd 896, 24 layers, n_ff 4864, 14 heads of 64, 2 KV heads, vocab 151936,
  // tied head. Per layer: q 896*896 + k, v 2 * 896*128 + o 896*896 + 3 * 896*4864
  // = 802816 + 229376 + 802816 + 13074432 = 14909440; x 24 = 357826560. Head 896 * 151936.
  const PrefillOps ops = count_prefill_ops(shape_of("qwen2.5-0.5b", quant::FileType::kMostlyQ4_0), 300, 1, 0);
  EXPECT_DOUBLE_EQ(ops.head_ops, 2.0 * 136134656.0);
  EXPECT_DOUBLE_EQ(ops.matmul_ops, 2.0 * (300.0 * 357826560.0 + 136134656.0));
  EXPECT_DOUBLE_EQ(ops.attention_ops, 2.0 * 2.0 * 24 * 14 * 64 * (300.0 * 301 / 2));
}

// Per-token MACs of a llama-like model from its hyper-parameters.
double layer_macs(const HParams& hp) {
  const double e = hp.n_embd, q = hp.n_embd_q(), kv = hp.n_embd_kv(), ff = hp.n_ff;
  return hp.n_layer * (e * q + 2 * e * kv + q * e + 3 * e * ff);
}

TEST(PrefillOps, LoadedModelsMatchTheirHyperParameters) {
  synth::SynthOptions o;
  o.shape = "tiny-qwen3";  // n_head * head_dim != n_embd: q and o are not square
  o.type = "q8_0";
  const std::string path = test::temp_dir() + "/prefill-ops-tiny-qwen3.gguf";
  synth::write_synth_model(o, path);
  for (const std::string& file : {path, test::shared_model("stories260K.gguf")}) {
    const auto model = Model::load(file);
    const HParams& hp = model->hparams();
    const PrefillOps ops = count_prefill_ops(prefill_shape(*model), 64, 1, 0);
    const double head = static_cast<double>(hp.n_embd) * hp.n_vocab;
    EXPECT_DOUBLE_EQ(ops.head_ops, 2.0 * head) << file;
    EXPECT_DOUBLE_EQ(ops.matmul_ops, 2.0 * (64.0 * layer_macs(hp) + head)) << file;
    EXPECT_DOUBLE_EQ(ops.attention_ops, 4.0 * hp.n_layer * hp.n_head * hp.head_dim * (64.0 * 65 / 2)) << file;
    EXPECT_EQ(ops.int8, file == path) << file;  // stories260K is F32
  }
}

TEST(PrefillOps, RejectsImpossibleCounts) {
  const PrefillShape shape = shape_of("tiny-llama", quant::FileType::kMostlyQ8_0);
  EXPECT_THROW(count_prefill_ops(shape, 4, 5, 0), Error);
  EXPECT_THROW(count_prefill_ops(shape, -1, 0, 0), Error);
  EXPECT_THROW(count_prefill_ops(shape, 4, 1, -1), Error);
  EXPECT_DOUBLE_EQ(count_prefill_ops(shape, 0, 0, 0).matmul_ops, 0.0);
}

}  // namespace
}  // namespace edgellm::bench
