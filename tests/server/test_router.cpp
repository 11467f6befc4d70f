// The edge-cloud router through `edgellm serve`: the Runtime's router (runtime/router.h) with
// the server's libcurl transport (tools/fetch/https_transport.h), end to end over HTTP. The
// confidence score equals an independent recompute from generate()'s logits; a low score goes to
// a second EdgeLLM server on loopback acting as the cloud, with the context synced (checked on the
// cloud side: the last 3 user turns verbatim, older turns only as a summary the test recomputes);
// the band between the thresholds returns the local answer marked low-confidence with a one-call
// retry in the cloud; privacy mode never connects (the stand-in's listening socket has nothing to
// accept); a cloud that is down gives the local answer with the reason; a second (large) tier
// answers when the small one is down.
#include <gtest/gtest.h>
#include <httplib.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <cmath>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "chat/chat_prompt.h"
#include "core/json.h"
#include "core/log.h"
#include "engine/context.h"
#include "engine/sampler.h"
#include "generation/chat_session.h"
#include "generation/generate.h"
#include "model/model.h"
#include "runtime/runtime.h"
#include "server/http_server.h"
#include "runtime/router_policy.h"
#include "service/inference_service.h"
#include "support/test_env.h"
#include "tokenizer/tokenizer.h"
#include "tools/fetch/https_transport.h"

namespace edgellm::server {
namespace {

// Log lines of every server in the process (the cloud runs with log_prompts).
std::mutex g_log_mutex;
std::vector<std::string> g_log;
void capture(LogLevel, const char* message, void*) {
  std::lock_guard<std::mutex> lock(g_log_mutex);
  g_log.emplace_back(message);
}

// The Runtime's router calling `url` (small tier; `large_url`: a large tier too) through the
// transport `edgellm serve` builds (plain http:// is allowed to loopback).
RouterParams cloud_router(const std::string& url, const std::string& large_url = "") {
  HttpsTransportOptions to;
  to.tiers["small"] = CloudEndpoint{url, ""};
  if (!large_url.empty()) to.tiers["large"] = CloudEndpoint{large_url, ""};
  RouterParams p;
  p.transport = std::make_shared<HttpsTransport>(std::move(to));
  return p;
}

class Running {
 public:
  explicit Running(ServerOptions so, RouterParams router = {}) {
    RuntimeParams rp;
    rp.router = std::move(router);
    rp.model_path = test::shared_model("stories260K.gguf");
    rp.service.context.n_ctx = 512;
    rp.service.context.n_seq_max = 2;
    rp.service.context.kv_type = TensorType::F32;
    runtime_ = std::make_unique<Runtime>(std::move(rp));
    service_ = runtime_->service();  // no swap in these tests
    so.port = 0;
    server_ = std::make_unique<HttpServer>(*runtime_, so);
    port_ = server_->bind();
    thread_ = std::thread([this] { server_->serve(); });
  }
  ~Running() {
    server_->stop();
    thread_.join();
    runtime_->shutdown();
  }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  InferenceService& service() { return *service_; }
  HttpServer& http() { return *server_; }
  Runtime& runtime() { return *runtime_; }

  httplib::Result chat(const Json& body) const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(30, 0);
    return c.Post("/v1/chat/completions", body.dump(), "application/json");
  }

