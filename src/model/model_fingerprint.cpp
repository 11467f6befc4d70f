#include "model/model_fingerprint.h"

#include <algorithm>

#include "gguf/gguf_reader.h"
#include "core/hash.h"

namespace edgellm {

namespace {

constexpr size_t kTensorSampleBytes = 64;

}  // namespace

uint64_t model_fingerprint(const gguf::GgufFile& file) {
  const uint8_t* base = file.mapping().data();
  uint64_t h = hash_combine(0x65646765'6c6c6d31ULL, file.file_size());
  h = hash_bytes(h, base, std::min(file.data_offset(), file.file_size()));
  for (const auto& t : file.tensors()) {
    if (t.data != nullptr) h = hash_bytes(h, t.data, std::min(t.n_bytes, kTensorSampleBytes));
  }
  return h;
}

}  // namespace edgellm
