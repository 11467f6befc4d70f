// The C ABI exactly as an app sees it (libedgellm.so + include/edgellm/edgellm.h, nothing
// internal): concurrent submits from 8 threads, cancel, deadlines, BUSY, pause / resume, destroy
// with requests in flight, and bad input of every kind — each a documented status, never a crash.
// Runs in the normal, the ASan+UBSan and the TSan builds.
#include <gtest/gtest.h>

#include <cstddef>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "edgellm/edgellm.h"
#include "support/test_env.h"

namespace {

using namespace std::chrono_literals;

// Greedy sampling for the requests of these tests (edgellm_submit copies what it points to).
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

edgellm_metrics metrics_of(edgellm_runtime* rt) {
  edgellm_metrics m = edgellm_metrics_init();
  EXPECT_EQ(edgellm_metrics_get(rt, &m), EDGELLM_OK) << edgellm_last_error();
  return m;
}

// One request's events, filled on the scheduler thread.
struct Sink {
  std::mutex mutex;
  std::condition_variable cv;
  std::string streamed;
  std::vector<int32_t> tokens;
  int events = 0;
  int finals = 0;
  edgellm_finish_reason reason = EDGELLM_FINISH_ERROR;
  edgellm_status status = EDGELLM_ERR_INTERNAL;
  std::string text;
  std::string error;
  int32_t completion_tokens = 0;
  int32_t cached_tokens = 0;
  edgellm_spec_stats spec{};
  std::string spec_off_reason;
  int cancel_after = -1;  // on_token returns false at this index
  edgellm_runtime* pause_service = nullptr;  // with pause_at: on_token pauses it at this index
  int pause_at = -1;

  bool wait_final(std::chrono::milliseconds limit = 60s) {
    std::unique_lock<std::mutex> lock(mutex);
    return cv.wait_for(lock, limit, [&] { return finals > 0; });
  }
  bool wait_events(int n) {
    std::unique_lock<std::mutex> lock(mutex);
    return cv.wait_for(lock, 60s, [&] { return events >= n || finals > 0; });
  }
  int n_events() {
    std::lock_guard<std::mutex> lock(mutex);
    return events;
  }
};

bool on_token(const edgellm_token_event* ev, void* user) {
  auto* s = static_cast<Sink*>(user);
  {
    std::lock_guard<std::mutex> lock(s->mutex);
    s->streamed.append(ev->text, ev->text_len);
    if (ev->token >= 0) s->tokens.push_back(ev->token);
    ++s->events;
    s->cv.notify_all();  // under the lock: the waiter may destroy the Sink once it sees the change
  }
  if (s->pause_service != nullptr && ev->index == s->pause_at) {
    EXPECT_EQ(edgellm_pause(s->pause_service), EDGELLM_OK);
  }
  return s->cancel_after < 0 || ev->index < s->cancel_after;
}

void on_finish(const edgellm_result* r, void* user) {
  auto* s = static_cast<Sink*>(user);
  {
    std::lock_guard<std::mutex> lock(s->mutex);
    ++s->finals;
    s->reason = r->finish_reason;
    s->status = r->status;
    s->text.assign(r->text, r->text_len);
    s->error = r->error_message;
    s->completion_tokens = r->stats.completion_tokens;
    s->cached_tokens = r->stats.cached_tokens;
    if (offsetof(edgellm_result, speculation) < r->struct_size) {
      s->spec = r->speculation;
      s->spec_off_reason = r->speculation.off_reason;
    }
    s->cv.notify_all();
  }
}

class CApi : public ::testing::Test {
 public:
  static std::string model_path() { return edgellm::test::shared_model("stories260K.gguf"); }

 protected:
  void SetUp() override {
    edgellm_runtime_params p = edgellm_runtime_default_params();
    p.n_ctx = 256;
    p.n_parallel = 4;
    p.max_queued = 8;
    ASSERT_EQ(edgellm_runtime_create(model_path().c_str(), &p, &rt_), EDGELLM_OK) << edgellm_last_error();
  }
  void TearDown() override { EXPECT_EQ(edgellm_runtime_destroy(rt_), EDGELLM_OK); }

