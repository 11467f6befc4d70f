// Runtime::classify (generation/classify.h, label_scorer.h, served by the InferenceService:
// service/classify_job.h): each label's log-probability after the prompt equals a naive
// teacher-forced pass (support/label_logprob.h: a fresh Context per label, prompt + label in
// one full forward, log-softmax of every label token summed) on stories260K, so do the
// probabilities (softmax of the sums, or of the per-token means) and the choice, also when the
// prompt's prefix comes from the prefix cache (a repeated call: cached_tokens > 0); bad requests
// get the one clear error each (request_limits.h); a classify queued while the runtime is paused
// times out by its deadline and ends cancelled on shutdown; a shut-down runtime refuses.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "engine/batch.h"
#include "engine/context.h"
#include "model/model.h"
#include "runtime/runtime.h"
#include "support/label_logprob.h"
#include "support/test_env.h"
#include "tokenizer/tokenizer.h"

namespace edgellm {
namespace {

RuntimeParams params() {
  RuntimeParams p;
  p.model_path = test::shared_model("stories260K.gguf");
  p.service.context.n_ctx = 256;
  p.service.context.n_seq_max = 2;
  p.service.context.n_threads = 1;
  p.service.context.kv_type = TensorType::F32;
  return p;
}

std::vector<double> softmax(std::vector<double> z) {
  const double max = *std::max_element(z.begin(), z.end());
  double sum = 0;
  for (double& v : z) sum += (v = std::exp(v - max));
  for (double& v : z) v /= sum;
  return z;
}

// Checks one request against the reference for both normalisations.
void expect_matches_reference(Runtime& rt, const Model& model, const Tokenizer& tok, ClassifyRequest req,
                              const std::vector<int32_t>& prompt) {
  std::vector<std::vector<int32_t>> label_ids;
  std::vector<double> ref_sum, ref_mean;
  for (const std::string& l : req.labels) {
    label_ids.push_back(tok.encode(l, false, false));
    ref_sum.push_back(test::naive_label_logprob(model, prompt, label_ids.back()));
    ref_mean.push_back(ref_sum.back() / static_cast<double>(label_ids.back().size()));
  }
  for (bool norm : {false, true}) {
    SCOPED_TRACE(norm ? "length-normalised" : "summed");
    req.length_normalize = norm;
    const ClassifyResult r = rt.classify(req);
    ASSERT_EQ(r.finish_reason, FinishReason::kStop);
    ASSERT_EQ(r.probabilities.size(), req.labels.size());
    EXPECT_EQ(r.prompt_tokens, static_cast<int32_t>(prompt.size()));
    const std::vector<double> ref_p = softmax(norm ? ref_mean : ref_sum);
    double p_total = 0;
    for (size_t i = 0; i < req.labels.size(); ++i) {
      SCOPED_TRACE(req.labels[i]);
      EXPECT_EQ(r.label_tokens[i], static_cast<int32_t>(label_ids[i].size()));
      // Measured |difference| 0 (x86-64 AVX-512, F32 KV, 1 thread: the prompt-then-labels forwards
      // give the one-sequence forward's logits bit for bit). The bound is float rounding of a
      // ~10-nat sum, for an ISA whose kernels sum a batch in another order.
      EXPECT_NEAR(r.logprobs[i], ref_sum[i], 1e-6);
      EXPECT_NEAR(r.probabilities[i], ref_p[i], 1e-6);  // measured 0
      p_total += r.probabilities[i];
    }
    EXPECT_NEAR(p_total, 1.0, 1e-12);
    const auto best = static_cast<int32_t>(std::max_element(ref_p.begin(), ref_p.end()) - ref_p.begin());
    EXPECT_EQ(r.index, best);
    EXPECT_EQ(r.label, req.labels[static_cast<size_t>(best)]);
  }
}

class ClassifyTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    rt_ = new Runtime(params());
    model_ = Model::load(test::shared_model("stories260K.gguf")).release();
    tok_ = Tokenizer::from_gguf(model_->gguf()).release();
  }
  static void TearDownTestSuite() {
    delete rt_;
    delete tok_;
    delete model_;
  }
  static Runtime* rt_;
  static Model* model_;
  static Tokenizer* tok_;
};
Runtime* ClassifyTest::rt_ = nullptr;
Model* ClassifyTest::model_ = nullptr;
Tokenizer* ClassifyTest::tok_ = nullptr;

TEST_F(ClassifyTest, RawPromptMatchesTeacherForcedReference) {
  ClassifyRequest req;
  req.raw = true;
  req.text = "Once upon a time, there was a little";
  // Lengths from one token to several, some sharing first tokens (" b..."), 8 labels.
  req.labels = {" girl",         " boy", " dog named Spot",         " bird",
                " big red ball", " cat", " bunny who liked to hop", " tree"};
  expect_matches_reference(*rt_, *model_, *tok_, req, tok_->encode(req.text, true, false));
}

