#include "model/architecture.h"

#include "core/error.h"

namespace edgellm {

namespace {

constexpr Architecture kArchitectures[] = {
    {"llama", RopeStyle::kNormal, /*qkv_bias=*/false, /*qk_norm=*/false},
    {"qwen2", RopeStyle::kNeox, /*qkv_bias=*/true, /*qk_norm=*/false},
    {"qwen3", RopeStyle::kNeox, /*qkv_bias=*/false, /*qk_norm=*/true},
    // RoPE style unused (learned positions); Q/K/V biases present in every BERT checkpoint.
    {"bert", RopeStyle::kNormal, /*qkv_bias=*/true, /*qk_norm=*/false, /*encoder=*/true},
};

}  // namespace

std::vector<std::string> supported_architectures() {
  std::vector<std::string> names;
  for (const auto& a : kArchitectures) names.emplace_back(a.name);
  return names;
}

std::string supported_architectures_list() {
  std::string s;
  for (const auto& a : kArchitectures) {
    if (!s.empty()) s += ", ";
    s += a.name;
  }
  return s;
}

const Architecture& find_architecture(std::string_view name) {
  for (const auto& a : kArchitectures) {
    if (name == a.name) return a;
  }
  throw Error(ErrorCode::kUnsupported, "model architecture '" + std::string(name) +
                                           "' is not supported (supported: " + supported_architectures_list() + ")");
}

}  // namespace edgellm
