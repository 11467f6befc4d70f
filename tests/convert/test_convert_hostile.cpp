// Hostile and broken input to `edgellm convert`: every case is an edgellm::Error with the right
// code and a message naming the file, key or tensor — never a crash (these also run under ASan +
// UBSan) — and the output file is never written.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "core/error.h"
#include "core/json.h"
#include "support/hf_bert_checkpoint.h"
#include "support/hf_checkpoint.h"
#include "support/test_env.h"
#include "tools/convert/convert_model.h"
#include "tools/convert/hf_checkpoint.h"
#include "tools/convert/hf_config.h"
#include "tools/convert/safetensors.h"

namespace edgellm {
namespace {

namespace fs = std::filesystem;
using convert::SafetensorsFile;

template <class F>
void expect_error(F&& f, ErrorCode code, const std::string& needle, const std::string& what) {
  try {
    f();
    ADD_FAILURE() << what << ": accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << what << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << what << ": '" << e.what() << "' lacks '" << needle << "'";
  }
}

std::string header_file(const std::string& header, const std::string& data) {
  const uint64_t n = header.size();
  return std::string(reinterpret_cast<const char*>(&n), 8) + header + data;
}

void expect_bad_safetensors(const std::string& bytes, const std::string& needle, const std::string& what) {
  expect_error([&] { (void)SafetensorsFile::from_bytes(bytes.data(), bytes.size(), "hostile.safetensors"); },
               ErrorCode::kInvalidFile, needle, what);
}

// ---------------------------------------------------------------- safetensors

TEST(ConvertHostile, SafetensorsHeaders) {
  const std::string f8(8, '\0');
  expect_bad_safetensors("", "truncated: 0 bytes", "empty file");
  expect_bad_safetensors(std::string(5, '\0'), "truncated: 5 bytes", "short file");
  {
    std::string lying = header_file("{}", "");
    const uint64_t big = 1000;
    std::memcpy(lying.data(), &big, 8);
    expect_bad_safetensors(lying, "header length 1000 exceeds", "header length past the end");
    const uint64_t huge = ~uint64_t{0};
    std::memcpy(lying.data(), &huge, 8);
    expect_bad_safetensors(lying, "exceeds", "header length 2^64-1");
  }
  expect_bad_safetensors(header_file("{\"a\": ", ""), "not valid JSON", "cut JSON");
  expect_bad_safetensors(header_file("[1, 2]", ""), "not a JSON object", "array header");
  expect_bad_safetensors(header_file(R"({"w": 3})", ""), "tensor 'w': entry is not an object", "scalar entry");
  expect_bad_safetensors(header_file(R"({"w": {"shape": [2], "data_offsets": [0, 8]}})", f8), "tensor 'w': no dtype",
                         "no dtype");
  expect_bad_safetensors(header_file(R"({"w": {"dtype": "F4", "shape": [2], "data_offsets": [0, 8]}})", f8),
                         "tensor 'w': unknown dtype 'F4'", "unknown dtype");
  expect_bad_safetensors(header_file(R"({"w": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", f8),
                         "tensor 'w' shape entry is not a non-negative integer", "negative dimension");
  expect_bad_safetensors(header_file(R"({"w": {"dtype": "F32", "shape": [2.5], "data_offsets": [0, 8]}})", f8),
                         "tensor 'w' shape entry", "fractional dimension");
  expect_bad_safetensors(header_file(R"({"w": {"dtype": "F32", "shape": [1,1,1,1,1,1,1,1,1], "data_offsets": [0, 4]}})",
                                     std::string(4, '\0')),
                         "9 dimensions", "rank 9");
  // 2^40 x 2^40 elements: the product overflows int64.
  expect_bad_safetensors(
      header_file(R"({"w": {"dtype": "F32", "shape": [1099511627776, 1099511627776], "data_offsets": [0, 8]}})", f8),
      "tensor 'w': element count overflows", "element overflow");
  // 2^40 x 2^21 F64: the elements fit int64, their bytes (2^64) do not fit uint64.
  expect_bad_safetensors(
      header_file(R"({"w": {"dtype": "F64", "shape": [1099511627776, 2097152], "data_offsets": [0, 8]}})", f8),
      "tensor 'w': byte size overflows", "byte overflow");
  // 2^40 x 2^20 F64: 2^63 bytes, not what the offsets say.
  expect_bad_safetensors(
      header_file(R"({"w": {"dtype": "F64", "shape": [1099511627776, 1048576], "data_offsets": [0, 8]}})", f8),
      "tensor 'w': F64 [1099511627776, 1048576] needs 9223372036854775808 bytes", "size mismatch on a huge shape");
  expect_bad_safetensors(header_file(R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 16]}})", f8),
                         "tensor 'w': data_offsets [0, 16) lie outside the 8-byte data section",
                         "offsets past the end");
  expect_bad_safetensors(header_file(R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}})", f8),
                         "tensor 'w': data_offsets [8, 0)", "begin after end");
  expect_bad_safetensors(header_file(R"({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", f8),
                         "tensor 'w': F32 [3] needs 12 bytes but data_offsets give 8", "size mismatch");
  expect_bad_safetensors(header_file(R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0]}})", f8),
                         "tensor 'w': data_offsets is not a [begin, end] pair", "one offset");
  // Two tensors over the same bytes (a lying header), a hole, trailing bytes.
  expect_bad_safetensors(header_file(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                                         "b": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})",
                                     f8),
                         "inside the previous tensor's bytes", "overlap");
  expect_bad_safetensors(header_file(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", f8),
                         "tensor 'a' starts at data offset 4 after a gap", "hole");
  expect_bad_safetensors(header_file(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", f8),
                         "the tensors cover 4 of the 8 data bytes", "trailing bytes");
  // A key given twice: the JSON reader keeps the last value, so the first entry's bytes are an
  // unindexed hole.
  expect_bad_safetensors(header_file(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                                         "a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
                                     f8),
                         "tensor 'a' starts at data offset 4 after a gap", "duplicate name");
  expect_bad_safetensors(header_file(R"({"__metadata__": {"format": 1}})", ""), "__metadata__ value 'format'",
                         "non-string metadata");
}

TEST(ConvertHostile, EveryTruncationAndByteFlipOfAValidFileIsRefusedOrValid) {
  test::HfTensor a{"model.norm.weight", "F32", {3}, {1.0f, 2.0f, 3.0f}, ""};
  test::HfTensor b{"model.embed_tokens.weight", "BF16", {2, 2}, {0.5f, -1.0f, 2.0f, 4.0f}, ""};
  const std::string good = test::safetensors_bytes({a, b}, R"({"format": "pt"})");
  const SafetensorsFile f = SafetensorsFile::from_bytes(good.data(), good.size(), "good");
  ASSERT_EQ(f.tensors().size(), 2u);
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_THROW((void)SafetensorsFile::from_bytes(good.data(), n, "cut"), Error) << n;
  }
  std::mt19937 rng(7);
  int accepted = 0;
  for (int i = 0; i < 2000; ++i) {
    std::string bad = good;
    bad[rng() % (8 + f.header_bytes())] = static_cast<char>(rng());
    try {
      const SafetensorsFile g = SafetensorsFile::from_bytes(bad.data(), bad.size(), "flipped");
      for (const auto& t : g.tensors()) ASSERT_LE(t.offset + t.n_bytes, bad.size());
      ++accepted;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidFile);
    }
  }
  std::printf("%d of 2000 header byte flips still parse (names, spaces, digits that keep sizes consistent)\n",
              accepted);
}

