// `edgellm convert`: a Hugging Face model directory (config.json, safetensors, tokenizer.json) to
// one GGUF v3 file that EdgeLLM and llama.cpp both load, with the metadata keys, tensor names and
// tokenizer keys llama.cpp's convert_hf_to_gguf.py writes (docs/convert.md has the mapping).
//
// Memory: the safetensors shards are mapped; each output tensor is produced in chunks of rows
// (every thread converts a slice of the chunk: source dtype -> F32 -> output type, reordering Q/K
// rows for llama) and streamed to the GGUF writer, and the source pages of a tensor are dropped
// once it is written. Peak memory is about one tensor's source pages plus one chunk, never the
// model (docs/convert.md has the measured numbers).
// Atomicity: the output appears only when complete ("<out>.tmp.XXXXXX", fsync, rename); every
// check (config keys, tensor names, shapes, dtypes, tokenizer) runs before the first byte is
// written, and any later failure or cancellation leaves `out` as it was.
#pragma once

#include "core/progress.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/tensor_type.h"
#include "tools/quant/quant_rules.h"

namespace edgellm::convert {

struct ConvertedTensor {
  size_t index = 0;  // position in the output file
  size_t n_tensors = 0;
  std::string name;    // GGUF name
  std::string source;  // HF name ("" for generated tensors such as rope_freqs.weight)
  std::string shape;   // GGUF order: "[896, 151936]"
  std::string from;    // source dtype: "BF16", "F16", "F32", "generated"
  TensorType to = TensorType::F32;
  size_t bytes_in = 0;
  size_t bytes_out = 0;
};

struct ConvertParams {
  // Output type: "auto" (BF16 when the checkpoint's matrices are BF16, else F16, as llama.cpp's
  // --outtype auto), or any quantize type name (f32, f16, bf16, q8_0, q4_0, Q4_K_M, ...): the
  // weight matrices are quantized on the way with the quantizer's recipe (tools/quant).
  std::string type = "auto";
  std::vector<quant::TypeRule> rules;         // per-tensor overrides, as `edgellm quantize --rule`
  bool pure = false;                          // quantized types: no Q4_K_M-style mix adjustments
  std::string name;                           // general.name; "" = config.json _name_or_path, else the directory name
  int n_threads = 0;                          // 0 = all cores
  size_t chunk_bytes = size_t{16} << 20;      // F32 bytes per conversion chunk
  const std::atomic<bool>* cancel = nullptr;  // polled per chunk: Error(kCancelled)
  // Progress: the fraction of the checkpoint's bytes converted so far and what is being written
  // ("blk.3.attn_q.weight"). Called on the calling thread, after each chunk.
  ProgressFn on_progress;  // core/progress.h
  std::function<void(const ConvertedTensor&)> on_tensor;  // after each tensor is written
  std::function<void(const std::string&)> on_warning;     // e.g. a tied lm_head that is skipped
};

struct ConvertSummary {
  std::string hf_class;  // "Qwen2ForCausalLM"
  std::string arch;      // "qwen2"
  quant::FileType ftype = quant::FileType::kMostlyF16;
  std::string tokenizer_model;  // "gpt2"
  std::string tokenizer_pre;    // "qwen2"
  std::string pooling;          // encoders: "mean" / "cls" / "last" (modules.json), "" = none declared
  std::string pooling_source;   // "1_Pooling/config.json pooling_mode_mean_tokens"
  int64_t n_vocab = 0;
  size_t n_tensors = 0;
  int64_t n_params = 0;    // elements of every tensor written
  uint64_t bytes_in = 0;   // checkpoint tensor bytes read
  uint64_t bytes_out = 0;  // tensor data written
  uint64_t file_bytes = 0;
  double seconds = 0;
};

// Converts the model directory `dir` to `out_path`. Errors (Error, message naming the file, key or
// tensor): kIo (missing files, cannot write; "No space left on device" for a full disk),
// kInvalidFile (malformed config / safetensors / tokenizer, a tensor whose shape config.json
// contradicts, a missing tensor), kUnsupported (a model class, tensor, dtype, RoPE scaling or
// tokenizer this converter does not handle), kInvalidArgument (bad type name, output = an input),
// kCancelled.
ConvertSummary convert_hf_model(const std::string& dir, const std::string& out_path, const ConvertParams& params);

}  // namespace edgellm::convert
