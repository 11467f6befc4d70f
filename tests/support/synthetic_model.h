// Small random models of the llama family for tests that need a model of a given architecture /
// weight type without a real checkpoint. Built on src/tools/synth (the code behind `edgellm synth`):
// the spec becomes a free-form synth::ModelShape, which gives the tensor list, hyper-parameter
// keys, rope factors and weight values; the fixture adds one weight type for every matrix, the
// error-test edits below and optional keys. Weights are seeded: the same spec, the same file.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf_reader.h"
#include "kernels/tensor_type.h"

namespace edgellm::test {

struct SyntheticModelSpec {
  std::string arch = "llama";        // llama, qwen2 (writes q/k/v biases), qwen3 (writes q/k norms), bert
  int32_t n_vocab = 300;
  int32_t n_embd = 256;
  int32_t n_layer = 2;
  int32_t n_ff = 512;
  int32_t n_head = 4;
  int32_t n_head_kv = 2;
  int32_t head_dim = 0;              // 0: n_embd / n_head (no key_length key written)
  int32_t n_ctx_train = 512;
  float rope_base = 10000.0f;
  float rms_eps = 1e-5f;
  int32_t n_rot = 0;                 // 0: head_dim (no rope.dimension_count key written)
  std::string rope_scaling;          // "" (no keys) or the rope.scaling.type value ("linear", "yarn")
  float rope_scaling_factor = 1.0f;  // written with rope_scaling
  bool rope_freqs = false;           // write rope_freqs.weight ([n_rot/2] llama3 factors in [1, 8])
  bool tied = false;                 // no output.weight: the head reuses token_embd
  TensorType weight_type = TensorType::F32;  // every matrix; Q8_0 where a row does not fit its blocks
  bool write_vocab = false;          // synth's placeholder vocabulary ("<unk>", "<s>", "</s>", "<t3>", ...;
                                     // bert: [PAD] .. [UNK] [CLS] [SEP] [MASK], "▁t<id>")
  std::string vocab_file;            // tokenizer keys from this GGUF instead (e.g. the real bge vocab)
  // bert: token-type rows, the declared pooling (-1: no key) and classifier outputs (> 0: a
  // cross-encoder with cls.weight / cls.output.weight). rms_eps is then the LayerNorm epsilon.
  int32_t n_token_types = 2;
  int32_t pooling = -1;
  int32_t n_cls_out = 0;
  uint64_t seed = 1;
  // Overrides for error tests: tensor name -> ggml shape written instead of the right one.
  std::vector<std::pair<std::string, std::vector<int64_t>>> shape_overrides;
  std::vector<std::string> omit_tensors;
};

// A small BERT-shaped encoder: 2 layers of width 128, 1000 tokens of synth's vocabulary, Q8_0,
// mean pooling; with n_cls_out > 0 a cross-encoder (rank pooling, that many classifier outputs).
// What the embedding runtime and document Q&A tests embed with.
SyntheticModelSpec small_bert_spec(int32_t n_cls_out = 0);

// The type a matrix with rows of n_in elements gets: spec.weight_type if n_in fits its block
// size, else Q8_0 (as llama.cpp's quantizer falls back for odd widths).
TensorType synthetic_matrix_type(const SyntheticModelSpec& spec, int64_t n_in);

// Writes the model to `path` (tensor data streamed a slab of rows at a time: the writer never
// holds a whole tensor, so RSS measurements after writing a large model stay clean).
void write_synthetic_model(const SyntheticModelSpec& spec, const std::string& path);
// The same file image in memory, opened.
std::unique_ptr<gguf::GgufFile> synthetic_model(const SyntheticModelSpec& spec);

}  // namespace edgellm::test