// ---------------------------------------------------------------- config.json

void expect_bad_config(const std::string& text, const std::string& needle) {
  expect_error([&] { (void)convert::read_hf_config(Json::parse(text), "dir/config.json"); }, ErrorCode::kInvalidFile,
               needle, text);
}

TEST(ConvertHostile, ConfigKeys) {
  const std::string base = R"("vocab_size": 100, "hidden_size": 64, "num_hidden_layers": 2, "intermediate_size": 96,
                              "num_attention_heads": 4)";
  const std::string arch = R"("architectures": ["LlamaForCausalLM"], )";
  EXPECT_NO_THROW((void)convert::read_hf_config(Json::parse("{" + arch + base + "}"), "c"));
  expect_bad_config("[]", "dir/config.json: not a JSON object");
  expect_bad_config("{" + base + "}", "'architectures' is missing");
  expect_bad_config(R"({"architectures": [], )" + base + "}", "'architectures' is not a non-empty list");
  expect_bad_config(R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64})", "'vocab_size' is missing");
  expect_bad_config("{" + arch + base + R"(, "hidden_size": "64"})", "'hidden_size' is not a number");
  expect_bad_config(
      "{" + arch +
          R"("vocab_size": 100, "hidden_size": 64.5, "num_hidden_layers": 2, "intermediate_size": 96, "num_attention_heads": 4})",
      "'hidden_size' = 64.5 is not an integer");
  expect_bad_config(
      "{" + arch +
          R"("vocab_size": 100, "hidden_size": 64, "num_hidden_layers": 0, "intermediate_size": 96, "num_attention_heads": 4})",
      "'num_hidden_layers' = 0 is out of range [1, 4096]");
  expect_bad_config(
      "{" + arch +
          R"("vocab_size": 1e300, "hidden_size": 64, "num_hidden_layers": 2, "intermediate_size": 96, "num_attention_heads": 4})",
      "'vocab_size'");
  expect_bad_config("{" + arch + base + R"(, "num_key_value_heads": 3})", "'num_key_value_heads' = 3 does not divide");
  expect_bad_config("{" + arch + base + R"(, "num_key_value_heads": 8})",
                    "'num_key_value_heads' = 8 is out of range [1, 4]");
  expect_bad_config(
      "{" + arch +
          R"("vocab_size": 100, "hidden_size": 66, "num_hidden_layers": 2, "intermediate_size": 96, "num_attention_heads": 4})",
      "'hidden_size' = 66 is not a multiple of num_attention_heads = 4");
  expect_bad_config("{" + arch + base + R"(, "head_dim": 15})", "'head_dim' gives an odd head dimension 15");
  expect_bad_config("{" + arch + base + R"(, "rms_norm_eps": -1})", "'rms_norm_eps' = -1 is out of range");
  expect_bad_config("{" + arch + base + R"(, "tie_word_embeddings": "yes"})",
                    "'tie_word_embeddings' is not true or false");
  expect_bad_config("{" + arch + base + R"(, "rope_scaling": [1]})", "'rope_scaling' is not an object");
  expect_bad_config("{" + arch + base + R"(, "rope_scaling": {"rope_type": "linear", "factor": "2"}})",
                    "'rope_scaling.factor' is not a number");
  expect_bad_config(
      "{" + arch + base +
          R"(, "rope_scaling": {"rope_type": "llama3", "factor": 8, "low_freq_factor": 2, "high_freq_factor": 2}})",
      "'rope_scaling.high_freq_factor' equals low_freq_factor");
}

