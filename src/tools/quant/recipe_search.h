// The mixed recipe: per-tensor types chosen under a size budget from a sensitivity table
// (tools/quant/tensor_sensitivity.h), and the tensors / layers whose sensitivity stands out.
//
// Choice: minimise the summed KLD over the searched matrices, sum_t KLD(t, q_t), subject to
// sum_t bytes(t, q_t) <= budget — a multiple-choice knapsack, solved exactly by dynamic
// programming over the budget in units (below). Summing per-tensor KLDs assumes the tensors'
// errors add up independently, which holds to first order for small errors; the file is then
// measured for real (docs/quantization.md compares predicted and measured KLD).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/tensor_type.h"
#include "tools/quant/tensor_sensitivity.h"

namespace edgellm::quant {

struct SizedOption {
  uint64_t bytes = 0;
  double cost = 0;
};

// Index of one option per item minimising the summed cost with the summed bytes <= budget.
// The budget is cut into at most max_units units of ceil(budget / max_units) bytes and every
// option's bytes are rounded up to whole units, so the choice never exceeds the budget, and it
// is optimal whenever every option's size is a multiple of the unit (always when budget <=
// max_units). Error(kInvalidArgument) when even the smallest option of every item exceeds the
// budget (the message gives both sizes) or an item has no option.
std::vector<int> choose_min_cost(const std::vector<std::vector<SizedOption>>& items, uint64_t budget,
                                 uint64_t max_units = uint64_t{1} << 17);

struct RecipeChoice {
  std::string name;
  TensorType type = TensorType::F32;
  uint64_t bytes = 0;  // as the budget counts them (padded to the alignment when one is given)
  double kld = 0;
  double nll_delta = 0;
};

struct MixedRecipe {
  std::vector<RecipeChoice> choices;  // one per searched tensor, in table order
  uint64_t bytes = 0;                 // their total
  double predicted_kld = 0;           // sum of their KLDs
  double predicted_nll_delta = 0;     // sum of their nll_delta: predicted ln(PPL / base PPL)
};

// What the choice minimises, summed over the matrices:
//   kKld        KLD(t, q): closeness to the unquantized model (the default);
//   kKldAndNll  KLD(t, q) + nll_delta(t, q): also the change of the text's log-likelihood, i.e.
//               closeness to the model and to the text. Both are measured on the same text, so a
//               file chosen this way is tuned to it: check it on other text (docs/quantization.md).
enum class RecipeObjective { kKld, kKldAndNll };
// "kld" or "kld+nll"; Error(kInvalidArgument) otherwise.
RecipeObjective parse_recipe_objective(const std::string& text);

// `budget`: bytes the searched tensors may take together; `alignment` > 0 counts each tensor
// padded to it (as it lies in the file), 0 its data alone.
MixedRecipe choose_recipe(const SensitivityTable& table, uint64_t budget, uint32_t alignment,
                          RecipeObjective objective = RecipeObjective::kKld);

// A tensor is abnormal when its KLD at the reference type is more than `ratio` times the median
// of the tensors of its kind (attn_q, ffn_down, ... over the layers; kinds with at least 3
// tensors); a layer when the sum of its tensors' KLDs is more than `ratio` times the median
// layer's. The reference type is the smallest candidate every tensor has (bytes per weight;
// the first in candidate order among equals).
inline constexpr double kAbnormalRatio = 3.0;

struct AbnormalTensor {
  std::string name;
  std::string kind;
  int32_t layer = -1;
  double kld = 0;     // at the reference type
  double median = 0;  // of its kind
};
struct AbnormalLayer {
  int32_t layer = -1;
  double kld = 0;     // summed over the layer's tensors at the reference type
  double median = 0;  // over the layers
};
struct AbnormalReport {
  TensorType reference = TensorType::F32;
  std::vector<AbnormalTensor> tensors;  // largest ratio first
  std::vector<AbnormalLayer> layers;    // largest ratio first
  std::vector<double> layer_kld;        // every layer's sum, by layer index
};
AbnormalReport find_abnormal(const SensitivityTable& table, double ratio = kAbnormalRatio);

}  // namespace edgellm::quant
