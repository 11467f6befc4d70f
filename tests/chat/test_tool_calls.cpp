// Tool calling, library half: format detection, tool_choice / tools checks, OpenAI messages
// normalised for the templates, the incremental parser (every split of the text gives the same
// result), the call grammar (valid calls pass, schema violations do not), and constrained
// generation whose calls validate against their tools' schemas.
#include <gtest/gtest.h>

#include <random>
#include <sstream>
#include <string>

#include "chat/chat_template.h"
#include "chat/tool_calls.h"
#include "core/error.h"
#include "core/json.h"
#include "engine/context.h"
#include "engine/sampler.h"
#include "generation/generate.h"
#include "grammar/compiled_grammar.h"
#include "grammar/gbnf_parser.h"
#include "grammar/grammar_compiler.h"
#include "grammar/grammar_matcher.h"
#include "model/model.h"
#include "support/test_env.h"
#include "tokenizer/tokenizer.h"

namespace edgellm {
namespace {

const char* const kTools = R"([
  {"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
      "unit": {"enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}},
  {"type": "function", "function": {"name": "add_event",
    "parameters": {"type": "object", "properties": {"title": {"type": "string", "maxLength": 16},
      "minutes": {"type": "integer", "minimum": 5, "maximum": 480}}, "required": ["title", "minutes"]}}},
  {"type": "function", "function": {"name": "ping"}}])";

std::string read_template(const std::string& file) { return test::read_file("tests/chat/templates/" + file); }

TEST(ToolCalls, FormatDetection) {
  EXPECT_EQ(detect_tool_call_format(read_template("qwen2.5-instruct.jinja")), ToolCallFormat::kHermes);
  const Json qwen3 = Json::parse(test::read_file(test::shared_testdata("tokenizers/qwen3/tokenizer_config.json")));
  EXPECT_EQ(detect_tool_call_format(qwen3.at("chat_template").as_string()), ToolCallFormat::kHermes);
  EXPECT_EQ(detect_tool_call_format(read_template("llama-3.1-instruct.jinja")), ToolCallFormat::kLlama3Json);
  EXPECT_EQ(detect_tool_call_format(read_template("llama-3.2-instruct.jinja")), ToolCallFormat::kLlama3Json);
  EXPECT_EQ(detect_tool_call_format(*find_builtin_source("chatml")), ToolCallFormat::kGeneric);
  EXPECT_EQ(detect_tool_call_format(*find_builtin_source("llama3")), ToolCallFormat::kGeneric);  // no tool support
}

TEST(ToolCalls, ChoiceAndToolChecks) {
  EXPECT_EQ(parse_tool_choice(Json()).kind, ToolChoiceKind::kAuto);
  EXPECT_EQ(parse_tool_choice(Json("none")).kind, ToolChoiceKind::kNone);
  EXPECT_EQ(parse_tool_choice(Json("required")).kind, ToolChoiceKind::kRequired);
  const ToolChoice named = parse_tool_choice(Json::parse(R"({"type": "function", "function": {"name": "ping"}})"));
  EXPECT_EQ(named.kind, ToolChoiceKind::kFunction);
  EXPECT_EQ(named.function, "ping");
  EXPECT_THROW(parse_tool_choice(Json("sometimes")), Error);
  EXPECT_THROW(parse_tool_choice(Json::parse(R"({"type": "function"})")), Error);
  EXPECT_NO_THROW(check_tools(Json::parse(kTools)));
  const auto error_of = [](const char* tools) {
    try {
      check_tools(Json::parse(tools));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error_of(R"([{"type": "function", "function": {"name": "a"}}, {"type": "function", "function": {"name": "a"}}])")
                .find("used twice"), std::string::npos);
  EXPECT_NE(error_of(R"([{"type": "function", "function": {"name": "a b"}}])").find("may only hold"), std::string::npos);
  EXPECT_NE(error_of(R"([{"type": "retrieval"}])").find("only tools of type \"function\""), std::string::npos);
  EXPECT_NE(error_of(R"([{"type": "function", "function": {"name": "a", "parameters": []}}])").find("JSON Schema object"),
            std::string::npos);
  ToolCallGrammarOptions o;
  o.choice = named;
  o.choice.function = "nope";
  EXPECT_THROW(tool_call_gbnf(Json::parse(kTools), o), Error);
  const Json bad_schema = Json::parse(R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object",
      "properties": {"u": {"type": "string", "format": "uri"}}}}}])");
  try {
    tool_call_gbnf(bad_schema, {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tools[0] (f) parameters: json_schema: /properties/u: format 'uri'"), std::string::npos) << e.what();
  }
}

// OpenAI messages (arguments as a JSON string, content null) render like the Hugging Face shape.
TEST(ToolCalls, OpenAiMessagesRenderLikeTheHuggingFaceShape) {
  std::istringstream lines(test::read_file("tests/chat/testdata/tool-cases.jsonl"));
  std::string line;
  int checked = 0;
  while (std::getline(lines, line)) {
    const Json c = Json::parse(line);
    if (c.find("rendered") == nullptr || c.at("template").as_string() != "qwen2.5") continue;
    Json openai = c.at("messages");
    for (Json& m : openai.as_array()) {
      const Json* calls = m.find("tool_calls");
      if (calls == nullptr) continue;
      Json fixed = *calls;
      for (Json& call : fixed.as_array()) {
        Json fn = call.at("function");
        fn.set("arguments", fn.at("arguments").dump());
        call.set("function", fn);
      }
      m.set("tool_calls", fixed);
      if (m.at("content").as_string().empty()) m.set("content", nullptr);
    }
    ChatTemplate t = ChatTemplate::from_source(read_template("qwen2.5-instruct.jinja"), "", "<|im_end|>");
    Json extra = Json::object();
    if (!c.at("tools").is_null()) extra.set("tools", c.at("tools"));
    EXPECT_EQ(t.render(normalize_chat_messages(openai), c.at("add_generation_prompt").as_bool(), extra),
              c.at("rendered").as_string())
        << c.at("conversation").as_string();
    ++checked;
  }
  EXPECT_GE(checked, 8);
}

struct Parsed {
  std::string content;
  std::vector<ToolCall> calls;
  std::vector<ToolCall> from_deltas;  // the calls as a streaming client assembles them
};

Parsed parse_in_pieces(ToolCallFormat f, const std::string& text, const std::vector<size_t>& cuts) {
  ToolCallParser p(f, 42);
  Parsed r;
  const auto take = [&](const ToolCallEvents& e) {
    r.content += e.content;
    for (const ToolCallDelta& d : e.calls) {
      if (static_cast<size_t>(d.index) >= r.from_deltas.size()) r.from_deltas.resize(static_cast<size_t>(d.index) + 1);
      ToolCall& c = r.from_deltas[static_cast<size_t>(d.index)];
      if (!d.id.empty()) c.id = d.id;
      if (!d.name.empty()) c.name = d.name;
      c.arguments += d.arguments;
    }
  };
  size_t prev = 0;
  for (size_t cut : cuts) {
    take(p.push(std::string_view(text).substr(prev, cut - prev)));
    prev = cut;
  }
  take(p.push(std::string_view(text).substr(prev)));
  take(p.finish());
  EXPECT_EQ(r.content, p.content());
  r.calls = p.tool_calls();
  return r;
}

// Every way of splitting the text in two, and byte by byte, gives the same content and calls.
void expect_parse(ToolCallFormat f, const std::string& text, const std::string& content,
                  const std::vector<std::pair<std::string, std::string>>& calls) {
  std::vector<std::vector<size_t>> splits{{}};
  for (size_t i = 1; i < text.size(); ++i) splits.push_back({i});
  std::vector<size_t> every;
  for (size_t i = 1; i < text.size(); ++i) every.push_back(i);
  splits.push_back(every);
  for (const auto& cuts : splits) {
    const Parsed r = parse_in_pieces(f, text, cuts);
    const std::string where = cuts.size() == 1 ? "split at " + std::to_string(cuts[0]) : std::to_string(cuts.size()) + " cuts";
    ASSERT_EQ(r.content, content) << where;
    ASSERT_EQ(r.calls.size(), calls.size()) << where;
    ASSERT_EQ(r.from_deltas.size(), calls.size()) << where;
    for (size_t i = 0; i < calls.size(); ++i) {
      EXPECT_EQ(r.calls[i].name, calls[i].first) << where;
      EXPECT_EQ(Json::parse(r.calls[i].arguments), Json::parse(calls[i].second)) << where;
      EXPECT_EQ(r.from_deltas[i].name, r.calls[i].name);
      EXPECT_EQ(r.from_deltas[i].arguments, r.calls[i].arguments);
      EXPECT_EQ(r.from_deltas[i].id, r.calls[i].id);
      EXPECT_EQ(r.calls[i].id.size(), 29u);
    }
  }
}

TEST(ToolCalls, HermesParser) {
  expect_parse(ToolCallFormat::kHermes,
               "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"巴黎\", \"unit\": \"celsius\"}}\n</tool_call>\n"
               "<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>",
               "Let me check.\n", {{"get_weather", R"({"city": "巴黎", "unit": "celsius"})"}, {"ping", "{}"}});
  expect_parse(ToolCallFormat::kHermes, "No tools needed: a < b and <tool is fine.", "No tools needed: a < b and <tool is fine.", {});
  // Keys in the other order still parse (once the call is closed).
  expect_parse(ToolCallFormat::kHermes, "<tool_call>{\"arguments\": {\"n\": 1}, \"name\": \"ping\"}</tool_call>", "",
               {{"ping", R"({"n": 1})"}});
  // An unfinished call (a length limit) keeps the arguments streamed so far; broken JSON is text.
  const Parsed cut = parse_in_pieces(ToolCallFormat::kHermes, "<tool_call>\n{\"name\": \"ping\", \"arguments\": {\"a\": [1, 2", {});
  ASSERT_EQ(cut.calls.size(), 1u);
  EXPECT_EQ(cut.calls[0].arguments, "{\"a\": [1, 2");
  EXPECT_EQ(cut.content, "");
  expect_parse(ToolCallFormat::kHermes, "<tool_call>oops</tool_call> done", "<tool_call>oops</tool_call> done", {});
}

TEST(ToolCalls, Llama3AndGenericParsers) {
  expect_parse(ToolCallFormat::kLlama3Json, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}", "",
               {{"get_weather", R"({"city": "Oslo"})"}});
  expect_parse(ToolCallFormat::kLlama3Json,
               "{\"name\": \"ping\", \"parameters\": {}}; {\"name\": \"get_weather\", \"parameters\": {\"city\": \"x\"}}", "",
               {{"ping", "{}"}, {"get_weather", R"({"city": "x"})"}});
  expect_parse(ToolCallFormat::kLlama3Json, "The weather is {nice}.", "The weather is {nice}.", {});
  expect_parse(ToolCallFormat::kLlama3Json, "{\"answer\": 42}", "{\"answer\": 42}", {});
  expect_parse(ToolCallFormat::kGeneric, R"({"tool_calls": [{"name": "ping", "arguments": {"x": 1}}]})", "", {{"ping", R"({"x": 1})"}});
  expect_parse(ToolCallFormat::kGeneric, R"({"response": "Hi \"there\""})", "Hi \"there\"", {});
}

