// Quantization error of one weight tensor against its F32 original, measured the same way for
// EdgeLLM's quantizer (tests/quant/test_quant_vs_llamacpp.cpp) and for llama.cpp's
// llama-quantize output (tests/quant/quant_rmse.cpp, which records the reference numbers).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/tensor_type.h"
#include "support/synthetic_model.h"

namespace edgellm::test {

struct QuantError {
  double rmse = 0;  // sqrt(mean((dequant(q) - x)^2)) over every element
  double rms = 0;   // sqrt(mean(x^2)): RMSE / RMS is the scale-free figure
};

// `f32`: n_rows x n_cols floats; `quantized`: the same rows in `type` (tensor_row_bytes each).
QuantError quant_error(const float* f32, const uint8_t* quantized, TensorType type, int64_t n_rows, int64_t n_cols);

// EdgeLLM's quantizer (kernels::quantize_row, row by row) on `f32`, then quant_error.
QuantError our_quant_error(const float* f32, TensorType type, int64_t n_rows, int64_t n_cols);

// One layer of a Qwen2.5-0.5B-shape model in F32 (n_embd 896, 14 heads / 2 KV heads of 64,
// n_ff 4864, tied embeddings; 300-token vocabulary instead of 151936 to keep it at 52 MB):
// synthetic weights (synth::fill_gaussian, seed 5). Both sides of the llama.cpp comparison
// regenerate it from this spec, so no file is stored. Rows of 896 fit only the 32-element blocks;
// the K-quants apply to ffn_down (rows of 4864) only.
SyntheticModelSpec qwen05_layer_spec();

// Perplexity of the model file at `model_path` on the text file `text_path` as both sides of the
// comparison measure it: context 128 (chunks of 128, the second half scored, as llama.cpp's
// perplexity does), BOS added, F32 KV cache, 2 threads.
double file_perplexity(const std::string& model_path, const std::string& text_path);

}  // namespace edgellm::test
