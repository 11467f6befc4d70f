// The EmbeddingService: results equal the Embedder run directly on the same inputs (an
// independent driver of the same engine: no queue, no scheduler), requests submitted together
// share forwards without changing a value, and the runtime machinery holds — BUSY with a full
// queue, deadlines (also while paused), cancel of waiting and admitted requests, shutdown with
// requests in flight, refusals with clear errors, metrics. No sleeps: every wait is on an
// observable state with a deadline.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "engine/embedder.h"
#include "model/model.h"
#include "service/embedding_service.h"
#include "support/synthetic_model.h"
#include "tokenizer/tokenizer.h"

namespace edgellm {
namespace {

using namespace std::chrono_literals;

std::shared_ptr<const Model> bert(int32_t n_cls_out = 0, int32_t n_layer = 2) {
  test::SyntheticModelSpec s;
  s.arch = "bert";
  s.n_vocab = 1000;
  s.n_embd = 128;
  s.n_layer = n_layer;
  s.n_ff = 256;
  s.n_head = 4;
  s.n_head_kv = 4;
  s.n_ctx_train = 128;
  s.rms_eps = 1e-12f;
  s.pooling = n_cls_out > 0 ? 4 : 2;
  s.n_cls_out = n_cls_out;
  s.weight_type = TensorType::F16;
  s.write_vocab = true;  // placeholder WordPiece: word "t<id>" is token <id>
  return std::shared_ptr<const Model>(Model::from_gguf(test::synthetic_model(s)));
}

std::string words(int first, int n) {
  std::string t;
  for (int i = 0; i < n; ++i) t += (i ? " t" : "t") + std::to_string(first + i);
  return t;
}

// Collects results by id; waits with a deadline.
struct Results {
  std::mutex mutex;
  std::condition_variable cv;
  std::map<RequestId, EmbeddingResult> by_id;
  std::vector<RequestId> order;
  int calls = 0;