// ---------------------------------------------------------------- checkpoint directories and convert

// A checkpoint folder dir_ converted to out_: what every hostile-checkpoint fixture shares.
class CheckpointDirTest : public ::testing::Test {
 protected:
  // The conversion fails with `code` naming `needle`, and leaves neither the output nor a
  // temporary file behind.
  void expect_convert_error(ErrorCode code, const std::string& needle, const std::string& what) {
    expect_error([&] { (void)convert::convert_hf_model(dir_, out_, {}); }, code, needle, what);
    EXPECT_FALSE(fs::exists(out_)) << what;
    EXPECT_FALSE(test::temp_file_left(out_)) << what;
  }
  void write(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ + "/" + name, std::ios::binary) << bytes;
  }
  std::string dir_, out_;
};

class ConvertDirTest : public CheckpointDirTest {
 protected:
  void SetUp() override {
    static int n = 0;
    dir_ = test::temp_dir() + "/hostile-" + std::to_string(n++);
    ck_ = test::write_tiny_checkpoint(spec_, dir_);
    out_ = dir_ + ".gguf";
  }
  // The checkpoint's tensors as written, with `edit` applied, as the single model.safetensors.
  template <class Edit>
  void rewrite_weights(Edit&& edit) {
    std::vector<test::HfTensor> ts;
    for (const auto& [name, t] : ck_.tensors) ts.push_back(t);
    edit(ts);
    write("model.safetensors", test::safetensors_bytes(ts));
  }

