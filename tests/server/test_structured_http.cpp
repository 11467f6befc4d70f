// Structured output and tool calls through `edgellm serve`'s OpenAI endpoints, on stories260K (a
// story model that writes no JSON by itself: what validates does so because of the grammar).
// Sampled at temperature 1 with top-k / top-p / min-p off, the outputs are judged by references
// that share no code with the grammar engine or the server: python3-jsonschema
// (scripts/validate-json-outputs.py, Draft 2020-12) for schemas, objects and each tool call's
// arguments against that tool's "parameters", and a grammar's finite language spelled out in the
// test. Malformed fields are 400s naming the field; a constrained or tool request never reaches
// the router's cloud (a stand-in counting what it receives). POST /v1/classify: each label's
// log-probability and the probabilities equal a naive teacher-forced pass written here (a fresh
// Context per label, prompt + label in one forward, log-softmax summed), raw and through the chat
// template, and its bad requests are 400s with the Runtime's (and so the C ABI's) wording.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "chat/chat_prompt.h"
#include "core/json.h"
#include "engine/batch.h"
#include "engine/context.h"
#include "model/model.h"
#include "runtime/runtime.h"
#include "service/inference_service.h"
#include "tokenizer/tokenizer.h"
#include "server/http_server.h"
#include "support/json_validator.h"
#include "support/label_logprob.h"
#include "support/test_env.h"
#include "support/tool_fixtures.h"
#if defined(EDGELLM_HAVE_CURL)
#include "tools/fetch/https_transport.h"
#endif

namespace edgellm::server {
namespace {

// A runtime + server on a free loopback port (chat_template: a built-in name or a file; "" the
// model's own).
class Serving {
 public:
  explicit Serving(ServerOptions so = {}, const std::string& chat_template = "", RouterParams router = {}) {
    RuntimeParams rp;
    rp.router = std::move(router);
    rp.model_path = test::shared_model("stories260K.gguf");
    ServiceParams& sp = rp.service;
    sp.context.n_ctx = 2048;  // the tools' system prompt and 4 replies at once
    sp.context.n_seq_max = 4;
    sp.context.kv_type = TensorType::F32;
    sp.max_queued = 16;
    sp.chat_template = chat_template;
    runtime_ = std::make_unique<Runtime>(std::move(rp));
    so.port = 0;
    so.read_timeout_s = 5;
    server_ = std::make_unique<HttpServer>(*runtime_, so);
    port_ = server_->bind();
    thread_ = std::thread([this] { server_->serve(); });
  }
  ~Serving() {
    server_->stop();
    thread_.join();
    runtime_->shutdown();
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(60, 0);
    return c;
  }
  Runtime& runtime() const { return *runtime_; }

 private:
  std::unique_ptr<Runtime> runtime_;
  std::unique_ptr<HttpServer> server_;
  int port_ = -1;
  std::thread thread_;
};

struct Reply {
  int status = -1;
  Json body;
  std::string raw;
};

Reply post(const Serving& s, const std::string& path, const Json& body) {
  httplib::Client c = s.client();
  auto res = c.Post(path.c_str(), body.dump(), "application/json");
  Reply r;
  if (!res) return r;
  r.status = res->status;
  r.raw = res->body;
  if (res->get_header_value("Content-Type").find("json") != std::string::npos) r.body = Json::parse(res->body);
  return r;
}

// The bodies posted at once (the server decodes 4 requests together), replies in order.
std::vector<Reply> post_all(const Serving& s, const std::string& path, const std::vector<Json>& bodies) {
  std::vector<Reply> out(bodies.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < bodies.size(); ++i) threads.emplace_back([&, i] { out[i] = post(s, path, bodies[i]); });
  for (std::thread& t : threads) t.join();
  return out;
}

// The streamed events' JSON bodies ("data: {...}" lines; [DONE] left out).
std::vector<Json> sse_events(const std::string& raw) {
  std::vector<Json> out;
  size_t pos = 0;
  while ((pos = raw.find("data: ", pos)) != std::string::npos) {
    const size_t end = raw.find("\n\n", pos);
    const std::string data = raw.substr(pos + 6, end - pos - 6);
    if (data != "[DONE]") out.push_back(Json::parse(data));
    pos = end;
  }
  return out;
}

// A request sampling at temperature 1 with nothing cut off (seed `seed`).
Json sampled(Json body, int seed, int max_tokens) {
  body.set("temperature", 1.0);
  body.set("top_k", 0);
  body.set("top_p", 1.0);
  body.set("min_p", 0.0);
  body.set("seed", seed);
  body.set("max_tokens", max_tokens);
  return body;
}

Json chat_body(const std::string& user) {
  Json b = Json::object();
  b.set("messages", Json::parse(R"([{"role": "user", "content": ")" + user + R"("}])"));
  return b;
}

using Output = test::GeneratedOutput;

// python3-jsonschema's verdict (support/json_validator.h: every output finished with "stop",
// parses as JSON and validates): the exit code, *report its report line.
int validate(const Json& schema, const std::vector<Output>& outs, std::string* report) {
  test::JsonValidation v = test::validate_json_outputs(schema.dump(), outs);
  *report = std::move(v.report);
  return v.exit_code;
}

const Json& choice0(const Json& body) {
  return body.at("choices").at(0);
}

constexpr const char* kPersonSchema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "minLength": 1, "maxLength": 12},
    "age": {"type": "integer", "minimum": 0, "maximum": 120},
    "mood": {"enum": ["happy", "sad", "sleepy"]}
  },
  "required": ["name", "age", "mood"],
  "additionalProperties": false
})";

