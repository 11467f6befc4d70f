// `edgellm serve` as a face of the Runtime (issue 37): a hot swap under load through
// POST /admin/swap, the admin endpoints' refusals, POST /admin/pressure moving the
// degradation ladder, POST /admin/pause / resume / trim against the Runtime's own state and
// metrics, and a request's priority ordering the queue as Runtime::submit's does.
//
// The swap: 8 streaming chat clients loop on one greedy prompt (ignore_eos, 24 tokens) against
// stories260K as version "1". With all 8 requests admitted (4 decoding, 4 queued) and the
// runtime paused, an admin swaps in tiny-zh-poems as version "2"; then the runtime resumes.
// Shown: 0 failed requests; every response names its version (the x-edgellm-model-version
// header and the last chunk's x_edgellm.model_version, equal); the 8 requests admitted before
// the swap end on "1" with all 24 tokens (the old version drained them, it did not drop them);
// every request sent after the swap returned carries "2"; and the label is true: every "1"
// answer has the same text, every "2" answer the same text, and the two differ (two models).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/json.h"
#include "registry/model_registry.h"
#include "runtime/runtime.h"
#include "serve_harness.h"
#include "support/test_env.h"
#include "tokenizer/tokenizer.h"

namespace edgellm::server::test {
namespace {

using std::chrono::milliseconds;

constexpr const char* kKey = "admin-s3cret";
constexpr int kClients = 8;
constexpr int kTokens = 24;

// A runtime (stories260K as version "1") and a server over it on a free loopback port.
class Served {
 public:
  // registry_dir: open `story` from that registry (as `edgellm serve --registry DIR -m story`).
  // n_seq: sequences decoded at once (1: requests run one after another, in admission order).
  explicit Served(std::string api_key, int64_t recover_ms = 10000, const std::string& registry_dir = "",
                  int32_t n_seq = 4) {
    RuntimeParams rp;
    if (registry_dir.empty()) {
      rp.model_path = edgellm::test::shared_model("stories260K.gguf");
      rp.model_version = "1";
    } else {
      rp.registry_dir = registry_dir;
      rp.registry_name = "story";
    }
    rp.recover_ms = recover_ms;
    ServiceParams& sp = rp.service;
    sp.context.n_ctx = 512;
    sp.context.n_seq_max = n_seq;
    sp.context.kv_type = TensorType::F32;
    sp.max_queued = 8;  // 4 decoding + 4 waiting = the 8 clients: none is refused 429
    runtime_ = std::make_unique<Runtime>(std::move(rp));
    ServerOptions so;
    so.port = 0;
    so.api_key = std::move(api_key);
    http_ = std::make_unique<HttpServer>(*runtime_, so);
    port_ = http_->bind();
    thread_ = std::thread([this] { http_->serve(); });
  }
  ~Served() {
    http_->stop();
    thread_.join();
    runtime_->shutdown();
  }
  Served(const Served&) = delete;
  Served& operator=(const Served&) = delete;

  int port() const { return port_; }
  Runtime& runtime() { return *runtime_; }

