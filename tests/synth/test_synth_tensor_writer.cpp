// The lower-level src/tools/synth entry point (synth_tensor_writer.h): an explicit tensor list gives
// the same bytes as `edgellm synth` for the same list, a tensor's values do not depend on the
// rest of the list (so the test fixture may edit it), width-scaled weights have the variance they
// promise, and free-form shapes with partial rotation get rope factors over the rotated dims.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "tools/quant/quant_rules.h"
#include "support/test_env.h"
#include "tools/synth/model_shapes.h"
#include "tools/synth/synth_model.h"
#include "tools/synth/synth_tensor_writer.h"

namespace edgellm {
namespace {

// Writes `tensors` with no metadata besides what the writer adds, and opens the image.
std::unique_ptr<gguf::GgufFile> tensors_only(const std::vector<synth::SynthTensor>& tensors,
                                             const std::vector<float>& rope_factors, uint64_t seed, int n_threads) {
  synth::SynthTensorWriter data(tensors, rope_factors, seed, n_threads);
  gguf::GgufWriter w;
  data.add_infos(w);
  const std::vector<uint8_t> bytes = w.write_to_bytes(data.fill_fn());
  return gguf::GgufFile::from_bytes(bytes.data(), bytes.size());
}

bool same_bytes(const gguf::TensorInfo& a, const gguf::TensorInfo& b) {
  return a.n_bytes == b.n_bytes && std::memcmp(a.data, b.data, a.n_bytes) == 0;
}

TEST(SynthTensorWriter, ExplicitListGivesTheBytesOfEdgellmSynth) {
  synth::SynthOptions o;
  o.shape = "tiny-llama";  // untied head and rope_freqs: every TensorInit but kScaledWeight
  o.type = "q4_K_M";
  o.seed = 5;
  const std::string path = test::temp_dir() + "/explicit-vs-synth.gguf";
  synth::write_synth_model(o, path);
  const auto reference = gguf::GgufFile::open(path);

  const synth::ModelShape& shape = synth::find_model_shape(o.shape);
  const auto plan = synth::plan_synth_tensors(shape, quant::file_type_from_name(o.type), shape.n_layer);
  const auto explicit_file = tensors_only(plan, synth::llama3_rope_factors(shape), o.seed, 1);
  ASSERT_EQ(explicit_file->tensors().size(), reference->tensors().size());
  for (const auto& t : reference->tensors()) {
    const gguf::TensorInfo* e = explicit_file->find_tensor(t.name);
    ASSERT_NE(e, nullptr) << t.name;
    EXPECT_EQ(e->type, t.type) << t.name;
    EXPECT_TRUE(same_bytes(*e, t)) << t.name;
  }
}

TEST(SynthTensorWriter, ValuesDoNotDependOnTheRestOfTheList) {
  // A free-form shape (not in the catalogue): qwen2 with 96-wide heads and an odd vocabulary.
  synth::ModelShape shape = synth::find_model_shape("tiny-qwen2");
  shape.name = "free-form";
  shape.n_vocab = 300;
  shape.head_dim = 96;
  std::vector<synth::SynthTensor> full = synth::synth_tensor_list(shape, 2);
  const auto a = tensors_only(full, {}, 11, 2);

  // The fixture's edits: a tensor left out and another one's type changed.
  std::vector<synth::SynthTensor> edited;
  for (const auto& t : full) {
    if (t.name == "blk.0.attn_k.weight") continue;
    edited.push_back(t);
    if (t.name == "blk.1.ffn_up.weight") edited.back().type = TensorType::Q8_0;
  }
  const auto b = tensors_only(edited, {}, 11, 1);
  EXPECT_EQ(b->find_tensor("blk.0.attn_k.weight"), nullptr);
  for (const auto& t : b->tensors()) {
    if (t.name == "blk.1.ffn_up.weight") continue;
    const gguf::TensorInfo* ref = a->find_tensor(t.name);
    ASSERT_NE(ref, nullptr) << t.name;
    EXPECT_TRUE(same_bytes(t, *ref)) << t.name << " changed when the list was edited";
  }
  const gguf::TensorInfo* q = b->find_tensor("blk.1.ffn_up.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->type, TensorType::Q8_0);
  EXPECT_EQ(q->shape_string(), "[256, 512]");
  EXPECT_EQ(a->find_tensor("blk.0.attn_q.weight")->shape_string(), "[256, 384]");  // 4 heads of 96
}

TEST(SynthTensorWriter, ScaledWeightsHaveVarianceOneOverWidth) {
  // [n_in 400, 300 rows]: 120000 samples of N(0, 1/400), sd 0.05. The sample sd is within 2%
  // (its standard error is 0.2%), the mean within 5 standard errors (5 * 0.05 / sqrt(120000)).
  constexpr int64_t kIn = 400;
  const std::vector<synth::SynthTensor> list = {
      {"w", TensorType::F32, {kIn, 300}, synth::TensorInit::kScaledWeight}};
  const auto file = tensors_only(list, {}, 3, 2);
  const gguf::TensorInfo* t = file->find_tensor("w");
  ASSERT_NE(t, nullptr);
  const auto* begin = reinterpret_cast<const float*>(t->data);
  const auto* end = begin + t->n_elements();
  const double n = static_cast<double>(t->n_elements());
  const double mean = std::accumulate(begin, end, 0.0) / n;
  const double mean_sq = std::inner_product(begin, end, begin, 0.0) / n;
  const double expected_sd = 1.0 / std::sqrt(static_cast<double>(kIn));
  EXPECT_NEAR(mean, 0.0, 5 * expected_sd / std::sqrt(n));
  EXPECT_NEAR(std::sqrt(mean_sq - mean * mean), expected_sd, 0.02 * expected_sd);
}

TEST(SynthTensorWriter, PartialRotationRopeFactorsCoverTheRotatedDims) {
  // Rotating 32 of 64 dims is, for the rope frequencies, a 32-wide head rotated whole.
  synth::ModelShape partial = synth::find_model_shape("tiny-llama");
  partial.n_rot = 32;
  synth::ModelShape narrow = synth::find_model_shape("tiny-llama");
  narrow.head_dim = 32;
  const auto f = synth::llama3_rope_factors(partial);
  ASSERT_EQ(f.size(), 16u);
  EXPECT_EQ(f, synth::llama3_rope_factors(narrow));
  EXPECT_FLOAT_EQ(f.front(), 1.0f);
  EXPECT_FLOAT_EQ(f.back(), synth::kTinyLlama3Scaling.factor);

  bool found = false;
  for (const auto& t : synth::synth_tensor_list(partial, 1)) {
    if (t.name != "rope_freqs.weight") continue;
    found = true;
    EXPECT_EQ(t.ne, std::vector<int64_t>{16});
  }
  EXPECT_TRUE(found);
  gguf::GgufWriter w;
  synth::write_synth_hparams(w, partial, 1);
  const std::vector<uint8_t> bytes = w.write_to_bytes();
  const auto file = gguf::GgufFile::from_bytes(bytes.data(), bytes.size());
  EXPECT_EQ(file->get_int("llama.rope.dimension_count").value_or(-1), 32);
  EXPECT_EQ(file->get_int("llama.attention.key_length").value_or(-1), 64);
}

TEST(SynthTensorWriter, MismatchedRopeFactorsAndBadIndexAreErrors) {
  const std::vector<synth::SynthTensor> list = {
      {"rope_freqs.weight", TensorType::F32, {32}, synth::TensorInit::kRopeFactors}};
  synth::SynthTensorWriter data(list, std::vector<float>(16, 1.0f), 1, 1);
  gguf::GgufWriter w;
  data.add_infos(w);
  try {
    w.write_to_bytes(data.fill_fn());
    FAIL() << "16 factors were written for a [32] tensor";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInternal);
    EXPECT_NE(std::string(e.what()).find("rope_freqs.weight"), std::string::npos) << e.what();
  }
  struct NullSink : gguf::TensorSink {
    void write(const void*, size_t) override {}
  } sink;
  EXPECT_THROW(data.fill(1, sink), Error);
}

}  // namespace
}  // namespace edgellm