using test::kTwoTools;

// Every call validated in one run of the validator: {"name", "arguments"} against the schema
// "one of the tools, by name, with arguments that follow its parameters".
void expect_calls_validate(const std::vector<std::pair<std::string, std::string>>& calls) {
  const Json schema = Json::parse(test::kTwoToolsCallSchema);
  std::vector<Output> records;
  for (const auto& [n, args] : calls)
    records.push_back({"{\"name\": " + Json(n).dump() + ", \"arguments\": " + args + "}", "stop"});
  std::string report;
  EXPECT_EQ(validate(schema, records, &report), 0) << report;
}

TEST(StructuredHttp, ResponseFormatJsonSchemaValidatesOnBothEndpoints) {
  Serving s;
  const Json schema = Json::parse(kPersonSchema);
  std::vector<Json> chats, completions;
  for (int seed = 1; seed <= 3; ++seed) {
    // OpenAI's shape on chat ...
    Json rf = Json::object();
    rf.set("type", "json_schema");
    Json js = Json::object();
    js.set("name", "person");
    js.set("strict", true);
    js.set("schema", schema);
    rf.set("json_schema", js);
    Json body = sampled(chat_body("Who is there?"), seed, 200);
    body.set("response_format", rf);
    chats.push_back(body);
    // ... and llama-server's top-level json_schema on completions.
    Json comp = Json::object();
    comp.set("prompt", "Once upon a time");
    comp = sampled(comp, seed, 200);
    comp.set("json_schema", schema);
    completions.push_back(comp);
  }
  std::vector<Output> outs;
  for (const Reply& r : post_all(s, "/v1/chat/completions", chats)) {
    ASSERT_EQ(r.status, 200) << r.raw;
    outs.push_back(
        {choice0(r.body).at("message").at("content").as_string(), choice0(r.body).at("finish_reason").as_string()});
  }
  for (const Reply& r : post_all(s, "/v1/completions", completions)) {
    ASSERT_EQ(r.status, 200) << r.raw;
    outs.push_back({choice0(r.body).at("text").as_string(), choice0(r.body).at("finish_reason").as_string()});
  }
  std::string report;
  EXPECT_EQ(validate(schema, outs, &report), 0) << report;
  // The same requests without the constraint are not JSON: the constraint made them valid.
  std::vector<Output> free;
  for (const Reply& r :
       post_all(s, "/v1/chat/completions",
                {sampled(chat_body("Who is there?"), 1, 40), sampled(chat_body("Who is there?"), 2, 40)})) {
    ASSERT_EQ(r.status, 200) << r.raw;
    free.push_back(
        {choice0(r.body).at("message").at("content").as_string(), choice0(r.body).at("finish_reason").as_string()});
  }
  EXPECT_NE(validate(schema, free, &report), 0) << "unconstrained stories validated: " << report;
}

