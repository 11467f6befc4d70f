// The server on a household network (issue 43): each finding of the hostile-traffic run replayed
// with raw sockets, so the bytes are exactly what a hostile client sends.
//
//   desync        pipelined requests answered in order; bytes inside a body never answered as a
//                 request; conflicting / malformed Content-Length and Transfer-Encoding refused
//                 (400) with the connection closed; header floods 431
//   slow clients  24 sockets trickling 10 bytes/s: /health and a greedy completion still
//                 answered within a second; head / body deadlines (408); a connection limit per
//                 client address; a full worker pool answers 503 while /health stays up
//   rebinding     a keyless server refuses a foreign Host; cross-origin simple POSTs (text/plain,
//                 form-encoded) refused by Origin; a JSON body is served whatever its type
//   memory        8 concurrent 1 MB /tokenize with pieces: bounded peak, admission by slots
//   valid JSON    byte-level pieces (an emoji in tiny-zh-poems) as byte arrays
//   smaller       a half-closed client gets its answer; HTTP/1.0 streams are not chunked;
//                 Expect: 100-continue; chunked bodies; a body over the limit refused unread
//
// EDGELLM_TEST_SERVE_BIN=path/to/edgellm runs the same cases against that binary (serve_harness.h):
// that is how they were shown to fail on the server before this change (docs/testing.md).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/json.h"
#include "core/utf8.h"
#include "model/model.h"
#include "serve_harness.h"
#include "support/sanitizer.h"
#include "support/test_env.h"
#include "tokenizer/tokenizer.h"

