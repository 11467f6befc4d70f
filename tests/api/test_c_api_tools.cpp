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
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
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
  const edgellm_message weather{sizeof(edgellm_message), "user", "What is the weather in Oslo?"};
  const edgellm_message wake{sizeof(edgellm_message), "user", "Wake me up."};
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
  const edgellm_message msg{sizeof(edgellm_message), "user", "Tell me a story."};
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
  const edgellm_message msg{sizeof(edgellm_message), "user", "What is the weather in Oslo?"};
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
  const edgellm_message msg{sizeof(edgellm_message), "user", "Hi"};
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
  const edgellm_message msg{sizeof(edgellm_message), "user", "Hi"};
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

  const edgellm_message weather{sizeof(edgellm_message), "user", "What is the weather in Oslo?"};
  const edgellm_message wake{sizeof(edgellm_message), "user", "Wake me up."};
  const edgellm_message story{sizeof(edgellm_message), "user", "Tell me a story."};
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

}  // namespace