TEST(StructuredHttp, JsonObjectAndGrammarStreamedAndNot) {
  Serving s;
  // A grammar's language spelled out: every output is one of these, streamed or not.
  const std::string gbnf = R"(root ::= ("yes" | "no" | "maybe") " " [0-9] ".")";
  std::set<std::string> language;
  for (const char* w : {"yes", "no", "maybe"}) {
    for (char d = '0'; d <= '9'; ++d) language.insert(std::string(w) + " " + d + ".");
  }
  for (int seed = 1; seed <= 3; ++seed) {
    Json body = sampled(chat_body("Is it so?"), seed, 20);
    body.set("grammar", gbnf);
    Reply r = post(s, "/v1/chat/completions", body);
    ASSERT_EQ(r.status, 200) << r.raw;
    EXPECT_EQ(language.count(choice0(r.body).at("message").at("content").as_string()), 1u) << r.raw;
    EXPECT_EQ(choice0(r.body).at("finish_reason").as_string(), "stop");
    body.set("stream", true);
    r = post(s, "/v1/chat/completions", body);
    ASSERT_EQ(r.status, 200) << r.raw;
    std::string streamed;
    for (const Json& e : sse_events(r.raw)) {
      const Json* c = choice0(e).at("delta").find("content");
      if (c != nullptr) streamed += c->as_string();
    }
    EXPECT_EQ(language.count(streamed), 1u) << r.raw;
  }
  // json_object: an object (python3-jsonschema with {"type": "object"}); the story model's
  // strings are long, so the budget is generous and the whitespace bounded by the grammar.
  std::vector<Json> bodies;
  for (int seed = 1; seed <= 3; ++seed) {
    Json body = sampled(chat_body("Tell me."), seed, 300);
    body.set("response_format", Json::parse(R"({"type": "json_object"})"));
    bodies.push_back(body);
  }
  std::vector<Output> outs;
  for (const Reply& r : post_all(s, "/v1/chat/completions", bodies)) {
    ASSERT_EQ(r.status, 200) << r.raw;
    const std::string text = choice0(r.body).at("message").at("content").as_string();
    EXPECT_EQ(text.substr(0, 1), "{") << text;
    if (choice0(r.body).at("finish_reason").as_string() == "stop") outs.push_back({text, "stop"});
  }
  if (!outs.empty()) {
    std::string report;
    EXPECT_EQ(validate(Json::parse(R"({"type": "object"})"), outs, &report), 0) << report;
  }
}

TEST(StructuredHttp, ToolChoiceRequiredAndNamedGiveCallsThatValidate) {
  Serving s;  // stories260K's own template knows no tools: the generic JSON call format
  std::vector<std::pair<std::string, std::string>> calls;
  std::vector<Json> required, named;
  for (int seed = 1; seed <= 3; ++seed) {
    Json body = sampled(chat_body("What is the weather in Oslo?"), seed, 300);
    body.set("tools", Json::parse(kTwoTools));
    body.set("tool_choice", "required");
    body.set("parallel_tool_calls", false);
    required.push_back(body);
    body = sampled(chat_body("Wake me up."), seed, 300);
    body.set("tools", Json::parse(kTwoTools));
    body.set("tool_choice", Json::parse(R"({"type": "function", "function": {"name": "set_alarm"}})"));
    body.set("stream", true);
    named.push_back(body);
  }
  for (const Reply& r : post_all(s, "/v1/chat/completions", required)) {
    ASSERT_EQ(r.status, 200) << r.raw;
    EXPECT_EQ(choice0(r.body).at("finish_reason").as_string(), "tool_calls") << r.raw;
    const Json& msg = choice0(r.body).at("message");
    ASSERT_NE(msg.find("tool_calls"), nullptr) << r.raw;
    ASSERT_EQ(msg.at("tool_calls").size(), 1u) << r.raw;  // parallel_tool_calls false
    EXPECT_TRUE(msg.at("content").is_null()) << r.raw;
    const Json& call = msg.at("tool_calls").at(0);
    EXPECT_EQ(call.at("type").as_string(), "function");
    EXPECT_EQ(call.at("id").as_string().rfind("call_", 0), 0u);
    calls.emplace_back(call.at("function").at("name").as_string(), call.at("function").at("arguments").as_string());
  }
  // A named function, streamed: the deltas put together are a call of it.
  for (const Reply& r : post_all(s, "/v1/chat/completions", named)) {
    ASSERT_EQ(r.status, 200) << r.raw;
    std::string name, args, id, finish;
    for (const Json& e : sse_events(r.raw)) {
      const Json& c = choice0(e);
      if (!c.at("finish_reason").is_null()) finish = c.at("finish_reason").as_string();
      const Json* tc = c.at("delta").find("tool_calls");
      if (tc == nullptr) continue;
      for (const Json& d : tc->as_array()) {
        EXPECT_EQ(d.at("index").as_number(), 0);
        if (d.find("id") != nullptr) {
          EXPECT_TRUE(id.empty()) << "a second call: " << r.raw;
          id = d.at("id").as_string();
          name = d.at("function").at("name").as_string();
        }
        args += d.at("function").at("arguments").as_string();
      }
    }
    EXPECT_EQ(finish, "tool_calls") << r.raw;
    EXPECT_EQ(name, "set_alarm") << r.raw;
    calls.emplace_back(name, args);
  }
  expect_calls_validate(calls);
}

