// `edgellm synth`: a GGUF file with the exact tensor shapes, types and metadata of a real model
// (model_shapes.h) and deterministic random weights. Tensor types come from the quantizer's
// recipe (quant/quant_rules.h: llama.cpp's rules, e.g. the output head in Q8_0/Q6_K for a Q4_0
// file), so a synthetic file has the size and bytes per token of the file users download.
// Tensors are made and quantized on all threads, a slab of rows at a time, and streamed to disk
// (synth_tensor_writer.h), so memory stays at a few MB per thread whatever the model size.
#pragma once

#include <atomic>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/tensor_type.h"
#include "tools/quant/quant_rules.h"
#include "tools/synth/model_shapes.h"
#include "tools/synth/synth_tensor_writer.h"

namespace edgellm::synth {

struct SynthOptions {
  std::string shape;            // model_shapes.h name
  std::string type = "q4_0";    // quant::file_type_from_name spelling (q4_0, q4_K_M, ...)
  uint64_t seed = 1;
  std::string tokenizer;        // tokenizer.json or .gguf; empty = placeholder vocabulary
  int32_t n_layer = 0;          // > 0 overrides the shape's block count (small test files)
  int32_t n_threads = 0;        // 0 = std::thread::hardware_concurrency()
  // Called once with the size of the tensor data about to be written (the file adds its header,
  // well under 1 %), before anything is written or the whole plan is built: it may throw to
  // refuse (the CLI checks the free space of the output's file system).
  std::function<void(uint64_t file_bytes)> before_write;
  // Polled after every tensor: when set, writing stops with Error(kCancelled) and the temporary
  // file is removed (gguf::GgufWriter writes atomically).
  const std::atomic<bool>* cancel = nullptr;
};

struct SynthProgress {
  size_t tensor_index = 0;      // tensor being written
  size_t n_tensors = 0;
  uint64_t bytes_done = 0;      // tensor bytes written so far
  uint64_t bytes_total = 0;
};

struct SynthReport {
  uint64_t file_bytes = 0;
  uint64_t tensor_bytes = 0;
  uint64_t n_params = 0;
  size_t n_tensors = 0;
  double seconds = 0;
  std::vector<std::pair<TensorType, size_t>> type_counts;  // tensors per type, by type id
};

// The tensor list of a shape with n_layer blocks, in file order, every tensor F32 (as in the
// F32 source checkpoint a quantizer reads). Works for catalogue and free-form shapes alike.
std::vector<SynthTensor> synth_tensor_list(const ModelShape& shape, int32_t n_layer);

// Gives every tensor the type llama.cpp's quantizer (quant/quant_rules.h) gives it when it
// quantizes that F32 checkpoint to `ftype`; tensors it does not quantize stay F32.
void assign_quantizer_types(std::vector<SynthTensor>& tensors, quant::FileType ftype);

// synth_tensor_list + assign_quantizer_types: the tensors of a published `ftype` file.
std::vector<SynthTensor> plan_synth_tensors(const ModelShape& shape, quant::FileType ftype, int32_t n_layer);

// The "<arch>.*" hyper-parameter keys of `shape` with n_layer blocks (vocab_size, context_length,
// embedding_length, ..., rope.freq_base, attention.layer_norm_rms_epsilon): what the loader
// reads. general.* and tokenizer keys are the caller's.
void write_synth_hparams(gguf::GgufWriter& w, const ModelShape& shape, int32_t n_layer);

// Writes the model to `path` (atomically: <path>.tmp then rename). `progress` (optional) is
// called after every tensor.
SynthReport write_synth_model(const SynthOptions& options, const std::string& path,
                              const std::function<void(const SynthProgress&)>& progress = {});

}  // namespace edgellm::synth
