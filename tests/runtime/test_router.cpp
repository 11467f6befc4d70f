// The Runtime's router (runtime/router.h) end to end over stories260K, with an in-process
// transport that records every cloud call and answers as each test scripts it. Each property is
// checked against an independent computation, not the router's own state:
//   - the confidence score equals the geometric mean of the token probabilities recomputed from
//     generate()'s logits (softmax of the raw logits at the sampled id);
//   - the synced context: the cloud body holds the system message, the last 3 user turns
//     verbatim, and the older turns only as a summary equal to a greedy generate() run of the
//     same summary request on a fresh context;
//   - privacy mode never calls the transport; a failing or silent cloud gives the local answer
//     with the reason; a failing small tier falls back to the large one; a local run whose prompt
//     does not fit goes to the cloud (large tier) when allowed and fails plainly when not;
//   - cancellation while the cloud is awaited ends the request once, and a late reply is dropped.
#include "runtime/runtime.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "chat/chat_prompt.h"
#include "core/error.h"
#include "engine/context.h"
#include "engine/sampler.h"
#include "generation/generate.h"
#include "model/model.h"
#include "support/test_env.h"
#include "tokenizer/tokenizer.h"

namespace edgellm {
namespace {

using namespace std::chrono_literals;

// Records calls; answers each with the scripted reply (or keeps it pending).
class FakeCloud final : public CloudTransport {
 public:
  struct Reply {
    int status = 200;
    std::string text = "the cloud's answer";
    std::string error;
    bool hold = false;  // keep the call pending (a cloud that never answers)
  };
  void script(std::string tier, Reply r) {
    std::lock_guard<std::mutex> lock(mutex_);
    replies_[std::move(tier)] = std::move(r);
  }
  void send(CloudCall call, std::function<void(CloudReply)> done) override {
    Reply r;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      calls_.push_back(call);
      auto it = replies_.find(call.tier);
      if (it != replies_.end()) r = it->second;
      if (r.hold) {
        held_.push_back(std::move(done));
        return;
      }
    }
    CloudReply out;
    out.status = r.status;
    out.error = r.error;
    if (r.status == 200) {
      Json msg = Json::object();
      msg.set("role", "assistant");
      msg.set("content", r.text);
      Json choice = Json::object();
      choice.set("message", std::move(msg));
      choice.set("finish_reason", "stop");
      Json choices = Json::array();
      choices.push_back(std::move(choice));
      Json body = Json::object();
      body.set("choices", std::move(choices));
      out.body = body.dump();
    }
    // Answer from another thread, as a real transport does.
    std::thread([done = std::move(done), out = std::move(out)]() mutable { done(std::move(out)); }).detach();
  }
  std::vector<CloudCall> calls() {
    std::lock_guard<std::mutex> lock(mutex_);
    return calls_;
  }
  // Completes the held calls (after the router has given up on them).
  void release_held() {
    std::vector<std::function<void(CloudReply)>> held;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      held.swap(held_);
    }
    for (auto& d : held) {
      CloudReply r;
      r.status = 200;
      r.body = R"({"choices":[{"message":{"content":"late"}}]})";
      d(std::move(r));
    }
  }

 private:
  std::mutex mutex_;
  std::map<std::string, Reply> replies_;
  std::vector<CloudCall> calls_;
  std::vector<std::function<void(CloudReply)>> held_;
};

Json message(const char* role, const std::string& content) {
  Json m = Json::object();
  m.set("role", role);
  m.set("content", content);
  return m;
}

// A system message and five user turns: the last three are sent verbatim, the first two summarised.
Json conversation() {
  Json c = Json::array();
  c.push_back(message("system", "You tell short stories."));
  const char* users[] = {"Tell me about a cat.", "What did the cat eat?", "Where did it sleep?", "Who was its friend?",
                         "How did it end?"};
  for (int i = 0; i < 5; ++i) {
    c.push_back(message("user", users[i]));
    if (i < 4) c.push_back(message("assistant", "Once upon a time there was a cat number " + std::to_string(i) + "."));
  }
  return c;
}

RuntimeParams runtime_params() {
  RuntimeParams p;
  p.model_path = test::shared_model("stories260K.gguf");
  p.service.context.n_ctx = 512;
  p.service.context.n_seq_max = 2;
  p.service.context.n_threads = 1;
  p.service.context.kv_type = TensorType::F32;
  return p;
}

struct Outcome {
  RequestResult result;
  std::vector<std::string> texts;  // every token event's text
};

