#include "support/synthetic_model.h"

#include <algorithm>

#include "gguf/gguf_writer.h"
#include "tools/synth/model_shapes.h"
#include "tools/synth/synth_model.h"
#include "tools/synth/synth_tensor_writer.h"
#include "tools/synth/synth_vocab.h"

namespace edgellm::test {

namespace {

// The spec as a free-form src/tools/synth shape: the tensor list, hyper-parameter keys and rope
// factors then come from the same code as `edgellm synth` files. The strings point into `s`.
synth::ModelShape shape_of(const SyntheticModelSpec& s) {
  return synth::ModelShape{
      .name = "synthetic",
      .display_name = "synthetic",
      .arch = s.arch.c_str(),
      .size_label = "",
      .n_vocab = s.n_vocab,
      .n_embd = s.n_embd,
      .n_layer = s.n_layer,
      .n_ff = s.n_ff,
      .n_head = s.n_head,
      .n_head_kv = s.n_head_kv,
      .head_dim = s.head_dim > 0 ? s.head_dim : s.n_embd / s.n_head,
      .n_ctx_train = s.n_ctx_train,
      .rope_freq_base = s.rope_base,
      .rms_eps = s.rms_eps,
      .tied_embeddings = s.tied,
      // No factor = no rope_freqs tensor.
      .rope_scaling = s.rope_freqs ? synth::kTinyLlama3Scaling : synth::Llama3RopeScaling{},
      .n_rot = s.n_rot,
      .n_token_types = s.arch == "bert" ? s.n_token_types : 0,
      .pooling = s.pooling,
      .n_cls_out = s.n_cls_out,
  };
}

// The spec's tensors: every matrix in the spec's weight type (not the quantizer's per-tensor
// recipe: tests pick the type they exercise) with width-scaled values, then the error-test edits.
std::vector<synth::SynthTensor> tensors_of(const SyntheticModelSpec& s, const synth::ModelShape& shape) {
  std::vector<synth::SynthTensor> tensors = synth::synth_tensor_list(shape, s.n_layer);
  for (auto& t : tensors) {
    if (t.init != synth::TensorInit::kWeight) continue;
    t.type = synthetic_matrix_type(s, t.ne[0]);
    // N(0, 1/n_in) keeps every matmul output at unit variance, so the attention of these narrow
    // models is far from uniform and a wrong RoPE or head mapping moves the logits a lot.
    t.init = synth::TensorInit::kScaledWeight;
  }
  for (const auto& [name, ne] : s.shape_overrides) {
    for (auto& t : tensors) {
      if (t.name == name) t.ne = ne;
    }
  }
  std::erase_if(tensors, [&](const synth::SynthTensor& t) {
    return std::find(s.omit_tensors.begin(), s.omit_tensors.end(), t.name) != s.omit_tensors.end();
  });
  return tensors;
}

// Metadata: the src/tools/synth hyper-parameter keys, minus those the spec leaves to the loader to
// derive (0 = "not written"), plus rope scaling keys and the placeholder vocabulary on request.
gguf::GgufWriter make_writer(const SyntheticModelSpec& s, const synth::ModelShape& shape) {
  gguf::GgufWriter w;
  const std::string a = s.arch;
  w.set_string("general.architecture", a);
  w.set_string("general.name", "synthetic-" + a);
  synth::write_synth_hparams(w, shape, s.n_layer);
  if (s.head_dim == 0) {
    w.remove(a + ".attention.key_length");
    w.remove(a + ".attention.value_length");
  }
  if (s.n_rot == 0) w.remove(a + ".rope.dimension_count");
  if (!s.rope_scaling.empty()) {
    w.set_string(a + ".rope.scaling.type", s.rope_scaling);
    w.set_f32(a + ".rope.scaling.factor", s.rope_scaling_factor);
    w.set_u32(a + ".rope.scaling.original_context_length", static_cast<uint32_t>(s.n_ctx_train));
  }
  if (!s.vocab_file.empty()) {
    synth::write_tokenizer_from_file(w, s.vocab_file, s.n_vocab);
  } else if (s.write_vocab) {
    if (shape.is_encoder()) {
      synth::write_placeholder_wordpiece_vocab(w, s.n_vocab);
    } else {
      synth::write_placeholder_vocab(w, s.n_vocab);
    }
  }
  if (shape.is_encoder()) w.set_u32("tokenizer.ggml.token_type_count", static_cast<uint32_t>(s.n_token_types));
  return w;
}

// Both outputs share everything but the destination. n_threads 0: the tensor writer uses every
// core, which matters only for the ~150 MB memory-test model.
template <typename WriteFn>
auto build(const SyntheticModelSpec& spec, const WriteFn& write) {
  const synth::ModelShape shape = shape_of(spec);
  synth::SynthTensorWriter data(tensors_of(spec, shape), synth::llama3_rope_factors(shape), spec.seed, 0);
  gguf::GgufWriter w = make_writer(spec, shape);
  data.add_infos(w);
  return write(w, data.fill_fn());
}

}  // namespace

TensorType synthetic_matrix_type(const SyntheticModelSpec& spec, int64_t n_in) {
  return n_in % tensor_block_size(spec.weight_type) == 0 ? spec.weight_type : TensorType::Q8_0;
}

void write_synthetic_model(const SyntheticModelSpec& spec, const std::string& path) {
  build(spec, [&](gguf::GgufWriter& w, const gguf::GgufWriter::TensorDataFn& fill) { w.write(path, fill); });
}

std::unique_ptr<gguf::GgufFile> synthetic_model(const SyntheticModelSpec& spec) {
  return build(spec, [](gguf::GgufWriter& w, const gguf::GgufWriter::TensorDataFn& fill) {
    const std::vector<uint8_t> bytes = w.write_to_bytes(fill);
    return gguf::GgufFile::from_bytes(bytes.data(), bytes.size());
  });
}

SyntheticModelSpec small_bert_spec(int32_t n_cls_out) {
  SyntheticModelSpec s;
  s.arch = "bert";
  s.n_vocab = 1000;
  s.n_embd = 128;
  s.n_layer = 2;
  s.n_ff = 256;
  s.n_head = 4;
  s.n_head_kv = 4;
  s.n_ctx_train = 128;
  s.rms_eps = 1e-12f;
  s.pooling = n_cls_out > 0 ? 4 : 1;  // rank / mean
  s.n_cls_out = n_cls_out;
  s.weight_type = TensorType::Q8_0;
  s.write_vocab = true;
  return s;
}

}  // namespace edgellm::test