  test::TinySpec spec_;
  test::TinyCheckpoint ck_;
};

TEST_F(ConvertDirTest, MissingFiles) {
  expect_error([&] { (void)convert::convert_hf_model(dir_ + "/nope", out_, {}); }, ErrorCode::kIo, "is not a directory",
               "no directory");
  fs::remove(dir_ + "/config.json");
  expect_convert_error(ErrorCode::kIo, "has no config.json", "no config.json");
}

TEST_F(ConvertDirTest, NoWeights) {
  fs::remove(dir_ + "/model.safetensors");
  write("pytorch_model.bin", "x");
  expect_convert_error(ErrorCode::kIo, "PyTorch .bin checkpoints are not read", "only a .bin");
}

TEST_F(ConvertDirTest, NoTokenizer) {
  fs::remove(dir_ + "/tokenizer.json");
  expect_convert_error(ErrorCode::kIo, "no tokenizer.json", "no tokenizer.json");
}

TEST_F(ConvertDirTest, BadJsonFilesAreNamed) {
  write("tokenizer_config.json", "{\"bos_token\": ");
  expect_convert_error(ErrorCode::kInvalidFile, "tokenizer_config.json' is not valid JSON", "cut tokenizer_config");
}

TEST_F(ConvertDirTest, UnsupportedClass) {
  std::string c = test::tiny_config_json(spec_);
  c.replace(c.find("LlamaForCausalLM"), 16, "GPTNeoXForCausalLM");
  write("config.json", c);
  expect_convert_error(ErrorCode::kUnsupported, "model class 'GPTNeoXForCausalLM'", "another architecture");
}

TEST_F(ConvertDirTest, AnUnknownTensorIsNotDroppedSilently) {
  rewrite_weights([](auto& ts) {
    ts.push_back({"model.layers.0.self_attn.q_proj.bias", "F32", {64}, std::vector<float>(64), ""});
  });
  expect_convert_error(ErrorCode::kUnsupported,
                       "tensor 'model.layers.0.self_attn.q_proj.bias' is not part of the llama mapping",
                       "llama with biases");
}

TEST_F(ConvertDirTest, ABlockBeyondTheLayerCount) {
  rewrite_weights([](auto& ts) {
    ts.push_back({"model.layers.7.input_layernorm.weight", "F32", {64}, std::vector<float>(64), ""});
  });
  expect_convert_error(ErrorCode::kInvalidFile, "belongs to block 7 but config.json num_hidden_layers is 2", "block 7");
}

TEST_F(ConvertDirTest, AMissingTensor) {
  rewrite_weights([](auto& ts) {
    ts.erase(std::remove_if(ts.begin(), ts.end(),
                            [](const auto& t) { return t.name == "model.layers.1.mlp.up_proj.weight"; }),
             ts.end());
  });
  expect_convert_error(ErrorCode::kInvalidFile, "no tensor 'model.layers.1.mlp.up_proj.weight'", "missing up_proj");
}

TEST_F(ConvertDirTest, AShapeConfigJsonContradicts) {
  rewrite_weights([](auto& ts) {
    for (auto& t : ts) {
      if (t.name == "model.layers.0.self_attn.k_proj.weight") {
        t.shape = {64, 64};  // 4 heads of K instead of 2
        t.values.resize(64 * 64);
      }
    }
  });
  expect_convert_error(
      ErrorCode::kInvalidFile,
      "tensor 'model.layers.0.self_attn.k_proj.weight' has shape [64, 64] but config.json gives [32, 64]", "K shape");
}

