#include "kernels/tensor_type.h"

#include <array>
#include <cctype>
#include <iterator>
#include <string>

#include "core/error.h"
#include "kernels/blocks.h"

namespace edgellm {
namespace {

constexpr TensorTypeTraits kTraits[] = {
    {TensorType::F32, "f32", 1, 4, false, true, true},
    {TensorType::F16, "f16", 1, 2, false, true, true},
    {TensorType::Q4_0, "q4_0", kQK4_0, sizeof(BlockQ4_0), true, true, true},
    {TensorType::Q4_1, "q4_1", kQK4_1, sizeof(BlockQ4_1), true, true, true},
    {TensorType::Q5_0, "q5_0", kQK5_0, sizeof(BlockQ5_0), true, true, true},
    {TensorType::Q5_1, "q5_1", kQK5_1, sizeof(BlockQ5_1), true, true, true},
    {TensorType::Q8_0, "q8_0", kQK8_0, sizeof(BlockQ8_0), true, true, true},
    {TensorType::Q8_1, "q8_1", kQK8_1, sizeof(BlockQ8_1), true, false, true},
    {TensorType::Q4_K, "q4_K", kQK_K, sizeof(BlockQ4_K), true, true, true},
    {TensorType::Q5_K, "q5_K", kQK_K, sizeof(BlockQ5_K), true, true, true},
    {TensorType::Q6_K, "q6_K", kQK_K, sizeof(BlockQ6_K), true, true, true},
    {TensorType::Q8_K, "q8_K", kQK_K, sizeof(BlockQ8_K), true, false, true},
    {TensorType::BF16, "bf16", 1, 2, false, true, true},
    {TensorType::I8, "i8", 1, 1, false, false, true},
    {TensorType::Q4_0_X16, "q4_0x16", kQK4_0, sizeof(BlockQ4_0), true, true, false},
    {TensorType::Q5_0_X16, "q5_0x16", kQK5_0, sizeof(BlockQ5_0), true, true, false},
    {TensorType::Q8_0_X16, "q8_0x16", kQK8_0, sizeof(BlockQ8_0), true, true, false},
    {TensorType::Q8_0_S, "q8_0s", kQK8_0, sizeof(BlockQ8_0S), true, false, false},
    // 16 rows of Q4_K: the file's 16 x 144 bytes plus 4 bytes per row for unpacked scales.
    {TensorType::Q4_K_X16, "q4_Kx16", kQK_K, kQ4KX16RowBlockBytes, true, true, false},
    // 16 rows of Q5_K: the file's 16 x 176 bytes plus 4 bytes per row for unpacked scales.
    {TensorType::Q5_K_X16, "q5_Kx16", kQK_K, kQ5KX16RowBlockBytes, true, true, false},
    {TensorType::Q8_K_S, "q8_Ks", kQK_K, sizeof(BlockQ8_KS), true, false, false},
    {TensorType::Q6_K_X16, "q6_Kx16", kQK_K, sizeof(BlockQ6_K), true, true, false},
};

// Index into kTraits by raw type id (-1 = unknown), built at compile time: the traits are looked
// up several times per matmul call (validation, row sizes), thousands of times per decoded token.
constexpr uint32_t kIdSlots = 1024;  // every id, GGUF's and the internal 1000+ ones, is below this
constexpr std::array<int8_t, kIdSlots> kIndexById = [] {
  std::array<int8_t, kIdSlots> index{};
  for (auto& i : index) i = -1;
  for (size_t i = 0; i < std::size(kTraits); ++i) {
    const auto id = static_cast<uint32_t>(kTraits[i].type);
    if (id >= kIdSlots || index[id] != -1) throw "tensor type ids must be unique and below kIdSlots";
    index[id] = static_cast<int8_t>(i);
  }
  return index;
}();

}  // namespace

const TensorTypeTraits* find_tensor_type(uint32_t raw_id) {
  if (raw_id >= kIdSlots || kIndexById[raw_id] < 0) return nullptr;
  return &kTraits[kIndexById[raw_id]];
}

const TensorTypeTraits& tensor_type_traits(TensorType type) {
  const TensorTypeTraits* t = find_tensor_type(static_cast<uint32_t>(type));
  if (!t) throw Error(ErrorCode::kUnsupported, "unsupported tensor type id " + std::to_string(static_cast<uint32_t>(type)));
  return *t;
}

std::optional<TensorType> tensor_type_from_name(std::string_view name) {
  for (const auto& t : kTraits) {
    const std::string_view n = t.name;
    if (n.size() != name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < n.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(n[i])) != std::tolower(static_cast<unsigned char>(name[i]))) {
        same = false;
        break;
      }
    }
    if (same) return t.type;
  }
  return std::nullopt;
}

const char* tensor_type_name(TensorType type) {
  const TensorTypeTraits* t = find_tensor_type(static_cast<uint32_t>(type));
  return t ? t->name : "unknown";
}

size_t tensor_row_bytes(TensorType type, int64_t n) {
  const auto& t = tensor_type_traits(type);
  return static_cast<size_t>(n / t.block_size) * t.block_bytes;
}

int64_t tensor_block_size(TensorType type) { return tensor_type_traits(type).block_size; }

}  // namespace edgellm
