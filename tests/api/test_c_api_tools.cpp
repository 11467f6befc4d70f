// Tool calling through the C ABI (libedgellm.so only): edgellm_request_params.tools / tool_choice /
// tool_choice_name / parallel_tool_calls and the result's tool_calls / content. stories260K's own
// template knows no tools, so the generic JSON call format is used (chat/tool_calls.h). Judged by
// references that share no code with the tool grammar or its parser:
//   - python3-jsonschema (support/json_validator.h): every call's arguments follow its tool's
//     parameters schema, and the reply as generated (result.text) equals, as a JSON value, the
//     call the library parsed out of it ({"tool_calls": [{"name", "arguments"}]} with both consts);
//   - tool_choice NONE: the same messages without tools give the same greedy text;
// and bad tools, choices and inputs are INVALID_ARGUMENT naming the field, with nothing queued.
// The C++ wrapper (edgellm.hpp: Request::tools / tool_choice / tool_choice_name /
// parallel_tool_calls, tool_calls() / content() of a result) gives what the same C request gives.
// Follow-up turns (edgellm_message.tool_calls / tool_call_id; the wrapper's Message) render with
// Qwen2.5's template exactly as transformers renders them (tests/chat/testdata/tool-cases.jsonl,
// read by python3's json: no library code), prefill exactly those tokens and generate what the
// golden text as a raw prompt generates; bad tool turns are INVALID_ARGUMENT naming the message.
// (The same conversations through NAPI and HTTP: the face-parity table, tests/parity/cases.json.)
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdio>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "edgellm/edgellm.h"
#include "edgellm/edgellm.hpp"
#include "support/json_validator.h"
#include "support/test_env.h"
#include "support/tool_fixtures.h"

namespace {

using namespace std::chrono_literals;

using edgellm::test::kTwoTools;
using edgellm::test::kTwoToolsCallSchema;

struct Call {
  std::string id, name, arguments;
};

struct Output {
  bool done = false;
  std::string text, content, error;
  edgellm_finish_reason reason = EDGELLM_FINISH_ERROR;
  std::vector<Call> calls;
  uint32_t call_struct_size = 0;
  int32_t prompt_tokens = 0;
};

struct Outcome {
  std::mutex m;
  std::condition_variable cv;
  Output out;
};

void on_finish(const edgellm_result* res, void* user) {
  auto* o = static_cast<Outcome*>(user);
  std::lock_guard<std::mutex> lock(o->m);
  Output& out = o->out;
  out.text.assign(res->text, res->text_len);
  out.reason = res->finish_reason;
  out.error = res->error_message != nullptr ? res->error_message : "";
  out.prompt_tokens = res->stats.prompt_tokens;
  if (offsetof(edgellm_result, content_len) < res->struct_size) {
    out.content.assign(res->content, res->content_len);
    const auto* base = reinterpret_cast<const unsigned char*>(res->tool_calls);
    for (size_t i = 0; i < res->n_tool_calls; ++i) {
      const auto* c = reinterpret_cast<const edgellm_tool_call*>(base + i * res->tool_calls[0].struct_size);
      out.calls.push_back({c->id, c->name, c->arguments});
      out.call_struct_size = c->struct_size;
    }
  }
  out.done = true;
  o->cv.notify_all();
}

class CApiTools : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    edgellm_runtime_params p = edgellm_runtime_default_params();
    p.n_ctx = 2048;  // the tools' system prompt (~1,000 stories260K tokens) and the replies
    p.n_parallel = 4;
    ASSERT_EQ(edgellm_runtime_create(edgellm::test::shared_model("stories260K.gguf").c_str(), &p, &rt_), EDGELLM_OK)
        << edgellm_last_error();
  }
  static void TearDownTestSuite() {
    edgellm_runtime_destroy(rt_);
    rt_ = nullptr;
  }

  // A chat request of one user message; temperature 0 unless `seed` (then 1, no truncation).
  static edgellm_request_params chat(const edgellm_message* msg, const edgellm_sampling* s) {
    edgellm_request_params r = edgellm_request_default_params();
    r.messages = msg;
    r.n_messages = 1;
    r.sampling = s;
    r.max_tokens = 300;
    r.deadline_ms = 0;
    return r;
  }

  // Submits every request at once and waits for all of them (a deadline, not a sleep).
  static std::vector<Output> run_all(std::vector<edgellm_request_params> reqs) {
    std::deque<Outcome> outcomes(reqs.size());
    for (size_t i = 0; i < reqs.size(); ++i) {
      reqs[i].on_finish = on_finish;
      reqs[i].user_data = &outcomes[i];
      edgellm_request_id id = 0;
      EXPECT_EQ(edgellm_submit(rt_, &reqs[i], &id), EDGELLM_OK) << edgellm_last_error();
      if (id == 0) outcomes[i].out.done = true;  // already failed above
    }
    std::vector<Output> outs;
    for (Outcome& o : outcomes) {
      std::unique_lock<std::mutex> lock(o.m);
      EXPECT_TRUE(o.cv.wait_for(lock, 120s, [&] { return o.out.done; })) << "no on_finish";
      outs.push_back(o.out);
    }
    return outs;
  }

  static edgellm_runtime* rt_;
};

edgellm_runtime* CApiTools::rt_ = nullptr;

edgellm_sampling greedy() {
  edgellm_sampling s = edgellm_sampling_default();
  s.temperature = 0;
  return s;
}

