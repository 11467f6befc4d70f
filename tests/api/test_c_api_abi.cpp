// The rules of edgellm.h's "Growing without breaking" and "Errors", as a program built against
// another header sees them (libedgellm.so only):
//   - an "old" program's smaller edgellm_metrics gets exactly its prefix written (the bytes past
//     it keep their sentinel), a "newer" program's larger one is told the size written;
//   - an input struct is read only up to its struct_size (the fields past it take the defaults,
//     whatever bytes lie there), and one larger than the library's is read up to the library's;
//   - a struct_size of 0 is INVALID_ARGUMENT for every struct a call takes, messages included;
//   - NULL in every pointer a function requires is INVALID_ARGUMENT, never a crash.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "edgellm/edgellm.h"
#include "support/test_env.h"

namespace {

class CApiAbi : public ::testing::Test {
 protected:
  void SetUp() override {
    edgellm_runtime_params p = edgellm_runtime_default_params();
    p.n_ctx = 128;
    p.n_parallel = 1;
    ASSERT_EQ(edgellm_runtime_create(edgellm::test::shared_model("stories260K.gguf").c_str(), &p, &rt_), EDGELLM_OK)
        << edgellm_last_error();
  }
  void TearDown() override { EXPECT_EQ(edgellm_runtime_destroy(rt_), EDGELLM_OK); }

  // One greedy request, waited for; returns its text.
  std::string run(const edgellm_request_params& base) {
    struct Done {
      std::mutex m;
      std::condition_variable cv;
      bool done = false;
      std::string text;
    } d;
    edgellm_request_params r = base;
    r.on_finish = [](const edgellm_result* res, void* u) {
      auto* x = static_cast<Done*>(u);
      std::lock_guard<std::mutex> lock(x->m);
      x->text.assign(res->text, res->text_len);
      x->done = true;
      x->cv.notify_all();
    };
    r.user_data = &d;
    edgellm_request_id id = 0;
    EXPECT_EQ(edgellm_submit(rt_, &r, &id), EDGELLM_OK) << edgellm_last_error();
    std::unique_lock<std::mutex> lock(d.m);
    EXPECT_TRUE(d.cv.wait_for(lock, std::chrono::seconds(60), [&] { return d.done; }));
    return d.text;
  }