 private:
  std::unique_ptr<Runtime> runtime_;
  std::unique_ptr<HttpServer> http_;
  int port_ = -1;
  std::thread thread_;
};

std::string bearer(const std::string& key) {
  return "Authorization: Bearer " + key + "\r\n";
}

RawResponse admin_post(int port, const std::string& path, const std::string& body, const std::string& key = kKey) {
  return round_trip(port, post_request(path, body, key.empty() ? "" : bearer(key)), 60000);
}
RawResponse admin_get(int port, const std::string& path, const std::string& key = kKey) {
  return round_trip(port, get_request(path, key.empty() ? "" : bearer(key)));
}

Json json_of(const RawResponse& r) {
  try {
    return Json::parse(r.body);
  } catch (const std::exception&) {
    return Json();
  }
}

// The error body's code ("" when it is not an error body).
std::string error_code(const RawResponse& r) {
  const Json j = json_of(r);
  const Json* e = j.is_object() ? j.find("error") : nullptr;
  return e != nullptr && e->find("code") != nullptr ? e->at("code").as_string() : std::string();
}

std::string chat_body() {
  Json m = Json::object();
  m.set("role", "user");
  m.set("content", "Tell me a story about a cat.");
  Json msgs = Json::array();
  msgs.push_back(std::move(m));
  Json b = Json::object();
  b.set("messages", std::move(msgs));
  b.set("max_tokens", kTokens);
  b.set("temperature", 0);
  b.set("ignore_eos", true);
  b.set("stream", true);
  return b.dump();
}

// One streamed chat answer as the client saw it.
struct Answer {
  bool ok = false;  // 200, every event JSON, a last chunk with a finish reason, [DONE]
  std::string why;  // when not ok
  std::string header_version;
  std::string version;  // the last chunk's x_edgellm.model_version
  std::string finish;   // its x_edgellm.finish_reason
  int completion_tokens = -1;
  std::string text;  // the deltas' content, joined
  bool sent_after_swap = false;
};

Answer stream_chat(int port, const std::string& body) {
  Answer a;
  RawResponse r = round_trip(port, post_request("/v1/chat/completions", body, bearer(kKey)), 60000);
  if (r.status != 200) {
    a.why = "status " + std::to_string(r.status) + ": " + r.body.substr(0, 200);
    return a;
  }
  a.header_version = r.header("x-edgellm-model-version");
  bool done = false;
  for (size_t at = 0; (at = r.body.find("data: ", at)) != std::string::npos;) {
    const size_t end = r.body.find("\n\n", at);
    const std::string data = r.body.substr(at + 6, end == std::string::npos ? std::string::npos : end - at - 6);
    at = end == std::string::npos ? r.body.size() : end;
    if (data == "[DONE]") {
      done = true;
      continue;
    }
    Json ev;
    try {
      ev = Json::parse(data);
    } catch (const std::exception&) {
      a.why = "not JSON: " + data.substr(0, 200);
      return a;
    }
    if (ev.find("error") != nullptr) {
      a.why = "error event: " + data.substr(0, 200);
      return a;
    }
    const Json& choice = ev.at("choices").at(0);
    if (const Json* c = choice.at("delta").find("content"); c != nullptr) a.text += c->as_string();
    const Json* x = ev.find("x_edgellm");
    if (x != nullptr && x->find("finish_reason") != nullptr) {
      a.finish = x->at("finish_reason").as_string();
      a.completion_tokens = static_cast<int>(x->at("completion_tokens").as_number());
      if (const Json* v = x->find("model_version"); v != nullptr) a.version = v->as_string();
    }
  }
  a.ok = done && !a.finish.empty();
  if (!a.ok) a.why = "stream cut short: " + r.body.substr(r.body.size() > 300 ? r.body.size() - 300 : 0);
  return a;
}

// Polls `ready` every 5 ms until it holds or `limit` passes.
template <typename F>
bool wait_for(F ready, milliseconds limit) {
  const auto end = Clock::now() + limit;
  while (!ready()) {
    if (Clock::now() > end) return false;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return true;
}

// A greedy completion continuing / keeping session `id`.
RawResponse session_completion(int port, const std::string& id) {
  Json b = Json::object();
  b.set("prompt", "Once upon a time");
  b.set("max_tokens", 4);
  b.set("temperature", 0);
  b.set("x_edgellm_session", id);
  return round_trip(port, post_request("/v1/completions", b.dump(), bearer(kKey)));
}

// A greedy completion of kPrompt, 4 tokens; `extra` adds fields (priority, deadline, ...).
constexpr const char* kPrompt = "Once upon a time";
std::string completion_body(const Json& extra = Json::object()) {
  Json b = Json::object();
  b.set("prompt", kPrompt);
  b.set("max_tokens", 4);
  b.set("temperature", 0);
  b.set("ignore_eos", true);
  for (const auto& [k, v] : extra.as_object()) b.set(k, v);
  return b.dump();
}
RawResponse completion(int port, const Json& extra = Json::object()) {
  return round_trip(port, post_request("/v1/completions", completion_body(extra), bearer(kKey)), 60000);
}
Json with(const char* name, Json value) {
  Json j = Json::object();
  j.set(name, std::move(value));
  return j;
}

// The same request straight into the Runtime (no HTTP): the reference the server's answers are
// compared with. on_finish records `name` in `order` (under `mutex`).
ServiceRequest direct_request(Priority priority, int64_t deadline_ms, std::function<void(RequestResult&)> on_finish) {
  ServiceRequest r;
  r.prompt = kPrompt;
  r.generation.max_tokens = 4;
  r.sampling.temperature = 0;
  r.generation.ignore_eog = true;
  r.priority = priority;
  r.deadline_ms = deadline_ms;
  r.on_finish = std::move(on_finish);
  return r;
}

TEST(RuntimeAdmin, HotSwapUnderLoadDrainsTheOldVersionAndLabelsEveryAnswer) {
  Served s(kKey);
  const std::string body = chat_body();
  // A session kept by version 1 (the Runtime's store): refused once another model file serves.
  const RawResponse kept = session_completion(s.port(), "before-swap");
  ASSERT_EQ(kept.status, 200) << kept.body;
  ASSERT_TRUE(json_of(kept).at("x_edgellm").at("session").at("stored").as_bool()) << kept.body;
  std::atomic<bool> swapped{false};  // /admin/swap has answered 200
  std::atomic<bool> stop{false};
  std::atomic<int> after_swap_done{0};  // answers to requests sent after the swap
  std::mutex mutex;
  std::vector<Answer> answers;

  std::vector<std::thread> clients;
  // However the test ends (an ASSERT returns early), the clients stop and are joined.
  struct Joiner {
    std::atomic<bool>& stop;
    std::vector<std::thread>& threads;
    Runtime& runtime;
    ~Joiner() {
      stop.store(true);
      runtime.resume();
      for (std::thread& t : threads) {
        if (t.joinable()) t.join();
      }
    }
  } joiner{stop, clients, s.runtime()};
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&] {
      int mine_after = 0;
      while (!stop.load() && mine_after < 2) {
        const bool after = swapped.load();
        Answer a = stream_chat(s.port(), body);
        a.sent_after_swap = after;
        if (after) {
          ++mine_after;
          after_swap_done.fetch_add(1);
        }
        std::lock_guard<std::mutex> lock(mutex);
        answers.push_back(std::move(a));
      }
    });
  }
  // Under load: some answers are done, then the runtime pauses with all 8 requests admitted
  // (running or waiting on version 1), so the swap surely finds requests to drain.
  ASSERT_TRUE(wait_for(
      [&] {
        std::lock_guard<std::mutex> lock(mutex);
        return answers.size() >= kClients;
      },
      milliseconds(60000)));
  s.runtime().pause();
  ASSERT_TRUE(wait_for(
      [&] {
        const ServiceMetrics m = s.runtime().service_metrics();
        return m.running + m.waiting == kClients;
      },
      milliseconds(30000)))
      << "the 8 clients' requests were not all admitted";
  size_t before_swap = 0;
  {
    std::lock_guard<std::mutex> lock(mutex);
    before_swap = answers.size();
  }

