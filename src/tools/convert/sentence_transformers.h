// The pooling a sentence-transformers model declares, read as llama.cpp's converter reads it
// (_try_set_pooling_type): modules.json lists the pipeline's modules; the first whose type ends in
// "Pooling" names a folder ("1_Pooling") whose config.json says how token states become one
// vector:
//
//   modules.json            [{"idx": 1, "name": "1", "path": "1_Pooling",
//                             "type": "sentence_transformers.models.Pooling"}, ...]
//   1_Pooling/config.json   {"pooling_mode_cls_token": false, "pooling_mode_mean_tokens": true, ...}
//                           or {"pooling_mode": "mean"} (newer sentence-transformers)
//
// mean -> PoolingType::kMean, cls -> kCls, lasttoken -> kLast (the first true flag in that order,
// as llama.cpp). The written "<arch>.pooling_type" is what EdgeLLM's embedder and llama.cpp
// pool with by default.
#pragma once

#include <optional>
#include <string>

#include "model/pooling_type.h"

namespace edgellm::convert {

class HfCheckpoint;

struct DeclaredPooling {
  PoolingType type = PoolingType::kUnspecified;
  std::string source;  // "1_Pooling/config.json pooling_mode_mean_tokens"
};

// nullopt when the directory has no modules.json or it lists no Pooling module (the model then
// declares nothing: EdgeLLM pools an encoder by mean). Errors: kInvalidFile (a malformed
// modules.json or pooling config, a module path that leaves the directory), kIo (a listed pooling
// config that is missing), kUnsupported (max / weighted-mean / sqrt-length pooling, which neither
// engine implements: refused rather than silently pooled another way).
std::optional<DeclaredPooling> read_sentence_transformers_pooling(const HfCheckpoint& checkpoint);

}  // namespace edgellm::convert
