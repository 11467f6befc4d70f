// Tiny Hugging Face checkpoints for the converter tests (tests/convert), written here without the
// converter's code: config.json, model.safetensors (or shards + model.safetensors.index.json) in
// the format's own layout (tensor data in header order, header padded with spaces as the reference
// writer pads it), and the tokenizer files. The weights are seeded random values already rounded
// to the stored dtype, so the double-precision reference below sees exactly what the file holds.
//
// naive_hf_logits is the reference the converted GGUF is compared with: the forward pass of the
// transformers modeling code (LlamaForCausalLM / Qwen2ForCausalLM / Qwen3ForCausalLM) in double
// precision over the HF tensors as written, HF names and HF row order (rotate_half RoPE, so a
// wrong Q/K row reorder in the converter shows up as wrong logits).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace edgellm::test {

struct HfTensor {
  std::string name;
  std::string dtype;  // "F32", "F16", "BF16" (or anything else for hostile files)
  std::vector<int64_t> shape;
  std::vector<float> values;  // row-major, already rounded to dtype
  std::string raw;            // when non-empty: the stored bytes as they are (hostile files)
};

// A safetensors file image: [u64 header length][JSON header][data], tensors in the given order.
std::string safetensors_bytes(const std::vector<HfTensor>& tensors, const std::string& metadata_json = "");
// Rounds to the dtype the way the reference writers do (round to nearest even).
float round_to_dtype(float x, const std::string& dtype);

struct TinySpec {
  std::string arch = "llama";  // llama, qwen2, qwen3 (the transformers model family)
  std::string dtype = "F32";
  int64_t vocab = 300;  // config.json vocab_size (embedding rows)
  int64_t embd = 64;
  int64_t layers = 2;
  int64_t ffn = 96;
  int64_t heads = 4;
  int64_t kv_heads = 2;
  int64_t head_dim = 0;  // > 0: written as config.json head_dim (qwen3: may differ from embd / heads)
  bool tied = false;     // tie_word_embeddings (no lm_head.weight written)
  double rope_theta = 10000.0;
  std::string rope_scaling_json;  // "" or a JSON object for config.json rope_scaling
  double rms_eps = 1e-6;
  int shards = 1;              // > 1: model-0000i-of-0000n.safetensors + index
  std::string tokenizer = "";  // "qwen3" / "llama3": the real files from shared/testdata/tokenizers;
                               // "" : a small byte-level BPE tokenizer.json written here
  uint64_t seed = 1;
};

struct TinyCheckpoint {
  TinySpec spec;
  std::string dir;
  std::map<std::string, HfTensor> tensors;
  int64_t head_dim() const { return spec.head_dim > 0 ? spec.head_dim : spec.embd / spec.heads; }
  const HfTensor& at(const std::string& name) const;
};

// Writes the checkpoint into `dir` (created). BOS / EOS ids in config.json match the tokenizer.
TinyCheckpoint write_tiny_checkpoint(const TinySpec& spec, const std::string& dir);

// The config.json write_tiny_checkpoint writes (tests edit it for hostile variants).
std::string tiny_config_json(const TinySpec& spec);

// A byte-level BPE tokenizer.json (GPT-2 byte alphabet, a few merges, two special tokens) whose ids
// fit below `vocab` (>= 262).
std::string small_tokenizer_json();

// transformers' SentencePieceExtractor, as its LlamaConverter builds a tokenizer.json from a
// tokenizer.model: every split (at code points) of a normal piece into two vocabulary pieces is a
// merge, ranked by the piece's score (higher first), ties by the parts' ids. `types` are GGUF
// token types (1 = normal).
std::vector<std::pair<std::string, std::string>> spm_merges(const std::vector<std::string>& tokens,
                                                            const std::vector<float>& scores,
                                                            const std::vector<int64_t>& types);

// An F32 llama GGUF with a SentencePiece vocabulary (shared/models/stories260K.gguf,
// tiny-zh-poems.gguf) written back in Hugging Face layout into `dir`: transformers names, the Q/K
// rows in HF order (the GGUF interleaving undone per head), config.json from the GGUF keys, and a
// SentencePiece-style tokenizer.json + tokenizer_config.json (merges from spm_merges).
void write_hf_from_gguf(const std::string& gguf_path, const std::string& dir);

// Logits (n_vocab per position, positions in order) of `tokens` at positions 0.. under the
// transformers forward pass, in double precision.
std::vector<std::vector<double>> naive_hf_logits(const TinyCheckpoint& ckpt, const std::vector<int32_t>& tokens);

}  // namespace edgellm::test