namespace edgellm::server::test {
namespace {

using std::chrono::milliseconds;

// "Within a second" for a request next to hostile sockets (the issue's bound): the old server
// took > 10 s; a 16-token greedy completion of stories260K takes milliseconds, ~50 ms under TSan.
constexpr milliseconds kPromptly{1000};

using edgellm::test::kSanitized;  // under a sanitizer: RSS is its shadow memory and quarantine, not ours

#define SKIP_IF_EXTERNAL()                                                                        \
  if (!serve_binary().empty()) GTEST_SKIP() << "needs ServerOptions that `edgellm serve` has no " \
                                               "flag for (in-process only)"

ServeConfig config(int32_t parallel = 2, int32_t queued = 2) {
  ServeConfig c;
  c.parallel = parallel;
  c.queued = queued;
  return c;
}

std::string greedy_body(const std::string& prompt, int max_tokens, bool stream = false) {
  Json b = Json::object();
  b.set("prompt", prompt);
  b.set("max_tokens", max_tokens);
  b.set("temperature", 0);
  if (stream) b.set("stream", true);
  return b.dump();
}

std::string completion_text(const RawResponse& r) {
  return Json::parse(r.body).at("choices").at(0).at("text").as_string();
}

// The reference: the same greedy completion asked alone on a fresh connection.
std::string reference_text(int port, const std::string& prompt, int max_tokens) {
  const RawResponse r = round_trip(port, post_request("/v1/completions", greedy_body(prompt, max_tokens)));
  EXPECT_EQ(r.status, 200) << r.body;
  return r.status == 200 ? completion_text(r) : std::string();
}

std::string error_code(const RawResponse& r) {
  try {
    return Json::parse(r.body).at("error").at("code").as_string();
  } catch (...) {
    return "(no error object: " + r.body.substr(0, 80) + ")";
  }
}

TEST(HttpHardening, PipelinedRequestsAnsweredInOrder) {
  TestServer s(config());
  const std::string expected = reference_text(s.port(), "Once upon a time", 6);
  Conn c(s.port());
  ASSERT_TRUE(c.send(post_request("/v1/completions", greedy_body("Once upon a time", 6)) + get_request("/v1/models") +
                     get_request("/health")));
  const RawResponse first = c.read_response();
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(completion_text(first), expected);
  const RawResponse second = c.read_response();
  ASSERT_EQ(second.status, 200) << "the second pipelined request was dropped";
  EXPECT_EQ(Json::parse(second.body).at("object").as_string(), "list");
  const RawResponse third = c.read_response();
  ASSERT_EQ(third.status, 200) << "the third pipelined request was dropped";
  EXPECT_EQ(Json::parse(third.body).at("status").as_string(), "ok");
}

// A request written inside a body (past httplib 0.11's 4 KiB read-ahead) must never be answered.
TEST(HttpHardening, BodyBytesAreNeverParsedAsARequest) {
  TestServer s(config());
  const std::string smuggled = "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  const std::string body = std::string(5000, 'x') + smuggled + std::string(1000, 'y');
  Conn c(s.port(), nullptr, 3000);
  ASSERT_TRUE(c.send(post_request("/v1/completions", body, "Content-Type: application/json\r\n") +
                     get_request("/health")));
  const RawResponse first = c.read_response();
  EXPECT_EQ(first.status, 400);
  EXPECT_EQ(error_code(first), "invalid_json");
  const RawResponse second = c.read_response();
  ASSERT_EQ(second.status, 200);
  EXPECT_EQ(Json::parse(second.body).at("status").as_string(), "ok") << "answered bytes of the body as a request";
  // Nothing else: no /v1/models answer from inside the body.
  const RawResponse third = c.read_response();
  EXPECT_EQ(third.status, -1) << third.body;
}

TEST(HttpHardening, ConflictingOrMalformedLengthsRefused) {
  TestServer s(config());
  const std::string json = greedy_body("Once", 2);
  const std::string n = std::to_string(json.size());
  struct Case {
    const char* what;
    std::string request;
  };
  const std::vector<Case> cases = {
      {"two different Content-Length", "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\n"
                                       "Content-Length: " + n + "\r\n\r\n" + json},
      {"Content-Length then chunked", "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " + n +
                                          "\r\nTransfer-Encoding: chunked\r\n\r\n" + json},
      {"chunked then Content-Length", "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n"
                                      "Content-Length: " + n + "\r\n\r\n" + json},
      {"a coding other than chunked", "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: gzip\r\n\r\n" +
                                          json},
      {"gzip, chunked", "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5\r\n"
                        "hello\r\n0\r\n\r\n"},
      {"chunked twice", "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n"
                        "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
      {"chunked in HTTP/1.0", "POST /v1/completions HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
      {"negative length", "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -1\r\n\r\n" + json},
      {"length with an exponent", "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1e3\r\n\r\n" + json},
      {"two lengths in one field", "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " + n + ", 7\r\n\r\n" +
                                       json},
      {"no Host in HTTP/1.1", "POST /v1/completions HTTP/1.1\r\nContent-Length: " + n + "\r\n\r\n" + json},
      {"two Host fields", "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: localhost\r\nContent-Length: " + n +
                              "\r\n\r\n" + json},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.what);
    Conn c(s.port(), nullptr, 3000);
    // A request after the ambiguous one: answering it would mean the boundary was guessed.
    ASSERT_TRUE(c.send(k.request + get_request("/health")));
    const RawResponse r = c.read_response();
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(r.header("Connection"), "close");
    EXPECT_TRUE(c.closed_by_peer(3000)) << "the connection stayed open after an ambiguous request";
    EXPECT_EQ(c.leftover().find("HTTP/1.1 200"), std::string::npos) << "a second response: " << c.leftover();
  }
}

TEST(HttpHardening, HeaderFloodsRefused) {
  TestServer s(config());
  // 105 KB of headers in small lines.
  std::string flood = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  for (int i = 0; flood.size() < 105000; ++i) flood += "X-Flood-" + std::to_string(i) + ": " + std::string(40, 'a') + "\r\n";
  flood += "\r\n";
  std::string many = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  for (int i = 0; i < 70; ++i) many += "X-" + std::to_string(i) + ": 1\r\n";
  many += "\r\n";
  const std::string one_long = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + std::string(9000, 'b') + "\r\n\r\n";
  for (const std::string* req : std::vector<const std::string*>{&flood, &many, &one_long}) {
    Conn c(s.port(), nullptr, 3000);
    c.send(*req);
    const RawResponse r = c.read_response();
    EXPECT_EQ(r.status, 431) << req->size() << " bytes of head: " << r.body;
    EXPECT_TRUE(c.closed_by_peer(3000));
  }
  // Still serving.
  EXPECT_EQ(round_trip(s.port(), get_request("/health")).status, 200);
}

// 24 sockets sending a request head at 10 bytes/s hold nothing another client needs.
TEST(HttpHardening, SlowSocketsDoNotStarveOthers) {
  TestServer s(config());
  const std::string expected = reference_text(s.port(), "Once upon a time", 16);
  constexpr int kSlow = 24;
  std::vector<std::unique_ptr<Conn>> slow;
  for (int i = 0; i < kSlow; ++i) {
    slow.push_back(std::make_unique<Conn>(s.port()));
    ASSERT_TRUE(slow.back()->ok());
  }
  const std::string head = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\nX-Slow: " +
                           std::string(200, 's');
  std::atomic<bool> stop{false};
  std::atomic<size_t> sent{0};
  std::thread trickler([&] {
    for (size_t i = 0; i < head.size() && !stop.load(); ++i) {
      for (auto& c : slow) c->send(std::string_view(&head[i], 1));
      sent.store(i + 1);
      std::this_thread::sleep_for(milliseconds(100));  // the attack's pace, not synchronisation
    }
  });
  // Observable state: every slow socket has started its head.
  const Clock::time_point limit = Clock::now() + std::chrono::seconds(10);
  while (sent.load() < 5 && Clock::now() < limit) std::this_thread::sleep_for(milliseconds(10));
  ASSERT_GE(sent.load(), 5u);

  Clock::time_point t0 = Clock::now();
  const RawResponse health = round_trip(s.port(), get_request("/health"), 15000);
  const milliseconds health_ms = std::chrono::duration_cast<milliseconds>(Clock::now() - t0);
  t0 = Clock::now();
  const RawResponse greedy = round_trip(s.port(), post_request("/v1/completions", greedy_body("Once upon a time", 16)), 15000);
  const milliseconds greedy_ms = std::chrono::duration_cast<milliseconds>(Clock::now() - t0);
  stop.store(true);
  trickler.join();
  std::printf("next to %d slow sockets: /health %lld ms, greedy completion %lld ms\n", kSlow,
              static_cast<long long>(health_ms.count()), static_cast<long long>(greedy_ms.count()));
  EXPECT_EQ(health.status, 200);
  EXPECT_LT(health_ms, kPromptly);
  ASSERT_EQ(greedy.status, 200);
  EXPECT_EQ(completion_text(greedy), expected);
  EXPECT_LT(greedy_ms, kPromptly);
}

TEST(HttpHardening, HeadAndBodyDeadlines) {
  SKIP_IF_EXTERNAL();
  ServeConfig c = config();
  c.options.read_timeout_s = 1;
  c.needs_in_process = true;
  TestServer s(c);
  {
    Conn half(s.port(), nullptr, 5000);
    half.send("POST /v1/completions HTTP/1.1\r\nHost: 12");
    const Clock::time_point t0 = Clock::now();
    const RawResponse r = half.read_response();
    EXPECT_EQ(r.status, 408);
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(4));  // 1 s deadline; generous for a loaded machine
    EXPECT_TRUE(half.closed_by_peer(3000));
  }
  {
    Conn body(s.port(), nullptr, 5000);
    body.send("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{\"prompt\":");
    const RawResponse r = body.read_response();
    EXPECT_EQ(r.status, 408);
    EXPECT_TRUE(body.closed_by_peer(3000));
  }
  {
    Conn idle(s.port(), nullptr, 5000);
    EXPECT_TRUE(idle.closed_by_peer(4000)) << "an idle connection was kept open";
  }
  ASSERT_NE(s.http(), nullptr);
  EXPECT_GE(s.http()->counters().timeouts.load(), 3u);
}

TEST(HttpHardening, ConnectionsPerClientAddressBounded) {
  ServeConfig c = config();
  c.options.max_client_connections = 4;
  TestServer s(c);
  std::vector<std::unique_ptr<Conn>> held;
  for (int i = 0; i < 4; ++i) {
    held.push_back(std::make_unique<Conn>(s.port(), "127.0.0.2"));
    ASSERT_TRUE(held.back()->ok());
    // Each is accepted and served (so the server has counted it).
    ASSERT_TRUE(held.back()->send(get_request("/health")));
    ASSERT_EQ(held.back()->read_response().status, 200);
  }
  Conn fifth(s.port(), "127.0.0.2", 3000);
  const RawResponse refused = fifth.read_response();
  EXPECT_EQ(refused.status, 503);
  EXPECT_EQ(error_code(refused), "too_many_connections");
  EXPECT_TRUE(fifth.closed_by_peer(3000));
  // Another address is not affected.
  EXPECT_EQ(round_trip(s.port(), get_request("/health")).status, 200);
  // One of the four leaves: a new connection from 127.0.0.2 is served again.
  held.pop_back();
  RawResponse again;
  const Clock::time_point limit = Clock::now() + std::chrono::seconds(5);
  do {
    Conn c2(s.port(), "127.0.0.2", 3000);
    c2.send(get_request("/health"));
    again = c2.read_response();
  } while (again.status != 200 && Clock::now() < limit);
  EXPECT_EQ(again.status, 200);
}

// Two streams hold both workers; one request waits, the next is told 503 at once; /health is
// answered all along.
TEST(HttpHardening, BusyWorkersAnswer503AndHealthStaysUp) {
  SKIP_IF_EXTERNAL();
  ServeConfig c = config(2, 2);
  // Streams long enough (8000 tokens each, ~2 s at full speed, far longer under ctest -j2 and the
  // sanitizers) that a loaded machine cannot finish them before the poll below sees both
  // running. 16384 positions shared by the two sequences: ~20 MB of F32 KV for stories260K.
  c.n_ctx = 16384;
  c.options.http_threads = 2;
  c.options.http_waiting = 1;
  c.needs_in_process = true;
  TestServer s(c);
  const std::string long_stream =
      R"({"prompt": "Once", "max_tokens": 8000, "ignore_eos": true, "temperature": 1, "stream": true})";
  std::vector<std::unique_ptr<Conn>> streams;
  for (int i = 0; i < 2; ++i) {
    streams.push_back(std::make_unique<Conn>(s.port()));
    ASSERT_TRUE(streams.back()->send(post_request("/v1/completions", long_stream)));
  }
  // Both streams running, then the service paused: their workers stay with them (waiting for
  // tokens) for as long as the test needs.
  const Clock::time_point limit = Clock::now() + std::chrono::seconds(10);
  while (s.service()->metrics().running < 2 && Clock::now() < limit) std::this_thread::sleep_for(milliseconds(5));
  ASSERT_EQ(s.service()->metrics().running, 2);
  s.service()->pause();

  // Two more: one takes the waiting line (1), the other is told 503 at once. Which is which
  // depends on which head the server read first.
  Conn a(s.port(), nullptr, 3000), b(s.port(), nullptr, 3000);
  ASSERT_TRUE(a.send(post_request("/tokenize", R"({"content": "Once upon a time"})")));
  ASSERT_TRUE(b.send(post_request("/tokenize", R"({"content": "Once upon a time"})")));
  const RawResponse ra = a.read_response();
  const RawResponse rb = b.read_response();
  const RawResponse& busy = ra.status == 503 ? ra : rb;
  Conn& waiting = ra.status == 503 ? b : a;
  EXPECT_EQ(busy.status, 503);
  EXPECT_EQ(error_code(busy), "server_busy");
  EXPECT_EQ(busy.header("Retry-After"), "1");
  EXPECT_EQ((ra.status == 503 ? rb : ra).status, -1) << "the other one waits for a worker";
  const Clock::time_point t0 = Clock::now();
  EXPECT_EQ(round_trip(s.port(), get_request("/health")).status, 200);
  EXPECT_LT(Clock::now() - t0, kPromptly);
  EXPECT_GE(s.http()->counters().overloaded.load(), 1u);

  // The streams' clients leave: their generations are cancelled and the waiting request runs.
  s.service()->resume();
  streams.clear();
  RawResponse served;
  const Clock::time_point limit2 = Clock::now() + std::chrono::seconds(20);
  do {
    served = waiting.read_response();
  } while (served.status == -1 && Clock::now() < limit2);
  EXPECT_EQ(served.status, 200) << served.body;
}

TEST(HttpHardening, ForeignHostRefusedOnKeylessServer) {
  TestServer s(config());
  const std::string port = std::to_string(s.port());
  for (const std::string& host : std::vector<std::string>{"evil.example", "evil.example:" + port, "127.0.0.1.evil.example",
                                                       "localhost.evil"}) {
    const RawResponse r = round_trip(s.port(), get_request("/v1/models", "", host));
    EXPECT_EQ(r.status, 403) << host;
    EXPECT_EQ(error_code(r), "host_not_allowed") << host;
  }
  // A rebinding page's POST carries its own name too.
  EXPECT_EQ(round_trip(s.port(), post_request("/v1/completions", greedy_body("Once", 2), "", "evil.example")).status, 403);
  for (const std::string& host : std::vector<std::string>{"localhost:" + port, "127.0.0.1:" + port, "[::1]:" + port,
                                                       "LocalHost", "localhost."}) {
    EXPECT_EQ(round_trip(s.port(), get_request("/v1/models", "", host)).status, 200) << host;
  }
  EXPECT_EQ(round_trip(s.port(), get_request("/v1/models", "", "mybox.local")).status, 403);
  // --allowed-hosts adds names (the device's name on the home network, for a keyless server
  // reached through an SSH tunnel or a reverse proxy that keeps the Host).
  ServeConfig named = config();
  named.options.allowed_hosts = {"mybox.local"};
  TestServer n(named);
  for (const std::string& host : std::vector<std::string>{"mybox.local:8080", "MyBox.Local", "localhost"}) {
    EXPECT_EQ(round_trip(n.port(), get_request("/v1/models", "", host)).status, 200) << host;
  }
  EXPECT_EQ(round_trip(n.port(), get_request("/v1/models", "", "evil.example")).status, 403);
  // With an API key the key is the defence: any Host with the key is served.
  ServeConfig keyed = config();
  keyed.options.api_key = "k3y";
  TestServer k(keyed);
  EXPECT_EQ(round_trip(k.port(), get_request("/v1/models", "Authorization: Bearer k3y\r\n", "192.168.1.20:8080")).status, 200);
  EXPECT_EQ(round_trip(k.port(), get_request("/v1/models", "", "192.168.1.20:8080")).status, 401);
}

TEST(HttpHardening, CrossOriginSimplePostRefused) {
  TestServer s(config());
  const std::string port = std::to_string(s.port());
  const std::string body = greedy_body("Once", 2);
  struct Case {
    std::string headers;
    int status;
  };
  const std::vector<Case> cases = {
      {"Content-Type: text/plain\r\nOrigin: http://evil.example\r\n", 403},
      {"Content-Type: application/x-www-form-urlencoded\r\nOrigin: https://evil.example\r\n", 403},
      {"Content-Type: multipart/form-data; boundary=x\r\nOrigin: http://evil.example\r\n", 403},
      {"Content-Type: text/plain\r\nOrigin: null\r\n", 403},
      {"Content-Type: text/plain\r\nOrigin: http://127.0.0.1:" + port + ".evil.example\r\n", 403},
      // The server's own page (same origin) and clients that send no Origin.
      {"Content-Type: text/plain\r\nOrigin: http://127.0.0.1:" + port + "\r\n", 200},
      {"Content-Type: application/json\r\nOrigin: http://127.0.0.1:" + port + "\r\n", 200},
      {"Content-Type: text/plain\r\n", 200},
  };
  for (const Case& k : cases) {
    const RawResponse r = round_trip(s.port(), post_request("/v1/completions", body, k.headers, "127.0.0.1:" + port));
    EXPECT_EQ(r.status, k.status) << k.headers << r.body;
    if (k.status == 403) {
      EXPECT_EQ(error_code(r), "origin_not_allowed");
    }
  }
  // Not JSON: 415 when another type was declared, 400 when JSON was.
  EXPECT_EQ(round_trip(s.port(), post_request("/v1/completions", "prompt=Once", "Content-Type: text/plain\r\n")).status, 415);
  EXPECT_EQ(round_trip(s.port(), post_request("/v1/completions", "prompt=Once", "Content-Type: application/json\r\n")).status,
            400);

  // --cors-origin opens the server to that one page.
  ServeConfig cors = config();
  cors.options.cors_origin = "http://app.example";
  TestServer c(cors);
  const RawResponse ok =
      round_trip(c.port(), post_request("/v1/completions", body, "Content-Type: text/plain\r\nOrigin: http://app.example\r\n"));
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.header("Access-Control-Allow-Origin"), "http://app.example");
  EXPECT_EQ(round_trip(c.port(), post_request("/v1/completions", body, "Origin: http://evil.example\r\n")).status, 403);
}

// Issue 42 (a): `curl -d @body.json` sends application/x-www-form-urlencoded; a 64 KiB JSON body
// must be served whatever the type says.
TEST(HttpHardening, JsonBodyAcceptedWhateverItsContentType) {
  TestServer s(config());
  const std::string expected = reference_text(s.port(), "Once upon a time", 8);
  Json b = Json::parse(greedy_body("Once upon a time", 8));
  b.set("x_padding", std::string(64 << 10, 'p'));  // unknown fields are ignored
  const std::string body = b.dump();
  ASSERT_GT(body.size(), 64u << 10);
  for (const char* type : {"", "Content-Type: application/x-www-form-urlencoded\r\n", "Content-Type: text/plain\r\n",
                           "Content-Type: application/json\r\n"}) {
    const RawResponse r = round_trip(s.port(), post_request("/v1/completions", body, type));
    ASSERT_EQ(r.status, 200) << type << r.body.substr(0, 200);
    EXPECT_EQ(completion_text(r), expected) << type;
  }
}

// Checks a /tokenize answer without building a DOM of a million tokens: valid UTF-8, then each
// element of "tokens" parsed on its own by the strict parser. The ids and pieces, in order.
bool scan_tokenize_answer(const std::string& body, std::vector<int32_t>* ids, std::vector<Json>* pieces) {
  if (utf8::first_invalid(body) != body.size()) return false;
  size_t i = 0;
  auto ws = [&] {
    while (i < body.size() && (body[i] == ' ' || body[i] == '\n' || body[i] == '\r' || body[i] == '\t')) ++i;
  };
  auto expect = [&](std::string_view s) {
    ws();
    if (body.compare(i, s.size(), s) != 0) return false;
    i += s.size();
    return true;
  };
  if (!expect("{") || !expect("\"tokens\"") || !expect(":") || !expect("[")) return false;
  ws();
  if (i < body.size() && body[i] == ']') {
    ++i;
  } else {
    for (;;) {
      ws();
      // One element: up to the ',' or ']' outside strings and nesting.
      const size_t start = i;
      int depth = 0;
      bool in_string = false;
      for (; i < body.size(); ++i) {
        const char ch = body[i];
        if (in_string) {
          if (ch == '\\') ++i;
          else if (ch == '"') in_string = false;
        } else if (ch == '"') {
          in_string = true;
        } else if (ch == '{' || ch == '[') {
          ++depth;
        } else if (ch == '}' || ch == ']') {
          if (depth == 0) break;
          --depth;
        } else if (ch == ',' && depth == 0) {
          break;
        }
      }
      if (i >= body.size()) return false;
      const Json e = Json::parse(std::string_view(body).substr(start, i - start));
      if (e.is_number()) {
        ids->push_back(static_cast<int32_t>(e.as_int()));
      } else {
        ids->push_back(static_cast<int32_t>(e.at("id").as_int()));
        pieces->push_back(e.at("piece"));
      }
      if (body[i] == ']') {
        ++i;
        break;
      }
      ++i;  // ','
    }
  }
  if (!expect("}")) return false;
  ws();
  return i == body.size();
}

// A piece as the reference tokenizer gives it, from the answer's form (a string, or byte values).
std::string piece_bytes(const Json& piece) {
  if (piece.is_string()) return piece.as_string();
  std::string bytes;
  for (const Json& b : piece.as_array()) bytes += static_cast<char>(b.as_int());
  return bytes;
}

void clear_peak_rss(pid_t pid) {
  std::ofstream("/proc/" + std::to_string(pid) + "/clear_refs") << "5";  // VmHWM = VmRSS from now
}

// 8 clients at once, each 1 MB of text with pieces: every answer complete and exact, and the
// server's memory bounded (old server: 1.5 GB peak, 1.1 GB still held afterwards).
TEST(HttpHardening, ConcurrentMegabyteTokenizeIsBounded) {
  TestServer s(config());
  // 1 MB each, as the finding; under the sanitizers (where memory is not measured) 128 KB: the
  // same concurrency and admission, without minutes of instrumented tokenizing.
  const size_t size = kSanitized ? 128000 : 1000000;
  std::string text;
  const std::string story = edgellm::test::read_file(edgellm::test::shared_testdata("text/stories-eval.txt"));
  while (text.size() < size) text += story;
  text.resize(size);
  while (utf8::first_invalid(text) != text.size()) text.pop_back();  // not inside a character
  Json req = Json::object();
  req.set("content", text);
  req.set("with_pieces", true);
  const std::string request = post_request("/tokenize", req.dump(), "Content-Type: application/json\r\n");

  const long rss_before = proc_status_kib(s.pid(), "VmRSS");
  clear_peak_rss(s.pid());
  const Clock::time_point t_load = Clock::now();
  constexpr int kClients = 8;
  std::vector<std::string> bodies(kClients);
  std::vector<int> statuses(kClients, -1);
  std::atomic<int> busy{0};
  std::vector<std::thread> clients;
  for (int k = 0; k < kClients; ++k) {
    clients.emplace_back([&, k] {
      const Clock::time_point limit = Clock::now() + std::chrono::seconds(300);
      for (;;) {
        RawResponse r = round_trip(s.port(), request, 120000);
        if (r.status == 429 && Clock::now() < limit) {
          EXPECT_EQ(r.header("Retry-After"), "1");
          ++busy;
          std::this_thread::sleep_for(milliseconds(200));  // a client's back-off, as the openai clients do
          continue;
        }
        statuses[k] = r.status;
        if (r.status != 200) std::printf("client %d: %d %s\n", k, r.status, r.body.substr(0, 300).c_str());
        bodies[k] = std::move(r.body);
        return;
      }
    });
  }
  for (auto& t : clients) t.join();
  const long peak = proc_status_kib(s.pid(), "VmHWM");
  std::printf("load %.1f s\n", std::chrono::duration<double>(Clock::now() - t_load).count());
  for (int k = 0; k < kClients; ++k) {
    ASSERT_EQ(statuses[k], 200) << "client " << k;
    EXPECT_EQ(bodies[k], bodies[0]) << "client " << k;  // the same text gives the same answer
  }
  for (int k = 1; k < kClients; ++k) std::string().swap(bodies[k]);

  // After-load memory (a server process of its own: only then is the RSS the server's alone).
  long rss_after = proc_status_kib(s.pid(), "VmRSS");
  if (s.external()) {
    const Clock::time_point limit = Clock::now() + std::chrono::seconds(5);
    while (rss_after - rss_before > (64 << 10) && Clock::now() < limit) {
      std::this_thread::sleep_for(milliseconds(100));
      rss_after = proc_status_kib(s.pid(), "VmRSS");
    }
  }
  std::printf("8 x %zu bytes /tokenize with pieces: %zu-byte answers, %d x 429; RSS %ld kB before, peak %ld kB, %ld kB after\n",
              size, bodies[0].size(), busy.load(), rss_before, peak, rss_after);
  if (!kSanitized) {
    // In this process the peak includes the test's own 8 requests and answers (~80 MB).
    EXPECT_LT(peak - rss_before, 256L << 10) << "peak RSS growth in kB";
    if (s.external()) {
      EXPECT_LT(rss_after - rss_before, 64L << 10) << "RSS still held after the load, kB";
    }
  }

  // The answer is exact: the ids the model's tokenizer gives (the independent reference here
  // is the library's tokenizer, run in the test; what is under test is the HTTP path), and each
  // piece is that token's text.
  std::vector<int32_t> ids;
  std::vector<Json> pieces;
  const Clock::time_point t_scan = Clock::now();
  ASSERT_TRUE(scan_tokenize_answer(bodies[0], &ids, &pieces)) << bodies[0].substr(0, 200);
  std::printf("scan %.1f s\n", std::chrono::duration<double>(Clock::now() - t_scan).count());
  const Clock::time_point t_ref = Clock::now();
  const auto model = Model::load(edgellm::test::shared_model("stories260K.gguf"));
  const std::unique_ptr<Tokenizer> tok = Tokenizer::from_gguf(model->gguf());
  const std::vector<int32_t> want = tok->encode(text, false, false);
  std::printf("reference %.1f s\n", std::chrono::duration<double>(Clock::now() - t_ref).count());
  ASSERT_EQ(ids, want);
  ASSERT_EQ(pieces.size(), want.size());
  for (size_t i = 0; i < want.size(); i += 997) EXPECT_EQ(piece_bytes(pieces[i]), tok->token_to_piece(want[i])) << i;
}

// Byte-level pieces (an emoji is four <0xNN> tokens in tiny-zh-poems) are byte arrays: the
// answer is valid JSON, and the pieces put back together give the text.
TEST(HttpHardening, BytePiecesAreValidJson) {
  ServeConfig c = config();
  c.model = "tiny-zh-poems.gguf";
  TestServer s(c);
  const std::string text = "\xF0\x9F\x98\x80 \xE6\x98\xA5";  // "😀 春"
  Json req = Json::object();
  req.set("content", text);
  req.set("with_pieces", true);
  const RawResponse r = round_trip(s.port(), post_request("/tokenize", req.dump()));
  ASSERT_EQ(r.status, 200);
  ASSERT_EQ(utf8::first_invalid(r.body), r.body.size()) << "invalid UTF-8 in the JSON answer";
  const Json answer = Json::parse(r.body);
  const auto model = Model::load(edgellm::test::shared_model("tiny-zh-poems.gguf"));
  const std::unique_ptr<Tokenizer> tok = Tokenizer::from_gguf(model->gguf());
  const std::vector<int32_t> want = tok->encode(text, false, false);
  ASSERT_EQ(answer.at("tokens").size(), want.size());
  std::string joined;
  int byte_arrays = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const Json& t = answer.at("tokens").at(i);
    EXPECT_EQ(t.at("id").as_int(), want[i]);
    const Json& piece = t.at("piece");
    if (piece.is_array()) {
      ++byte_arrays;
      for (const Json& b : piece.as_array()) EXPECT_TRUE(b.as_int() >= 0 && b.as_int() <= 255);
    }
    EXPECT_EQ(piece_bytes(piece), tok->token_to_piece(want[i])) << i;
    joined += piece_bytes(piece);
  }
  EXPECT_GE(byte_arrays, 4) << "the emoji's four byte tokens";
  EXPECT_EQ(joined, tok->decode(want));

