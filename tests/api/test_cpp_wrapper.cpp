// The header-only C++ wrapper (include/edgellm/edgellm.hpp) as an app uses it: only
// libedgellm.so and include/, nothing internal. Streaming, BUSY as an Error with its status,
// cancel, tokenize / detokenize, a throwing callback, and that the wrapper frees the callbacks it
// hands the C ABI (every captured object is released by the time the runtime is closed);
// sessions moved between two runtimes, the router with a std::function transport (answered,
// dropped, thrown), the registry and swap, pressure, metrics, plan and pack.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "edgellm/edgellm.hpp"
#include "support/test_env.h"

namespace {

using namespace std::chrono_literals;
using edgellm::cpp::Error;
using edgellm::cpp::Request;
using edgellm::cpp::Runtime;

// One request's events, filled on the scheduler thread.
struct Sink {
  std::mutex mutex;
  std::condition_variable cv;
  std::string pieces;  // the event texts, concatenated
  int events = 0;
  int finals = 0;
  edgellm_finish_reason reason = EDGELLM_FINISH_ERROR;
  edgellm_status status = EDGELLM_ERR_INTERNAL;
  std::string text;
  int32_t completion_tokens = 0;

  Runtime::TokenCallback on_token() {
    return [this](const edgellm_token_event& ev) {
      std::lock_guard<std::mutex> lock(mutex);
      pieces.append(ev.text, ev.text_len);
      ++events;
      cv.notify_all();
      return true;
    };
  }
  Runtime::FinishCallback on_finish() {
    return [this](const edgellm_result& r) {
      std::lock_guard<std::mutex> lock(mutex);
      ++finals;
      reason = r.finish_reason;
      status = r.status;
      text.assign(r.text, r.text_len);
      completion_tokens = r.stats.completion_tokens;
      cv.notify_all();
    };
  }
  bool wait_final() {
    std::unique_lock<std::mutex> lock(mutex);
    return cv.wait_for(lock, 60s, [&] { return finals > 0; });
  }
  bool wait_events(int n) {
    std::unique_lock<std::mutex> lock(mutex);
    return cv.wait_for(lock, 60s, [&] { return events >= n || finals > 0; });
  }
};

class CppWrapper : public ::testing::Test {
 protected:
  static std::string model_path() { return edgellm::test::shared_model("stories260K.gguf"); }
  void SetUp() override {
    edgellm_runtime_params p = edgellm_runtime_default_params();
    p.n_ctx = 256;
    p.n_parallel = 2;
    p.max_queued = 2;
    ASSERT_NO_THROW(rt_ = Runtime::open(model_path(), p));
    ASSERT_TRUE(rt_);
  }
  static Request greedy(const char* prompt, int32_t max_tokens) {
    return Request::from_prompt(prompt).greedy().with_max_tokens(max_tokens).with_ignore_eos();
  }
  Runtime rt_;
};

TEST(CppWrapperBasics, OpenFailureIsAnErrorWithTheStatus) {
  try {
    (void)Runtime::open("/nonexistent/model.gguf");
    FAIL() << "open did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), EDGELLM_ERR_IO);
    EXPECT_NE(std::string(e.what()).find("model.gguf"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(edgellm::cpp::abi_compatible());
  Runtime empty;
  EXPECT_FALSE(empty);
  try {
    empty.pause();
    FAIL() << "an empty Runtime accepted a call";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), EDGELLM_ERR_INVALID_ARGUMENT);
  }
}

TEST_F(CppWrapper, StreamsAGreedyRequest) {
  Sink sink;
  const edgellm_request_id id = rt_.submit(greedy("Once upon a time", 32), sink.on_token(), sink.on_finish());
  EXPECT_NE(id, 0u);
  ASSERT_TRUE(sink.wait_final());
  EXPECT_EQ(sink.finals, 1);
  EXPECT_EQ(sink.reason, EDGELLM_FINISH_LENGTH);
  EXPECT_EQ(sink.status, EDGELLM_OK);
  EXPECT_FALSE(sink.text.empty());
  EXPECT_EQ(sink.text, sink.pieces);
  EXPECT_EQ(sink.completion_tokens, 32);
  EXPECT_FALSE(rt_.cancel(id)) << "finished requests are NOT_FOUND: false, not an exception";
  EXPECT_EQ(rt_.metrics().requests_finished, 1u);
  EXPECT_NE(rt_.metrics_json().find("\"requests_finished\""), std::string::npos);
  EXPECT_NE(rt_.metrics_prometheus().find("edgellm_requests_finished_total 1"), std::string::npos);
  EXPECT_NE(rt_.model_info_json().find("\"architecture\": \"llama\""), std::string::npos);
}

// classify: the C call's probabilities (softmax of the returned logprobs) and choice; a repeated
// label throws INVALID_ARGUMENT.
TEST_F(CppWrapper, ClassifyReturnsTheSoftmaxOfTheLabelsLogprobs) {
  edgellm_classify_params p = edgellm_classify_default_params();
  p.raw = true;
  const std::vector<std::string> labels = {" girl", " boy", " big red ball"};
  const auto c = rt_.classify("Once upon a time, there was a little", labels, p);
  ASSERT_EQ(c.probabilities.size(), 3u);
  double max = c.logprobs[0];
  for (double v : c.logprobs) max = std::max(max, v);
  double z = 0;
  for (double v : c.logprobs) z += std::exp(v - max);
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(c.probabilities[i], std::exp(c.logprobs[i] - max) / z, 1e-12);
  EXPECT_EQ(c.index, std::max_element(c.probabilities.begin(), c.probabilities.end()) - c.probabilities.begin());
  EXPECT_GT(c.label_tokens[2], c.label_tokens[0]);
  try {
    (void)rt_.classify("t", {" a", " a"});
    FAIL() << "a repeated label was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), EDGELLM_ERR_INVALID_ARGUMENT);
  }
}

TEST_F(CppWrapper, FullQueueThrowsBusyAndFreesTheCallbacks) {
  rt_.pause();  // nothing is admitted: n_parallel (2) requests a free sequence would take, then max_queued (2) waiting
  Sink sinks[4];
  for (Sink& s : sinks) rt_.submit(greedy("Once", 4), s.on_token(), s.on_finish());
  auto witness = std::make_shared<int>(0);  // captured by the rejected request's callbacks
  std::atomic<bool> called{false};
  try {
    rt_.submit(
        greedy("Once", 4),
        [witness, &called](const edgellm_token_event&) {
          called = true;
          return true;
        },
        [witness, &called](const edgellm_result&) { called = true; });
    FAIL() << "a fifth request fit two sequences and a queue of two";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), EDGELLM_ERR_BUSY) << e.what();
  }
  EXPECT_EQ(witness.use_count(), 1) << "the rejected request's callbacks were not freed";
  rt_.resume();
  for (Sink& s : sinks) {
    ASSERT_TRUE(s.wait_final());
    EXPECT_EQ(s.reason, EDGELLM_FINISH_LENGTH);
  }
  EXPECT_FALSE(called);
  EXPECT_EQ(rt_.metrics().busy_rejections, 1u);
}