TEST_F(ClassifyTest, PromptEndingInsideAKvBlockAndOneLabel) {
  // A prompt of 16 + k tokens (the forks copy a partial block) and a single label: probability 1.
  ClassifyRequest req;
  req.raw = true;
  req.text = "Lily and Ben went to the park. They saw a big slide and a swing. Lily said";
  req.labels = {" \"Let us play on the slide!\""};
  const std::vector<int32_t> prompt = tok_->encode(req.text, true, false);
  ASSERT_NE(prompt.size() % 16, 0u);
  expect_matches_reference(*rt_, *model_, *tok_, req, prompt);
  EXPECT_EQ(rt_->classify(req).probabilities[0], 1.0);
}

TEST_F(ClassifyTest, ChatPromptMatchesTeacherForcedReference) {
  ClassifyRequest req;
  req.text = "The dog ran after the ball in the garden.";
  req.labels = {"animals", "food", "weather"};
  const std::shared_ptr<InferenceService> svc = rt_->service();
  const ClassifyTokens tokens = classify_tokens(req, svc->tokenizer(), svc->chat_template());
  // The default instruction names every label, in the system turn.
  EXPECT_NE(tok_->decode(tokens.prompt).find("labels: animals, food, weather."), std::string::npos);
  expect_matches_reference(*rt_, *model_, *tok_, req, tokens.prompt);
}