  edgellm_runtime* rt_ = nullptr;
};

TEST_F(CApiAbi, MetricsWritesOnlyTheCallersPrefix) {
  edgellm_request_params r = edgellm_request_default_params();
  r.prompt = "Once";
  r.max_tokens = 3;
  run(r);
  const edgellm_metrics full = [&] {
    edgellm_metrics m = edgellm_metrics_init();
    EXPECT_EQ(edgellm_metrics_get(rt_, &m), EDGELLM_OK);
    return m;
  }();
  EXPECT_EQ(full.requests_finished, 1u);

  // An "old" program: its struct ends before model_swaps (an ABI-4-like layout with a size).
  constexpr size_t kOld = offsetof(edgellm_metrics, model_swaps);
  std::vector<unsigned char> buf(sizeof(edgellm_metrics) + 32, 0xAB);
  const uint32_t old_size = kOld;
  std::memcpy(buf.data(), &old_size, sizeof old_size);
  ASSERT_EQ(edgellm_metrics_get(rt_, reinterpret_cast<edgellm_metrics*>(buf.data())), EDGELLM_OK);
  edgellm_metrics got{};
  std::memcpy(&got, buf.data(), kOld);
  EXPECT_EQ(got.struct_size, kOld);
  EXPECT_EQ(got.requests_finished, full.requests_finished);
  EXPECT_EQ(got.kv_blocks_total, full.kv_blocks_total);
  EXPECT_EQ(got.n_threads, full.n_threads);
  for (size_t i = kOld; i < buf.size(); ++i) ASSERT_EQ(buf[i], 0xAB) << "byte " << i << " past the caller's struct was written";

  // A "newer" program: a larger struct; the library fills its own size and says so.
  std::fill(buf.begin(), buf.end(), 0xCD);
  const uint32_t newer = sizeof(edgellm_metrics) + 32;
  std::memcpy(buf.data(), &newer, sizeof newer);
  ASSERT_EQ(edgellm_metrics_get(rt_, reinterpret_cast<edgellm_metrics*>(buf.data())), EDGELLM_OK);
  uint32_t written = 0;
  std::memcpy(&written, buf.data(), sizeof written);
  EXPECT_EQ(written, sizeof(edgellm_metrics));
  for (size_t i = sizeof(edgellm_metrics); i < buf.size(); ++i) ASSERT_EQ(buf[i], 0xCD) << "byte " << i;

  // 0 and a size that cannot hold a field: refused, nothing written.
  for (uint32_t bad : {0u, 4u}) {
    std::fill(buf.begin(), buf.end(), 0xEE);
    std::memcpy(buf.data(), &bad, sizeof bad);
    EXPECT_EQ(edgellm_metrics_get(rt_, reinterpret_cast<edgellm_metrics*>(buf.data())), EDGELLM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(edgellm_last_error()).find("struct_size"), std::string::npos) << edgellm_last_error();
    for (size_t i = sizeof bad; i < buf.size(); ++i) ASSERT_EQ(buf[i], 0xEE);
  }
}

// Input structs: the fields past struct_size are never read (here they hold values that would be
// refused), and a struct larger than the library's is read up to the library's size.
TEST_F(CApiAbi, InputStructsAreReadUpToTheirSize) {
  edgellm_sampling greedy = edgellm_sampling_default();
  greedy.temperature = 0;
  edgellm_request_params r = edgellm_request_default_params();
  r.prompt = "Once upon a time";
  r.max_tokens = 8;
  r.sampling = &greedy;
  const std::string reference = run(r);
  ASSERT_FALSE(reference.empty());

  // An older sampling struct: it ends before logit_bias; the bytes there would be refused.
  edgellm_sampling old = greedy;
  old.struct_size = offsetof(edgellm_sampling, logit_bias);
  old.logit_bias = nullptr;
  old.n_logit_bias = 5;  // "NULL but n_logit_bias > 0" if it were read
  r.sampling = &old;
  EXPECT_EQ(run(r), reference);

  // An older request struct: it ends before the sessions; garbage past it is not read.
  struct {
    edgellm_request_params p;
  } older;
  older.p = r;
  older.p.sampling = &greedy;
  older.p.struct_size = offsetof(edgellm_request_params, session_id);
  older.p.session_id = "";                                   // "" would be refused
  older.p.route = static_cast<edgellm_route>(77);            // unknown if read
  // The callbacks lie past that size too, so this request runs without them: wait on the
  // metrics instead.
  edgellm_request_id id = 0;
  ASSERT_EQ(edgellm_submit(rt_, &older.p, &id), EDGELLM_OK) << edgellm_last_error();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    edgellm_metrics m = edgellm_metrics_init();
    ASSERT_EQ(edgellm_metrics_get(rt_, &m), EDGELLM_OK);
    if (m.requests_finished == 3) break;
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the request without callbacks did not finish";
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // polling an observable state
  }

  // A newer program's larger runtime params: read up to the library's size (the extra bytes,
  // whatever they hold, are not).
  std::vector<unsigned char> big(sizeof(edgellm_runtime_params) + 64, 0xFF);
  edgellm_runtime_params p = edgellm_runtime_default_params();
  p.n_ctx = 64;
  p.n_parallel = 1;
  p.struct_size = static_cast<uint32_t>(big.size());
  std::memcpy(big.data(), &p, sizeof p);
  edgellm_runtime* other = nullptr;
  ASSERT_EQ(edgellm_runtime_create(edgellm::test::shared_model("stories260K.gguf").c_str(),
                                   reinterpret_cast<edgellm_runtime_params*>(big.data()), &other),
            EDGELLM_OK)
      << edgellm_last_error();
  EXPECT_EQ(edgellm_runtime_destroy(other), EDGELLM_OK);

  // An older runtime params struct: it ends before the sessions; -5 there would be refused.
  edgellm_runtime_params small = edgellm_runtime_default_params();
  small.n_ctx = 64;
  small.struct_size = offsetof(edgellm_runtime_params, max_sessions);
  small.max_sessions = -5;
  small.recover_ms = -5;
  ASSERT_EQ(edgellm_runtime_create(edgellm::test::shared_model("stories260K.gguf").c_str(), &small, &other), EDGELLM_OK)
      << edgellm_last_error();
  EXPECT_EQ(edgellm_runtime_destroy(other), EDGELLM_OK);
}

