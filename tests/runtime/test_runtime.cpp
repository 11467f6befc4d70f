// The Runtime (runtime/runtime.h) as a whole, each property against an independent reference:
//   - sessions by id: a conversation continued by id prefills only its new turn (cached_tokens)
//     and answers exactly what a fresh runtime answers to the whole conversation; export ->
//     import into a second runtime continues it the same way; a session of another model is
//     refused with the session check's words;
//   - session files: session_save_path then session_load_path in a new runtime;
//   - the input policy: refuse names the control character and byte; strip gives the answer of
//     the already clean text, counting the removed characters;
//   - hot swap through the runtime under load: every request of 6 concurrent clients finishes,
//     each names the version that served it, and its text equals that version's solo output;
//   - registry reload: installing a new version and reloading switches new requests to it.
#include "runtime/runtime.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <future>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "registry/model_registry.h"
#include "support/test_env.h"

namespace edgellm {
namespace {

using namespace std::chrono_literals;

RuntimeParams params(const std::string& model) {
  RuntimeParams p;
  p.model_path = model;
  p.service.context.n_ctx = 512;
  p.service.context.n_seq_max = 3;
  p.service.context.n_threads = 1;
  p.service.context.kv_type = TensorType::F32;
  p.service.max_queued = 8;
  return p;
}

RequestResult run(Runtime& rt, ServiceRequest r) {
  auto done = std::make_shared<std::promise<RequestResult>>();
  r.on_finish = [done](RequestResult& res) { done->set_value(res); };
  if (r.deadline_ms == 15000) r.deadline_ms = 0;
  rt.submit(std::move(r));
  auto f = done->get_future();
  EXPECT_EQ(f.wait_for(60s), std::future_status::ready);
  return f.get();
}

Json msg(const char* role, const std::string& content) {
  Json m = Json::object();
  m.set("role", role);
  m.set("content", content);
  return m;
}

ServiceRequest chat(const Json& messages, const std::string& session = {}) {
  ServiceRequest r;
  r.messages = messages;
  r.sampling.temperature = 0;
  r.generation.max_tokens = 16;
  r.session_id = session;
  return r;
}

std::string copy_to(const std::string& src, const std::string& dst) {
  std::ifstream in(src, std::ios::binary);
  std::ofstream out(dst, std::ios::binary);
  out << in.rdbuf();
  return dst;
}

TEST(Runtime, SessionsByIdContinueWithoutPrefillAndAnswerAsAFullRun) {
  Runtime rt(params(test::shared_model("stories260K.gguf")));
  Json conv = Json::array();
  conv.push_back(msg("user", "Tell me a story about a dog."));
  const RequestResult first = run(rt, chat(conv, "chat-1"));
  ASSERT_NE(first.finish_reason, FinishReason::kError) << first.error;
  EXPECT_TRUE(first.session_stored);
  EXPECT_EQ(rt.sessions().count(), 1u);

  conv.push_back(msg("assistant", first.text));
  conv.push_back(msg("user", "What happened next?"));
  const RequestResult second = run(rt, chat(conv, "chat-1"));
  ASSERT_NE(second.finish_reason, FinishReason::kError) << second.error;
  // The first turn's KV came from the session: at least its prompt is not prefilled again.
  EXPECT_GE(second.stats.cached_tokens, first.stats.prompt_tokens - 1) << second.stats.cached_tokens;

  // Reference: a fresh runtime, no session, the whole conversation.
  Runtime fresh(params(test::shared_model("stories260K.gguf")));
  const RequestResult full = run(fresh, chat(conv));
  EXPECT_EQ(second.text, full.text);

  // Export -> import into a runtime that has run nothing (no prefix cache to help): the
  // session alone supplies the first turns, and the answer is the same as the original's.
  const std::shared_ptr<const std::string> bytes = rt.export_session("chat-1");
  ASSERT_TRUE(bytes);
  Runtime moved(params(test::shared_model("stories260K.gguf")));
  EXPECT_GT(moved.import_session("moved", *bytes), 0);
  conv.push_back(msg("assistant", second.text));
  conv.push_back(msg("user", "And then?"));
  const RequestResult a = run(rt, chat(conv, "chat-1"));
  const RequestResult b = run(moved, chat(conv, "moved"));
  EXPECT_EQ(a.text, b.text);
  EXPECT_GE(b.stats.cached_tokens, second.stats.prompt_tokens - 1) << b.stats.cached_tokens;

  // Another model's runtime refuses the bytes with the session check's words.
  Runtime other(params(test::shared_model("tiny-zh-poems.gguf")));
  try {
    other.import_session("x", *bytes);
    ADD_FAILURE() << "another model's session was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("another model"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(rt.delete_session("chat-1"));
  EXPECT_FALSE(rt.delete_session("chat-1"));
  EXPECT_THROW(run(rt, chat(conv, "bad id!")), Error);
}

TEST(Runtime, SessionFilesMoveAConversationToANewRuntime) {
  const std::string path = test::temp_dir() + "/conv.edgls";
  Json conv = Json::array();
  conv.push_back(msg("user", "Once upon a time"));
  std::string answer;
  {
    Runtime rt(params(test::shared_model("stories260K.gguf")));
    ServiceRequest r = chat(conv);
    r.session_save_path = path;
    const RequestResult res = run(rt, std::move(r));
    EXPECT_FALSE(res.session_save_failed) << res.session_save_error;
    answer = res.text;
  }
  ASSERT_TRUE(test::file_exists(path));
  conv.push_back(msg("assistant", answer));
  conv.push_back(msg("user", "Then what?"));
  Runtime rt(params(test::shared_model("stories260K.gguf")));
  ServiceRequest r = chat(conv);
  r.session_load_path = path;
  const RequestResult cont = run(rt, std::move(r));
  EXPECT_GT(cont.stats.cached_tokens, 0);
  Runtime fresh(params(test::shared_model("stories260K.gguf")));
  EXPECT_EQ(cont.text, run(fresh, chat(conv)).text);
  // A file that is not a session: refused at submit with the file's status.
  ServiceRequest bad = chat(conv);
  bad.session_load_path = test::shared_model("stories260K.gguf");
  EXPECT_THROW(rt.submit(std::move(bad)), Error);
}

TEST(Runtime, InputPolicyRefusesOrStripsControlCharacters) {
  RuntimeParams p = params(test::shared_model("stories260K.gguf"));
  {
    Runtime rt(p);
    ServiceRequest r;
    r.prompt = "Once upon\x1b a time";
    try {
      rt.submit(std::move(r));
      ADD_FAILURE() << "a control character was accepted under the refuse policy";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("U+001B at byte 9"), std::string::npos) << e.what();
    }
  }
  p.service.input_policy = InputPolicy::kStrip;
  Runtime rt(p);
  ServiceRequest dirty;
  dirty.prompt = "Once upon\x1b a \x7ftime\xff";
  dirty.sampling.temperature = 0;
  dirty.generation.max_tokens = 12;
  const RequestResult stripped = run(rt, std::move(dirty));
  EXPECT_EQ(stripped.stats.sanitized_chars, 3);
  ServiceRequest clean;
  clean.prompt = "Once upon a time\xEF\xBF\xBD";  // what strip leaves: the bad byte as U+FFFD
  clean.sampling.temperature = 0;
  clean.generation.max_tokens = 12;
  const RequestResult reference = run(rt, std::move(clean));
  EXPECT_EQ(stripped.text, reference.text);
  EXPECT_EQ(reference.stats.sanitized_chars, 0);
}

// Greedy outputs of each prompt on a runtime of `model` alone: the reference per version.
std::vector<std::string> solo(const std::string& model, const std::vector<std::string>& prompts) {
  Runtime rt(params(model));
  std::vector<std::string> out;
  for (const std::string& p : prompts) {
    ServiceRequest r;
    r.prompt = p;
    r.sampling.temperature = 0;
    r.generation.max_tokens = 8;
    out.push_back(run(rt, std::move(r)).text);
  }
  return out;
}

TEST(Runtime, HotSwapUnderLoadLosesNothingAndNamesTheVersion) {
  const std::string a = copy_to(test::shared_model("stories260K.gguf"), test::temp_dir() + "/rt-v1.gguf");
  const std::string b = copy_to(test::shared_model("tiny-zh-poems.gguf"), test::temp_dir() + "/rt-v2.gguf");
  const std::vector<std::string> prompts = {"Once upon a time", "The cat", "床前明月光", "Lily"};
  const std::map<std::string, std::vector<std::string>> reference = {{"1", solo(a, prompts)}, {"2", solo(b, prompts)}};
  Runtime rt(params(a));
  std::atomic<int> done{0}, failed{0}, mismatched{0};
  std::map<std::string, int> served;
  std::mutex m;
  std::atomic<bool> swapped{false};
  std::vector<std::thread> clients;
  for (int c = 0; c < 6; ++c) {
    clients.emplace_back([&, c] {
      for (int i = 0; i < 12; ++i) {
        const size_t pi = static_cast<size_t>(c + i) % prompts.size();
        if (i == 10) {
          // The last two of each client go after the swap, so version "2" serves some however
          // the threads are scheduled (on a loaded host all 72 could otherwise finish while
          // the new model loads); requests 5-9 of each still run while it loads and switches.
          const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(120);
          while (rt.swaps() == 0 && std::chrono::steady_clock::now() < limit) std::this_thread::sleep_for(1ms);
        }
        ServiceRequest r;
        r.prompt = prompts[pi];
        r.sampling.temperature = 0;
        r.generation.max_tokens = 8;
        RequestResult res;
        for (;;) {
          try {
            res = run(rt, r);
            break;
          } catch (const Error& e) {
            if (e.code() != ErrorCode::kBusy) throw;
            std::this_thread::yield();  // the queue is full: the client retries, as an app would
          }
        }
        if (res.finish_reason == FinishReason::kError) ++failed;
        {
          std::lock_guard<std::mutex> lock(m);
          ++served[res.model_version];
          if (res.text != reference.at(res.model_version)[pi]) ++mismatched;
        }
        if (++done == 30) swapped.store(true);
      }
    });
  }
  while (!swapped.load()) std::this_thread::sleep_for(1ms);
  rt.swap_model(b, "2");
  for (auto& t : clients) t.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(mismatched.load(), 0);
  EXPECT_GT(served["1"], 0);
  EXPECT_GT(served["2"], 0);
  EXPECT_EQ(served["1"] + served["2"], 72);
  EXPECT_EQ(rt.model_version(), "2");
  EXPECT_EQ(rt.swaps(), 1u);
}

TEST(Runtime, RegistryReloadSwitchesToTheCurrentVersion) {
  const std::string dir = test::temp_dir() + "/registry";
  ModelRegistry reg(dir);
  ModelManifest m;
  m.name = "story";
  m.version = "1";
  reg.install_file(test::shared_model("stories260K.gguf"), m, {});
  RuntimeParams p = params("");
  p.registry_dir = dir;
  p.registry_name = "story";
  Runtime rt(p);
  EXPECT_EQ(rt.model_version(), "1");
  EXPECT_EQ(rt.reload_from_registry(), "1");  // nothing new: no swap
  EXPECT_EQ(rt.swaps(), 0u);
  m.version = "2";
  reg.install_file(test::shared_model("tiny-zh-poems.gguf"), m, {});
  EXPECT_EQ(rt.reload_from_registry(), "2");
  ServiceRequest r;
  r.prompt = "床前";
  r.sampling.temperature = 0;
  r.generation.max_tokens = 4;
  EXPECT_EQ(run(rt, std::move(r)).model_version, "2");
  // A rollback is a set_current and another reload.
  reg.set_current("story", "1");
  EXPECT_EQ(rt.reload_from_registry(), "1");
}

}  // namespace
}  // namespace edgellm
