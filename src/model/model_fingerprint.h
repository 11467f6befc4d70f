// A 64-bit identity of a model file, for the prefix cache's hash seed and for session files: two
// files with the same fingerprint hold the same model for KV purposes. It covers the GGUF header
// (every metadata key/value and tensor name, type, shape and offset), the file size and the
// first bytes of every tensor's data (so two synthetic models of one shape but other weights
// differ). Cost: one pass over the header (a few MB at most) and one page touched per tensor.
#pragma once

#include <cstdint>

namespace edgellm {

namespace gguf { class GgufFile; }

uint64_t model_fingerprint(const gguf::GgufFile& file);

}  // namespace edgellm
