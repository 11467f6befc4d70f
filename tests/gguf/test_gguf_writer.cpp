// GgufWriter: round trips through the reader for every value type, an exact byte layout checked
// by hand against the spec, byte-identical re-creation of a real model written by llama.cpp's
// converter, streaming, and the failure paths of write() (temp file removed, errno text).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "support/test_env.h"

namespace edgellm::gguf {
namespace {

std::unique_ptr<GgufFile> reparse(GgufWriter& w) {
  const std::vector<uint8_t> bytes = w.write_to_bytes();
  EXPECT_EQ(bytes.size(), w.file_size());
  return GgufFile::from_bytes(bytes.data(), bytes.size());
}

TEST(GgufWriter, EveryValueTypeRoundTrips) {
  GgufWriter w;
  w.set_u8("a.u8", 250);
  w.set_i8("a.i8", -120);
  w.set_u16("a.u16", 65000);
  w.set_i16("a.i16", -32000);
  w.set_u32("a.u32", 4000000000u);
  w.set_i32("a.i32", -2000000000);
  w.set_u64("a.u64", 18000000000000000000ull);
  w.set_i64("a.i64", -9000000000000000000ll);
  w.set_f32("a.f32", 0.15625f);
  w.set_f64("a.f64", -1.0e300);
  w.set_bool("a.bool", true);
  w.set_string("a.str", "héllo\0x");  // the literal stops at NUL: 6 bytes of UTF-8
  w.set_string("a.empty", "");
  w.set_array_u8("arr.u8", {1, 2, 255});
  w.set_array_i8("arr.i8", {-1, 0, 1});
  w.set_array_u16("arr.u16", {7, 65535});
  w.set_array_i16("arr.i16", {-7, 32767});
  w.set_array_u32("arr.u32", {0, 4294967295u});
  w.set_array_i32("arr.i32", {-5, 6, 7});
  w.set_array_u64("arr.u64", {1ull << 40});
  w.set_array_i64("arr.i64", {-(1ll << 40), 3});
  w.set_array_f32("arr.f32", {0.5f, -2.25f});
  w.set_array_f64("arr.f64", {1e-300, 2.5});
  w.set_array_bool("arr.bool", {true, false, true});
  w.set_array_string("arr.str", std::vector<std::string>{"x", "", "yz"});
  w.set_array_i32("arr.empty", {});
  EXPECT_EQ(w.metadata_count(), 26u);

  auto f = reparse(w);
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->metadata().size(), 26u);
  auto type_of = [&](const char* k) { return f->find(k)->type; };
  EXPECT_EQ(type_of("a.u8"), ValueType::kUint8);
  EXPECT_EQ(type_of("a.i8"), ValueType::kInt8);
  EXPECT_EQ(type_of("a.u16"), ValueType::kUint16);
  EXPECT_EQ(type_of("a.i16"), ValueType::kInt16);
  EXPECT_EQ(type_of("a.u32"), ValueType::kUint32);
  EXPECT_EQ(type_of("a.i32"), ValueType::kInt32);
  EXPECT_EQ(type_of("a.u64"), ValueType::kUint64);
  EXPECT_EQ(type_of("a.i64"), ValueType::kInt64);
  EXPECT_EQ(type_of("a.f32"), ValueType::kFloat32);
  EXPECT_EQ(type_of("a.f64"), ValueType::kFloat64);
  EXPECT_EQ(type_of("a.bool"), ValueType::kBool);
  EXPECT_EQ(f->get_int("a.u8"), 250);
  EXPECT_EQ(f->get_int("a.i8"), -120);
  EXPECT_EQ(f->get_int("a.u16"), 65000);
  EXPECT_EQ(f->get_int("a.i16"), -32000);
  EXPECT_EQ(f->get_int("a.u32"), 4000000000LL);
  EXPECT_EQ(f->get_int("a.i32"), -2000000000);
  EXPECT_EQ(f->find("a.u64")->u, 18000000000000000000ull);
  EXPECT_THROW((void)f->get_int("a.u64"), Error);  // does not fit int64: an error, not a wrap
  EXPECT_EQ(f->get_int("a.i64"), -9000000000000000000ll);
  EXPECT_EQ(f->get_float("a.f32"), 0.15625);
  EXPECT_EQ(f->get_float("a.f64"), -1.0e300);
  EXPECT_EQ(f->get_float("a.i32"), -2000000000.0);  // integers are accepted as floats
  EXPECT_EQ(f->get_bool("a.bool"), true);
  EXPECT_EQ(f->get_string("a.str"), "héllo");
  EXPECT_EQ(f->get_string("a.empty"), "");

