// Sessions over HTTP: a conversation carried by x_edgellm_session on server A, exported and
// imported into server B (same model file, separate service and KV cache), continues on B with
// exactly the tokens A answers when the conversation goes on there, and B restores the saved
// positions instead of prefilling them (usage.prompt_tokens_details.cached_tokens: B never saw
// the prompt, so without the import it would be 0). Imports from another model, another KV
// type, truncated or bit-flipped bytes are refused with a 400 naming why and store nothing; the
// endpoints need the API key; the body limits hold; the store is a bounded LRU.
#include <gtest/gtest.h>
#include <httplib.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <thread>

#include "core/json.h"
#include "model/model.h"
#include "runtime/runtime.h"
#include "runtime/session_store.h"
#include "server/http_server.h"
#include "service/inference_service.h"
#include "support/test_env.h"

namespace edgellm::server {
namespace {

constexpr const char* kKey = "s3cret-key";

// One `edgellm serve` on a free loopback port (a service of its own, API key kKey).
class Serve {
 public:
  // max_session_bytes: the Runtime's session store (also the largest import).
  explicit Serve(const std::string& model_file, TensorType kv_type = TensorType::F32, ServerOptions so = {},
                 size_t max_session_bytes = RuntimeParams().max_session_bytes) {
    RuntimeParams rp;
    rp.model_path = test::shared_model(model_file);
    rp.max_session_bytes = max_session_bytes;
    ServiceParams& sp = rp.service;
    sp.context.n_ctx = 256;
    sp.context.n_seq_max = 1;
    sp.context.kv_type = kv_type;
    sp.max_queued = 2;
    runtime_ = std::make_unique<Runtime>(std::move(rp));
    so.port = 0;
    so.api_key = kKey;
    server_ = std::make_unique<HttpServer>(*runtime_, so);
    port_ = server_->bind();
    thread_ = std::thread([this] { server_->serve(); });
  }
  ~Serve() {
    server_->stop();
    thread_.join();
    runtime_->shutdown();
  }
  // A raw HTTP/1.1 exchange (for requests httplib's client will not send); the whole answer.
  std::string raw(const std::string& request) const {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port_));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval tv{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    std::string got;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
        ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size())) {
      char buf[4096];
      for (ssize_t n; (n = ::recv(fd, buf, sizeof(buf), 0)) > 0;) got.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    return got;
  }
  httplib::Client client(bool with_key = true) const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(30, 0);
    if (with_key) c.set_bearer_token_auth(kKey);
    return c;
  }
  // POST; *status gets the HTTP status (-1: no response); returns the body.
  std::string post(const std::string& path, const std::string& body, const char* type, int* status,
                   bool with_key = true) const {
    httplib::Client c = client(with_key);
    auto res = c.Post(path.c_str(), body, type);
    *status = res ? res->status : -1;
    return res ? res->body : std::string();
  }

 private:
  std::unique_ptr<Runtime> runtime_;
  std::unique_ptr<HttpServer> server_;
  int port_ = -1;
  std::thread thread_;
};

Json greedy_completion(const std::string& prompt, const std::string& session) {
  Json b = Json::object();
  b.set("prompt", prompt);
  b.set("max_tokens", 20);
  b.set("temperature", 0);
  if (!session.empty()) b.set("x_edgellm_session", session);
  return b;
}

// A greedy completion on `s` (status 200 expected); returns the response body.
Json complete(const Serve& s, const std::string& prompt, const std::string& session) {
  int status = 0;
  const std::string body = s.post("/v1/completions", greedy_completion(prompt, session).dump(), "application/json", &status);
  EXPECT_EQ(status, 200) << body;
  return status == 200 ? Json::parse(body) : Json::object();
}

std::string text_of(const Json& completion) { return completion.at("choices").at(0).at("text").as_string(); }

int cached_tokens(const Json& completion) {
  return static_cast<int>(completion.at("usage").at("prompt_tokens_details").at("cached_tokens").as_number());
}

// POSTs a request that must be refused with want_status; returns its OpenAI error object.
Json refused(const Serve& s, const std::string& path, const std::string& body, const char* type, int want_status) {
  int status = 0;
  const std::string answer = s.post(path, body, type, &status);
  EXPECT_EQ(status, want_status) << path << ": " << answer;
  const Json j = Json::parse(answer);
  EXPECT_TRUE(j.find("error") != nullptr) << answer;
  return j.at("error");
}

const char* kOctets = "application/octet-stream";