// Submits and waits for on_finish (bounded).
Outcome run(Runtime& rt, ServiceRequest r) {
  auto out = std::make_shared<Outcome>();
  auto done = std::make_shared<std::promise<void>>();
  r.on_token = [out](const TokenEvent& e) {
    out->texts.emplace_back(e.text);
    return true;
  };
  r.on_finish = [out, done](RequestResult& res) {
    out->result = res;
    done->set_value();
  };
  rt.submit(std::move(r));
  EXPECT_EQ(done->get_future().wait_for(60s), std::future_status::ready);
  return *out;
}

ServiceRequest chat(RouteMode route, int max_tokens = 12) {
  ServiceRequest r;
  r.messages = conversation();
  r.sampling.temperature = 0;
  r.generation.max_tokens = max_tokens;
  r.route = route;
  r.deadline_ms = 0;
  return r;
}

RouterParams router(std::shared_ptr<CloudTransport> t, double local, double cloud) {
  RouterParams p;
  p.local_threshold = local;
  p.cloud_threshold = cloud;
  p.cloud_model = "small-model";
  p.transport = std::move(t);
  return p;
}

// The independent reference: generate() on a fresh context with the same template and ids.
struct Reference {
  std::string text;
  double score = 0;
};
Reference reference_answer(const Json& messages, int max_tokens) {
  auto model = Model::load(test::shared_model("stories260K.gguf"));
  auto tok = Tokenizer::from_gguf(model->gguf());
  std::string desc, warn;
  const ChatTemplate tmpl = select_chat_template(model->gguf(), *tok, "", &desc, &warn);
  ContextParams cp;
  cp.n_ctx = 512;
  cp.n_threads = 1;
  cp.kv_type = TensorType::F32;
  Context ctx(*model, cp);
  SamplerParams sp;
  sp.temperature = 0;
  Sampler sampler(sp, tok->n_vocab());
  GenerationParams gp;
  gp.max_tokens = max_tokens;
  gp.stop = chat_stop_strings(tmpl, *tok, {});
  double log_sum = 0;
  int n = 0;
  std::vector<float> last;
  GenerationCallbacks cb;
  cb.on_logits = [&](const float* logits, int32_t n_vocab) { last.assign(logits, logits + n_vocab); };
  cb.on_token = [&](int32_t id, std::string_view) {
    if (id < 0) return true;
    double mx = -INFINITY;
    for (float v : last) mx = std::max(mx, static_cast<double>(v));
    double z = 0;
    for (float v : last) z += std::exp(static_cast<double>(v) - mx);
    log_sum += std::log(std::exp(static_cast<double>(last[id]) - mx) / z);
    ++n;
    return true;
  };
  const GenerationResult g = generate(ctx, sampler, tok.get(), chat_prompt_tokens(tmpl, *tok, messages), gp, cb);
  return {g.text, n > 0 ? std::exp(log_sum / n) : 0.0};
}

TEST(RuntimeRouter, LowConfidenceGoesToTheCloudWithTheContextSynced) {
  auto cloud = std::make_shared<FakeCloud>();
  RuntimeParams p = runtime_params();
  p.router = router(cloud, 1.0, 1.0);  // every score is below 1: always the cloud
  Runtime rt(p);
  const Outcome o = run(rt, chat(RouteMode::kAuto));
  ASSERT_EQ(o.result.finish_reason, FinishReason::kStop) << o.result.error;
  EXPECT_EQ(o.result.text, "the cloud's answer");
  EXPECT_EQ(o.result.route.route, "cloud");
  EXPECT_EQ(o.result.route.tier, "small");
  EXPECT_EQ(o.result.model_version, "cloud:small-model");
  ASSERT_EQ(o.texts.size(), 1u);  // one text event with the whole answer
  EXPECT_EQ(o.texts[0], "the cloud's answer");
  // The score the router used equals the recomputed one (float softmax in the service vs double
  // here; the measured difference is printed, the bound is ~10x it).
  const Reference local = reference_answer(conversation(), 12);
  std::printf("score: router %.9f, recomputed %.9f, |diff| %.2e\n", o.result.route.score, local.score,
              std::fabs(o.result.route.score - local.score));
  EXPECT_NEAR(o.result.route.score, local.score, 5e-9);  // measured 4.9e-10

  // Context sync, checked on the cloud's side.
  const std::vector<CloudCall> calls = cloud->calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].tier, "small");
  const Json body = Json::parse(calls[0].body);
  EXPECT_EQ(body.at("model").as_string(), "small-model");
  const Json& sent = body.at("messages");
  const Json full = conversation();
  // system, summary, then the messages from the third-last user turn on (user 3, asst, user 4,
  // asst, user 5: indices 5..9 of the conversation).
  ASSERT_EQ(sent.size(), 2u + 5u);
  EXPECT_EQ(sent.at(0), full.at(0));
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(sent.at(2 + i), full.at(5 + i)) << i;
  // The summary: the local model's greedy answer to the summary request over the older turns.
  Json older = Json::array();
  for (size_t i = 1; i < 5; ++i) older.push_back(full.at(i));
  Json summary_request = Json::array();
  summary_request.push_back(message("system", kSummaryInstruction));
  summary_request.push_back(message("user", transcript_of(older)));
  const Reference summary = reference_answer(summary_request, RouterParams{}.summary_max_tokens);
  EXPECT_EQ(sent.at(1).at("role").as_string(), "system");
  EXPECT_EQ(sent.at(1).at("content").as_string(), "Summary of the earlier conversation: " + summary.text);
  // The older turns' text travels only inside that summary.
  for (size_t i = 1; i < 5; ++i) {
    const std::string& t = full.at(i).at("content").as_string();
    for (size_t j = 2; j < sent.size(); ++j) EXPECT_NE(sent.at(j).at("content").as_string(), t);
  }
  const RouterCounters c = rt.router_counters();
  EXPECT_EQ(c.cloud, 1u);
  EXPECT_EQ(c.scored, 1u);
}