TEST(StructuredHttp, HermesTemplateCallsAndToolTurnsRender) {
  // Qwen2.5's template (tests/chat/templates): tools rendered by the template, calls written as
  // <tool_call> JSON </tool_call> and parsed back into tool_calls, streamed as argument deltas.
  Serving s({}, "tests/chat/templates/qwen2.5-instruct.jinja");
  std::vector<std::pair<std::string, std::string>> calls;
  std::vector<Json> bodies;
  for (int seed = 1; seed <= 4; ++seed) {
    Json body = sampled(chat_body("What is the weather in Oslo?"), seed, 300);
    body.set("tools", Json::parse(kTwoTools));
    body.set("tool_choice", Json::parse(R"({"type": "function", "function": {"name": "get_weather"}})"));
    body.set("stream", seed % 2 == 0);
    bodies.push_back(body);
  }
  const std::vector<Reply> replies = post_all(s, "/v1/chat/completions", bodies);
  for (size_t i = 0; i < replies.size(); ++i) {
    const Reply& r = replies[i];
    ASSERT_EQ(r.status, 200) << r.raw;
    if (bodies[i].at("stream").as_bool()) {
      std::string args, finish;
      int deltas = 0;
      for (const Json& e : sse_events(r.raw)) {
        const Json& c = choice0(e);
        if (!c.at("finish_reason").is_null()) finish = c.at("finish_reason").as_string();
        if (const Json* tc = c.at("delta").find("tool_calls")) {
          for (const Json& d : tc->as_array()) args += d.at("function").at("arguments").as_string();
          ++deltas;
        }
      }
      EXPECT_EQ(finish, "tool_calls");
      EXPECT_GT(deltas, 2) << "Hermes arguments stream as they are generated: " << r.raw;
      calls.emplace_back("get_weather", args);
    } else {
      EXPECT_EQ(choice0(r.body).at("finish_reason").as_string(), "tool_calls") << r.raw;
      const Json& call = choice0(r.body).at("message").at("tool_calls").at(0);
      calls.emplace_back(call.at("function").at("name").as_string(), call.at("function").at("arguments").as_string());
    }
  }
  expect_calls_validate(calls);
  // The request's prompt is the template's rendering with the tools (what /apply-template shows,
  // tokenized with BOS as a chat prompt is): the tools reached the template's context.
  Json ask = chat_body("What is the weather in Oslo?");
  ask.set("tools", Json::parse(kTwoTools));
  const Reply rendered = post(s, "/apply-template", ask);
  ASSERT_EQ(rendered.status, 200) << rendered.raw;
  Json tok = Json::object();
  tok.set("content", rendered.body.at("prompt"));
  tok.set("add_special", true);
  const Reply ids = post(s, "/tokenize", tok);
  ASSERT_EQ(ids.status, 200) << ids.raw;
  EXPECT_NE(rendered.body.at("prompt").as_string().find("<tools>"), std::string::npos) << rendered.raw;
  EXPECT_EQ(replies[0].body.at("usage").at("prompt_tokens").as_number(),
            static_cast<double>(ids.body.at("tokens").size()));
  // The follow-up turn: the assistant's call and the tool's result render through the template
  // (/apply-template shows the prompt) and the request runs.
  Json follow = Json::parse(R"({"messages": [
    {"role": "user", "content": "What is the weather in Oslo?"},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
      "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\", \"days\": 1, \"unit\": \"celsius\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 21 degrees"}]})");
  follow.set("tools", Json::parse(kTwoTools));
  Reply prompt = post(s, "/apply-template", follow);
  ASSERT_EQ(prompt.status, 200) << prompt.raw;
  const std::string p = prompt.body.at("prompt").as_string();
  EXPECT_NE(p.find("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\""), std::string::npos)
      << p;
  EXPECT_NE(p.find("<tool_response>\nsunny, 21 degrees\n</tool_response>"), std::string::npos) << p;
  EXPECT_NE(p.find("\"name\": \"set_alarm\""), std::string::npos) << "the tools are in the system prompt: " << p;
  follow.set("max_tokens", 8);
  follow.set("tool_choice", "none");
  Reply r = post(s, "/v1/chat/completions", follow);
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_TRUE(choice0(r.body).at("message").at("content").is_string());
  EXPECT_EQ(choice0(r.body).at("message").find("tool_calls"), nullptr) << "tool_choice none: text only";
  EXPECT_EQ(r.body.at("usage").at("completion_tokens").as_number(), 8);
}