TEST(SessionsHttp, ExportedConversationContinuesExactlyOnAnotherServer) {
  Serve a("stories260K.gguf");
  Serve b("stories260K.gguf");
  const std::string p1 = "Once upon a time, there was a little girl named Lily.";

  // Turn 1 on A, kept under "trip".
  const Json t1 = complete(a, p1, "trip");
  const Json& info = t1.at("x_edgellm").at("session");
  EXPECT_EQ(info.at("id").as_string(), "trip");
  EXPECT_TRUE(info.at("stored").as_bool());

  // Export from A (the key is required), import into B under the same id.
  int status = 0;
  a.post("/v1/sessions/trip/export", "", kOctets, &status, /*with_key=*/false);
  EXPECT_EQ(status, 401);
  const std::string bytes = a.post("/v1/sessions/trip/export", "", kOctets, &status);
  ASSERT_EQ(status, 200);
  ASSERT_GT(bytes.size(), 64u);
  EXPECT_EQ(static_cast<double>(bytes.size()), info.at("bytes").as_number());
  // The same bytes by GET, and by a POST without any body header (`curl -X POST`).
  auto got = a.client().Get("/v1/sessions/trip/export");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, 200);
  EXPECT_EQ(got->body, bytes);
  EXPECT_EQ(got->get_header_value("Content-Type"), kOctets);
  const std::string raw = a.raw(std::string("POST /v1/sessions/trip/export HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ") +
                                kKey + "\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(raw.rfind("HTTP/1.1 200", 0), 0u) << raw.substr(0, 200);
  EXPECT_TRUE(raw.size() > bytes.size() && raw.compare(raw.size() - bytes.size(), bytes.size(), bytes) == 0);
  b.post("/v1/sessions/import?id=trip", bytes, kOctets, &status, /*with_key=*/false);
  EXPECT_EQ(status, 401);
  const std::string imported = b.post("/v1/sessions/import?id=trip", bytes, kOctets, &status);
  ASSERT_EQ(status, 200) << imported;
  const Json imp = Json::parse(imported);
  EXPECT_EQ(imp.at("id").as_string(), "trip");
  const int saved_tokens = static_cast<int>(imp.at("tokens").as_number());
  EXPECT_GT(saved_tokens, 10);

  // Turn 2: the conversation so far plus a new part, greedy, on B (from the import) and on A
  // (uninterrupted). Identical tokens; B restored the saved positions instead of prefilling.
  const std::string p2 = p1 + text_of(t1) + " One day,";
  const Json on_b = complete(b, p2, "trip");
  const Json on_a = complete(a, p2, "trip");
  EXPECT_FALSE(text_of(on_a).empty());
  EXPECT_EQ(text_of(on_b), text_of(on_a));
  EXPECT_EQ(on_b.at("usage").at("completion_tokens").as_number(), on_a.at("usage").at("completion_tokens").as_number());
  EXPECT_GE(cached_tokens(on_b), 10);
  EXPECT_LT(cached_tokens(on_b), static_cast<int>(on_b.at("usage").at("prompt_tokens").as_number()));

  // Without a session, a fresh server B2 prefills everything (the import is what B reused).
  Serve b2("stories260K.gguf");
  const Json cold = complete(b2, p2, "");
  EXPECT_EQ(cached_tokens(cold), 0);
  EXPECT_EQ(text_of(cold), text_of(on_a));

  // A streamed chat keeps its session too (named in the last chunk's x_edgellm).
  {
    Json chat = Json::object();
    Json msgs = Json::array();
    Json m = Json::object();
    m.set("role", "user");
    m.set("content", "Tell me a story");
    msgs.push_back(std::move(m));
    chat.set("messages", std::move(msgs));
    chat.set("max_tokens", 8);
    chat.set("temperature", 0);
    chat.set("stream", true);
    chat.set("x_edgellm_session", "chat-1");
    const std::string sse = b.post("/v1/chat/completions", chat.dump(), "application/json", &status);
    EXPECT_EQ(status, 200);
    EXPECT_NE(sse.find(R"("session": {"id": "chat-1", "stored": true)"), std::string::npos) << sse;
    EXPECT_GT(b.post("/v1/sessions/chat-1/export", "", kOctets, &status).size(), 64u);
    EXPECT_EQ(status, 200);
  }

  // An import without ?id= gets a new id; export of the new id returns the same bytes; DELETE
  // removes it.
  const Json fresh = Json::parse(b.post("/v1/sessions/import", bytes, kOctets, &status));
  ASSERT_EQ(status, 200);
  const std::string id = fresh.at("id").as_string();
  EXPECT_TRUE(SessionStore::valid_id(id)) << id;
  EXPECT_EQ(b.post("/v1/sessions/" + id + "/export", "", kOctets, &status), bytes);
  EXPECT_EQ(status, 200);
  auto del = b.client().Delete(("/v1/sessions/" + id).c_str());
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 200);
  refused(b, "/v1/sessions/" + id + "/export", "", kOctets, 404);
}