  Json swap = Json::object();
  swap.set("model", edgellm::test::shared_model("tiny-zh-poems.gguf"));
  swap.set("version", "2");
  const RawResponse sw = admin_post(s.port(), "/admin/swap", swap.dump());
  ASSERT_EQ(sw.status, 200) << sw.body;
  swapped.store(true);
  const Json sj = json_of(sw);
  EXPECT_EQ(sj.at("model_version").as_string(), "2");
  // "1" is still live: its 8 admitted requests have not finished (paused).
  EXPECT_EQ(sj.at("live_versions").size(), 2u) << sw.body;
  if (sj.at("live_versions").size() == 2) {
    EXPECT_EQ(sj.at("live_versions").at(0).as_string(), "2");
    EXPECT_EQ(sj.at("live_versions").at(1).as_string(), "1");
  }
  EXPECT_EQ(s.runtime().model_version(), "2");
  s.runtime().resume();

  ASSERT_TRUE(wait_for([&] { return after_swap_done.load() >= 2 * kClients; }, milliseconds(120000)));
  stop.store(true);
  for (std::thread& t : clients) t.join();

  std::set<std::string> text_of[2];
  int on_v1_after_pause = 0;
  int failed = 0;
  for (size_t i = 0; i < answers.size(); ++i) {
    const Answer& a = answers[i];
    if (!a.ok) {
      if (++failed <= 3) ADD_FAILURE() << "answer " << i << " (of " << answers.size() << "): " << a.why;
      continue;
    }
    EXPECT_FALSE(a.version.empty()) << "answer " << i << " names no model version";
    EXPECT_EQ(a.header_version, a.version) << "answer " << i;
    EXPECT_EQ(a.finish, "length") << "answer " << i;
    EXPECT_EQ(a.completion_tokens, kTokens) << "answer " << i;
    if (a.sent_after_swap) {
      EXPECT_EQ(a.version, "2") << "answer " << i << " was sent after the swap";
    }
    ASSERT_TRUE(a.version == "1" || a.version == "2") << a.version;
    text_of[a.version == "2"].insert(a.text);
    if (i >= before_swap && a.version == "1") ++on_v1_after_pause;
  }
  EXPECT_EQ(failed, 0) << "failed requests";
  // The 8 requests admitted before the swap finished on version 1, whole.
  EXPECT_EQ(on_v1_after_pause, kClients);
  EXPECT_EQ(text_of[0].size(), 1u) << "version 1 answered the one greedy prompt differently";
  EXPECT_EQ(text_of[1].size(), 1u) << "version 2 answered the one greedy prompt differently";
  EXPECT_NE(*text_of[0].begin(), *text_of[1].begin()) << "the two versions are two models";
  std::printf("%zu answers: %zu before the swap, %d drained on version 1, %d sent after it\n", answers.size(),
              before_swap, on_v1_after_pause, after_swap_done.load());

  const RawResponse stale = session_completion(s.port(), "before-swap");
  EXPECT_EQ(stale.status, 400) << stale.body;
  EXPECT_NE(stale.body.find("another model file"), std::string::npos) << stale.body;

  // The runtime's metrics, once each: the swap counted, no metric name twice.
  EXPECT_TRUE(wait_for([&] { return s.runtime().live_versions().size() == 1; }, milliseconds(30000)));
  const RawResponse m = admin_get(s.port(), "/metrics");
  ASSERT_EQ(m.status, 200);
  EXPECT_NE(m.body.find("\nedgellm_model_swaps_total 1\n"), std::string::npos) << m.body;
  EXPECT_NE(m.body.find("edgellm_http_requests_total"), std::string::npos);
  std::set<std::string> names;
  for (size_t at = 0; (at = m.body.find("# TYPE ", at)) != std::string::npos; at += 7) {
    const std::string name = m.body.substr(at + 7, m.body.find(' ', at + 7) - at - 7);
    EXPECT_TRUE(names.insert(name).second) << "metric " << name << " twice";
  }
}