TEST(StructuredHttp, MalformedFieldsAre400sNamingTheField) {
  ServerOptions so;
  so.max_body_bytes = size_t{3} << 20;  // room for a grammar over the 1 MiB constraint limit
  Serving s(so);
  struct Case {
    std::string path;
    std::string extra;  // merged into a valid body
    std::string param;  // expected error.param
    std::string says;   // in error.message
  };
  const std::vector<Case> cases = {
      {"/v1/chat/completions", R"({"response_format": {"type": "xml"}})", "response_format.type", "expected \"text\""},
      {"/v1/chat/completions", R"({"response_format": "json"})", "response_format", "expected an object"},
      {"/v1/chat/completions", R"({"response_format": {"type": "json_schema"}})", "response_format.json_schema",
       "expected an object"},
      {"/v1/chat/completions", R"({"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}})",
       "response_format.json_schema.schema", "required"},
      {"/v1/chat/completions",
       R"({"response_format": {"type": "json_schema", "json_schema": {"name": "a b", "schema": {}}}})",
       "response_format.json_schema.name", "a-z"},
      {"/v1/chat/completions",
       R"({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "string", "format": "uri"}}}})",
       "response_format.json_schema.schema", "format 'uri' is not supported"},
      {"/v1/chat/completions", R"({"json_schema": {"type": "object", "properties": {"a": {"type": "strange"}}}})",
       "json_schema", "/properties/a"},
      {"/v1/chat/completions", R"({"json_schema": "{}"})", "json_schema", "expected a JSON Schema object"},
      {"/v1/completions", R"({"grammar": "root ::= (\"a\""})", "grammar", "line 1"},
      {"/v1/completions", R"({"grammar": 5})", "grammar", "expected a GBNF grammar"},
      {"/v1/chat/completions", R"({"grammar": "root ::= \"a\"", "json_schema": {}})", "json_schema",
       "only one output constraint"},
      {"/v1/chat/completions", R"({"response_format": {"type": "json_object"}, "grammar": "root ::= \"a\""})",
       "grammar", "only one output constraint"},
      {"/v1/chat/completions",
       R"({"tools": [{"type": "function", "function": {"name": "f"}}], "response_format": {"type": "json_object"}})",
       "response_format", "tools is given too"},
      {"/v1/chat/completions", R"({"tools": [{"type": "function", "function": {"name": "a b"}}]})", "tools",
       "may only hold"},
      {"/v1/chat/completions", R"({"tools": {"type": "function"}})", "tools", "must be an array"},
      {"/v1/chat/completions",
       R"({"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"u": {"format": "uri", "type": "string"}}}}}]})",
       "tools", "format 'uri'"},
      {"/v1/chat/completions", R"({"tool_choice": "required"})", "tool_choice", "no tools"},
      {"/v1/chat/completions",
       R"({"tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "sometimes"})", "tool_choice",
       "expected \"none\""},
      {"/v1/chat/completions",
       R"({"tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": {"type": "function", "function": {"name": "g"}}})",
       "tool_choice", "not among the tools"},
      {"/v1/chat/completions",
       R"({"tools": [{"type": "function", "function": {"name": "f"}}], "parallel_tool_calls": "yes"})",
       "parallel_tool_calls", "true or false"},
      {"/v1/completions", R"({"tools": [{"type": "function", "function": {"name": "f"}}]})", "tools",
       "/v1/chat/completions"},
      {"/v1/chat/completions", R"({"messages": [{"role": "tool", "content": "x", "tool_call_id": 3}]})", "messages[0].tool_call_id",
       "expected a string"},
      {"/v1/chat/completions",
       R"({"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": null, "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": 3}}]}, {"role": "user", "content": "y"}]})",
       "messages[1].tool_calls[0].function.arguments", "JSON string"},
      {"/v1/chat/completions", R"({"grammar": "root ::= \"a\"", "x_edgellm_route": "cloud"})", "x_edgellm_route",
       "cannot honour"},
      {"/v1/chat/completions", R"({"functions": [{"name": "f"}]})", "functions", "send \"tools\""},
  };
  for (const Case& c : cases) {
    Json body = c.path == "/v1/completions"
                    ? Json::parse(R"({"prompt": "Once", "max_tokens": 4})")
                    : Json::parse(R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4})");
    const Json extra = Json::parse(c.extra);
    for (const auto& [k, v] : extra.as_object()) body.set(k, v);
    Reply r = post(s, c.path, body);
    ASSERT_EQ(r.status, 400) << c.extra << "\n" << r.raw;
    const Json& e = r.body.at("error");
    EXPECT_EQ(e.at("type").as_string(), "invalid_request_error") << r.raw;
    EXPECT_TRUE(e.at("param").is_string() && e.at("param").as_string() == c.param) << c.extra << "\n" << r.raw;
    EXPECT_NE(e.at("message").as_string().find(c.says), std::string::npos) << c.extra << "\n" << r.raw;
  }
  // Too large: a grammar over the 1 MiB limit (service/request_limits.h) is refused by size
  // before anything parses it.
  Json big = Json::parse(R"({"prompt": "Once", "max_tokens": 4})");
  big.set("grammar", "root ::= \"a\"\n#" + std::string((size_t{1} << 20), 'x') + "\n");
  Reply r = post(s, "/v1/completions", big);
  ASSERT_EQ(r.status, 400) << r.raw.substr(0, 300);
  EXPECT_NE(r.body.at("error").at("message").as_string().find("more than 1048576 bytes"), std::string::npos)
      << r.raw.substr(0, 300);
  // The server still answers, constrained and not.
  Json ok = Json::parse(
      R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4, "grammar": "root ::= \"ok\""})");
  r = post(s, "/v1/chat/completions", ok);
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(choice0(r.body).at("message").at("content").as_string(), "ok");
}

