// libFuzzer target for the document index file (docqa/index_file.h): any byte string must either
// decode into an index that encodes back to exactly those bytes, or throw Error(kInvalidFile).
// The checksum would stop almost every mutation at the door, so the fuzzer's bytes are taken as
// the body and sealed with a correct header first (what a hostile writer could do): the parser's
// own checks are what is fuzzed. A search over the decoded index touches every vector.
//
// Seeds: with EDGELLM_FUZZ_SEED_DIR set, LLVMFuzzerInitialize writes the bodies of two small
// valid indexes (int8 and f16) there.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/sha256.h"
#include "docqa/index_file.h"
#include "docqa/vector_index.h"

namespace {

constexpr size_t kHeader = 16 + 4 + 4 + 8 + 32;

std::string seal(const uint8_t* body, size_t n) {
  std::string out(edgellm::kIndexMagic, sizeof edgellm::kIndexMagic);
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((edgellm::kIndexFormatVersion >> (8 * i)) & 0xFF));
  out.append(4, '\0');
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((static_cast<uint64_t>(n) >> (8 * i)) & 0xFF));
  edgellm::Sha256 h;
  h.update(body, n);
  const edgellm::Sha256::Digest d = h.finish();
  out.append(reinterpret_cast<const char*>(d.data()), d.size());
  out.append(reinterpret_cast<const char*>(body), n);
  return out;
}

std::string sample_body(edgellm::VectorType type) {
  edgellm::VectorIndex ix(4, type, "seed model");
  const float v[8] = {0.5f, -0.5f, 0.5f, 0.5f, 1, 0, 0, 0};
  ix.add_document("a.txt", std::string(64, '0'), 1, 12, {{0, 5, "hello"}, {6, 11, "world"}}, v);
  ix.add_document("b/c.md", std::string(64, 'f'), 2, 3, {{0, 3, "中"}}, v + 4);
  ix.remove_document("a.txt");
  ix.add_document("a.txt", std::string(64, '1'), 3, 5, {{0, 5, "again"}}, v);
  return edgellm::encode_index(ix, R"({"chunk_tokens": 8})").substr(kHeader);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("EDGELLM_FUZZ_SEED_DIR")) {
    const edgellm::VectorType types[] = {edgellm::VectorType::kInt8, edgellm::VectorType::kF16};
    for (const edgellm::VectorType t : types) {
      const std::string body = sample_body(t);
      const std::string path = std::string(dir) + "/seed-" + edgellm::vector_type_name(t);
      if (FILE* f = std::fopen(path.c_str(), "wb")) {
        std::fwrite(body.data(), 1, body.size(), f);
        std::fclose(f);
      }
    }
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes = seal(data, size);
  try {
    const edgellm::IndexFile f = edgellm::decode_index(bytes, "fuzz");
    if (edgellm::encode_index(*f.index, f.settings) != bytes) std::abort();  // accepted an inexact file
    std::vector<float> q(static_cast<size_t>(f.index->dims()), 0.5f);
    (void)f.index->search(q.data(), 3);
  } catch (const edgellm::Error& e) {
    if (e.code() != edgellm::ErrorCode::kInvalidFile) std::abort();
  }
  return 0;
}
