// The device-fitness functions of the C ABI, as an app calls them (libedgellm.so only):
// install a model into a registry (verified, the old version kept on a bad digest), resolve it
// to a verified path, create a runtime from that path, plan over the registry, and the
// refusals (NULLs, bad JSON, bad digests, a tampered file) with statuses and no crash.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>
#include <functional>
#include <string>

#include "edgellm/edgellm.h"
#include "support/test_env.h"

namespace {

std::string call_json(edgellm_status* st, const std::function<edgellm_status(char*, size_t, size_t*)>& f) {
  size_t len = 0;
  *st = f(nullptr, 0, &len);
  if (*st != EDGELLM_ERR_BUFFER_TOO_SMALL && *st != EDGELLM_OK) return {};
  std::string out(len + 1, '\0');
  *st = f(out.data(), out.size(), &len);
  out.resize(len);
  return out;
}

TEST(CApiDevice, RegistryInstallResolveListAndServe) {
  const std::string reg = edgellm::test::temp_dir() + "/capi-reg";
  const std::string stories = edgellm::test::shared_model("stories260K.gguf");
  edgellm_status st;
  std::string manifest = call_json(&st, [&](char* b, size_t c, size_t* l) {
    return edgellm_registry_install(reg.c_str(), stories.c_str(), "tiny", "1",
                                    "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d", false, b, c, l);
  });
  ASSERT_EQ(st, EDGELLM_OK) << edgellm_last_error();
  EXPECT_NE(manifest.find("\"sha256\": \"270cba1b"), std::string::npos) << manifest;

  // A bad digest: INVALID_FILE, nothing installed, version 1 still current.
  const std::string zh = edgellm::test::shared_model("tiny-zh-poems.gguf");
  size_t len = 0;
  char small[8];
  EXPECT_EQ(edgellm_registry_install(reg.c_str(), zh.c_str(), "tiny", "2", std::string(64, 'b').c_str(), false, small,
                                     sizeof small, &len),
            EDGELLM_ERR_INVALID_FILE);
  EXPECT_NE(std::string(edgellm_last_error()).find("SHA-256 mismatch"), std::string::npos);
  EXPECT_EQ(edgellm_registry_install(reg.c_str(), zh.c_str(), "tiny", "2", "xyz", false, small, sizeof small, &len),
            EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_registry_install(nullptr, zh.c_str(), "tiny", "2", nullptr, false, small, sizeof small, &len),
            EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_registry_install(reg.c_str(), zh.c_str(), "../x", "2", nullptr, false, small, sizeof small, &len),
            EDGELLM_ERR_INVALID_ARGUMENT);

  const std::string path = call_json(&st, [&](char* b, size_t c, size_t* l) {
    return edgellm_registry_resolve(reg.c_str(), "tiny", b, c, l);
  });
  ASSERT_EQ(st, EDGELLM_OK) << edgellm_last_error();
  EXPECT_NE(path.find("tiny@1.gguf"), std::string::npos);
  edgellm_runtime* rt = nullptr;
  ASSERT_EQ(edgellm_runtime_create(path.c_str(), nullptr, &rt), EDGELLM_OK) << edgellm_last_error();
  const std::string info = call_json(&st, [&](char* b, size_t c, size_t* l) { return edgellm_model_info_json(rt, b, c, l); });
  EXPECT_NE(info.find("\"memory\": {"), std::string::npos) << info;
  EXPECT_NE(info.find("\"total_bytes\""), std::string::npos);
  EXPECT_EQ(edgellm_runtime_destroy(rt), EDGELLM_OK);

  const std::string list = call_json(&st, [&](char* b, size_t c, size_t* l) {
    return edgellm_registry_list_json(reg.c_str(), b, c, l);
  });
  ASSERT_EQ(st, EDGELLM_OK);
  EXPECT_NE(list.find("\"current\": true"), std::string::npos) << list;

  // Tampering with the installed file is caught before the next load.
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(2000);
    f.put('\x11');
  }
  EXPECT_EQ(edgellm_registry_resolve(reg.c_str(), "tiny", small, sizeof small, &len), EDGELLM_ERR_INVALID_FILE);
  EXPECT_EQ(edgellm_registry_resolve(reg.c_str(), "nothing", small, sizeof small, &len), EDGELLM_ERR_NOT_FOUND);
}