#if defined(EDGELLM_HAVE_CURL)  // the cloud transport of `edgellm serve`
TEST(StructuredHttp, ConstrainedAndToolRequestsNeverReachTheRoutersCloud) {
  // A cloud stand-in that answers every chat and counts what it gets; the thresholds send every
  // unconstrained answer to it (so the count shows the router would have gone there).
  std::atomic<int> cloud_calls{0};
  httplib::Server cloud;
  cloud.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
    cloud_calls.fetch_add(1);
    res.set_content(R"({"id": "c", "object": "chat.completion", "created": 0, "model": "cloud",
      "choices": [{"index": 0, "message": {"role": "assistant", "content": "from the cloud"}, "finish_reason": "stop"}],
      "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})",
                    "application/json");
  });
  const int cloud_port = cloud.bind_to_any_port("127.0.0.1");
  std::thread cloud_thread([&] { cloud.listen_after_bind(); });
  {
    // The Runtime's router with `edgellm serve`'s transport (libcurl; http:// to loopback).
    RouterParams router;
    HttpsTransportOptions to;
    to.tiers["small"] = CloudEndpoint{"http://127.0.0.1:" + std::to_string(cloud_port), ""};
    router.transport = std::make_shared<HttpsTransport>(std::move(to));
    router.cloud_model = "cloud";
    router.local_threshold = 1.0;  // every score is below both (a score of 1 needs every token at p = 1): the cloud
    router.cloud_threshold = 1.0;
    Serving s(ServerOptions{}, "", std::move(router));
    // Unconstrained: the cloud answers (the stand-in is reachable and the router uses it).
    Reply r = post(s, "/v1/chat/completions",
                   Json::parse(R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4})"));
    ASSERT_EQ(r.status, 200) << r.raw;
    EXPECT_EQ(cloud_calls.load(), 1) << r.raw;
    // Constrained (each form) and with tools: answered locally, valid, the cloud never called.
    const char* constrained[] = {
        R"({"grammar": "root ::= \"local\""})",
        R"({"json_schema": {"const": "local"}})",
        R"({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"const": "local"}}}})",
    };
    for (const char* extra : constrained) {
      Json body = Json::parse(R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 12})");
      const Json fields = Json::parse(extra);
      for (const auto& [k, v] : fields.as_object()) body.set(k, v);
      r = post(s, "/v1/chat/completions", body);
      ASSERT_EQ(r.status, 200) << r.raw;
      std::string text = choice0(r.body).at("message").at("content").as_string();
      text.erase(text.find_last_not_of(' ') + 1);  // the JSON grammar's trailing space
      EXPECT_TRUE(text == "local" || text == "\"local\"") << extra << ": " << r.raw;
    }
    Json tools = sampled(chat_body("Alarm at 7"), 1, 300);
    tools.set("tools", Json::parse(kTwoTools));
    tools.set("tool_choice", "required");
    tools.set("parallel_tool_calls", false);
    r = post(s, "/v1/chat/completions", tools);
    ASSERT_EQ(r.status, 200) << r.raw;
    EXPECT_EQ(choice0(r.body).at("finish_reason").as_string(), "tool_calls") << r.raw;
    EXPECT_EQ(cloud_calls.load(), 1) << "a constrained or tool request went to the cloud";
  }
  cloud.stop();
  cloud_thread.join();
}
#endif