TEST_F(CppWrapper, CancelEndsARunningRequest) {
  // The request pauses the runtime from its 4th token, so it is still running (not at the end
  // of the context) whatever the machine's speed when the cancel arrives; cancellations work
  // while paused.
  Sink sink;
  auto witness = std::make_shared<int>(0);
  Runtime::TokenCallback record = sink.on_token();
  Runtime::FinishCallback finish = sink.on_finish();
  const edgellm_request_id id = rt_.submit(
      greedy("Once upon a time", -1),
      [this, record](const edgellm_token_event& ev) {
        if (ev.index == 3) rt_.pause();  // allowed from a callback
        return record(ev);
      },
      [witness, finish](const edgellm_result& r) { finish(r); });
  ASSERT_TRUE(sink.wait_events(4));
  EXPECT_TRUE(rt_.cancel(id));
  ASSERT_TRUE(sink.wait_final());
  EXPECT_EQ(sink.reason, EDGELLM_FINISH_CANCELLED);
  EXPECT_GE(sink.events, 4);
  EXPECT_LE(sink.events, 5);  // at most a final event with held-back text (token -1)
  EXPECT_EQ(sink.text, sink.pieces);
  EXPECT_FALSE(rt_.cancel(id));
  rt_.resume();
  rt_.close();  // joins the scheduler thread: the finished request's block is gone by now
  EXPECT_FALSE(rt_);
  EXPECT_EQ(witness.use_count(), 1) << "the finished request's callbacks were not freed";
}