edgellm_sampling hot(uint64_t seed) {
  edgellm_sampling s = edgellm_sampling_default();
  s.temperature = 1;
  s.top_k = 0;
  s.top_p = 1;
  s.min_p = 0;
  s.seed = seed;
  return s;
}

TEST_F(CApiTools, RequiredAndNamedCallsFollowTheSchemasAndAreTheReplyParsed) {
  const edgellm_message weather{sizeof(edgellm_message), "user", "What is the weather in Oslo?", nullptr, 0, nullptr};
  const edgellm_message wake{sizeof(edgellm_message), "user", "Wake me up.", nullptr, 0, nullptr};
  const edgellm_sampling s0 = greedy(), s1 = hot(1), s2 = hot(2);
  std::vector<edgellm_request_params> reqs;
  for (const edgellm_sampling* s : {&s0, &s1}) {
    edgellm_request_params r = chat(&weather, s);
    r.tools = kTwoTools;
    r.tool_choice = EDGELLM_TOOL_CHOICE_REQUIRED;
    r.parallel_tool_calls = false;
    reqs.push_back(r);
  }
  for (const edgellm_sampling* s : {&s0, &s2}) {
    edgellm_request_params r = chat(&wake, s);
    r.tools = kTwoTools;
    r.tool_choice = EDGELLM_TOOL_CHOICE_FUNCTION;
    r.tool_choice_name = "set_alarm";
    reqs.push_back(r);
  }
  const std::vector<Output> outs = run_all(reqs);
  // One run of the validator (python's start-up is most of this test's time): each reply as
  // generated is {"tool_calls": [one call of one of the tools, valid for its parameters]} and
  // equals, as a JSON value, the one call the library parsed out of it.
  std::string parsed_calls;
  std::vector<edgellm::test::GeneratedOutput> raw;
  for (size_t i = 0; i < outs.size(); ++i) {
    const Output& o = outs[i];
    ASSERT_EQ(o.reason, EDGELLM_FINISH_TOOL_CALLS) << o.error << " " << o.text;
    ASSERT_EQ(o.calls.size(), 1u) << o.text;  // parallel false; a named function is one call
    EXPECT_EQ(o.call_struct_size, sizeof(edgellm_tool_call));
    EXPECT_EQ(o.calls[0].id.rfind("call_", 0), 0u) << o.calls[0].id;
    EXPECT_EQ(o.calls[0].id.size(), 5u + 24u) << o.calls[0].id;
    if (i >= 2) {
      EXPECT_EQ(o.calls[0].name, "set_alarm") << o.text;
    }
    EXPECT_EQ(o.content, "") << "the generic format's reply is the call, no text: " << o.text;
    parsed_calls += std::string(i ? ", " : "") + "{\"const\": {\"tool_calls\": [{\"name\": \"" + o.calls[0].name +
                    "\", \"arguments\": " + o.calls[0].arguments + "}]}}";
    raw.push_back({o.text, "stop"});
  }
  const std::string schema = std::string("{\"allOf\": [{\"type\": \"object\", \"required\": [\"tool_calls\"], ") +
                             "\"properties\": {\"tool_calls\": {\"type\": \"array\", \"minItems\": 1, \"maxItems\": 1, " +
                             "\"items\": " + kTwoToolsCallSchema + "}}}, {\"anyOf\": [" + parsed_calls + "]}]}";
  const edgellm::test::JsonValidation v = edgellm::test::validate_json_outputs(schema, raw);
  EXPECT_EQ(v.exit_code, 0) << v.report;
}

TEST_F(CApiTools, NoneGivesTheTextOfTheSameChatWithoutTools) {
  const edgellm_message msg{sizeof(edgellm_message), "user", "Tell me a story.", nullptr, 0, nullptr};
  const edgellm_sampling s = greedy();
  edgellm_request_params with = chat(&msg, &s);
  with.max_tokens = 40;
  edgellm_request_params without = with;
  with.tools = kTwoTools;
  with.tool_choice = EDGELLM_TOOL_CHOICE_NONE;
  const std::vector<Output> outs = run_all({with, without});
  ASSERT_NE(outs[1].reason, EDGELLM_FINISH_ERROR) << outs[1].error;
  EXPECT_NE(outs[0].reason, EDGELLM_FINISH_TOOL_CALLS);
  EXPECT_EQ(outs[0].reason, outs[1].reason);
  EXPECT_TRUE(outs[0].calls.empty());
  EXPECT_FALSE(outs[0].text.empty());
  EXPECT_EQ(outs[0].text, outs[1].text) << "NONE renders no tools and constrains nothing";
  EXPECT_EQ(outs[0].content, outs[0].text);
  EXPECT_EQ(outs[1].content, outs[1].text);
}

TEST_F(CApiTools, ACallCutShortIsNoCall) {
  const edgellm_message msg{sizeof(edgellm_message), "user", "What is the weather in Oslo?", nullptr, 0, nullptr};
  const edgellm_sampling s = greedy();
  edgellm_request_params r = chat(&msg, &s);
  r.tools = kTwoTools;
  r.tool_choice = EDGELLM_TOOL_CHOICE_REQUIRED;
  r.max_tokens = 6;
  const Output o = run_all({r})[0];
  EXPECT_EQ(o.reason, EDGELLM_FINISH_LENGTH) << o.error;
  EXPECT_TRUE(o.calls.empty()) << o.text;
  EXPECT_EQ(o.text.substr(0, 1), "{");
  EXPECT_EQ(o.content, o.text) << "an unparsed call stays content";
}

