// The Runtime's embedding role (runtime/runtime.h): an encoder file opens as an embedding
// runtime by itself, a decoder does with role kEmbed; embed() results carry the version and
// equal the Embedder run directly on the same model file (independent of the queue and the
// runtime); what only generation has is refused with kUnsupported; and an app holds an embedder
// and a generator at once, each serving its requests concurrently, the generator's text equal
// to what it gives alone.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "engine/embedder.h"
#include "model/model.h"
#include "runtime/runtime.h"
#include "support/synthetic_model.h"
#include "support/test_env.h"
#include "tokenizer/tokenizer.h"

namespace edgellm {
namespace {

using namespace std::chrono_literals;

std::string bert_file() {
  static const std::string path = [] {
    const test::SyntheticModelSpec s = test::small_bert_spec();
    const std::string p = test::temp_dir() + "/bert.gguf";
    test::write_synthetic_model(s, p);
    return p;
  }();
  return path;
}

std::string qwen3_file() {
  static const std::string path = [] {
    test::SyntheticModelSpec s;
    s.arch = "qwen3";
    s.n_vocab = 300;
    s.head_dim = 64;
    s.n_head = 8;
    s.n_head_kv = 4;
    s.tied = true;
    s.write_vocab = true;
    const std::string p = test::temp_dir() + "/qwen3.gguf";
    test::write_synthetic_model(s, p);
    return p;
  }();
  return path;
}

EmbeddingResult embed(Runtime& rt, std::vector<std::string> texts) {
  auto done = std::make_shared<std::promise<EmbeddingResult>>();
  EmbeddingRequest r;
  r.texts = std::move(texts);
  r.on_finish = [done](EmbeddingResult& res) { done->set_value(res); };
  rt.embed(std::move(r));
  auto f = done->get_future();
  EXPECT_EQ(f.wait_for(60s), std::future_status::ready);
  return f.get();
}

std::vector<float> direct(const std::string& path, const std::vector<std::string>& texts) {
  const auto model = Model::load(path);
  const auto tok = Tokenizer::from_gguf(model->gguf());
  Embedder e(*model, EmbedderParams{});
  std::vector<EmbedInput> in;
  for (const auto& t : texts) in.push_back(text_input(*tok, t, e.n_ctx(), Truncation::kRefuse));
  std::vector<float> out;
  e.embed(in, PoolingType::kUnspecified, 2, out);
  return out;
}

template <typename Fn>
void expect_unsupported(Fn fn, const char* what) {
  try {
    fn();
    ADD_FAILURE() << what << " was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported) << what << ": " << e.what();
  }
}

TEST(RuntimeEmbeddings, AnEncoderFileOpensAsAnEmbeddingRuntime) {
  RuntimeParams p;
  p.model_path = bert_file();
  p.model_version = "bge-test-1";
  Runtime rt(p);
  EXPECT_EQ(rt.role(), RuntimeRole::kEmbed);
  ASSERT_NE(rt.embedding_service(), nullptr);
  EXPECT_EQ(rt.service(), nullptr);
  const std::vector<std::string> texts = {"t5 t6 t7", "t100", "t9 t8 t7 t6 t5 t4 t3"};
  const EmbeddingResult r = embed(rt, texts);
  ASSERT_EQ(r.finish_reason, FinishReason::kStop) << r.error;
  EXPECT_EQ(r.model_version, "bge-test-1");
  EXPECT_EQ(r.pooling, PoolingType::kMean);
  EXPECT_EQ(r.vectors, direct(bert_file(), texts));
  // Generation-only calls say what this runtime is.
  expect_unsupported([&] { rt.submit(ServiceRequest{}); }, "submit");
  expect_unsupported([&] { rt.swap_model(bert_file(), "2"); }, "swap_model");
  expect_unsupported([&] { rt.import_session("s", "bytes"); }, "import_session");
  expect_unsupported([&] { rt.set_router(RouterParams{}); }, "set_router");
  // Shared machinery: metrics with the role, pause / resume, trim, pressure.
  const Json m = rt.metrics_json();
  EXPECT_EQ(m.at("role").as_string(), "embed");
  EXPECT_EQ(m.at("inputs").as_int(), 3);
  EXPECT_NE(rt.metrics_prometheus().find("edgellm_embedding_forwards_total"), std::string::npos);
  rt.pause();
  EXPECT_TRUE(rt.paused());
  rt.resume();
  PressureSignals high;
  high.memory_level = 2;
  rt.set_pressure(high);  // trims the embedder's scratch
  EXPECT_EQ(embed(rt, texts).vectors, r.vectors);
  EXPECT_GE(rt.embedding_metrics().trims, 1u);
  rt.shutdown();
  EmbeddingRequest late;
  late.texts = {"t1"};
  try {
    rt.embed(std::move(late));
    FAIL() << "embed after shutdown";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCancelled);
  }
}

TEST(RuntimeEmbeddings, ADecoderEmbedsWithRoleEmbed) {
  RuntimeParams p;
  p.model_path = qwen3_file();
  p.role = RuntimeRole::kEmbed;
  Runtime rt(p);
  EXPECT_EQ(rt.role(), RuntimeRole::kEmbed);
  const EmbeddingResult r = embed(rt, {"<t10><t11><t12>", "<t50>"});
  ASSERT_EQ(r.finish_reason, FinishReason::kStop) << r.error;
  EXPECT_EQ(r.pooling, PoolingType::kLast);
  EXPECT_EQ(r.vectors, direct(qwen3_file(), {"<t10><t11><t12>", "<t50>"}));
  // A generation runtime refuses embed().
  RuntimeParams g;
  g.model_path = qwen3_file();
  g.service.context.n_ctx = 64;
  Runtime gen(g);
  EXPECT_EQ(gen.role(), RuntimeRole::kGenerate);
  expect_unsupported([&] { gen.embed(EmbeddingRequest{}); }, "embed on a generator");
}

TEST(RuntimeEmbeddings, AnEmbedderAndAGeneratorServeAtOnce) {
  RuntimeParams gp;
  gp.model_path = test::shared_model("stories260K.gguf");
  gp.service.context.n_ctx = 256;
  gp.service.context.kv_type = TensorType::F32;
  Runtime generator(gp);
  RuntimeParams ep;
  ep.model_path = bert_file();
  Runtime embedder(ep);

  const auto generate = [&](const std::string& prompt) {
    auto done = std::make_shared<std::promise<RequestResult>>();
    ServiceRequest r;
    r.prompt = prompt;
    r.sampling.temperature = 0;
    r.generation.max_tokens = 24;
    r.deadline_ms = 0;
    r.on_finish = [done](RequestResult& res) { done->set_value(res); };
    generator.submit(std::move(r));
    return done->get_future();
  };
  const std::string solo = [&] {
    auto f = generate("Once upon a time");
    EXPECT_EQ(f.wait_for(60s), std::future_status::ready);
    return f.get().text;
  }();
  const std::vector<float> want = direct(bert_file(), {"t1 t2 t3", "t40 t41"});
  // Both at once, from two client threads each.
  std::vector<std::future<RequestResult>> texts;
  std::vector<std::future<EmbeddingResult>> vecs;
  std::thread a([&] {
    for (int i = 0; i < 3; ++i) texts.push_back(generate("Once upon a time"));
  });
  std::thread b([&] {
    for (int i = 0; i < 3; ++i) {
      auto done = std::make_shared<std::promise<EmbeddingResult>>();
      EmbeddingRequest r;
      r.texts = {"t1 t2 t3", "t40 t41"};
      r.on_finish = [done](EmbeddingResult& res) { done->set_value(res); };
      embedder.embed(std::move(r));
      vecs.push_back(done->get_future());
    }
  });
  a.join();
  b.join();
  for (auto& f : texts) {
    ASSERT_EQ(f.wait_for(60s), std::future_status::ready);
    EXPECT_EQ(f.get().text, solo);
  }
  for (auto& f : vecs) {
    ASSERT_EQ(f.wait_for(60s), std::future_status::ready);
    const EmbeddingResult r = f.get();
    ASSERT_EQ(r.finish_reason, FinishReason::kStop) << r.error;
    EXPECT_EQ(r.vectors, want);
  }
}

}  // namespace
}  // namespace edgellm