TEST(RuntimeRouter, ConfidentAnswersStayLocalAndEqualTheReference) {
  auto cloud = std::make_shared<FakeCloud>();
  RuntimeParams p = runtime_params();
  p.router = router(cloud, 0.0, 0.0);  // every score is >= 0: always local
  Runtime rt(p);
  const Outcome o = run(rt, chat(RouteMode::kAuto));
  const Reference local = reference_answer(conversation(), 12);
  EXPECT_EQ(o.result.route.route, "local");
  EXPECT_EQ(o.result.text, local.text);
  EXPECT_TRUE(cloud->calls().empty());
  EXPECT_FALSE(o.result.route.retry_in_cloud);
}

TEST(RuntimeRouter, BetweenTheThresholdsIsLocalWithARetryOffer) {
  auto cloud = std::make_shared<FakeCloud>();
  RuntimeParams p = runtime_params();
  p.router = router(cloud, 1.0, 0.0);
  Runtime rt(p);
  const Outcome o = run(rt, chat(RouteMode::kAuto));
  EXPECT_EQ(o.result.route.route, "local-low-confidence");
  EXPECT_TRUE(o.result.route.retry_in_cloud);
  EXPECT_TRUE(cloud->calls().empty());
  // The retry: route cloud answers from the cloud.
  const Outcome retry = run(rt, chat(RouteMode::kCloud));
  EXPECT_EQ(retry.result.route.route, "cloud");
  EXPECT_EQ(retry.result.text, "the cloud's answer");
}

TEST(RuntimeRouter, PrivacyModeNeverCallsTheTransport) {
  auto cloud = std::make_shared<FakeCloud>();
  RuntimeParams p = runtime_params();
  p.router = router(cloud, 1.0, 1.0);
  p.router.privacy = true;
  Runtime rt(p);
  for (RouteMode mode : {RouteMode::kAuto, RouteMode::kCloud, RouteMode::kLocal}) {
    const Outcome o = run(rt, chat(mode));
    EXPECT_EQ(o.result.route.route, "local") << static_cast<int>(mode);
    EXPECT_EQ(o.result.text, reference_answer(conversation(), 12).text);
  }
  EXPECT_TRUE(cloud->calls().empty());
  EXPECT_GE(rt.router_counters().privacy_blocks, 2u);
}

TEST(RuntimeRouter, AFailingCloudGivesTheLocalAnswerWithTheReason) {
  auto cloud = std::make_shared<FakeCloud>();
  cloud->script("small", {503, "", "", false});
  RuntimeParams p = runtime_params();
  p.router = router(cloud, 1.0, 1.0);
  Runtime rt(p);
  const Outcome o = run(rt, chat(RouteMode::kAuto));
  EXPECT_EQ(o.result.route.route, "local");
  EXPECT_NE(o.result.route.reason.find("offline: HTTP 503"), std::string::npos) << o.result.route.reason;
  EXPECT_EQ(o.result.text, reference_answer(conversation(), 12).text);
  EXPECT_EQ(rt.router_counters().cloud_failures, 1u);
}

TEST(RuntimeRouter, TheSmallTierFailingFallsBackToTheLargeOne) {
  auto cloud = std::make_shared<FakeCloud>();
  cloud->script("small", {0, "", "connection refused", false});
  cloud->script("large", {200, "large says hi", "", false});
  RuntimeParams p = runtime_params();
  p.router = router(cloud, 1.0, 1.0);
  p.router.cloud_model_large = "large-model";
  Runtime rt(p);
  const Outcome o = run(rt, chat(RouteMode::kAuto));
  EXPECT_EQ(o.result.text, "large says hi");
  EXPECT_EQ(o.result.route.tier, "large");
  EXPECT_EQ(o.result.model_version, "cloud:large-model");
  const std::vector<CloudCall> calls = cloud->calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].tier, "small");
  EXPECT_EQ(calls[1].tier, "large");
  EXPECT_EQ(Json::parse(calls[1].body).at("model").as_string(), "large-model");
}

