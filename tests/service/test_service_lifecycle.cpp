// The InferenceService's promises, one test each: BUSY at once when the queue is full, cancel
// mid-stream, deadlines (while running and while waiting), pause / resume with unchanged
// output, destroy with requests in flight, priorities, KV admission, prompts longer than the
// context, trim, warm-up and the metrics that count all of it. stories260K (real, tiny).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/json.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "service/inference_service.h"
#include "support/service_fixture.h"
#include "support/test_env.h"
#include "tokenizer/tokenizer.h"

namespace edgellm {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

using test::Outcome;

class ServiceTest : public ::testing::Test {
 protected:
  static std::shared_ptr<const Model> model() { return test::shared_service_model("stories260K.gguf"); }
  static ServiceParams params(int parallel = 2, int queued = 3) { return test::service_params(256, parallel, queued); }
  // A greedy request whose events land in `out`; `hook(index)` runs inside on_token.
  static ServiceRequest request(Outcome& out, const std::string& prompt = "Once upon a time", int max_tokens = 64,
                                std::function<bool(int)> hook = {}) {
    ServiceRequest r = test::greedy_request(prompt, max_tokens);
    out.attach(r, std::move(hook));
    return r;
  }
  // Makes the scheduler run one more pass (a trim, which runs even while paused) and waits for it.
  static void scheduler_pass(InferenceService& s) {
    std::promise<void> done;
    s.trim([&](size_t) { done.set_value(); });
    ASSERT_EQ(done.get_future().wait_for(30s), std::future_status::ready);
  }
};

TEST_F(ServiceTest, GreedyResultMatchesItsStream) {
  InferenceService s(model(), params());
  Outcome a;
  s.submit(request(a));
  ASSERT_TRUE(a.wait_final());
  EXPECT_EQ(a.finals, 1);
  EXPECT_EQ(a.result.finish_reason, FinishReason::kLength);
  EXPECT_EQ(a.result.text, a.streamed);
  EXPECT_EQ(a.tokens.size(), 64u);
  EXPECT_EQ(a.result.stats.completion_tokens, 64);
  EXPECT_GT(a.result.stats.prompt_tokens, 1);
  EXPECT_GT(a.result.stats.ttft_ms, 0);
  EXPECT_GE(a.result.stats.total_ms, a.result.stats.ttft_ms);
  EXPECT_GT(a.result.stats.decode_tokens_per_second, 0);
  EXPECT_GT(a.result.stats.peak_rss_bytes, 0u);
}

TEST_F(ServiceTest, FullQueueAnswersBusyAtOnce) {
  InferenceService s(model(), params(1, 2));
  s.pause();  // nothing is admitted: one request for the free sequence, then two waiting
  Outcome o[4];
  s.submit(request(o[0]));
  s.submit(request(o[1]));
  s.submit(request(o[2]));
  // The fastest of five answers: one submit may be preempted for longer than the bound on a
  // loaded machine (sanitizer builds run tests two at a time on two cores).
  double fastest_us = 1e9;
  for (int attempt = 0; attempt < 5; ++attempt) {
    const Clock::time_point t0 = Clock::now();
    try {
      s.submit(request(o[3]));
      FAIL() << "a fourth request fit one sequence and a queue of two";
    } catch (const Error& e) {
      fastest_us = std::min(fastest_us, std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      EXPECT_EQ(e.code(), ErrorCode::kBusy);
    }
  }
  EXPECT_LT(fastest_us, 1000.0) << "BUSY took " << fastest_us << " us";  // measured: ~5-20 us
  EXPECT_EQ(s.metrics().busy_rejections, 5u);
  EXPECT_EQ(s.metrics().waiting, 3);  // paused: all three sit in the queue
  s.resume();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(o[i].wait_final());
  EXPECT_EQ(o[3].finals, 0);  // refused requests never get a callback
}

TEST_F(ServiceTest, CancelMidStreamStopsWithinOneStep) {
  InferenceService s(model(), params());
  Outcome a;
  const RequestId id = s.submit(request(a, "Once upon a time", -1));
  ASSERT_TRUE(a.wait_tokens(5));
  ASSERT_TRUE(s.cancel(id));
  const int at_return = a.events();
  ASSERT_TRUE(a.wait_final());
  EXPECT_EQ(a.result.finish_reason, FinishReason::kCancelled);
  EXPECT_LE(a.events(), at_return + 1) << "tokens kept coming after cancel() returned";
  EXPECT_EQ(a.result.text, a.streamed);
  EXPECT_FALSE(s.cancel(id)) << "a finished request cannot be cancelled";
  EXPECT_EQ(s.metrics().cancellations, 1u);
  EXPECT_EQ(s.metrics().kv_blocks_used, 0) << "a cancelled request left KV blocks behind";
}

TEST_F(ServiceTest, CancelWhileWaiting) {
  InferenceService s(model(), params(1));
  s.pause();
  Outcome a;
  const RequestId id = s.submit(request(a));
  ASSERT_TRUE(s.cancel(id));
  ASSERT_TRUE(a.wait_final());  // delivered even while paused
  EXPECT_EQ(a.result.finish_reason, FinishReason::kCancelled);
  EXPECT_EQ(a.events(), 0);
}

TEST_F(ServiceTest, CallbackReturningFalseCancels) {
  InferenceService s(model(), params());
  Outcome a;
  s.submit(request(a, "Once upon a time", -1, [](int index) { return index < 3; }));
  ASSERT_TRUE(a.wait_final());
  EXPECT_EQ(a.result.finish_reason, FinishReason::kCancelled);
  EXPECT_EQ(a.tokens.size(), 4u);
}

// The deadline fires while the request is held (paused after its fourth token): timeout, with
// exactly the text streamed so far.
TEST_F(ServiceTest, DeadlineEndsARunningRequestWithItsPartialText) {
  InferenceService s(model(), params());
  Outcome a;
  ServiceRequest r = request(a, "Once upon a time", -1, [&s](int index) {
    if (index == 3) s.pause();
    return true;
  });
  r.deadline_ms = 300;
  s.submit(std::move(r));
  ASSERT_TRUE(a.wait_final(10s));
  EXPECT_EQ(a.result.finish_reason, FinishReason::kTimeout);
  EXPECT_GE(a.tokens.size(), 4u);
  EXPECT_FALSE(a.result.text.empty());
  EXPECT_EQ(a.result.text, a.streamed);
  EXPECT_GE(a.result.stats.total_ms, 300.0);
  EXPECT_EQ(s.metrics().timeouts, 1u);
}

TEST_F(ServiceTest, DeadlineEndsAWaitingRequest) {
  InferenceService s(model(), params(1));
  s.pause();
  Outcome a;
  ServiceRequest r = request(a);
  r.deadline_ms = 50;
  s.submit(std::move(r));
  ASSERT_TRUE(a.wait_final(5s));
  EXPECT_EQ(a.result.finish_reason, FinishReason::kTimeout);
  EXPECT_TRUE(a.result.text.empty());
}

TEST_F(ServiceTest, PauseStreamsNothingKeepsKvAndChangesNothing) {
  std::vector<int32_t> reference;
  {
    InferenceService s(model(), params());
    Outcome a;
    s.submit(request(a, "The little dog", 48));
    ASSERT_TRUE(a.wait_final());
    reference = a.tokens;
  }
  InferenceService s(model(), params());
  Outcome b;
  s.submit(request(b, "The little dog", 48, [&s](int index) {
    if (index == 10) s.pause();
    return true;
  }));
  // Paused from its 11th token's callback: the scheduler sees it before another step.
  ASSERT_TRUE(test::wait_until([&] { return s.metrics().paused_idle; }));
  const ServiceMetrics paused = s.metrics();
  EXPECT_EQ(b.events(), 11) << "tokens streamed after the pause";
  // Two more passes of the scheduler while paused: a step, had one run in the first, would have
  // streamed its token by the end of the second.
  scheduler_pass(s);
  scheduler_pass(s);
  EXPECT_EQ(b.events(), 11) << "tokens streamed while paused";
  EXPECT_EQ(s.metrics().steps, paused.steps) << "a step ran while paused";
  EXPECT_TRUE(paused.paused);
  EXPECT_GT(paused.kv_blocks_used, 0) << "pause released the KV";
  EXPECT_EQ(b.finals, 0);
  s.resume();
  ASSERT_TRUE(b.wait_final());
  EXPECT_EQ(b.tokens, reference) << "pause / resume changed the output";
}

TEST_F(ServiceTest, DestroyWithRequestsInFlightFinishesEveryOne) {
  Outcome o[6];
  {
    InferenceService s(model(), params(2, 6));  // 2 running, the rest waiting
    for (auto& out : o) s.submit(request(out, "Once upon a time", -1));
    ASSERT_TRUE(o[0].wait_tokens(2));
  }  // destroyed here: must not hang
  for (auto& out : o) {
    EXPECT_EQ(out.finals, 1);
    EXPECT_EQ(out.result.finish_reason, FinishReason::kCancelled);
  }
}

TEST_F(ServiceTest, ShutdownFromItsOwnCallbackIsRefused) {
  InferenceService s(model(), params());
  Outcome a;
  std::atomic<bool> refused{false};
  s.submit(request(a, "Once upon a time", 8, [&](int index) {
    if (index == 0) {
      try {
        s.shutdown();
      } catch (const Error& e) {
        refused = e.code() == ErrorCode::kInvalidArgument;
      }
    }
    return true;
  }));
  ASSERT_TRUE(a.wait_final());
  EXPECT_TRUE(refused.load());
  EXPECT_EQ(a.result.finish_reason, FinishReason::kLength);
}

TEST_F(ServiceTest, InteractiveIsAdmittedBeforeBackground) {
  InferenceService s(model(), params(1, 3));
  s.pause();
  std::mutex m;
  std::vector<int> order;
  Outcome o[3];
  for (int i = 0; i < 3; ++i) {
    ServiceRequest r = request(o[i], "Once upon a time", 4);
    r.priority = i == 2 ? Priority::kInteractive : Priority::kBackground;
    auto inner = r.on_finish;
    r.on_finish = [&, i, inner](RequestResult& res) {
      {
        std::lock_guard<std::mutex> lock(m);
        order.push_back(i);
      }
      inner(res);
    };
    s.submit(std::move(r));
  }
  s.resume();
  for (auto& out : o) ASSERT_TRUE(out.wait_final());
  EXPECT_EQ(order, (std::vector<int>{2, 0, 1}));
}

TEST_F(ServiceTest, PromptLongerThanTheContextIsAnError) {
  ServiceParams p = params();
  p.context.n_ctx = 32;
  InferenceService s(model(), p);
  Outcome a;
  std::string longp;
  for (int i = 0; i < 40; ++i) longp += "The cat sat on the mat. ";
  s.submit(request(a, longp));
  ASSERT_TRUE(a.wait_final());
  EXPECT_EQ(a.result.finish_reason, FinishReason::kError);
  EXPECT_EQ(a.result.error_code, ErrorCode::kContextFull);
  EXPECT_NE(a.result.error.find("context"), std::string::npos) << a.result.error;
  // The service keeps serving.
  Outcome b;
  s.submit(request(b, "Once", 4));
  ASSERT_TRUE(b.wait_final());
  EXPECT_EQ(b.result.finish_reason, FinishReason::kLength);
}

// ServiceRequest::generation is generate()'s GenerationParams: a field the service runs gives
// generate()'s tokens on a fresh context (penalize_prompt under a repeat penalty over the whole
// window, on and off, which must differ so the field is seen to take effect); the two fields it
// cannot run are refused at submit in the request limits' words, nothing queued.
TEST_F(ServiceTest, GenerationParamsRunAsGenerateRunsThemOrAreRefused) {
  InferenceService s(model(), test::service_params(256, 2, 3, TensorType::F32));
  const std::string prompt = "Once upon a time, there was a little girl named Lily. Lily liked to play";
  const std::vector<int32_t> ids = s.tokenizer().encode(prompt, true, false);
  std::vector<int32_t> answers[2];
  for (const bool penalize : {true, false}) {
    Outcome o;
    ServiceRequest r = request(o, prompt, 24);
    r.sampling.repeat_penalty = 1.5f;
    r.sampling.penalty_last_n = -1;
    r.generation.penalize_prompt = penalize;
    s.submit(std::move(r));
    ASSERT_TRUE(o.wait_final());
    ASSERT_EQ(o.result.finish_reason, FinishReason::kLength) << o.result.error;
    test::SoloParams sp;
    sp.sampling.repeat_penalty = 1.5f;
    sp.sampling.penalty_last_n = -1;
    sp.generation.max_tokens = 24;
    sp.generation.ignore_eog = true;
    sp.generation.penalize_prompt = penalize;
    EXPECT_EQ(o.tokens, test::solo_greedy(*model(), &s.tokenizer(), ids, sp).tokens) << "penalize_prompt " << penalize;
    answers[penalize ? 1 : 0] = o.tokens;
  }
  EXPECT_NE(answers[0], answers[1]) << "penalize_prompt changed nothing: the test cannot tell it is honoured";

  const auto refused = [&](const std::function<void(GenerationParams&)>& set, const std::string& words) {
    const uint64_t before = s.metrics().invalid_requests;
    Outcome o;
    ServiceRequest r = request(o, prompt, 4);
    set(r.generation);
    try {
      s.submit(std::move(r));
      ADD_FAILURE() << "accepted: " << words;
      (void)o.wait_final();  // the accepted request ends before its Outcome goes
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_EQ(std::string(e.what()), words);
    }
    EXPECT_EQ(s.metrics().invalid_requests, before + 1);
    EXPECT_EQ(o.finals, 0);  // no callback for a refused request
  };
  refused([](GenerationParams& g) { g.seq_id = 3; }, "seq_id must be 0 (the service picks the sequence), got 3");
  refused([](GenerationParams& g) { g.truncate_prompt = true; },
          "truncate_prompt is not served: a prompt that does not fit the context is refused, never cut");
}

// A KV pool that holds one request's reservation at a time: the second waits for the first's
// blocks instead of failing half way, and both give their solo outputs.
TEST_F(ServiceTest, KvAdmissionWaitsForBlocks) {
  std::vector<int32_t> solo;
  {
    InferenceService s(model(), params(1));
    Outcome a;
    s.submit(request(a, "Once upon a time", 40));
    ASSERT_TRUE(a.wait_final());
    solo = a.tokens;
  }
  ServiceParams p = params(2);
  const size_t block =
      KvCache::block_bytes(KvCacheParams{model()->hparams().n_layer, model()->hparams().n_head_kv,
                                         model()->hparams().head_dim, TensorType::F16, TensorType::F16, 16, 1, 256, 1});
  p.context.kv_budget_bytes = block * 4;  // 64 positions: one request of prompt + 40 tokens
  InferenceService s(model(), p);
  Outcome a, b;
  s.submit(request(a, "Once upon a time", 40));
  s.submit(request(b, "Once upon a time", 40));
  ASSERT_TRUE(a.wait_final());
  ASSERT_TRUE(b.wait_final());
  EXPECT_EQ(a.tokens, solo);
  EXPECT_EQ(b.tokens, solo);
  // b could not be admitted beside a: its first token came after a had finished (both
  // callbacks run on the one scheduler thread, in order).
  EXPECT_GT(b.first_token_order, a.finish_order) << "b ran beside a in a pool that holds one of them";
  EXPECT_GT(b.result.stats.queue_ms, 0.0);

  Outcome c;  // can never fit
  s.submit(request(c, "Once upon a time", 200));
  ASSERT_TRUE(c.wait_final());
  EXPECT_EQ(c.result.finish_reason, FinishReason::kError);
  EXPECT_EQ(c.result.error_code, ErrorCode::kOutOfMemory);
}

TEST_F(ServiceTest, TrimReleasesMemoryAndChangesNoOutput) {
  InferenceService s(model(), params());
  Outcome a;
  s.submit(request(a, "The little dog", 32));
  ASSERT_TRUE(a.wait_final());
  std::mutex m;
  std::condition_variable cv;
  size_t released = 0;
  bool done = false;
  s.trim([&](size_t bytes) {
    std::lock_guard<std::mutex> lock(m);
    released = bytes;
    done = true;
    cv.notify_all();
  });
  {
    std::unique_lock<std::mutex> lock(m);
    ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return done; }));
  }
  EXPECT_GT(released, 0u);
  Outcome b;
  s.submit(request(b, "The little dog", 32));
  ASSERT_TRUE(b.wait_final());
  EXPECT_EQ(b.tokens, a.tokens);
  EXPECT_EQ(s.metrics().trims, 1u);
}