// ---- POST /v1/classify

// The server's answer to `body` against the reference on `prompt` (summed or, norm, per-token
// mean log-probs through a softmax written here). A prompt whose prefix the prefix cache holds
// (cached > 0: usage.prompt_tokens_details.cached_tokens must say so) runs its rest as a shorter
// batch on the server's default threads, whose kernels sum in another order: measured |diff|
// 3.9e-6 nats there (0 without the cache), bound 2e-5.
void expect_classify_matches(const Serving& s, const Model& model, const Tokenizer& tok, const Json& body,
                             const std::vector<int32_t>& prompt, bool norm, bool cached = false) {
  const double tolerance = cached ? 2e-5 : 1e-6;
  const Reply r = post(s, "/v1/classify", body);
  ASSERT_EQ(r.status, 200) << r.raw;
  const Json& labels = body.at("labels");
  const Json& got = r.body.at("labels");
  ASSERT_EQ(got.size(), labels.size()) << r.raw;
  std::vector<double> sums, z;
  for (size_t i = 0; i < labels.size(); ++i) {
    const std::vector<int32_t> ids = tok.encode(labels.at(i).as_string(), false, false);
    sums.push_back(edgellm::test::naive_label_logprob(model, prompt, ids));
    z.push_back(norm ? sums.back() / static_cast<double>(ids.size()) : sums.back());
    EXPECT_EQ(got.at(i).at("tokens").as_int(), static_cast<int64_t>(ids.size()));
  }
  const double max = *std::max_element(z.begin(), z.end());
  double total = 0;
  for (double& v : z) total += (v = std::exp(v - max));
  double p_sum = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    SCOPED_TRACE(labels.at(i).as_string());
    EXPECT_EQ(got.at(i).at("index").as_int(), static_cast<int64_t>(i));
    EXPECT_EQ(got.at(i).at("label").as_string(), labels.at(i).as_string());
    // Measured |difference| 0 (x86-64, F32 KV: test_runtime_classify's bound, float rounding of a
    // ~10-nat sum for kernels that sum a batch in another order); JSON carries doubles exactly.
    EXPECT_NEAR(got.at(i).at("logprob").as_number(), sums[i], tolerance);
    EXPECT_NEAR(got.at(i).at("probability").as_number(), z[i] / total, tolerance);
    p_sum += got.at(i).at("probability").as_number();
  }
  EXPECT_NEAR(p_sum, 1.0, 1e-12);
  const auto best = static_cast<size_t>(std::max_element(z.begin(), z.end()) - z.begin());
  EXPECT_EQ(r.body.at("index").as_int(), static_cast<int64_t>(best)) << r.raw;
  EXPECT_EQ(r.body.at("label").as_string(), labels.at(best).as_string());
  EXPECT_EQ(r.body.at("object").as_string(), "classification");
  EXPECT_EQ(r.body.at("usage").at("prompt_tokens").as_int(), static_cast<int64_t>(prompt.size()));
  const int64_t reused = r.body.at("usage").at("prompt_tokens_details").at("cached_tokens").as_int();
  if (cached) {
    EXPECT_GT(reused, 0) << r.raw;
  } else {
    EXPECT_EQ(reused, 0) << r.raw;
  }
}

