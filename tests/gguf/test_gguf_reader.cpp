// Reads the real models and vocab files in shared/ and checks them against facts established
// independently of this reader (the shared/README.md description and a separate Python walk of
// the files done when writing this test), plus the byte layout re-derived here from the spec.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "support/test_env.h"

namespace edgellm::gguf {
namespace {

using edgellm::test::shared_model;
using edgellm::test::shared_testdata;

// Every tensor must lie inside the mapping, be aligned, and not overlap the next one.
void expect_tensor_layout_sane(const GgufFile& f) {
  const uint8_t* begin = f.mapping().data();
  const uint8_t* end = begin + f.file_size();
  for (const TensorInfo& t : f.tensors()) {
    ASSERT_NE(t.data, nullptr) << t.name;
    EXPECT_GE(t.data, begin + f.data_offset()) << t.name;
    EXPECT_LE(t.data + t.n_bytes, end) << t.name;
    EXPECT_EQ(t.offset % f.alignment(), 0u) << t.name;
    EXPECT_EQ(t.data, begin + f.data_offset() + t.offset) << t.name;
    EXPECT_EQ(t.n_bytes, t.row_bytes() * static_cast<size_t>(t.n_rows())) << t.name;
  }
}

TEST(GgufReader, Stories260KMetadata) {
  auto f = GgufFile::open(shared_model("stories260K.gguf"));
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->metadata().size(), 19u);
  EXPECT_EQ(f->get_string("general.architecture"), "llama");
  EXPECT_EQ(f->get_int("llama.embedding_length"), 64);
  EXPECT_EQ(f->get_int("llama.block_count"), 5);
  EXPECT_EQ(f->get_int("llama.attention.head_count"), 8);
  EXPECT_EQ(f->get_int("llama.attention.head_count_kv"), 4);
  EXPECT_EQ(f->get_int("llama.feed_forward_length"), 172);
  // Stored as uint32 0xFFFFFFFF ("no separator token"): widened, not sign-extended.
  EXPECT_EQ(f->get_int("tokenizer.ggml.seperator_token_id"), 4294967295LL);
  // f32 1e-5 widened to double: compare to the float value, not the decimal literal.
  EXPECT_EQ(f->get_float("llama.attention.layer_norm_rms_epsilon"), static_cast<double>(1e-5f));
  EXPECT_FALSE(f->get_int("no.such.key").has_value());
  EXPECT_EQ(f->find("no.such.key"), nullptr);

  const auto tokens = f->get_string_array("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.has_value());
  ASSERT_EQ(tokens->size(), 512u);
  EXPECT_EQ((*tokens)[0], "<unk>");
  EXPECT_EQ((*tokens)[1], "<s>");
  EXPECT_EQ((*tokens)[2], "</s>");
  auto scores = f->get_float_array("tokenizer.ggml.scores");
  ASSERT_TRUE(scores.has_value());
  EXPECT_EQ(scores->size(), 512u);
  auto types = f->get_int_array("tokenizer.ggml.token_type");
  ASSERT_TRUE(types.has_value());
  ASSERT_EQ(types->size(), 512u);
  EXPECT_EQ((*types)[0], 2);  // unknown
  EXPECT_EQ((*types)[1], 3);  // control

  // Wrong-type access is an error naming the key, not a silent conversion.
  try {
    (void)f->get_int("general.architecture");
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidFile);
    EXPECT_NE(std::string(e.what()).find("general.architecture"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)f->get_string_array("tokenizer.ggml.scores"), Error);
}

TEST(GgufReader, Stories260KTensors) {
  const std::string path = shared_model("stories260K.gguf");
  auto f = GgufFile::open(path);
  EXPECT_TRUE(f->mapping().is_mapped());
  EXPECT_EQ(f->file_size(), std::filesystem::file_size(path));
  ASSERT_EQ(f->tensors().size(), 48u);  // 3 + 5 layers x 9
  // Tensor infos end at byte 14152 (Python walk); data starts at the next multiple of 32.
  EXPECT_EQ(f->alignment(), 32u);
  EXPECT_EQ(f->data_offset(), 14176u);

  const TensorInfo* emb = f->find_tensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->type, TensorType::F32);
  EXPECT_EQ(emb->n_dims, 2);
  EXPECT_EQ(emb->ne[0], 64);
  EXPECT_EQ(emb->ne[1], 512);
  EXPECT_EQ(emb->shape_string(), "[64, 512]");
  EXPECT_EQ(emb->offset, 0u);
  EXPECT_EQ(emb->n_bytes, 64u * 512u * 4u);

  const TensorInfo* down = f->find_tensor("blk.0.ffn_down.weight");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->ne[0], 172);
  EXPECT_EQ(down->ne[1], 64);
  EXPECT_EQ(down->offset, 355840u);
  EXPECT_EQ(f->find_tensor("blk.5.attn_q.weight"), nullptr);

  // Zero-copy: the view's bytes are the file's bytes at data_offset + offset.
  const std::string raw = edgellm::test::read_file(path);
  ASSERT_EQ(raw.size(), f->file_size());
  EXPECT_EQ(std::memcmp(down->data, raw.data() + 14176 + 355840, down->n_bytes), 0);