  EXPECT_EQ(f->get_int_array("arr.u8"), (std::vector<int64_t>{1, 2, 255}));
  EXPECT_EQ(f->get_int_array("arr.i8"), (std::vector<int64_t>{-1, 0, 1}));
  EXPECT_EQ(f->get_int_array("arr.u16"), (std::vector<int64_t>{7, 65535}));
  EXPECT_EQ(f->get_int_array("arr.i16"), (std::vector<int64_t>{-7, 32767}));
  EXPECT_EQ(f->get_int_array("arr.u32"), (std::vector<int64_t>{0, 4294967295LL}));
  EXPECT_EQ(f->get_int_array("arr.i32"), (std::vector<int64_t>{-5, 6, 7}));
  EXPECT_EQ(f->get_int_array("arr.u64"), (std::vector<int64_t>{1ll << 40}));
  EXPECT_EQ(f->get_int_array("arr.i64"), (std::vector<int64_t>{-(1ll << 40), 3}));
  EXPECT_EQ(f->get_float_array("arr.f32"), (std::vector<float>{0.5f, -2.25f}));
  EXPECT_EQ(f->get_float_array("arr.i32"), (std::vector<float>{-5.f, 6.f, 7.f}));
  const Value* f64 = f->find("arr.f64");
  ASSERT_NE(f64, nullptr);
  EXPECT_EQ(f64->array_type, ValueType::kFloat64);
  EXPECT_EQ(f64->array_float(0), 1e-300);
  EXPECT_EQ(f64->array_float(1), 2.5);
  EXPECT_THROW((void)f64->array_int(0), Error);
  EXPECT_THROW((void)f64->array_float(2), Error);
  EXPECT_EQ(f->get_int_array("arr.bool"), (std::vector<int64_t>{1, 0, 1}));
  const auto strs = f->get_string_array("arr.str");
  ASSERT_TRUE(strs.has_value());
  ASSERT_EQ(strs->size(), 3u);
  EXPECT_EQ((*strs)[0], "x");
  EXPECT_EQ((*strs)[1], "");
  EXPECT_EQ((*strs)[2], "yz");
  EXPECT_EQ(f->get_int_array("arr.empty")->size(), 0u);
  EXPECT_THROW((void)f->get_float_array("arr.str"), Error);