TEST(CApiDevice, PlanJson) {
  const std::string stories = edgellm::test::shared_model("stories260K.gguf");
  const std::string zh = edgellm::test::shared_model("tiny-zh-poems.gguf");
  const std::string req = "{\"device\": \"phone-4gb\", \"models\": [\"" + stories + "\", \"" + zh +
                          "\"], \"max_ctx\": 2048, \"min_ctx\": 256, \"power_mode\": \"efficiency\"}";
  edgellm_status st;
  const std::string plan = call_json(&st, [&](char* b, size_t c, size_t* l) { return edgellm_plan_json(req.c_str(), b, c, l); });
  ASSERT_EQ(st, EDGELLM_OK) << edgellm_last_error();
  EXPECT_NE(plan.find("\"choice\": {\"model\": \"" + zh), std::string::npos) << plan;
  EXPECT_NE(plan.find("\"decode_on_efficiency_cores\": true"), std::string::npos) << plan;
  // A device given inline, too small for anything: OK with a null choice.
  const std::string tiny = "{\"device\": {\"ram_total_mib\": 64, \"app_limit_mib\": 2, \"clusters\": [{\"cores\": 1}]},"
                           " \"models\": [\"" + stories + "\"]}";
  const std::string none = call_json(&st, [&](char* b, size_t c, size_t* l) { return edgellm_plan_json(tiny.c_str(), b, c, l); });
  ASSERT_EQ(st, EDGELLM_OK) << edgellm_last_error();
  EXPECT_NE(none.find("\"choice\": null"), std::string::npos) << none;
  size_t len = 0;
  for (const char* bad : {"{", "[]", "{}", "{\"models\": [1]}", "{\"models\": [\"x\"], \"max_ctx\": \"big\"}",
                          "{\"models\": [\"x\"], \"power_mode\": \"turbo\"}", "{\"device\": \"phone-1gb\", \"models\": [\"x\"]}"}) {
    EXPECT_NE(edgellm_plan_json(bad, nullptr, 0, &len), EDGELLM_OK) << bad;
    EXPECT_NE(edgellm_plan_json(bad, nullptr, 0, &len), EDGELLM_ERR_BUFFER_TOO_SMALL) << bad;
  }
  EXPECT_EQ(edgellm_plan_json(nullptr, nullptr, 0, &len), EDGELLM_ERR_INVALID_ARGUMENT);
  // "draft_model": a draft model beside every candidate, counted in each configuration.
  const std::string with_draft = "{\"device\": \"phone-4gb\", \"models\": [\"" + stories + "\"], \"draft_model\": \"" +
                                 stories + "\"}";
  const std::string drafted =
      call_json(&st, [&](char* b, size_t c, size_t* l) { return edgellm_plan_json(with_draft.c_str(), b, c, l); });
  ASSERT_EQ(st, EDGELLM_OK) << edgellm_last_error();
  EXPECT_NE(drafted.find("\"draft_model\": \"" + stories + "\""), std::string::npos) << drafted;
  EXPECT_EQ(drafted.find("\"draft_bytes\": 0,"), std::string::npos) << drafted;  // counted in every configuration
  const std::string bad_draft = "{\"models\": [\"" + stories + "\"], \"draft_model\": 5}";
  EXPECT_EQ(edgellm_plan_json(bad_draft.c_str(), nullptr, 0, &len), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(edgellm_last_error()).find("draft_model"), std::string::npos) << edgellm_last_error();
  const std::string missing_draft = "{\"models\": [\"" + stories + "\"], \"draft_model\": \"/no/draft.gguf\"}";
  EXPECT_NE(edgellm_plan_json(missing_draft.c_str(), nullptr, 0, &len), EDGELLM_OK);
  EXPECT_NE(std::string(edgellm_last_error()).find("/no/draft.gguf"), std::string::npos) << edgellm_last_error();
}

}  // namespace