 private:
  std::unique_ptr<Runtime> runtime_;
  std::shared_ptr<InferenceService> service_;
  std::unique_ptr<HttpServer> server_;
  int port_ = -1;
  std::thread thread_;
};

Json message(const char* role, const std::string& content) {
  Json m = Json::object();
  m.set("role", role);
  m.set("content", content);
  return m;
}

Json chat_body(const Json& messages) {
  Json b = Json::object();
  b.set("messages", messages);
  b.set("max_tokens", 24);
  b.set("temperature", 0);
  return b;
}

// A listening socket nobody serves: a cloud stand-in that can tell whether anyone connected.
class Listener {
 public:
  Listener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    ::listen(fd_, 16);
    socklen_t len = sizeof(a);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    ::fcntl(fd_, F_SETFL, O_NONBLOCK);
  }
  ~Listener() { close(); }
  int port() const { return port_; }
  // Connections waiting to be accepted (accepts and closes them).
  int pending() {
    int n = 0;
    for (int c; (c = ::accept(fd_, nullptr, nullptr)) >= 0; ++n) ::close(c);
    return n;
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// The cloud's front door in the tests: records every request body it gets, then forwards it to
// the EdgeLLM server behind it and answers with that server's answer.
class RecordingProxy {
 public:
  explicit RecordingProxy(int backend_port) {
    server_.Post("/v1/chat/completions", [this, backend_port](const httplib::Request& req, httplib::Response& res) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        bodies_.push_back(req.body);
      }
      httplib::Client c("127.0.0.1", backend_port);
      c.set_read_timeout(30, 0);
      auto r = c.Post("/v1/chat/completions", req.body, "application/json");
      if (!r) {
        res.status = 502;
        return;
      }
      res.status = r->status;
      res.set_content(r->body, "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~RecordingProxy() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<std::string> bodies() {
    std::lock_guard<std::mutex> lock(mutex_);
    return bodies_;
  }

 private:
  httplib::Server server_;
  int port_ = -1;
  std::thread thread_;
  std::mutex mutex_;
  std::vector<std::string> bodies_;
};

// What the local model answers to `messages` (greedy, its chat template and stop strings, at most
// max_tokens), computed with generate() on a fresh Context: the independent reference of a
// local run through the server.
std::string local_greedy_answer(const InferenceService& service, const Json& messages, int32_t max_tokens) {
  const Model& model = service.model();
  const Tokenizer& tok = service.tokenizer();
  ContextParams cp;
  cp.n_ctx = 512;
  cp.kv_type = TensorType::F32;
  Context ctx(model, cp);
  SamplerParams sp;
  sp.temperature = 0;
  Sampler sampler(sp, model.hparams().n_vocab);
  GenerationParams gp;
  gp.max_tokens = max_tokens;
  gp.stop = chat_stop_strings(service.chat_template(), tok, {});
  return generate(ctx, sampler, &tok, chat_prompt_tokens(service.chat_template(), tok, messages), gp).text;
}

TEST(Router, ScoreIsTheGeometricMeanOfTheModelsTokenProbabilities) {
  RouterParams router;
  router.privacy = true;  // local answers only
  Running local(ServerOptions{}, router);
  Json messages = Json::array();
  messages.push_back(message("user", "Tell me about a cat"));
  auto res = local.chat(chat_body(messages));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const Json j = Json::parse(res->body);
  const Json& route = j.at("x_edgellm").at("route");
  const double score = route.at("score").as_number();
  // Answered locally: by the Runtime's model version "1" (header and body).
  EXPECT_EQ(j.at("x_edgellm").at("model_version").as_string(), "1");
  EXPECT_EQ(res->get_header_value("x-edgellm-model-version"), "1");

  // Independent recompute: generate() on a fresh Context, softmax of each sampled position.
  std::shared_ptr<const Model> model = Model::load(test::shared_model("stories260K.gguf"));
  const std::unique_ptr<Tokenizer> tok = Tokenizer::from_gguf(model->gguf());
  const std::vector<int32_t> prompt = chat_prompt_tokens(local.service().chat_template(), *tok, messages);
  ContextParams cp;
  cp.n_ctx = 512;
  cp.kv_type = TensorType::F32;
  Context ctx(*model, cp);
  SamplerParams sp;
  sp.temperature = 0;
  Sampler sampler(sp, model->hparams().n_vocab);
  GenerationParams gp;
  gp.max_tokens = 24;
  gp.stop = chat_stop_strings(local.service().chat_template(), *tok, {});
  std::vector<double> p_max;  // greedy: the sampled token is the argmax
  GenerationCallbacks cb;
  cb.on_logits = [&](const float* logits, int32_t n) {
    double mx = logits[0], sum = 0;
    for (int32_t i = 0; i < n; ++i) mx = std::max(mx, static_cast<double>(logits[i]));
    for (int32_t i = 0; i < n; ++i) sum += std::exp(logits[i] - mx);
    p_max.push_back(1.0 / sum);
  };
  const GenerationResult g = generate(ctx, sampler, tok.get(), prompt, gp, cb);
  ASSERT_FALSE(g.tokens.empty());
  EXPECT_EQ(j.at("choices").at(0).at("message").at("content").as_string(), g.text);
  double log_sum = 0, min_p = 1;
  for (size_t i = 0; i < g.tokens.size(); ++i) {
    log_sum += std::log(p_max[i]);
    min_p = std::min(min_p, p_max[i]);
  }
  EXPECT_NEAR(score, std::exp(log_sum / static_cast<double>(g.tokens.size())), 1e-4);
  EXPECT_NEAR(route.at("min_p").as_number(), min_p, 1e-4);
  EXPECT_GT(score, 0.0);
  EXPECT_LE(score, 1.0);
}

TEST(Router, LowConfidenceGoesToTheCloudWithSyncedContext) {
  ServerOptions cloud_opts;
  cloud_opts.log_prompts = true;
  cloud_opts.model_name = "cloud-model";
  Running cloud(cloud_opts);
  RecordingProxy front(cloud.port());
  RouterParams router = cloud_router(front.url());
  router.cloud_model = "big-model";
  router.local_threshold = 1.0;  // every score is below both (1 needs p = 1 at every token): the cloud
  router.cloud_threshold = 1.0;
  Running local(ServerOptions{}, router);

  set_log_sink(capture, nullptr, LogLevel::kInfo);
  Json messages = Json::array();
  messages.push_back(message("system", "You are kind."));
  for (int t = 1; t <= 5; ++t) {
    messages.push_back(message("user", "question number " + std::to_string(t)));
    if (t < 5) messages.push_back(message("assistant", "answer number " + std::to_string(t)));
  }
  auto res = local.chat(chat_body(messages));
  set_log_sink(nullptr, nullptr);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->get_header_value("x-edgellm-route"), "cloud");
  const Json j = Json::parse(res->body);
  EXPECT_EQ(j.at("x_edgellm").at("route").at("route").as_string(), "cloud");
  // No local version served it: labelled as the Runtime's router labels cloud answers.
  EXPECT_EQ(j.at("x_edgellm").at("model_version").as_string().rfind("cloud:", 0), 0u) << res->body;
  EXPECT_EQ(res->get_header_value("x-edgellm-model-version"), j.at("x_edgellm").at("model_version").as_string());
  EXPECT_GE(cloud.http().counters().http_requests.load(), 1u);

  // What the cloud received (its --log-prompts line).
  std::string seen;
  {
    std::lock_guard<std::mutex> lock(g_log_mutex);
    for (const std::string& line : g_log) {
      if (line.find(" prompt: ") != std::string::npos) seen = line;
    }
  }
  ASSERT_FALSE(seen.empty());
  const Json sent = Json::parse(seen.substr(seen.find(" prompt: ") + 9));
  EXPECT_EQ(sent.at(0).at("content").as_string(), "You are kind.");
  EXPECT_NE(sent.at(1).at("content").as_string().find("Summary of the earlier conversation: "), std::string::npos);
  // The last 3 user turns verbatim, in order; the first two only inside the summary.
  const std::vector<std::string> expected = {"question number 3", "answer number 3", "question number 4",
                                             "answer number 4", "question number 5"};
  ASSERT_EQ(sent.size(), 2 + expected.size());
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(sent.at(2 + i).at("content").as_string(), expected[i]);
  EXPECT_EQ(seen.find("\"question number 1\""), std::string::npos);

  // The request on the wire: the configured cloud model, the client's sampling fields, the
  // messages above, and a summary that is the local model's summary of exactly the older turns
  // (turns 1 and 2, as "role: content" lines), recomputed here with generate().
  const std::vector<std::string> bodies = front.bodies();
  ASSERT_EQ(bodies.size(), 1u);
  const Json wire = Json::parse(bodies[0]);
  EXPECT_EQ(wire.at("model").as_string(), "big-model");
  EXPECT_EQ(wire.at("max_tokens").as_int(), 24);
  EXPECT_EQ(wire.at("temperature").as_number(), 0.0);
  EXPECT_EQ(wire.at("messages").dump(), sent.dump());
  Json ask = Json::array();
  ask.push_back(message("system", "Summarize this conversation in a few sentences."));
  ask.push_back(message("user",
                        "user: question number 1\nassistant: answer number 1\nuser: question number 2\n"
                        "assistant: answer number 2\n"));
  const std::string summary = local_greedy_answer(local.service(), ask, 128);
  EXPECT_FALSE(summary.empty());
  EXPECT_EQ(wire.at("messages").at(1).at("content").as_string(), "Summary of the earlier conversation: " + summary);

  // The cloud's answer is what the client got: the same request straight to the cloud.
  Json direct = Json::object();
  direct.set("messages", sent);
  direct.set("max_tokens", 24);
  direct.set("temperature", 0);
  auto d = cloud.chat(direct);
  ASSERT_TRUE(d);
  EXPECT_EQ(Json::parse(d->body).at("choices").at(0).at("message").at("content").as_string(),
            j.at("choices").at(0).at("message").at("content").as_string());
}

TEST(Router, BetweenThresholdsIsLocalLowConfidenceWithOneCallRetry) {
  ServerOptions cloud_opts;
  Running cloud(cloud_opts);
  RouterParams router = cloud_router(cloud.url());
  router.local_threshold = 1.0;
  router.cloud_threshold = 0.0;
  Running local(ServerOptions{}, router);
  Json messages = Json::array();
  messages.push_back(message("user", "Hi"));
  auto res = local.chat(chat_body(messages));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("x-edgellm-route"), "local-low-confidence");
  const Json j = Json::parse(res->body);
  const Json& route = j.at("x_edgellm").at("route");
  EXPECT_EQ(cloud.http().counters().http_requests.load(), 0u);
  ASSERT_TRUE(route.find("retry_in_cloud") != nullptr);

  // The one-call retry: the same body plus the field it names.
  Json retry = chat_body(messages);
  retry.set("x_edgellm_route", route.at("retry_in_cloud").at("x_edgellm_route"));
  auto again = local.chat(retry);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->get_header_value("x-edgellm-route"), "cloud");
  EXPECT_EQ(cloud.http().counters().http_requests.load(), 1u);
}