  // Order is insertion order.
  const std::vector<std::string> keys = w.keys();
  ASSERT_EQ(keys.size(), f->metadata().size());
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_EQ(f->metadata()[i].key, keys[i]);
}

TEST(GgufWriter, ReplacingKeepsOrderAndRemoveWorks) {
  GgufWriter w;
  w.set_string("k1", "a");
  w.set_u32("k2", 1);
  w.set_string("k3", "c");
  w.set_f32("k2", 2.5f);  // replace with another type: stays second
  EXPECT_EQ(w.keys(), (std::vector<std::string>{"k1", "k2", "k3"}));
  EXPECT_TRUE(w.remove("k1"));
  EXPECT_FALSE(w.remove("k1"));
  EXPECT_TRUE(w.has("k3"));
  auto f = reparse(w);
  ASSERT_EQ(f->metadata().size(), 2u);
  EXPECT_EQ(f->metadata()[0].key, "k2");
  EXPECT_EQ(f->get_float("k2"), 2.5);
  EXPECT_THROW(w.set_u32("", 1), Error);
}

// The exact bytes for one KV and one tensor, assembled by hand from the GGUF spec.
TEST(GgufWriter, ExactByteLayout) {
  GgufWriter w;
  w.set_u32("n", 7);
  const float data[2] = {1.0f, -2.0f};
  w.add_tensor("t", TensorType::F32, {2}, data, sizeof(data));
  const std::vector<uint8_t> got = w.write_to_bytes();

  std::vector<uint8_t> want = {'G', 'G', 'U', 'F', 3, 0, 0, 0};
  auto u64 = [&](uint64_t v) { for (int i = 0; i < 8; ++i) want.push_back(static_cast<uint8_t>(v >> (8 * i))); };
  auto u32 = [&](uint32_t v) { for (int i = 0; i < 4; ++i) want.push_back(static_cast<uint8_t>(v >> (8 * i))); };
  u64(1);  // tensors
  u64(1);  // kv
  u64(1); want.push_back('n'); u32(4); u32(7);
  u64(1); want.push_back('t'); u32(1); u64(2); u32(0); u64(0);
  while (want.size() % 32 != 0) want.push_back(0);
  const size_t data_at = want.size();
  want.insert(want.end(), {0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0});  // 1.0f, -2.0f
  while (want.size() % 32 != 0) want.push_back(0);
  EXPECT_EQ(got, want);
  EXPECT_EQ(data_at, 96u);
}

TEST(GgufWriter, TensorsAlignmentAndStreaming) {
  GgufWriter w;
  w.set_alignment(64);
  EXPECT_EQ(w.alignment(), 64u);
  EXPECT_THROW(w.set_alignment(48), Error);
  EXPECT_THROW(w.set_alignment(0), Error);
  EXPECT_THROW(w.set_i32("general.alignment", 64), Error);  // spec: uint32

  std::vector<float> a(3 * 5);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i) * 0.5f;
  w.add_tensor("a", TensorType::F32, {3, 5}, a.data(), a.size() * 4);
  std::vector<uint16_t> b(7, 0x3c00);  // f16 1.0
  w.add_tensor("b", TensorType::F16, {7}, b.data(), b.size() * 2, GgufWriter::Ownership::kBorrow);
  w.add_tensor_info("q", TensorType::Q8_0, {64, 2});  // 2 rows x 2 blocks x 34 bytes
  w.add_tensor_info("z", TensorType::F32, {1, 1, 1, 3});

  // Bad tensors are rejected up front and leave the writer unchanged.
  EXPECT_THROW(w.add_tensor("a", TensorType::F32, {1}, a.data(), 4), Error);          // duplicate
  EXPECT_THROW(w.add_tensor_info("bad", TensorType::Q4_0, {33}), Error);              // not a block multiple
  EXPECT_THROW(w.add_tensor_info("bad", TensorType::F32, {}), Error);                 // no dims
  EXPECT_THROW(w.add_tensor_info("bad", TensorType::F32, {1, 1, 1, 1, 1}), Error);    // 5 dims
  EXPECT_THROW(w.add_tensor_info("bad", TensorType::F32, {4, 0}), Error);             // zero
  EXPECT_THROW(w.add_tensor_info("bad", TensorType::F32, {1ll << 40, 1ll << 40}), Error);  // overflow
  EXPECT_THROW(w.add_tensor("bad", TensorType::F32, {4}, a.data(), 12), Error);       // wrong size
  EXPECT_EQ(w.tensors().size(), 4u);

  // Without a callback the streamed tensors have no data.
  EXPECT_THROW((void)w.write_to_bytes(), Error);

  std::vector<size_t> order;
  auto fill = [&](size_t index, const WriterTensor& t, TensorSink& sink) {
    order.push_back(index);
    // Write in odd-sized chunks to exercise concatenation.
    std::vector<uint8_t> bytes(t.n_bytes);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(index * 31 + i);
    size_t at = 0;
    while (at < bytes.size()) {
      const size_t n = std::min<size_t>(5, bytes.size() - at);
      sink.write(bytes.data() + at, n);
      at += n;
    }
  };
  const std::vector<uint8_t> bytes = w.write_to_bytes(fill);
  EXPECT_EQ(order, (std::vector<size_t>{2, 3}));
  EXPECT_EQ(bytes.size(), w.file_size());
  auto f = GgufFile::from_bytes(bytes.data(), bytes.size());
  EXPECT_EQ(f->alignment(), 64u);
  EXPECT_EQ(f->data_offset() % 64, 0u);
  ASSERT_EQ(f->tensors().size(), 4u);
  const TensorInfo* ta = f->find_tensor("a");
  EXPECT_EQ(ta->shape_string(), "[3, 5]");
  EXPECT_EQ(std::memcmp(ta->data, a.data(), a.size() * 4), 0);
  EXPECT_EQ(std::memcmp(f->find_tensor("b")->data, b.data(), b.size() * 2), 0);
  const TensorInfo* tq = f->find_tensor("q");
  EXPECT_EQ(tq->type, TensorType::Q8_0);
  EXPECT_EQ(tq->n_bytes, 2u * 2u * 34u);
  for (size_t i = 0; i < tq->n_bytes; ++i) ASSERT_EQ(tq->data[i], static_cast<uint8_t>(2 * 31 + i));
  EXPECT_EQ(f->find_tensor("z")->n_dims, 4);
  for (const TensorInfo& t : f->tensors()) EXPECT_EQ(t.offset % 64, 0u) << t.name;
  // Padding between tensors is zeros.
  const size_t a_end = f->data_offset() + ta->offset + ta->n_bytes;
  for (size_t i = a_end; i < f->data_offset() + f->find_tensor("b")->offset; ++i) ASSERT_EQ(bytes[i], 0) << i;

