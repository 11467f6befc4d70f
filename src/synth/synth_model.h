// `edgellm synth`: a GGUF file with the exact tensor shapes, types and metadata of a real model
// (model_shapes.h) and deterministic random weights. Tensor types come from the quantizer's
// recipe (quant/quant_rules.h: llama.cpp's rules, e.g. the output head in Q8_0/Q6_K for a Q4_0
// file), so a synthetic file has the size and bytes per token of the file users download. Tensors are made
// and quantized on all threads, a slab of rows at a time, and streamed to disk by GgufWriter, so
// memory stays at a few MB per thread whatever the model size.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/tensor_type.h"
#include "quant/quant_rules.h"
#include "synth/model_shapes.h"

namespace edgellm::synth {

// How a tensor's values are made.
enum class TensorInit {
  kWeight,       // N(0, 0.02): matrices (the usual initialiser scale)
  kNorm,         // 1 + N(0, 0.02): RMSNorm gains
  kBias,         // N(0, 0.02)
  kRopeFactors,  // llama3 rope divisors (deterministic, not random)
};

struct SynthTensor {
  std::string name;
  TensorType type = TensorType::F32;
  std::vector<int64_t> ne;  // ggml order
  TensorInit init = TensorInit::kWeight;
};

struct SynthOptions {
  std::string shape;            // model_shapes.h name
  std::string type = "q4_0";    // quant::file_type_from_name spelling (q4_0, q4_K_M, ...)
  uint64_t seed = 1;
  std::string tokenizer;        // tokenizer.json or .gguf; empty = placeholder vocabulary
  int32_t n_layer = 0;          // > 0 overrides the shape's block count (small test files)
  int32_t n_threads = 0;        // 0 = std::thread::hardware_concurrency()
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

// The tensor list (names, shapes, types) of a shape and file type, in file order.
std::vector<SynthTensor> plan_synth_tensors(const ModelShape& shape, quant::FileType ftype, int32_t n_layer);

// Writes the model to `path` (atomically: <path>.tmp then rename). `progress` (optional) is
// called after every tensor.
SynthReport write_synth_model(const SynthOptions& options, const std::string& path,
                              const std::function<void(const SynthProgress&)>& progress = {});

}  // namespace edgellm::synth