  // /detokenize of one byte of the emoji: valid JSON, U+FFFD for the incomplete character.
  Json ids = Json::array();
  ids.push_back(want[0]);
  Json dreq = Json::object();
  dreq.set("tokens", ids);
  const RawResponse d = round_trip(s.port(), post_request("/detokenize", dreq.dump()));
  ASSERT_EQ(d.status, 200);
  ASSERT_EQ(utf8::first_invalid(d.body), d.body.size());
  EXPECT_EQ(Json::parse(d.body).at("content").as_string(), "\xEF\xBF\xBD");
}

TEST(HttpHardening, HalfClosedClientStillGetsItsAnswer) {
  TestServer s(config());
  const std::string expected = reference_text(s.port(), "Once upon a time", 12);
  for (bool stream : {false, true}) {
    SCOPED_TRACE(stream ? "streamed" : "one body");
    Conn c(s.port());
    ASSERT_TRUE(c.send(post_request("/v1/completions", greedy_body("Once upon a time", 12, stream))));
    c.shutdown_write();  // `nc -N`, `curl` with a half-closing proxy: sent everything, still reading
    const RawResponse r = c.read_response();
    ASSERT_EQ(r.status, 200);
    if (!stream) {
      EXPECT_EQ(completion_text(r), expected);
    } else {
      EXPECT_NE(r.body.find("data: [DONE]"), std::string::npos);
      std::string text;
      for (size_t pos = 0; (pos = r.body.find("data: {", pos)) != std::string::npos; ++pos) {
        const Json j = Json::parse(r.body.substr(pos + 6, r.body.find("\n\n", pos) - pos - 6));
        if (j.at("choices").size() > 0) text += j.at("choices").at(0).at("text").as_string();
      }
      EXPECT_EQ(text, expected);
    }
  }
}

