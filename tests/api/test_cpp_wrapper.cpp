// The header-only C++ wrapper (include/edgellm/edgellm.hpp) as an app uses it: only
// libedgellm.so and include/, nothing internal. Streaming, BUSY as an Error with its status,
// cancel, tokenize / detokenize, a throwing callback, and that the wrapper frees the callbacks it
// hands the C ABI (every captured object is released by the time the service is closed).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "edgellm/edgellm.hpp"
#include "support/test_env.h"

namespace {

using namespace std::chrono_literals;
using edgellm::cpp::Error;
using edgellm::cpp::Request;
using edgellm::cpp::Service;

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

  Service::TokenCallback on_token() {
    return [this](const edgellm_token_event& ev) {
      std::lock_guard<std::mutex> lock(mutex);
      pieces.append(ev.text, ev.text_len);
      ++events;
      cv.notify_all();
      return true;
    };
  }
  Service::FinishCallback on_finish() {
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
    edgellm_service_params p = edgellm_service_default_params();
    p.n_ctx = 256;
    p.n_parallel = 2;
    p.max_queued = 2;
    ASSERT_NO_THROW(svc_ = Service::open(model_path(), p));
    ASSERT_TRUE(svc_);
  }
  static Request greedy(const char* prompt, int32_t max_tokens) {
    return Request::from_prompt(prompt).greedy().with_max_tokens(max_tokens).with_ignore_eos();
  }
  Service svc_;
};

TEST(CppWrapperBasics, OpenFailureIsAnErrorWithTheStatus) {
  try {
    (void)Service::open("/nonexistent/model.gguf");
    FAIL() << "open did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), EDGELLM_ERR_IO);
    EXPECT_NE(std::string(e.what()).find("model.gguf"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(edgellm::cpp::abi_compatible());
  Service empty;
  EXPECT_FALSE(empty);
  try {
    empty.pause();
    FAIL() << "an empty Service accepted a call";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), EDGELLM_ERR_INVALID_ARGUMENT);
  }
}

TEST_F(CppWrapper, StreamsAGreedyRequest) {
  Sink sink;
  const edgellm_request_id id = svc_.submit(greedy("Once upon a time", 32), sink.on_token(), sink.on_finish());
  EXPECT_NE(id, 0u);
  ASSERT_TRUE(sink.wait_final());
  EXPECT_EQ(sink.finals, 1);
  EXPECT_EQ(sink.reason, EDGELLM_FINISH_LENGTH);
  EXPECT_EQ(sink.status, EDGELLM_OK);
  EXPECT_FALSE(sink.text.empty());
  EXPECT_EQ(sink.text, sink.pieces);
  EXPECT_EQ(sink.completion_tokens, 32);
  EXPECT_FALSE(svc_.cancel(id)) << "finished requests are NOT_FOUND: false, not an exception";
  EXPECT_EQ(svc_.metrics().requests_finished, 1u);
  EXPECT_NE(svc_.metrics_json().find("\"requests_finished\""), std::string::npos);
  EXPECT_NE(svc_.metrics_prometheus().find("edgellm_requests_finished_total 1"), std::string::npos);
  EXPECT_NE(svc_.model_info_json().find("\"architecture\": \"llama\""), std::string::npos);
}

TEST_F(CppWrapper, FullQueueThrowsBusyAndFreesTheCallbacks) {
  svc_.pause();  // nothing is admitted: n_parallel (2) requests a free sequence would take, then max_queued (2) waiting
  Sink sinks[4];
  for (Sink& s : sinks) svc_.submit(greedy("Once", 4), s.on_token(), s.on_finish());
  auto witness = std::make_shared<int>(0);  // captured by the rejected request's callbacks
  std::atomic<bool> called{false};
  try {
    svc_.submit(
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
  svc_.resume();
  for (Sink& s : sinks) {
    ASSERT_TRUE(s.wait_final());
    EXPECT_EQ(s.reason, EDGELLM_FINISH_LENGTH);
  }
  EXPECT_FALSE(called);
  EXPECT_EQ(svc_.metrics().busy_rejections, 1u);
}

TEST_F(CppWrapper, CancelEndsARunningRequest) {
  // The request pauses the service from its 4th token, so it is still running (not at the end
  // of the context) whatever the machine's speed when the cancel arrives; cancellations work
  // while paused.
  Sink sink;
  auto witness = std::make_shared<int>(0);
  Service::TokenCallback record = sink.on_token();
  Service::FinishCallback finish = sink.on_finish();
  const edgellm_request_id id = svc_.submit(
      greedy("Once upon a time", -1),
      [this, record](const edgellm_token_event& ev) {
        if (ev.index == 3) svc_.pause();  // allowed from a callback
        return record(ev);
      },
      [witness, finish](const edgellm_result& r) { finish(r); });
  ASSERT_TRUE(sink.wait_events(4));
  EXPECT_TRUE(svc_.cancel(id));
  ASSERT_TRUE(sink.wait_final());
  EXPECT_EQ(sink.reason, EDGELLM_FINISH_CANCELLED);
  EXPECT_GE(sink.events, 4);
  EXPECT_LE(sink.events, 5);  // at most a final event with held-back text (token -1)
  EXPECT_EQ(sink.text, sink.pieces);
  EXPECT_FALSE(svc_.cancel(id));
  svc_.resume();
  svc_.close();  // joins the scheduler thread: the finished request's block is gone by now
  EXPECT_FALSE(svc_);
  EXPECT_EQ(witness.use_count(), 1) << "the finished request's callbacks were not freed";
}

TEST_F(CppWrapper, TokenizeDetokenizeRoundTrip) {
  const std::string text = "Once upon a time";
  const std::vector<int32_t> ids = svc_.tokenize(text, false, false);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(svc_.detokenize(ids), text);
  const std::vector<int32_t> with_bos = svc_.tokenize(text, true, false);
  EXPECT_EQ(with_bos.size(), ids.size() + 1);  // stories260K asks for BOS
  EXPECT_EQ(svc_.detokenize(with_bos, false), text);
  EXPECT_TRUE(svc_.tokenize("", false, false).empty());
  EXPECT_EQ(svc_.detokenize({}), "");
  try {
    (void)svc_.tokenize(std::string("a\0b", 3));
    FAIL() << "a NUL inside the text was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), EDGELLM_ERR_INVALID_ARGUMENT);
  }
  const std::string rendered = svc_.apply_template({{"user", "Tell me a story."}}, true);
  EXPECT_NE(rendered.find("Tell me a story."), std::string::npos) << rendered;
}

TEST_F(CppWrapper, ThrowingTokenCallbackCancels) {
  Sink sink;
  Service::TokenCallback record = sink.on_token();
  svc_.submit(
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
  svc_.warmup([&d](bool ran, const std::string&) {
    std::lock_guard<std::mutex> lock(d.m);
    d.ran = ran;
    ++d.n;
    d.cv.notify_all();
  });
  svc_.trim([&d](uint64_t bytes) {
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

}  // namespace
