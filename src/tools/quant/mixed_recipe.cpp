#include "tools/quant/mixed_recipe.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <set>

#include "core/error.h"
#include "gguf/gguf_writer.h"

namespace edgellm::quant {
namespace {

uint64_t padded(uint64_t bytes, uint32_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

uint64_t tensor_bytes(const gguf::TensorInfo& t, TensorType type) {
  return tensor_row_bytes(type, t.ne[0]) * static_cast<uint64_t>(t.n_rows());
}

// Size of the file quantize_model() writes for these per-tensor types.
uint64_t file_size_for(const gguf::GgufFile& in, const std::vector<TypeDecision>& types, const QuantizeParams& params) {
  gguf::GgufWriter w;
  describe_output(in, types, params, w);
  return w.file_size();
}

}  // namespace

SizeTarget parse_target_size(std::string_view text) {
  SizeTarget t;
  const std::string s(text);
  require(!s.empty(), ErrorCode::kInvalidArgument, "--target-size: empty value");
  if (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '.') {
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    double mult = 1;
    const std::string suffix(end);
    if (suffix == "K" || suffix == "k")
      mult = 1024.0;
    else if (suffix == "M" || suffix == "m")
      mult = 1024.0 * 1024;
    else if (suffix == "G" || suffix == "g")
      mult = 1024.0 * 1024 * 1024;
    else
      require(suffix.empty(), ErrorCode::kInvalidArgument, "--target-size '" + s + "': unknown suffix (K, M or G)");
    require(std::isfinite(v) && v > 0 && v * mult < 1e18, ErrorCode::kInvalidArgument,
            "--target-size '" + s + "' is not a positive size");
    t.kind = SizeTarget::Kind::kFileBytes;
    t.bytes = static_cast<uint64_t>(v * mult);
    return t;
  }
  t.kind = SizeTarget::Kind::kFileType;
  t.ftype = file_type_from_name(s);  // throws naming the accepted names
  return t;
}

SizeTarget parse_target_bpw(std::string_view text) {
  const std::string s(text);
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  require(!s.empty() && *end == '\0' && std::isfinite(v) && v > 0 && v <= 32, ErrorCode::kInvalidArgument,
          "--target-bpw '" + s + "' is not a number of bits per weight in (0, 32]");
  SizeTarget t;
  t.kind = SizeTarget::Kind::kBitsPerWeight;
  t.bpw = v;
  return t;
}

MixedRecipePlan plan_mixed_recipe(const gguf::GgufFile& in, const SensitivityTable& table, const QuantizeParams& params,
                                  const SizeTarget& target, RecipeObjective objective) {
  // The table must describe this model: every searched tensor present with its shape.
  std::set<std::string> searched;
  for (const TensorSensitivity& t : table.tensors) {
    const gguf::TensorInfo* info = in.find_tensor(t.name);
    require(info != nullptr && info->ne[0] == t.n_in && info->n_rows() == t.n_out, ErrorCode::kInvalidArgument,
            "the sensitivity table does not fit this model: tensor '" + t.name + "' " +
                (info == nullptr ? "is missing" : "has another shape " + info->shape_string()));
    searched.insert(t.name);
  }
  // The types of the tensors the table does not cover (norms: kept) come from the recipe.
  std::vector<TypeDecision> types = plan_tensor_types(in, planner_options(params));
  const auto& tensors = in.tensors();
  MixedRecipePlan plan;
  uint64_t fixed_raw = 0, fixed_padded = 0, searched_padded_first = 0;
  gguf::GgufWriter probe;
  describe_output(in, types, params, probe);
  const uint32_t alignment = probe.alignment();
  for (size_t i = 0; i < tensors.size(); ++i) {
    plan.n_elements += tensors[i].n_elements();
    if (searched.count(std::string(tensors[i].name)) != 0) {
      searched_padded_first += padded(tensor_bytes(tensors[i], types[i].type), alignment);
      continue;
    }
    fixed_raw += tensor_bytes(tensors[i], types[i].type);
    fixed_padded += padded(tensor_bytes(tensors[i], types[i].type), alignment);
  }
  // Everything of the file but the searched tensors' padded data: header, metadata, fixed tensors.
  const uint64_t header = probe.file_size() - searched_padded_first - fixed_padded;

  uint64_t budget = 0;
  uint32_t count_alignment = alignment;
  switch (target.kind) {
    case SizeTarget::Kind::kFileBytes:
    case SizeTarget::Kind::kFileType: {
      if (target.kind == SizeTarget::Kind::kFileBytes) {
        plan.target_file_bytes = target.bytes;
      } else {
        QuantizeParams yardstick;
        yardstick.ftype = target.ftype;
        plan.target_file_bytes = file_size_for(in, plan_tensor_types(in, planner_options(yardstick)), yardstick);
      }
      require(plan.target_file_bytes > header + fixed_padded, ErrorCode::kInvalidArgument,
              "the target size of " + std::to_string(plan.target_file_bytes) +
                  " bytes does not even hold the header and the "
                  "tensors kept as they are (" +
                  std::to_string(header + fixed_padded) + " bytes)");
      budget = plan.target_file_bytes - header - fixed_padded;
      break;
    }
    case SizeTarget::Kind::kBitsPerWeight: {
      const double total = target.bpw * static_cast<double>(plan.n_elements) / 8.0;
      require(total > static_cast<double>(fixed_raw), ErrorCode::kInvalidArgument,
              "--target-bpw " + std::to_string(target.bpw) + " does not even hold the tensors kept as they are");
      budget = static_cast<uint64_t>(std::floor(total)) - fixed_raw;
      count_alignment = 0;
      break;
    }
  }
  plan.recipe = choose_recipe(table, budget, count_alignment, objective);
  plan.abnormal = find_abnormal(table);
  for (const RecipeChoice& c : plan.recipe.choices) plan.tensor_types[c.name] = c.type;

  // The file these choices give, as quantize_model() will plan it.
  QuantizeParams final_params = params;
  final_params.tensor_types = plan.tensor_types;
  const std::vector<TypeDecision> final_types = plan_tensor_types(in, planner_options(final_params));
  plan.file_bytes = file_size_for(in, final_types, final_params);
  plan.tensor_bytes = planned_tensor_bytes(in, final_types);
  if (plan.target_file_bytes > 0) {
    require(plan.file_bytes <= plan.target_file_bytes, ErrorCode::kInternal,
            "mixed recipe: planned " + std::to_string(plan.file_bytes) + " bytes above the target " +
                std::to_string(plan.target_file_bytes));
  }
  return plan;
}

}  // namespace edgellm::quant