  std::function<void(EmbeddingResult&)> callback() {
    return [this](EmbeddingResult& r) {
      std::lock_guard<std::mutex> lock(mutex);
      ++calls;
      order.push_back(r.id);
      by_id.emplace(r.id, std::move(r));
      cv.notify_all();
    };
  }
  bool wait_for(size_t n, std::chrono::milliseconds timeout = 60s) {
    std::unique_lock<std::mutex> lock(mutex);
    return cv.wait_for(lock, timeout, [&] { return by_id.size() >= n; });
  }
  EmbeddingResult get(RequestId id) {
    std::lock_guard<std::mutex> lock(mutex);
    return by_id.at(id);
  }
};

EmbeddingRequest embed_request(std::vector<std::string> texts, Results& results) {
  EmbeddingRequest r;
  r.texts = std::move(texts);
  r.on_finish = results.callback();
  return r;
}

std::vector<float> direct(const Model& model, const std::vector<std::string>& texts, PoolingType pooling,
                          int normalize) {
  const auto tok = Tokenizer::from_gguf(model.gguf());
  Embedder e(model, EmbedderParams{});
  std::vector<EmbedInput> in;
  for (const auto& t : texts) in.push_back(text_input(*tok, t, e.n_ctx(), Truncation::kRefuse));
  std::vector<float> out;
  e.embed(in, pooling, normalize, out);
  return out;
}

TEST(EmbeddingService, ResultsEqualTheEmbedderAndRequestsShareForwards) {
  const auto model = bert();
  EmbeddingServiceParams p;
  p.max_queued = 16;
  EmbeddingService svc(model, p);
  EXPECT_EQ(svc.default_pooling(), PoolingType::kCls);
  Results results;
  // Submitted while paused, so the scheduler finds all of them at once and batches them.
  svc.pause();
  std::vector<std::vector<std::string>> texts;
  std::vector<RequestId> ids;
  for (int i = 0; i < 6; ++i) {
    texts.push_back({words(200 + 10 * i, 3 + i), words(500 + i, 1 + 7 * i)});
    EmbeddingRequest r = embed_request(texts.back(), results);
    r.pooling = i % 2 ? PoolingType::kMean : PoolingType::kUnspecified;
    r.normalize = i % 3 == 0 ? -1 : 2;
    ids.push_back(svc.submit(std::move(r)));
  }
  svc.resume();
  ASSERT_TRUE(results.wait_for(6));
  for (int i = 0; i < 6; ++i) {
    const EmbeddingResult r = results.get(ids[static_cast<size_t>(i)]);
    ASSERT_EQ(r.finish_reason, FinishReason::kStop) << r.error;
    EXPECT_EQ(r.pooling, i % 2 ? PoolingType::kMean : PoolingType::kCls);
    EXPECT_EQ(r.dims, 128);
    EXPECT_EQ(r.input_tokens.size(), 2u);
    EXPECT_EQ(r.input_tokens[0], 3 + i + 2);  // [CLS] words [SEP]
    EXPECT_EQ(r.prompt_tokens, r.input_tokens[0] + r.input_tokens[1]);
    // The same bits as the Embedder alone on this request's inputs.
    EXPECT_EQ(r.vectors, direct(*model, texts[static_cast<size_t>(i)], r.pooling, i % 3 == 0 ? -1 : 2)) << i;
  }
  const EmbeddingMetrics m = svc.metrics();
  EXPECT_EQ(m.requests_finished, 6u);
  EXPECT_EQ(m.completed, 6u);
  EXPECT_EQ(m.inputs, 12u);
  EXPECT_LT(m.forwards, 6u) << "requests submitted together should share forwards";
  EXPECT_GE(m.forwards, 1u);
}

TEST(EmbeddingService, ALongRequestSpansForwardsAndShortOnesGoAlongside) {
  const auto model = bert();
  EmbeddingServiceParams p;
  p.embedder.n_ctx = 64;
  p.embedder.n_batch = 64;
  EmbeddingService svc(model, p);
  Results results;
  std::vector<std::string> many;
  for (int i = 0; i < 40; ++i) many.push_back(words(100 + i, 20));
  svc.pause();
  const RequestId big = svc.submit(embed_request(many, results));
  const RequestId small = svc.submit(embed_request({words(700, 4)}, results));
  svc.resume();
  ASSERT_TRUE(results.wait_for(2));
  const EmbeddingResult b = results.get(big);
  ASSERT_EQ(b.finish_reason, FinishReason::kStop) << b.error;
  EXPECT_GT(b.forwards, 10);  // 40 inputs of 22 tokens, at most 2 per 64-token forward
  EXPECT_EQ(b.vectors, direct(*model, many, PoolingType::kCls, 2));
  EXPECT_EQ(results.get(small).vectors, direct(*model, {words(700, 4)}, PoolingType::kCls, 2));
}

TEST(EmbeddingService, RerankScoresEqualTheEmbeddersRankHead) {
  const auto model = bert(/*n_cls_out=*/1);
  EmbeddingService svc(model, EmbeddingServiceParams{});
  EXPECT_TRUE(svc.can_rerank());
  Results results;
  EmbeddingRequest r;
  r.task = EmbeddingTask::kRerank;
  r.query = words(10, 3);
  r.documents = {words(20, 5), words(10, 3), words(40, 12)};
  r.on_finish = results.callback();
  const RequestId id = svc.submit(std::move(r));
  ASSERT_TRUE(results.wait_for(1));
  const EmbeddingResult res = results.get(id);
  ASSERT_EQ(res.finish_reason, FinishReason::kStop) << res.error;
  ASSERT_EQ(res.scores.size(), 3u);
  EXPECT_TRUE(res.vectors.empty());
  const auto tok = Tokenizer::from_gguf(model->gguf());
  Embedder e(*model, EmbedderParams{});
  std::vector<EmbedInput> in;
  for (int i : {0, 1, 2}) {
    const std::string doc = i == 0 ? words(20, 5) : i == 1 ? words(10, 3) : words(40, 12);
    in.push_back(pair_input(*tok, words(10, 3), doc, e.n_ctx(), Truncation::kRefuse));
  }
  std::vector<float> scores;
  e.embed(in, PoolingType::kRank, 2, scores);
  EXPECT_EQ(res.scores, scores);
  // An embedding model cannot rerank; a reranker refuses pooling rank for plain embeddings.
  EmbeddingService plain(bert(), EmbeddingServiceParams{});
  EmbeddingRequest rr;
  rr.task = EmbeddingTask::kRerank;
  rr.query = "t1";
  rr.documents = {"t2"};
  try {
    plain.submit(std::move(rr));
    FAIL() << "rerank accepted by an embedding model";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("classification head"), std::string::npos) << e.what();
  }
}

TEST(EmbeddingService, BadRequestsAreRefusedWithTheReason) {
  EmbeddingService svc(bert(), EmbeddingServiceParams{});
  const auto refused = [&](EmbeddingRequest r, const std::string& words_expected) {
    try {
      svc.submit(std::move(r));
      ADD_FAILURE() << "accepted; expected: " << words_expected;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
      EXPECT_NE(std::string(e.what()).find(words_expected), std::string::npos) << e.what();
    }
  };
  refused(EmbeddingRequest{}, "texts or token arrays");
  EmbeddingRequest both;
  both.texts = {"t1"};
  both.token_inputs = {{101, 5, 102}};
  refused(both, "exactly one kind");
  EmbeddingRequest empty;
  empty.texts = {"t1", ""};
  refused(empty, "input[1] is empty");
  EmbeddingRequest bad_utf8;
  bad_utf8.texts = {"t1 \xC3\x28"};
  refused(bad_utf8, "not valid UTF-8");
  EmbeddingRequest bad_id;
  bad_id.token_inputs = {{101, 5000, 102}};
  refused(bad_id, "outside the vocabulary");
  EmbeddingRequest rank;
  rank.texts = {"t1"};
  rank.pooling = PoolingType::kRank;
  refused(rank, "rerank request");
  EmbeddingRequest norm;
  norm.texts = {"t1"};
  norm.normalize = 99;
  refused(norm, "embd_normalize");
  EmbeddingRequest too_many;
  too_many.texts.assign(limits::kMaxEmbeddingInputs + 1, "t1");
  refused(too_many, "at most 2048");
  EXPECT_EQ(svc.metrics().invalid_requests, 8u);
  // A text longer than the model takes: refused at admission (the request ends with the error),
  // or cut with truncation "end".
  Results results;
  EmbeddingRequest long_text = embed_request({words(1, 200)}, results);
  const RequestId a = svc.submit(std::move(long_text));
  EmbeddingRequest cut = embed_request({words(1, 200)}, results);
  cut.truncation = Truncation::kEnd;
  const RequestId b = svc.submit(std::move(cut));
  ASSERT_TRUE(results.wait_for(2));
  const EmbeddingResult ra = results.get(a);
  EXPECT_EQ(ra.finish_reason, FinishReason::kError);
  EXPECT_EQ(ra.error_code, ErrorCode::kInvalidArgument);
  EXPECT_NE(ra.error.find("202 tokens"), std::string::npos) << ra.error;
  EXPECT_TRUE(ra.vectors.empty());
  const EmbeddingResult rb = results.get(b);
  ASSERT_EQ(rb.finish_reason, FinishReason::kStop) << rb.error;
  EXPECT_EQ(rb.input_tokens[0], 128);
  EXPECT_EQ(rb.truncated[0], 1);
  EXPECT_EQ(svc.metrics().truncated_inputs, 1u);
}

TEST(EmbeddingService, BusyDeadlineCancelAndShutdown) {
  auto svc = std::make_unique<EmbeddingService>(bert(), [] {
    EmbeddingServiceParams p;
    p.max_queued = 2;
    return p;
  }());
  Results results;
  svc->pause();
  const RequestId a = svc->submit(embed_request({"t1 t2"}, results));
  EmbeddingRequest soon = embed_request({"t3"}, results);
  soon.deadline_ms = 50;  // expires while paused: deadlines keep running
  const RequestId b = svc->submit(std::move(soon));
  const RequestId c = svc->submit(embed_request({"t4"}, results));
  try {
    svc->submit(embed_request({"t5"}, results));
    FAIL() << "a fourth request was accepted with max_queued 2";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBusy);
  }
  EXPECT_EQ(svc->metrics().busy_rejections, 1u);
  ASSERT_TRUE(results.wait_for(1));
  EXPECT_EQ(results.get(b).finish_reason, FinishReason::kTimeout);
  EXPECT_TRUE(svc->cancel(c));
  EXPECT_FALSE(svc->cancel(9999));
  ASSERT_TRUE(results.wait_for(2));
  EXPECT_EQ(results.get(c).finish_reason, FinishReason::kCancelled);
  EXPECT_FALSE(svc->cancel(c));  // finished
  // Shutdown with `a` still waiting: it ends cancelled, exactly once; submit then refuses.
  svc->shutdown();
  ASSERT_TRUE(results.wait_for(3));
  EXPECT_EQ(results.get(a).finish_reason, FinishReason::kCancelled);
  EXPECT_THROW(svc->submit(embed_request({"t6"}, results)), Error);
  svc.reset();
  EXPECT_EQ(results.calls, 3);
}