TEST(SessionsHttp, ImportRefusesOtherModelKvTypeTruncatedAndFlippedBytes) {
  ServerOptions small;
  small.max_body_bytes = 4096;  // JSON bodies
  // Session imports (and the Runtime's store): 256 KiB.
  Serve a("stories260K.gguf", TensorType::F32, small, size_t{256} << 10);
  complete(a, "Once upon a time, there was a big dog named Max. Max liked to run in the park.", "s");
  int status = 0;
  const std::string bytes = a.post("/v1/sessions/s/export", "", kOctets, &status);
  ASSERT_EQ(status, 200);
  ASSERT_GT(bytes.size(), small.max_body_bytes);  // a session may be larger than a JSON body

  auto import_into = [&](const Serve& s, const std::string& body, int want) {
    return refused(s, "/v1/sessions/import?id=x", body, kOctets, want);
  };
  auto contains = [](const Json& err, const std::string& what) {
    return err.at("message").as_string().find(what) != std::string::npos;
  };

  // Another model file.
  Serve zh("tiny-zh-poems.gguf");
  Json e = import_into(zh, bytes, 400);
  EXPECT_EQ(e.at("code").as_string(), "session_mismatch");
  EXPECT_TRUE(contains(e, "another model file")) << e.dump();
  // The same model file with another KV type.
  Serve f16("stories260K.gguf", TensorType::F16);
  e = import_into(f16, bytes, 400);
  EXPECT_EQ(e.at("code").as_string(), "session_mismatch");
  EXPECT_TRUE(contains(e, "f32 KV")) << e.dump();
  // Truncated, bit-flipped, empty, not a session: refused by the server that made it.
  e = import_into(a, bytes.substr(0, bytes.size() / 2), 400);
  EXPECT_EQ(e.at("code").as_string(), "invalid_session");
  EXPECT_TRUE(contains(e, "truncated")) << e.dump();
  for (const size_t at : {size_t{3}, size_t{20}, bytes.size() / 2, bytes.size() - 1}) {
    std::string flipped = bytes;
    flipped[at] = static_cast<char>(flipped[at] ^ 0x10);
    e = import_into(a, flipped, 400);
    EXPECT_EQ(e.at("code").as_string(), "invalid_session") << "byte " << at;
  }
  import_into(a, "", 400);
  import_into(a, std::string(100, 'x'), 400);
  // Nothing was stored under the id of the refused imports.
  refused(a, "/v1/sessions/x/export", "", kOctets, 404);
  // A bad id, an import over the session limit, a JSON body over its own limit.
  e = refused(a, "/v1/sessions/import?id=a%20b", bytes, kOctets, 400);
  EXPECT_EQ(e.at("param").as_string(), "id");
  refused(a, "/v1/sessions/import", std::string(300 << 10, 'x'), kOctets, 413);
  refused(a, "/v1/completions", "{\"prompt\": \"" + std::string(5000, 'a') + "\"}", "application/json", 413);
  e = refused(a, "/v1/completions", greedy_completion("Hi", "no/slash").dump(), "application/json", 400);
  EXPECT_EQ(e.at("param").as_string(), "x_edgellm_session");

  // The valid bytes still import, and every server still answers.
  int st = 0;
  a.post("/v1/sessions/import?id=again", bytes, kOctets, &st);
  EXPECT_EQ(st, 200);
  for (const Serve* s : {&a, &zh, &f16}) {
    auto h = s->client().Get("/health");
    ASSERT_TRUE(h);
    EXPECT_EQ(h->status, 200);
  }
}

TEST(SessionStore, BoundedByCountAndBytesLeastRecentlyUsedFirst) {
  SessionStore s(2, 100);
  EXPECT_TRUE(s.put("a", std::string(30, 'a')));
  EXPECT_TRUE(s.put("b", std::string(30, 'b')));
  ASSERT_NE(s.get("a"), nullptr);             // a is now the most recent
  EXPECT_TRUE(s.put("c", std::string(30, 'c')));  // over the count: b goes
  EXPECT_EQ(s.get("b"), nullptr);
  EXPECT_NE(s.get("a"), nullptr);
  EXPECT_TRUE(s.put("d", std::string(60, 'd')));  // count and bytes: c (least recent) goes
  EXPECT_EQ(s.get("c"), nullptr);
  EXPECT_EQ(s.count(), 2u);
  EXPECT_EQ(s.bytes(), 90u);
  const auto held = s.get("a");
  EXPECT_TRUE(s.put("e", std::string(80, 'e')));  // bytes: both others go
  EXPECT_EQ(s.count(), 1u);
  EXPECT_EQ(*held, std::string(30, 'a'));  // a reader keeps its bytes after eviction
  EXPECT_FALSE(s.put("f", std::string(101, 'f')));  // alone over the bound: refused, nothing dropped
  EXPECT_NE(s.get("e"), nullptr);
  EXPECT_TRUE(s.put("e", std::string(10, 'E')));  // replace
  EXPECT_EQ(s.bytes(), 10u);
  EXPECT_TRUE(s.erase("e"));
  EXPECT_FALSE(s.erase("e"));
  EXPECT_EQ(s.bytes(), 0u);
  for (const char* bad : {"", ".", "..", "a/b", "a b", "é"}) EXPECT_FALSE(SessionStore::valid_id(bad)) << bad;
  EXPECT_TRUE(SessionStore::valid_id("sess-0123_ab.c"));
  EXPECT_FALSE(SessionStore::valid_id(std::string(65, 'a')));
}

}  // namespace
}  // namespace edgellm::server
