// libFuzzer target for the GGUF reader: any byte string must either parse into a file whose every
// view lies inside the buffer, or throw edgellm::Error. ASan/UBSan (enabled by EDGELLM_FUZZ)
// catch over-reads when the views are touched below.
//
// Seeds: when EDGELLM_FUZZ_SEED_DIR is set, LLVMFuzzerInitialize writes a few small valid GGUF
// files there (built with GgufWriter: every value type, several tensor types, a vocab-only file)
// so scripts/run-fuzzers.sh can start from well-formed inputs without checked-in binaries.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"

namespace {

using edgellm::TensorType;
using edgellm::gguf::GgufWriter;

void save(const std::string& dir, const char* name, const std::vector<uint8_t>& bytes) {
  const std::string path = dir + "/" + name;
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  }
}

void write_seeds(const std::string& dir) {
  {
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    w.set_u32("llama.embedding_length", 32);
    w.set_u8("u8", 1);
    w.set_i8("i8", -1);
    w.set_u16("u16", 2);
    w.set_i16("i16", -2);
    w.set_i32("i32", -3);
    w.set_u64("u64", 4);
    w.set_i64("i64", -4);
    w.set_f32("f32", 0.5f);
    w.set_f64("f64", 0.25);
    w.set_bool("bool", true);
    w.set_array_string("tokenizer.ggml.tokens", std::vector<std::string>{"<s>", "a", "b"});
    w.set_array_f32("tokenizer.ggml.scores", {0.f, -1.f, -2.f});
    w.set_array_i32("tokenizer.ggml.token_type", {3, 1, 1});
    w.set_array_bool("flags", {true, false});
    w.set_array_u64("u64s", {1, 2});
    std::vector<uint8_t> zeros(256 * 4, 0);
    w.add_tensor("f32", TensorType::F32, {4, 2}, zeros.data(), 32);
    w.add_tensor("f16", TensorType::F16, {8}, zeros.data(), 16);
    w.add_tensor("q8_0", TensorType::Q8_0, {32}, zeros.data(), 34);
    w.add_tensor("q4_k", TensorType::Q4_K, {256}, zeros.data(), 144);
    save(dir, "seed-model.gguf", w.write_to_bytes());
  }
  {
    GgufWriter w;
    w.set_alignment(64);
    w.set_string("general.architecture", "gpt2");
    w.set_array_string("tokenizer.ggml.merges", std::vector<std::string>{"a b", "ab c"});
    save(dir, "seed-vocab.gguf", w.write_to_bytes());
  }
  {
    GgufWriter w;
    std::vector<float> x(3, 1.0f);
    w.add_tensor("x", TensorType::F32, {1, 1, 3}, x.data(), 12);
    save(dir, "seed-tiny.gguf", w.write_to_bytes());
  }
}

// Reads everything the parser exposes so a bad view is an ASan report, not a silent success.
size_t touch(const edgellm::gguf::GgufFile& f) {
  size_t acc = 0;
  for (const auto& kv : f.metadata()) {
    for (char c : kv.key) acc += static_cast<unsigned char>(c);
    const auto& v = kv.value;
    for (char c : v.str) acc += static_cast<unsigned char>(c);
    if (v.type == edgellm::gguf::ValueType::kArray && v.array_type == edgellm::gguf::ValueType::kString) {
      for (std::string_view s : v.string_elements())
        for (char c : s) acc += static_cast<unsigned char>(c);
    }
    if (v.type == edgellm::gguf::ValueType::kArray && v.array_type != edgellm::gguf::ValueType::kString) {
      for (uint64_t i = 0; i < v.array_size; ++i) acc += v.array_float(i) > 0;
    }
  }
  for (const auto& t : f.tensors()) {
    for (size_t i = 0; i < t.n_bytes; ++i) acc += t.data[i];
    acc += t.shape_string().size();
  }
  // Typed getters on whatever keys exist: errors are fine, crashes are not.
  for (const auto& kv : f.metadata()) {
    try { acc += f.get_int(kv.key).value_or(0) != 0; } catch (const edgellm::Error&) {}
    try { acc += f.get_float_array(kv.key).has_value(); } catch (const edgellm::Error&) {}
  }
  return acc;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("EDGELLM_FUZZ_SEED_DIR"); dir && *dir) write_seeds(dir);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto file = edgellm::gguf::GgufFile::from_bytes(data, size);
    volatile size_t sink = touch(*file);
    (void)sink;
  } catch (const edgellm::Error&) {
    // Rejected cleanly: the expected outcome for almost every input.
  }
  return 0;
}