TEST_F(ConvertDirTest, AnUnreadableDtype) {
  rewrite_weights([](auto& ts) {
    for (auto& t : ts) {
      if (t.name == "model.norm.weight") {
        t.dtype = "I64";
        t.raw = std::string(64 * 8, '\0');
      }
    }
  });
  expect_convert_error(ErrorCode::kUnsupported, "tensor 'model.norm.weight' has dtype I64", "I64 weight");
}

TEST_F(ConvertDirTest, ATruncatedShard) {
  const std::string st = test::read_file(dir_ + "/model.safetensors");
  write("model.safetensors", st.substr(0, st.size() - 100));
  expect_convert_error(ErrorCode::kInvalidFile,
                       "model.safetensors': tensor 'lm_head.weight': data_offsets [323840, 400640) lie outside",
                       "truncated data");
}

TEST_F(ConvertDirTest, OutputEqualToAnInput) {
  expect_error([&] { (void)convert::convert_hf_model(dir_, dir_ + "/model.safetensors", {}); },
               ErrorCode::kInvalidArgument, "is an input file", "output over the input");
}

TEST_F(ConvertDirTest, ABadTypeName) {
  convert::ConvertParams p;
  p.type = "q3_K";
  expect_error([&] { (void)convert::convert_hf_model(dir_, out_, p); }, ErrorCode::kInvalidArgument,
               "unknown quantization type 'q3_K'", "q3_K");
}

TEST_F(ConvertDirTest, UnsupportedRopeScaling) {
  test::TinySpec s = spec_;
  s.rope_scaling_json = R"({"rope_type": "longrope", "factor": 4.0})";
  write("config.json", test::tiny_config_json(s));
  expect_convert_error(ErrorCode::kUnsupported, "rope_scaling type 'longrope' is not supported", "longrope");
}

class ShardedDirTest : public ConvertDirTest {
 protected:
  void SetUp() override {
    spec_.shards = 2;
    ConvertDirTest::SetUp();
  }
};

TEST_F(ShardedDirTest, AMissingShard) {
  fs::remove(dir_ + "/model-00002-of-00002.safetensors");
  expect_convert_error(ErrorCode::kIo,
                       "shard 'model-00002-of-00002.safetensors' named by model.safetensors.index.json is missing",
                       "missing shard");
}

TEST_F(ShardedDirTest, AShardNameOutsideTheDirectory) {
  std::string index = test::read_file(dir_ + "/model.safetensors.index.json");
  index.replace(index.find("model-00002-of-00002.safetensors"), 32, "../../etc/passwd.safetensors");
  write("model.safetensors.index.json", index);
  expect_convert_error(ErrorCode::kInvalidFile, "shard name '../../etc/passwd.safetensors' is not a file name",
                       "traversal");
}

TEST_F(ShardedDirTest, AnIndexThatDisagreesWithItsShards) {
  std::string index = test::read_file(dir_ + "/model.safetensors.index.json");
  // The index claims a tensor of shard 2 lives in shard 1.
  const size_t at = index.find("\"model-00002-of-00002.safetensors\"");
  index.replace(at, 34, "\"model-00001-of-00002.safetensors\"");
  write("model.safetensors.index.json", index);
  expect_convert_error(ErrorCode::kInvalidFile, "but the index says 'model-00001-of-00002.safetensors'", "stale index");
  // A tensor the index lists that no shard holds.
  index = test::read_file(dir_ + "/model.safetensors.index.json");
  index.insert(index.find("\"weight_map\": {") + 15, "\"model.extra.weight\": \"model-00001-of-00002.safetensors\", ");
  write("model.safetensors.index.json", index);
  expect_convert_error(ErrorCode::kInvalidFile, "tensor 'model.extra.weight' is listed in model.safetensors.index.json",
                       "ghost");
}