  // A callback writing too few or too many bytes is an error.
  auto short_fill = [](size_t, const WriterTensor& t, TensorSink& sink) {
    std::vector<uint8_t> x(t.n_bytes - 1);
    sink.write(x.data(), x.size());
  };
  EXPECT_THROW((void)w.write_to_bytes(short_fill), Error);
  auto long_fill = [](size_t, const WriterTensor& t, TensorSink& sink) {
    std::vector<uint8_t> x(t.n_bytes + 1);
    sink.write(x.data(), x.size());
  };
  EXPECT_THROW((void)w.write_to_bytes(long_fill), Error);
}

// llama.cpp's writer produced stories260K.gguf; copying its metadata and tensors through our writer
// must reproduce the file byte for byte (same order, same padding rules).
TEST(GgufWriter, RecreatesRealModelByteForByte) {
  const std::string path = edgellm::test::shared_model("stories260K.gguf");
  auto src = GgufFile::open(path);
  GgufWriter w;
  w.copy_metadata_from(*src);
  for (const TensorInfo& t : src->tensors()) {
    std::vector<int64_t> ne(t.ne, t.ne + t.n_dims);
    w.add_tensor(t.name, t.type, ne, t.data, t.n_bytes, GgufWriter::Ownership::kBorrow);
  }
  const std::vector<uint8_t> out = w.write_to_bytes();
  const std::string raw = edgellm::test::read_file(path);
  ASSERT_EQ(out.size(), raw.size());
  EXPECT_EQ(std::memcmp(out.data(), raw.data(), raw.size()), 0);

  // Skipping keys drops exactly those keys.
  GgufWriter w2;
  w2.copy_metadata_from(*src, [](std::string_view k) { return k.rfind("tokenizer.", 0) == 0; });
  for (const std::string& k : w2.keys()) EXPECT_NE(k.rfind("tokenizer.", 0), 0u) << k;
  EXPECT_EQ(w2.metadata_count(), 19u - 9u);  // 9 tokenizer.* keys in this file
}

TEST(GgufWriter, CopiesHugeStringArrays) {
  auto src = GgufFile::open(edgellm::test::shared_testdata("vocab/ggml-vocab-gpt-2.gguf"));
  GgufWriter w;
  w.copy_metadata_from(*src);
  auto f = reparse(w);
  ASSERT_EQ(f->metadata().size(), src->metadata().size());
  EXPECT_EQ(*f->get_string_array("tokenizer.ggml.tokens"), *src->get_string_array("tokenizer.ggml.tokens"));
  EXPECT_EQ(*f->get_string_array("tokenizer.ggml.merges"), *src->get_string_array("tokenizer.ggml.merges"));
}

TEST(GgufWriter, WriteFileAtomically) {
  const std::string dir = edgellm::test::temp_dir();
  const std::string path = dir + "/out.gguf";
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  const float x[32] = {};
  w.add_tensor("x", TensorType::F32, {32}, x, sizeof(x));
  w.write(path);
  EXPECT_FALSE(edgellm::test::temp_file_left(path));
  auto f = GgufFile::open(path);
  EXPECT_EQ(f->get_string("general.architecture"), "llama");
  EXPECT_EQ(f->file_size(), w.file_size());

  // A throwing callback leaves neither the temp file nor a new target behind.
  const std::string path2 = dir + "/fail.gguf";
  GgufWriter s;
  s.add_tensor_info("y", TensorType::F32, {8});
  EXPECT_THROW(s.write(path2, [](size_t, const WriterTensor&, TensorSink&) {
    throw Error(ErrorCode::kCancelled, "stop");
  }), Error);
  EXPECT_FALSE(edgellm::test::file_exists(path2));
  EXPECT_FALSE(edgellm::test::temp_file_left(path2));

  try {
    w.write(dir + "/no/such/dir/out.gguf");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos) << e.what();
  }
}