TEST(Router, PrivacyModeNeverConnects) {
  Listener standin;
  RouterParams router = cloud_router("http://127.0.0.1:" + std::to_string(standin.port()));
  router.privacy = true;
  router.local_threshold = 1.0;
  router.cloud_threshold = 1.0;  // the score says cloud; privacy says no
  Running local(ServerOptions{}, router);
  Json messages = Json::array();
  messages.push_back(message("user", "Hi"));
  for (const char* forced : {"auto", "cloud"}) {
    Json body = chat_body(messages);
    body.set("x_edgellm_route", forced);
    auto res = local.chat(body);
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200);
    EXPECT_EQ(res->get_header_value("x-edgellm-route"), "local");
    const Json j = Json::parse(res->body);
    EXPECT_NE(j.at("x_edgellm").at("route").at("reason").as_string().find("privacy"), std::string::npos);
    EXPECT_FALSE(j.at("choices").at(0).at("message").at("content").as_string().empty());
  }
  EXPECT_EQ(standin.pending(), 0);
  EXPECT_EQ(local.runtime().router_counters().privacy_blocks, 2u);
}

TEST(Router, CloudDownAnswersLocallyWithTheReason) {
  int dead_port = 0;
  {
    Listener gone;
    dead_port = gone.port();
  }  // closed: connections are refused
  RouterParams router = cloud_router("http://127.0.0.1:" + std::to_string(dead_port));
  router.local_threshold = 1.0;
  router.cloud_threshold = 1.0;
  router.cloud_timeout_ms = 2000;
  Running local(ServerOptions{}, router);
  Json messages = Json::array();
  messages.push_back(message("user", "Hi"));
  auto res = local.chat(chat_body(messages));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("x-edgellm-route"), "local");
  const Json j = Json::parse(res->body);
  EXPECT_NE(j.at("x_edgellm").at("route").at("reason").as_string().find("offline"), std::string::npos);
  EXPECT_FALSE(j.at("choices").at(0).at("message").at("content").as_string().empty());
  EXPECT_EQ(local.runtime().router_counters().cloud_failures, 1u);
  httplib::Client c("127.0.0.1", local.port());
  auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("edgellm_routed_total{route=\"local\"} 1"), std::string::npos) << m->body;
  EXPECT_NE(m->body.find("edgellm_route_cloud_failures_total 1"), std::string::npos) << m->body;
}

