#include "model/pooling_type.h"

namespace edgellm {

const char* pooling_type_name(PoolingType type) {
  switch (type) {
    case PoolingType::kUnspecified: return "unspecified";
    case PoolingType::kNone: return "none";
    case PoolingType::kMean: return "mean";
    case PoolingType::kCls: return "cls";
    case PoolingType::kLast: return "last";
    case PoolingType::kRank: return "rank";
  }
  return "?";
}

std::optional<PoolingType> pooling_type_from_name(std::string_view name) {
  for (const PoolingType t :
       {PoolingType::kNone, PoolingType::kMean, PoolingType::kCls, PoolingType::kLast, PoolingType::kRank}) {
    if (name == pooling_type_name(t)) return t;
  }
  return std::nullopt;
}

std::optional<PoolingType> pooling_type_from_gguf(int64_t value) {
  if (value < 0 || value > 4) return std::nullopt;
  return static_cast<PoolingType>(value);
}

}  // namespace edgellm