  size_t sum = 0;
  for (const TensorInfo& t : f->tensors()) sum += t.n_bytes;
  EXPECT_EQ(f->tensor_data_bytes(), sum);
  expect_tensor_layout_sane(*f);
}

TEST(GgufReader, TinyZhPoems) {
  auto f = GgufFile::open(shared_model("tiny-zh-poems.gguf"));
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->metadata().size(), 25u);
  EXPECT_EQ(f->get_string("general.architecture"), "llama");
  EXPECT_EQ(f->get_string("general.name"), "tiny-zh-poems");
  EXPECT_EQ(f->get_int("llama.embedding_length"), 256);
  EXPECT_EQ(f->get_int("llama.block_count"), 4);
  EXPECT_EQ(f->get_int("llama.vocab_size"), 4096);
  EXPECT_EQ(f->get_int("general.alignment"), 32);
  EXPECT_EQ(f->get_float("llama.rope.freq_base"), 10000.0);
  EXPECT_EQ(f->get_bool("tokenizer.ggml.add_bos_token"), true);
  EXPECT_EQ(f->get_bool("tokenizer.ggml.add_space_prefix"), false);
  ASSERT_EQ(f->tensors().size(), 38u);  // token_embd + output_norm + 4 layers x 9 (tied output)
  EXPECT_EQ(f->find_tensor("output.weight"), nullptr);
  const auto tokens = f->get_string_array("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.has_value());
  EXPECT_EQ(tokens->size(), 4096u);
  // Metadata order is file order (the writer and `edgellm info` rely on it).
  EXPECT_EQ(f->metadata().front().key, "general.architecture");
  EXPECT_EQ(f->metadata().back().key, "tokenizer.ggml.add_space_prefix");
  expect_tensor_layout_sane(*f);
}

TEST(GgufReader, VocabFilesWithHugeStringArrays) {
  struct Expect {
    const char* file;
    const char* arch;
    size_t n_tokens;
    size_t n_merges;  // 0: no merges key (SentencePiece / WordPiece vocabularies)
  };
  const Expect cases[] = {
      {"ggml-vocab-deepseek-llm.gguf", "llama", 102400, 99757},
      {"ggml-vocab-falcon.gguf", "falcon", 65024, 64784},
      {"ggml-vocab-gpt-2.gguf", "gpt2", 50257, 50000},
      {"ggml-vocab-baichuan.gguf", "baichuan", 64000, 0},
      {"ggml-vocab-bert-bge.gguf", "bert", 30522, 0},
      {"ggml-vocab-llama-spm.gguf", "llama", 32000, 0},
  };
  for (const Expect& c : cases) {
    SCOPED_TRACE(c.file);
    auto f = GgufFile::open(shared_testdata(std::string("vocab/") + c.file));
    EXPECT_EQ(f->get_string("general.architecture"), c.arch);
    EXPECT_TRUE(f->tensors().empty());
    EXPECT_EQ(f->data_offset(), f->file_size());  // these files end right after the metadata
    const auto tokens = f->get_string_array("tokenizer.ggml.tokens");
    ASSERT_TRUE(tokens.has_value());
    EXPECT_EQ(tokens->size(), c.n_tokens);
    const auto merges = f->get_string_array("tokenizer.ggml.merges");
    if (c.n_merges == 0) {
      EXPECT_FALSE(merges.has_value());
    } else {
      ASSERT_TRUE(merges.has_value());
      EXPECT_EQ(merges->size(), c.n_merges);
    }
    // Every string view lies inside the mapping.
    const char* lo = reinterpret_cast<const char*>(f->mapping().data());
    const char* hi = lo + f->file_size();
    for (std::string_view s : *tokens) {
      ASSERT_TRUE(s.data() >= lo && s.data() + s.size() <= hi);
    }
  }
  // Every vocab file in the folder parses.
  size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(shared_testdata("vocab"))) {
    if (entry.path().extension() != ".gguf") continue;
    SCOPED_TRACE(entry.path().string());
    EXPECT_NO_THROW((void)GgufFile::open(entry.path().string()));
    ++n;
  }
  EXPECT_GE(n, 12u);
}