std::shared_ptr<const grammar::CompiledGrammar> compile_bytes(const std::string& gbnf) {
  std::vector<std::string> pieces;
  for (int b = 0; b < 256; ++b) pieces.push_back(std::string(1, static_cast<char>(b)));
  pieces.push_back("");
  return grammar::CompiledGrammar::compile(grammar::parse_gbnf(gbnf), grammar::TokenVocabulary::from_pieces(pieces, {256}));
}

bool accepts(const std::shared_ptr<const grammar::CompiledGrammar>& g, const std::string& text) {
  grammar::GrammarMatcher m(g);
  return m.accept_bytes(text) && m.can_end();
}

TEST(ToolCalls, GrammarPerFormatAndChoice) {
  const Json tools = Json::parse(kTools);
  ToolCallGrammarOptions o;
  // Hermes, auto: free text, or text then calls whose arguments follow the schemas.
  const auto auto_g = compile_bytes(tool_call_gbnf(tools, o));
  EXPECT_TRUE(accepts(auto_g, "Just text, with <b>tags</b> and <tool_cal."));
  EXPECT_TRUE(accepts(auto_g, ""));
  EXPECT_TRUE(accepts(auto_g, "Sure.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>"));
  EXPECT_TRUE(accepts(auto_g, "<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n"
                              "{\"name\": \"add_event\", \"arguments\": {\"title\": \"x\", \"minutes\": 30}}\n</tool_call>"));
  EXPECT_FALSE(accepts(auto_g, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"unit\": \"celsius\"}}\n</tool_call>"));  // city required
  EXPECT_FALSE(accepts(auto_g, "<tool_call>\n{\"name\": \"add_event\", \"arguments\": {\"title\": \"x\", \"minutes\": 3}}\n</tool_call>"));
  EXPECT_FALSE(accepts(auto_g, "<tool_call>\n{\"name\": \"delete_all\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(accepts(auto_g, "Text <tool_call> more text"));
  // required / named / no parallel calls.
  o.choice.kind = ToolChoiceKind::kRequired;
  const auto req = compile_bytes(tool_call_gbnf(tools, o));
  EXPECT_FALSE(accepts(req, "Hello"));
  EXPECT_TRUE(accepts(req, "<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>"));
  o.parallel = false;
  const auto single = compile_bytes(tool_call_gbnf(tools, o));
  EXPECT_FALSE(accepts(single, "<tool_call>{\"name\": \"ping\", \"arguments\": {}}</tool_call>\n<tool_call>{\"name\": \"ping\", \"arguments\": {}}</tool_call>"));
  o.choice = parse_tool_choice(Json::parse(R"({"type": "function", "function": {"name": "get_weather"}})"));
  const auto named = compile_bytes(tool_call_gbnf(tools, o));
  EXPECT_FALSE(accepts(named, "<tool_call>{\"name\": \"ping\", \"arguments\": {}}</tool_call>"));
  EXPECT_TRUE(accepts(named, "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"A\"}}</tool_call>"));
  o.choice.kind = ToolChoiceKind::kNone;
  EXPECT_EQ(tool_call_gbnf(tools, o), "");
  // Llama 3.x JSON and the generic format.
  o = {};
  o.format = ToolCallFormat::kLlama3Json;
  const auto llama = compile_bytes(tool_call_gbnf(tools, o));
  EXPECT_TRUE(accepts(llama, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}"));
  EXPECT_TRUE(accepts(llama, "It is sunny."));
  EXPECT_FALSE(accepts(llama, "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}"));
  EXPECT_FALSE(accepts(llama, "{\"city\": \"Oslo\"}"));
  o.format = ToolCallFormat::kGeneric;
  const auto generic = compile_bytes(tool_call_gbnf(tools, o));
  EXPECT_TRUE(accepts(generic, R"({"tool_calls": [{"name": "ping", "arguments": {}}, {"name": "get_weather", "arguments": {"city": "Rome"}}]})"));
  EXPECT_TRUE(accepts(generic, R"({"response": "No tool needed."})"));
  EXPECT_FALSE(accepts(generic, "plain text"));
  EXPECT_NE(generic_tool_system_prompt(tools, {}).find("{\"response\": \"<your answer>\"}"), std::string::npos);
}

// Constrained generation on a real (tiny) model: at temperature 1 with tool_choice required the
// model's calls parse, name a given tool and carry arguments that satisfy that tool's schema
// (checked here by hand against kTools).
TEST(ToolCalls, GeneratedCallsFollowTheirToolsSchemas) {
  const auto model = Model::load(test::shared_model("stories260K.gguf"));
  const auto tok = Tokenizer::from_gguf(model->gguf());
  grammar::GrammarCompiler compiler(grammar::TokenVocabulary::from_tokenizer(*tok));
  const Json tools = Json::parse(kTools);
  ToolCallGrammarOptions o;
  o.choice.kind = ToolChoiceKind::kRequired;
  o.parallel = false;  // at temperature 1 a tiny model would chain calls until max_tokens
  const auto g = compiler.gbnf(tool_call_gbnf(tools, o));
  int calls_seen = 0;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    ContextParams cp;
    cp.n_ctx = 512;
    cp.kv_type = TensorType::F32;
    Context ctx(*model, cp);
    SamplerParams sp;
    sp.temperature = 1.0f;
    sp.top_k = 0;
    sp.top_p = 1.0f;
    sp.min_p = 0.0f;
    sp.seed = seed;
    Sampler s(sp, model->hparams().n_vocab);
    GenerationParams gp;
    gp.max_tokens = 400;
    gp.grammar = g;
    const GenerationResult r = generate(ctx, s, tok.get(), tok->encode("Once upon a time", true, false), gp);
    ASSERT_EQ(r.finish_reason, FinishReason::kStop) << r.text;
    ToolCallParser p(ToolCallFormat::kHermes, seed);
    p.push(r.text);
    p.finish();
    ASSERT_FALSE(p.tool_calls().empty()) << r.text;
    EXPECT_EQ(p.content(), "") << r.text;
    for (const ToolCall& c : p.tool_calls()) {
      SCOPED_TRACE(r.text);
      const Json args = Json::parse(c.arguments);
      ASSERT_TRUE(args.is_object());
      if (c.name == "get_weather") {
        ASSERT_TRUE(args.find("city") && args.find("city")->is_string());
        if (const Json* u = args.find("unit")) {
          EXPECT_TRUE(*u == Json("celsius") || *u == Json("fahrenheit"));
        }
      } else if (c.name == "add_event") {
        ASSERT_TRUE(args.find("title") && args.find("minutes"));
        const double m = args.find("minutes")->as_number();
        EXPECT_TRUE(m >= 5 && m <= 480 && m == static_cast<int64_t>(m));
      } else {
        EXPECT_EQ(c.name, "ping");
        EXPECT_EQ(args.size(), 0u);
      }
      for (const auto& [k, v] : args.as_object()) {
        (void)v;
        EXPECT_TRUE(k == "city" || k == "unit" || k == "title" || k == "minutes") << k;
      }
      ++calls_seen;
    }
  }
  EXPECT_GE(calls_seen, 10);
}

}  // namespace
}  // namespace edgellm
