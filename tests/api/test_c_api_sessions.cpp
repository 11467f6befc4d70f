// Sessions by id through the C ABI (libedgellm.so only): a request keeps its KV under an id;
// edgellm_session_export's bytes imported into a SECOND runtime (another process or device
// running the same model file) continue the conversation there exactly as a runtime that
// prefilled all of it (independent reference: a fresh runtime without the session), with the
// restored positions reported as cached; list / delete / files; the store's count bound drops the
// least recently used; and every refusal (bad ids, sessions off, another model, truncated or
// corrupted bytes, NULLs, a too-small buffer) is a status that changes nothing.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "edgellm/edgellm.h"
#include "support/test_env.h"

namespace {

using namespace std::chrono_literals;

const edgellm_sampling* greedy_sampling() {
  static const edgellm_sampling s = [] {
    edgellm_sampling g = edgellm_sampling_default();
    g.temperature = 0;
    return g;
  }();
  return &s;
}

struct Result {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  std::vector<int32_t> tokens;
  edgellm_finish_reason reason = EDGELLM_FINISH_ERROR;
  std::string error;
  int32_t cached_tokens = -1;
  bool session_stored = false;
  edgellm_status session_save_status = EDGELLM_ERR_INTERNAL;
};

bool record_token(const edgellm_token_event* ev, void* user) {
  auto* r = static_cast<Result*>(user);
  std::lock_guard<std::mutex> lock(r->m);
  if (ev->token >= 0) r->tokens.push_back(ev->token);
  return true;
}

void record_finish(const edgellm_result* res, void* user) {
  auto* r = static_cast<Result*>(user);
  std::lock_guard<std::mutex> lock(r->m);
  r->reason = res->finish_reason;
  r->error = res->error_message;
  r->cached_tokens = res->stats.cached_tokens;
  r->session_stored = res->session_stored;
  r->session_save_status = res->session_save_status;
  r->done = true;
  r->cv.notify_all();
}

// Greedy, 12 tokens, over `prompt` ids; session options as given. Waits for the result.
edgellm_status run(edgellm_runtime* rt, const std::vector<int32_t>& prompt, Result& out, const char* session_id,
                   const char* load_path = nullptr, const char* save_path = nullptr) {
  edgellm_request_params r = edgellm_request_default_params();
  r.tokens = prompt.data();
  r.n_tokens = prompt.size();
  r.sampling = greedy_sampling();
  r.max_tokens = 12;
  r.ignore_eos = true;
  r.session_id = session_id;
  r.session_load_path = load_path;
  r.session_save_path = save_path;
  r.on_token = record_token;
  r.on_finish = record_finish;
  r.user_data = &out;
  edgellm_request_id id = 0;
  const edgellm_status st = edgellm_submit(rt, &r, &id);
  if (st == EDGELLM_OK) {
    std::unique_lock<std::mutex> lock(out.m);
    EXPECT_TRUE(out.cv.wait_for(lock, 60s, [&] { return out.done; }));
  }
  return st;
}

edgellm_runtime* open_runtime(const std::string& model, int32_t max_sessions = 16) {
  edgellm_runtime_params p = edgellm_runtime_default_params();
  p.n_ctx = 256;
  p.n_parallel = 1;
  p.max_sessions = max_sessions;
  edgellm_runtime* rt = nullptr;
  EXPECT_EQ(edgellm_runtime_create(model.c_str(), &p, &rt), EDGELLM_OK) << edgellm_last_error();
  return rt;
}

std::string export_bytes(edgellm_runtime* rt, const char* id, edgellm_status* st) {
  size_t len = 0;
  *st = edgellm_session_export(rt, id, nullptr, 0, &len);
  if (*st != EDGELLM_ERR_BUFFER_TOO_SMALL) return {};
  std::string bytes(len, '\0');
  *st = edgellm_session_export(rt, id, bytes.data(), bytes.size(), &len);
  bytes.resize(len);
  return bytes;
}

std::string list_json(edgellm_runtime* rt) {
  size_t len = 0;
  edgellm_session_list_json(rt, nullptr, 0, &len);
  std::string out(len + 1, '\0');
  EXPECT_EQ(edgellm_session_list_json(rt, out.data(), out.size(), &len), EDGELLM_OK);
  out.resize(len);
  return out;
}

class CApiSessions : public ::testing::Test {
 protected:
  static std::string stories() { return edgellm::test::shared_model("stories260K.gguf"); }
  const std::vector<int32_t> prompt1_ = {1, 400, 401, 402, 403, 404, 405, 406, 407, 408, 409, 410, 411, 412, 413};
  // Turn 2 of the conversation: turn 1's prompt and answer, then new ids.
  std::vector<int32_t> turn2(const std::vector<int32_t>& answer1) const {
    std::vector<int32_t> p = prompt1_;
    p.insert(p.end(), answer1.begin(), answer1.end());
    for (int32_t t : {300, 301, 302, 303, 304}) p.push_back(t);
    return p;
  }
};

TEST_F(CApiSessions, ExportedFromOneRuntimeContinuesInAnother) {
  edgellm_runtime* a = open_runtime(stories());
  ASSERT_NE(a, nullptr);
  Result first;
  ASSERT_EQ(run(a, prompt1_, first, "chat-1"), EDGELLM_OK) << edgellm_last_error();
  ASSERT_EQ(first.tokens.size(), 12u) << first.error;
  EXPECT_TRUE(first.session_stored);
  EXPECT_EQ(first.session_save_status, EDGELLM_OK);  // no file asked for
  EXPECT_NE(list_json(a).find("\"id\": \"chat-1\""), std::string::npos) << list_json(a);
  edgellm_metrics m = edgellm_metrics_init();
  ASSERT_EQ(edgellm_metrics_get(a, &m), EDGELLM_OK);
  EXPECT_EQ(m.sessions, 1);
  edgellm_status st = EDGELLM_OK;
  const std::string bytes = export_bytes(a, "chat-1", &st);
  ASSERT_EQ(st, EDGELLM_OK) << edgellm_last_error();
  EXPECT_EQ(m.session_bytes, bytes.size());
  // A buffer one byte short: BUFFER_TOO_SMALL, the size, nothing written.
  std::string short_buf(bytes.size() - 1, '\x5a');
  size_t len = 0;
  EXPECT_EQ(edgellm_session_export(a, "chat-1", short_buf.data(), short_buf.size(), &len), EDGELLM_ERR_BUFFER_TOO_SMALL);
  EXPECT_EQ(len, bytes.size());
  EXPECT_EQ(short_buf, std::string(bytes.size() - 1, '\x5a'));

  // The second runtime: no session yet, then the imported bytes.
  edgellm_runtime* b = open_runtime(stories());
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(export_bytes(b, "chat-1", &st), "");
  EXPECT_EQ(st, EDGELLM_ERR_NOT_FOUND);
  int32_t positions = -1;
  ASSERT_EQ(edgellm_session_import(b, "moved", bytes.data(), bytes.size(), &positions), EDGELLM_OK) << edgellm_last_error();
  // Turn 1's prompt and the answer's decoded tokens (the last sampled one never was).
  EXPECT_EQ(positions, static_cast<int32_t>(prompt1_.size() + first.tokens.size() - 1));
  const std::vector<int32_t> prompt2 = turn2(first.tokens);
  Result continued;
  ASSERT_EQ(run(b, prompt2, continued, "moved"), EDGELLM_OK) << edgellm_last_error();
  EXPECT_EQ(continued.cached_tokens, positions) << "restored instead of prefilled";
  EXPECT_TRUE(continued.session_stored);  // the id now holds turn 2

  // The reference: a fresh runtime that prefills the whole of turn 2.
  edgellm_runtime* c = open_runtime(stories());
  ASSERT_NE(c, nullptr);
  Result full;
  ASSERT_EQ(run(c, prompt2, full, nullptr), EDGELLM_OK);
  EXPECT_EQ(full.cached_tokens, 0);
  EXPECT_EQ(continued.tokens, full.tokens) << "the moved session answers differently from a full prefill";
  ASSERT_EQ(full.tokens.size(), 12u);

  // Files: save b's session, load it into c under another id, continue there.
  const std::string path = edgellm::test::temp_dir() + "/moved.kvs";
  std::remove(path.c_str());
  ASSERT_EQ(edgellm_session_save_file(b, "moved", path.c_str()), EDGELLM_OK) << edgellm_last_error();
  EXPECT_EQ(edgellm_session_save_file(b, "nothing", path.c_str()), EDGELLM_ERR_NOT_FOUND);
  EXPECT_FALSE(edgellm::test::temp_file_left(path));
  positions = -1;
  ASSERT_EQ(edgellm_session_load_file(c, "from-file", path.c_str(), &positions), EDGELLM_OK) << edgellm_last_error();
  EXPECT_EQ(positions, static_cast<int32_t>(prompt2.size() + continued.tokens.size() - 1));
  EXPECT_EQ(edgellm_session_load_file(c, "x", (path + ".missing").c_str(), nullptr), EDGELLM_ERR_IO);

  // Delete: gone, and a second delete is NOT_FOUND.
  EXPECT_EQ(edgellm_session_delete(b, "moved"), EDGELLM_OK);
  EXPECT_EQ(edgellm_session_delete(b, "moved"), EDGELLM_ERR_NOT_FOUND);
  EXPECT_EQ(list_json(b).find("moved"), std::string::npos) << list_json(b);
  for (edgellm_runtime* rt : {a, b, c}) EXPECT_EQ(edgellm_runtime_destroy(rt), EDGELLM_OK);
  std::remove(path.c_str());
}

// A request can save its KV to a file and a new runtime continue from it (the "session kept
// across an app restart" of the ArkTS sample), and keep it under an id at the same time.
TEST_F(CApiSessions, SavePathAndIdTogether) {
  const std::string path = edgellm::test::temp_dir() + "/restart.kvs";
  std::remove(path.c_str());
  edgellm_runtime* a = open_runtime(stories());
  ASSERT_NE(a, nullptr);
  Result first;
  ASSERT_EQ(run(a, prompt1_, first, "keep", nullptr, path.c_str()), EDGELLM_OK) << edgellm_last_error();
  EXPECT_TRUE(first.session_stored);
  EXPECT_EQ(first.session_save_status, EDGELLM_OK);
  edgellm_status st = EDGELLM_OK;
  const std::string kept = export_bytes(a, "keep", &st);
  ASSERT_EQ(st, EDGELLM_OK);
  EXPECT_EQ(edgellm::test::read_file(path), kept) << "the file and the kept session are the same bytes";
  // A save path in a folder that does not exist: the request answers, the result says why not.
  Result unsaved;
  const std::string bad_path = edgellm::test::temp_dir() + "/no/such/dir/x.kvs";
  ASSERT_EQ(run(a, prompt1_, unsaved, nullptr, nullptr, bad_path.c_str()), EDGELLM_OK);
  EXPECT_EQ(unsaved.reason, EDGELLM_FINISH_LENGTH);
  EXPECT_EQ(unsaved.session_save_status, EDGELLM_ERR_IO);
  EXPECT_EQ(edgellm_runtime_destroy(a), EDGELLM_OK);

  edgellm_runtime* b = open_runtime(stories());
  ASSERT_NE(b, nullptr);
  Result continued;
  ASSERT_EQ(run(b, turn2(first.tokens), continued, nullptr, path.c_str()), EDGELLM_OK) << edgellm_last_error();
  EXPECT_EQ(continued.cached_tokens, static_cast<int32_t>(prompt1_.size() + first.tokens.size() - 1));
  EXPECT_EQ(continued.reason, EDGELLM_FINISH_LENGTH) << continued.error;
  // An id and a file to continue from at once: refused.
  Result refused;
  EXPECT_EQ(run(b, prompt1_, refused, "keep", path.c_str()), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_runtime_destroy(b), EDGELLM_OK);
  std::remove(path.c_str());
}

TEST_F(CApiSessions, TheStoreKeepsTheMostRecentlyUsed) {
  edgellm_runtime* rt = open_runtime(stories(), 2);
  ASSERT_NE(rt, nullptr);
  for (const char* id : {"s1", "s2", "s3"}) {
    Result r;
    ASSERT_EQ(run(rt, prompt1_, r, id), EDGELLM_OK) << edgellm_last_error();
    EXPECT_TRUE(r.session_stored);
  }
  const std::string list = list_json(rt);
  EXPECT_EQ(list.find("\"s1\""), std::string::npos) << list;  // the least recently used went
  EXPECT_LT(list.find("\"s3\""), list.find("\"s2\"")) << list;  // most recently used first
  EXPECT_NE(list.find("\"max_sessions\": 2"), std::string::npos) << list;
  EXPECT_EQ(edgellm_runtime_destroy(rt), EDGELLM_OK);
}

TEST_F(CApiSessions, RefusalsChangeNothing) {
  edgellm_runtime* rt = open_runtime(stories());
  ASSERT_NE(rt, nullptr);
  Result first;
  ASSERT_EQ(run(rt, prompt1_, first, "good"), EDGELLM_OK);
  edgellm_status st = EDGELLM_OK;
  const std::string bytes = export_bytes(rt, "good", &st);
  ASSERT_EQ(st, EDGELLM_OK);
  int32_t positions = 7;

  // Ids: empty, too long, characters outside [A-Za-z0-9_.-], NULL.
  for (const std::string& bad : {std::string(), std::string(65, 'a'), std::string("a/b"), std::string("sp ace")}) {
    EXPECT_EQ(edgellm_session_import(rt, bad.c_str(), bytes.data(), bytes.size(), &positions), EDGELLM_ERR_INVALID_ARGUMENT)
        << bad;
    EXPECT_EQ(positions, 0);
    Result r;
    EXPECT_EQ(run(rt, prompt1_, r, bad.c_str()), EDGELLM_ERR_INVALID_ARGUMENT) << bad;
    EXPECT_NE(std::string(edgellm_last_error()).find("session_id"), std::string::npos) << edgellm_last_error();
  }
  EXPECT_EQ(edgellm_session_import(rt, nullptr, bytes.data(), bytes.size(), nullptr), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_session_import(rt, "x", nullptr, 10, nullptr), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_session_import(rt, "x", bytes.data(), 0, nullptr), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_session_import(nullptr, "x", bytes.data(), bytes.size(), nullptr), EDGELLM_ERR_INVALID_ARGUMENT);
  // Truncated and corrupted bytes.
  EXPECT_EQ(edgellm_session_import(rt, "x", bytes.data(), bytes.size() / 2, nullptr), EDGELLM_ERR_INVALID_FILE);
  std::string flipped = bytes;
  flipped[bytes.size() - 100] = static_cast<char>(flipped[bytes.size() - 100] ^ 1);
  EXPECT_EQ(edgellm_session_import(rt, "x", flipped.data(), flipped.size(), nullptr), EDGELLM_ERR_INVALID_FILE);
  EXPECT_NE(std::string(edgellm_last_error()).find("checksum"), std::string::npos) << edgellm_last_error();
  EXPECT_EQ(export_bytes(rt, "x", &st), "");
  EXPECT_EQ(st, EDGELLM_ERR_NOT_FOUND);
  // Export / delete / list / files with NULLs.
  size_t len = 0;
  EXPECT_EQ(edgellm_session_export(rt, nullptr, nullptr, 0, &len), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_session_export(rt, "good", nullptr, 0, nullptr), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_session_export(nullptr, "good", nullptr, 0, &len), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_session_delete(rt, nullptr), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_session_delete(nullptr, "good"), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_session_list_json(rt, nullptr, 0, nullptr), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_session_list_json(nullptr, nullptr, 0, &len), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_session_save_file(rt, "good", nullptr), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_session_save_file(rt, nullptr, "/tmp/x"), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_session_load_file(rt, "good", nullptr, nullptr), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_session_load_file(rt, nullptr, "/tmp/x", nullptr), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_session_load_file(nullptr, "good", "/tmp/x", nullptr), EDGELLM_ERR_INVALID_ARGUMENT);
  // The kept session is untouched by all of that.
  EXPECT_EQ(export_bytes(rt, "good", &st), bytes);

  // Another model: its sessions do not fit this one.
  edgellm_runtime* zh = open_runtime(edgellm::test::shared_model("tiny-zh-poems.gguf"));
  ASSERT_NE(zh, nullptr);
  EXPECT_EQ(edgellm_session_import(zh, "good", bytes.data(), bytes.size(), nullptr), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(edgellm_last_error()).find("another model"), std::string::npos) << edgellm_last_error();
  EXPECT_EQ(edgellm_runtime_destroy(zh), EDGELLM_OK);

  // Sessions off: ids refused, by submit and import alike.
  edgellm_runtime* off = open_runtime(stories(), 0);
  ASSERT_NE(off, nullptr);
  Result r;
  EXPECT_EQ(run(off, prompt1_, r, "good"), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(edgellm_last_error()).find("sessions are off"), std::string::npos) << edgellm_last_error();
  EXPECT_EQ(edgellm_session_import(off, "good", bytes.data(), bytes.size(), nullptr), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(edgellm_runtime_destroy(off), EDGELLM_OK);
  EXPECT_EQ(edgellm_runtime_destroy(rt), EDGELLM_OK);
}

}  // namespace
