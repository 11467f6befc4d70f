// Constrained output through the C ABI (libedgellm.so only): edgellm_request_params.grammar,
// .json_schema and .json_object. Sampled at temperature 1 (a random pick is almost always
// refused, the hardest case for the check-first sampler), the outputs are judged by references
// that share no code with the grammar engine: python3-jsonschema (scripts/validate-json-outputs.py,
// Draft 2020-12) for schemas and JSON objects, and the grammar's finite language spelled out in
// the test for GBNF. Bad constraints are INVALID_ARGUMENT naming the field and the place, and
// queue nothing.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <fstream>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "edgellm/edgellm.h"
#include "support/json_validator.h"
#include "support/test_env.h"

namespace {

using namespace std::chrono_literals;

struct Outcome {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  std::string text;
  edgellm_finish_reason reason = EDGELLM_FINISH_ERROR;
  std::string error;
  std::string route;  // result.route.route
  std::string route_reason;
};

// What a finished request gave (copied out of its Outcome).
struct Output {
  std::string text;
  edgellm_finish_reason reason = EDGELLM_FINISH_ERROR;
  std::string error;
  std::string route;
  std::string route_reason;
};

void on_finish(const edgellm_result* res, void* user) {
  auto* o = static_cast<Outcome*>(user);
  std::lock_guard<std::mutex> lock(o->m);
  o->text.assign(res->text, res->text_len);
  o->reason = res->finish_reason;
  o->error = res->error_message != nullptr ? res->error_message : "";
  o->route = res->route.route != nullptr ? res->route.route : "";
  o->route_reason = res->route.reason != nullptr ? res->route.reason : "";
  o->done = true;
  o->cv.notify_all();
}

class CApiStructured : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    edgellm_runtime_params p = edgellm_runtime_default_params();
    p.n_ctx = 512;
    p.n_parallel = 4;
    ASSERT_EQ(edgellm_runtime_create(edgellm::test::shared_model("stories260K.gguf").c_str(), &p, &rt_), EDGELLM_OK)
        << edgellm_last_error();
  }
  static void TearDownTestSuite() {
    edgellm_runtime_destroy(rt_);
    rt_ = nullptr;
  }

  // `n` requests at once (seeds 1..n, temperature 1, no truncation) with the constraint `set`
  // applies; waits for all of them.
  template <typename Set>
  std::vector<Output> sample(int n, Set set, int32_t max_tokens = 200, float temperature = 1.0f) {
    std::deque<Outcome> out(static_cast<size_t>(n));
    std::vector<edgellm_sampling> sampling(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      edgellm_sampling& s = sampling[static_cast<size_t>(i)];
      s = edgellm_sampling_default();
      s.temperature = temperature;
      s.top_k = 0;
      s.top_p = 1.0f;
      s.min_p = 0.0f;
      s.seed = static_cast<uint64_t>(i + 1);
      edgellm_request_params r = edgellm_request_default_params();
      r.prompt = "Once upon a time";
      r.sampling = &s;
      r.max_tokens = max_tokens;
      r.deadline_ms = 60000;
      r.on_finish = on_finish;
      r.user_data = &out[static_cast<size_t>(i)];
      set(r);
      edgellm_request_id id = 0;
      EXPECT_EQ(edgellm_submit(rt_, &r, &id), EDGELLM_OK) << edgellm_last_error();
    }
    std::vector<Output> results;
    for (Outcome& o : out) {
      std::unique_lock<std::mutex> lock(o.m);
      EXPECT_TRUE(o.cv.wait_for(lock, 120s, [&] { return o.done; }));
      results.push_back(Output{o.text, o.reason, o.error, o.route, o.route_reason});
    }
    return results;
  }

  uint64_t invalid_requests() {
    edgellm_metrics m = edgellm_metrics_init();
    EXPECT_EQ(edgellm_metrics_get(rt_, &m), EDGELLM_OK);
    return m.invalid_requests;
  }

  static edgellm_runtime* rt_;
};
edgellm_runtime* CApiStructured::rt_ = nullptr;