TEST_F(CppWrapper, TokenizeDetokenizeRoundTrip) {
  const std::string text = "Once upon a time";
  const std::vector<int32_t> ids = rt_.tokenize(text, false, false);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(rt_.detokenize(ids), text);
  const std::vector<int32_t> with_bos = rt_.tokenize(text, true, false);
  EXPECT_EQ(with_bos.size(), ids.size() + 1);  // stories260K asks for BOS
  EXPECT_EQ(rt_.detokenize(with_bos, false), text);
  EXPECT_TRUE(rt_.tokenize("", false, false).empty());
  EXPECT_EQ(rt_.detokenize({}), "");
  try {
    (void)rt_.tokenize(std::string("a\0b", 3));
    FAIL() << "a NUL inside the text was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), EDGELLM_ERR_INVALID_ARGUMENT);
  }
  const std::string rendered = rt_.apply_template({{"user", "Tell me a story."}}, true);
  EXPECT_NE(rendered.find("Tell me a story."), std::string::npos) << rendered;
}

TEST_F(CppWrapper, ThrowingTokenCallbackCancels) {
  Sink sink;
  Runtime::TokenCallback record = sink.on_token();
  rt_.submit(
      greedy("Once upon a time", -1),
      [record](const edgellm_token_event& ev) -> bool {
        record(ev);
        if (ev.index == 2) throw std::runtime_error("the app's callback failed");
        return true;
      },
      sink.on_finish());
  ASSERT_TRUE(sink.wait_final());
  EXPECT_EQ(sink.reason, EDGELLM_FINISH_CANCELLED);
  EXPECT_EQ(sink.events, 3);
  EXPECT_EQ(sink.text, sink.pieces);
}

TEST_F(CppWrapper, TrimAndWarmupCallBackOnce) {
  struct Done {
    std::mutex m;
    std::condition_variable cv;
    int n = 0;
    bool ran = false;
    uint64_t bytes = 0;
  } d;
  rt_.warmup([&d](bool ran, const std::string&) {
    std::lock_guard<std::mutex> lock(d.m);
    d.ran = ran;
    ++d.n;
    d.cv.notify_all();
  });
  rt_.trim([&d](uint64_t bytes) {
    std::lock_guard<std::mutex> lock(d.m);
    d.bytes = bytes;
    ++d.n;
    d.cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(d.m);
  ASSERT_TRUE(d.cv.wait_for(lock, 30s, [&] { return d.n == 2; }));
  EXPECT_TRUE(d.ran);
  EXPECT_GT(d.bytes, 0u);
}

// Sessions: kept by id in one runtime, exported, imported into a second, continued there as a
// third runtime that prefills everything answers; files; NOT_FOUND as empty / false.
TEST(CppWrapperRuntime, SessionsMoveBetweenRuntimes) {
  edgellm_runtime_params p = edgellm_runtime_default_params();
  p.n_ctx = 256;
  p.n_parallel = 1;
  const std::string model = edgellm::test::shared_model("stories260K.gguf");
  Runtime a = Runtime::open(model, p), b = Runtime::open(model, p), c = Runtime::open(model, p);
  const std::vector<int32_t> prompt = {1, 400, 401, 402, 403, 404, 405, 406, 407, 408};
  auto answer = [](Runtime& rt, Request r) {
    Sink sink;
    std::vector<int32_t> tokens;
    std::mutex m;
    rt.submit(
        std::move(r.greedy().with_max_tokens(8).with_ignore_eos()),
        [&](const edgellm_token_event& ev) {
          std::lock_guard<std::mutex> lock(m);
          if (ev.token >= 0) tokens.push_back(ev.token);
          return true;
        },
        sink.on_finish());
    EXPECT_TRUE(sink.wait_final());
    std::lock_guard<std::mutex> lock(m);
    return tokens;
  };
  const std::vector<int32_t> first = answer(a, Request::from_tokens(prompt).with_session_id("conv"));
  ASSERT_EQ(first.size(), 8u);
  const std::optional<std::string> bytes = a.export_session("conv");
  ASSERT_TRUE(bytes.has_value());
  EXPECT_FALSE(a.export_session("other").has_value());
  EXPECT_NE(a.sessions_json().find("\"id\": \"conv\""), std::string::npos) << a.sessions_json();
  EXPECT_EQ(b.import_session("conv", *bytes), static_cast<int32_t>(prompt.size() + first.size() - 1));
  std::vector<int32_t> turn2 = prompt;
  turn2.insert(turn2.end(), first.begin(), first.end());
  turn2.push_back(300);
  EXPECT_EQ(answer(b, Request::from_tokens(turn2).with_session_id("conv")), answer(c, Request::from_tokens(turn2)));
  const std::string path = edgellm::test::temp_dir() + "/wrapper.kvs";
  EXPECT_TRUE(b.save_session_file("conv", path));
  EXPECT_FALSE(b.save_session_file("other", path));
  EXPECT_GT(c.load_session_file("loaded", path), 0);
  EXPECT_TRUE(c.delete_session("loaded"));
  EXPECT_FALSE(c.delete_session("loaded"));
  try {
    (void)c.import_session("x", "not a session");
    FAIL() << "garbage bytes were imported";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), EDGELLM_ERR_INVALID_FILE) << e.what();
  }
  EXPECT_EQ(a.metrics().sessions, 1);
}