// String arrays are kept as their stored bytes and decoded on request: the decoded elements must
// be exactly the stored ones (a layout written out by hand here, per the GGUF spec), the size
// accessor must not need a decode, and a Value assembled with inconsistent bytes must throw
// rather than read past them.
TEST(GgufValue, StringArraysDecodeOnRequest) {
  std::vector<uint8_t> stored;
  const std::vector<std::string> elems = {"", "a", "\xe4\xb8\xad\xe6\x96\x87", std::string(300, 'x')};
  for (const std::string& e : elems) {
    const uint64_t len = e.size();
    const auto* lp = reinterpret_cast<const uint8_t*>(&len);
    stored.insert(stored.end(), lp, lp + sizeof(len));
    stored.insert(stored.end(), e.begin(), e.end());
  }
  Value v;
  v.type = ValueType::kArray;
  v.array_type = ValueType::kString;
  v.array_size = elems.size();
  v.array_data = stored.data();
  v.array_bytes = stored.size();
  const std::vector<std::string_view> got = v.string_elements();
  ASSERT_EQ(got.size(), elems.size());
  for (size_t i = 0; i < elems.size(); ++i) EXPECT_EQ(got[i], elems[i]) << i;

  v.array_bytes = stored.size() - 1;  // the last element's bytes run past the array
  try {
    (void)v.string_elements();
    FAIL() << "truncated array decoded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidFile);
  }
  v.array_size = uint64_t{1} << 62;  // a count the bytes cannot hold: an error, not an allocation
  v.array_bytes = stored.size();
  try {
    (void)v.string_elements();
    FAIL() << "impossible count decoded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidFile);
  }
  v.array_size = elems.size();
  v.array_type = ValueType::kInt32;
  try {
    (void)v.string_elements();
    FAIL() << "int32 array decoded as strings";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }

  auto f = GgufFile::open(shared_testdata("vocab/ggml-vocab-gpt-2.gguf"));
  EXPECT_EQ(f->get_string_array_size("tokenizer.ggml.tokens"), std::optional<uint64_t>(50257));
  EXPECT_EQ(f->get_string_array_size("no.such.key"), std::nullopt);
  EXPECT_THROW((void)f->get_string_array_size("general.architecture"), Error);  // a string, not an array
}

TEST(GgufReader, FromBytesMatchesOpen) {
  const std::string path = shared_model("stories260K.gguf");
  const std::string raw = edgellm::test::read_file(path);
  auto a = GgufFile::open(path);
  auto b = GgufFile::from_bytes(raw.data(), raw.size());
  EXPECT_FALSE(b->mapping().is_mapped());
  ASSERT_EQ(a->tensors().size(), b->tensors().size());
  ASSERT_EQ(a->metadata().size(), b->metadata().size());
  for (size_t i = 0; i < a->tensors().size(); ++i) {
    const TensorInfo& x = a->tensors()[i];
    const TensorInfo& y = b->tensors()[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.offset, y.offset);
    ASSERT_EQ(x.n_bytes, y.n_bytes);
    EXPECT_EQ(std::memcmp(x.data, y.data, x.n_bytes), 0);
    // The in-memory copy keeps the file's alignment guarantee for SIMD loads.
    EXPECT_EQ(reinterpret_cast<uintptr_t>(y.data) % 32, 0u) << y.name;
  }
}

TEST(GgufReader, OpenErrorsAreIoErrors) {
  try {
    (void)GgufFile::open("/nonexistent/dir/model.gguf");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/model.gguf"), std::string::npos);
  }
  try {
    (void)GgufFile::open(edgellm::test::temp_dir());  // a directory
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
  }
  // An empty file cannot be mmapped; it must still be a clean kInvalidFile error.
  const std::string empty = edgellm::test::temp_dir() + "/empty.gguf";
  { FILE* fp = std::fopen(empty.c_str(), "wb"); ASSERT_NE(fp, nullptr); std::fclose(fp); }
  try {
    (void)GgufFile::open(empty);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidFile);
    EXPECT_NE(std::string(e.what()).find("empty"), std::string::npos) << e.what();
  }
}

TEST(MappedFile, MoveKeepsMapping) {
  MappedFile a = MappedFile::map(shared_model("stories260K.gguf"));
  const uint8_t* p = a.data();
  const size_t n = a.size();
  MappedFile b = std::move(a);
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(b.size(), n);
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): moved-from state is specified
  EXPECT_EQ(std::memcmp(b.data(), "GGUF", 4), 0);
  b.advise_willneed(100, 5000);
  EXPECT_EQ(b.prefault(0, n), n);
  EXPECT_EQ(b.prefault(n, 10), 0u);
  MappedFile c = MappedFile::from_bytes("abc", 3);
  c = std::move(b);
  EXPECT_EQ(c.size(), n);
}

TEST(MappedFile, CopyOutReadsTheFileBytes) {
  const MappedFile a = MappedFile::map(shared_model("stories260K.gguf"));
  std::vector<uint8_t> got(5000);
  a.copy_out(1234, got.data(), got.size());
  EXPECT_EQ(std::memcmp(got.data(), a.data() + 1234, got.size()), 0);
  a.copy_out(a.size() - 10, got.data(), 10);  // up to the last byte
  EXPECT_EQ(std::memcmp(got.data(), a.data() + a.size() - 10, 10), 0);
  for (const auto& [offset, len] : {std::pair<size_t, size_t>{a.size() - 10, 11}, {a.size() + 1, 0}}) {
    try {
      a.copy_out(offset, got.data(), len);
      ADD_FAILURE() << "no error for " << len << " bytes at " << offset;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kIo);
      EXPECT_NE(std::string(e.what()).find("outside"), std::string::npos) << e.what();
    }
  }
  const MappedFile b = MappedFile::from_bytes("abcdef", 6);
  char two[2];
  b.copy_out(3, two, 2);
  EXPECT_EQ(std::string(two, 2), "de");
}

}  // namespace
}  // namespace edgellm::gguf