TEST(StructuredHttp, ClassifyEqualsTeacherForcedReference) {
  Serving s;
  const std::unique_ptr<Model> model = Model::load(test::shared_model("stories260K.gguf"));
  const std::unique_ptr<Tokenizer> tok = Tokenizer::from_gguf(model->gguf());
  // Raw: the prompt is the text as given (BOS first), labels of 1 to several tokens.
  Json raw = Json::parse(R"({"text": "Once upon a time, there was a little", "raw": true,
    "labels": [" girl", " dog named Spot", " bird", " big red ball", " cat"]})");
  const std::vector<int32_t> raw_prompt = tok->encode(raw.at("text").as_string(), true, false);
  for (bool norm : {false, true}) {
    SCOPED_TRACE(norm ? "length_normalize" : "summed");
    raw.set("length_normalize", norm);
    expect_classify_matches(s, *model, *tok, raw, raw_prompt, norm);
  }
  // Chat: the system message is the instruction, the user message the text; "text" +
  // "instruction" is the same request.
  const Json messages = Json::parse(R"([{"role": "system", "content": "Which animal is in the story?"},
    {"role": "user", "content": "Lily went to the park and saw a big dog."}])");
  Json chat = Json::object();
  chat.set("messages", messages);
  chat.set("labels", Json::parse(R"(["dog", "cat", "bird", "fish"])"));
  std::vector<int32_t> chat_prompt;
  {
    const std::shared_ptr<InferenceService> svc = s.runtime().service();
    chat_prompt = chat_prompt_tokens(svc->chat_template(), *tok, messages);
  }
  expect_classify_matches(s, *model, *tok, chat, chat_prompt, false);
  Json flat = Json::object();
  flat.set("instruction", "Which animal is in the story?");
  flat.set("text", "Lily went to the park and saw a big dog.");
  flat.set("labels", chat.at("labels"));
  expect_classify_matches(s, *model, *tok, flat, chat_prompt, false, /*cached=*/true);  // the same prompt again
}

TEST(StructuredHttp, ClassifyBadRequestsAre400sWithTheRuntimesWording) {
  Serving s;
  Json many = Json::array();
  for (int i = 0; i < 65; ++i) many.push_back("l" + std::to_string(i));
  Json too_many = Json::object();
  too_many.set("text", "x");
  too_many.set("labels", many);
  struct Case {
    Json body;
    std::string says;  // in error.message (request_limits.h's words where the Runtime refuses)
  };
  const std::vector<Case> cases = {
      {Json::parse(R"({"labels": ["a"]})"), "text: required"},
      {Json::parse(R"({"text": "x"})"), "labels: required"},
      {Json::parse(R"({"text": "x", "labels": "a"})"), "labels: required"},
      {Json::parse(R"({"text": 5, "labels": ["a"]})"), "text: expected a string"},
      {Json::parse(R"({"text": "x", "labels": ["a", 5]})"), "labels[1]: expected a string"},
      {Json::parse(R"({"text": "x", "labels": ["a"], "raw": "yes"})"), "raw: expected true or false"},
      {Json::parse(R"({"text": "x", "messages": [], "labels": ["a"]})"), "not both"},
      {Json::parse(R"({"messages": [{"role": "assistant", "content": "x"}], "labels": ["a"]})"),
       "one user message"},
      {Json::parse(R"({"messages": [{"role": "user", "content": "x"}], "raw": true, "labels": ["a"]})"),
       "raw: "},
      {Json::parse(R"({"messages": [{"role": "user", "content": "x"}], "instruction": "i", "labels": ["a"]})"),
       "instruction: "},
      // The Runtime's checks (check_classify_request), worded as edgellm_classify reports them.
      {Json::parse(R"({"text": "", "labels": ["a"]})"), "text is empty"},
      {Json::parse(R"({"text": "x", "labels": []})"), "labels: give at least one"},
      {Json::parse(R"({"text": "x", "labels": ["a", ""]})"), "labels[1] is empty"},
      {Json::parse(R"({"text": "x", "labels": ["a", "b", "a"]})"), "labels[2] repeats labels[0]"},
      {too_many, "labels: at most 64, got 65"},
      {Json::parse(R"({"text": "x", "labels": ["a\u0001"]})"), "labels[0]"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body.dump());
    const Reply r = post(s, "/v1/classify", c.body);
    ASSERT_EQ(r.status, 400) << r.raw;
    EXPECT_NE(r.body.at("error").at("message").as_string().find(c.says), std::string::npos) << r.raw;
  }
  httplib::Client c = s.client();
  auto bad = c.Post("/v1/classify", "{\"text\": ", "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400) << bad->body;
  auto get = c.Get("/v1/classify");
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 405);
  // After all that the server still classifies.
  const Reply ok = post(s, "/classify", Json::parse(R"({"text": "a dog", "labels": ["dog", "cat"]})"));
  EXPECT_EQ(ok.status, 200) << ok.raw;
}

}  // namespace
}  // namespace edgellm::server
