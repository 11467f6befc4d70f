// The router through the C ABI (libedgellm.so only), with a C transport that answers from the
// test as an OpenAI-compatible endpoint would. What must hold (docs/router.md):
//   - a low-confidence local answer goes to the cloud, whose text is the result (one text event,
//     model_version "cloud:MODEL"); a confident one stays local and equals the unrouted answer;
//     the band between the thresholds answers locally and offers a cloud retry;
//   - context sync: the last verbatim_turns user turns travel verbatim, older ones as a summary;
//   - privacy mode never calls the transport, whatever the confidence or the route;
//   - a transport that never answers hits cloud_timeout_ms: the local answer comes back with the
//     reason; answering that call later, or after the runtime is destroyed, is safe;
//   - the cloud down (no answer, HTTP 500, not JSON) -> the large tier when there is one, then the
//     local answer with the reason; a local run that fails (context full) goes to the cloud when
//     cloud_on_failure allows it;
//   - a routed request's callbacks run on the router thread: destroy / swap / reload from there
//     are WRONG_THREAD; cancel works while the cloud is awaited; bad parameters are statuses.
// The confidence itself is checked against its definition (geometric mean of the token
// probabilities: min_p <= score <= mean_p), not recomputed by the code under test.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "edgellm/edgellm.h"
#include "support/test_env.h"

namespace {

using namespace std::chrono_literals;

constexpr const char* kCloudAnswer =
    "{\"id\": \"x\", \"object\": \"chat.completion\", \"choices\": [{\"index\": 0, \"message\": {\"role\": "
    "\"assistant\", \"content\": \"The cloud says hello.\"}, \"finish_reason\": \"stop\"}], \"usage\": "
    "{\"prompt_tokens\": 11, \"completion_tokens\": 5}}";

const edgellm_sampling* greedy_sampling() {
  static const edgellm_sampling s = [] {
    edgellm_sampling g = edgellm_sampling_default();
    g.temperature = 0;
    return g;
  }();
  return &s;
}

edgellm_message msg(const char* role, const char* content) {
  edgellm_message m{};
  m.struct_size = sizeof m;
  m.role = role;
  m.content = content;
  return m;
}

// The test's cloud. How it answers each call, in order of the calls (the last mode repeats).
struct Cloud {
  enum Mode { kAnswer, kAnswerLater, kHold, kNoAnswer, kHttp500, kNotJson };
  struct Call {
    std::string tier, model, body;
  };
  std::mutex m;
  std::condition_variable cv;
  std::vector<Mode> modes{kAnswer};
  std::vector<Call> calls;
  std::vector<edgellm_cloud_call*> held;  // kHold: answered by the test, or never
  std::vector<std::thread> later;         // kAnswerLater: answered from another thread
  // Set when a call must try what a callback may not do.
  edgellm_runtime* runtime = nullptr;
  edgellm_status destroy_from_transport = EDGELLM_OK;

