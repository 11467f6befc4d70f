#include "support/quant_error.h"

#include <cmath>

#include "tools/eval/perplexity.h"
#include "kernels/kernels.h"
#include "model/model.h"
#include "support/test_env.h"
#include "tokenizer/tokenizer.h"

namespace edgellm::test {

QuantError quant_error(const float* f32, const uint8_t* quantized, TensorType type, int64_t n_rows, int64_t n_cols) {
  const size_t row_bytes = tensor_row_bytes(type, n_cols);
  std::vector<float> row(static_cast<size_t>(n_cols));
  double se = 0, ss = 0;
  for (int64_t r = 0; r < n_rows; ++r) {
    kernels::dequantize_row(type, quantized + static_cast<size_t>(r) * row_bytes, row.data(), n_cols);
    const float* x = f32 + r * n_cols;
    for (int64_t c = 0; c < n_cols; ++c) {
      const double d = static_cast<double>(row[static_cast<size_t>(c)]) - x[c];
      se += d * d;
      ss += static_cast<double>(x[c]) * x[c];
    }
  }
  const double n = static_cast<double>(n_rows) * static_cast<double>(n_cols);
  return {std::sqrt(se / n), std::sqrt(ss / n)};
}

QuantError our_quant_error(const float* f32, TensorType type, int64_t n_rows, int64_t n_cols) {
  const size_t row_bytes = tensor_row_bytes(type, n_cols);
  std::vector<uint8_t> q(row_bytes * static_cast<size_t>(n_rows));
  for (int64_t r = 0; r < n_rows; ++r) {
    kernels::quantize_row(type, f32 + r * n_cols, q.data() + static_cast<size_t>(r) * row_bytes, n_cols);
  }
  return quant_error(f32, q.data(), type, n_rows, n_cols);
}

SyntheticModelSpec qwen05_layer_spec() {
  SyntheticModelSpec s;
  s.arch = "qwen2";
  s.n_vocab = 300;
  s.n_embd = 896;
  s.n_layer = 1;
  s.n_ff = 4864;
  s.n_head = 14;
  s.n_head_kv = 2;
  s.n_ctx_train = 32768;
  s.rope_base = 1000000.0f;
  s.rms_eps = 1e-6f;
  s.tied = true;
  s.weight_type = TensorType::F32;
  s.seed = 5;
  return s;
}

double file_perplexity(const std::string& model_path, const std::string& text_path) {
  const auto model = Model::load(model_path);
  const auto tok = Tokenizer::from_gguf(model->gguf());
  const auto tokens = eval::tokenize_for_perplexity(*tok, read_file(text_path));
  eval::EvalParams p;
  p.n_ctx = 128;
  p.n_batch = 128;
  p.n_threads = 2;
  p.kv_type = TensorType::F32;
  return eval::compute_perplexity(*model, tokens, p, true, tok->bos()).ppl;
}

}  // namespace edgellm::test
