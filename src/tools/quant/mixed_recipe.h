// `quantize --target-size / --target-bpw`: turns a sensitivity table (tools/quant/tensor_sensitivity.h)
// into the per-tensor types of one output file under a size budget (tools/quant/recipe_search.h),
// with the exact size of the file quantize_model() will then write.
//
// Budgets:
//   --target-size BYTES   the whole output file (header, metadata and padded tensor data) is at most
//                         BYTES (a suffix K, M or G multiplies by 1024, 1024^2, 1024^3);
//   --target-size TYPE    at most the size of the file `quantize IN OUT TYPE` writes (Q4_K_M: the
//                         llama.cpp recipe's size, the usual yardstick);
//   --target-bpw X        tensor data of at most X bits per weight, counted as QuantizeSummary's
//                         bits_per_weight (all tensors, norms included).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "gguf/gguf_reader.h"
#include "tools/quant/quantize_model.h"
#include "tools/quant/recipe_search.h"
#include "tools/quant/tensor_sensitivity.h"

namespace edgellm::quant {

struct SizeTarget {
  enum class Kind { kFileBytes, kFileType, kBitsPerWeight };
  Kind kind = Kind::kFileBytes;
  uint64_t bytes = 0;
  FileType ftype = FileType::kMostlyQ4_K_M;
  double bpw = 0;
};
// "2362720", "2.25M", "Q4_K_M" (--target-size); Error(kInvalidArgument) naming the text.
SizeTarget parse_target_size(std::string_view text);
// "4.8" (--target-bpw); Error(kInvalidArgument) unless a finite number in (0, 32].
SizeTarget parse_target_bpw(std::string_view text);

struct MixedRecipePlan {
  std::map<std::string, TensorType> tensor_types;  // for QuantizeParams::tensor_types
  MixedRecipe recipe;
  AbnormalReport abnormal;
  uint64_t target_file_bytes = 0;  // size targets: the limit; 0 for --target-bpw
  uint64_t file_bytes = 0;         // of the file these types give
  uint64_t tensor_bytes = 0;       // its tensor data
  int64_t n_elements = 0;          // every tensor's
  double bits_per_weight() const { return n_elements > 0 ? 8.0 * static_cast<double>(tensor_bytes) / n_elements : 0; }
};

// `params`: what the file will be written with (its ftype names general.file_type and types the
// tensors the table does not cover; its imatrix adds metadata). Error(kInvalidArgument) when the
// table does not match the model's tensors (another model, other shapes) or the budget is below
// the smallest choice.
MixedRecipePlan plan_mixed_recipe(const gguf::GgufFile& in, const SensitivityTable& table, const QuantizeParams& params,
                                  const SizeTarget& target, RecipeObjective objective = RecipeObjective::kKld);

}  // namespace edgellm::quant