TEST_F(CApiAbi, StructSizeZeroIsInvalidArgument) {
  const std::string model = edgellm::test::shared_model("stories260K.gguf");
  auto expect_struct_size_refused = [](edgellm_status st, const char* what) {
    EXPECT_EQ(st, EDGELLM_ERR_INVALID_ARGUMENT) << what;
    EXPECT_NE(std::string(edgellm_last_error()).find("struct_size"), std::string::npos) << what << ": " << edgellm_last_error();
  };
  edgellm_runtime_params rp = edgellm_runtime_default_params();
  rp.struct_size = 0;
  edgellm_runtime* other = reinterpret_cast<edgellm_runtime*>(0x1);
  expect_struct_size_refused(edgellm_runtime_create(model.c_str(), &rp, &other), "runtime params");
  EXPECT_EQ(other, nullptr);

  edgellm_request_params r = edgellm_request_default_params();
  r.prompt = "Once";
  r.struct_size = 0;
  edgellm_request_id id = 9;
  expect_struct_size_refused(edgellm_submit(rt_, &r, &id), "request params");
  EXPECT_EQ(id, 0u);

  edgellm_sampling s = edgellm_sampling_default();
  s.struct_size = 0;
  r = edgellm_request_default_params();
  r.prompt = "Once";
  r.sampling = &s;
  expect_struct_size_refused(edgellm_submit(rt_, &r, &id), "sampling");

  edgellm_message m{};
  m.role = "user";
  m.content = "hi";  // struct_size left 0
  r = edgellm_request_default_params();
  r.messages = &m;
  r.n_messages = 1;
  expect_struct_size_refused(edgellm_submit(rt_, &r, &id), "messages");
  size_t len = 0;
  expect_struct_size_refused(edgellm_apply_template(rt_, &m, 1, true, nullptr, 0, &len), "apply_template messages");

  edgellm_router_params router = edgellm_router_default_params();
  router.struct_size = 0;
  expect_struct_size_refused(edgellm_set_router(rt_, &router), "router params");

  edgellm_pressure pressure{};  // struct_size 0
  pressure.memory_level = 3;
  expect_struct_size_refused(edgellm_set_pressure(rt_, &pressure), "pressure");

  edgellm_metrics metrics{};
  expect_struct_size_refused(edgellm_metrics_get(rt_, &metrics), "metrics");
  edgellm_metrics after = edgellm_metrics_init();
  ASSERT_EQ(edgellm_metrics_get(rt_, &after), EDGELLM_OK);
  EXPECT_EQ(after.requests_submitted, 0u);  // nothing was queued
  EXPECT_EQ(after.degradation_rung, 0);     // the pressure was not applied
}