  ~Cloud() {
    for (std::thread& t : later) t.join();
  }
  size_t n_calls() {
    std::lock_guard<std::mutex> lock(m);
    return calls.size();
  }
  Call call(size_t i) {
    std::lock_guard<std::mutex> lock(m);
    return i < calls.size() ? calls[i] : Call{};
  }
  // The modes of the next calls (the calls so far are forgotten).
  void reset(std::vector<Mode> next) {
    std::lock_guard<std::mutex> lock(m);
    modes = std::move(next);
    calls.clear();
  }
  bool wait_calls(size_t n) {
    std::unique_lock<std::mutex> lock(m);
    return cv.wait_for(lock, 60s, [&] { return calls.size() >= n; });
  }
  bool wait_held(size_t n) {
    std::unique_lock<std::mutex> lock(m);
    return cv.wait_for(lock, 60s, [&] { return held.size() >= n; });
  }
  std::vector<edgellm_cloud_call*> take_held() {
    std::lock_guard<std::mutex> lock(m);
    return std::move(held);
  }
};

void transport(edgellm_cloud_call* call, const char* tier, const char* model, const char* body, size_t body_len,
               void* user) {
  auto* cloud = static_cast<Cloud*>(user);
  edgellm_runtime* runtime = nullptr;
  {
    std::lock_guard<std::mutex> lock(cloud->m);
    runtime = cloud->runtime;
  }
  if (runtime != nullptr) {
    const edgellm_status st = edgellm_runtime_destroy(runtime);  // outside our lock: it must return at once
    std::lock_guard<std::mutex> lock(cloud->m);
    cloud->destroy_from_transport = st;
  }
  Cloud::Mode mode;
  {
    std::lock_guard<std::mutex> lock(cloud->m);
    mode = cloud->modes[std::min(cloud->calls.size(), cloud->modes.size() - 1)];
    cloud->calls.push_back({tier, model, std::string(body, body_len)});
    if (mode == Cloud::kHold) cloud->held.push_back(call);
    if (mode == Cloud::kAnswerLater) {
      cloud->later.emplace_back([call] {
        EXPECT_EQ(edgellm_cloud_complete(call, 200, kCloudAnswer, std::strlen(kCloudAnswer), nullptr), EDGELLM_OK);
      });
    }
    cloud->cv.notify_all();
  }
  switch (mode) {
    case Cloud::kAnswer:
      EXPECT_EQ(edgellm_cloud_complete(call, 200, kCloudAnswer, std::strlen(kCloudAnswer), nullptr), EDGELLM_OK);
      break;
    case Cloud::kNoAnswer:
      EXPECT_EQ(edgellm_cloud_complete(call, 0, nullptr, 0, "connection refused"), EDGELLM_OK);
      break;
    case Cloud::kHttp500:
      EXPECT_EQ(edgellm_cloud_complete(call, 500, "overloaded", 10, nullptr), EDGELLM_OK);
      break;
    case Cloud::kNotJson:
      EXPECT_EQ(edgellm_cloud_complete(call, 200, "<html>", 6, nullptr), EDGELLM_OK);
      break;
    case Cloud::kHold:
    case Cloud::kAnswerLater: break;
  }
}

// One routed request's outcome.
struct Outcome {
  std::mutex m;
  std::condition_variable cv;
  int finals = 0;
  std::vector<int32_t> event_tokens;  // the token of every event (-1: text released at the end)
  std::string streamed;
  edgellm_finish_reason reason = EDGELLM_FINISH_ERROR;
  edgellm_status status = EDGELLM_ERR_INTERNAL;
  std::string text, error, version, route, route_reason, tier;
  double score = -2, mean_p = -2, min_p = -2;
  bool retry_in_cloud = false;
  int32_t completion_tokens = 0;
  // From the finish callback (the router thread): what a callback may not do.
  edgellm_runtime* runtime = nullptr;
  edgellm_status destroy_from_callback = EDGELLM_OK;
  edgellm_status swap_from_callback = EDGELLM_OK;

  bool wait() {
    std::unique_lock<std::mutex> lock(m);
    return cv.wait_for(lock, 60s, [&] { return finals > 0; });
  }
};

bool on_token(const edgellm_token_event* ev, void* user) {
  auto* o = static_cast<Outcome*>(user);
  std::lock_guard<std::mutex> lock(o->m);
  o->event_tokens.push_back(ev->token);
  o->streamed.append(ev->text, ev->text_len);
  return true;
}

void on_finish(const edgellm_result* r, void* user) {
  auto* o = static_cast<Outcome*>(user);
  if (o->runtime != nullptr) {
    o->destroy_from_callback = edgellm_runtime_destroy(o->runtime);
    o->swap_from_callback = edgellm_swap_model(o->runtime, "/nonexistent.gguf", "x");
  }
  std::lock_guard<std::mutex> lock(o->m);
  ++o->finals;
  o->reason = r->finish_reason;
  o->status = r->status;
  o->text.assign(r->text, r->text_len);
  o->error = r->error_message;
  o->version = r->model_version;
  o->route = r->route.route;
  o->route_reason = r->route.reason;
  o->tier = r->route.tier;
  o->score = r->route.score;
  o->mean_p = r->route.mean_p;
  o->min_p = r->route.min_p;
  o->retry_in_cloud = r->route.retry_in_cloud;
  o->completion_tokens = r->stats.completion_tokens;
  o->cv.notify_all();
}

class CApiRouter : public ::testing::Test {
 protected:
  void SetUp() override {
    edgellm_runtime_params p = edgellm_runtime_default_params();
    p.n_ctx = 1024;  // holds every chat here but the "too long" one (1242 tokens)
    p.n_parallel = 2;
    ASSERT_EQ(edgellm_runtime_create(edgellm::test::shared_model("stories260K.gguf").c_str(), &p, &rt_), EDGELLM_OK)
        << edgellm_last_error();
  }
  void TearDown() override {
    if (rt_ != nullptr) {
      EXPECT_EQ(edgellm_runtime_destroy(rt_), EDGELLM_OK);
    }
  }