TEST(Router, LargeTierAnswersWhenTheSmallOneIsDown) {
  int dead_port = 0;
  {
    Listener gone;
    dead_port = gone.port();
  }
  ServerOptions cloud_opts;
  cloud_opts.model_name = "cloud-model";
  Running cloud(cloud_opts);
  RouterParams router = cloud_router("http://127.0.0.1:" + std::to_string(dead_port), cloud.url());
  router.cloud_model = "small-model";
  router.cloud_model_large = "large-model";
  router.local_threshold = 1.0;
  router.cloud_threshold = 1.0;
  Running local(ServerOptions{}, router);
  Json messages = Json::array();
  messages.push_back(message("user", "Hi"));
  auto res = local.chat(chat_body(messages));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->get_header_value("x-edgellm-route"), "cloud");
  const Json j = Json::parse(res->body);
  const Json& route = j.at("x_edgellm").at("route");
  EXPECT_EQ(route.at("tier").as_string(), "large") << res->body;
  EXPECT_NE(route.at("reason").as_string().find("small cloud tier failed"), std::string::npos) << res->body;
  EXPECT_EQ(j.at("x_edgellm").at("model_version").as_string(), "cloud:large-model");
  // The large tier is the second server: it answered exactly this one request, and its answer is
  // the one the client got (the same request straight to it).
  EXPECT_EQ(cloud.http().counters().http_requests.load(), 1u);
  auto d = cloud.chat(chat_body(messages));
  ASSERT_TRUE(d);
  EXPECT_EQ(Json::parse(d->body).at("choices").at(0).at("message").at("content").as_string(),
            j.at("choices").at(0).at("message").at("content").as_string());
  EXPECT_EQ(local.runtime().router_counters().cloud_failures, 1u);
}

