// Model loading: hyper-parameters from real and synthetic files, zero-copy weight views, and
// clear errors for every kind of bad file (missing tensor, wrong shape, bad type, unsupported
// architecture, inconsistent hyper-parameters).
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "core/error.h"
#include "gguf/gguf_writer.h"
#include "model/model.h"
#include "support/synthetic_model.h"
#include "support/test_env.h"

namespace edgellm {
namespace {

// Runs fn, expects an Error with `code` whose message contains every fragment.
template <typename Fn>
void expect_error(Fn&& fn, ErrorCode code, std::initializer_list<std::string> fragments) {
  try {
    fn();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const auto& f : fragments) EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what();
  }
}

TEST(ModelLoad, Stories260KHyperParameters) {
  auto m = Model::load(test::shared_model("stories260K.gguf"));
  const HParams& hp = m->hparams();
  EXPECT_EQ(hp.arch, "llama");
  EXPECT_EQ(hp.n_vocab, 512);
  EXPECT_EQ(hp.n_embd, 64);
  EXPECT_EQ(hp.n_layer, 5);
  EXPECT_EQ(hp.n_head, 8);
  EXPECT_EQ(hp.n_head_kv, 4);
  EXPECT_EQ(hp.head_dim, 8);
  EXPECT_EQ(hp.n_rot, 8);
  EXPECT_EQ(hp.rope_style, RopeStyle::kNormal);
  EXPECT_FALSE(hp.has_rope_freqs);
  // Zero copy: weight pointers are inside the mapping.
  const auto& map = m->gguf().mapping();
  const uint8_t* q = m->layer(3).wq.data;
  EXPECT_GE(q, map.data());
  EXPECT_LT(q, map.data() + map.size());
  EXPECT_GT(m->weight_bytes(), 900000u);
  EXPECT_LE(m->weight_bytes(), m->gguf().file_size());
  // The F32 vectors are copied out (model.cpp, own_vectors): outside the mapping, same values
  // as the file's tensors.
  for (int il = 0; il < hp.n_layer; ++il) {
    const VectorView& norm = m->layer(il).attn_norm;
    const auto* bytes = reinterpret_cast<const uint8_t*>(norm.data);
    EXPECT_TRUE(bytes < map.data() || bytes >= map.data() + map.size()) << "layer " << il;
    const gguf::TensorInfo* t = m->gguf().find_tensor("blk." + std::to_string(il) + ".attn_norm.weight");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(std::memcmp(norm.data, t->data, t->n_bytes), 0) << "layer " << il;
  }
  const gguf::TensorInfo* out_norm = m->gguf().find_tensor("output_norm.weight");
  ASSERT_NE(out_norm, nullptr);
  EXPECT_EQ(std::memcmp(m->output_norm().data, out_norm->data, out_norm->n_bytes), 0);
}

TEST(ModelLoad, TinyZhPoemsIsTied) {
  auto m = Model::load(test::shared_model("tiny-zh-poems.gguf"));
  EXPECT_EQ(m->hparams().n_embd, 256);
  EXPECT_EQ(m->hparams().n_vocab, 4096);
  EXPECT_TRUE(m->output_tied());
  EXPECT_EQ(m->output().data, m->token_embd().data);
}

TEST(ModelLoad, SyntheticArchitectures) {
  test::SyntheticModelSpec s;
  s.arch = "qwen3";
  s.head_dim = 32;
  s.write_vocab = true;
  auto m = Model::from_gguf(test::synthetic_model(s));
  EXPECT_EQ(m->hparams().head_dim, 32);
  EXPECT_EQ(m->hparams().n_embd_q(), 128);
  EXPECT_EQ(m->hparams().rope_style, RopeStyle::kNeox);
  EXPECT_TRUE(m->layer(1).q_norm.present());
  EXPECT_FALSE(m->layer(1).bq.present());
  s = {};
  s.arch = "qwen2";
  m = Model::from_gguf(test::synthetic_model(s));
  EXPECT_TRUE(m->layer(0).bq.present());
  EXPECT_EQ(m->layer(0).bk.n, 128);
  s = {};
  s.rope_freqs = true;
  m = Model::from_gguf(test::synthetic_model(s));
  EXPECT_TRUE(m->hparams().has_rope_freqs);
  EXPECT_EQ(m->rope_freqs().n, 32);
}

TEST(ModelLoad, WrongShapeNamesTensorAndExpectation) {
  test::SyntheticModelSpec s;
  s.shape_overrides = {{"blk.1.attn_k.weight", {256, 96}}};
  expect_error([&] { Model::from_gguf(test::synthetic_model(s)); }, ErrorCode::kInvalidFile,
               {"blk.1.attn_k.weight", "[256, 96]", "needs [256, 128]", "n_head_kv 2", "head_dim 64"});
}

TEST(ModelLoad, MissingTensor) {
  test::SyntheticModelSpec s;
  s.omit_tensors = {"blk.0.ffn_down.weight"};
  expect_error([&] { Model::from_gguf(test::synthetic_model(s)); }, ErrorCode::kInvalidFile,
               {"blk.0.ffn_down.weight", "missing"});
  s = {};
  s.arch = "qwen2";
  s.omit_tensors = {"blk.1.attn_v.bias"};
  expect_error([&] { Model::from_gguf(test::synthetic_model(s)); }, ErrorCode::kInvalidFile, {"blk.1.attn_v.bias"});
}

// Builds a file from scratch for metadata-level errors.
std::unique_ptr<gguf::GgufFile> metadata_only(const std::string& arch, int heads, int heads_kv, int embd) {
  gguf::GgufWriter w;
  w.set_string("general.architecture", arch);
  w.set_u32(arch + ".embedding_length", static_cast<uint32_t>(embd));
  w.set_u32(arch + ".block_count", 1);
  w.set_u32(arch + ".feed_forward_length", 64);
  w.set_u32(arch + ".attention.head_count", static_cast<uint32_t>(heads));
  w.set_u32(arch + ".attention.head_count_kv", static_cast<uint32_t>(heads_kv));
  std::vector<float> emb(static_cast<size_t>(embd) * 10, 0.0f);
  w.add_tensor("token_embd.weight", TensorType::F32, {embd, 10}, emb.data(), emb.size() * sizeof(float));
  const auto bytes = w.write_to_bytes();
  return gguf::GgufFile::from_bytes(bytes.data(), bytes.size());
}

TEST(ModelLoad, UnsupportedArchitectureListsSupportedOnes) {
  expect_error([&] { Model::from_gguf(metadata_only("mamba", 4, 4, 64)); }, ErrorCode::kUnsupported,
               {"mamba", "llama", "qwen2", "qwen3"});
}

TEST(ModelLoad, InconsistentHyperParameters) {
  expect_error([&] { read_hparams(*metadata_only("llama", 6, 4, 96)); }, ErrorCode::kInvalidFile,
               {"head_count", "head_count_kv"});
  expect_error([&] { read_hparams(*metadata_only("llama", 5, 5, 64)); }, ErrorCode::kInvalidFile,
               {"embedding_length", "not a multiple"});
  expect_error([&] { read_hparams(*metadata_only("llama", 0, 1, 64)); }, ErrorCode::kInvalidFile,
               {"llama.attention.head_count", "out of range"});
}

TEST(ModelLoad, MissingKeyIsNamed) {
  gguf::GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_u32("llama.embedding_length", 64);
  const auto bytes = w.write_to_bytes();
  expect_error([&] { read_hparams(*gguf::GgufFile::from_bytes(bytes.data(), bytes.size())); }, ErrorCode::kInvalidFile,
               {"llama.block_count", "missing"});
}

TEST(ModelLoad, NormWeightsMustBeF32) {
  test::SyntheticModelSpec s;
  s.n_layer = 1;
  auto file = test::synthetic_model(s);
  // Re-write one norm as f16 via the writer: copy everything else verbatim.
  gguf::GgufWriter w;
  w.copy_metadata_from(*file);
  std::vector<uint16_t> half(256, 0x3c00);  // 1.0
  for (const auto& t : file->tensors()) {
    std::vector<int64_t> ne(t.ne, t.ne + t.n_dims);
    if (t.name == "blk.0.ffn_norm.weight") {
      w.add_tensor(t.name, TensorType::F16, ne, half.data(), half.size() * 2);
    } else {
      w.add_tensor(t.name, t.type, ne, t.data, t.n_bytes);
    }
  }
  const auto bytes = w.write_to_bytes();
  expect_error([&] { Model::from_gguf(gguf::GgufFile::from_bytes(bytes.data(), bytes.size())); },
               ErrorCode::kUnsupported, {"blk.0.ffn_norm.weight", "f16"});
}

TEST(ModelLoad, RopeScalingAndPartialRotation) {
  test::SyntheticModelSpec s;
  s.n_rot = 32;
  s.rope_scaling = "linear";
  s.rope_scaling_factor = 4.0f;
  auto m = Model::from_gguf(test::synthetic_model(s));
  EXPECT_EQ(m->hparams().n_rot, 32);
  EXPECT_EQ(m->hparams().rope_scaling, RopeScaling::kLinear);
  EXPECT_FLOAT_EQ(m->hparams().rope_freq_scale, 0.25f);
  EXPECT_EQ(m->hparams().rope_orig_ctx, 512);
  s.rope_scaling = "yarn";
  expect_error([&] { Model::from_gguf(test::synthetic_model(s)); }, ErrorCode::kUnsupported,
               {"rope.scaling.type", "yarn"});
  s.rope_scaling = "linear";
  s.rope_scaling_factor = -2.0f;
  expect_error([&] { Model::from_gguf(test::synthetic_model(s)); }, ErrorCode::kInvalidFile, {"rope.scaling.factor"});
  s = {};
  s.n_rot = 66;  // > head_dim 64
  expect_error([&] { Model::from_gguf(test::synthetic_model(s)); }, ErrorCode::kInvalidFile, {"rope.dimension_count"});
  s.n_rot = 31;  // odd: RoPE rotates pairs
  expect_error([&] { Model::from_gguf(test::synthetic_model(s)); }, ErrorCode::kInvalidFile, {"rope.dimension_count"});
}

TEST(ModelLoad, MissingFileIsIoError) {
  EXPECT_THROW(Model::load("/nonexistent/model.gguf"), Error);
}

}  // namespace
}  // namespace edgellm