// python3-jsonschema's verdict on the outputs (support/json_validator.h: every output finished
// with "stop", parses as JSON and validates). Returns the validator's report line.
std::string validate(const std::string& schema, const std::vector<Output>& outs, int* exit_code) {
  std::vector<edgellm::test::GeneratedOutput> generated;
  for (const Output& o : outs) generated.push_back({o.text, o.reason == EDGELLM_FINISH_STOP ? "stop" : "length"});
  edgellm::test::JsonValidation v = edgellm::test::validate_json_outputs(schema, generated);
  *exit_code = v.exit_code;
  return v.report;
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

TEST_F(CApiStructured, JsonSchemaOutputsValidateWithAnIndependentValidator) {
  const auto outs = sample(4, [](edgellm_request_params& r) { r.json_schema = kPersonSchema; });
  for (const Output& o : outs) EXPECT_EQ(o.reason, EDGELLM_FINISH_STOP) << o.error << "\n" << o.text;
  int rc = -1;
  const std::string report = validate(kPersonSchema, outs, &rc);
  EXPECT_EQ(rc, 0) << report;
  // The same prompts unconstrained are not JSON (so the constraint is what made them valid).
  const auto free = sample(2, [](edgellm_request_params&) {}, 40);
  EXPECT_NE(validate(kPersonSchema, free, &rc), "");
  EXPECT_NE(rc, 0) << "unconstrained stories validated: the test cannot tell the constraint apart";
}

TEST_F(CApiStructured, JsonObjectOutputsAreObjects) {
  // A story model inside "any JSON object" writes long strings, so most samples reach the token
  // budget: each output must open an object (the unconstrained text of the same seed does not),
  // and those that stopped must be whole objects.
  const auto outs = sample(4, [](edgellm_request_params& r) { r.json_object = true; }, 60);
  const auto free = sample(4, [](edgellm_request_params&) {}, 8);
  std::vector<Output> stopped;
  for (size_t i = 0; i < outs.size(); ++i) {
    const Output& o = outs[i];
    ASSERT_NE(o.reason, EDGELLM_FINISH_ERROR) << o.error;
    EXPECT_EQ(o.text.substr(0, o.text.find_first_not_of(" \n\t\r")).size() < o.text.size() &&
                  o.text[o.text.find_first_not_of(" \n\t\r")] == '{',
              true)
        << o.text;
    EXPECT_EQ(free[i].text.find('{'), std::string::npos) << "the unconstrained story opens an object: " << free[i].text;
    if (o.reason == EDGELLM_FINISH_STOP) stopped.push_back(o);
  }
  if (!stopped.empty()) {
    int rc = -1;
    const std::string report = validate(R"({"type": "object"})", stopped, &rc);
    EXPECT_EQ(rc, 0) << report;
  }
}

TEST_F(CApiStructured, GbnfOutputsAreSentencesOfTheGrammar) {
  // A finite language, listed here independently of the grammar engine.
  const char* gbnf = "root ::= answer \".\"\nanswer ::= \"yes\" | \"no\" | \"maybe later\"\n";
  const std::set<std::string> language = {"yes.", "no.", "maybe later."};
  const auto outs = sample(6, [&](edgellm_request_params& r) { r.grammar = gbnf; }, 20);
  for (const Output& o : outs) {
    EXPECT_EQ(o.reason, EDGELLM_FINISH_STOP) << o.error;
    EXPECT_TRUE(language.count(o.text)) << "'" << o.text << "' is not a sentence of the grammar";
  }
}

TEST_F(CApiStructured, BadConstraintsAreInvalidArgumentsAndQueueNothing) {
  struct Case {
    const char* grammar;
    const char* schema;
    bool object;
    const char* needle;  // in edgellm_last_error()
  };
  const Case cases[] = {
      {"root ::= (\"a\"", nullptr, false, "grammar:"},
      {"root ::= missing-rule", nullptr, false, "missing-rule"},
      {"", nullptr, false, "grammar is empty"},
      {nullptr, "{\"type\": \"object\"", false, "json_schema:"},
      {nullptr, "{\"not\": {\"type\": \"string\"}}", false, "'not'"},
      {nullptr, "", false, "json_schema is empty"},
      {"root ::= \"a\"", "{}", false, "more than one output constraint"},
      {nullptr, "{}", true, "more than one output constraint"},
      {"root ::= \"\xff\"", nullptr, false, "grammar"},
  };
  for (const Case& c : cases) {
    const uint64_t before = invalid_requests();
    edgellm_request_params r = edgellm_request_default_params();
    r.prompt = "Once upon a time";
    r.grammar = c.grammar;
    r.json_schema = c.schema;
    r.json_object = c.object;
    edgellm_request_id id = 7;
    EXPECT_EQ(edgellm_submit(rt_, &r, &id), EDGELLM_ERR_INVALID_ARGUMENT) << c.needle;
    EXPECT_EQ(id, 0u);
    const std::string error = edgellm_last_error();
    EXPECT_NE(error.find(c.needle), std::string::npos) << error;
    // "" is refused by the face before the runtime sees it; the others count as invalid.
    if (std::string(c.needle).find("is empty") == std::string::npos) {
      EXPECT_EQ(invalid_requests(), before + 1) << error;
    }
  }
}

// A router that would send every chat to the cloud (both thresholds 1: no local answer is confident
// enough): a constrained chat is answered locally all the same (the cloud call carries no grammar),
// its transport never called, and route CLOUD is refused. An unconstrained chat of the same router
// does call the transport (the control: the setup really routes).
std::atomic<int> g_cloud_calls{0};

void refusing_transport(edgellm_cloud_call* call, const char*, const char*, const char*, size_t, void*) {
  ++g_cloud_calls;
  edgellm_cloud_complete(call, 0, nullptr, 0, "no cloud in this test");
}

TEST_F(CApiStructured, RoutedConstrainedChatsStayLocal) {
  edgellm_router_params rp = edgellm_router_default_params();
  rp.local_threshold = 1.0;
  rp.cloud_threshold = 1.0;
  rp.transport = refusing_transport;
  ASSERT_EQ(edgellm_set_router(rt_, &rp), EDGELLM_OK) << edgellm_last_error();
  edgellm_message chat[1] = {{sizeof(edgellm_message), "user", "Say yes or no."}};
  const char* gbnf = "root ::= (\"yes\" | \"no\") \".\"";
  g_cloud_calls = 0;
  const auto outs = sample(3, [&](edgellm_request_params& r) {
    r.prompt = nullptr;
    r.messages = chat;
    r.n_messages = 1;
    r.route = EDGELLM_ROUTE_AUTO;
    r.grammar = gbnf;
  }, 20);
  for (const Output& o : outs) {
    EXPECT_EQ(o.reason, EDGELLM_FINISH_STOP) << o.error;
    EXPECT_TRUE(o.text == "yes." || o.text == "no.") << o.text;
    EXPECT_EQ(o.route, "local") << o.route_reason;
    EXPECT_NE(o.route_reason.find("constrained"), std::string::npos) << o.route_reason;
  }
  EXPECT_EQ(g_cloud_calls.load(), 0);

  edgellm_request_params r = edgellm_request_default_params();
  r.messages = chat;
  r.n_messages = 1;
  r.route = EDGELLM_ROUTE_CLOUD;
  r.json_object = true;
  edgellm_request_id id = 0;
  EXPECT_EQ(edgellm_submit(rt_, &r, &id), EDGELLM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(edgellm_last_error()).find("route cloud"), std::string::npos) << edgellm_last_error();

  const auto control = sample(1, [&](edgellm_request_params& q) {
    q.prompt = nullptr;
    q.messages = chat;
    q.n_messages = 1;
    q.route = EDGELLM_ROUTE_AUTO;
  }, 8);
  EXPECT_GE(g_cloud_calls.load(), 1) << "an unconstrained chat did not reach the transport: the test proves nothing";
  EXPECT_NE(control.at(0).reason, EDGELLM_FINISH_ERROR) << control.at(0).error;

  const edgellm_router_params off = edgellm_router_default_params();
  ASSERT_EQ(edgellm_set_router(rt_, &off), EDGELLM_OK);
}

}  // namespace