TEST_F(ShardedDirTest, ATensorInTwoShards) {
  // Shard 2 gains a copy of a tensor of shard 1.
  const auto s1 = SafetensorsFile::open(dir_ + "/model-00001-of-00002.safetensors");
  const auto s2 = SafetensorsFile::open(dir_ + "/model-00002-of-00002.safetensors");
  std::vector<test::HfTensor> ts;
  for (const auto& t : s2.tensors()) ts.push_back(ck_.at(t.name));
  ts.push_back(ck_.at(s1.tensors().front().name));
  write("model-00002-of-00002.safetensors", test::safetensors_bytes(ts));
  expect_convert_error(ErrorCode::kInvalidFile, "is in both", "duplicate across shards");
}

// ---------------------------------------------------------------- BERT

class BertDirTest : public CheckpointDirTest {
 protected:
  void SetUp() override {
    static int n = 0;
    dir_ = test::temp_dir() + "/hostile-bert-" + std::to_string(n++);
    spec_.masked_lm = true;  // "bert."-prefixed names
    spec_.pooling = "mean";
    ck_ = test::write_tiny_bert_checkpoint(spec_, dir_);
    out_ = dir_ + ".gguf";
  }
  void write_config(const std::string& from, const std::string& to) {
    std::string c = test::tiny_bert_config_json(spec_);
    c.replace(c.find(from), from.size(), to);
    write("config.json", c);
  }
  template <class Edit>
  void rewrite_weights(Edit&& edit) {
    std::vector<test::HfTensor> ts;
    for (const auto& [name, t] : ck_.tensors) {
      ts.push_back(t);
      ts.back().name = "bert." + name;
    }
    edit(ts);
    write("model.safetensors", test::safetensors_bytes(ts));
  }

  test::TinyBertSpec spec_;
  test::TinyBertCheckpoint ck_;
};

TEST_F(BertDirTest, AMissingTokenTypeEmbeddingIsNamedWithItsPrefixedForm) {
  rewrite_weights([](auto& ts) {
    std::erase_if(ts, [](const auto& t) { return t.name == "bert.embeddings.token_type_embeddings.weight"; });
  });
  expect_convert_error(
      ErrorCode::kInvalidFile,
      "no tensor 'embeddings.token_type_embeddings.weight' or 'bert.embeddings.token_type_embeddings.weight'",
      "missing token types");
}

TEST_F(BertDirTest, AWrongShapeNamesTheConfigKeys) {
  rewrite_weights([](auto& ts) {
    for (auto& t : ts) {
      if (t.name == "bert.embeddings.position_embeddings.weight") {
        t.shape = {32, 64};  // fewer positions than max_position_embeddings
        t.values.resize(32 * 64);
      }
    }
  });
  expect_convert_error(ErrorCode::kInvalidFile,
                       "has shape [32, 64] but config.json gives [64, 64] ([max_position_embeddings, hidden_size])",
                       "position rows");
}

TEST_F(BertDirTest, AnUnknownModelTypeIsRefused) {
  write_config("\"model_type\": \"bert\"", "\"model_type\": \"roberta\"");
  expect_convert_error(ErrorCode::kUnsupported,
                       "model_type 'roberta' is not one BertForMaskedLM is converted as (expected: bert)",
                       "roberta under BertModel's class name");
}

TEST_F(BertDirTest, ATokenizerLargerThanVocabSizeIsRefused) {
  write_config("\"vocab_size\": 200", "\"vocab_size\": 150");
  rewrite_weights([](auto& ts) {
    for (auto& t : ts) {
      if (t.name == "bert.embeddings.word_embeddings.weight") {
        t.shape = {150, 64};
        t.values.resize(150 * 64);
      }
    }
  });
  expect_convert_error(ErrorCode::kInvalidFile, "token id 199 is outside config.json vocab_size 150",
                       "tokenizer past vocab_size");
}