TEST(RuntimeRouter, ACloudThatNeverAnswersTimesOut) {
  auto cloud = std::make_shared<FakeCloud>();
  cloud->script("small", {200, "", "", true});
  RuntimeParams p = runtime_params();
  p.router = router(cloud, 1.0, 1.0);
  p.router.cloud_timeout_ms = 200;
  Runtime rt(p);
  const Outcome o = run(rt, chat(RouteMode::kAuto));
  EXPECT_EQ(o.result.route.route, "local");
  EXPECT_NE(o.result.route.reason.find("no answer within 200 ms"), std::string::npos) << o.result.route.reason;
  cloud->release_held();  // a late answer is dropped, nothing is delivered twice
}

TEST(RuntimeRouter, AFullContextGoesToTheLargeTierWhenAllowed) {
  auto cloud = std::make_shared<FakeCloud>();
  cloud->script("large", {200, "a long answer", "", false});
  RuntimeParams p = runtime_params();
  p.service.context.n_ctx = 64;  // the conversation does not fit
  p.router = router(cloud, 0.0, 0.0);
  p.router.cloud_model_large = "large-model";
  Runtime rt(p);
  // Streamed locally (kLocal): the failure before the first token goes to the cloud.
  const Outcome o = run(rt, chat(RouteMode::kLocal));
  EXPECT_EQ(o.result.finish_reason, FinishReason::kStop) << o.result.error;
  EXPECT_EQ(o.result.text, "a long answer");
  EXPECT_EQ(o.result.route.tier, "large");
  EXPECT_NE(o.result.route.reason.find("the local run failed"), std::string::npos);
  EXPECT_EQ(rt.router_counters().failure_fallbacks, 1u);
  // Not allowed: the local failure as it is.
  RouterParams no = rt.router_params();
  no.cloud_on_failure = false;
  rt.set_router(no);
  const Outcome plain = run(rt, chat(RouteMode::kLocal));
  EXPECT_EQ(plain.result.finish_reason, FinishReason::kError);
  EXPECT_EQ(plain.result.error_code, ErrorCode::kContextFull);
  EXPECT_EQ(cloud->calls().size(), 1u);
}

TEST(RuntimeRouter, CancellingWhileTheCloudIsAwaitedEndsTheRequestOnce) {
  auto cloud = std::make_shared<FakeCloud>();
  cloud->script("small", {200, "", "", true});
  RuntimeParams p = runtime_params();
  p.router = router(cloud, 1.0, 1.0);
  Runtime rt(p);
  std::atomic<int> finishes{0};
  std::promise<RequestResult> done;
  ServiceRequest r = chat(RouteMode::kCloud);
  r.on_finish = [&](RequestResult& res) {
    if (finishes.fetch_add(1) == 0) done.set_value(res);
  };
  const uint64_t id = rt.submit(std::move(r)).id;
  // Wait (bounded) until the call reached the transport, then cancel.
  for (int i = 0; i < 2000 && cloud->calls().empty(); ++i) std::this_thread::sleep_for(5ms);
  ASSERT_EQ(cloud->calls().size(), 1u);
  EXPECT_TRUE(rt.cancel(id));
  auto f = done.get_future();
  ASSERT_EQ(f.wait_for(30s), std::future_status::ready);
  EXPECT_EQ(f.get().finish_reason, FinishReason::kCancelled);
  cloud->release_held();
  rt.shutdown();
  EXPECT_EQ(finishes.load(), 1);
  EXPECT_FALSE(rt.cancel(id));
}

TEST(RuntimeRouter, ShutdownEndsRoutedRequestsOnceAndNeverHangs) {
  auto cloud = std::make_shared<FakeCloud>();
  cloud->script("small", {200, "", "", true});
  RuntimeParams p = runtime_params();
  p.router = router(cloud, 1.0, 1.0);
  auto rt = std::make_unique<Runtime>(p);
  std::atomic<int> finishes{0};
  for (int i = 0; i < 3; ++i) {
    ServiceRequest r = chat(i == 0 ? RouteMode::kCloud : RouteMode::kAuto);
    r.on_finish = [&](RequestResult&) { finishes.fetch_add(1); };
    rt->submit(std::move(r));
  }
  rt.reset();  // destroys with requests local, summarising and awaiting the cloud
  EXPECT_EQ(finishes.load(), 3);
  cloud->release_held();  // completing after the runtime is gone is safe
}

}  // namespace
}  // namespace edgellm