  static edgellm_request_params greedy(Sink& sink, const char* prompt, int32_t max_tokens) {
    edgellm_request_params r = edgellm_request_default_params();
    r.prompt = prompt;
    r.sampling = greedy_sampling();
    r.max_tokens = max_tokens;
    r.ignore_eos = true;
    r.on_token = on_token;
    r.on_finish = on_finish;
    r.user_data = &sink;
    return r;
  }
  edgellm_status submit(const edgellm_request_params& r, edgellm_request_id* id = nullptr) {
    edgellm_request_id local = 0;
    return edgellm_submit(rt_, &r, id != nullptr ? id : &local);
  }
  edgellm_runtime* rt_ = nullptr;
};

// CApi's request builder for tests that open their own runtime.
struct CApiLifecycleHelper : CApi {
  using CApi::greedy;
};

TEST(CApiBasics, VersionStatusNamesAndDefaults) {
  EXPECT_EQ(edgellm_abi_version(), static_cast<uint32_t>(EDGELLM_ABI_VERSION));
  EXPECT_STREQ(edgellm_version(), "0.2.0");
  EXPECT_STREQ(edgellm_status_name(EDGELLM_ERR_BUSY), "busy");
  EXPECT_STREQ(edgellm_status_name(static_cast<edgellm_status>(999)), "unknown");
  EXPECT_STREQ(edgellm_finish_reason_name(EDGELLM_FINISH_TIMEOUT), "timeout");
  const edgellm_runtime_params sp = edgellm_runtime_default_params();
  EXPECT_EQ(sp.max_queued, 3);
  EXPECT_EQ(sp.n_parallel, 4);
  EXPECT_EQ(sp.struct_size, sizeof(edgellm_runtime_params));
  EXPECT_EQ(sp.input_policy, EDGELLM_INPUT_REFUSE);
  EXPECT_EQ(sp.max_sessions, 16);
  EXPECT_EQ(sp.recover_ms, 10000);
  const edgellm_request_params rp = edgellm_request_default_params();
  EXPECT_EQ(rp.struct_size, sizeof(edgellm_request_params));
  EXPECT_EQ(rp.deadline_ms, 15000);
  EXPECT_EQ(rp.priority, EDGELLM_PRIORITY_INTERACTIVE);
  EXPECT_EQ(rp.route, EDGELLM_ROUTE_OFF);
  EXPECT_EQ(rp.sampling, nullptr);  // NULL: edgellm_sampling_default()
  const edgellm_sampling s = edgellm_sampling_default();
  EXPECT_EQ(s.struct_size, sizeof(edgellm_sampling));
  EXPECT_FLOAT_EQ(s.temperature, 0.8f);
  EXPECT_EQ(s.n_logit_bias, 0u);
  const edgellm_router_params router = edgellm_router_default_params();
  EXPECT_EQ(router.struct_size, sizeof(edgellm_router_params));
  EXPECT_DOUBLE_EQ(router.local_threshold, 0.85);
  EXPECT_DOUBLE_EQ(router.cloud_threshold, 0.6);
  EXPECT_EQ(router.verbatim_turns, 3);
  EXPECT_EQ(router.transport, nullptr);
  EXPECT_EQ(edgellm_metrics_init().struct_size, sizeof(edgellm_metrics));
}

TEST(CApiBasics, CreateFailuresAreStatuses) {
  edgellm_runtime* s = reinterpret_cast<edgellm_runtime*>(0x1);
  EXPECT_EQ(edgellm_runtime_create(nullptr, nullptr, &s), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(s, nullptr);
  EXPECT_EQ(edgellm_runtime_create("/nonexistent/model.gguf", nullptr, &s), EDGELLM_ERR_IO);
  EXPECT_NE(std::string(edgellm_last_error()).find("model.gguf"), std::string::npos) << edgellm_last_error();
  const std::string junk = edgellm::test::temp_dir() + "/junk.gguf";
  {
    FILE* f = std::fopen(junk.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fputs("this is not a model file, just text", f);
    std::fclose(f);
  }
  EXPECT_EQ(edgellm_runtime_create(junk.c_str(), nullptr, &s), EDGELLM_ERR_INVALID_FILE);
  EXPECT_EQ(edgellm_runtime_create("x", nullptr, nullptr), EDGELLM_ERR_INVALID_ARGUMENT);
  edgellm_runtime_params p = edgellm_runtime_default_params();
  p.n_parallel = 0;
  EXPECT_EQ(edgellm_runtime_create(CApi::model_path().c_str(), &p, &s), EDGELLM_ERR_INVALID_ARGUMENT);
  p = edgellm_runtime_default_params();
  p.kv_type = static_cast<edgellm_kv_type>(77);
  EXPECT_EQ(edgellm_runtime_create(CApi::model_path().c_str(), &p, &s), EDGELLM_ERR_INVALID_ARGUMENT);
  p = edgellm_runtime_default_params();
  EXPECT_EQ(p.kv_type_v, EDGELLM_KV_SAME);
  p.kv_type_v = static_cast<edgellm_kv_type>(77);
  EXPECT_EQ(edgellm_runtime_create(CApi::model_path().c_str(), &p, &s), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(edgellm_last_error()).find("kv_type_v 77"), std::string::npos) << edgellm_last_error();
  // stories260K's heads are 8 wide: no whole 32-value Q4_0 block.
  p.kv_type_v = EDGELLM_KV_Q4_0;
  EXPECT_EQ(edgellm_runtime_create(CApi::model_path().c_str(), &p, &s), EDGELLM_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(edgellm_last_error()).find("q4_0 needs head_dim a multiple of 32"), std::string::npos)
      << edgellm_last_error();
  // tiny-zh-poems (head_dim 32) takes K and V of different types; info reports both.
  p.kv_type = EDGELLM_KV_Q8_0;
  p.n_ctx = 64;
  p.n_parallel = 1;
  ASSERT_EQ(edgellm_runtime_create(edgellm::test::shared_model("tiny-zh-poems.gguf").c_str(), &p, &s), EDGELLM_OK)
      << edgellm_last_error();
  std::string info(1 << 16, '\0');
  size_t len = 0;
  ASSERT_EQ(edgellm_model_info_json(s, info.data(), info.size(), &len), EDGELLM_OK);
  info.resize(len);
  EXPECT_NE(info.find("\"kv_type\": \"q8_0\""), std::string::npos) << info;
  EXPECT_NE(info.find("\"kv_type_v\": \"q4_0\""), std::string::npos) << info;
  ASSERT_EQ(edgellm_runtime_destroy(s), EDGELLM_OK);
  s = nullptr;
  p = edgellm_runtime_default_params();
  p.kv_budget_fraction = 1.5;
  EXPECT_EQ(edgellm_runtime_create(CApi::model_path().c_str(), &p, &s), EDGELLM_ERR_INVALID_ARGUMENT);
  p.kv_budget_fraction = 1e-15;  // less than one block of any machine's memory
  EXPECT_EQ(edgellm_runtime_create(CApi::model_path().c_str(), &p, &s), EDGELLM_ERR_OUT_OF_MEMORY);
  EXPECT_NE(std::string(edgellm_last_error()).find("out of KV memory"), std::string::npos) << edgellm_last_error();
  EXPECT_EQ(edgellm_runtime_destroy(nullptr), EDGELLM_OK);
}

// The same long prompt twice: the second takes its prefix from the KV cache (whole blocks, at
// most prompt - 1 tokens) and answers the same; the metrics account for it.
TEST_F(CApi, PrefixCacheReusesAPromptAndReportsIt) {
  const std::string prompt =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the sun. One day, she "
      "saw a big red ball in the park.";
  Sink first;
  ASSERT_EQ(submit(greedy(first, prompt.c_str(), 16)), EDGELLM_OK);
  ASSERT_TRUE(first.wait_final());
  Sink second;
  ASSERT_EQ(submit(greedy(second, prompt.c_str(), 16)), EDGELLM_OK);
  ASSERT_TRUE(second.wait_final());
  EXPECT_EQ(first.cached_tokens, 0);
  EXPECT_GE(second.cached_tokens, 16);
  EXPECT_EQ(second.tokens, first.tokens);
  const edgellm_metrics m = metrics_of(rt_);
  EXPECT_EQ(m.prompt_tokens_cached, static_cast<uint64_t>(second.cached_tokens));
  EXPECT_NEAR(m.prefix_hit_rate, static_cast<double>(m.prompt_tokens_cached) / static_cast<double>(m.prompt_tokens),
              1e-12);
  EXPECT_EQ(m.kv_blocks_used, 0);
  EXPECT_GT(m.kv_blocks_cached, 0);
  EXPECT_EQ(m.kv_blocks_used + m.kv_blocks_cached + m.kv_blocks_free, m.kv_blocks_total);
  EXPECT_GT(m.kv_pool_bytes, 0u);
}

TEST_F(CApi, StreamsAndFinishesOnce) {
  Sink sink;
  edgellm_request_id id = 0;
  ASSERT_EQ(submit(greedy(sink, "Once upon a time", 32), &id), EDGELLM_OK) << edgellm_last_error();
  EXPECT_NE(id, 0u);
  ASSERT_TRUE(sink.wait_final());
  EXPECT_EQ(sink.finals, 1);
  EXPECT_EQ(sink.reason, EDGELLM_FINISH_LENGTH);
  EXPECT_EQ(sink.status, EDGELLM_OK);
  EXPECT_EQ(sink.text, sink.streamed);
  EXPECT_EQ(sink.completion_tokens, 32);
  EXPECT_EQ(edgellm_cancel(rt_, id), EDGELLM_ERR_NOT_FOUND);
}

// Endless stream: with context_shift a request goes on past n_ctx (256) and, up to the first
// shift, says exactly what the same request without it says before it ends with LENGTH.
TEST_F(CApi, ContextShiftStreamsPastTheContext) {
  const edgellm_request_params d = edgellm_request_default_params();
  EXPECT_FALSE(d.context_shift);
  EXPECT_EQ(d.n_keep, 4);
  Sink plain;
  ASSERT_EQ(submit(greedy(plain, "Once upon a time", -1)), EDGELLM_OK) << edgellm_last_error();
  ASSERT_TRUE(plain.wait_final());
  EXPECT_EQ(plain.reason, EDGELLM_FINISH_LENGTH);
  ASSERT_GT(plain.tokens.size(), 200u);
  Sink endless;
  edgellm_request_params r = greedy(endless, "Once upon a time", 700);
  r.context_shift = true;
  r.n_keep = 1;
  ASSERT_EQ(submit(r), EDGELLM_OK) << edgellm_last_error();
  ASSERT_TRUE(endless.wait_final());
  EXPECT_EQ(endless.reason, EDGELLM_FINISH_LENGTH) << endless.error;
  EXPECT_EQ(endless.completion_tokens, 700);
  ASSERT_EQ(endless.tokens.size(), 700u);
  EXPECT_TRUE(std::equal(plain.tokens.begin(), plain.tokens.end(), endless.tokens.begin()));
  r.n_keep = -2;
  EXPECT_EQ(submit(r), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(edgellm_last_error()).find("n_keep"), std::string::npos) << edgellm_last_error();
}

TEST_F(CApi, ConcurrentSubmitFromEightThreads) {
  // Greedy references first, one at a time.
  const char* prompts[] = {"Once upon a time", "The little dog", "Lily", "Tom and his friend"};
  std::vector<std::vector<int32_t>> want;
  for (const char* p : prompts) {
    Sink s;
    ASSERT_EQ(submit(greedy(s, p, 24)), EDGELLM_OK);
    ASSERT_TRUE(s.wait_final());
    want.push_back(s.tokens);
  }
  constexpr int kThreads = 8, kPerThread = 4;
  std::vector<Sink> sinks(kThreads * kPerThread);
  std::atomic<int> accepted{0}, busy{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const int k = t * kPerThread + i;
        edgellm_request_params r = greedy(sinks[k], prompts[k % 4], 24);
        for (;;) {  // BUSY is the documented answer to a full queue: retry
          const edgellm_status st = submit(r);
          if (st == EDGELLM_OK) {
            ++accepted;
            break;
          }
          ASSERT_EQ(st, EDGELLM_ERR_BUSY);
          ++busy;
          std::this_thread::sleep_for(1ms);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int k = 0; k < kThreads * kPerThread; ++k) {
    ASSERT_TRUE(sinks[k].wait_final());
    EXPECT_EQ(sinks[k].finals, 1);
    EXPECT_EQ(sinks[k].tokens, want[static_cast<size_t>(k % 4)]) << "request " << k;
  }
  const edgellm_metrics m = metrics_of(rt_);
  EXPECT_EQ(m.busy_rejections, static_cast<uint64_t>(busy.load()));
  EXPECT_EQ(m.requests_finished, static_cast<uint64_t>(accepted.load()) + 4);
}

TEST_F(CApi, CancelMidStream) {
  Sink sink;
  edgellm_request_id id = 0;
  ASSERT_EQ(submit(greedy(sink, "Once upon a time", -1), &id), EDGELLM_OK);
  ASSERT_TRUE(sink.wait_events(4));
  ASSERT_EQ(edgellm_cancel(rt_, id), EDGELLM_OK);
  const int at_return = sink.n_events();
  ASSERT_TRUE(sink.wait_final());
  EXPECT_EQ(sink.reason, EDGELLM_FINISH_CANCELLED);
  EXPECT_LE(sink.n_events(), at_return + 1);
  EXPECT_EQ(sink.text, sink.streamed);
}

TEST_F(CApi, TokenCallbackReturningFalseCancels) {
  Sink sink;
  sink.cancel_after = 2;
  ASSERT_EQ(submit(greedy(sink, "Once upon a time", -1)), EDGELLM_OK);
  ASSERT_TRUE(sink.wait_final());
  EXPECT_EQ(sink.reason, EDGELLM_FINISH_CANCELLED);
  EXPECT_EQ(sink.tokens.size(), 3u);
}

TEST_F(CApi, DeadlineGivesTimeoutWithPartialText) {
  // Paused after some tokens, the request cannot finish by itself: its deadline ends it.
  struct Ctx {
    Sink sink;
    edgellm_runtime* rt;
  } c;
  c.rt = rt_;
  edgellm_request_params r = greedy(c.sink, "Once upon a time", -1);
  r.deadline_ms = 250;
  r.user_data = &c;
  r.on_token = [](const edgellm_token_event* ev, void* user) {
    auto* cx = static_cast<Ctx*>(user);
    if (ev->index == 3) edgellm_pause(cx->rt);  // allowed from a callback
    return on_token(ev, &cx->sink);
  };
  r.on_finish = [](const edgellm_result* res, void* user) { on_finish(res, &static_cast<Ctx*>(user)->sink); };
  ASSERT_EQ(submit(r), EDGELLM_OK);
  ASSERT_TRUE(c.sink.wait_final(10s));
  EXPECT_EQ(c.sink.reason, EDGELLM_FINISH_TIMEOUT);
  EXPECT_FALSE(c.sink.text.empty());
  EXPECT_EQ(c.sink.text, c.sink.streamed);
  EXPECT_EQ(edgellm_resume(rt_), EDGELLM_OK);
}

TEST_F(CApi, QueueFullIsBusyInUnderAMillisecond) {
  ASSERT_EQ(edgellm_pause(rt_), EDGELLM_OK);
  // n_parallel 4 requests that free sequences take at once + max_queued 8 waiting.
  std::vector<Sink> sinks(13);
  for (int i = 0; i < 12; ++i) ASSERT_EQ(submit(greedy(sinks[i], "Once", 4)), EDGELLM_OK) << i;
  // The fastest of five answers: one call may be preempted for longer than the bound on a
  // loaded machine (sanitizer builds run tests two at a time on two cores).
  const edgellm_request_params r = greedy(sinks[12], "Once", 4);
  double us = 1e9;
  for (int attempt = 0; attempt < 5; ++attempt) {
    edgellm_request_id id = 77;
    const auto t0 = std::chrono::steady_clock::now();
    const edgellm_status st = edgellm_submit(rt_, &r, &id);
    us = std::min(us, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    EXPECT_EQ(st, EDGELLM_ERR_BUSY);
    EXPECT_EQ(id, 0u);
  }
  EXPECT_LT(us, 1000.0) << "BUSY took " << us << " us";  // measured: ~10-30 us (ASan ~50 us)
  ASSERT_EQ(edgellm_resume(rt_), EDGELLM_OK);
  for (int i = 0; i < 12; ++i) ASSERT_TRUE(sinks[i].wait_final());
  EXPECT_EQ(sinks[12].finals, 0);
}

// Paused from the request's own fifth token callback, so it is certainly still running (40
// tokens): no step follows, which paused_idle reports (no sleeping); two trims make the scheduler
// run two more passes while paused, and nothing streams or steps in them. The KV stays held, and
// after resume the output equals the uninterrupted run.
TEST_F(CApi, PauseResumeKeepsTheOutput) {
  Sink ref;
  ASSERT_EQ(submit(greedy(ref, "The little dog", 40)), EDGELLM_OK);
  ASSERT_TRUE(ref.wait_final());
  Sink sink;
  sink.pause_service = rt_;
  sink.pause_at = 4;
  ASSERT_EQ(submit(greedy(sink, "The little dog", 40)), EDGELLM_OK);
  edgellm_metrics m = edgellm_metrics_init();
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  do {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "paused_idle never turned true";
    std::this_thread::sleep_for(1ms);  // polling an observable state, bounded by the deadline
    m = metrics_of(rt_);
  } while (!m.paused_idle);
  EXPECT_TRUE(m.paused);
  EXPECT_EQ(sink.n_events(), 5) << "tokens streamed after the pause";
  EXPECT_GT(m.kv_blocks_used, 0) << "pause released the KV";
  const uint64_t steps = m.steps;
  struct Trimmed {
    std::mutex mutex;
    std::condition_variable cv;
    int done = 0;
  } trimmed;
  for (int round = 1; round <= 2; ++round) {
    ASSERT_EQ(edgellm_trim(
                  rt_,
                  [](uint64_t, void* user) {
                    auto* t = static_cast<Trimmed*>(user);
                    std::lock_guard<std::mutex> lock(t->mutex);
                    ++t->done;
                    t->cv.notify_all();
                  },
                  &trimmed),
              EDGELLM_OK);
    std::unique_lock<std::mutex> lock(trimmed.mutex);
    ASSERT_TRUE(trimmed.cv.wait_for(lock, 30s, [&] { return trimmed.done == round; }));
  }
  m = metrics_of(rt_);
  EXPECT_EQ(m.steps, steps) << "a step ran while paused";
  EXPECT_EQ(sink.n_events(), 5) << "tokens streamed while paused";
  EXPECT_EQ(sink.finals, 0);
  ASSERT_EQ(edgellm_resume(rt_), EDGELLM_OK);
  ASSERT_TRUE(sink.wait_final());
  EXPECT_EQ(sink.tokens, ref.tokens);
  m = metrics_of(rt_);
  EXPECT_FALSE(m.paused_idle);
}

// Speculative decoding through the C ABI: greedy with n-gram drafts (k = 4) gives the tokens of
// greedy without, on a prompt that quotes itself (drafts are made and some kept); the stats come
// back; an unknown mode, k outside 1..8 and the draft-model mode are INVALID_ARGUMENT.
TEST_F(CApi, SpeculationGreedyEqualsPlainAndReportsStats) {
  const char* prompt = "The cat sat on the mat. The dog sat on the log. The cat sat on the mat. The dog";
  Sink plain, spec;
  ASSERT_EQ(submit(greedy(plain, prompt, 48)), EDGELLM_OK) << edgellm_last_error();
  edgellm_request_params r = greedy(spec, prompt, 48);
  EXPECT_EQ(r.speculation, nullptr);
  edgellm_spec_params sp = edgellm_spec_default_params();
  EXPECT_EQ(sp.mode, EDGELLM_SPEC_OFF);
  EXPECT_EQ(sp.draft_max, 8);
  sp.mode = EDGELLM_SPEC_NGRAM;
  sp.draft_max = 4;
  r.speculation = &sp;
  ASSERT_EQ(submit(r), EDGELLM_OK) << edgellm_last_error();
  ASSERT_TRUE(plain.wait_final());
  ASSERT_TRUE(spec.wait_final());
  EXPECT_EQ(spec.tokens, plain.tokens);
  EXPECT_EQ(spec.text, plain.text);
  EXPECT_EQ(spec.spec.struct_size, sizeof(edgellm_spec_stats));
  EXPECT_GT(spec.spec.drafted, 0);
  EXPECT_LE(spec.spec.accepted, spec.spec.drafted);
  EXPECT_EQ(spec.spec.forward_tokens, spec.spec.forwards + spec.spec.accepted);
  EXPECT_EQ(spec.spec.forward_tokens, spec.completion_tokens - 1);  // ignore_eos: the first came from the prefill
  EXPECT_EQ(spec.spec_off_reason, "");
  EXPECT_EQ(plain.spec.drafted, 0);
  EXPECT_DOUBLE_EQ(plain.spec.tokens_per_forward, 1.0);

  Sink sink;
  edgellm_request_params bad = greedy(sink, "Once", 4);
  edgellm_spec_params bsp = edgellm_spec_default_params();
  bad.speculation = &bsp;
  bsp.mode = static_cast<edgellm_spec_mode>(7);
  EXPECT_EQ(submit(bad), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(edgellm_last_error()).find("speculation.mode"), std::string::npos) << edgellm_last_error();
  bsp.mode = EDGELLM_SPEC_NGRAM;
  bsp.draft_max = 0;
  EXPECT_EQ(submit(bad), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(edgellm_last_error()).find("draft_max"), std::string::npos) << edgellm_last_error();
  bsp.struct_size = 0;
  EXPECT_EQ(submit(bad), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(edgellm_last_error()).find("struct_size"), std::string::npos) << edgellm_last_error();
  bsp = edgellm_spec_default_params();
  bsp.mode = EDGELLM_SPEC_DRAFT;
  bsp.draft_max = 4;
  EXPECT_EQ(submit(bad), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(edgellm_last_error()).find("draft model"), std::string::npos) << edgellm_last_error();
}

// A runtime opened with a draft model (edgellm_runtime_params.draft_model, appended): mode DRAFT
// gives the tokens of a plain greedy request, stories260K drafting for itself (every draft kept),
// in a batch with the plain one; a draft model with another vocabulary or "" fails the creation
// naming it.
TEST(CApiSpeculation, DraftModelRuntimeGreedyEqualsPlain) {
  edgellm_runtime_params p = edgellm_runtime_default_params();
  EXPECT_EQ(p.draft_model, nullptr);
  p.n_ctx = 256;
  p.n_parallel = 2;
  const std::string draft = CApi::model_path();
  p.draft_model = draft.c_str();
  edgellm_runtime* rt = nullptr;
  ASSERT_EQ(edgellm_runtime_create(CApi::model_path().c_str(), &p, &rt), EDGELLM_OK) << edgellm_last_error();
  const char* prompt = "Once upon a time, there was a little girl named Lily";
  Sink plain, spec;
  edgellm_request_params r = CApiLifecycleHelper::greedy(plain, prompt, 40);
  edgellm_request_id id = 0;
  ASSERT_EQ(edgellm_submit(rt, &r, &id), EDGELLM_OK) << edgellm_last_error();
  edgellm_request_params d = CApiLifecycleHelper::greedy(spec, prompt, 40);
  edgellm_spec_params sp = edgellm_spec_default_params();
  sp.mode = EDGELLM_SPEC_DRAFT;
  sp.draft_max = 4;
  d.speculation = &sp;
  ASSERT_EQ(edgellm_submit(rt, &d, &id), EDGELLM_OK) << edgellm_last_error();
  ASSERT_TRUE(plain.wait_final());
  ASSERT_TRUE(spec.wait_final());
  EXPECT_EQ(spec.status, EDGELLM_OK) << spec.error;
  EXPECT_EQ(spec.tokens, plain.tokens);
  EXPECT_EQ(spec.text, plain.text);
  EXPECT_EQ(spec.completion_tokens, 40);
  EXPECT_GT(spec.spec.drafted, 0);
  EXPECT_EQ(spec.spec.accepted, spec.spec.drafted);  // drafting for itself: always right
  EXPECT_EQ(spec.spec.forward_tokens, spec.spec.forwards + spec.spec.accepted);
  EXPECT_EQ(spec.spec_off_reason, "");
  EXPECT_EQ(plain.spec.drafted, 0);
  EXPECT_EQ(edgellm_runtime_destroy(rt), EDGELLM_OK);

  const std::string other = edgellm::test::shared_model("tiny-zh-poems.gguf");
  p.draft_model = other.c_str();
  rt = nullptr;
  EXPECT_EQ(edgellm_runtime_create(CApi::model_path().c_str(), &p, &rt), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(rt, nullptr);
  EXPECT_NE(std::string(edgellm_last_error()).find("tiny-zh-poems.gguf"), std::string::npos) << edgellm_last_error();
  p.draft_model = "";
  EXPECT_EQ(edgellm_runtime_create(CApi::model_path().c_str(), &p, &rt), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(edgellm_last_error()).find("draft_model"), std::string::npos) << edgellm_last_error();
}

TEST(CApiLifecycle, DestroyWithRequestsInFlight) {
  edgellm_runtime_params p = edgellm_runtime_default_params();
  p.n_ctx = 256;
  p.n_parallel = 2;
  p.max_queued = 6;  // all six fit even before the scheduler admits any
  edgellm_runtime* rt = nullptr;
  ASSERT_EQ(edgellm_runtime_create(CApi::model_path().c_str(), &p, &rt), EDGELLM_OK);
  std::vector<Sink> sinks(6);
  for (auto& s : sinks) {
    edgellm_request_params r = edgellm_request_default_params();
    r.prompt = "Once upon a time";
    r.max_tokens = -1;
    r.ignore_eos = true;
    r.on_token = on_token;
    r.on_finish = on_finish;
    r.user_data = &s;
    edgellm_request_id id = 0;
    ASSERT_EQ(edgellm_submit(rt, &r, &id), EDGELLM_OK);
  }
  ASSERT_TRUE(sinks[0].wait_events(2));
  ASSERT_EQ(edgellm_runtime_destroy(rt), EDGELLM_OK);  // returns: no hang
  for (auto& s : sinks) {
    EXPECT_EQ(s.finals, 1);  // delivered before destroy returned
    EXPECT_EQ(s.reason, EDGELLM_FINISH_CANCELLED);
  }
}

TEST(CApiLifecycle, DestroyFromOwnCallbackIsWrongThread) {
  edgellm_runtime* rt = nullptr;
  ASSERT_EQ(edgellm_runtime_create(CApi::model_path().c_str(), nullptr, &rt), EDGELLM_OK);
  struct Ctx {
    Sink sink;
    edgellm_runtime* rt;
    std::atomic<int> status{-1};
  } c;
  c.rt = rt;
  edgellm_request_params r = edgellm_request_default_params();
  r.prompt = "Once";
  r.max_tokens = 2;
  r.user_data = &c;
  r.on_finish = [](const edgellm_result* res, void* user) {
    auto* cx = static_cast<Ctx*>(user);
    cx->status = edgellm_runtime_destroy(cx->rt);
    on_finish(res, &cx->sink);
  };
  edgellm_request_id id = 0;
  ASSERT_EQ(edgellm_submit(rt, &r, &id), EDGELLM_OK);
  ASSERT_TRUE(c.sink.wait_final());
  EXPECT_EQ(c.status.load(), EDGELLM_ERR_WRONG_THREAD);
  EXPECT_EQ(edgellm_runtime_destroy(rt), EDGELLM_OK);
}

TEST_F(CApi, BadInputIsAStatusNeverACrash) {
  Sink sink;
  edgellm_request_id id = 5;
  const edgellm_request_params ok = greedy(sink, "Once", 4);
  EXPECT_EQ(edgellm_submit(nullptr, &ok, &id), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(id, 0u);
  EXPECT_EQ(edgellm_submit(rt_, nullptr, &id), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_submit(rt_, &ok, nullptr), EDGELLM_ERR_INVALID_ARGUMENT);

  auto expect_invalid = [&](edgellm_request_params r, const char* needle) {
    edgellm_request_id rid = 9;
    EXPECT_EQ(edgellm_submit(rt_, &r, &rid), EDGELLM_ERR_INVALID_ARGUMENT) << needle;
    EXPECT_EQ(rid, 0u);
    EXPECT_NE(std::string(edgellm_last_error()).find(needle), std::string::npos)
        << "message: " << edgellm_last_error() << " (expected to mention " << needle << ")";
  };
  edgellm_request_params r = ok;
  r.prompt = nullptr;
  expect_invalid(r, "no input");
  r = ok;
  r.prompt = "";
  expect_invalid(r, "no input");
  r = ok;
  r.prompt = "ab\xC3\x28zz";  // invalid UTF-8
  expect_invalid(r, "UTF-8");
  r = ok;
  r.prompt = "\xED\xA0\x80";  // a surrogate
  expect_invalid(r, "UTF-8");
  const edgellm_message unknown_role[] = {msg("wizard", "hi")};
  r = ok;
  r.prompt = nullptr;
  r.messages = unknown_role;
  r.n_messages = 1;
  expect_invalid(r, "role");
  const edgellm_message null_content[] = {msg("user", nullptr)};
  r.messages = null_content;
  expect_invalid(r, "content");
  const edgellm_message bad_utf8[] = {msg("user", "\xFF")};
  r.messages = bad_utf8;
  expect_invalid(r, "UTF-8");
  const edgellm_message last_assistant[] = {msg("user", "hi"), msg("assistant", "hello")};
  r.messages = last_assistant;
  r.n_messages = 2;
  expect_invalid(r, "assistant");
  r.messages = nullptr;
  expect_invalid(r, "NULL");
  r = ok;
  r.messages = unknown_role;  // prompt and messages
  r.n_messages = 1;
  expect_invalid(r, "more than one");
  const int32_t bad_ids[] = {1, 2, 1 << 30};
  r = ok;
  r.prompt = nullptr;
  r.tokens = bad_ids;
  r.n_tokens = 3;
  expect_invalid(r, "vocabulary");
  // Sampling values out of range, each named in the message.
  auto expect_bad_sampling = [&](void (*change)(edgellm_sampling&), const char* needle) {
    edgellm_sampling sampling = *greedy_sampling();
    change(sampling);
    edgellm_request_params bad = ok;
    bad.sampling = &sampling;
    expect_invalid(bad, needle);
  };
  expect_bad_sampling([](edgellm_sampling& x) { x.temperature = std::numeric_limits<float>::quiet_NaN(); }, "temperature");
  expect_bad_sampling([](edgellm_sampling& x) { x.temperature = -1; }, "temperature");
  expect_bad_sampling([](edgellm_sampling& x) { x.top_p = 7; }, "top_p");
  expect_bad_sampling([](edgellm_sampling& x) { x.top_k = -3; }, "top_k");
  expect_bad_sampling([](edgellm_sampling& x) { x.repeat_penalty = 0; }, "repeat_penalty");
  expect_bad_sampling([](edgellm_sampling& x) { x.frequency_penalty = 1e30f; }, "frequency_penalty");
  expect_bad_sampling([](edgellm_sampling& x) { x.penalty_last_n = -7; }, "penalty_last_n");
  expect_bad_sampling([](edgellm_sampling& x) { x.struct_size = 0; }, "sampling.struct_size");
  expect_bad_sampling([](edgellm_sampling& x) { x.n_logit_bias = 2; }, "logit_bias is NULL");
  static const edgellm_logit_bias outside[] = {{1 << 20, 1.0f}};
  expect_bad_sampling(
      [](edgellm_sampling& x) {
        x.logit_bias = outside;
        x.n_logit_bias = 1;
      },
      "outside the vocabulary");
  static const edgellm_logit_bias too_strong[] = {{5, 1000.0f}};
  expect_bad_sampling(
      [](edgellm_sampling& x) {
        x.logit_bias = too_strong;
        x.n_logit_bias = 1;
      },
      "logit_bias: the bias of token 5");
  r = ok;
  r.priority = static_cast<edgellm_priority>(42);
  expect_invalid(r, "priority");
  const char* stops[] = {""};
  r = ok;
  r.stop = stops;
  r.n_stop = 1;
  expect_invalid(r, "stop");
  r.stop = nullptr;
  expect_invalid(r, "stop");
  EXPECT_EQ(edgellm_cancel(nullptr, 1), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_cancel(rt_, 123456), EDGELLM_ERR_NOT_FOUND);
  EXPECT_EQ(edgellm_pause(nullptr), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_metrics_get(rt_, nullptr), EDGELLM_ERR_INVALID_ARGUMENT);
  const edgellm_metrics m = metrics_of(rt_);
  EXPECT_EQ(m.requests_submitted, 0u);  // nothing bad was queued

  // A prompt longer than the context: accepted, then an error result with CONTEXT_FULL.
  std::string longp;
  for (int i = 0; i < 200; ++i) longp += "The cat sat on the mat. ";
  Sink too_long;
  ASSERT_EQ(submit(greedy(too_long, longp.c_str(), 4)), EDGELLM_OK);
  ASSERT_TRUE(too_long.wait_final());
  EXPECT_EQ(too_long.reason, EDGELLM_FINISH_ERROR);
  EXPECT_EQ(too_long.status, EDGELLM_ERR_CONTEXT_FULL);
  EXPECT_NE(too_long.error.find("context"), std::string::npos) << too_long.error;
}

TEST_F(CApi, ChatMessagesTokenizeAndBuffers) {
  const edgellm_message chat[] = {msg("system", "You are helpful."), msg("user", "Tell me a story.")};
  size_t len = 0;
  EXPECT_EQ(edgellm_apply_template(rt_, chat, 2, true, nullptr, 0, &len), EDGELLM_ERR_BUFFER_TOO_SMALL);
  ASSERT_GT(len, 0u);
  std::string rendered(len + 1, '\0');
  ASSERT_EQ(edgellm_apply_template(rt_, chat, 2, true, rendered.data(), rendered.size(), &len), EDGELLM_OK);
  rendered.resize(len);
  EXPECT_NE(rendered.find("Tell me a story."), std::string::npos) << rendered;

  Sink sink;
  edgellm_request_params r = greedy(sink, nullptr, 8);
  r.prompt = nullptr;
  r.messages = chat;
  r.n_messages = 2;
  ASSERT_EQ(submit(r), EDGELLM_OK) << edgellm_last_error();
  ASSERT_TRUE(sink.wait_final());
  EXPECT_NE(sink.reason, EDGELLM_FINISH_ERROR) << sink.error;

  size_t n = 0;
  EXPECT_EQ(edgellm_tokenize(rt_, "Once upon a time", true, false, nullptr, 0, &n), EDGELLM_ERR_BUFFER_TOO_SMALL);
  std::vector<int32_t> ids(n);
  ASSERT_EQ(edgellm_tokenize(rt_, "Once upon a time", true, false, ids.data(), ids.size(), &n), EDGELLM_OK);
  EXPECT_EQ(edgellm_tokenize(rt_, "\xC0\x80", true, false, ids.data(), ids.size(), &n), EDGELLM_ERR_INVALID_ARGUMENT);
  char text[256];
  ASSERT_EQ(edgellm_detokenize(rt_, ids.data(), ids.size(), false, text, sizeof(text), &len), EDGELLM_OK);
  EXPECT_NE(std::string(text, len).find("Once upon a time"), std::string::npos) << text;
  const int32_t bad = -1;
  EXPECT_EQ(edgellm_detokenize(rt_, &bad, 1, false, text, sizeof(text), &len), EDGELLM_ERR_INVALID_ARGUMENT);

  ASSERT_EQ(edgellm_model_info_json(rt_, text, 4, &len), EDGELLM_ERR_BUFFER_TOO_SMALL);
  std::string info(len + 1, '\0');
  ASSERT_EQ(edgellm_model_info_json(rt_, info.data(), info.size(), &len), EDGELLM_OK);
  EXPECT_NE(info.find("\"architecture\": \"llama\""), std::string::npos) << info;
  ASSERT_EQ(edgellm_metrics_prometheus(rt_, nullptr, 0, &len), EDGELLM_ERR_BUFFER_TOO_SMALL);
  std::string prom(len + 1, '\0');
  ASSERT_EQ(edgellm_metrics_prometheus(rt_, prom.data(), prom.size(), &len), EDGELLM_OK);
  EXPECT_NE(prom.find("edgellm_requests_finished_total 1"), std::string::npos) << prom;
  EXPECT_EQ(edgellm_metrics_json(rt_, nullptr, 0, nullptr), EDGELLM_ERR_INVALID_ARGUMENT);
}

TEST_F(CApi, WarmupAndTrimCallBack) {
  struct Done {
    std::mutex m;
    std::condition_variable cv;
    int n = 0;
    bool ran = false;
    uint64_t bytes = 0;
  } d;
  ASSERT_EQ(edgellm_warmup(
                rt_,
                [](bool ran, const char*, void* u) {
                  auto* x = static_cast<Done*>(u);
                  std::lock_guard<std::mutex> lock(x->m);
                  x->ran = ran;
                  ++x->n;
                  x->cv.notify_all();
                },
                &d),
            EDGELLM_OK);
  ASSERT_EQ(edgellm_trim(
                rt_,
                [](uint64_t bytes, void* u) {
                  auto* x = static_cast<Done*>(u);
                  std::lock_guard<std::mutex> lock(x->m);
                  x->bytes = bytes;
                  ++x->n;
                  x->cv.notify_all();
                },
                &d),
            EDGELLM_OK);
  std::unique_lock<std::mutex> lock(d.m);
  ASSERT_TRUE(d.cv.wait_for(lock, 30s, [&] { return d.n == 2; }));
  EXPECT_TRUE(d.ran);
  EXPECT_GT(d.bytes, 0u);
}

}  // namespace

namespace {

std::string slurp(const std::string& path) {
  std::string out;
  if (FILE* f = std::fopen(path.c_str(), "rb")) {
    char buf[4096];
    size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) out.append(buf, n);
    std::fclose(f);
  }
  return out;
}

void spit(const std::string& path, const std::string& bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
}

// Sessions through the C ABI: request 1 saves its KV to a file; a NEW runtime (an app restart)
// continues the conversation from the file — the continuation's prompt is request 1's prompt +
// answer + new tokens — and answers exactly as a runtime without the session, having restored
// instead of prefilled. Missing, truncated, bit-flipped, other-model and other-KV-type files are
// refused by edgellm_submit with a status, nothing queued.
TEST_F(CApi, SessionSavedByOneRuntimeContinuesInAnother) {
  const std::string path = edgellm::test::temp_dir() + "/capi.kvs";
  std::remove(path.c_str());
  const std::vector<int32_t> prompt1 = {1, 400, 401, 402, 403, 404, 405, 406, 407, 408, 409, 410, 411, 412, 413,
                                        414, 415, 416, 417, 418};
  Sink first;
  edgellm_request_params r1 = greedy(first, nullptr, 12);
  r1.prompt = nullptr;
  r1.tokens = prompt1.data();
  r1.n_tokens = prompt1.size();
  r1.session_save_path = path.c_str();
  ASSERT_EQ(submit(r1), EDGELLM_OK) << edgellm_last_error();
  ASSERT_TRUE(first.wait_final());
  ASSERT_EQ(first.tokens.size(), 12u);
  const std::string saved = slurp(path);
  ASSERT_GT(saved.size(), 64u);

  std::vector<int32_t> prompt2 = prompt1;
  prompt2.insert(prompt2.end(), first.tokens.begin(), first.tokens.end());
  for (int32_t t : {300, 301, 302, 303, 304}) prompt2.push_back(t);

  auto run = [&](edgellm_runtime* rt, const char* load, Sink& sink) {
    edgellm_request_params r = greedy(sink, nullptr, 12);
    r.prompt = nullptr;
    r.tokens = prompt2.data();
    r.n_tokens = prompt2.size();
    r.session_load_path = load;
    edgellm_request_id id = 0;
    const edgellm_status st = edgellm_submit(rt, &r, &id);
    if (st == EDGELLM_OK) {
      EXPECT_TRUE(sink.wait_final());
    }
    return st;
  };
  edgellm_runtime_params p = edgellm_runtime_default_params();
  p.n_ctx = 256;
  p.n_parallel = 1;
  edgellm_runtime* fresh = nullptr;
  ASSERT_EQ(edgellm_runtime_create(model_path().c_str(), &p, &fresh), EDGELLM_OK) << edgellm_last_error();
  Sink with_session;
  ASSERT_EQ(run(fresh, path.c_str(), with_session), EDGELLM_OK) << edgellm_last_error();
  EXPECT_EQ(with_session.reason, EDGELLM_FINISH_LENGTH) << with_session.error;
  // Restored: request 1's prompt and the answer's decoded tokens (the last sampled one never was).
  EXPECT_EQ(with_session.cached_tokens, static_cast<int32_t>(prompt1.size() + first.tokens.size() - 1));
  ASSERT_EQ(edgellm_runtime_destroy(fresh), EDGELLM_OK);

  fresh = nullptr;
  ASSERT_EQ(edgellm_runtime_create(model_path().c_str(), &p, &fresh), EDGELLM_OK);
  Sink without;
  ASSERT_EQ(run(fresh, nullptr, without), EDGELLM_OK);
  EXPECT_EQ(without.cached_tokens, 0);
  EXPECT_EQ(with_session.tokens, without.tokens) << "the continued session differs from a full prefill";

  // Refusals at submit.
  Sink unused;
  EXPECT_EQ(run(fresh, (path + ".missing").c_str(), unused), EDGELLM_ERR_IO);
  spit(path, saved.substr(0, saved.size() / 2));
  EXPECT_EQ(run(fresh, path.c_str(), unused), EDGELLM_ERR_INVALID_FILE);
  EXPECT_NE(std::string(edgellm_last_error()).find("truncated"), std::string::npos) << edgellm_last_error();
  std::string flipped = saved;
  flipped[saved.size() - 100] = static_cast<char>(flipped[saved.size() - 100] ^ 1);
  spit(path, flipped);
  EXPECT_EQ(run(fresh, path.c_str(), unused), EDGELLM_ERR_INVALID_FILE);
  EXPECT_NE(std::string(edgellm_last_error()).find("checksum"), std::string::npos) << edgellm_last_error();
  ASSERT_EQ(edgellm_runtime_destroy(fresh), EDGELLM_OK);
  spit(path, saved);
  p.kv_type = EDGELLM_KV_F32;
  ASSERT_EQ(edgellm_runtime_create(model_path().c_str(), &p, &fresh), EDGELLM_OK);
  EXPECT_EQ(run(fresh, path.c_str(), unused), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(edgellm_last_error()).find("KV"), std::string::npos) << edgellm_last_error();
  ASSERT_EQ(edgellm_runtime_destroy(fresh), EDGELLM_OK);
  p.kv_type = EDGELLM_KV_F16;
  ASSERT_EQ(edgellm_runtime_create(edgellm::test::shared_model("tiny-zh-poems.gguf").c_str(), &p, &fresh),
            EDGELLM_OK);
  EXPECT_EQ(run(fresh, path.c_str(), unused), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(edgellm_last_error()).find("another model"), std::string::npos) << edgellm_last_error();
  ASSERT_EQ(edgellm_runtime_destroy(fresh), EDGELLM_OK);
  EXPECT_EQ(unused.finals, 0);
  std::remove(path.c_str());
}

}  // namespace