TEST(EmbeddingService, CancelOfAnAdmittedRequestEndsItBetweenForwards) {
  const auto model = bert(0, 4);
  EmbeddingServiceParams p;
  p.embedder.n_ctx = 64;
  p.embedder.n_batch = 64;
  EmbeddingService svc(model, p);
  Results results;
  std::vector<std::string> many(400, words(100, 30));  // ~200 forwards
  const RequestId id = svc.submit(embed_request(many, results));
  // Wait until it runs (a forward was counted), then cancel it.
  const auto until = std::chrono::steady_clock::now() + 60s;
  while (svc.metrics().forwards == 0 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
  ASSERT_GT(svc.metrics().forwards, 0u);
  EXPECT_TRUE(svc.cancel(id));
  ASSERT_TRUE(results.wait_for(1));
  const EmbeddingResult r = results.get(id);
  EXPECT_EQ(r.finish_reason, FinishReason::kCancelled);
  EXPECT_TRUE(r.vectors.empty());
  EXPECT_LT(svc.metrics().forwards, 200u);
}

TEST(EmbeddingService, ConcurrentSubmitsFromManyThreads) {
  const auto model = bert();
  EmbeddingServiceParams p;
  p.max_queued = 64;
  EmbeddingService svc(model, p);
  Results results;
  std::vector<std::thread> threads;
  std::mutex ids_mutex;
  std::map<RequestId, std::string> text_of;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 4; ++i) {
        const std::string text = words(100 + 37 * t + i, 2 + (t + i) % 9);
        const RequestId id = svc.submit(embed_request({text}, results));
        std::lock_guard<std::mutex> lock(ids_mutex);
        text_of[id] = text;
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE(results.wait_for(32));
  for (const auto& [id, text] : text_of) {
    const EmbeddingResult r = results.get(id);
    ASSERT_EQ(r.finish_reason, FinishReason::kStop) << r.error;
    EXPECT_EQ(r.vectors, direct(*model, {text}, PoolingType::kCls, 2)) << text;
  }
  const std::string prom = svc.metrics().to_prometheus();
  EXPECT_NE(prom.find("edgellm_embedding_requests_finished_total 32"), std::string::npos) << prom;
  const Json j = svc.metrics().to_json();
  EXPECT_EQ(j.at("inputs").as_int(), 32);
}

TEST(EmbeddingService, TrimAndWarmup) {
  EmbeddingService svc(bert(), EmbeddingServiceParams{});
  std::promise<bool> warm;
  svc.warmup([&](bool ran, const std::string&) { warm.set_value(ran); });
  auto wf = warm.get_future();
  ASSERT_EQ(wf.wait_for(60s), std::future_status::ready);
  EXPECT_TRUE(wf.get());
  std::promise<size_t> trimmed;
  svc.trim([&](size_t bytes) { trimmed.set_value(bytes); });
  auto tf = trimmed.get_future();
  ASSERT_EQ(tf.wait_for(60s), std::future_status::ready);
  EXPECT_GT(tf.get(), 0u);
  // Still serves after a trim (the scratch is made again).
  Results results;
  const RequestId id = svc.submit(embed_request({"t1 t2 t3"}, results));
  ASSERT_TRUE(results.wait_for(1));
  EXPECT_EQ(results.get(id).finish_reason, FinishReason::kStop);
}

}  // namespace
}  // namespace edgellm