  // Thresholds (local, cloud): (1, 1) sends every answer below certainty to the cloud; (0, 0)
  // keeps every answer local; (1, 0) puts every answer in the band between.
  edgellm_router_params router(double local_threshold, double cloud_threshold) {
    edgellm_router_params r = edgellm_router_default_params();
    r.local_threshold = local_threshold;
    r.cloud_threshold = cloud_threshold;
    r.cloud_model = "small-model";
    r.transport = transport;
    r.transport_user_data = &cloud_;
    return r;
  }
  void set_router(const edgellm_router_params& r) { ASSERT_EQ(edgellm_set_router(rt_, &r), EDGELLM_OK) << edgellm_last_error(); }

  // A short chat, greedy.
  edgellm_status submit(Outcome& o, edgellm_route route, const std::vector<edgellm_message>& chat,
                        edgellm_request_id* id = nullptr, int32_t max_tokens = 16) {
    edgellm_request_params r = edgellm_request_default_params();
    r.messages = chat.data();
    r.n_messages = chat.size();
    r.sampling = greedy_sampling();
    r.max_tokens = max_tokens;
    r.route = route;
    r.on_token = on_token;
    r.on_finish = on_finish;
    r.user_data = &o;
    edgellm_request_id local = 0;
    return edgellm_submit(rt_, &r, id != nullptr ? id : &local);
  }
  edgellm_metrics metrics() {
    edgellm_metrics m = edgellm_metrics_init();
    EXPECT_EQ(edgellm_metrics_get(rt_, &m), EDGELLM_OK);
    return m;
  }
  // The local answer to `chat` without the router: the reference a local route must equal.
  std::string unrouted(const std::vector<edgellm_message>& chat, int32_t max_tokens = 16) {
    Outcome o;
    EXPECT_EQ(submit(o, EDGELLM_ROUTE_OFF, chat, nullptr, max_tokens), EDGELLM_OK);
    EXPECT_TRUE(o.wait());
    EXPECT_EQ(o.route, "");
    return o.text;
  }