// Two writers of one path at once (an app packing a model twice, an app and the CLI): each writes
// its own temporary file, so the file left is one writer's, whole — never a truncated mix (with a
// shared "<path>.tmp", the second open's O_TRUNC punched a hole into the first writer's data,
// which it then renamed into place).
TEST(GgufWriter, ConcurrentWritersOfOnePathLeaveOneWholeFile) {
  const std::string path = edgellm::test::temp_dir() + "/race.gguf";
  constexpr int64_t kFloats = 1 << 20;  // 4 MiB each, written in 64 KiB pieces
  auto write_filled = [&](uint8_t byte) {
    GgufWriter w;
    w.add_tensor_info("t", TensorType::F32, {kFloats});
    w.write(path, [byte](size_t, const WriterTensor& t, TensorSink& sink) {
      std::vector<uint8_t> chunk(1 << 16, byte);
      for (size_t at = 0; at < t.n_bytes; at += chunk.size()) {
        sink.write(chunk.data(), chunk.size());
        std::this_thread::yield();
      }
    });
  };
  for (int round = 0; round < 4; ++round) {
    std::string errors[2];
    auto run = [&](int i, uint8_t byte) {
      try {
        write_filled(byte);
      } catch (const Error& e) {
        errors[i] = e.what();  // the shared-name version failed here: the rename found no file
      }
    };
    std::thread a(run, 0, uint8_t{0x11});
    std::thread b(run, 1, uint8_t{0x22});
    a.join();
    b.join();
    EXPECT_EQ(errors[0], "");
    EXPECT_EQ(errors[1], "");
    const auto f = GgufFile::open(path);
    ASSERT_EQ(f->tensors().size(), 1u);
    const uint8_t* d = f->tensors()[0].data;
    const size_t n = f->tensors()[0].n_bytes;
    ASSERT_EQ(n, static_cast<size_t>(kFloats) * 4);
    const uint8_t first = d[0];
    EXPECT_TRUE(first == 0x11 || first == 0x22) << int(first);
    size_t mixed = 0;
    for (size_t i = 0; i < n; ++i) mixed += d[i] != first;
    EXPECT_EQ(mixed, 0u) << "round " << round << ": bytes not from the writer whose file won";
    EXPECT_FALSE(edgellm::test::temp_file_left(path));
  }
}

// A full disk is simulated with RLIMIT_FSIZE (write fails with EFBIG once the limit is reached).
TEST(GgufWriter, DiskFullReportsErrnoAndRemovesTemp) {
  const std::string path = edgellm::test::temp_dir() + "/big.gguf";
  GgufWriter w;
  w.add_tensor_info("big", TensorType::F32, {1 << 20});  // 4 MiB
  struct rlimit old;
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
  struct rlimit lim = old;
  lim.rlim_cur = 64 * 1024;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &lim), 0);
  std::string message;
  try {
    w.write(path, [](size_t, const WriterTensor& t, TensorSink& sink) {
      std::vector<uint8_t> chunk(1 << 16, 0x5a);
      for (size_t at = 0; at < t.n_bytes; at += chunk.size()) sink.write(chunk.data(), chunk.size());
    });
  } catch (const Error& e) {
    message = e.what();
    EXPECT_EQ(e.code(), ErrorCode::kIo);
  }
  setrlimit(RLIMIT_FSIZE, &old);
  signal(SIGXFSZ, old_handler);
  EXPECT_NE(message.find(std::strerror(EFBIG)), std::string::npos) << message;
  EXPECT_NE(message.find("big.gguf.tmp"), std::string::npos) << message;
  EXPECT_FALSE(edgellm::test::temp_file_left(path));
  EXPECT_FALSE(edgellm::test::file_exists(path));
}

}  // namespace
}  // namespace edgellm::gguf
