// Hostile and broken GGUF files: a corpus generated here by targeted corruptions of a valid file
// (each assembled byte by byte by a builder written for this test, independent of GgufWriter),
// plus systematic truncation at every offset and seeded random byte flips. Every case must end in
// edgellm::Error with the right code and a message naming the problem — never a crash, another
// exception type, or a huge allocation (run under -DEDGELLM_SANITIZE=ON to catch over-reads).
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "support/test_env.h"

namespace edgellm::gguf {
namespace {

// ---------------------------------------------------------------- a tiny independent GGUF builder

struct RawTensor {
  std::string name;
  std::vector<uint64_t> ne;
  uint32_t type = 0;  // ggml id
  uint64_t offset = 0;
};

class Builder {
 public:
  uint32_t version = 3;
  std::vector<uint8_t> magic = {'G', 'G', 'U', 'F'};
  std::optional<uint64_t> n_tensors_override;
  std::optional<uint64_t> n_kv_override;
  std::vector<std::vector<uint8_t>> kvs;  // each: encoded key + type + value
  std::vector<RawTensor> tensors;
  uint64_t alignment = 32;  // only used for the padding before the data section
  size_t data_bytes = 0;    // size of the data section (filled with a pattern)

  static void u32(std::vector<uint8_t>& b, uint32_t v) { for (int i = 0; i < 4; ++i) b.push_back(uint8_t(v >> (8 * i))); }
  static void u64(std::vector<uint8_t>& b, uint64_t v) { for (int i = 0; i < 8; ++i) b.push_back(uint8_t(v >> (8 * i))); }
  static void str(std::vector<uint8_t>& b, std::string_view s) { u64(b, s.size()); b.insert(b.end(), s.begin(), s.end()); }

  // Key + type id; the caller appends the value.
  std::vector<uint8_t>& kv(std::string_view key, uint32_t type) {
    kvs.emplace_back();
    str(kvs.back(), key);
    u32(kvs.back(), type);
    return kvs.back();
  }
  void kv_u32(std::string_view key, uint32_t v) { u32(kv(key, 4), v); }
  void kv_str(std::string_view key, std::string_view v) { str(kv(key, 8), v); }