  const std::vector<edgellm_message> chat_ = {msg("user", "Tell me a story about a cat.")};
  Cloud cloud_;
  edgellm_runtime* rt_ = nullptr;
};

TEST_F(CApiRouter, LowConfidenceGoesToTheCloud) {
  set_router(router(1.0, 1.0));
  Outcome o;
  ASSERT_EQ(submit(o, EDGELLM_ROUTE_AUTO, chat_), EDGELLM_OK) << edgellm_last_error();
  ASSERT_TRUE(o.wait());
  ASSERT_EQ(cloud_.n_calls(), 1u);
  EXPECT_EQ(cloud_.call(0).tier, "small");
  EXPECT_EQ(cloud_.call(0).model, "small-model");
  EXPECT_NE(cloud_.call(0).body.find("\"model\": \"small-model\""), std::string::npos) << cloud_.call(0).body;
  EXPECT_NE(cloud_.call(0).body.find("Tell me a story about a cat."), std::string::npos) << cloud_.call(0).body;
  EXPECT_EQ(o.reason, EDGELLM_FINISH_STOP) << o.error;
  EXPECT_EQ(o.text, "The cloud says hello.");
  EXPECT_EQ(o.version, "cloud:small-model");
  EXPECT_EQ(o.route, "cloud");
  EXPECT_EQ(o.tier, "small");
  EXPECT_NE(o.route_reason.find("low confidence"), std::string::npos) << o.route_reason;
  EXPECT_EQ(o.completion_tokens, 5);  // the cloud's usage
  // The local answer was scored: a geometric mean lies between the minimum and the mean.
  EXPECT_GT(o.score, 0.0);
  EXPECT_LT(o.score, 1.0);
  EXPECT_LE(o.min_p, o.score + 1e-12);
  EXPECT_LE(o.score, o.mean_p + 1e-12);
  // The answer arrives whole, as one text event, before on_finish.
  EXPECT_EQ(o.event_tokens, std::vector<int32_t>{-1});
  EXPECT_EQ(o.streamed, o.text);
  const edgellm_metrics m = metrics();
  EXPECT_EQ(m.routed_cloud, 1u);
  EXPECT_EQ(m.routed_local + m.routed_low_confidence + m.cloud_failures + m.privacy_blocks, 0u);
}

TEST_F(CApiRouter, ConfidentStaysLocalAndTheBandOffersARetry) {
  const std::string reference = unrouted(chat_);
  ASSERT_FALSE(reference.empty());
  set_router(router(0.0, 0.0));
  Outcome local;
  ASSERT_EQ(submit(local, EDGELLM_ROUTE_AUTO, chat_), EDGELLM_OK);
  ASSERT_TRUE(local.wait());
  EXPECT_EQ(local.route, "local");
  EXPECT_EQ(local.text, reference);
  EXPECT_EQ(local.version, "1");
  EXPECT_FALSE(local.retry_in_cloud);
  EXPECT_EQ(local.event_tokens, std::vector<int32_t>{-1});  // held back for the decision, then whole

  set_router(router(1.0, 0.0));
  Outcome band;
  ASSERT_EQ(submit(band, EDGELLM_ROUTE_AUTO, chat_), EDGELLM_OK);
  ASSERT_TRUE(band.wait());
  EXPECT_EQ(band.route, "local-low-confidence");
  EXPECT_EQ(band.text, reference);
  EXPECT_TRUE(band.retry_in_cloud);
  EXPECT_NEAR(band.score, local.score, 1e-6);  // the same answer, the same confidence
  EXPECT_EQ(cloud_.n_calls(), 0u);

  // The retry the band offers: the same request with route CLOUD.
  Outcome retry;
  ASSERT_EQ(submit(retry, EDGELLM_ROUTE_CLOUD, chat_), EDGELLM_OK);
  ASSERT_TRUE(retry.wait());
  EXPECT_EQ(retry.route, "cloud");
  EXPECT_EQ(retry.text, "The cloud says hello.");
  EXPECT_EQ(cloud_.n_calls(), 1u);

  // ROUTE_LOCAL streams token by token, like an unrouted request.
  Outcome streamed;
  ASSERT_EQ(submit(streamed, EDGELLM_ROUTE_LOCAL, chat_), EDGELLM_OK);
  ASSERT_TRUE(streamed.wait());
  EXPECT_EQ(streamed.route, "local");
  EXPECT_EQ(streamed.text, reference);
  EXPECT_GT(streamed.event_tokens.size(), 1u);
  EXPECT_GE(streamed.event_tokens[0], 0);
  const edgellm_metrics m = metrics();
  EXPECT_EQ(m.routed_local, 2u);
  EXPECT_EQ(m.routed_low_confidence, 1u);
  EXPECT_EQ(m.routed_cloud, 1u);
}

TEST_F(CApiRouter, ContextSyncSendsRecentTurnsVerbatimAndASummary) {
  edgellm_router_params r = router(1.0, 1.0);
  r.verbatim_turns = 2;
  r.summary_max_tokens = 8;
  set_router(r);
  const std::vector<edgellm_message> chat = {
      msg("system", "You are a storyteller."),
      msg("user", "turn-one-question-zebra"),   msg("assistant", "turn-one-answer"),
      msg("user", "turn-two-question-yak"),     msg("assistant", "turn-two-answer"),
      msg("user", "turn-three-question-xerus"), msg("assistant", "turn-three-answer"),
      msg("user", "turn-four-question-wombat"),
  };
  Outcome o;
  ASSERT_EQ(submit(o, EDGELLM_ROUTE_AUTO, chat), EDGELLM_OK) << edgellm_last_error();
  ASSERT_TRUE(o.wait());
  EXPECT_EQ(o.route, "cloud");
  EXPECT_EQ(o.route_reason.rfind("low confidence", 0), 0u) << o.route_reason;  // not a context too small
  ASSERT_EQ(cloud_.n_calls(), 1u);
  const std::string body = cloud_.call(0).body;
  // Kept verbatim, in order: the system prompt, then the last two user turns with their replies.
  const size_t sys = body.find("\"content\": \"You are a storyteller.\"");
  const size_t summary = body.find("\"content\": \"Summary of the earlier conversation: ");
  const size_t t3 = body.find("\"content\": \"turn-three-question-xerus\"");
  const size_t a3 = body.find("\"content\": \"turn-three-answer\"");
  const size_t t4 = body.find("\"content\": \"turn-four-question-wombat\"");
  ASSERT_NE(sys, std::string::npos) << body;
  ASSERT_NE(summary, std::string::npos) << body;
  ASSERT_NE(t3, std::string::npos) << body;
  ASSERT_NE(a3, std::string::npos) << body;
  ASSERT_NE(t4, std::string::npos) << body;
  EXPECT_LT(sys, summary);
  EXPECT_LT(summary, t3);
  EXPECT_LT(t3, a3);
  EXPECT_LT(a3, t4);
  // The older turns are not sent as messages of their own (only inside the summary).
  for (const char* older : {"turn-one-question-zebra", "turn-one-answer", "turn-two-question-yak", "turn-two-answer"}) {
    EXPECT_EQ(body.find(std::string("\"content\": \"") + older + "\""), std::string::npos) << older << " in " << body;
  }
  // The sampling the request set travels too.
  EXPECT_NE(body.find("\"max_tokens\": 16"), std::string::npos) << body;
  EXPECT_NE(body.find("\"temperature\": 0"), std::string::npos) << body;
}

TEST_F(CApiRouter, PrivacyModeNeverCallsTheTransport) {
  edgellm_router_params r = router(1.0, 1.0);
  r.privacy = true;
  set_router(r);
  const std::string reference = unrouted(chat_);
  for (edgellm_route route : {EDGELLM_ROUTE_AUTO, EDGELLM_ROUTE_CLOUD, EDGELLM_ROUTE_LOCAL}) {
    Outcome o;
    ASSERT_EQ(submit(o, route, chat_), EDGELLM_OK) << edgellm_last_error();
    ASSERT_TRUE(o.wait());
    EXPECT_EQ(o.route, "local") << route;
    EXPECT_EQ(o.text, reference) << route;
    if (route != EDGELLM_ROUTE_LOCAL) {
      EXPECT_NE(o.route_reason.find("privacy mode"), std::string::npos) << o.route_reason;
    }
  }
  // A local failure is not sent either: a prompt longer than the context.
  std::string long_text;
  for (int i = 0; i < 120; ++i) long_text += "The cat sat on the mat. ";
  const std::vector<edgellm_message> too_long = {msg("user", long_text.c_str())};
  Outcome failed;
  ASSERT_EQ(submit(failed, EDGELLM_ROUTE_LOCAL, too_long), EDGELLM_OK);
  ASSERT_TRUE(failed.wait());
  EXPECT_EQ(failed.reason, EDGELLM_FINISH_ERROR);
  EXPECT_EQ(failed.status, EDGELLM_ERR_CONTEXT_FULL);
  EXPECT_EQ(cloud_.n_calls(), 0u);
  const edgellm_metrics m = metrics();
  EXPECT_EQ(m.privacy_blocks, 3u);  // AUTO's low confidence, CLOUD's route, LOCAL's failure
  EXPECT_EQ(m.routed_cloud, 0u);
}

TEST_F(CApiRouter, ATransportThatNeverAnswersTimesOutToTheLocalAnswer) {
  const std::string reference = unrouted(chat_);
  edgellm_router_params r = router(1.0, 1.0);
  r.cloud_timeout_ms = 200;
  set_router(r);
  cloud_.reset({Cloud::kHold});
  Outcome o;
  ASSERT_EQ(submit(o, EDGELLM_ROUTE_AUTO, chat_), EDGELLM_OK);
  ASSERT_TRUE(o.wait());
  EXPECT_EQ(o.route, "local");
  EXPECT_EQ(o.text, reference);
  EXPECT_EQ(o.reason, EDGELLM_FINISH_LENGTH);
  EXPECT_NE(o.route_reason.find("no answer within 200 ms"), std::string::npos) << o.route_reason;
  EXPECT_EQ(metrics().cloud_failures, 1u);
  // The answer arrives after all: dropped, the request has ended once.
  ASSERT_TRUE(cloud_.wait_held(1));
  for (edgellm_cloud_call* call : cloud_.take_held()) {
    EXPECT_EQ(edgellm_cloud_complete(call, 200, kCloudAnswer, std::strlen(kCloudAnswer), nullptr), EDGELLM_OK);
  }
  EXPECT_EQ(o.finals, 1);
  Outcome next;  // the router is still serving
  cloud_.reset({Cloud::kAnswer});
  ASSERT_EQ(submit(next, EDGELLM_ROUTE_CLOUD, chat_), EDGELLM_OK);
  ASSERT_TRUE(next.wait());
  EXPECT_EQ(next.route, "cloud");
  EXPECT_EQ(o.finals, 1);
}

// The runtime goes away while a call is out: the request ends (CANCELLED) before destroy
// returns, and the app may still complete the call afterwards.
TEST_F(CApiRouter, CompletingACallAfterTheRuntimeIsDestroyedIsSafe) {
  set_router(router(1.0, 1.0));
  cloud_.reset({Cloud::kHold});
  Outcome o;
  ASSERT_EQ(submit(o, EDGELLM_ROUTE_CLOUD, chat_), EDGELLM_OK);
  ASSERT_TRUE(cloud_.wait_held(1));
  ASSERT_EQ(edgellm_runtime_destroy(rt_), EDGELLM_OK);
  rt_ = nullptr;
  EXPECT_EQ(o.finals, 1);
  EXPECT_EQ(o.reason, EDGELLM_FINISH_CANCELLED);
  for (edgellm_cloud_call* call : cloud_.take_held()) {
    EXPECT_EQ(edgellm_cloud_complete(call, 200, kCloudAnswer, std::strlen(kCloudAnswer), nullptr), EDGELLM_OK);
  }
  EXPECT_EQ(o.finals, 1);
}

TEST_F(CApiRouter, CancelWhileTheCloudIsAwaited) {
  set_router(router(1.0, 1.0));
  cloud_.reset({Cloud::kHold});
  Outcome o;
  edgellm_request_id id = 0;
  ASSERT_EQ(submit(o, EDGELLM_ROUTE_CLOUD, chat_, &id), EDGELLM_OK);
  ASSERT_TRUE(cloud_.wait_held(1));
  ASSERT_EQ(edgellm_cancel(rt_, id), EDGELLM_OK);
  ASSERT_TRUE(o.wait());
  EXPECT_EQ(o.reason, EDGELLM_FINISH_CANCELLED);
  EXPECT_EQ(edgellm_cancel(rt_, id), EDGELLM_ERR_NOT_FOUND);
  for (edgellm_cloud_call* call : cloud_.take_held()) {
    EXPECT_EQ(edgellm_cloud_complete(call, 0, nullptr, 0, nullptr), EDGELLM_OK);  // NULL error: "no answer"
  }
  EXPECT_EQ(o.finals, 1);
}

TEST_F(CApiRouter, CloudDownFallsBackThroughTheLargeTierToTheLocalAnswer) {
  const std::string reference = unrouted(chat_);
  edgellm_router_params r = router(1.0, 1.0);
  r.cloud_model_large = "large-model";
  set_router(r);
  for (Cloud::Mode down : {Cloud::kNoAnswer, Cloud::kHttp500, Cloud::kNotJson}) {
    cloud_.reset({down});
    Outcome o;
    ASSERT_EQ(submit(o, EDGELLM_ROUTE_AUTO, chat_), EDGELLM_OK);
    ASSERT_TRUE(o.wait());
    ASSERT_EQ(cloud_.n_calls(), 2u) << down;
    EXPECT_EQ(cloud_.call(0).tier, "small");
    EXPECT_EQ(cloud_.call(1).tier, "large");
    EXPECT_EQ(cloud_.call(1).model, "large-model");
    EXPECT_EQ(o.route, "local") << down;
    EXPECT_EQ(o.text, reference);
    EXPECT_EQ(o.version, "1");
    EXPECT_NE(o.route_reason.find("offline: "), std::string::npos) << o.route_reason;
    const char* why = down == Cloud::kNoAnswer ? "connection refused" : down == Cloud::kHttp500 ? "HTTP 500" : "not JSON";
    EXPECT_NE(o.route_reason.find(why), std::string::npos) << o.route_reason;
  }
  // The small tier down, the large one up: the large tier answers.
  cloud_.reset({Cloud::kHttp500, Cloud::kAnswerLater});
  Outcome o;
  ASSERT_EQ(submit(o, EDGELLM_ROUTE_AUTO, chat_), EDGELLM_OK);
  ASSERT_TRUE(o.wait());
  EXPECT_EQ(o.route, "cloud");
  EXPECT_EQ(o.tier, "large");
  EXPECT_EQ(o.version, "cloud:large-model");
  EXPECT_EQ(metrics().cloud_failures, 7u);  // 3 x 2, then the small tier once
}

TEST_F(CApiRouter, ALocalFailureGoesToTheCloudWhenAllowed) {
  std::string long_text;
  for (int i = 0; i < 120; ++i) long_text += "The cat sat on the mat. ";
  const std::vector<edgellm_message> too_long = {msg("user", long_text.c_str())};
  edgellm_router_params r = router(0.0, 0.0);
  r.cloud_model_large = "large-model";
  set_router(r);
  Outcome o;
  ASSERT_EQ(submit(o, EDGELLM_ROUTE_LOCAL, too_long), EDGELLM_OK);
  ASSERT_TRUE(o.wait());
  EXPECT_EQ(o.route, "cloud");
  EXPECT_EQ(o.tier, "large");  // a full context goes to the large tier
  EXPECT_EQ(o.text, "The cloud says hello.");
  EXPECT_NE(o.route_reason.find("the local run failed"), std::string::npos) << o.route_reason;
  EXPECT_EQ(metrics().failure_fallbacks, 1u);

  // A request that continues a session: the same (its failed run stored nothing).
  Outcome with_session;
  edgellm_request_params rs = edgellm_request_default_params();
  rs.messages = too_long.data();
  rs.n_messages = too_long.size();
  rs.sampling = greedy_sampling();
  rs.route = EDGELLM_ROUTE_LOCAL;
  rs.session_id = "kept";
  rs.on_token = on_token;
  rs.on_finish = on_finish;
  rs.user_data = &with_session;
  edgellm_request_id id = 0;
  ASSERT_EQ(edgellm_submit(rt_, &rs, &id), EDGELLM_OK) << edgellm_last_error();
  ASSERT_TRUE(with_session.wait());
  EXPECT_EQ(with_session.route, "cloud") << with_session.route_reason << " / " << with_session.error;
  EXPECT_EQ(metrics().failure_fallbacks, 2u);
  EXPECT_EQ(metrics().sessions, 0);

  r.cloud_on_failure = false;
  set_router(r);
  Outcome kept;
  ASSERT_EQ(submit(kept, EDGELLM_ROUTE_LOCAL, too_long), EDGELLM_OK);
  ASSERT_TRUE(kept.wait());
  EXPECT_EQ(kept.reason, EDGELLM_FINISH_ERROR);
  EXPECT_EQ(kept.status, EDGELLM_ERR_CONTEXT_FULL);
  EXPECT_EQ(cloud_.n_calls(), 2u);
}

TEST_F(CApiRouter, CallbacksOnTheRouterThreadMayNotDestroyOrSwap) {
  set_router(router(1.0, 1.0));
  Outcome o;
  o.runtime = rt_;
  ASSERT_EQ(submit(o, EDGELLM_ROUTE_AUTO, chat_), EDGELLM_OK);
  ASSERT_TRUE(o.wait());
  EXPECT_EQ(o.route, "cloud");
  EXPECT_EQ(o.destroy_from_callback, EDGELLM_ERR_WRONG_THREAD);
  EXPECT_EQ(o.swap_from_callback, EDGELLM_ERR_WRONG_THREAD);
  // The transport runs on the router thread too.
  {
    std::lock_guard<std::mutex> lock(cloud_.m);
    cloud_.runtime = rt_;
  }
  Outcome from_transport;
  ASSERT_EQ(submit(from_transport, EDGELLM_ROUTE_CLOUD, chat_), EDGELLM_OK);
  ASSERT_TRUE(from_transport.wait());
  {
    std::lock_guard<std::mutex> lock(cloud_.m);
    EXPECT_EQ(cloud_.destroy_from_transport, EDGELLM_ERR_WRONG_THREAD);
  }
  EXPECT_EQ(from_transport.route, "cloud");
}

TEST_F(CApiRouter, BadParametersAreStatuses) {
  edgellm_router_params r = router(0.5, 0.9);  // cloud above local
  EXPECT_EQ(edgellm_set_router(rt_, &r), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(edgellm_last_error()).find("cloud_threshold"), std::string::npos) << edgellm_last_error();
  r = router(1.5, 0.5);
  EXPECT_EQ(edgellm_set_router(rt_, &r), EDGELLM_ERR_INVALID_ARGUMENT);
  r = router(0.8, 0.5);
  r.cloud_timeout_ms = 0;
  EXPECT_EQ(edgellm_set_router(rt_, &r), EDGELLM_ERR_INVALID_ARGUMENT);
  r = router(0.8, 0.5);
  r.verbatim_turns = 0;
  EXPECT_EQ(edgellm_set_router(rt_, &r), EDGELLM_ERR_INVALID_ARGUMENT);
  r = router(0.8, 0.5);
  r.summary_max_tokens = 0;
  EXPECT_EQ(edgellm_set_router(rt_, &r), EDGELLM_ERR_INVALID_ARGUMENT);
  r = router(0.8, 0.5);
  r.struct_size = 0;
  EXPECT_EQ(edgellm_set_router(rt_, &r), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_set_router(rt_, nullptr), EDGELLM_ERR_INVALID_ARGUMENT);
  r = router(0.8, 0.5);
  EXPECT_EQ(edgellm_set_router(nullptr, &r), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_cloud_complete(nullptr, 200, "x", 1, nullptr), EDGELLM_ERR_INVALID_ARGUMENT);
  // A route value outside the enum.
  Outcome o;
  edgellm_request_params req = edgellm_request_default_params();
  req.prompt = "Once";
  req.route = static_cast<edgellm_route>(9);
  edgellm_request_id id = 0;
  EXPECT_EQ(edgellm_submit(rt_, &req, &id), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(edgellm_last_error()).find("route"), std::string::npos) << edgellm_last_error();

  // A routed request gets the same checks as any other (here: a bad stop string) at submit,
  // whichever route it takes.
  set_router(router(1.0, 1.0));
  const char* empty_stop[] = {""};
  for (edgellm_route route : {EDGELLM_ROUTE_AUTO, EDGELLM_ROUTE_LOCAL, EDGELLM_ROUTE_CLOUD}) {
    edgellm_request_params bad = edgellm_request_default_params();
    bad.messages = chat_.data();
    bad.n_messages = chat_.size();
    bad.stop = empty_stop;
    bad.n_stop = 1;
    bad.route = route;
    EXPECT_EQ(edgellm_submit(rt_, &bad, &id), EDGELLM_ERR_INVALID_ARGUMENT) << route;
    EXPECT_NE(std::string(edgellm_last_error()).find("stop[0]"), std::string::npos) << edgellm_last_error();
  }
  EXPECT_EQ(cloud_.n_calls(), 0u);

  // A body pointer that is NULL with a length: refused, and the call is still the app's to
  // complete (nothing changed), so the request is answered when it is.
  cloud_.reset({Cloud::kHold});
  ASSERT_EQ(submit(o, EDGELLM_ROUTE_CLOUD, chat_), EDGELLM_OK);
  ASSERT_TRUE(cloud_.wait_held(1));
  std::vector<edgellm_cloud_call*> held = cloud_.take_held();
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(edgellm_cloud_complete(held[0], 200, nullptr, 5, nullptr), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_cloud_complete(held[0], 200, kCloudAnswer, std::strlen(kCloudAnswer), nullptr), EDGELLM_OK);
  ASSERT_TRUE(o.wait());
  EXPECT_EQ(o.route, "cloud");
  EXPECT_EQ(o.text, "The cloud says hello.");
}

}  // namespace
