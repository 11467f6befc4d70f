// Hot swap and the degradation ladder through the C ABI (libedgellm.so only): results name the
// model version that served them; a swap to a file that does not load changes nothing; a swap
// from a callback is WRONG_THREAD; pressure levels move the ladder down until new requests are
// refused with DEGRADED, visible in the metrics JSON and Prometheus text; bad arguments are
// statuses.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>

#include "edgellm/edgellm.h"
#include "support/test_env.h"

namespace {

struct Done {
  std::mutex m;
  std::condition_variable cv;
  bool finished = false;
  std::string version, text;
  edgellm_finish_reason reason = EDGELLM_FINISH_ERROR;
  edgellm_status swap_from_callback = EDGELLM_OK;
  edgellm_service* service = nullptr;
};

void on_finish(const edgellm_result* r, void* user) {
  auto* d = static_cast<Done*>(user);
  if (d->service != nullptr) d->swap_from_callback = edgellm_swap_model(d->service, "/nonexistent.gguf", "x");
  std::lock_guard<std::mutex> lock(d->m);
  d->version = r->model_version;
  d->text.assign(r->text, r->text_len);
  d->reason = r->finish_reason;
  d->finished = true;
  d->cv.notify_all();
}

edgellm_status run(edgellm_service* s, Done* d, const char* prompt = "Once upon a time") {
  edgellm_request_params p = edgellm_request_default_params();
  p.prompt = prompt;
  p.max_tokens = 8;
  p.sampling.temperature = 0;
  p.on_finish = on_finish;
  p.user_data = d;
  edgellm_request_id id = 0;
  const edgellm_status st = edgellm_submit(s, &p, &id);
  if (st != EDGELLM_OK) return st;
  std::unique_lock<std::mutex> lock(d->m);
  d->cv.wait(lock, [&] { return d->finished; });
  return EDGELLM_OK;
}

std::string json_of(edgellm_service* s, edgellm_status (*fn)(edgellm_service*, char*, size_t, size_t*)) {
  size_t len = 0;
  fn(s, nullptr, 0, &len);
  std::string out(len + 1, '\0');
  EXPECT_EQ(fn(s, out.data(), out.size(), &len), EDGELLM_OK);
  out.resize(len);
  return out;
}

TEST(CApiSwap, ResultsNameTheirVersion) {
  edgellm_service* s = nullptr;
  ASSERT_EQ(edgellm_service_create(edgellm::test::shared_model("stories260K.gguf").c_str(), nullptr, &s), EDGELLM_OK);
  Done before;
  ASSERT_EQ(run(s, &before), EDGELLM_OK);
  EXPECT_EQ(before.version, "1");
  EXPECT_EQ(before.reason, EDGELLM_FINISH_LENGTH);

  const std::string junk = edgellm::test::temp_dir() + "/junk.gguf";
  std::ofstream(junk) << "not a model";
  EXPECT_EQ(edgellm_swap_model(s, junk.c_str(), "2"), EDGELLM_ERR_INVALID_FILE);
  EXPECT_EQ(edgellm_swap_model(s, "/no/such/file.gguf", "2"), EDGELLM_ERR_IO);
  EXPECT_EQ(edgellm_swap_model(s, junk.c_str(), ""), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_swap_model(nullptr, junk.c_str(), "2"), EDGELLM_ERR_INVALID_ARGUMENT);
  Done still;
  ASSERT_EQ(run(s, &still), EDGELLM_OK);
  EXPECT_EQ(still.version, "1");
  EXPECT_EQ(still.text, before.text);

  ASSERT_EQ(edgellm_swap_model(s, edgellm::test::shared_model("tiny-zh-poems.gguf").c_str(), "2"), EDGELLM_OK)
      << edgellm_last_error();
  Done after;
  after.service = s;  // its on_finish tries a swap from the scheduler thread
  ASSERT_EQ(run(s, &after), EDGELLM_OK);
  EXPECT_EQ(after.version, "2");
  EXPECT_NE(after.text, before.text);
  EXPECT_EQ(after.swap_from_callback, EDGELLM_ERR_WRONG_THREAD);
  EXPECT_NE(json_of(s, edgellm_metrics_json).find("\"model_version\": \"2\""), std::string::npos);
  EXPECT_EQ(edgellm_service_destroy(s), EDGELLM_OK);
}

TEST(CApiSwap, PressureRefusesNewRequests) {
  edgellm_service* s = nullptr;
  ASSERT_EQ(edgellm_service_create(edgellm::test::shared_model("tiny-zh-poems.gguf").c_str(), nullptr, &s), EDGELLM_OK);
  EXPECT_EQ(edgellm_set_fallback_model(s, edgellm::test::shared_model("stories260K.gguf").c_str(), "small"), EDGELLM_OK);
  EXPECT_EQ(edgellm_set_fallback_model(s, "/no/such.gguf", "x"), EDGELLM_ERR_IO);
  edgellm_pressure bad{5, 0, false};
  EXPECT_EQ(edgellm_set_pressure(s, &bad), EDGELLM_ERR_INVALID_ARGUMENT);
  bad = {0, -1, false};
  EXPECT_EQ(edgellm_set_pressure(s, &bad), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_set_pressure(s, nullptr), EDGELLM_ERR_INVALID_ARGUMENT);

  edgellm_pressure critical{3, 0, false};
  ASSERT_EQ(edgellm_set_pressure(s, &critical), EDGELLM_OK);
  // The ladder applies its steps on its own thread: poll until requests are refused.
  edgellm_status st = EDGELLM_OK;
  for (int i = 0; i < 500 && st != EDGELLM_ERR_DEGRADED; ++i) {
    Done d;
    st = run(s, &d);
    if (st == EDGELLM_OK) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(st, EDGELLM_ERR_DEGRADED);
  EXPECT_NE(std::string(edgellm_last_error()).find("degraded: memory pressure critical"), std::string::npos)
      << edgellm_last_error();
  EXPECT_STREQ(edgellm_status_name(EDGELLM_ERR_DEGRADED), "degraded");
  const std::string d = json_of(s, edgellm_degradation_json);
  EXPECT_NE(d.find("\"applied_rung\": \"refuse_new\""), std::string::npos) << d;
  EXPECT_NE(d.find("\"model_version\": \"small\""), std::string::npos) << d;
  EXPECT_NE(d.find("\"refused_requests\": 1"), std::string::npos) << d;
  EXPECT_NE(json_of(s, edgellm_metrics_json).find("\"degradation\": {"), std::string::npos);
  const std::string prom = json_of(s, edgellm_metrics_prometheus);
  EXPECT_NE(prom.find("edgellm_degradation_rung 5"), std::string::npos) << prom;
  EXPECT_NE(prom.find("edgellm_degradation_entered_total{rung=\"smaller_model\"} 1"), std::string::npos);
  EXPECT_EQ(edgellm_service_destroy(s), EDGELLM_OK);
}

}  // namespace