  std::vector<uint8_t> build() const {
    std::vector<uint8_t> b(magic);
    u32(b, version);
    u64(b, n_tensors_override.value_or(tensors.size()));
    u64(b, n_kv_override.value_or(kvs.size()));
    for (const auto& kv : kvs) b.insert(b.end(), kv.begin(), kv.end());
    for (const RawTensor& t : tensors) {
      str(b, t.name);
      u32(b, static_cast<uint32_t>(t.ne.size()));
      for (uint64_t n : t.ne) u64(b, n);
      u32(b, t.type);
      u64(b, t.offset);
    }
    while (b.size() % alignment != 0) b.push_back(0);
    for (size_t i = 0; i < data_bytes; ++i) b.push_back(static_cast<uint8_t>(i * 7 + 1));
    return b;
  }
};

// A valid file: 3 KVs (string, u32, string array), two f32 tensors of 16 and 8 elements at offsets
// 0 and 64; the last one ends exactly at the end of the file.
Builder valid_builder() {
  Builder b;
  b.kv_str("general.architecture", "llama");
  b.kv_u32("llama.embedding_length", 16);
  {
    auto& v = b.kv("tokenizer.ggml.tokens", 9);
    Builder::u32(v, 8);
    Builder::u64(v, 2);
    Builder::str(v, "a");
    Builder::str(v, "bc");
  }
  b.tensors.push_back({"w0", {16}, 0, 0});
  b.tensors.push_back({"w1", {4, 2}, 0, 64});
  b.data_bytes = 64 + 32;
  return b;
}

// Reads every value and every tensor byte, so ASan sees any view pointing outside the buffer.
size_t touch_everything(const GgufFile& f) {
  size_t acc = 0;
  for (const KeyValue& kv : f.metadata()) {
    acc += kv.key.size();
    for (char c : kv.key) acc += static_cast<unsigned char>(c);
    const Value& v = kv.value;
    for (char c : v.str) acc += static_cast<unsigned char>(c);
    if (v.type == ValueType::kArray) {
      if (v.array_type == ValueType::kString) {
        for (std::string_view s : v.string_elements())
          for (char c : s) acc += static_cast<unsigned char>(c);
      }
      if (v.array_type != ValueType::kString) {
        for (uint64_t i = 0; i < v.array_size; ++i) acc += static_cast<size_t>(v.array_float(i) != 0);
      }
    }
  }
  for (const TensorInfo& t : f.tensors()) {
    for (size_t i = 0; i < t.n_bytes; ++i) acc += t.data[i];
    acc += t.name.size();
  }
  return acc;
}

// Parses bytes; returns "" on success, else the error message. Fails the test for anything that is
// not an edgellm::Error.
std::string parse_error(const std::vector<uint8_t>& bytes, ErrorCode* code = nullptr, const ReadOptions& opts = {}) {
  try {
    auto f = GgufFile::from_bytes(bytes.data(), bytes.size(), opts);
    touch_everything(*f);
    return "";
  } catch (const Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
}

void expect_rejected(const Builder& b, ErrorCode want_code, const std::string& want_text) {
  ErrorCode code{};
  const std::string msg = parse_error(b.build(), &code);
  ASSERT_FALSE(msg.empty()) << "accepted a file that should fail with: " << want_text;
  EXPECT_EQ(code, want_code) << msg;
  EXPECT_NE(msg.find(want_text), std::string::npos) << "message: " << msg << "\nexpected to contain: " << want_text;
}

TEST(GgufHostile, ValidBaselineParses) {
  const std::vector<uint8_t> bytes = valid_builder().build();
  auto f = GgufFile::from_bytes(bytes.data(), bytes.size());
  EXPECT_EQ(f->tensors().size(), 2u);
  EXPECT_EQ(f->find_tensor("w1")->n_bytes, 32u);
  EXPECT_EQ(f->find_tensor("w1")->data + 32, f->mapping().data() + bytes.size());
  EXPECT_EQ(f->get_string_array("tokenizer.ggml.tokens")->at(1), "bc");
}

TEST(GgufHostile, HeaderCorruptions) {
  { Builder b = valid_builder(); b.magic = {'G', 'G', 'M', 'L'}; expect_rejected(b, ErrorCode::kInvalidFile, "bad magic"); }
  { Builder b = valid_builder(); b.version = 1; expect_rejected(b, ErrorCode::kUnsupported, "GGUF version 1 is not supported"); }
  { Builder b = valid_builder(); b.version = 0; expect_rejected(b, ErrorCode::kUnsupported, "version 0"); }
  { Builder b = valid_builder(); b.version = 4; expect_rejected(b, ErrorCode::kUnsupported, "version 4"); }
  { Builder b = valid_builder(); b.version = 0x03000000; expect_rejected(b, ErrorCode::kUnsupported, "big-endian"); }
  { Builder b = valid_builder(); b.n_kv_override = uint64_t{1} << 60; expect_rejected(b, ErrorCode::kInvalidFile, "metadata entries"); }
  { Builder b = valid_builder(); b.n_kv_override = ~uint64_t{0}; expect_rejected(b, ErrorCode::kInvalidFile, "metadata entries"); }
  { Builder b = valid_builder(); b.n_tensors_override = uint64_t{1} << 62; expect_rejected(b, ErrorCode::kInvalidFile, "tensors but only"); }
  // One more KV than present: the parser runs into the tensor infos and fails somewhere, cleanly.
  { Builder b = valid_builder(); b.n_kv_override = 4; ErrorCode c{}; EXPECT_FALSE(parse_error(b.build(), &c).empty()); }

  std::vector<uint8_t> bytes = {'G', 'G', 'U'};
  EXPECT_NE(parse_error(bytes).find("bad magic"), std::string::npos);
  bytes = {'G', 'G', 'U', 'F', 3, 0, 0, 0, 0, 0};
  EXPECT_NE(parse_error(bytes).find("truncated header"), std::string::npos) << parse_error(bytes);
  EXPECT_NE(parse_error({}).find("empty"), std::string::npos);
}

TEST(GgufHostile, MetadataCorruptions) {
  {  // key length far beyond the file
    Builder b = valid_builder();
    b.kvs[0].assign(8, 0xff);
    b.kvs[0][7] = 0x7f;
    expect_rejected(b, ErrorCode::kInvalidFile, "claims");
  }
  { Builder b = valid_builder(); b.kv("x", 13).push_back(0); expect_rejected(b, ErrorCode::kInvalidFile, "unknown value type id 13"); }
  { Builder b = valid_builder(); b.kv("x", 0xffffffffu).push_back(0); expect_rejected(b, ErrorCode::kInvalidFile, "unknown value type"); }
  {  // nested array
    Builder b = valid_builder();
    auto& v = b.kv("nest", 9);
    Builder::u32(v, 9);
    Builder::u64(v, 1);
    Builder::u32(v, 4);
    Builder::u64(v, 1);
    Builder::u32(v, 5);
    expect_rejected(b, ErrorCode::kUnsupported, "nested arrays");
  }
  {  // array element type unknown
    Builder b = valid_builder();
    auto& v = b.kv("arr", 9);
    Builder::u32(v, 77);
    Builder::u64(v, 0);
    expect_rejected(b, ErrorCode::kInvalidFile, "unknown element type id 77");
  }
  {  // u32 array claiming 2^61 elements: count * 4 would overflow 64 bits if computed naively
    Builder b = valid_builder();
    auto& v = b.kv("arr", 9);
    Builder::u32(v, 4);
    Builder::u64(v, uint64_t{1} << 62);
    expect_rejected(b, ErrorCode::kInvalidFile, "uint32 array 'arr'");
  }
  {  // string array claiming a billion elements
    Builder b = valid_builder();
    auto& v = b.kv("strs", 9);
    Builder::u32(v, 8);
    Builder::u64(v, 1000000000);
    expect_rejected(b, ErrorCode::kInvalidFile, "string array 'strs'");
  }
  {  // a string element whose length runs past the end
    Builder b = valid_builder();
    auto& v = b.kv("strs", 9);
    Builder::u32(v, 8);
    Builder::u64(v, 1);
    Builder::u64(v, 1u << 20);
    expect_rejected(b, ErrorCode::kInvalidFile, "element 0 of 'strs'");
  }
  { Builder b = valid_builder(); b.kv_u32("llama.embedding_length", 32); expect_rejected(b, ErrorCode::kInvalidFile, "duplicate metadata key 'llama.embedding_length'"); }
  { Builder b = valid_builder(); b.kv("flag", 7).push_back(2); expect_rejected(b, ErrorCode::kInvalidFile, "must be 0 or 1"); }
  {  // bool array with a 7
    Builder b = valid_builder();
    auto& v = b.kv("flags", 9);
    Builder::u32(v, 7);
    Builder::u64(v, 2);
    v.push_back(1);
    v.push_back(7);
    expect_rejected(b, ErrorCode::kInvalidFile, "element 1 is 7");
  }
  { Builder b = valid_builder(); b.kv_u32("general.alignment", 0); expect_rejected(b, ErrorCode::kInvalidFile, "general.alignment 0"); }
  { Builder b = valid_builder(); b.kv_u32("general.alignment", 48); expect_rejected(b, ErrorCode::kInvalidFile, "general.alignment 48 is not a power of two"); }
  { Builder b = valid_builder(); b.kv_str("general.alignment", "32"); expect_rejected(b, ErrorCode::kInvalidFile, "general.alignment has type string"); }
  {  // negative alignment as int32
    Builder b = valid_builder();
    Builder::u32(b.kv("general.alignment", 5), 0xffffffe0u);
    expect_rejected(b, ErrorCode::kInvalidFile, "general.alignment -32");
  }
  {  // control bytes in a key are escaped in the message, not printed raw
    Builder b = valid_builder();
    b.kv_u32(std::string("bad\x01key", 7), 1);
    b.kv_u32(std::string("bad\x01key", 7), 2);
    expect_rejected(b, ErrorCode::kInvalidFile, "'bad\\x01key'");
  }
}

TEST(GgufHostile, TensorInfoCorruptions) {
  { Builder b = valid_builder(); b.tensors[0].ne = {}; expect_rejected(b, ErrorCode::kInvalidFile, "tensor 'w0' has 0 dimensions"); }
  { Builder b = valid_builder(); b.tensors[0].ne = {1, 1, 1, 1, 16}; expect_rejected(b, ErrorCode::kInvalidFile, "has 5 dimensions"); }
  { Builder b = valid_builder(); b.tensors[1].ne = {4, 0}; expect_rejected(b, ErrorCode::kInvalidFile, "tensor 'w1' dimension 1 is 0"); }
  { Builder b = valid_builder(); b.tensors[1].ne = {4, ~uint64_t{0}}; expect_rejected(b, ErrorCode::kInvalidFile, "dimension 1 is -1"); }
  {  // product overflow: 2^32 * 2^32
    Builder b = valid_builder();
    b.tensors[1].ne = {uint64_t{1} << 32, uint64_t{1} << 32};
    expect_rejected(b, ErrorCode::kInvalidFile, "element count overflows");
  }
  {  // elements fit int64 but bytes (x4 for f32) overflow 64 bits
    Builder b = valid_builder();
    b.tensors[1].ne = {uint64_t{1} << 31, uint64_t{1} << 31};  // 2^62 elements, 2^64 bytes
    expect_rejected(b, ErrorCode::kInvalidFile, "size in bytes overflows");
  }
  {  // fits 64 bits but is larger than the file
    Builder b = valid_builder();
    b.tensors[1].ne = {uint64_t{1} << 20, uint64_t{1} << 20};
    expect_rejected(b, ErrorCode::kInvalidFile, "more than the whole file");
  }
  { Builder b = valid_builder(); b.tensors[0].type = 2; b.tensors[0].ne = {33}; expect_rejected(b, ErrorCode::kInvalidFile, "row length 33, not a multiple of the block size 32"); }
  { Builder b = valid_builder(); b.tensors[0].type = 23; expect_rejected(b, ErrorCode::kUnsupported, "type id 23 (iq4_xs), which is not supported by EdgeLLM"); }
  { Builder b = valid_builder(); b.tensors[0].type = 10; expect_rejected(b, ErrorCode::kUnsupported, "type id 10 (q2_K)"); }
  { Builder b = valid_builder(); b.tensors[0].type = 999; expect_rejected(b, ErrorCode::kUnsupported, "type id 999 (not a ggml type)"); }
  { Builder b = valid_builder(); b.tensors[0].type = 15; b.tensors[0].ne = {256}; expect_rejected(b, ErrorCode::kUnsupported, "type id 15 (q8_K)"); }
  { Builder b = valid_builder(); b.tensors[1].offset = 65; expect_rejected(b, ErrorCode::kInvalidFile, "data offset 65 is not a multiple of the alignment 32"); }
  { Builder b = valid_builder(); b.tensors[1].offset = 96; expect_rejected(b, ErrorCode::kInvalidFile, "outside the data section"); }
  { Builder b = valid_builder(); b.tensors[1].offset = ~uint64_t{0} - 31; expect_rejected(b, ErrorCode::kInvalidFile, "outside the data section"); }
  { Builder b = valid_builder(); b.data_bytes = 64 + 31; expect_rejected(b, ErrorCode::kInvalidFile, "outside the data section"); }
  { Builder b = valid_builder(); b.tensors[1].name = "w0"; expect_rejected(b, ErrorCode::kInvalidFile, "duplicate tensor name 'w0'"); }
  { Builder b = valid_builder(); b.tensors[1].name = ""; expect_rejected(b, ErrorCode::kInvalidFile, "empty name"); }
  {  // overlap: w1 (32 bytes) placed inside w0 (64 bytes)
    Builder b = valid_builder();
    b.tensors[1].offset = 32;
    expect_rejected(b, ErrorCode::kInvalidFile, "overlap");
    ReadOptions lenient;
    lenient.reject_overlapping_tensors = false;
    EXPECT_EQ(parse_error(b.build(), nullptr, lenient), "");
  }
  {  // metadata ends, tensor infos promised but missing
    Builder b = valid_builder();
    b.tensors.clear();
    b.n_tensors_override = 0;
    b.data_bytes = 0;
    std::vector<uint8_t> bytes = b.build();
    bytes[8] = 1;  // n_tensors = 1: the parser runs into the padding and the end of the file
    ErrorCode code{};
    EXPECT_FALSE(parse_error(bytes, &code).empty());
    EXPECT_EQ(code, ErrorCode::kInvalidFile);
  }
}

// Every prefix of a valid file is an error: the last tensor ends exactly at the end of the file.
TEST(GgufHostile, TruncationAtEveryOffset) {
  const std::vector<uint8_t> full = valid_builder().build();
  ASSERT_EQ(parse_error(full), "");
  for (size_t n = 0; n < full.size(); ++n) {
    std::vector<uint8_t> prefix(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
    ErrorCode code{};
    const std::string msg = parse_error(prefix, &code);
    ASSERT_FALSE(msg.empty()) << "prefix of " << n << " bytes accepted";
    ASSERT_EQ(code, ErrorCode::kInvalidFile) << n << ": " << msg;
  }
}

// The same over the header of a real model (first 16 KiB covers all 48 tensor infos).
TEST(GgufHostile, TruncatedRealModelHeader) {
  const std::string raw = edgellm::test::read_file(edgellm::test::shared_model("stories260K.gguf"));
  constexpr size_t kHeaderBytes = 14176;  // data section offset (see test_gguf_reader)
  for (size_t n = 0; n <= kHeaderBytes + 64; n += (n < 256 ? 1 : 7)) {
    ErrorCode code{};
    std::vector<uint8_t> prefix(raw.begin(), raw.begin() + static_cast<std::ptrdiff_t>(n));
    ASSERT_FALSE(parse_error(prefix, &code).empty()) << n;
    ASSERT_EQ(code, ErrorCode::kInvalidFile) << n;
  }
}

// Seeded random corruption: whatever happens, it is a clean Error or a successfully parsed file
// whose views all stay inside the buffer (touch_everything reads them all).
TEST(GgufHostile, RandomByteFlips) {
  std::vector<uint8_t> base;
  {
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    w.set_u32("general.alignment", 32);
    w.set_array_string("tokenizer.ggml.tokens", std::vector<std::string>{"<s>", "hello", "world"});
    w.set_array_f32("tokenizer.ggml.scores", {0.f, -1.f, -2.f});
    w.set_array_i32("tokenizer.ggml.token_type", {3, 1, 1});
    w.set_bool("b", true);
    w.set_f64("d", 2.0);
    std::vector<float> x(64, 1.0f);
    w.add_tensor("a", TensorType::F32, {8, 8}, x.data(), x.size() * 4);
    std::vector<uint8_t> q(34 * 2, 0);  // 64 elements = 2 q8_0 blocks of 34 bytes
    w.add_tensor("q", TensorType::Q8_0, {64}, q.data(), q.size());
    base = w.write_to_bytes();
  }
  ASSERT_EQ(parse_error(base), "");
  std::mt19937_64 rng(20261130);  // fixed seed: failures are reproducible
  constexpr int kIterations = 20000;
  int accepted = 0;
  for (int it = 0; it < kIterations; ++it) {
    std::vector<uint8_t> bytes = base;
    const int flips = 1 + static_cast<int>(rng() % 8);
    for (int k = 0; k < flips; ++k) {
      const size_t pos = rng() % bytes.size();
      switch (rng() % 3) {
        case 0: bytes[pos] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
        case 1: bytes[pos] = static_cast<uint8_t>(rng()); break;
        default: bytes[pos] = (rng() % 2) ? 0xff : 0x00; break;
      }
    }
    if (rng() % 4 == 0) bytes.resize(rng() % bytes.size());
    try {
      auto f = GgufFile::from_bytes(bytes.data(), bytes.size());
      touch_everything(*f);
      ++accepted;
    } catch (const Error&) {
      // expected for most mutations
    }
  }
  // Flips in tensor data or padding keep the file valid: some must be accepted, most rejected.
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, kIterations);
}

}  // namespace
}  // namespace edgellm::gguf