// The server's transport and TLS: a local HTTPS server (python3's ssl, a self-signed certificate
// openssl makes for 127.0.0.1) is refused by default and answered once its certificate is the
// trusted CA (--cloud-ca); plain http:// is refused to a non-loopback host unless allowed.
TEST(Router, TlsSelfSignedCertificateRefusedUnlessTrusted) {
  EXPECT_THROW(HttpsTransport::check_url("http://10.0.0.5:8080", false), Error);
  EXPECT_NO_THROW(HttpsTransport::check_url("http://10.0.0.5:8080", true));
  EXPECT_NO_THROW(HttpsTransport::check_url("http://127.0.0.1:8080", false));
  EXPECT_THROW(HttpsTransport::check_url("ftp://example.com", true), Error);

  const std::string dir = edgellm::test::temp_dir();  // removed at exit
  const std::string cert = dir + "/cert.pem", key = dir + "/key.pem", script = dir + "/serve.py";
  const std::string make_cert = "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout " +
                                key + " -out " + cert +
                                " -days 1 -subj /CN=localhost -addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1";
  if (std::system(make_cert.c_str()) != 0) {
    GTEST_SKIP() << "NOT CHECKED ON THIS HOST: openssl cannot make a certificate";
  }
  {
    // Answers two connections (the refused handshake, then the trusted call) and exits.
    std::ofstream py(script);
    py << "import http.server, ssl, sys\n"
          "class H(http.server.BaseHTTPRequestHandler):\n"
          "    def do_POST(self):\n"
          "        self.rfile.read(int(self.headers['Content-Length']))\n"
          "        b = b'{\"choices\": [{\"message\": {\"content\": \"over tls\"}, \"finish_reason\": \"stop\"}]}'\n"
          "        self.send_response(200); self.send_header('Content-Length', str(len(b))); self.end_headers()\n"
          "        self.wfile.write(b)\n"
          "    def log_message(self, *a): pass\n"
          "s = http.server.HTTPServer(('127.0.0.1', 0), H)\n"
          "c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); c.load_cert_chain(sys.argv[1], sys.argv[2])\n"
          "s.socket = c.wrap_socket(s.socket, server_side=True)\n"
          "s.timeout = 30\n"
          "print(s.server_address[1], flush=True)\n"
          "for _ in range(2): s.handle_request()\n";
  }
  FILE* server = ::popen(("python3 " + script + " " + cert + " " + key + " 2>/dev/null").c_str(), "r");
  ASSERT_NE(server, nullptr);
  char line[32] = {0};
  ASSERT_NE(std::fgets(line, sizeof line, server), nullptr) << "the HTTPS stand-in did not start";
  const std::string url = "https://127.0.0.1:" + std::string(line, std::strcspn(line, "\n"));
  const std::string body = R"({"model": "m", "messages": [{"role": "user", "content": "hi"}]})";

  HttpsTransportOptions untrusting;
  untrusting.timeout_ms = 20000;
  untrusting.workers = 1;
  const CloudReply refused = HttpsTransport(untrusting).post(CloudEndpoint{url, ""}, body);
  EXPECT_EQ(refused.status, 0);
  EXPECT_NE(refused.error.find("TLS"), std::string::npos) << refused.error;

  HttpsTransportOptions trusting = untrusting;
  trusting.ca_file = cert;  // what --cloud-ca FILE sets
  const CloudReply answered = HttpsTransport(trusting).post(CloudEndpoint{url, ""}, body);
  EXPECT_EQ(answered.status, 200) << answered.error;
  EXPECT_EQ(parse_cloud_answer(answered.body).text, "over tls");
  ::pclose(server);
}

TEST(Router, SplitContextKeepsSystemAndLastTurns) {
  Json m = Json::array();
  m.push_back(message("system", "s"));
  m.push_back(message("user", "u1"));
  m.push_back(message("assistant", "a1"));
  m.push_back(message("user", "u2"));
  const ContextSplit few = split_context(m, 3);
  EXPECT_EQ(few.older.size(), 0u);
  EXPECT_EQ(few.recent.size(), 4u);
  const ContextSplit one = split_context(m, 1);
  EXPECT_EQ(one.older.size(), 2u);
  ASSERT_EQ(one.recent.size(), 2u);
  EXPECT_EQ(one.recent.at(1).at("content").as_string(), "u2");
  const Json with = with_summary(one.recent, "talked");
  ASSERT_EQ(with.size(), 3u);
  EXPECT_EQ(with.at(1).at("role").as_string(), "system");
  const Confidence c = confidence_of({0.5f, 0.5f, 1.0f});
  EXPECT_NEAR(c.score, std::cbrt(0.25), 1e-6);
  EXPECT_NEAR(c.mean, 2.0 / 3.0, 1e-6);
  EXPECT_NEAR(c.min, 0.5, 1e-6);
}

}  // namespace
}  // namespace edgellm::server