TEST_F(BertDirTest, WhatTheEngineWouldRunDifferentlyIsRefused) {
  write_config("\"hidden_act\": \"gelu\"", "\"hidden_act\": \"gelu_new\"");
  expect_convert_error(ErrorCode::kUnsupported, "hidden_act 'gelu_new' is not supported", "tanh GELU");
  write_config("\"position_embedding_type\": \"absolute\"", "\"position_embedding_type\": \"relative_key\"");
  expect_convert_error(ErrorCode::kUnsupported, "position_embedding_type 'relative_key'", "relative positions");
  write_config("\"max_position_embeddings\": 64,", "");
  expect_convert_error(ErrorCode::kInvalidFile, "'max_position_embeddings' is missing", "no positions");
}

TEST_F(BertDirTest, PoolingDeclarationsThatCannotBeHonoured) {
  write("1_Pooling/config.json", R"({"pooling_mode_max_tokens": true, "pooling_mode_mean_tokens": false})");
  expect_convert_error(ErrorCode::kUnsupported, "declares a pooling other than mean, cls or lasttoken", "max pooling");
  write("modules.json", R"([{"idx": 1, "path": "../elsewhere", "type": "sentence_transformers.models.Pooling"}])");
  expect_convert_error(ErrorCode::kInvalidFile, "module path '../elsewhere' is not a folder inside", "path escape");
  write("modules.json", R"([{"idx": 1, "path": "2_Pool", "type": "sentence_transformers.models.Pooling"}])");
  expect_convert_error(ErrorCode::kIo, "2_Pool/config.json is missing", "missing pooling config");
  write("modules.json", R"({"not": "a list"})");
  expect_convert_error(ErrorCode::kInvalidFile, "modules.json: not a list", "modules.json object");
}

// The engine's WordPiece always splits CJK ideographs into words and cleans the text: a tokenizer
// that does neither is refused, not converted into one that encodes differently.
TEST_F(BertDirTest, ANormalizerTheEngineDoesNotRunIsRefused) {
  const std::string tokenizer = test::read_file(dir_ + "/tokenizer.json");
  const std::string config = test::read_file(dir_ + "/tokenizer_config.json");
  auto edited = [](std::string text, const std::string& from, const std::string& to) {
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? text : text.replace(at, from.size(), to);
  };
  write("tokenizer_config.json", edited(config, "\"tokenize_chinese_chars\": true", "\"tokenize_chinese_chars\": false"));
  expect_convert_error(ErrorCode::kUnsupported, "tokenize_chinese_chars / handle_chinese_chars false is not supported",
                       "tokenize_chinese_chars false in tokenizer_config.json");
  // tokenizer_config.json's true wins over the file's false (BertTokenizerFast rebuilds the
  // normalizer from it): converts.
  write("tokenizer_config.json", config);
  write("tokenizer.json", edited(tokenizer, "\"handle_chinese_chars\": true", "\"handle_chinese_chars\": false"));
  EXPECT_NO_THROW((void)convert::convert_hf_model(dir_, out_, {}));
  fs::remove(out_);
  write("tokenizer_config.json", edited(config, "\"tokenize_chinese_chars\": true, ", ""));
  expect_convert_error(ErrorCode::kUnsupported, "tokenize_chinese_chars / handle_chinese_chars false is not supported",
                       "handle_chinese_chars false in tokenizer.json");
  write("tokenizer_config.json", config);
  write("tokenizer.json", edited(tokenizer, "\"clean_text\": true", "\"clean_text\": false"));
  expect_convert_error(ErrorCode::kUnsupported, "BertNormalizer clean_text false is not supported", "clean_text false");
}

TEST_F(BertDirTest, TheSameWeightWithAndWithoutThePrefix) {
  rewrite_weights([](auto& ts) {
    test::HfTensor dup = ts.front();
    dup.name = dup.name.substr(5);
    ts.push_back(dup);
  });
  expect_convert_error(ErrorCode::kInvalidFile, "the checkpoint holds the same weight twice", "duplicate");
}

}  // namespace
}  // namespace edgellm
