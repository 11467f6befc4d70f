// Tensor element types, numbered exactly as GGUF (ggml_type) numbers them so the ids read from
// a file map 1:1. Block layouts are in kernels/blocks.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace edgellm {

enum class TensorType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,   // activation format only (per-block sum kept for the _1 weight types)
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,  // activation format only (K-quant dot products)
  // Raw bytes: never a weight the engine multiplies; pack files (model/pack_file.h) store the
  // repacked matrices as I8 tensors of [packed row bytes, rows] so any GGUF reader can parse them.
  I8 = 24,
  BF16 = 30,
  // EdgeLLM-internal layouts, never read from or written to a file (ids outside ggml's range).
  // Weights repacked at load time so 16 rows interleave in 4-byte groups (kernels/repack.h):
  Q4_0_X16 = 1002,
  Q5_0_X16 = 1006,
  Q8_0_X16 = 1008,
  Q4_K_X16 = 1012,
  Q5_K_X16 = 1013,
  Q6_K_X16 = 1014,
  // Their activation formats: Q8_0 codes with a float scale and the block's integer code sum;
  // Q8_K codes with the sums of each 32-element sub-block.
  Q8_0_S = 1009,
  Q8_K_S = 1015,
};

struct TensorTypeTraits {
  TensorType type;
  const char* name;      // "q4_K", as ggml and llama.cpp print it
  int64_t block_size;    // elements per block (1 for float types)
  size_t block_bytes;    // bytes per block
  bool is_quantized;
  bool is_weight_type;   // may be a matmul weight (false for the activation formats)
  bool in_files;         // a GGUF type id (false for the internal repacked layouts)
};

// nullptr for ids EdgeLLM does not support (GGUF files may carry many more ggml types). Also
// finds the internal layouts: file readers and writers must check `in_files`.
const TensorTypeTraits* find_tensor_type(uint32_t raw_id);
const TensorTypeTraits& tensor_type_traits(TensorType type);
// Case-insensitive name lookup ("q4_k", "Q8_0", "bf16").
std::optional<TensorType> tensor_type_from_name(std::string_view name);
const char* tensor_type_name(TensorType type);

// Bytes of a row of n elements; n must be a multiple of the block size.
size_t tensor_row_bytes(TensorType type, int64_t n);
int64_t tensor_block_size(TensorType type);

}  // namespace edgellm
