// Importance-matrix files (tools/quant/imatrix.h): our GGUF writer checked against llama.cpp's
// layout read back with the plain GGUF reader (key names and types, NAME.in_sum2 / NAME.counts
// tensors, their shapes), the round trip, the legacy .dat format from bytes assembled here as
// llama.cpp's save_imatrix_legacy writes them, llama-quantize's normalisation (importance()),
// and hostile files: every one a clear Error, never a crash.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "support/test_env.h"
#include "tools/quant/imatrix.h"

namespace edgellm::quant {
namespace {

std::string path(const std::string& name) {
  return test::temp_dir() + "/" + name;
}

void write_bytes(const std::string& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

Imatrix sample() {
  Imatrix m;
  m.datasets = {"zh-eval.txt", "more.txt"};
  m.chunk_count = 38;
  m.chunk_size = 128;
  m.entries["blk.0.attn_q.weight"] = {{1.5f, 0.25f, 3.0f, 0.0f}, {4864}};
  m.entries["blk.0.ffn_down.weight"] = {{2.0f, 8.0f, 1e-3f, 7.0f, 9.0f, 1.0f, 5.0f, 3.0f}, {100}};
  m.entries["blk.1.ffn_gate_exps.weight"] = {{1, 2, 3, 4, 5, 6}, {3, 0}};  // two experts, one unused
  return m;
}

// ---------------------------------------------------------------- legacy .dat, built by hand

struct DatBuilder {
  std::string bytes;
  void i32(int32_t v) { bytes.append(reinterpret_cast<const char*>(&v), 4); }
  void f32(float v) { bytes.append(reinterpret_cast<const char*>(&v), 4); }
  void str(const std::string& s) {
    i32(static_cast<int32_t>(s.size()));
    bytes += s;
  }
  // One entry as save_imatrix_legacy writes it: name, ncall, nval, (sum / count) * ncall.
  void entry(const std::string& name, int32_t ncall, const std::vector<float>& values) {
    str(name);
    i32(ncall);
    i32(static_cast<int32_t>(values.size()));
    for (float v : values) f32(v);
  }
};

std::string legacy_sample() {
  DatBuilder b;
  b.i32(2);
  b.entry("blk.0.attn_k.weight", 10, {20.0f, 5.0f, 0.5f});
  b.entry("output.weight", 4, {8.0f, 2.0f});
  b.i32(10);          // chunk count
  b.str("wiki.txt");  // dataset
  return b.bytes;
}

TEST(ImatrixFile, GgufLayoutIsLlamaCpps) {
  const std::string p = path("layout.gguf");
  write_imatrix(sample(), p);
  const auto f = gguf::GgufFile::open(p);
  EXPECT_EQ(f->get_string("general.type").value_or(""), "imatrix");
  const auto ds = f->get_string_array("imatrix.datasets");
  ASSERT_TRUE(ds.has_value());
  ASSERT_EQ(ds->size(), 2u);
  EXPECT_EQ((*ds)[0], "zh-eval.txt");
  EXPECT_EQ(f->find("imatrix.chunk_count")->type, gguf::ValueType::kUint32);
  EXPECT_EQ(f->get_int("imatrix.chunk_count").value_or(-1), 38);
  EXPECT_EQ(f->find("imatrix.chunk_size")->type, gguf::ValueType::kUint32);
  EXPECT_EQ(f->get_int("imatrix.chunk_size").value_or(-1), 128);
  // Sorted by name; [n_in] sums and [1] counts for one matrix (ggml drops trailing 1s), [n_in,
  // n_mat] and [1, n_mat] for a stack; all F32.
  ASSERT_EQ(f->tensors().size(), 6u);
  const struct {
    const char* name;
    std::vector<int64_t> ne;
  } want[] = {{"blk.0.attn_q.weight.in_sum2", {4}},           {"blk.0.attn_q.weight.counts", {1}},
              {"blk.0.ffn_down.weight.in_sum2", {8}},         {"blk.0.ffn_down.weight.counts", {1}},
              {"blk.1.ffn_gate_exps.weight.in_sum2", {3, 2}}, {"blk.1.ffn_gate_exps.weight.counts", {1, 2}}};
  for (size_t i = 0; i < 6; ++i) {
    const gguf::TensorInfo& t = f->tensors()[i];
    EXPECT_EQ(t.name, want[i].name);
    EXPECT_EQ(t.type, TensorType::F32);
    ASSERT_EQ(t.n_dims, static_cast<int>(want[i].ne.size())) << t.name;
    for (size_t d = 0; d < want[i].ne.size(); ++d) EXPECT_EQ(t.ne[d], want[i].ne[d]) << t.name;
  }
  float counts[2];
  std::memcpy(counts, f->tensors()[5].data, sizeof counts);
  EXPECT_EQ(counts[0], 3.0f);
  EXPECT_EQ(counts[1], 0.0f);
}

TEST(ImatrixFile, GgufRoundTrip) {
  const std::string p = path("rt.gguf");
  const Imatrix m = sample();
  write_imatrix(m, p);
  const Imatrix r = read_imatrix(p);
  EXPECT_FALSE(r.legacy);
  EXPECT_EQ(r.datasets, m.datasets);
  EXPECT_EQ(r.chunk_count, 38);
  EXPECT_EQ(r.chunk_size, 128);
  ASSERT_EQ(r.entries.size(), m.entries.size());
  for (const auto& [name, e] : m.entries) {
    ASSERT_EQ(r.entries.count(name), 1u) << name;
    EXPECT_EQ(r.entries.at(name).sums, e.sums) << name;
    EXPECT_EQ(r.entries.at(name).counts, e.counts) << name;
  }
}

// llama-quantize: sums / count per matrix; a matrix that counted nothing gets 1s.
TEST(ImatrixFile, ImportanceIsLlamaQuantizesNormalisation) {
  const Imatrix m = sample();
  EXPECT_EQ(*m.importance("blk.0.attn_q.weight"), (std::vector<float>{1.5f / 4864, 0.25f / 4864, 3.0f / 4864, 0.0f}));
  EXPECT_EQ(*m.importance("blk.1.ffn_gate_exps.weight"), (std::vector<float>{1.0f / 3, 2.0f / 3, 1.0f, 1, 1, 1}));
  EXPECT_FALSE(m.importance("blk.9.attn_q.weight").has_value());
}

TEST(ImatrixFile, LegacyDatIsRead) {
  const std::string p = path("legacy.dat");
  write_bytes(p, legacy_sample());
  const Imatrix m = read_imatrix(p);
  EXPECT_TRUE(m.legacy);
  EXPECT_EQ(m.chunk_count, 10);
  EXPECT_EQ(m.chunk_size, 0);
  EXPECT_EQ(m.datasets, std::vector<std::string>{"wiki.txt"});
  ASSERT_EQ(m.entries.size(), 2u);
  EXPECT_EQ(m.entries.at("blk.0.attn_k.weight").counts, std::vector<int64_t>{10});
  // Legacy values are means x ncall: llama-quantize divides by ncall.
  EXPECT_EQ(*m.importance("blk.0.attn_k.weight"), (std::vector<float>{2.0f, 0.5f, 0.05f}));
  EXPECT_EQ(*m.importance("output.weight"), (std::vector<float>{2.0f, 0.5f}));
  // Without the optional trailer as well.
  DatBuilder b;
  b.i32(1);
  b.entry("blk.0.attn_k.weight", 10, {20.0f});
  write_bytes(p, b.bytes);
  EXPECT_EQ(read_imatrix(p).chunk_count, 0);
}

// ---------------------------------------------------------------- hostile files

void expect_invalid(const std::string& bytes, const std::string& needle, const std::string& what) {
  const std::string p = path("hostile.bin");
  write_bytes(p, bytes);
  try {
    read_imatrix(p);
    ADD_FAILURE() << what << ": no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidFile) << what << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << what << ": " << e.what();
  }
}

TEST(ImatrixFile, HostileLegacyFiles) {
  const std::string good = legacy_sample();
  // Every truncation of a valid file: an error naming what is missing (or, cut exactly before the
  // optional trailer / inside it, a valid shorter file), never a crash.
  for (size_t n = 0; n < good.size(); ++n) {
    const std::string p = path("cut.dat");
    write_bytes(p, good.substr(0, n));
    try {
      (void)read_imatrix(p);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidFile) << n << ": " << e.what();
    }
  }
  DatBuilder b;
  b.i32(-3);
  expect_invalid(b.bytes + std::string(64, '\0'), "entry count", "negative entry count");
  b = {};
  b.i32(1000000);
  expect_invalid(b.bytes + std::string(64, '\0'), "impossible", "entry count beyond the file");
  b = {};
  b.i32(1);
  b.i32(-5);
  expect_invalid(b.bytes + std::string(64, '\0'), "name length", "negative name length");
  b = {};
  b.i32(1);
  b.str("blk.0.attn_q.weight");
  b.i32(10);
  b.i32(1 << 30);
  expect_invalid(b.bytes + std::string(64, '\0'), "values", "value count beyond the file");
  b = {};
  b.i32(1);
  b.entry("x.weight", 1, {1.0f, std::numeric_limits<float>::quiet_NaN()});
  expect_invalid(b.bytes, "finite", "NaN value");
  b = {};
  b.i32(1);
  b.entry("x.weight", 1, {-1.0f});
  expect_invalid(b.bytes, ">= 0", "negative sum of squares");
  b = {};
  b.i32(1);
  b.entry("x.weight", -2, {1.0f});
  expect_invalid(b.bytes, "ncall", "negative ncall");
  b = {};
  b.i32(2);
  b.entry("x.weight", 1, {1.0f});
  b.entry("x.weight", 1, {1.0f});
  expect_invalid(b.bytes, "twice", "duplicate entry");
  expect_invalid(good + "junk", "unexpected bytes", "trailing garbage");
  expect_invalid("", "truncated", "empty file");
}

// A GGUF image with the given tensors (name, type, ne, float data).
struct T {
  std::string name;
  TensorType type;
  std::vector<int64_t> ne;
  std::vector<float> v;
};
std::string gguf_image(const std::vector<T>& tensors) {
  gguf::GgufWriter w;
  w.set_string("general.type", "imatrix");
  for (const T& t : tensors) {
    if (t.type == TensorType::F32) {
      w.add_tensor(t.name, t.type, t.ne, t.v.data(), t.v.size() * sizeof(float));
    } else {
      std::vector<uint16_t> h(t.v.size(), 0x3c00);  // F16 ones
      w.add_tensor(t.name, t.type, t.ne, h.data(), h.size() * 2);
    }
  }
  const std::vector<uint8_t> bytes = w.write_to_bytes();
  return std::string(bytes.begin(), bytes.end());
}

TEST(ImatrixFile, HostileGgufFiles) {
  const auto f32 = TensorType::F32;
  expect_invalid(gguf_image({}), "no NAME.in_sum2", "no tensors");
  expect_invalid(gguf_image({{"a.weight.in_sum2", f32, {2}, {1, 2}}}), "no counts", "sums without counts");
  expect_invalid(gguf_image({{"a.weight.counts", f32, {1}, {3}}}), "no in_sum2", "counts without sums");
  expect_invalid(gguf_image({{"a.weight.in_sum2", f32, {3}, {1, 2, 3}}, {"a.weight.counts", f32, {2}, {1, 1}}}),
                 "do not divide", "3 sums over 2 matrices");
  expect_invalid(gguf_image({{"a.weight.in_sum2", f32, {2}, {1, -2}}, {"a.weight.counts", f32, {1}, {1}}}), ">= 0",
                 "negative sum");
  expect_invalid(gguf_image({{"a.weight.in_sum2", f32, {2}, {1, INFINITY}}, {"a.weight.counts", f32, {1}, {1}}}),
                 "finite", "infinite sum");
  expect_invalid(gguf_image({{"a.weight.in_sum2", f32, {2}, {1, 2}}, {"a.weight.counts", f32, {1}, {2.5f}}}),
                 "whole token counts", "fractional count");
  expect_invalid(gguf_image({{"a.weight.in_sum2", f32, {2}, {1, 2}}, {"a.weight.counts", f32, {1}, {1e30f}}}),
                 "whole token counts", "absurd count");
  expect_invalid(gguf_image({{"a.weight.in_sum2", TensorType::F16, {2}, {1, 2}}, {"a.weight.counts", f32, {1}, {1}}}),
                 "expected f32", "F16 sums");
  // A corrupted GGUF is the GGUF reader's error (kInvalidFile), not a crash.
  std::string img = gguf_image({{"a.weight.in_sum2", f32, {2}, {1, 2}}, {"a.weight.counts", f32, {1}, {1}}});
  expect_invalid(img.substr(0, img.size() / 2), "", "truncated GGUF");
  try {
    read_imatrix(path("does-not-exist.gguf"));
    ADD_FAILURE() << "missing file: no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo) << e.what();
  }
}

}  // namespace
}  // namespace edgellm::quant
