// quantize_model end to end on the real models: output is a loadable GGUF with every metadata
// key, general.file_type and the planned types; same input -> same bytes (any thread count);
// stories260K's 172-wide FFN falls back with a note; failures and cancellation leave the output
// path untouched; requantizing is refused unless allowed.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "model/model.h"
#include "tools/quant/quantize_model.h"
#include "support/test_env.h"

namespace edgellm::quant {
namespace {

std::string stories() { return test::shared_model("stories260K.gguf"); }
std::string out_path(const std::string& name) { return test::temp_dir() + "/" + name; }

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

QuantizeSummary run(const std::string& in, const std::string& out, FileType ft, int threads = 2,
                    std::vector<TensorReport>* reports = nullptr) {
  QuantizeParams p;
  p.ftype = ft;
  p.n_threads = threads;
  if (reports) p.on_tensor = [reports](const TensorReport& r) { reports->push_back(r); };
  return quantize_model(in, out, p);
}

TEST(QuantizeModel, Q8OutputLoadsAndKeepsMetadata) {
  const std::string out = out_path("q8.gguf");
  std::vector<TensorReport> reports;
  const QuantizeSummary s = run(stories(), out, FileType::kMostlyQ8_0, 2, &reports);
  auto in = gguf::GgufFile::open(stories());
  auto q = gguf::GgufFile::open(out);
  EXPECT_EQ(q->version(), 3u);
  // Every input key is present with the same type; only the two quantization keys may change.
  for (const auto& kv : in->metadata()) {
    const gguf::Value* v = q->find(kv.key);
    ASSERT_NE(v, nullptr) << "missing key " << kv.key;
    EXPECT_EQ(v->type, kv.value.type) << kv.key;
    if (kv.key == "general.file_type" || kv.key == "general.quantization_version") continue;
    if (kv.value.type == gguf::ValueType::kString) {
      EXPECT_EQ(v->str, kv.value.str) << kv.key;
    }
    if (kv.value.type == gguf::ValueType::kArray) {
      EXPECT_EQ(v->array_size, kv.value.array_size) << kv.key;
    }
    if (kv.value.is_integer()) {
      EXPECT_EQ(v->i, kv.value.i) << kv.key;
    }
  }
  EXPECT_EQ(q->get_int("general.file_type"), 7);
  EXPECT_EQ(q->get_int("general.quantization_version"), 2);
  ASSERT_EQ(q->tensors().size(), in->tensors().size());
  EXPECT_EQ(reports.size(), in->tensors().size());
  EXPECT_EQ(s.file_bytes, q->file_size());
  for (size_t i = 0; i < in->tensors().size(); ++i) {
    const auto& a = in->tensors()[i];
    const auto& b = q->tensors()[i];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.shape_string(), b.shape_string());
    if (a.n_dims == 1) {
      EXPECT_EQ(b.type, TensorType::F32) << b.name;
    } else if (a.ne[0] % 32 == 0) {
      EXPECT_EQ(b.type, TensorType::Q8_0) << b.name;
    } else {
      EXPECT_EQ(b.type, TensorType::F16) << b.name << " (width " << a.ne[0] << ")";
    }
  }
  // And the engine loads it.
  EXPECT_NO_THROW(Model::load(out));
}

TEST(QuantizeModel, DeterministicAcrossRunsAndThreadCounts) {
  const std::string a = out_path("det_a.gguf"), b = out_path("det_b.gguf");
  run(stories(), a, FileType::kMostlyQ4_K_M, 1);
  run(stories(), b, FileType::kMostlyQ4_K_M, 3);
  EXPECT_EQ(test::read_file(a), test::read_file(b));
  const std::string c = out_path("det_c.gguf");
  run(stories(), c, FileType::kMostlyQ4_K_M, 2);
  EXPECT_EQ(test::read_file(a), test::read_file(c));
}

TEST(QuantizeModel, NarrowFfnFallsBackWithNote) {
  // stories260K: dim 64, FFN 172. ffn_down rows are 172 wide: neither q4_K (256) nor its
  // fallback q5_0 (32) fit -> f16. 64-wide rows take the 32-block fallback q5_0.
  std::vector<TensorReport> reports;
  const QuantizeSummary s = run(stories(), out_path("q4k.gguf"), FileType::kMostlyQ4_K_S, 2, &reports);
  int n_down = 0;
  for (const auto& r : reports) {
    if (r.name.find("ffn_down") != std::string::npos) {
      ++n_down;
      EXPECT_EQ(r.to, TensorType::F16) << r.name;
      EXPECT_TRUE(r.fallback);
      EXPECT_NE(r.reason.find("172"), std::string::npos) << r.reason;
    } else if (r.name.find("ffn_gate") != std::string::npos || r.name.find("attn_q") != std::string::npos) {
      EXPECT_EQ(r.to, TensorType::Q5_0) << r.name;
      EXPECT_TRUE(r.fallback);
    }
  }
  EXPECT_EQ(n_down, 5);
  EXPECT_GT(s.n_fallback, 0u);
  EXPECT_NO_THROW(Model::load(out_path("q4k.gguf")));
}

TEST(QuantizeModel, InjectedWriteErrorLeavesOutputUntouched) {
  const std::string out = out_path("keep.gguf");
  write_text(out, "previous contents");
  QuantizeParams p;
  p.ftype = FileType::kMostlyQ4_0;
  int seen = 0;
  p.on_tensor = [&](const TensorReport&) {
    if (++seen == 3) throw Error(ErrorCode::kIo, "cannot write '" + out + ".tmp': No space left on device");
  };
  try {
    quantize_model(stories(), out, p);
    FAIL() << "expected the injected error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("No space left on device"), std::string::npos);
  }
  EXPECT_EQ(test::read_file(out), "previous contents");
  EXPECT_FALSE(test::temp_file_left(out));
}

TEST(QuantizeModel, CancelLeavesOutputUntouched) {
  const std::string out = out_path("cancel.gguf");
  std::atomic<bool> cancel{false};
  QuantizeParams p;
  p.ftype = FileType::kMostlyQ8_0;
  p.cancel = &cancel;
  p.on_tensor = [&](const TensorReport& r) {
    if (r.index == 1) cancel.store(true);  // as the SIGINT handler would
  };
  try {
    quantize_model(stories(), out, p);
    FAIL() << "expected cancellation";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCancelled);
  }
  EXPECT_FALSE(test::file_exists(out));
  EXPECT_FALSE(test::temp_file_left(out));
}