// The router with a std::function transport: answered from another thread, dropped (the
// CloudCall's destructor fails it: the local answer with the reason, not a wait for the timeout),
// thrown (the same). The transports live until close().
TEST(CppWrapperRuntime, RouterWithAStdFunctionTransport) {
  edgellm_runtime_params p = edgellm_runtime_default_params();
  p.n_ctx = 256;
  Runtime rt = Runtime::open(edgellm::test::shared_model("stories260K.gguf"), p);
  const Request chat = Request::from_messages({{"user", "Tell me a story."}}).greedy().with_max_tokens(12);
  struct Outcome {
    Sink sink;
    std::string route, reason, version;
  };
  auto run = [&](edgellm_route route) {
    auto o = std::make_shared<Outcome>();
    Runtime::FinishCallback inner = o->sink.on_finish();
    rt.submit(Request(chat).with_route(route), {}, [o, inner](const edgellm_result& r) {
      o->route = r.route.route;
      o->reason = r.route.reason;
      o->version = r.model_version;
      inner(r);
    });
    EXPECT_TRUE(o->sink.wait_final());
    return o;
  };
  const std::string local_text = run(EDGELLM_ROUTE_OFF)->sink.text;

  std::vector<std::thread> answering;
  std::mutex answering_mutex;
  edgellm::cpp::RouterConfig config;
  config.local_threshold = 1;
  config.cloud_threshold = 1;
  config.cloud_model = "m";
  config.transport = [&](edgellm::cpp::CloudCall call) {
    EXPECT_EQ(call.tier(), "small");
    EXPECT_NE(call.body().find("Tell me a story."), std::string::npos);
    std::lock_guard<std::mutex> lock(answering_mutex);
    answering.emplace_back([c = std::move(call)]() mutable {
      c.complete(200, R"({"choices": [{"message": {"content": "from the cloud"}, "finish_reason": "stop"}]})");
      EXPECT_TRUE(c.answered());
      EXPECT_THROW(c.fail("twice"), Error);
    });
  };
  rt.set_router(config);
  auto cloud = run(EDGELLM_ROUTE_AUTO);
  EXPECT_EQ(cloud->route, "cloud");
  EXPECT_EQ(cloud->sink.text, "from the cloud");
  EXPECT_EQ(cloud->version, "cloud:m");

  config.transport = [](edgellm::cpp::CloudCall) {};  // dropped at once
  rt.set_router(config);
  auto dropped = run(EDGELLM_ROUTE_AUTO);
  EXPECT_EQ(dropped->route, "local");
  EXPECT_EQ(dropped->sink.text, local_text);
  EXPECT_NE(dropped->reason.find("the transport dropped the call"), std::string::npos) << dropped->reason;

  config.transport = [](edgellm::cpp::CloudCall) { throw std::runtime_error("the app's transport failed"); };
  rt.set_router(config);
  auto thrown = run(EDGELLM_ROUTE_AUTO);
  EXPECT_EQ(thrown->route, "local");
  EXPECT_NE(thrown->reason.find("the transport dropped the call"), std::string::npos) << thrown->reason;

  config.local_threshold = 0.5;
  config.cloud_threshold = 0.9;
  EXPECT_THROW(rt.set_router(config), Error);
  const edgellm_metrics m = rt.metrics();
  EXPECT_EQ(m.routed_cloud, 1u);
  EXPECT_EQ(m.cloud_failures, 2u);
  rt.close();
  for (std::thread& t : answering) t.join();
}

