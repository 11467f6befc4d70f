// Hot swap, the registry and the degradation ladder through the C ABI (libedgellm.so only):
// results name the model version that served them; a swap to a file that does not load changes
// nothing; a runtime created from a registry follows set_current (a rollback) with
// edgellm_reload_registry and refuses a tampered file; swap and reload from a callback are
// WRONG_THREAD; pressure levels move the ladder down until new requests are refused with
// DEGRADED, visible in the metrics JSON and Prometheus text; bad arguments are statuses.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "edgellm/edgellm.h"
#include "support/test_env.h"

namespace {

const char* const kStoriesSha256 = "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d";

const edgellm_sampling* greedy_sampling() {
  static const edgellm_sampling s = [] {
    edgellm_sampling g = edgellm_sampling_default();
    g.temperature = 0;
    return g;
  }();
  return &s;
}

struct Done {
  std::mutex m;
  std::condition_variable cv;
  bool finished = false;
  std::string version, text;
  edgellm_finish_reason reason = EDGELLM_FINISH_ERROR;
  // When runtime is set, on_finish tries a swap and a reload from the scheduler thread.
  edgellm_runtime* runtime = nullptr;
  edgellm_status swap_from_callback = EDGELLM_OK;
  edgellm_status reload_from_callback = EDGELLM_OK;
};

void on_finish(const edgellm_result* r, void* user) {
  auto* d = static_cast<Done*>(user);
  if (d->runtime != nullptr) {
    d->swap_from_callback = edgellm_swap_model(d->runtime, "/nonexistent.gguf", "x");
    char v[80];
    size_t len = 0;
    d->reload_from_callback = edgellm_reload_registry(d->runtime, v, sizeof v, &len);
  }
  std::lock_guard<std::mutex> lock(d->m);
  d->version = r->model_version;
  d->text.assign(r->text, r->text_len);
  d->reason = r->finish_reason;
  d->finished = true;
  d->cv.notify_all();
}

edgellm_status run(edgellm_runtime* rt, Done* d, const char* prompt = "Once upon a time") {
  edgellm_request_params p = edgellm_request_default_params();
  p.prompt = prompt;
  p.max_tokens = 8;
  p.sampling = greedy_sampling();
  p.on_finish = on_finish;
  p.user_data = d;
  edgellm_request_id id = 0;
  const edgellm_status st = edgellm_submit(rt, &p, &id);
  if (st != EDGELLM_OK) return st;
  std::unique_lock<std::mutex> lock(d->m);
  EXPECT_TRUE(d->cv.wait_for(lock, std::chrono::seconds(60), [&] { return d->finished; }));
  return EDGELLM_OK;
}

std::string json_of(edgellm_runtime* rt, edgellm_status (*fn)(edgellm_runtime*, char*, size_t, size_t*)) {
  size_t len = 0;
  fn(rt, nullptr, 0, &len);
  std::string out(len + 1, '\0');
  EXPECT_EQ(fn(rt, out.data(), out.size(), &len), EDGELLM_OK);
  out.resize(len);
  return out;
}

std::string text_of(const std::function<edgellm_status(char*, size_t, size_t*)>& f) {
  size_t len = 0;
  std::string out(4096, '\0');
  const edgellm_status st = f(out.data(), out.size(), &len);
  EXPECT_EQ(st, EDGELLM_OK) << edgellm_last_error();
  out.resize(st == EDGELLM_OK ? len : 0);
  return out;
}

TEST(CApiSwap, ResultsNameTheirVersion) {
  edgellm_runtime* rt = nullptr;
  ASSERT_EQ(edgellm_runtime_create(edgellm::test::shared_model("stories260K.gguf").c_str(), nullptr, &rt), EDGELLM_OK);
  Done before;
  ASSERT_EQ(run(rt, &before), EDGELLM_OK);
  EXPECT_EQ(before.version, "1");
  EXPECT_EQ(before.reason, EDGELLM_FINISH_LENGTH);

  const std::string junk = edgellm::test::temp_dir() + "/junk.gguf";
  std::ofstream(junk) << "not a model";
  EXPECT_EQ(edgellm_swap_model(rt, junk.c_str(), "2"), EDGELLM_ERR_INVALID_FILE);
  EXPECT_EQ(edgellm_swap_model(rt, "/no/such/file.gguf", "2"), EDGELLM_ERR_IO);
  EXPECT_EQ(edgellm_swap_model(rt, junk.c_str(), ""), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_swap_model(rt, junk.c_str(), std::string(65, 'v').c_str()), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_swap_model(nullptr, junk.c_str(), "2"), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_swap_model(rt, nullptr, "2"), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_swap_model(rt, junk.c_str(), nullptr), EDGELLM_ERR_INVALID_ARGUMENT);
  // Not created from a registry: nothing to reload from.
  char v[80];
  size_t len = 0;
  EXPECT_EQ(edgellm_reload_registry(rt, v, sizeof v, &len), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(edgellm_last_error()).find("registry"), std::string::npos) << edgellm_last_error();
  Done still;
  ASSERT_EQ(run(rt, &still), EDGELLM_OK);
  EXPECT_EQ(still.version, "1");
  EXPECT_EQ(still.text, before.text);
  EXPECT_EQ(edgellm_metrics_init().struct_size, sizeof(edgellm_metrics));
  edgellm_metrics m = edgellm_metrics_init();
  ASSERT_EQ(edgellm_metrics_get(rt, &m), EDGELLM_OK);
  EXPECT_EQ(m.model_swaps, 0u);

  ASSERT_EQ(edgellm_swap_model(rt, edgellm::test::shared_model("tiny-zh-poems.gguf").c_str(), "2"), EDGELLM_OK)
      << edgellm_last_error();
  Done after;
  after.runtime = rt;  // its on_finish tries a swap and a reload from the scheduler thread
  ASSERT_EQ(run(rt, &after), EDGELLM_OK);
  EXPECT_EQ(after.version, "2");
  EXPECT_NE(after.text, before.text);
  EXPECT_EQ(after.swap_from_callback, EDGELLM_ERR_WRONG_THREAD);
  EXPECT_EQ(after.reload_from_callback, EDGELLM_ERR_WRONG_THREAD);
  EXPECT_NE(json_of(rt, edgellm_metrics_json).find("\"model_version\": \"2\""), std::string::npos);
  ASSERT_EQ(edgellm_metrics_get(rt, &m), EDGELLM_OK);
  EXPECT_EQ(m.model_swaps, 1u);
  EXPECT_NE(json_of(rt, edgellm_model_info_json).find("\"model_version\": \"2\""), std::string::npos);
  EXPECT_EQ(edgellm_runtime_destroy(rt), EDGELLM_OK);
}

// An app's update path: install v1 and v2 into a registry, run from "tiny" (its current
// version), roll back with set_current + reload, refuse to remove the current version, and a
// tampered install is caught by the reload's digest check without changing what serves.
TEST(CApiSwap, RuntimeFollowsTheRegistry) {
  const std::string reg = edgellm::test::temp_dir() + "/capi-swap-reg";
  const std::string stories = edgellm::test::shared_model("stories260K.gguf");
  const std::string zh = edgellm::test::shared_model("tiny-zh-poems.gguf");
  char buf[4096];
  size_t len = 0;
  ASSERT_EQ(edgellm_registry_install(reg.c_str(), stories.c_str(), "tiny", "v1", kStoriesSha256, false, buf, sizeof buf, &len),
            EDGELLM_OK)
      << edgellm_last_error();
  // The reference outputs, straight from the files.
  std::string ref_stories, ref_zh;
  for (const std::string* path : {&stories, &zh}) {
    edgellm_runtime* plain = nullptr;
    ASSERT_EQ(edgellm_runtime_create(path->c_str(), nullptr, &plain), EDGELLM_OK);
    Done d;
    ASSERT_EQ(run(plain, &d), EDGELLM_OK);
    (path == &stories ? ref_stories : ref_zh) = d.text;
    ASSERT_EQ(edgellm_runtime_destroy(plain), EDGELLM_OK);
  }
  ASSERT_NE(ref_stories, ref_zh);

  edgellm_runtime_params p = edgellm_runtime_default_params();
  p.registry_dir = reg.c_str();
  edgellm_runtime* rt = nullptr;
  EXPECT_EQ(edgellm_runtime_create("nothing", &p, &rt), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(rt, nullptr);
  ASSERT_EQ(edgellm_runtime_create("tiny", &p, &rt), EDGELLM_OK) << edgellm_last_error();
  Done d1;
  ASSERT_EQ(run(rt, &d1), EDGELLM_OK);
  EXPECT_EQ(d1.version, "v1");  // the registry's version labels results
  EXPECT_EQ(d1.text, ref_stories);
  // Nothing new: the reload keeps v1 and swaps nothing.
  EXPECT_EQ(text_of([&](char* b, size_t c, size_t* l) { return edgellm_reload_registry(rt, b, c, l); }), "v1");
  EXPECT_EQ(edgellm_reload_registry(rt, nullptr, 0, nullptr), EDGELLM_OK);  // the version is optional

  // An update: v2 installed (current), reloaded.
  ASSERT_EQ(edgellm_registry_install(reg.c_str(), zh.c_str(), "tiny", "v2", nullptr, false, buf, sizeof buf, &len),
            EDGELLM_OK)
      << edgellm_last_error();
  EXPECT_EQ(text_of([&](char* b, size_t c, size_t* l) { return edgellm_reload_registry(rt, b, c, l); }), "v2");
  Done d2;
  ASSERT_EQ(run(rt, &d2), EDGELLM_OK);
  EXPECT_EQ(d2.version, "v2");
  EXPECT_EQ(d2.text, ref_zh);

  // The current version cannot be removed; a rollback (set_current) is picked up by a reload.
  EXPECT_EQ(edgellm_registry_remove(reg.c_str(), "tiny", "v2"), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_registry_set_current(reg.c_str(), "tiny", "9"), EDGELLM_ERR_NOT_FOUND);
  ASSERT_EQ(edgellm_registry_set_current(reg.c_str(), "tiny", "v1"), EDGELLM_OK) << edgellm_last_error();
  EXPECT_EQ(text_of([&](char* b, size_t c, size_t* l) { return edgellm_reload_registry(rt, b, c, l); }), "v1");
  Done d3;
  ASSERT_EQ(run(rt, &d3), EDGELLM_OK);
  EXPECT_EQ(d3.version, "v1");
  EXPECT_EQ(d3.text, ref_stories);
  const std::string list = text_of([&](char* b, size_t c, size_t* l) { return edgellm_registry_list_json(reg.c_str(), b, c, l); });
  EXPECT_NE(list.find("\"version\": \"v2\""), std::string::npos) << list;

  // v2 removed now that it is not current; then v2 again, tampered after its install: the
  // reload's digest check refuses it and v1 keeps serving.
  ASSERT_EQ(edgellm_registry_remove(reg.c_str(), "tiny", "v2"), EDGELLM_OK) << edgellm_last_error();
  EXPECT_EQ(edgellm_registry_remove(reg.c_str(), "tiny", "v2"), EDGELLM_ERR_NOT_FOUND);
  ASSERT_EQ(edgellm_registry_install(reg.c_str(), zh.c_str(), "tiny", "v3", nullptr, false, buf, sizeof buf, &len),
            EDGELLM_OK);
  const std::string v3 = text_of([&](char* b, size_t c, size_t* l) { return edgellm_registry_resolve(reg.c_str(), "tiny@v3", b, c, l); });
  {
    std::fstream f(v3, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(3000);
    f.put('\x5a');
  }
  EXPECT_EQ(edgellm_reload_registry(rt, buf, sizeof buf, &len), EDGELLM_ERR_INVALID_FILE);
  Done d4;
  ASSERT_EQ(run(rt, &d4), EDGELLM_OK);
  EXPECT_EQ(d4.version, "v1");
  EXPECT_EQ(d4.text, ref_stories);

  // Bad arguments of the registry functions.
  EXPECT_EQ(edgellm_registry_set_current(nullptr, "tiny", "v1"), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_registry_set_current(reg.c_str(), nullptr, "1"), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_registry_set_current(reg.c_str(), "tiny", nullptr), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_registry_remove(nullptr, "tiny", "1"), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_registry_remove(reg.c_str(), nullptr, "1"), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_registry_remove(reg.c_str(), "tiny", nullptr), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_reload_registry(nullptr, buf, sizeof buf, &len), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_runtime_destroy(rt), EDGELLM_OK);
}

TEST(CApiSwap, PressureRefusesNewRequests) {
  edgellm_runtime* rt = nullptr;
  ASSERT_EQ(edgellm_runtime_create(edgellm::test::shared_model("tiny-zh-poems.gguf").c_str(), nullptr, &rt), EDGELLM_OK);
  EXPECT_EQ(edgellm_set_fallback_model(rt, edgellm::test::shared_model("stories260K.gguf").c_str(), "small"), EDGELLM_OK);
  EXPECT_EQ(edgellm_set_fallback_model(rt, "/no/such.gguf", "x"), EDGELLM_ERR_IO);
  EXPECT_EQ(edgellm_set_fallback_model(nullptr, "/no/such.gguf", "x"), EDGELLM_ERR_INVALID_ARGUMENT);
  edgellm_pressure bad{sizeof(edgellm_pressure), 5, 0, false};
  EXPECT_EQ(edgellm_set_pressure(rt, &bad), EDGELLM_ERR_INVALID_ARGUMENT);
  bad = {sizeof(edgellm_pressure), 0, -1, false};
  EXPECT_EQ(edgellm_set_pressure(rt, &bad), EDGELLM_ERR_INVALID_ARGUMENT);
  bad = {0, 3, 0, false};  // not from sizeof: refused, not read
  EXPECT_EQ(edgellm_set_pressure(rt, &bad), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(edgellm_last_error()).find("struct_size"), std::string::npos) << edgellm_last_error();
  EXPECT_EQ(edgellm_set_pressure(rt, nullptr), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_set_pressure(nullptr, &bad), EDGELLM_ERR_INVALID_ARGUMENT);

  const edgellm_pressure critical{sizeof(edgellm_pressure), 3, 0, false};
  ASSERT_EQ(edgellm_set_pressure(rt, &critical), EDGELLM_OK);
  // The ladder applies its steps on its own thread: poll until requests are refused.
  edgellm_status st = EDGELLM_OK;
  for (int i = 0; i < 500 && st != EDGELLM_ERR_DEGRADED; ++i) {
    Done d;
    st = run(rt, &d);
    if (st == EDGELLM_OK) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(st, EDGELLM_ERR_DEGRADED);
  EXPECT_NE(std::string(edgellm_last_error()).find("degraded: memory pressure critical"), std::string::npos)
      << edgellm_last_error();
  EXPECT_STREQ(edgellm_status_name(EDGELLM_ERR_DEGRADED), "degraded");
  const std::string d = json_of(rt, edgellm_degradation_json);
  EXPECT_NE(d.find("\"applied_rung\": \"refuse_new\""), std::string::npos) << d;
  EXPECT_NE(d.find("\"model_version\": \"small\""), std::string::npos) << d;
  EXPECT_NE(d.find("\"refused_requests\": 1"), std::string::npos) << d;
  EXPECT_NE(json_of(rt, edgellm_metrics_json).find("\"degradation\": {"), std::string::npos);
  const std::string prom = json_of(rt, edgellm_metrics_prometheus);
  EXPECT_NE(prom.find("edgellm_degradation_rung 5"), std::string::npos) << prom;
  EXPECT_NE(prom.find("edgellm_degradation_entered_total{rung=\"smaller_model\"} 1"), std::string::npos);
  // The struct's counters agree with the JSON.
  edgellm_metrics m = edgellm_metrics_init();
  ASSERT_EQ(edgellm_metrics_get(rt, &m), EDGELLM_OK);
  EXPECT_EQ(m.degradation_rung, 5);
  EXPECT_EQ(m.degraded_refusals, 1u);
  EXPECT_GE(m.degradation_steps, 5u);
  EXPECT_GE(m.model_swaps, 1u);  // the smaller model's rung swapped it in
  EXPECT_EQ(edgellm_set_fallback_model(rt, nullptr, nullptr), EDGELLM_OK);  // NULL: none
  EXPECT_EQ(edgellm_runtime_destroy(rt), EDGELLM_OK);
}

}  // namespace