TEST(HttpHardening, Http10StreamIsNotChunked) {
  TestServer s(config());
  const std::string body = greedy_body("Once upon a time", 8, true);
  Conn c(s.port());
  ASSERT_TRUE(c.send("POST /v1/completions HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Length: " + std::to_string(body.size()) +
                     "\r\n\r\n" + body));
  const RawResponse r = c.read_response();
  ASSERT_EQ(r.status, 200);
  EXPECT_FALSE(r.chunked) << "HTTP/1.0 has no chunked encoding";
  EXPECT_FALSE(r.has_header("Transfer-Encoding"));
  EXPECT_EQ(r.body.rfind("data: ", 0), 0u) << r.body.substr(0, 40);  // SSE from the first byte: no chunk sizes
  EXPECT_NE(r.body.find("data: [DONE]\n\n"), std::string::npos);
}

TEST(HttpHardening, ExpectContinueChunkedBodiesAndLimits) {
  ServeConfig c = config();
  c.options.max_body_bytes = 64 << 10;
  TestServer s(c);
  const std::string expected = reference_text(s.port(), "Once upon a time", 6);
  const std::string body = greedy_body("Once upon a time", 6);
  {
    // Expect: 100-continue: the client waits for the interim answer before sending the body.
    Conn e(s.port());
    ASSERT_TRUE(e.send("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: 100-continue\r\nContent-Length: " +
                       std::to_string(body.size()) + "\r\n\r\n"));
    EXPECT_EQ(e.read_interim_status(), 100);
    ASSERT_TRUE(e.send(body));
    const RawResponse r = e.read_response();
    ASSERT_EQ(r.status, 200);
    EXPECT_EQ(completion_text(r), expected);
  }
  {
    // A chunked body, the JSON cut anywhere.
    std::string chunked = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (size_t at = 0; at < body.size(); at += 7) {
      const std::string part = body.substr(at, 7);
      char len[16];
      std::snprintf(len, sizeof(len), "%zx", part.size());
      chunked += std::string(len) + "\r\n" + part + "\r\n";
    }
    chunked += "0\r\n\r\n";
    const RawResponse r = round_trip(s.port(), chunked);
    ASSERT_EQ(r.status, 200);
    EXPECT_EQ(completion_text(r), expected);
  }
  {
    // Over the limit, chunked: refused once the limit is passed.
    std::string big = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (int i = 0; i < 80; ++i) big += "400\r\n" + std::string(1024, ' ') + "\r\n";
    big += "0\r\n\r\n";
    Conn c2(s.port(), nullptr, 5000);
    c2.send(big);
    const RawResponse r = c2.read_response();
    EXPECT_EQ(r.status, 413);
    EXPECT_TRUE(c2.closed_by_peer(3000));
  }
  {
    // Over the limit by Content-Length: refused from the head, before the body is sent.
    Conn c3(s.port(), nullptr, 5000);
    c3.send("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2000000\r\n\r\n");
    const RawResponse r = c3.read_response();
    EXPECT_EQ(r.status, 413);
    EXPECT_EQ(error_code(r), "request_too_large");
  }
}

