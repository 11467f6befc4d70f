// Which type each tensor of a model gets when it is quantized: the file-level recipe (llama.cpp's
// LLAMA_FTYPE_*, including the Q4_K_M / Q5_K_M mixes), user rules "REGEX=type" that override it
// per tensor, and the fallback for rows whose width does not fit the chosen block size.
//
// The mix rules follow llama.cpp's llama_tensor_get_type (no importance matrix, no experts):
//   - output.weight (or token_embd.weight when the model ties its output to it): Q6_K for every
//     quantized recipe except Q8_0, which keeps Q8_0; Q8_0 when the row width is not a multiple
//     of 256;
//   - Q4_K_M / Q5_K_M: attn_v.weight and ffn_down.weight of the "use_more_bits" layers (first
//     1/8, last 1/8, every third layer in between) get Q6_K;
//   - Q4_K_S: attn_v.weight of the first 4 layers and ffn_down of the first 1/8 get Q5_K;
//   - with an importance matrix, Q4_0 / Q5_0: ffn_down of the first 1/8 layers get Q4_1 / Q5_1;
//   - only weights are quantized: names ending in "weight", 2 or more dimensions, not a norm.
// Widths that are not a multiple of the chosen type's block size fall back as llama.cpp does:
// q4_K -> q5_0, q5_K -> q5_1, q6_K -> q8_0, and to f16 when even 32 does not divide the width.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf_reader.h"
#include "kernels/tensor_type.h"

namespace edgellm::quant {

// llama.cpp's llama_ftype numbers, stored as general.file_type.
enum class FileType : uint32_t {
  kAllF32 = 0,
  kMostlyF16 = 1,
  kMostlyQ4_0 = 2,
  kMostlyQ4_1 = 3,
  kMostlyQ8_0 = 7,
  kMostlyQ5_0 = 8,
  kMostlyQ5_1 = 9,
  kMostlyQ4_K_S = 14,
  kMostlyQ4_K_M = 15,
  kMostlyQ5_K_S = 16,
  kMostlyQ5_K_M = 17,
  kMostlyQ6_K = 18,
  kMostlyBF16 = 32,
};

// Accepted names (case-insensitive): f32 f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 q6_K, Q4_K_S, Q4_K_M,
// Q5_K_S, Q5_K_M; "q4_K" / "q5_K" mean Q4_K_S / Q5_K_S (every weight in that K-quant, with the
// small-variant adjustments of llama.cpp). Throws Error(kInvalidArgument) naming the text.
FileType file_type_from_name(std::string_view name);
const char* file_type_name(FileType ftype);  // "Q4_K_M"
// The type most weights get (Q4_K for Q4_K_M).
TensorType file_type_base_type(FileType ftype);
// Every accepted name, for usage text.
std::string file_type_names();

// One "REGEX=type" rule; the regex is searched in the tensor name (ECMAScript syntax).
struct TypeRule {
  std::string pattern;
  TensorType type = TensorType::F32;
  std::regex re;
};
// Throws Error(kInvalidArgument) naming the rule for a missing '=', a bad regex or type.
TypeRule parse_type_rule(std::string_view text);
// One rule per line; blank lines and lines starting with '#' are skipped. `origin` names the
// file in errors ("rules.txt:3: ...").
std::vector<TypeRule> parse_type_rules(std::string_view text, const std::string& origin);

// What the planner needs of a tensor.
struct TensorDesc {
  std::string name;
  TensorType type = TensorType::F32;
  int n_dims = 0;
  int64_t ne[gguf::kMaxDims] = {1, 1, 1, 1};
};
std::vector<TensorDesc> describe_tensors(const gguf::GgufFile& file);

struct TypeDecision {
  TensorType type = TensorType::F32;
  bool quantizable = false;  // a weight matrix the recipe applies to (false: copied as is)
  bool fallback = false;     // the wanted type did not fit the row width
  std::string reason;        // "rule 'ffn_.*'", "Q4_K_M: use_more_bits layer 3/32", fallback note
};

struct PlannerOptions {
  FileType ftype = FileType::kMostlyQ8_0;
  std::vector<TypeRule> rules;  // first match wins; overrides the recipe
  bool pure = false;            // no mix adjustments (output / attn_v / ffn_down keep the base type)
  bool has_imatrix = false;     // Q4_0 / Q5_0: ffn_down of the first 1/8 layers get Q4_1 / Q5_1
  // Exact tensor name -> type (the mixed recipe's choices, tools/quant/recipe_search.h); they
  // override rules and the recipe. The width fallback still applies.
  std::map<std::string, TensorType> tensor_types;
};

// Decides tensor types in file order. The per-category counters (the i-th attn_v tensor out of
// n) are llama.cpp's, so decide() must see the tensors in the order they are written.
class TypePlanner {
 public:
  TypePlanner(PlannerOptions options, const std::vector<TensorDesc>& all_tensors);
  TypeDecision decide(const TensorDesc& tensor);

  // llama.cpp's layer heuristic: first 1/8, last 1/8, and every third layer in between.
  static bool use_more_bits(int i_layer, int n_layers);
  // Whether llama.cpp would quantize this tensor at all.
  static bool is_quantizable_weight(const TensorDesc& tensor);
  // Type actually usable for a row of `width` elements when `wanted` is asked for; sets *note.
  static TensorType fit_to_width(TensorType wanted, int64_t width, std::string* note);

 private:
  TensorType recipe_type(const TensorDesc& tensor, std::string* reason);

  PlannerOptions options_;
  bool has_output_ = false;
  int n_attention_wv_ = 0;
  int n_ffn_down_ = 0;
  int i_attention_wv_ = 0;
  int i_ffn_down_ = 0;
};

}  // namespace edgellm::quant