TEST(RuntimeAdmin, AdminNeedsTheKeyAndRefusesBadRequests) {
  {
    // Without an API key the admin endpoints are off (403), whoever asks; nothing changes.
    Served open("");
    for (const RawResponse& r :
         {admin_get(open.port(), "/admin/degradation", ""),
          admin_post(open.port(), "/admin/swap", R"({"model": "/etc/passwd", "version": "2"})", ""),
          admin_post(open.port(), "/admin/pressure", R"({"memory": 3})", ""),
          admin_post(open.port(), "/admin/reload", "", ""), admin_post(open.port(), "/admin/pause", "", ""),
          admin_post(open.port(), "/admin/resume", "", ""), admin_post(open.port(), "/admin/trim", "", ""),
          admin_get(open.port(), "/admin/state", "")}) {
      EXPECT_EQ(r.status, 403) << r.body;
      EXPECT_EQ(error_code(r), "admin_needs_api_key") << r.body;
    }
    EXPECT_EQ(open.runtime().model_version(), "1");
    EXPECT_EQ(open.runtime().rung(), Rung::kNormal);
    EXPECT_FALSE(open.runtime().paused());
  }
  Served s(kKey);
  const std::string swap_body =
      R"({"model": ")" + edgellm::test::shared_model("stories260K.gguf") + R"(", "version": "9"})";
  // No key, a wrong key: 401.
  for (const std::string& key : {std::string(), std::string("wrong")}) {
    EXPECT_EQ(admin_get(s.port(), "/admin/degradation", key).status, 401);
    const RawResponse r = admin_post(s.port(), "/admin/swap", swap_body, key);
    EXPECT_EQ(r.status, 401) << r.body;
    EXPECT_EQ(error_code(r), "invalid_api_key");
    EXPECT_EQ(admin_post(s.port(), "/admin/pressure", R"({"memory": 3})", key).status, 401);
    for (const char* path : {"/admin/pause", "/admin/resume", "/admin/trim"}) {
      const RawResponse a = admin_post(s.port(), path, "", key);
      EXPECT_EQ(a.status, 401) << path << ": " << a.body;
      EXPECT_EQ(error_code(a), "invalid_api_key") << path;
    }
    EXPECT_EQ(admin_get(s.port(), "/admin/state", key).status, 401);
  }
  EXPECT_FALSE(s.runtime().paused());
  EXPECT_EQ(s.runtime().model_version(), "1");
  EXPECT_EQ(s.runtime().swaps(), 0u);
  // The wrong method: 405.
  EXPECT_EQ(admin_get(s.port(), "/admin/swap").status, 405);
  for (const char* path : {"/admin/pause", "/admin/resume", "/admin/trim"}) {
    EXPECT_EQ(admin_get(s.port(), path).status, 405) << path;
    // Bad JSON, a field where none is taken: 400, and nothing happens.
    RawResponse a = admin_post(s.port(), path, "{\"paused\": ");
    EXPECT_EQ(a.status, 400) << path << ": " << a.body;
    EXPECT_EQ(error_code(a), "invalid_json") << a.body;
    a = admin_post(s.port(), path, R"({"seconds": 5})");
    EXPECT_EQ(a.status, 400) << path << ": " << a.body;
    EXPECT_EQ(json_of(a).at("error").at("param").as_string(), "seconds") << a.body;
    a = admin_post(s.port(), path, "[]");
    EXPECT_EQ(a.status, 400) << path << ": " << a.body;
  }
  EXPECT_EQ(admin_post(s.port(), "/admin/state", "").status, 405);
  EXPECT_FALSE(s.runtime().paused());
  EXPECT_EQ(s.runtime().service_metrics().trims, 0u);

  // Bad bodies name the field; a file that cannot be served changes nothing.
  RawResponse r = admin_post(s.port(), "/admin/swap", R"({"version": "2"})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(json_of(r).at("error").at("param").as_string(), "model");
  r = admin_post(s.port(), "/admin/swap", R"({"model": "/no/such/model.gguf", "version": "2"})");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(error_code(r), "model_not_loaded") << r.body;
  r = admin_post(s.port(), "/admin/swap", R"({"model": "/etc/hostname", "version": "2"})");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(error_code(r), "model_not_loaded") << r.body;
  r = admin_post(s.port(), "/admin/pressure", R"({"memory": 9})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(json_of(r).at("error").at("param").as_string(), "memory");
  r = admin_post(s.port(), "/admin/pressure", R"({"memory_level": 3})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(json_of(r).at("error").at("param").as_string(), "memory_level");
  r = admin_post(s.port(), "/admin/pressure", R"({"power_save": 1})");
  EXPECT_EQ(r.status, 400);
  r = admin_post(s.port(), "/admin/reload", "");
  EXPECT_EQ(r.status, 400) << r.body;  // not opened from a registry
  EXPECT_NE(r.body.find("registry"), std::string::npos) << r.body;
  EXPECT_EQ(s.runtime().model_version(), "1");
  EXPECT_EQ(s.runtime().swaps(), 0u);
  EXPECT_EQ(s.runtime().rung(), Rung::kNormal);

  // With the key: the swap happens and says so.
  r = admin_post(s.port(), "/admin/swap", swap_body);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json_of(r).at("model_version").as_string(), "9");
  EXPECT_EQ(s.runtime().model_version(), "9");
  EXPECT_EQ(s.runtime().swaps(), 1u);
}

TEST(RuntimeAdmin, PressureMovesTheLadderAndItsRefusalIs503) {
  Served s(kKey, /*recover_ms=*/200);
  auto rung_now = [&] {
    const RawResponse r = admin_get(s.port(), "/admin/degradation");
    const Json j = json_of(r);
    return r.status == 200 ? static_cast<int>(j.at("rung").as_number()) : -1;
  };
  EXPECT_EQ(rung_now(), 0);
  // Critical memory: the ladder steps down to "refuse new" (5), one rung at a time.
  RawResponse r = admin_post(s.port(), "/admin/pressure", R"({"memory": 3, "thermal": 0, "power_save": false})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json_of(r).at("target").as_number(), 5);
  ASSERT_TRUE(wait_for([&] { return rung_now() == 5 && s.runtime().wait_degradation_settled(milliseconds(0)); },
                       milliseconds(60000)))
      << admin_get(s.port(), "/admin/degradation").body;
  EXPECT_EQ(s.runtime().rung(), Rung::kRefuseNew);
  const std::string chat = [] {
    Json b = Json::parse(chat_body());
    b.set("stream", false);
    b.set("max_tokens", 4);
    return b.dump();
  }();
  r = round_trip(s.port(), post_request("/v1/chat/completions", chat, bearer(kKey)));
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_EQ(error_code(r), "degraded") << r.body;
  EXPECT_FALSE(r.header("Retry-After").empty());

  // Pressure gone: back to normal (recover_ms 200 per rung), and requests are served again.
  r = admin_post(s.port(), "/admin/pressure", R"({"memory": 0})");
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_TRUE(wait_for([&] { return rung_now() == 0 && s.runtime().wait_degradation_settled(milliseconds(0)); },
                       milliseconds(60000)))
      << admin_get(s.port(), "/admin/degradation").body;
  r = round_trip(s.port(), post_request("/v1/chat/completions", chat, bearer(kKey)));
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json_of(r).at("x_edgellm").at("model_version").as_string(), "1");
  const Json d = json_of(admin_get(s.port(), "/admin/degradation"));
  EXPECT_GE(d.at("rungs").at("refuse_new").at("entered").as_number(), 1);
  EXPECT_GE(d.at("refused_requests").as_number(), 1);
}

TEST(RuntimeAdmin, ReloadFollowsTheRegistryAndRefusesACorruptedFile) {
  const std::string dir = edgellm::test::temp_dir() + "/admin-registry";
  std::filesystem::remove_all(dir);
  ModelRegistry reg(dir);
  ModelManifest m;
  m.name = "story";
  m.version = "1";
  reg.install_file(edgellm::test::shared_model("stories260K.gguf"), m, {});
  Served s(kKey, 10000, dir);
  EXPECT_EQ(s.runtime().model_version(), "1");

  // Nothing new: no swap.
  RawResponse r = admin_post(s.port(), "/admin/reload", "");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json_of(r).at("model_version").as_string(), "1");
  EXPECT_FALSE(json_of(r).at("changed").as_bool());
  EXPECT_EQ(s.runtime().swaps(), 0u);

  // Version 2 installed, then one byte of its file changed (same size): the reload verifies the
  // digest, refuses it and version 1 keeps serving.
  m.version = "2";
  const ModelManifest v2 = reg.install_file(edgellm::test::shared_model("tiny-zh-poems.gguf"), m, {});
  const std::string file = reg.model_path(v2);
  std::string bytes;
  {
    std::ifstream in(file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_GT(bytes.size(), 4096u);
  {
    std::string bad = bytes;
    bad[bad.size() / 2] = static_cast<char>(bad[bad.size() / 2] ^ 0x01);
    std::ofstream(file, std::ios::binary | std::ios::trunc) << bad;
  }
  r = admin_post(s.port(), "/admin/reload", "");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(error_code(r), "model_not_loaded") << r.body;
  EXPECT_EQ(s.runtime().model_version(), "1");

  // The file restored: the reload switches to 2 and answers say so.
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
  r = admin_post(s.port(), "/admin/reload", "");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json_of(r).at("model_version").as_string(), "2");
  EXPECT_TRUE(json_of(r).at("changed").as_bool());
  Json b = Json::parse(chat_body());
  b.set("stream", false);
  b.set("max_tokens", 4);
  r = round_trip(s.port(), post_request("/v1/chat/completions", b.dump(), bearer(kKey)));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("x-edgellm-model-version"), "2");
  EXPECT_EQ(json_of(r).at("x_edgellm").at("model_version").as_string(), "2");
  std::filesystem::remove_all(dir);
}

// POST /admin/pause: a request sent while paused is queued and does not start (the scheduler
// has seen the pause: paused_idle, no step) until POST /admin/resume; one whose deadline passes
// while paused ends "timeout", as the same request submitted to the Runtime directly does.
// POST /admin/trim answers the bytes the Runtime's metrics count for that trim.
TEST(RuntimeAdmin, PauseHoldsRequestsUntilResumeAndTrimAnswersTheRuntimesBytes) {
  Served s(kKey);
  Runtime& rt = s.runtime();
  RawResponse r = admin_post(s.port(), "/admin/pause", "");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(json_of(r).at("paused").as_bool()) << r.body;
  EXPECT_TRUE(rt.paused());
  r = round_trip(s.port(), get_request("/health"));
  ASSERT_EQ(r.status, 200);
  EXPECT_TRUE(json_of(r).at("paused").as_bool()) << r.body;

  std::atomic<bool> answered{false};
  RawResponse held;
  std::thread client([&] {
    held = completion(s.port());
    answered.store(true);
  });
  struct Joiner {
    std::thread& t;
    Runtime& rt;
    ~Joiner() {
      rt.resume();
      if (t.joinable()) t.join();
    }
  } joiner{client, rt};
  // Queued behind the pause: waiting, not running, and the scheduler idles.
  ASSERT_TRUE(wait_for([&] { return rt.service_metrics().waiting == 1; }, milliseconds(30000)));
  ASSERT_TRUE(wait_for([&] { return rt.service_metrics().paused_idle; }, milliseconds(30000)));
  const uint64_t steps = rt.service_metrics().steps;
  r = admin_get(s.port(), "/admin/state");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(json_of(r).at("paused").as_bool());
  EXPECT_TRUE(json_of(r).at("paused_idle").as_bool());
  EXPECT_EQ(json_of(r).at("waiting").as_number(), 1);
  EXPECT_EQ(json_of(r).at("running").as_number(), 0);

  // A deadline passing while paused: the server's answer is the Runtime's (finish "timeout").
  // Shared with the callback: should the test end early, the runtime's shutdown still calls it.
  struct Direct {
    std::mutex mutex;
    std::condition_variable cv;
    FinishReason finish = FinishReason::kError;
    bool done = false;
  };
  auto direct = std::make_shared<Direct>();
  rt.submit(direct_request(Priority::kInteractive, 300, [direct](RequestResult& res) {
    std::lock_guard<std::mutex> lock(direct->mutex);
    direct->finish = res.finish_reason;
    direct->done = true;
    direct->cv.notify_all();
  }));
  r = completion(s.port(), with("x_edgellm_deadline_ms", 300));
  ASSERT_EQ(r.status, 200) << r.body;
  FinishReason direct_finish = FinishReason::kError;
  {
    std::unique_lock<std::mutex> lock(direct->mutex);
    ASSERT_TRUE(direct->cv.wait_for(lock, std::chrono::seconds(30), [&] { return direct->done; }));
    direct_finish = direct->finish;
  }
  EXPECT_EQ(direct_finish, FinishReason::kTimeout);
  EXPECT_EQ(json_of(r).at("x_edgellm").at("finish_reason").as_string(), finish_reason_name(direct_finish)) << r.body;
  EXPECT_EQ(json_of(r).at("x_edgellm").at("completion_tokens").as_number(), 0) << r.body;

  // Trim while paused (the scheduler's housekeeping runs): the answer is the metrics' step.
  ServiceMetrics m0 = rt.service_metrics();
  r = admin_post(s.port(), "/admin/trim", "");
  ASSERT_EQ(r.status, 200) << r.body;
  ServiceMetrics m1 = rt.service_metrics();
  EXPECT_EQ(m1.trims, m0.trims + 1);
  EXPECT_EQ(static_cast<double>(m1.trimmed_bytes - m0.trimmed_bytes), json_of(r).at("released_bytes").as_number());

  // Still held: no answer, no step, still waiting.
  EXPECT_FALSE(answered.load());
  EXPECT_EQ(rt.service_metrics().steps, steps);
  EXPECT_EQ(rt.service_metrics().waiting, 1);

  r = admin_post(s.port(), "/admin/resume", "{}");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_FALSE(json_of(r).at("paused").as_bool());
  EXPECT_FALSE(rt.paused());
  client.join();
  ASSERT_EQ(held.status, 200) << held.body;
  EXPECT_EQ(json_of(held).at("x_edgellm").at("finish_reason").as_string(), "length") << held.body;
  EXPECT_EQ(json_of(held).at("usage").at("completion_tokens").as_number(), 4) << held.body;
  EXPECT_FALSE(json_of(round_trip(s.port(), get_request("/health"))).at("paused").as_bool());

  // After a generation its scratch is there to give back: the trim releases some, and the
  // metrics count exactly what the answer says.
  m0 = rt.service_metrics();
  r = admin_post(s.port(), "/admin/trim", "");
  ASSERT_EQ(r.status, 200) << r.body;
  m1 = rt.service_metrics();
  EXPECT_EQ(m1.trims, m0.trims + 1);
  const double released = json_of(r).at("released_bytes").as_number();
  EXPECT_EQ(static_cast<double>(m1.trimmed_bytes - m0.trimmed_bytes), released);
  EXPECT_GT(released, 0) << r.body;
  std::printf("trim after a generation released %.0f bytes\n", released);
}

// priority: with one sequence and the runtime paused, two background requests and then one
// interactive request are queued; after resume the interactive one is admitted first, then the
// background ones in their order (service/request.h's rule). Through Runtime::submit the order
// is on_finish's. Through HTTP it is read from the prefix cache, which only holds full 16-token
// blocks of requests that ran before: the prompts (token ids) share 2 blocks, the two
// background ones a third, so a request's cached_tokens say which ran before it. A naive model
// of the cache in the test gives the cached_tokens triple of each of the 6 orders; the answers'
// triple must be that of exactly one order, and it must be the Runtime's. (The expected order's
// triple is unique; some other orders share one, which fails the test as a wrong order should.)
TEST(RuntimeAdmin, PriorityOrdersTheQueueAsTheRuntimeDoes) {
  Served s(kKey, 10000, "", /*n_seq=*/1);
  Runtime& rt = s.runtime();
  const std::vector<std::string> expected = {"interactive", "background-1", "background-2"};

  // Shared with the callbacks: should the test end early, the runtime's shutdown still calls them.
  struct Order {
    std::mutex mutex;
    std::vector<std::string> names;
  };
  auto finished = std::make_shared<Order>();
  rt.pause();
  for (const auto& [name, priority] : {std::pair<std::string, Priority>{"background-1", Priority::kBackground},
                                       {"background-2", Priority::kBackground},
                                       {"interactive", Priority::kInteractive}}) {
    rt.submit(direct_request(priority, 60000, [finished, name = name](RequestResult&) {
      std::lock_guard<std::mutex> lock(finished->mutex);
      finished->names.push_back(name);
    }));
  }
  rt.resume();
  ASSERT_TRUE(wait_for(
      [&] {
        std::lock_guard<std::mutex> lock(finished->mutex);
        return finished->names.size() == 3;
      },
      milliseconds(30000)));
  const std::vector<std::string> direct_order = [&] {
    std::lock_guard<std::mutex> lock(finished->mutex);
    return finished->names;
  }();
  EXPECT_EQ(direct_order, expected);

  // The prompts, in blocks of 16 ids (ids 100+ are not in the text prompt above): S S X t
  // (interactive), S S Y t (background-1), S S Y Z t (background-2); t = 4 ids, no full block.
  constexpr int kBlock = 16;
  auto block = [](int32_t first) {
    std::vector<int32_t> b;
    for (int32_t i = 0; i < kBlock; ++i) b.push_back(first + i);
    return b;
  };
  auto cat = [](std::initializer_list<std::vector<int32_t>> parts) {
    std::vector<int32_t> all;
    for (const auto& p : parts) all.insert(all.end(), p.begin(), p.end());
    return all;
  };
  const std::vector<int32_t> tail = {300, 301, 302, 303};
  const std::vector<std::string> names = {"background-1", "background-2", "interactive"};  // sent in this order
  const std::vector<std::vector<int32_t>> prompts = {cat({block(100), block(116), block(140), tail}),
                                                     cat({block(100), block(116), block(140), block(160), tail}),
                                                     cat({block(100), block(116), block(200), tail})};
  // The cache model: a prompt reuses its longest prefix of full blocks that a request admitted
  // before it also had (the tail and generated tokens never complete a shared block here).
  auto predicted_cached = [&](const std::vector<size_t>& order) {
    std::vector<int> cached(order.size(), 0);
    for (size_t k = 0; k < order.size(); ++k) {
      const std::vector<int32_t>& p = prompts[order[k]];
      for (size_t j = 0; j < k; ++j) {
        const std::vector<int32_t>& q = prompts[order[j]];
        size_t same = 0;
        while (same < p.size() && same < q.size() && p[same] == q[same]) ++same;
        cached[order[k]] = std::max(cached[order[k]], static_cast<int>(same / kBlock * kBlock));
      }
    }
    return cached;
  };

  ASSERT_EQ(admin_post(s.port(), "/admin/pause", "").status, 200);
  // Both spellings of the field: a name, the C ABI's number.
  const std::vector<Json> priorities = {Json("background"), Json(1), Json("interactive")};
  std::vector<RawResponse> answers(names.size());
  std::vector<std::thread> clients;
  struct Joiner {
    std::vector<std::thread>& threads;
    Runtime& rt;
    ~Joiner() {
      rt.resume();
      for (std::thread& t : threads) {
        if (t.joinable()) t.join();
      }
    }
  } joiner{clients, rt};
  for (size_t i = 0; i < names.size(); ++i) {
    Json b = Json::object();
    Json ids = Json::array();
    for (int32_t id : prompts[i]) ids.push_back(id);
    b.set("prompt", std::move(ids));
    b.set("max_tokens", 2);
    b.set("temperature", 0);
    b.set("priority", priorities[i]);
    clients.emplace_back([&, i, body = b.dump()] {
      answers[i] = round_trip(s.port(), post_request("/v1/completions", body, bearer(kKey)), 60000);
    });
    // Each in the queue before the next is sent: their arrival order is the one above.
    ASSERT_TRUE(
        wait_for([&] { return rt.service_metrics().waiting == static_cast<int32_t>(i + 1); }, milliseconds(30000)));
  }
  ASSERT_EQ(admin_post(s.port(), "/admin/resume", "").status, 200);
  for (std::thread& t : clients) t.join();
  std::vector<int> cached;
  for (size_t i = 0; i < names.size(); ++i) {
    ASSERT_EQ(answers[i].status, 200) << answers[i].body;
    cached.push_back(
        static_cast<int>(json_of(answers[i]).at("usage").at("prompt_tokens_details").at("cached_tokens").as_number()));
  }
  std::vector<size_t> order = {0, 1, 2};
  std::vector<std::vector<std::string>> matching;
  do {
    if (predicted_cached(order) == cached) {
      matching.push_back({});
      for (size_t k : order) matching.back().push_back(names[k]);
    }
  } while (std::next_permutation(order.begin(), order.end()));
  ASSERT_EQ(matching.size(), 1u) << "cached_tokens " << cached[0] << " " << cached[1] << " " << cached[2];
  EXPECT_EQ(matching[0], direct_order);
}

// The new fields' bad values: 400 naming the field, in the Runtime's words where the Runtime
// checks the value; nothing is queued. And the raw-prompt switches do what the tokenizer says.
TEST(RuntimeAdmin, RequestFieldsOfTheRuntimeAreCheckedAndHonoured) {
  Served s(kKey);
  Runtime& rt = s.runtime();
  // The Runtime's own refusal of an unknown priority: the server's message must be the same.
  std::string runtime_message;
  try {
    rt.submit(direct_request(static_cast<Priority>(7), 1000, {}));
  } catch (const Error& e) {
    runtime_message = e.what();
  }
  ASSERT_FALSE(runtime_message.empty());
  const uint64_t submitted = rt.service_metrics().requests_submitted;
  struct Bad {
    const char* endpoint;
    Json extra;
    const char* param;  // "" when the Runtime refuses it (then the message is checked)
  };
  const std::vector<Bad> bad = {
      {"/v1/completions", with("priority", 7), ""},
      {"/v1/completions", with("priority", -1), ""},
      {"/v1/completions", with("priority", 1.5), "priority"},
      {"/v1/completions", with("priority", "urgent"), "priority"},
      {"/v1/completions", with("priority", true), "priority"},
      {"/v1/chat/completions", with("priority", Json::array()), "priority"},
      {"/v1/completions", with("x_edgellm_deadline_ms", 0), "x_edgellm_deadline_ms"},
      {"/v1/completions", with("x_edgellm_deadline_ms", "100"), "x_edgellm_deadline_ms"},
      {"/v1/completions", with("x_edgellm_deadline_ms", 120001), "x_edgellm_deadline_ms"},  // > --timeout
      {"/v1/completions", with("repeat_last_n", "64"), "repeat_last_n"},
      {"/v1/completions", with("repeat_last_n", -2), ""},
      {"/v1/completions", with("add_special", 1), "add_special"},
      {"/v1/completions", with("parse_special", "yes"), "parse_special"},
      {"/v1/chat/completions", with("add_special", false), "add_special"},
      {"/v1/chat/completions", with("parse_special", true), "parse_special"},
  };
  for (const Bad& b : bad) {
    std::string body;
    if (std::string(b.endpoint) == "/v1/completions") {
      body = completion_body(b.extra);
    } else {
      Json j = Json::parse(chat_body());
      j.set("stream", false);
      for (const auto& [k, v] : b.extra.as_object()) j.set(k, v);
      body = j.dump();
    }
    const RawResponse r = round_trip(s.port(), post_request(b.endpoint, body, bearer(kKey)));
    SCOPED_TRACE(b.extra.dump());
    EXPECT_EQ(r.status, 400) << r.body;
    const Json e = json_of(r).at("error");
    EXPECT_FALSE(e.at("message").as_string().empty());
    if (*b.param != '\0') {
      EXPECT_EQ(e.at("param").as_string(), b.param) << r.body;
    } else if (b.extra.find("priority") != nullptr && b.extra.at("priority").as_number() == 7) {
      EXPECT_EQ(e.at("message").as_string(), runtime_message) << r.body;
    } else {
      EXPECT_NE(e.at("message").as_string().find(b.extra.as_object().begin()->first == "priority" ? "priority"
                                                                                                  : "penalty_last_n"),
                std::string::npos)
          << r.body;
    }
  }
  EXPECT_EQ(rt.service_metrics().requests_submitted, submitted);

  // add_special: false drops the BOS the tokenizer adds (the tokenizer is the reference).
  const std::shared_ptr<InferenceService> svc = rt.service();
  for (const bool add : {true, false}) {
    const RawResponse r = completion(s.port(), with("add_special", add));
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(json_of(r).at("usage").at("prompt_tokens").as_number(),
              static_cast<double>(svc->tokenizer().encode(kPrompt, add, false).size()))
        << r.body;
  }
  // repeat_last_n 0 (no penalties) and a per-request deadline within --timeout are taken.
  Json extra = with("repeat_last_n", 0);
  extra.set("x_edgellm_deadline_ms", 60000);
  extra.set("priority", "background");
  EXPECT_EQ(completion(s.port(), extra).status, 200);
}

}  // namespace
}  // namespace edgellm::server::test