TEST_F(ServiceTest, WarmupRunsOrSaysWhyNot) {
  auto wait = [](InferenceService& s) {
    std::mutex m;
    std::condition_variable cv;
    std::pair<bool, std::string> got;
    bool done = false;
    s.warmup([&](bool ran, const std::string& why) {
      std::lock_guard<std::mutex> lock(m);
      got = {ran, why};
      done = true;
      cv.notify_all();
    });
    std::unique_lock<std::mutex> lock(m);
    EXPECT_TRUE(cv.wait_for(lock, 10s, [&] { return done; }));
    return got;
  };
  {
    InferenceService s(model(), params());
    const auto [ran, why] = wait(s);
    EXPECT_TRUE(ran) << why;
    EXPECT_EQ(s.metrics().warmups, 1u);
  }
  {
    ServiceParams p = params();
    p.warmup_min_free_bytes = ~size_t{0};  // no machine has that much
    InferenceService s(model(), p);
    const auto [ran, why] = wait(s);
    EXPECT_FALSE(ran);
    EXPECT_NE(why.find("MiB"), std::string::npos) << why;
    EXPECT_EQ(s.metrics().warmups_skipped, 1u);
  }
}

TEST_F(ServiceTest, MetricsCountEverythingAndRenderBothFormats) {
  InferenceService s(model(), params());
  Outcome a, b;
  s.submit(request(a, "Once upon a time", 10));
  s.submit(request(b, "The dog", 5));
  ASSERT_TRUE(a.wait_final());
  ASSERT_TRUE(b.wait_final());
  EXPECT_THROW(s.submit(ServiceRequest{}), Error);  // no input
  const ServiceMetrics m = s.metrics();
  EXPECT_EQ(m.requests_submitted, 2u);
  EXPECT_EQ(m.requests_finished, 2u);
  EXPECT_EQ(m.finished_length, 2u);
  EXPECT_EQ(m.invalid_requests, 1u);
  EXPECT_EQ(m.completion_tokens, 15u);
  EXPECT_EQ(m.prompt_tokens, static_cast<uint64_t>(a.result.stats.prompt_tokens + b.result.stats.prompt_tokens));
  EXPECT_EQ(m.ttft_ms.count, 2u);
  EXPECT_EQ(m.running, 0);
  EXPECT_EQ(m.kv_blocks_used, 0);
  const Json j = Json::parse(m.to_json().dump());
  EXPECT_EQ(j.at("completion_tokens").as_int(), 15);
  EXPECT_EQ(j.at("finish_reasons").at("length").as_int(), 2);
  const std::string prom = m.to_prometheus();
  EXPECT_NE(prom.find("edgellm_completion_tokens_total 15\n"), std::string::npos) << prom;
  EXPECT_NE(prom.find("edgellm_requests_by_reason_total{reason=\"length\"} 2\n"), std::string::npos);
  EXPECT_NE(prom.find("edgellm_time_to_first_token_seconds_count 2\n"), std::string::npos);
  EXPECT_NE(prom.find("edgellm_time_to_first_token_seconds_bucket{le=\"+Inf\"} 2\n"), std::string::npos);
}

}  // namespace
}  // namespace edgellm