TEST_F(CApiTools, BadToolsChoicesAndInputsAreInvalidArgument) {
  const edgellm_message msg{sizeof(edgellm_message), "user", "Hi", nullptr, 0, nullptr};
  const char* one = R"([{"type": "function", "function": {"name": "f"}}])";
  struct Case {
    const char* what;
    void (*set)(edgellm_request_params&, const char* one);
    const char* expect;  // in edgellm_last_error()
  };
  const Case cases[] = {
      {"empty", [](edgellm_request_params& r, const char*) { r.tools = ""; }, "tools is empty"},
      {"not JSON", [](edgellm_request_params& r, const char*) { r.tools = "[{"; }, "tools: not JSON"},
      {"not an array", [](edgellm_request_params& r, const char*) { r.tools = "{}"; }, "tools: must be an array"},
      {"bad name", [](edgellm_request_params& r, const char*) { r.tools = R"([{"function": {"name": "a b"}}])"; },
       "may only hold"},
      {"twice", [](edgellm_request_params& r, const char*) {
         r.tools = R"([{"function": {"name": "f"}}, {"function": {"name": "f"}}])";
       }, "used twice"},
      {"unsupported schema", [](edgellm_request_params& r, const char*) {
         r.tools = R"([{"function": {"name": "f", "parameters": {"type": "object", "properties": {"u": {"type": "string", "format": "uri"}}}}}])";
       }, "format 'uri'"},
      {"unknown function", [](edgellm_request_params& r, const char* t) {
         r.tools = t;
         r.tool_choice = EDGELLM_TOOL_CHOICE_FUNCTION;
         r.tool_choice_name = "g";
       }, "not among the tools"},
      {"function without a name", [](edgellm_request_params& r, const char* t) {
         r.tools = t;
         r.tool_choice = EDGELLM_TOOL_CHOICE_FUNCTION;
       }, "tool_choice_name"},
      {"a name without FUNCTION", [](edgellm_request_params& r, const char* t) {
         r.tools = t;
         r.tool_choice_name = "f";
       }, "tool_choice_name"},
      {"required without tools", [](edgellm_request_params& r, const char*) { r.tool_choice = EDGELLM_TOOL_CHOICE_REQUIRED; },
       "no tools"},
      {"unknown choice", [](edgellm_request_params& r, const char* t) {
         r.tools = t;
         r.tool_choice = static_cast<edgellm_tool_choice>(7);
       }, "tool_choice 7 is unknown"},
      {"a prompt", [](edgellm_request_params& r, const char* t) {
         r.messages = nullptr;
         r.n_messages = 0;
         r.prompt = "Once upon a time";
         r.tools = t;
       }, "chat feature"},
      {"with a grammar", [](edgellm_request_params& r, const char* t) {
         r.tools = t;
         r.grammar = "root ::= \"x\"";
       }, "only one output constraint"},
  };
  int finished = 0;
  for (const Case& c : cases) {
    edgellm_request_params r = chat(&msg, nullptr);
    r.on_finish = [](const edgellm_result*, void* u) { ++*static_cast<int*>(u); };
    r.user_data = &finished;
    c.set(r, one);
    edgellm_request_id id = 42;
    EXPECT_EQ(edgellm_submit(rt_, &r, &id), EDGELLM_ERR_INVALID_ARGUMENT) << c.what;
    EXPECT_EQ(id, 0u) << c.what;
    EXPECT_NE(std::string(edgellm_last_error()).find(c.expect), std::string::npos)
        << c.what << ": " << edgellm_last_error();
  }
  EXPECT_EQ(finished, 0) << "a refused request has no callback";
}

TEST_F(CApiTools, OlderStructsAndNames) {
  // A program built before the tool fields: its struct ends at json_object, and the tools it
  // cannot have set stay off (a chat request generates text, no calls).
  const edgellm_message msg{sizeof(edgellm_message), "user", "Hi", nullptr, 0, nullptr};
  const edgellm_sampling s = greedy();
  edgellm_request_params old = chat(&msg, &s);
  old.max_tokens = 4;
  old.struct_size = offsetof(edgellm_request_params, tools);
  old.tools = "[{";  // beyond its struct_size: never read
  const Output o = run_all({old})[0];
  EXPECT_NE(o.reason, EDGELLM_FINISH_ERROR) << o.error;
  EXPECT_TRUE(o.calls.empty());
  EXPECT_EQ(o.content, o.text);

  const edgellm_request_params d = edgellm_request_default_params();
  EXPECT_EQ(d.tools, nullptr);
  EXPECT_EQ(d.tool_choice, EDGELLM_TOOL_CHOICE_AUTO);
  EXPECT_EQ(d.tool_choice_name, nullptr);
  EXPECT_TRUE(d.parallel_tool_calls);
  EXPECT_STREQ(edgellm_finish_reason_name(EDGELLM_FINISH_TOOL_CALLS), "tool_calls");
}

