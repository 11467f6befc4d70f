// Classify through the InferenceService (submit_classify, service/classify_job.h): the labels'
// log-probabilities equal a naive teacher-forced pass (support/label_logprob.h: prompt + label
// in one forward on a fresh Context) and the per-call path (generation/classify.h's classify()
// on a Context of its own, what Runtime::classify ran before), with more labels than the scratch
// sequences (two label forwards); a second classify with the same prompt maps its prefix from
// the prefix cache (cached_tokens counted independently from the prompt and the block size) and
// gives the same numbers, and a chat with the same system prompt reuses those blocks; classify
// calls from two threads beside generation leave the greedy outputs of the generation equal to
// their solo runs; a queued classify is cancelled by id, times out by its deadline and ends
// cancelled on shutdown; a classify that does not fit the free KV blocks waits for a running
// request, one larger than the pool fails with kOutOfMemory. stories260K, F32 KV, 1 thread.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "engine/context.h"
#include "engine/memory_plan.h"
#include "generation/classify.h"
#include "generation/label_scorer.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "service/inference_service.h"
#include "support/label_logprob.h"
#include "support/service_fixture.h"
#include "support/test_env.h"
#include "tokenizer/tokenizer.h"

namespace edgellm {
namespace {

constexpr int32_t kCtx = 256;
// Measured |difference| 0 against the naive pass and the per-call path (x86-64, F32 KV, 1
// thread: the rows of a forward do not depend on what else is in the batch or what is cached).
// The bound is float rounding of a ~10-nat sum for an ISA whose kernels sum another way.
constexpr double kLogprobTolerance = 1e-6;

std::shared_ptr<const Model> stories() { return test::shared_service_model("stories260K.gguf"); }

ServiceParams params(int32_t parallel = 2, int32_t queued = 8) {
  ServiceParams p = test::service_params(kCtx, parallel, queued, TensorType::F32);
  p.context.n_threads = 1;
  return p;
}

// Waits for the outcome of one submit_classify (60 s at most).
struct Pending {
  std::shared_ptr<std::promise<ClassifyOutcome>> done = std::make_shared<std::promise<ClassifyOutcome>>();
  std::future<ClassifyOutcome> answer = done->get_future();
  RequestId id = 0;
  std::function<void(ClassifyOutcome&)> callback() {
    return [d = done](ClassifyOutcome& o) { d->set_value(std::move(o)); };
  }
  ClassifyOutcome get(std::chrono::seconds limit = std::chrono::seconds(60)) {
    if (answer.wait_for(limit) != std::future_status::ready) {
      ADD_FAILURE() << "no classify outcome within " << limit.count() << " s";
      ClassifyOutcome none;
      none.result.finish_reason = FinishReason::kError;
      none.error = "no outcome";
      return none;
    }
    return answer.get();
  }
};

ClassifyOutcome classify_now(InferenceService& s, const ClassifyRequest& req) {
  Pending p;
  p.id = s.submit_classify(req, p.callback());
  return p.get();
}

ClassifyRequest raw_request(std::string text, std::vector<std::string> labels) {
  ClassifyRequest r;
  r.raw = true;
  r.text = std::move(text);
  r.labels = std::move(labels);
  r.deadline_ms = 0;
  return r;
}

// The per-call path: classify() on a Context of its own with labels + 1 sequences.
ClassifyResult per_call(const Model& model, const ClassifyTokens& tokens, const ClassifyRequest& req) {
  ContextParams cp;
  cp.n_ctx = kCtx;
  cp.n_threads = 1;
  cp.kv_type = TensorType::F32;
  cp.n_seq_max = static_cast<int32_t>(req.labels.size()) + 1;
  Context ctx(model, cp);
  return classify(ctx, tokens, req);
}

TEST(ServiceClassify, MatchesTheNaivePassAndThePerCallPath) {
  InferenceService svc(stories(), params());
  // 10 labels > kClassifyLabelSeqs: two label forwards. Lengths 1 to several tokens.
  ClassifyRequest req = raw_request("Once upon a time, there was a little",
                                    {" girl", " boy", " dog named Spot", " bird", " big red ball", " cat",
                                     " bunny who liked to hop", " tree", " fish in a bowl", " car"});
  ASSERT_GT(req.labels.size(), static_cast<size_t>(kClassifyLabelSeqs));
  const ClassifyTokens tokens = classify_tokens(req, svc.tokenizer(), svc.chat_template());
  for (bool norm : {false, true}) {
    SCOPED_TRACE(norm ? "length-normalised" : "summed");
    req.length_normalize = norm;
    const ClassifyOutcome out = classify_now(svc, req);
    ASSERT_EQ(out.result.finish_reason, FinishReason::kStop) << out.error;
    const ClassifyResult old = per_call(svc.model(), tokens, req);
    ASSERT_EQ(out.result.probabilities.size(), req.labels.size());
    EXPECT_EQ(out.result.prompt_tokens, static_cast<int32_t>(tokens.prompt.size()));
    double max_diff = 0;
    for (size_t i = 0; i < req.labels.size(); ++i) {
      SCOPED_TRACE(req.labels[i]);
      const double ref = test::naive_label_logprob(svc.model(), tokens.prompt, tokens.labels[i]);
      EXPECT_NEAR(out.result.logprobs[i], ref, kLogprobTolerance);
      EXPECT_NEAR(out.result.logprobs[i], old.logprobs[i], kLogprobTolerance);
      EXPECT_NEAR(out.result.probabilities[i], old.probabilities[i], kLogprobTolerance);
      EXPECT_EQ(out.result.label_tokens[i], static_cast<int32_t>(tokens.labels[i].size()));
      max_diff = std::max(max_diff, std::abs(out.result.logprobs[i] - ref));
    }
    std::printf("[ measured ] max |service - naive| log-prob: %.3g\n", max_diff);
    EXPECT_EQ(out.result.index, old.index);
    EXPECT_EQ(out.result.label, old.label);
  }
}

TEST(ServiceClassify, ASecondClassifyAndAChatReuseThePromptsBlocks) {
  InferenceService svc(stories(), params());
  const int32_t T = svc.context_params().kv_block_tokens;
  ClassifyRequest req;  // chat mode: the system turn (instruction) starts the prompt
  req.instruction =
      "You sort short stories about animals, food and weather into one label. Read the whole story first, then "
      "answer with the one label that fits best.";
  req.text = "The dog ran after the ball in the garden.";
  req.labels = {"animals", "food", "weather"};
  req.deadline_ms = 0;
  const ClassifyTokens tokens = classify_tokens(req, svc.tokenizer(), svc.chat_template());
  const auto n_prompt = static_cast<int32_t>(tokens.prompt.size());
  ASSERT_GT(n_prompt, 2 * T);

  const ClassifyOutcome first = classify_now(svc, req);
  ASSERT_EQ(first.result.finish_reason, FinishReason::kStop) << first.error;
  EXPECT_EQ(first.result.cached_tokens, 0);  // a fresh service
  const ClassifyOutcome second = classify_now(svc, req);
  ASSERT_EQ(second.result.finish_reason, FinishReason::kStop) << second.error;
  // Every full block of the prompt but the one holding its last token (run for its logits).
  // The prompt's full blocks, at most prompt - 1 positions (a block-aligned prompt maps its last
  // block and runs its last token again).
  EXPECT_EQ(second.result.cached_tokens, std::min(n_prompt - 1, n_prompt / T * T));
  EXPECT_GT(second.result.cached_tokens, 0);
  for (size_t i = 0; i < req.labels.size(); ++i) {
    EXPECT_NEAR(second.result.logprobs[i], first.result.logprobs[i], kLogprobTolerance);
    EXPECT_NEAR(second.result.probabilities[i], first.result.probabilities[i], kLogprobTolerance);
  }
  EXPECT_EQ(second.result.index, first.result.index);

  // Another text with the same instruction: the system turn's full blocks are shared.
  ClassifyRequest other = req;
  other.text = "It rained all day and the wind was cold.";
  const ClassifyTokens other_tokens = classify_tokens(other, svc.tokenizer(), svc.chat_template());
  size_t common = 0;
  while (common < tokens.prompt.size() && common < other_tokens.prompt.size() &&
         tokens.prompt[common] == other_tokens.prompt[common]) {
    ++common;
  }
  const ClassifyOutcome third = classify_now(svc, other);
  ASSERT_EQ(third.result.finish_reason, FinishReason::kStop) << third.error;
  EXPECT_EQ(third.result.cached_tokens,
            std::min(static_cast<int32_t>(other_tokens.prompt.size()) - 1, static_cast<int32_t>(common) / T * T));
  EXPECT_GT(third.result.cached_tokens, 0);

  // A chat whose system prompt is the instruction maps the same blocks.
  test::Outcome chat;
  ServiceRequest g = test::greedy_request("", 4);
  g.prompt.clear();
  g.messages = Json::array();
  Json sys = Json::object();
  sys.set("role", "system");
  sys.set("content", req.instruction);
  Json user = Json::object();
  user.set("role", "user");
  user.set("content", "Tell me a story.");
  g.messages.push_back(std::move(sys));
  g.messages.push_back(std::move(user));
  chat.attach(g);
  (void)svc.submit(std::move(g));
  ASSERT_TRUE(chat.wait_final());
  ASSERT_NE(chat.result.finish_reason, FinishReason::kError) << chat.result.error;
  EXPECT_GE(chat.result.stats.cached_tokens, T);
  const ServiceMetrics m = svc.metrics();
  EXPECT_EQ(m.requests_finished, 4u);
  EXPECT_GE(m.prompt_tokens_cached, static_cast<uint64_t>(second.result.cached_tokens + third.result.cached_tokens));
}

// Two threads classify while two greedy generations run, and each generation queues a classify
// from its own token callback (so at least those two run between its steps, the overlap is
// forced): each generation's tokens equal its run alone, each classify equals the one run alone
// (the TSan subset runs this case).
TEST(ServiceClassify, BesideGenerationTheGreedyOutputsDoNotChange) {
  constexpr int32_t kGenTokens = 120;
  InferenceService svc(stories(), params(2, 16));
  const ClassifyRequest req = raw_request("Once upon a time, there was a little",
                                          {" girl", " boy", " dog named Spot", " big red ball"});
  const ClassifyOutcome alone = classify_now(svc, req);
  ASSERT_EQ(alone.result.finish_reason, FinishReason::kStop) << alone.error;
  const std::vector<std::string> prompts = {"Lily had a red ball.", "Tom went to the park with his mom."};
  std::vector<std::vector<int32_t>> solo;
  for (const std::string& p : prompts) {
    test::SoloParams sp;
    sp.n_ctx = kCtx;
    sp.generation.max_tokens = kGenTokens;
    sp.generation.ignore_eog = true;
    solo.push_back(test::solo_greedy(svc.model(), &svc.tokenizer(), svc.tokenizer().encode(p, true, false), sp).tokens);
  }
  std::vector<std::unique_ptr<test::Outcome>> gens;
  std::vector<Pending> from_callbacks(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    gens.push_back(std::make_unique<test::Outcome>());
    ServiceRequest g = test::greedy_request(prompts[i], kGenTokens);
    Pending* mine = &from_callbacks[i];
    gens.back()->attach(g, [&svc, &req, mine](int index) {
      if (index == 20) mine->id = svc.submit_classify(req, mine->callback());  // runs before this request's next step
      return true;
    });
    (void)svc.submit(std::move(g));
  }
  for (const auto& g : gens) ASSERT_TRUE(g->wait_tokens(1));
  std::vector<ClassifyOutcome> got(6);
  std::thread a([&] {
    for (size_t i = 0; i < 3; ++i) got[i] = classify_now(svc, req);
  });
  std::thread b([&] {
    for (size_t i = 3; i < 6; ++i) got[i] = classify_now(svc, req);
  });
  a.join();
  b.join();
  for (Pending& p : from_callbacks) got.push_back(p.get());
  for (size_t i = 0; i < gens.size(); ++i) {
    ASSERT_TRUE(gens[i]->wait_final(std::chrono::seconds(60)));
    EXPECT_EQ(gens[i]->result.finish_reason, FinishReason::kLength) << gens[i]->result.error;
    EXPECT_EQ(gens[i]->tokens, solo[i]) << prompts[i];
  }
  for (const ClassifyOutcome& o : got) {
    ASSERT_EQ(o.result.finish_reason, FinishReason::kStop) << o.error;
    EXPECT_EQ(o.result.index, alone.result.index);
    for (size_t i = 0; i < req.labels.size(); ++i) {
      EXPECT_NEAR(o.result.logprobs[i], alone.result.logprobs[i], kLogprobTolerance);
    }
  }
}

TEST(ServiceClassify, AQueuedClassifyIsCancelledOrTimesOut) {
  InferenceService svc(stories(), params());
  svc.pause();  // nothing is admitted: both stay queued
  const ClassifyRequest req = raw_request("Once upon a time", {" there", " a"});
  Pending cancelled;
  cancelled.id = svc.submit_classify(req, cancelled.callback());
  ClassifyRequest short_deadline = req;
  short_deadline.deadline_ms = 50;
  Pending timed_out;
  const auto t0 = std::chrono::steady_clock::now();
  timed_out.id = svc.submit_classify(short_deadline, timed_out.callback());
  EXPECT_TRUE(svc.cancel(cancelled.id));
  const ClassifyOutcome c = cancelled.get();
  EXPECT_EQ(c.result.finish_reason, FinishReason::kCancelled);
  EXPECT_EQ(c.result.index, -1);
  EXPECT_FALSE(svc.cancel(cancelled.id));  // finished
  const ClassifyOutcome t = timed_out.get(std::chrono::seconds(10));  // its deadline is 50 ms
  EXPECT_EQ(t.result.finish_reason, FinishReason::kTimeout);
  EXPECT_EQ(t.result.index, -1);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(50));
  svc.resume();
  EXPECT_EQ(classify_now(svc, req).result.finish_reason, FinishReason::kStop);
  const ServiceMetrics m = svc.metrics();
  EXPECT_EQ(m.cancellations, 1u);
  EXPECT_EQ(m.timeouts, 1u);
}

TEST(ServiceClassify, ShutdownEndsAQueuedClassifyCancelled) {
  auto svc = std::make_unique<InferenceService>(stories(), params());
  svc->pause();
  Pending queued;
  queued.id = svc->submit_classify(raw_request("Once upon a time", {" there", " a"}), queued.callback());
  test::Outcome gen;
  ServiceRequest g = test::greedy_request("Lily had a red ball.", 20);
  gen.attach(g);
  (void)svc->submit(std::move(g));
  svc->shutdown();  // returns: nothing hangs
  ASSERT_EQ(queued.answer.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  EXPECT_EQ(queued.answer.get().result.finish_reason, FinishReason::kCancelled);
  ASSERT_TRUE(gen.wait_final(std::chrono::seconds(0)));
  EXPECT_EQ(gen.result.finish_reason, FinishReason::kCancelled);
  try {
    (void)svc->submit_classify(raw_request("Once upon a time", {" a"}), {});
    ADD_FAILURE() << "submit_classify after shutdown";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCancelled) << e.what();
  }
}

// A pool of kPoolBlocks: a generation holding most of it makes a classify wait (it runs once the
// generation has finished, with the numbers of a classify on an idle service); a classify larger
// than the whole pool fails with kOutOfMemory; the generation's tokens equal its solo run.
TEST(ServiceClassify, WaitsForKvBlocksAndFailsOnlyWhenThePoolIsTooSmall) {
  constexpr int32_t kPoolBlocks = 12;
  ServiceParams p = params(1, 4);
  const std::shared_ptr<const Model> model = stories();
  {
    ContextParams cp = resolved_context_params(*model, p.context);
    p.context.kv_budget_bytes = kPoolBlocks * KvCache::block_bytes(kv_cache_params(model->hparams(), cp));
  }
  InferenceService svc(model, p);
  ASSERT_EQ(svc.metrics().kv_blocks_total, kPoolBlocks);
  const int32_t T = svc.context_params().kv_block_tokens;

  const ClassifyRequest req = raw_request("Once upon a time, there was a little",
                                          {" girl", " boy", " dog named Spot", " big red ball"});
  const ClassifyTokens tokens = classify_tokens(req, svc.tokenizer(), svc.chat_template());
  const int32_t peak =
      label_scoring_peak_blocks(T, static_cast<int32_t>(tokens.prompt.size()), tokens.labels, kClassifyLabelSeqs);
  ASSERT_LT(tokens.prompt.size(), static_cast<size_t>(T));  // no full block: nothing of it is cached
  ASSERT_LE(peak, kPoolBlocks);

  // A generation whose prompt alone leaves fewer free blocks than the classify's peak.
  const int32_t gen_max = 16;
  std::string long_text;
  std::vector<int32_t> gen_prompt;
  while (static_cast<int32_t>(gen_prompt.size()) <= (kPoolBlocks - peak) * T) {
    long_text += "The cat sat on the mat. ";
    gen_prompt = svc.tokenizer().encode(long_text, true, false);
  }
  ASSERT_LE(static_cast<int32_t>(gen_prompt.size()) + gen_max, kPoolBlocks * T);  // admitted alone

  const ClassifyOutcome idle = classify_now(svc, req);
  ASSERT_EQ(idle.result.finish_reason, FinishReason::kStop) << idle.error;

  test::SoloParams sp;
  sp.n_ctx = kCtx;
  sp.generation.max_tokens = gen_max;
  sp.generation.ignore_eog = true;
  const std::vector<int32_t> solo = test::solo_greedy(*model, nullptr, gen_prompt, sp).tokens;

  test::Outcome gen;
  ServiceRequest g = test::greedy_request(gen_prompt, gen_max);
  Pending waiting;
  bool generation_finished_first = false;  // written on the scheduler thread before the promise is set
  const auto on_classified = [&](ClassifyOutcome& o) {
    {
      std::lock_guard<std::mutex> lock(gen.mutex);
      generation_finished_first = gen.finals > 0;
    }
    waiting.done->set_value(std::move(o));
  };
  gen.attach(g, [&](int index) {
    if (index == 0) waiting.id = svc.submit_classify(req, on_classified);  // the prompt's blocks are held
    return true;
  });
  (void)svc.submit(std::move(g));
  ASSERT_TRUE(gen.wait_final(std::chrono::seconds(60)));
  const ClassifyOutcome after = waiting.get();
  ASSERT_EQ(after.result.finish_reason, FinishReason::kStop) << after.error;
  EXPECT_TRUE(generation_finished_first);  // it waited for the generation's blocks
  EXPECT_EQ(gen.tokens, solo);
  for (size_t i = 0; i < req.labels.size(); ++i) {
    EXPECT_NEAR(after.result.logprobs[i], idle.result.logprobs[i], kLogprobTolerance);
  }

  // Larger than the pool: the prompt alone takes more blocks than it has.
  std::string huge;
  std::vector<int32_t> huge_tokens;
  while (static_cast<int32_t>(huge_tokens.size()) <= kPoolBlocks * T) {
    huge += "Once upon a time. ";
    huge_tokens = svc.tokenizer().encode(huge, true, false);
  }
  ASSERT_LT(huge_tokens.size() + 2, static_cast<size_t>(kCtx));  // within n_ctx: refused for the pool only
  const ClassifyOutcome oom = classify_now(svc, raw_request(huge, {" a", " b"}));
  EXPECT_EQ(oom.result.finish_reason, FinishReason::kError);
  EXPECT_EQ(oom.error_code, ErrorCode::kOutOfMemory) << oom.error;
  EXPECT_NE(oom.error.find("the whole pool has 12"), std::string::npos) << oom.error;
  EXPECT_EQ(classify_now(svc, req).result.finish_reason, FinishReason::kStop);  // still serving
}


// A prompt of whole KV blocks, its prefix cached by a first classify, in a pool exactly the
// classify's peak: the repeat must run on the idle service (a prefix mapped up to P - 1 held
// one block more than cached / T, so the job asked for a block too many and waited forever,
// the scheduler spinning). A deadline turns such a wait into kTimeout instead of a hang.
TEST(ServiceClassify, ARepeatOfWholeBlocksRunsInAPoolOfExactlyItsPeak) {
  ServiceParams p = params(1, 4);
  const std::shared_ptr<const Model> model = stories();
  const int32_t T = p.context.kv_block_tokens;
  const std::vector<std::string> labels = {" girl", " boy", " dog named Spot", " big red ball"};
  std::string text = "Once upon a time";
  ClassifyTokens tokens;
  {
    InferenceService probe(model, p);
    for (int i = 0;; ++i) {
      tokens = classify_tokens(raw_request(text, labels), probe.tokenizer(), probe.chat_template());
      if (tokens.prompt.size() >= static_cast<size_t>(2 * T) && tokens.prompt.size() % T == 0) break;
      ASSERT_LT(i, 400) << "no prompt of whole blocks found";
      text += i % 2 ? " a" : " big";
    }
  }
  const int32_t peak =
      label_scoring_peak_blocks(T, static_cast<int32_t>(tokens.prompt.size()), tokens.labels, kClassifyLabelSeqs);
  {
    ContextParams cp = resolved_context_params(*model, p.context);
    p.context.kv_budget_bytes = peak * KvCache::block_bytes(kv_cache_params(model->hparams(), cp));
  }
  InferenceService svc(model, p);
  ASSERT_EQ(svc.metrics().kv_blocks_total, peak);
  ClassifyRequest req = raw_request(text, labels);
  req.deadline_ms = 5000;
  const ClassifyOutcome first = classify_now(svc, req);
  ASSERT_EQ(first.result.finish_reason, FinishReason::kStop) << first.error;
  const ClassifyOutcome again = classify_now(svc, req);
  ASSERT_EQ(again.result.finish_reason, FinishReason::kStop) << again.error;
  EXPECT_EQ(again.result.cached_tokens, static_cast<int32_t>(tokens.prompt.size()) - T);  // whole blocks
  EXPECT_EQ(again.result.index, first.result.index);
}

}  // namespace
}  // namespace edgellm