// The helpers run within their slots, and request bodies within their byte budget.
TEST(HttpHardening, HelperSlotsAndBodyBudget) {
  SKIP_IF_EXTERNAL();
  ServeConfig c = config();
  c.options.helper_slots = 1;
  c.options.max_body_bytes_in_flight = 64 << 10;
  c.needs_in_process = true;
  TestServer s(c);
  // A body half sent holds its declared bytes of the budget: a second one over the rest waits
  // its turn with a 503.
  Conn half(s.port());
  ASSERT_TRUE(half.send("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 60000\r\n\r\n{\"prompt\": \""));
  RawResponse over;
  const Clock::time_point limit = Clock::now() + std::chrono::seconds(10);
  do {
    over = round_trip(s.port(), post_request("/v1/completions", greedy_body(std::string(10000, 'a'), 2)), 5000);
    if (over.status != 503) std::this_thread::sleep_for(milliseconds(10));
  } while (over.status != 503 && Clock::now() < limit);
  EXPECT_EQ(over.status, 503);
  EXPECT_EQ(error_code(over), "server_busy");
  EXPECT_EQ(over.header("Retry-After"), "1");
  // A small one still fits.
  EXPECT_EQ(round_trip(s.port(), post_request("/tokenize", R"({"content": "Once"})")).status, 200);
  half.close();

  // One helper slot: a /tokenize whose client does not read its 9 MB answer keeps the slot
  // (its writer waits on the unread window); another gets 429 until that client leaves: by
  // closing (the reset its close sends fails the stalled write), or by staying silent for the
  // write timeout. Each way to leave, and silence twice, since the leak of issue 43 hid behind
  // timing: the handler's last flush was lost when the failed write's exchange still had one
  // outstanding, which depends on how the I/O thread had batched the queued pieces (with the
  // fix reverted, on this host: a silent client caught it in 26 runs of 34, a close before the
  // answer in 2 of 17, a close during it in none of 28; this loop without its second silent
  // client in 4 runs of 5, with it in 6 of 6).
  std::string text(1000000, 'a');
  for (size_t i = 0; i < text.size(); i += 7) text[i] = ' ';
  Json req = Json::object();
  req.set("content", text);
  req.set("with_pieces", true);
  const std::string hog_request = post_request("/tokenize", req.dump());
  const std::string small = post_request("/tokenize", R"({"content": "Once"})");
  // Polls /tokenize until it answers `status` or `within` passes; the answer last seen. The
  // pause only paces the polling (every poll leaves a TIME_WAIT socket: the port range would
  // run out); the wait is on the server's answer.
  auto poll_until = [&small](int port, int status, std::chrono::seconds within) {
    RawResponse r;
    const Clock::time_point limit = Clock::now() + within;
    do {
      r = round_trip(port, small, 5000);
      if (r.status != status) std::this_thread::sleep_for(milliseconds(10));
    } while (r.status != status && Clock::now() < limit);
    return r;
  };
  enum class Leaves { kClosesBeforeTheAnswer, kClosesDuringIt, kFallsSilent };
  for (Leaves how :
       {Leaves::kClosesBeforeTheAnswer, Leaves::kClosesDuringIt, Leaves::kFallsSilent, Leaves::kFallsSilent}) {
    const bool closes = how != Leaves::kFallsSilent;
    SCOPED_TRACE(how == Leaves::kClosesBeforeTheAnswer ? "the client closes before the answer"
                 : closes                              ? "the client closes during the answer"
                                                       : "the client falls silent during the answer");
    ServeConfig big = config();
    big.options.helper_slots = 1;
    // Closing: a timeout longer than the wait below, so only noticing the close can pass.
    // Silent: 1 s, the bound that must end the stalled write.
    big.options.write_timeout_s = closes ? 120 : 1;
    big.needs_in_process = true;
    TestServer s2(big);
    Conn hog(s2.port(), nullptr, 30000, /*rcvbuf=*/4096);
    ASSERT_TRUE(hog.send(hog_request));
    const RawResponse refused = poll_until(s2.port(), 429, std::chrono::seconds(30));
    EXPECT_EQ(refused.status, 429);
    EXPECT_EQ(refused.header("Retry-After"), "1");
    if (how != Leaves::kClosesBeforeTheAnswer) {
      // The answer has started (its head is here), then the client reads no more: within
      // milliseconds the server's writes stall on the full window.
      ASSERT_EQ(hog.read_interim_status(), 200);
    }
    const Clock::time_point left = Clock::now();
    if (closes) hog.close();
    // Back well within the deadline (measured: 10-30 ms after a close during the answer,
    // 0.3-1.1 s after one before it (the tokenizing ends first), 1.05 s after the silence
    // began); before the fix the slot stayed held until the server stopped (150 s measured).
    const RawResponse after = poll_until(s2.port(), 200, std::chrono::seconds(20));
    EXPECT_EQ(after.status, 200) << "the helper slot is still held "
                                 << std::chrono::duration_cast<milliseconds>(Clock::now() - left).count()
                                 << " ms after the client " << (closes ? "closed" : "went silent");
  }
}

}  // namespace
}  // namespace edgellm::server::test