// The wrapper's request through a runtime of its own, waited for (a deadline, not a sleep).
Output run_cpp(edgellm::cpp::Runtime& rt, const edgellm::cpp::Request& req) {
  Outcome o;
  rt.submit(req, {}, [&o](const edgellm_result& res) {
    std::lock_guard<std::mutex> lock(o.m);
    o.out.text.assign(res.text, res.text_len);
    o.out.reason = res.finish_reason;
    o.out.error = res.error_message != nullptr ? res.error_message : "";
    o.out.content = std::string(edgellm::cpp::content(res));
    for (const edgellm::cpp::ToolCall& c : edgellm::cpp::tool_calls(res)) o.out.calls.push_back({c.id, c.name, c.arguments});
    o.out.done = true;
    o.cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(o.m);
  EXPECT_TRUE(o.cv.wait_for(lock, 120s, [&] { return o.out.done; })) << "no on_finish";
  return o.out;
}

TEST_F(CApiTools, CppWrapperGivesWhatTheSameCRequestGives) {
  edgellm_runtime_params p = edgellm_runtime_default_params();
  p.n_ctx = 2048;
  p.n_parallel = 1;
  edgellm::cpp::Runtime rt = edgellm::cpp::Runtime::open(edgellm::test::shared_model("stories260K.gguf"), p);
  const edgellm::cpp::Request defaults;
  EXPECT_FALSE(defaults.tools.has_value());
  EXPECT_EQ(defaults.tool_choice, EDGELLM_TOOL_CHOICE_AUTO);
  EXPECT_FALSE(defaults.tool_choice_name.has_value());
  EXPECT_TRUE(defaults.parallel_tool_calls);

  const edgellm_message weather{sizeof(edgellm_message), "user", "What is the weather in Oslo?", nullptr, 0, nullptr};
  const edgellm_message wake{sizeof(edgellm_message), "user", "Wake me up.", nullptr, 0, nullptr};
  const edgellm_message story{sizeof(edgellm_message), "user", "Tell me a story.", nullptr, 0, nullptr};
  const edgellm_sampling s0 = greedy(), s3 = hot(3);
  // Four shapes, each as a C request (the reference) and as the wrapper's.
  std::vector<edgellm_request_params> c_reqs;
  std::vector<edgellm::cpp::Request> cpp_reqs;
  {
    edgellm_request_params r = chat(&weather, &s3);  // REQUIRED, one call, sampled
    r.tools = kTwoTools;
    r.tool_choice = EDGELLM_TOOL_CHOICE_REQUIRED;
    r.parallel_tool_calls = false;
    c_reqs.push_back(r);
    cpp_reqs.push_back(edgellm::cpp::Request::from_messages({{"user", weather.content}})
                           .with_sampling(s3)
                           .with_max_tokens(300)
                           .with_deadline_ms(0)
                           .with_tools(kTwoTools, EDGELLM_TOOL_CHOICE_REQUIRED)
                           .with_parallel_tool_calls(false));
  }
  {
    edgellm_request_params r = chat(&wake, &s0);  // a named function
    r.tools = kTwoTools;
    r.tool_choice = EDGELLM_TOOL_CHOICE_FUNCTION;
    r.tool_choice_name = "set_alarm";
    c_reqs.push_back(r);
    cpp_reqs.push_back(edgellm::cpp::Request::from_messages({{"user", wake.content}})
                           .greedy()
                           .with_max_tokens(300)
                           .with_deadline_ms(0)
                           .with_tools(kTwoTools)
                           .with_tool_choice_function("set_alarm"));
  }
  {
    edgellm_request_params r = chat(&weather, &s3);  // REQUIRED, parallel calls allowed
    r.tools = kTwoTools;
    r.tool_choice = EDGELLM_TOOL_CHOICE_REQUIRED;
    c_reqs.push_back(r);
    cpp_reqs.push_back(edgellm::cpp::Request::from_messages({{"user", weather.content}})
                           .with_sampling(s3)
                           .with_max_tokens(300)
                           .with_deadline_ms(0)
                           .with_tools(kTwoTools, EDGELLM_TOOL_CHOICE_REQUIRED));
  }
  {
    edgellm_request_params r = chat(&story, &s0);  // NONE: text
    r.max_tokens = 40;
    r.tools = kTwoTools;
    r.tool_choice = EDGELLM_TOOL_CHOICE_NONE;
    c_reqs.push_back(r);
    cpp_reqs.push_back(edgellm::cpp::Request::from_messages({{"user", story.content}})
                           .greedy()
                           .with_max_tokens(40)
                           .with_deadline_ms(0)
                           .with_tools(kTwoTools, EDGELLM_TOOL_CHOICE_NONE));
  }
  const std::vector<Output> ref = run_all(c_reqs);
  for (size_t i = 0; i < cpp_reqs.size(); ++i) {
    SCOPED_TRACE(i);
    const Output o = run_cpp(rt, cpp_reqs[i]);
    EXPECT_EQ(o.reason, ref[i].reason) << o.error << " " << o.text;
    EXPECT_EQ(o.text, ref[i].text);
    EXPECT_EQ(o.content, ref[i].content);
    ASSERT_EQ(o.calls.size(), ref[i].calls.size()) << o.text;
    for (size_t k = 0; k < o.calls.size(); ++k) {
      EXPECT_EQ(o.calls[k].name, ref[i].calls[k].name);
      EXPECT_EQ(o.calls[k].arguments, ref[i].calls[k].arguments);
      EXPECT_EQ(o.calls[k].id.rfind("call_", 0), 0u) << o.calls[k].id;
    }
  }
  EXPECT_EQ(ref[0].reason, EDGELLM_FINISH_TOOL_CALLS) << ref[0].text;
  EXPECT_EQ(ref[0].calls.size(), 1u) << ref[0].text;
  ASSERT_EQ(ref[1].calls.size(), 1u) << ref[1].text;
  EXPECT_EQ(ref[1].calls[0].name, "set_alarm");
  EXPECT_NE(ref[3].reason, EDGELLM_FINISH_TOOL_CALLS);
  EXPECT_EQ(ref[3].content, ref[3].text);
  // A refused request throws the C ABI's status and wording.
  try {
    rt.submit(edgellm::cpp::Request::from_messages({{"user", "Hi"}})
                  .with_tools(R"([{"type": "function", "function": {"name": "f"}}])")
                  .with_tool_choice_function("g"));
    ADD_FAILURE() << "an unknown function was accepted";
  } catch (const edgellm::cpp::Error& e) {
    EXPECT_EQ(e.status(), EDGELLM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("not among the tools"), std::string::npos) << e.what();
  }
}

// ---- streamed calls: the token events' content and call deltas

struct Stream {
  std::mutex m;
  std::string text, content;
  std::vector<Call> calls;  // rebuilt from the deltas
  int32_t next_index = 0;
  bool ordered = true;  // indices 0, 1, 2, ... and every first delta carries id and name
  uint32_t delta_struct_size = 0;
};

bool on_stream(const edgellm_token_event* e, void* user) {
  auto* o = static_cast<Outcome*>(user);
  auto* s = reinterpret_cast<Stream*>(reinterpret_cast<unsigned char*>(o) + sizeof(Outcome));
  std::lock_guard<std::mutex> lock(s->m);
  s->ordered = s->ordered && e->index == s->next_index;
  s->next_index = e->index + 1;
  s->text.append(e->text, e->text_len);
  s->content.append(e->content, e->content_len);
  const auto* base = reinterpret_cast<const unsigned char*>(e->tool_call_deltas);
  for (size_t i = 0; i < e->n_tool_call_deltas; ++i) {
    const auto* d = reinterpret_cast<const edgellm_tool_call_delta*>(base + i * e->tool_call_deltas[0].struct_size);
    s->delta_struct_size = d->struct_size;
    if (static_cast<size_t>(d->index) == s->calls.size()) {
      s->ordered = s->ordered && *d->id != '\0' && *d->name != '\0';
      s->calls.push_back({d->id, d->name, ""});
    }
    s->ordered = s->ordered && static_cast<size_t>(d->index) < s->calls.size();
    if (static_cast<size_t>(d->index) < s->calls.size()) s->calls[d->index].arguments += d->arguments;
  }
  return true;
}

// An Outcome with its Stream right after it (on_stream finds it there).
struct StreamedOutcome {
  Outcome outcome;
  Stream stream;
};
static_assert(offsetof(StreamedOutcome, stream) == sizeof(Outcome), "on_stream finds the Stream after the Outcome");

TEST_F(CApiTools, StreamedEventsCarryTheCallDeltasOfTheResult) {
  const edgellm_message weather{sizeof(edgellm_message), "user", "What is the weather in Oslo?", nullptr, 0, nullptr};
  const edgellm_message wake{sizeof(edgellm_message), "user", "Wake me up.", nullptr, 0, nullptr};
  const edgellm_message story{sizeof(edgellm_message), "user", "Tell me a story.", nullptr, 0, nullptr};
  const edgellm_sampling s0 = greedy(), s2 = hot(2);
  std::vector<edgellm_request_params> reqs;
  {
    // REQUIRED, one call (greedy, stories260K repeats parallel calls until max_tokens)
    edgellm_request_params r = chat(&weather, &s0);
    r.tools = kTwoTools;
    r.tool_choice = EDGELLM_TOOL_CHOICE_REQUIRED;
    r.parallel_tool_calls = false;
    reqs.push_back(r);
  }
  {
    edgellm_request_params r = chat(&wake, &s2);  // a named function, sampled
    r.tools = kTwoTools;
    r.tool_choice = EDGELLM_TOOL_CHOICE_FUNCTION;
    r.tool_choice_name = "set_alarm";
    reqs.push_back(r);
  }
  {
    edgellm_request_params r = chat(&story, &s0);  // no tools: content is the text, no deltas
    r.max_tokens = 24;
    reqs.push_back(r);
  }
  // The same requests streamed: each parsed by its own stream parser, the references above by
  // the whole-reply parse of on_finish.
  const std::vector<Output> whole = run_all(reqs);
  std::deque<StreamedOutcome> streamed(reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) {
    edgellm_request_params r = reqs[i];
    r.on_token = on_stream;
    r.on_finish = on_finish;
    r.user_data = &streamed[i].outcome;
    edgellm_request_id id = 0;
    ASSERT_EQ(edgellm_submit(rt_, &r, &id), EDGELLM_OK) << edgellm_last_error();
  }
  for (size_t i = 0; i < reqs.size(); ++i) {
    SCOPED_TRACE(i);
    Outcome& o = streamed[i].outcome;
    std::unique_lock<std::mutex> lock(o.m);
    ASSERT_TRUE(o.cv.wait_for(lock, 120s, [&] { return o.out.done; })) << "no on_finish";
    const Output& res = o.out;
    const Stream& st = streamed[i].stream;
    EXPECT_TRUE(st.ordered);
    EXPECT_EQ(st.text, res.text) << "the events carry the whole reply";
    EXPECT_EQ(st.content, res.content) << "and its content outside the calls";
    ASSERT_EQ(st.calls.size(), res.calls.size()) << res.text;
    for (size_t k = 0; k < st.calls.size(); ++k) {
      EXPECT_EQ(st.calls[k].id, res.calls[k].id) << "the result's calls have the streamed ids";
      EXPECT_EQ(st.calls[k].name, res.calls[k].name);
      EXPECT_EQ(st.calls[k].arguments, res.calls[k].arguments);
      // The unstreamed run of the same request: the same reply, the same calls.
      EXPECT_EQ(res.calls[k].name, whole[i].calls.at(k).name);
      EXPECT_EQ(res.calls[k].arguments, whole[i].calls.at(k).arguments);
    }
    EXPECT_EQ(res.text, whole[i].text);
    EXPECT_EQ(res.reason, whole[i].reason);
    if (i < 2) {
      EXPECT_EQ(res.reason, EDGELLM_FINISH_TOOL_CALLS) << res.text;
      EXPECT_GE(st.calls.size(), 1u);
      EXPECT_EQ(st.delta_struct_size, sizeof(edgellm_tool_call_delta));
    } else {
      EXPECT_TRUE(st.calls.empty());
      EXPECT_EQ(st.content, st.text);
    }
  }
}

// ---- follow-up turns: an assistant turn with its calls, then the tools' results

// The golden fields of tests/chat/testdata/tool-cases.jsonl (jinja2 with transformers'
// environment) for Qwen2.5's template, read once by python3's json module: key
// "<conversation>/<0|1 tools>/<rendered|tools>" -> the render, or the tools as JSON text.
const std::map<std::string, std::string>& goldens() {
  static const std::map<std::string, std::string> all = [] {
    const std::string script = edgellm::test::temp_dir() + "/golden-tool-cases.py";
    std::ofstream(script)
        << "import json, sys\n"
           "for line in open('tests/chat/testdata/tool-cases.jsonl', encoding='utf-8'):\n"
           "    c = json.loads(line)\n"
           "    if c['template'] != 'qwen2.5' or 'rendered' not in c: continue\n"
           "    key = c['conversation'] + '/' + ('0' if c['tools'] is None else '1')\n"
           "    for k, v in ((key + '/rendered', c['rendered']), (key + '/tools', json.dumps(c['tools']))):\n"
           "        sys.stdout.buffer.write(k.encode() + b'\\0' + v.encode() + b'\\0')\n";
    FILE* p = ::popen(("python3 " + script).c_str(), "r");
    std::string out;
    char buf[4096];
    size_t n = 0;
    while (p != nullptr && (n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    if (p != nullptr) ::pclose(p);
    std::map<std::string, std::string> m;
    for (size_t pos = 0; pos < out.size();) {
      const size_t k = out.find('\0', pos);
      const size_t v = k == std::string::npos ? k : out.find('\0', k + 1);
      if (v == std::string::npos) break;
      m[out.substr(pos, k - pos)] = out.substr(k + 1, v - k - 1);
      pos = v + 1;
    }
    return m;
  }();
  return all;
}

std::string golden(const std::string& conversation, bool with_tools, const std::string& field) {
  const auto it = goldens().find(conversation + "/" + (with_tools ? "1" : "0") + "/" + field);
  return it == goldens().end() ? std::string() : it->second;
}

edgellm_message turn(const char* role, const char* content, const edgellm_tool_call* calls = nullptr,
                     size_t n_calls = 0, const char* call_id = nullptr) {
  return edgellm_message{sizeof(edgellm_message), role, content, calls, n_calls, call_id};
}

// tool-cases.jsonl's "one-call" and "parallel-calls" conversations as C messages.
struct Conversation {
  std::vector<edgellm_tool_call> calls;
  std::vector<edgellm_message> messages;
};

Conversation one_call() {
  Conversation c;
  c.calls = {{sizeof(edgellm_tool_call), "call_a1", "get_weather", R"({"city": "Paris", "unit": "celsius"})"}};
  c.messages = {turn("user", "What is the weather in Paris?"), turn("assistant", nullptr, c.calls.data(), 1),
                turn("tool", R"({"temp": 18, "sky": "clear"})", nullptr, 0, "call_a1")};
  return c;
}

Conversation parallel_calls() {
  Conversation c;
  c.calls = {{sizeof(edgellm_tool_call), "call_a1", "get_weather", R"({"city": "Paris", "unit": "celsius"})"},
             {sizeof(edgellm_tool_call), "call_b2", "add_event",
              R"({"title": "Dentist", "day": "2025-03-04", "minutes": 30})"}};
  c.messages = {turn("user", "Weather in Paris, and book the dentist on 4 March."),
                turn("assistant", "Let me do both.", c.calls.data(), 2), turn("tool", "18 C", nullptr, 0, "call_a1"),
                turn("tool", "booked", nullptr, 0, "call_b2")};
  return c;
}

std::string rendered(edgellm_runtime* rt, const std::vector<edgellm_message>& m) {
  size_t n = 0;
  EXPECT_EQ(edgellm_apply_template(rt, m.data(), m.size(), true, nullptr, 0, &n), EDGELLM_ERR_BUFFER_TOO_SMALL)
      << edgellm_last_error();
  std::string text(n + 1, '\0');
  EXPECT_EQ(edgellm_apply_template(rt, m.data(), m.size(), true, text.data(), text.size(), &n), EDGELLM_OK)
      << edgellm_last_error();
  text.resize(n);
  return text;
}

size_t token_count(edgellm_runtime* rt, const std::string& text) {
  size_t n = 0;
  EXPECT_EQ(edgellm_tokenize(rt, text.c_str(), true, true, nullptr, 0, &n), EDGELLM_ERR_BUFFER_TOO_SMALL);
  return n;
}

TEST_F(CApiTools, FollowUpTurnsRenderAsTransformersAndRunThoseTokens) {
  // stories260K with Qwen2.5's own template (the file transformers rendered the goldens with).
  edgellm_runtime_params p = edgellm_runtime_default_params();
  p.n_ctx = 2048;
  p.n_parallel = 2;
  p.chat_template = "tests/chat/templates/qwen2.5-instruct.jinja";
  edgellm_runtime* rt = nullptr;
  ASSERT_EQ(edgellm_runtime_create(edgellm::test::shared_model("stories260K.gguf").c_str(), &p, &rt), EDGELLM_OK)
      << edgellm_last_error();
  std::swap(rt, rt_);  // run_all submits to rt_
  edgellm::cpp::Runtime cpp_rt = edgellm::cpp::Runtime::open(edgellm::test::shared_model("stories260K.gguf"), p);
  const edgellm_sampling s0 = greedy();
  for (const bool parallel : {false, true}) {
    SCOPED_TRACE(parallel ? "parallel-calls" : "one-call");
    const Conversation conv = parallel ? parallel_calls() : one_call();
    const std::string name = parallel ? "parallel-calls" : "one-call";
    const std::string want = golden(name, false, "rendered");
    ASSERT_FALSE(want.empty()) << "no golden render";
    EXPECT_EQ(rendered(rt_, conv.messages), want);

    // The follow-up runs on exactly the golden text's tokens: as many prompt tokens, and the
    // greedy reply of the golden text sent as a raw prompt (control tokens parsed).
    edgellm_request_params follow = chat(conv.messages.data(), &s0);
    follow.n_messages = conv.messages.size();
    follow.max_tokens = 12;
    edgellm_request_params raw = edgellm_request_default_params();
    raw.prompt = want.c_str();
    raw.parse_special = true;
    raw.sampling = &s0;
    raw.max_tokens = 12;
    raw.deadline_ms = 0;
    // With the tools too (AUTO): the template puts them in the system prompt, as transformers'.
    const std::string tools = golden(name, true, "tools");
    const std::string want_tools = golden(name, true, "rendered");
    edgellm_request_params with_tools = follow;
    with_tools.tools = tools.c_str();
    with_tools.max_tokens = 1;  // its prompt is what is compared
    const std::vector<Output> out = run_all({follow, raw, with_tools});
    EXPECT_EQ(out[0].reason, EDGELLM_FINISH_LENGTH) << out[0].error;
    EXPECT_EQ(static_cast<size_t>(out[0].prompt_tokens), token_count(rt_, want));
    EXPECT_EQ(out[0].text, out[1].text);
    EXPECT_EQ(out[0].prompt_tokens, out[1].prompt_tokens);
    ASSERT_FALSE(want_tools.empty());
    EXPECT_NE(out[2].reason, EDGELLM_FINISH_ERROR) << out[2].error;
    EXPECT_EQ(static_cast<size_t>(out[2].prompt_tokens), token_count(rt_, want_tools));

    // The wrapper's Message: the result's calls passed back as they are.
    std::vector<edgellm::cpp::ToolCall> made;
    for (const edgellm_tool_call& c : conv.calls) made.push_back({c.id, c.name, c.arguments});
    std::vector<edgellm::cpp::Message> chat_turns = {
        {"user", conv.messages[0].content},
        edgellm::cpp::Message::calls(made, conv.messages[1].content != nullptr ? conv.messages[1].content : "")};
    for (size_t i = 2; i < conv.messages.size(); ++i) {
      chat_turns.push_back(edgellm::cpp::Message::tool_result(conv.messages[i].tool_call_id, conv.messages[i].content));
    }
    EXPECT_EQ(cpp_rt.apply_template(chat_turns), want);
    const Output o = run_cpp(cpp_rt, edgellm::cpp::Request::from_messages(chat_turns).greedy().with_max_tokens(12));
    EXPECT_EQ(o.text, out[0].text);
  }
  std::swap(rt, rt_);
  edgellm_runtime_destroy(rt);
}

TEST_F(CApiTools, BadFollowUpTurnsAreInvalidArgumentNamingTheMessage) {
  const edgellm_tool_call call{sizeof(edgellm_tool_call), "call_1", "get_weather", R"({"city": "Oslo"})"};
  const edgellm_tool_call not_json{sizeof(edgellm_tool_call), "call_1", "get_weather", "{city: Oslo"};
  const edgellm_tool_call array{sizeof(edgellm_tool_call), "call_1", "get_weather", "[1]"};
  const edgellm_tool_call no_id{sizeof(edgellm_tool_call), nullptr, "get_weather", "{}"};
  const edgellm_tool_call empty_id{sizeof(edgellm_tool_call), "", "get_weather", "{}"};
  const edgellm_tool_call no_name{sizeof(edgellm_tool_call), "call_1", nullptr, "{}"};
  const edgellm_tool_call no_args{sizeof(edgellm_tool_call), "call_1", "get_weather", nullptr};
  const edgellm_tool_call bad_utf8{sizeof(edgellm_tool_call), "call_1", "get_weather", "{\"a\": \"\xC3\"}"};
  const edgellm_tool_call zero_size{0, "call_1", "get_weather", "{}"};
  const edgellm_message user = turn("user", "Weather?");
  const edgellm_message answer = turn("tool", "sunny", nullptr, 0, "call_1");
  struct Case {
    const char* what;
    std::vector<edgellm_message> messages;
    const char* expect;  // edgellm_last_error(), exactly
  };
  const Case cases[] = {
      {"no tool_call_id",
       {user, turn("assistant", "", &call, 1), turn("tool", "sunny")},
       "messages[2]: a tool turn needs tool_call_id (the id of the call whose result it carries)"},
      {"an id no call has",
       {user, turn("assistant", "", &call, 1), turn("tool", "sunny", nullptr, 0, "call_2")},
       "messages[2].tool_call_id: \"call_2\" is the id of no call an earlier assistant turn made"},
      {"a result before its call",
       {user, answer, turn("assistant", "", &call, 1), turn("user", "?")},
       "messages[1].tool_call_id: \"call_1\" is the id of no call an earlier assistant turn made"},
      {"arguments not JSON",
       {user, turn("assistant", "", &not_json, 1), answer},
       "messages[1].tool_calls[0].function.arguments: not a JSON object (expected the arguments object as JSON text)"},
      {"arguments not an object",
       {user, turn("assistant", "", &array, 1), answer},
       "messages[1].tool_calls[0].function.arguments: not a JSON object (expected the arguments object as JSON text)"},
      {"arguments not UTF-8",
       {user, turn("assistant", "", &bad_utf8, 1), answer},
       "messages[1].tool_calls[0].arguments is not valid UTF-8"},
      {"calls on a user turn",
       {turn("user", "Weather?", &call, 1), answer},
       "messages[0]: only an assistant turn carries tool_calls"},
      {"an id on a user turn",
       {user, turn("assistant", "", &call, 1), turn("user", "x", nullptr, 0, "call_1")},
       "messages[2]: only a tool turn carries tool_call_id"},
      {"NULL calls",
       {user, turn("assistant", "", nullptr, 2), answer},
       "messages[1].tool_calls is NULL but n_tool_calls > 0"},
      {"calls without a count",
       {user, turn("assistant", "", &call, 0), answer},
       "messages[1].tool_calls is set but n_tool_calls is 0"},
      {"NULL id", {user, turn("assistant", "", &no_id, 1), answer}, "messages[1].tool_calls[0].id is NULL"},
      {"empty id",
       {user, turn("assistant", "", &empty_id, 1), answer},
       "messages[1].tool_calls[0].id: expected a non-empty string (the id the tool turn answers)"},
      {"NULL name", {user, turn("assistant", "", &no_name, 1), answer}, "messages[1].tool_calls[0].name is NULL"},
      {"NULL arguments",
       {user, turn("assistant", "", &no_args, 1), answer},
       "messages[1].tool_calls[0].arguments is NULL"},
      {"struct_size 0",
       {user, turn("assistant", "", &zero_size, 1), answer},
       "messages[1].tool_calls[0].struct_size is 0 (set it to sizeof(edgellm_tool_call))"},
      {"NULL content without calls",
       {user, turn("assistant", nullptr), turn("user", "?")},
       "messages[1].content is NULL"},
  };
  int finished = 0;
  for (const Case& c : cases) {
    edgellm_request_params r = chat(c.messages.data(), nullptr);
    r.n_messages = c.messages.size();
    r.on_finish = [](const edgellm_result*, void* u) { ++*static_cast<int*>(u); };
    r.user_data = &finished;
    edgellm_request_id id = 42;
    EXPECT_EQ(edgellm_submit(rt_, &r, &id), EDGELLM_ERR_INVALID_ARGUMENT) << c.what;
    EXPECT_EQ(id, 0u) << c.what;
    EXPECT_EQ(std::string(edgellm_last_error()), c.expect) << c.what;
    // The renderer alone refuses them in the same words.
    char buf[64];
    size_t n = 0;
    EXPECT_EQ(edgellm_apply_template(rt_, c.messages.data(), c.messages.size(), true, buf, sizeof buf, &n),
              EDGELLM_ERR_INVALID_ARGUMENT)
        << c.what;
    EXPECT_EQ(std::string(edgellm_last_error()), c.expect) << c.what;
  }
  EXPECT_EQ(finished, 0) << "a refused request has no callback";
  // The wrapper throws the same.
  try {
    edgellm_runtime_params p = edgellm_runtime_default_params();
    p.n_ctx = 256;
    edgellm::cpp::Runtime rt = edgellm::cpp::Runtime::open(edgellm::test::shared_model("stories260K.gguf"), p);
    rt.submit(edgellm::cpp::Request::from_messages(
        {{"user", "Weather?"}, edgellm::cpp::Message::tool_result("call_9", "sunny")}));
    ADD_FAILURE() << "a result of no call was accepted";
  } catch (const edgellm::cpp::Error& e) {
    EXPECT_EQ(e.status(), EDGELLM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("messages[1].tool_call_id: \"call_9\" is the id of no call"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