void expect_refused(Runtime& rt, ClassifyRequest req, const std::string& words) {
  try {
    (void)rt.classify(std::move(req));
    ADD_FAILURE() << "no error; expected: " << words;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST_F(ClassifyTest, BadRequestsGetClearErrors) {
  ClassifyRequest ok;
  ok.raw = true;
  ok.text = "Once upon a time";
  ok.labels = {" a", " b"};
  ClassifyRequest r = ok;
  r.labels.clear();
  expect_refused(*rt_, r, "labels: give at least one");
  r = ok;
  r.labels = {" a", " b", " a"};
  expect_refused(*rt_, r, "labels[2] repeats labels[0]");
  r = ok;
  r.labels = {" a", ""};
  expect_refused(*rt_, r, "labels[1] is empty");
  r = ok;
  r.labels.assign(65, " x");
  expect_refused(*rt_, r, "labels: at most 64, got 65");
  r = ok;
  r.labels = {" a", std::string(" \xff")};
  expect_refused(*rt_, r, "labels[1] is not valid UTF-8");
  r = ok;
  r.text.clear();
  expect_refused(*rt_, r, "text is empty");
  r = ok;
  r.text.clear();
  for (int i = 0; i < 100; ++i) r.text += "Once upon a time. ";  // > 256 tokens
  expect_refused(*rt_, r, "the context holds 256");
  // The runtime still serves after every refusal.
  EXPECT_EQ(rt_->classify(ok).finish_reason, FinishReason::kStop);
}

// Classify calls from two threads while the service generates: each classify equals the one run
// alone, the generated text equals its solo run (the classify jobs run between the service's
// steps on its Context, in sequences of their own).
TEST_F(ClassifyTest, RunsBesideGenerationWithoutChangingEither) {
  ClassifyRequest req;
  req.raw = true;
  req.text = "Once upon a time, there was a little";
  req.labels = {" girl", " boy", " dog named Spot", " big red ball"};
  const ClassifyResult alone = rt_->classify(req);
  const auto generate = [&] {
    auto done = std::make_shared<std::promise<RequestResult>>();
    ServiceRequest g;
    g.prompt = "Lily had a red ball.";
    g.sampling.temperature = 0;
    g.generation.max_tokens = 200;  // long enough to overlap the classify calls (not forced)
    g.deadline_ms = 0;
    g.on_finish = [done](RequestResult& res) { done->set_value(res); };
    (void)rt_->submit(std::move(g));
    return done->get_future();
  };
  std::future<RequestResult> solo_f = generate();
  ASSERT_EQ(solo_f.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  const RequestResult solo = solo_f.get();
  ASSERT_NE(solo.finish_reason, FinishReason::kError) << solo.error;

  std::future<RequestResult> beside_f = generate();
  std::vector<ClassifyResult> got(6);
  std::thread a([&] {
    for (size_t i = 0; i < 3; ++i) got[i] = rt_->classify(req);
  });
  std::thread b([&] {
    for (size_t i = 3; i < 6; ++i) got[i] = rt_->classify(req);
  });
  a.join();
  b.join();
  ASSERT_EQ(beside_f.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  const RequestResult beside = beside_f.get();
  EXPECT_EQ(beside.text, solo.text);
  for (const ClassifyResult& r : got) {
    EXPECT_EQ(r.index, alone.index);
    EXPECT_EQ(r.logprobs, alone.logprobs);  // the same forwards: bit for bit
  }
}

TEST_F(ClassifyTest, ARepeatedPromptComesFromThePrefixCache) {
  ClassifyRequest req;
  req.raw = true;
  req.text = "Lily and Ben went to the park. They saw a big slide and a swing. Lily said";
  req.labels = {" yes", " no", " \"Let us play!\""};
  const std::vector<int32_t> prompt = tok_->encode(req.text, true, false);
  const int32_t T = rt_->service()->context_params().kv_block_tokens;
  ASSERT_GT(static_cast<int32_t>(prompt.size()), T);
  const ClassifyResult first = rt_->classify(req);
  const ClassifyResult second = rt_->classify(req);
  ASSERT_EQ(second.finish_reason, FinishReason::kStop);
  EXPECT_EQ(second.cached_tokens,
            std::min(static_cast<int32_t>(prompt.size()) - 1, static_cast<int32_t>(prompt.size()) / T * T));
  EXPECT_EQ(second.index, first.index);
  for (size_t i = 0; i < req.labels.size(); ++i) {
    EXPECT_NEAR(second.logprobs[i], test::naive_label_logprob(*model_, prompt, tok_->encode(req.labels[i], false, false)),
                1e-6);
  }
}

// While paused nothing is admitted: a classify waits in the queue, and its deadline (queue wait
// included) ends it with kTimeout; another one still queued when the runtime shuts down returns
// kCancelled; nothing hangs.
TEST(ClassifyQueued, DeadlineThenShutdown) {
  Runtime rt(params());
  ClassifyRequest req;
  req.raw = true;
  req.text = "Once upon a time";
  req.labels = {" there", " a"};
  rt.pause();
  req.deadline_ms = 100;
  const auto t0 = std::chrono::steady_clock::now();
  const ClassifyResult late = rt.classify(req);
  EXPECT_EQ(late.finish_reason, FinishReason::kTimeout);
  EXPECT_EQ(late.index, -1);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(100));

  req.deadline_ms = 0;
  std::promise<ClassifyResult> got;
  std::future<ClassifyResult> answer = got.get_future();
  std::thread t([&] {
    try {
      got.set_value(rt.classify(req));
    } catch (...) {
      got.set_exception(std::current_exception());
    }
  });
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (rt.service_metrics().waiting < 1 && std::chrono::steady_clock::now() < limit) std::this_thread::yield();
  EXPECT_EQ(rt.service_metrics().waiting, 1);
  rt.shutdown();
  ASSERT_EQ(answer.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  t.join();
  EXPECT_EQ(answer.get().finish_reason, FinishReason::kCancelled);
}

TEST(ClassifyShutdown, AShutDownRuntimeRefuses) {
  Runtime rt(params());
  ClassifyRequest req;
  req.raw = true;
  req.text = "Once upon a time";
  req.labels = {" there", " a"};
  EXPECT_EQ(rt.classify(req).finish_reason, FinishReason::kStop);
  rt.shutdown();
  try {
    (void)rt.classify(req);
    ADD_FAILURE() << "classify after shutdown";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCancelled) << e.what();
  }
}

// shutdown() while another thread classifies in a loop: that thread ends with kCancelled (a
// call in flight stops between layers and returns finish_reason kCancelled; one after shutdown
// throws kCancelled), nothing hangs. Which of the two it sees depends on timing; both are the
// documented outcome.
TEST(ClassifyShutdown, AClassifyLoopEndsWhenTheRuntimeShutsDown) {
  Runtime rt(params());
  ClassifyRequest req;
  req.raw = true;
  for (int i = 0; i < 20; ++i) req.text += "Once upon a time. ";  // ~100 tokens: a forward worth stopping
  req.labels = {" there", " a", " the little dog"};
  std::atomic<int> done{0};
  std::atomic<bool> cancelled{false};
  std::thread t([&] {
    for (;;) {
      try {
        const ClassifyResult r = rt.classify(req);
        if (r.finish_reason == FinishReason::kCancelled) break;
        EXPECT_EQ(r.finish_reason, FinishReason::kStop);
        done.fetch_add(1);
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kCancelled) << e.what();
        break;
      }
    }
    cancelled = true;
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (done.load() < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  EXPECT_GE(done.load(), 2);
  rt.shutdown();
  t.join();
  EXPECT_TRUE(cancelled.load());
}

}  // namespace
}  // namespace edgellm