// The registry's free functions, a runtime opened from it, reload, swap; pressure and the
// ladder's JSON; plan and pack_model's refusals.
TEST(CppWrapperRuntime, RegistrySwapPressurePlan) {
  namespace reg = edgellm::cpp::registry;
  const std::string dir = edgellm::test::temp_dir() + "/wrapper-registry";
  const std::string stories = edgellm::test::shared_model("stories260K.gguf");
  const std::string zh = edgellm::test::shared_model("tiny-zh-poems.gguf");
  EXPECT_NE(reg::install(dir, stories, "tiny", "a").find("\"version\": \"a\""), std::string::npos);
  EXPECT_NE(reg::resolve(dir, "tiny").find("tiny@a.gguf"), std::string::npos);
  edgellm_runtime_params p = edgellm_runtime_default_params();
  p.registry_dir = dir.c_str();
  Runtime rt = Runtime::open("tiny", p);
  Sink s1;
  rt.submit(Request::from_prompt("Once").greedy().with_max_tokens(4), {}, s1.on_finish());
  ASSERT_TRUE(s1.wait_final());
  reg::install(dir, zh, "tiny", "b");
  EXPECT_EQ(rt.reload_registry(), "b");
  reg::set_current(dir, "tiny", "a");
  EXPECT_EQ(rt.reload_registry(), "a");
  reg::remove(dir, "tiny", "b");
  EXPECT_EQ(reg::list_json(dir).find("\"version\": \"b\""), std::string::npos);
  try {
    reg::remove(dir, "tiny", "b");
    FAIL() << "removed twice";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), EDGELLM_ERR_NOT_FOUND);
  }
  rt.swap_model(zh, "swapped");
  EXPECT_NE(rt.model_info_json().find("\"model_version\": \"swapped\""), std::string::npos);
  EXPECT_EQ(rt.metrics().model_swaps, 3u);

  rt.set_fallback_model(stories, "small");
  rt.set_pressure(3);
  EXPECT_NE(rt.degradation_json().find("\"rungs\""), std::string::npos);
  EXPECT_THROW(rt.set_pressure(7), Error);
  rt.clear_fallback_model();

  const std::string plan = edgellm::cpp::plan_json("{\"device\": \"phone-4gb\", \"models\": [\"" + zh + "\"]}");
  EXPECT_NE(plan.find("\"choice\": {"), std::string::npos) << plan;
  try {
    edgellm::cpp::pack_model(stories, std::string());  // "" is refused, not read as "beside the model"
    FAIL() << "pack_dir \"\" accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), EDGELLM_ERR_INVALID_ARGUMENT);
  }
  EXPECT_EQ(edgellm::cpp::version(), "0.2.0");
}

// The log handler receives the library's lines (here: a refused swap's warning) on any thread.
TEST(CppWrapperRuntime, LogHandlerAndMetricsStruct) {
  std::mutex m;
  std::vector<std::string> lines;
  edgellm::cpp::set_log_handler(
      [&](edgellm_log_level, std::string_view line) {
        std::lock_guard<std::mutex> lock(m);
        lines.emplace_back(line);
      },
      EDGELLM_LOG_DEBUG);
  Runtime rt = Runtime::open(edgellm::test::shared_model("stories260K.gguf"));
  const edgellm_metrics metrics = rt.metrics();
  EXPECT_EQ(metrics.struct_size, sizeof(edgellm_metrics));
  EXPECT_GE(metrics.n_threads, 1);
  rt.close();
  edgellm::cpp::set_log_handler({});
  std::lock_guard<std::mutex> lock(m);
  EXPECT_FALSE(lines.empty()) << "no log line at debug level during a load";
}

}  // namespace