namespace {

// A greedy answer through the C ABI; the finish callback copies the text.
std::string greedy_answer(edgellm_runtime* rt) {
  struct Done {
    std::string text;
    std::atomic<bool> finished{false};
  } done;
  edgellm_request_params r = edgellm_request_default_params();
  r.prompt = "Once upon a time";
  edgellm_sampling greedy = edgellm_sampling_default();
  greedy.temperature = 0;
  r.sampling = &greedy;
  r.max_tokens = 24;
  r.user_data = &done;
  r.on_finish = [](const edgellm_result* res, void* u) {
    auto* d = static_cast<Done*>(u);
    d->text.assign(res->text, res->text_len);
    d->finished.store(true, std::memory_order_release);
  };
  edgellm_request_id id = 0;
  if (edgellm_submit(rt, &r, &id) != EDGELLM_OK) return "<submit failed>";
  while (!done.finished.load(std::memory_order_acquire)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return done.text;
}

TEST(CApiDevice, PowerModesSetThreadsPerPhaseAndKeepTheAnswer) {
  const std::string stories = edgellm::test::shared_model("stories260K.gguf");
  edgellm_runtime_params p = edgellm_runtime_default_params();
  EXPECT_EQ(p.power_mode, EDGELLM_POWER_NONE);
  p.n_ctx = 128;
  p.n_threads = 1;
  p.n_threads_batch = 1;
  edgellm_runtime* rt = nullptr;
  ASSERT_EQ(edgellm_runtime_create(stories.c_str(), &p, &rt), EDGELLM_OK) << edgellm_last_error();
  const std::string reference = greedy_answer(rt);
  ASSERT_FALSE(reference.empty());
  edgellm_runtime_destroy(rt);

  for (edgellm_power_mode mode : {EDGELLM_POWER_PERFORMANCE, EDGELLM_POWER_BALANCED, EDGELLM_POWER_EFFICIENCY}) {
    p = edgellm_runtime_default_params();
    p.n_ctx = 128;
    p.power_mode = mode;
    p.n_threads_batch = 2;  // explicit: wins over the mode; decode threads come from the mode
    ASSERT_EQ(edgellm_runtime_create(stories.c_str(), &p, &rt), EDGELLM_OK) << edgellm_last_error();
    EXPECT_EQ(greedy_answer(rt), reference) << "mode " << mode;
    edgellm_metrics m = edgellm_metrics_init();
    ASSERT_EQ(edgellm_metrics_get(rt, &m), EDGELLM_OK);
    EXPECT_EQ(m.n_threads_batch, 2);
    EXPECT_GE(m.n_threads, 1);
    edgellm_status st;
    const std::string json = call_json(&st, [&](char* b, size_t c, size_t* l) { return edgellm_metrics_json(rt, b, c, l); });
    EXPECT_NE(json.find("\"decode_placement\": \"cpus "), std::string::npos) << json;
    if (mode == EDGELLM_POWER_EFFICIENCY) {
      EXPECT_NE(json.find("nice 10"), std::string::npos) << json;
    }
    if (m.thread_priority_denied > 0) {  // performance asks for nice -5: granted with CAP_SYS_NICE, else noted
      EXPECT_NE(json.find("not permitted"), std::string::npos) << json;
    }
    edgellm_runtime_destroy(rt);
  }

  p = edgellm_runtime_default_params();
  p.power_mode = static_cast<edgellm_power_mode>(7);
  EXPECT_EQ(edgellm_runtime_create(stories.c_str(), &p, &rt), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(edgellm_last_error()).find("power_mode"), std::string::npos);
}

}  // namespace
