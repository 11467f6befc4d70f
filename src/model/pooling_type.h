// How per-token hidden states become one output per sequence (engine/pooling.h does it). The
// values are GGUF's "<arch>.pooling_type" (llama.cpp's enum llama_pooling_type), so a file's
// declaration maps 1:1; the names are llama-server's --pooling values.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace edgellm {

enum class PoolingType : int32_t {
  kUnspecified = -1,  // the model declares none: mean for encoders, last for decoders
  kNone = 0,          // one vector per token
  kMean = 1,          // the average over the sequence's tokens
  kCls = 2,           // the first token's state ([CLS])
  kLast = 3,          // the last token's state (decoder embedders: Qwen3-Embedding)
  kRank = 4,          // a relevance score: the classification head over CLS (or the last token)
};

const char* pooling_type_name(PoolingType type);  // "none", "mean", "cls", "last", "rank", "unspecified"
// "none" | "mean" | "cls" | "last" | "rank" (case-sensitive, as llama-server); nullopt otherwise.
std::optional<PoolingType> pooling_type_from_name(std::string_view name);
// GGUF's integer value; nullopt outside [0, 4].
std::optional<PoolingType> pooling_type_from_gguf(int64_t value);

}  // namespace edgellm