TEST(QuantizeModel, UnwritableDirectoryFailsCleanly) {
  const std::string out = test::temp_dir() + "/no/such/dir/model.gguf";
  try {
    run(stories(), out, FileType::kMostlyQ8_0);
    FAIL() << "expected an I/O error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("no/such/dir"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(test::file_exists(out));
  EXPECT_THROW(run(stories(), stories(), FileType::kMostlyQ8_0), Error);  // never overwrite the input
}

TEST(QuantizeModel, RequantizePolicy) {
  const std::string q4 = out_path("rq_q4.gguf"), q8 = out_path("rq_q8.gguf");
  run(stories(), q4, FileType::kMostlyQ4_0);
  run(stories(), q8, FileType::kMostlyQ8_0);
  // q4_0 -> q8_0 is refused without --allow-requantize, and names the tensor.
  try {
    run(q4, out_path("rq_refused.gguf"), FileType::kMostlyQ8_0);
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("allow-requantize"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(test::file_exists(out_path("rq_refused.gguf")));
  QuantizeParams p;
  p.ftype = FileType::kMostlyQ8_0;
  p.allow_requantize = true;
  EXPECT_NO_THROW(quantize_model(q4, out_path("rq_allowed.gguf"), p));
  // Q8_0 sources are accepted with a warning.
  std::vector<std::string> warnings;
  QuantizeParams w;
  w.ftype = FileType::kMostlyQ4_0;
  w.on_warning = [&](const std::string& s) { warnings.push_back(s); };
  EXPECT_NO_THROW(quantize_model(q8, out_path("rq_from_q8.gguf"), w));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("q8_0"), std::string::npos);
}

TEST(QuantizeModel, RulesPickTypesInTheFile) {
  QuantizeParams p;
  p.ftype = FileType::kMostlyQ4_0;
  p.rules.push_back(parse_type_rule("attn_(q|k|v|output)=q8_0"));
  p.rules.push_back(parse_type_rule("ffn_(gate|up)=q4_1"));
  const std::string out = out_path("rules.gguf");
  quantize_model(stories(), out, p);
  auto q = gguf::GgufFile::open(out);
  for (const auto& t : q->tensors()) {
    const std::string name(t.name);
    if (name.find("attn_q.") != std::string::npos || name.find("attn_output.") != std::string::npos) {
      EXPECT_EQ(t.type, TensorType::Q8_0) << name;
    } else if (name.find("ffn_up.") != std::string::npos) {
      EXPECT_EQ(t.type, TensorType::Q4_1) << name;
    } else if (name.find("ffn_down.") != std::string::npos) {
      EXPECT_EQ(t.type, TensorType::F16) << name;  // 172 wide: q4_0 does not fit
    }
  }
  EXPECT_EQ(q->get_int("general.file_type"), 2);
}

}  // namespace
}  // namespace edgellm::quant