// Every pointer a function requires, NULL: INVALID_ARGUMENT with a message, never a crash. (The
// functions that accept a NULL say so in edgellm.h; those cases are checked to be OK here too.)
TEST_F(CApiAbi, NullPointersAreInvalidArgument) {
  edgellm_runtime* rt = rt_;
  char buf[64];
  size_t len = 0;
  int32_t tokens[8];
  const edgellm_message msg{sizeof(edgellm_message), "user", "hi", nullptr, 0, nullptr};
  const edgellm_request_params req = [] {
    edgellm_request_params r = edgellm_request_default_params();
    r.prompt = "Once";
    return r;
  }();
  edgellm_request_id id = 0;
  const edgellm_pressure pressure{sizeof(edgellm_pressure), 0, 0, false};
  const edgellm_router_params router = edgellm_router_default_params();
  edgellm_metrics metrics = edgellm_metrics_init();
  const std::string reg = edgellm::test::temp_dir() + "/abi-null-reg";
  const std::string model = edgellm::test::shared_model("stories260K.gguf");
  const char* m = model.c_str();
  const char* r = reg.c_str();
  const std::vector<std::pair<const char*, std::function<edgellm_status()>>> calls = {
      {"runtime_create model", [&] {
         edgellm_runtime* o = nullptr;
         return edgellm_runtime_create(nullptr, nullptr, &o);
       }},
      {"runtime_create out", [&] { return edgellm_runtime_create(m, nullptr, nullptr); }},
      {"submit runtime", [&] { return edgellm_submit(nullptr, &req, &id); }},
      {"submit params", [&] { return edgellm_submit(rt, nullptr, &id); }},
      {"submit out_id", [&] { return edgellm_submit(rt, &req, nullptr); }},
      {"cancel", [&] { return edgellm_cancel(nullptr, 1); }},
      {"pause", [&] { return edgellm_pause(nullptr); }},
      {"resume", [&] { return edgellm_resume(nullptr); }},
      {"trim", [&] { return edgellm_trim(nullptr, nullptr, nullptr); }},
      {"warmup", [&] { return edgellm_warmup(nullptr, nullptr, nullptr); }},
      {"session_import runtime", [&] { return edgellm_session_import(nullptr, "a", "x", 1, nullptr); }},
      {"session_import id", [&] { return edgellm_session_import(rt, nullptr, "x", 1, nullptr); }},
      {"session_import bytes", [&] { return edgellm_session_import(rt, "a", nullptr, 1, nullptr); }},
      {"session_export runtime", [&] { return edgellm_session_export(nullptr, "a", buf, sizeof buf, &len); }},
      {"session_export id", [&] { return edgellm_session_export(rt, nullptr, buf, sizeof buf, &len); }},
      {"session_delete runtime", [&] { return edgellm_session_delete(nullptr, "a"); }},
      {"session_delete id", [&] { return edgellm_session_delete(rt, nullptr); }},
      {"session_list runtime", [&] { return edgellm_session_list_json(nullptr, buf, sizeof buf, &len); }},
      {"session_list length", [&] { return edgellm_session_list_json(rt, buf, sizeof buf, nullptr); }},
      {"session_load_file runtime", [&] { return edgellm_session_load_file(nullptr, "a", "/x", nullptr); }},
      {"session_load_file id", [&] { return edgellm_session_load_file(rt, nullptr, "/x", nullptr); }},
      {"session_load_file path", [&] { return edgellm_session_load_file(rt, "a", nullptr, nullptr); }},
      {"session_save_file runtime", [&] { return edgellm_session_save_file(nullptr, "a", "/x"); }},
      {"session_save_file id", [&] { return edgellm_session_save_file(rt, nullptr, "/x"); }},
      {"session_save_file path", [&] { return edgellm_session_save_file(rt, "a", nullptr); }},
      {"model_info runtime", [&] { return edgellm_model_info_json(nullptr, buf, sizeof buf, &len); }},
      {"model_info length", [&] { return edgellm_model_info_json(rt, buf, sizeof buf, nullptr); }},
      {"tokenize runtime", [&] { return edgellm_tokenize(nullptr, "a", true, false, tokens, 8, &len); }},
      {"tokenize text", [&] { return edgellm_tokenize(rt, nullptr, true, false, tokens, 8, &len); }},
      {"tokenize n_tokens", [&] { return edgellm_tokenize(rt, "a", true, false, tokens, 8, nullptr); }},
      {"detokenize runtime", [&] { return edgellm_detokenize(nullptr, tokens, 1, false, buf, sizeof buf, &len); }},
      {"detokenize tokens", [&] { return edgellm_detokenize(rt, nullptr, 1, false, buf, sizeof buf, &len); }},
      {"detokenize length", [&] {
         const int32_t one = 1;
         return edgellm_detokenize(rt, &one, 1, false, buf, sizeof buf, nullptr);
       }},
      {"apply_template runtime", [&] { return edgellm_apply_template(nullptr, &msg, 1, true, buf, sizeof buf, &len); }},
      {"apply_template messages", [&] { return edgellm_apply_template(rt, nullptr, 1, true, buf, sizeof buf, &len); }},
      {"apply_template length", [&] { return edgellm_apply_template(rt, &msg, 1, true, buf, sizeof buf, nullptr); }},
      {"swap_model runtime", [&] { return edgellm_swap_model(nullptr, m, "2"); }},
      {"swap_model path", [&] { return edgellm_swap_model(rt, nullptr, "2"); }},
      {"swap_model version", [&] { return edgellm_swap_model(rt, m, nullptr); }},
      {"reload_registry runtime", [&] { return edgellm_reload_registry(nullptr, buf, sizeof buf, &len); }},
      {"registry_install dir", [&] { return edgellm_registry_install(nullptr, m, "a", "1", nullptr, false, buf, sizeof buf, &len); }},
      {"registry_install file", [&] { return edgellm_registry_install(r, nullptr, "a", "1", nullptr, false, buf, sizeof buf, &len); }},
      {"registry_install name", [&] { return edgellm_registry_install(r, m, nullptr, "1", nullptr, false, buf, sizeof buf, &len); }},
      {"registry_install version", [&] { return edgellm_registry_install(r, m, "a", nullptr, nullptr, false, buf, sizeof buf, &len); }},
      {"registry_install length", [&] { return edgellm_registry_install(r, m, "a", "1", nullptr, false, buf, sizeof buf, nullptr); }},
      {"registry_resolve dir", [&] { return edgellm_registry_resolve(nullptr, "a", buf, sizeof buf, &len); }},
      {"registry_resolve name", [&] { return edgellm_registry_resolve(r, nullptr, buf, sizeof buf, &len); }},
      {"registry_resolve length", [&] { return edgellm_registry_resolve(r, "a", buf, sizeof buf, nullptr); }},
      {"registry_list dir", [&] { return edgellm_registry_list_json(nullptr, buf, sizeof buf, &len); }},
      {"registry_list length", [&] { return edgellm_registry_list_json(r, buf, sizeof buf, nullptr); }},
      {"registry_set_current dir", [&] { return edgellm_registry_set_current(nullptr, "a", "1"); }},
      {"registry_set_current name", [&] { return edgellm_registry_set_current(r, nullptr, "1"); }},
      {"registry_set_current version", [&] { return edgellm_registry_set_current(r, "a", nullptr); }},
      {"registry_remove dir", [&] { return edgellm_registry_remove(nullptr, "a", "1"); }},
      {"registry_remove name", [&] { return edgellm_registry_remove(r, nullptr, "1"); }},
      {"registry_remove version", [&] { return edgellm_registry_remove(r, "a", nullptr); }},
      {"plan request", [&] { return edgellm_plan_json(nullptr, buf, sizeof buf, &len); }},
      {"plan length", [&] { return edgellm_plan_json("{}", buf, sizeof buf, nullptr); }},
      {"pack_model path", [&] { return edgellm_pack_model(nullptr, nullptr, 0); }},
      {"set_pressure runtime", [&] { return edgellm_set_pressure(nullptr, &pressure); }},
      {"set_pressure pressure", [&] { return edgellm_set_pressure(rt, nullptr); }},
      {"set_fallback_model runtime", [&] { return edgellm_set_fallback_model(nullptr, m, "x"); }},
      {"degradation runtime", [&] { return edgellm_degradation_json(nullptr, buf, sizeof buf, &len); }},
      {"degradation length", [&] { return edgellm_degradation_json(rt, buf, sizeof buf, nullptr); }},
      {"cloud_complete call", [&] { return edgellm_cloud_complete(nullptr, 200, "x", 1, nullptr); }},
      {"set_router runtime", [&] { return edgellm_set_router(nullptr, &router); }},
      {"set_router params", [&] { return edgellm_set_router(rt, nullptr); }},
      {"metrics_get runtime", [&] { return edgellm_metrics_get(nullptr, &metrics); }},
      {"metrics_get out", [&] { return edgellm_metrics_get(rt, nullptr); }},
      {"metrics_json runtime", [&] { return edgellm_metrics_json(nullptr, buf, sizeof buf, &len); }},
      {"metrics_json length", [&] { return edgellm_metrics_json(rt, buf, sizeof buf, nullptr); }},
      {"metrics_prometheus runtime", [&] { return edgellm_metrics_prometheus(nullptr, buf, sizeof buf, &len); }},
      {"metrics_prometheus length", [&] { return edgellm_metrics_prometheus(rt, buf, sizeof buf, nullptr); }},
  };
  for (const auto& [what, call] : calls) {
    EXPECT_EQ(call(), EDGELLM_ERR_INVALID_ARGUMENT) << what;
    EXPECT_STRNE(edgellm_last_error(), "") << what << ": no message";
  }
  // The NULLs edgellm.h allows.
  EXPECT_EQ(edgellm_runtime_destroy(nullptr), EDGELLM_OK);
  EXPECT_EQ(edgellm_set_fallback_model(rt, nullptr, nullptr), EDGELLM_OK);
  EXPECT_EQ(edgellm_trim(rt, nullptr, nullptr), EDGELLM_OK);
  EXPECT_EQ(edgellm_warmup(rt, nullptr, nullptr), EDGELLM_OK);
  EXPECT_EQ(edgellm_tokenize(rt, "Once", true, false, nullptr, 0, &len), EDGELLM_ERR_BUFFER_TOO_SMALL);  // a size query
  EXPECT_EQ(edgellm_metrics_json(rt, nullptr, 0, &len), EDGELLM_ERR_BUFFER_TOO_SMALL);
  edgellm_set_log_callback(nullptr, nullptr, EDGELLM_LOG_WARN);  // the default sink
  EXPECT_STREQ(edgellm_status_name(static_cast<edgellm_status>(-1)), "unknown");
  EXPECT_STREQ(edgellm_finish_reason_name(static_cast<edgellm_finish_reason>(42)), "unknown");
}

}  // namespace
