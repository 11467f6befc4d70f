// How much each weight matrix of a model costs in output quality, per quantization type: the
// measurement behind the mixed recipe (tools/quant/recipe_search.h).
//
// For every matrix t the model multiplies (and token_embd) and every candidate type q that fits
// its rows, t alone is quantized to q (with the importance matrix, when given, exactly as the
// final file will be), swapped into the loaded float model (Model::swap_matrix: real kernels of
// type q, no reload), and the model is run over the evaluation text the way `perplexity` runs it
// (chunks of n_ctx, second half scored); the cost is the mean KL divergence of its next-token
// distributions from the unquantized model's, which are kept in memory (n_scored x n_vocab
// floats). Also per (t, q): the weighted relative error of the weights themselves,
//   e(t, q) = sum_r sum_c imp_c (W - Q(W))_rc^2 / sum_r sum_c imp_c W_rc^2   (imp = 1 without imatrix),
// the quantity the imatrix-weighted searches minimise.
//
// Measuring every (t, q) costs n_matrices x n_types passes over the text (tiny-zh-poems: 29 x 8
// passes of ~1 s). For large models `measure` restricts the passes to a few types; the others'
// KLD is estimated from the measured type m of closest error as KLD(t, m) * e(t, q) / e(t, m):
// to first order the KLD is quadratic in the logits' perturbation, which is linear in the weight
// error, so KLD scales with the error energy e.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "core/json.h"
#include "kernels/tensor_type.h"
#include "tools/eval/perplexity.h"
#include "tools/quant/imatrix.h"
#include "tools/quant/imatrix_collector.h"

namespace edgellm {
class Model;
}

namespace edgellm::quant {

// q4_0 q4_1 q5_0 q5_1 q8_0 q4_K q5_K q6_K: every type our quantizer writes below F16.
std::vector<TensorType> default_candidate_types();

struct SensitivityParams {
  std::vector<TensorType> types;    // candidates; empty = default_candidate_types()
  std::vector<TensorType> measure;  // types measured by a pass over the text; empty = all candidates
  eval::EvalParams eval;            // n_ctx, n_batch, threads, max_chunks, KV type, cancel
  const Imatrix* imatrix = nullptr;
  ProgressFn progress;  // after each pass
  // Refuse to keep more base log-probs than this (n_scored x n_vocab x 4 bytes): use fewer chunks.
  size_t max_base_bytes = size_t{2} << 30;
};

struct TypeCost {
  TensorType type = TensorType::F32;
  size_t bytes = 0;      // the matrix's data in this type
  double rel_error = 0;  // e(t, q) above
  double kld = 0;        // mean KLD with only this matrix in this type (measured or estimated)
  double kld_error = 0;  // standard error of the measured mean (0 when estimated)
  double ppl = 0;        // perplexity of that model (measured only)
  // Its mean change of the text's negative log-likelihood, ln(ppl / base ppl) (measured, or
  // estimated like the KLD); negative when the quantized matrix happens to fit the text better.
  double nll_delta = 0;
  bool measured = false;
};

struct TensorSensitivity {
  std::string name;    // "blk.3.ffn_down.weight"
  std::string kind;    // "ffn_down"; "token_embd", "output"
  int32_t layer = -1;  // -1 outside the blocks
  int64_t n_in = 0, n_out = 0;
  std::vector<TypeCost> costs;  // one per candidate type that fits n_in, in candidate order
  const TypeCost* find(TensorType type) const;
};

struct SensitivityTable {
  int32_t n_ctx = 0, n_chunk = 0;
  int64_t n_scored = 0;
  double base_ppl = 0;
  bool imatrix = false;
  std::vector<TensorSensitivity> tensors;  // in model order (token_embd, output, then per layer)
  int64_t n_passes = 0;                    // passes over the text, base included
  double seconds = 0;
};

// Error(kUnsupported) when a matrix is not F32 / F16 / BF16 (measure from the float model);
// Error(kInvalidArgument) for an empty candidate list or base log-probs above max_base_bytes;
// Error(kCancelled) from params.eval.cancel. The model is back in its original state on return,
// also after an error.
SensitivityTable measure_sensitivity(Model& model, const std::vector<int32_t>& tokens, bool add_bos, int32_t bos,
                                     const SensitivityParams& params);

// Saved and read back (--save-sensitivity / --load-sensitivity): every number above.
Json sensitivity_to_json(const SensitivityTable& table);
// Error(kInvalidFile) naming the field for a malformed document.
SensitivityTable sensitivity_from_json(const Json& j);

// "blk.3.ffn_down.weight" -> kind "ffn_down", layer 3; "output.weight" -> "output", -1.
void tensor_kind(const std::string& name, std::string* kind, int32_t* layer);

}  // namespace edgellm::quant
