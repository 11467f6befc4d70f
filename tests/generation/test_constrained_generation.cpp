// Generation under a grammar (GenerationParams::grammar) on the real small models: every output
// follows the grammar (checked by the naive interpreter of tests/grammar/naive_grammar.h and by
// JSON checks written here), generation ends where the grammar is complete, end-of-generation
// tokens are refused elsewhere, and the service path gives the same tokens as generate().
#include <gtest/gtest.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/json.h"
#include "engine/context.h"
#include "engine/sampler.h"
#include "generation/generate.h"
#include "grammar/gbnf_parser.h"
#include "grammar/grammar_compiler.h"
#include "grammar/json_schema.h"
#include "../grammar/naive_grammar.h"
#include "model/model.h"
#include "service/inference_service.h"
#include "support/test_env.h"
#include "tokenizer/tokenizer.h"

namespace edgellm {
namespace {

struct Loaded {
  std::shared_ptr<const Model> model;
  std::unique_ptr<Tokenizer> tok;
  std::unique_ptr<grammar::GrammarCompiler> grammars;
};

Loaded load(const char* name) {
  Loaded l;
  l.model = Model::load(test::shared_model(name));
  l.tok = Tokenizer::from_gguf(l.model->gguf());
  l.grammars = std::make_unique<grammar::GrammarCompiler>(grammar::TokenVocabulary::from_tokenizer(*l.tok));
  return l;
}

std::unique_ptr<Context> context(const Model& m) {
  ContextParams cp;
  cp.n_ctx = 512;
  cp.n_threads = 1;
  cp.kv_type = TensorType::F32;
  return std::make_unique<Context>(m, cp);
}

Sampler sampler(const Model& m, float temperature, uint64_t seed) {
  SamplerParams p;
  p.temperature = temperature;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = seed;
  return Sampler(p, m.hparams().n_vocab);
}

// A schema whose every output a few lines of C++ can check.
const char* const kPersonSchema = R"({"type": "object", "properties": {
    "name": {"type": "string", "minLength": 1, "maxLength": 10},
    "age": {"type": "integer", "minimum": 0, "maximum": 120},
    "pet": {"enum": ["cat", "dog", null]}},
  "required": ["name", "age"], "additionalProperties": false})";

void check_person(const std::string& text) {
  SCOPED_TRACE(text);
  const Json j = Json::parse(text);
  ASSERT_TRUE(j.is_object());
  const Json* name = j.find("name");
  const Json* age = j.find("age");
  ASSERT_TRUE(name && name->is_string());
  size_t cps = 0;
  for (size_t i = 0; i < name->as_string().size(); i += utf8::decode(name->as_string(), i).length) ++cps;
  EXPECT_GE(cps, 1u);
  EXPECT_LE(cps, 10u);
  ASSERT_TRUE(age && age->is_number());
  EXPECT_EQ(age->as_number(), static_cast<double>(static_cast<int64_t>(age->as_number())));
  EXPECT_GE(age->as_number(), 0);
  EXPECT_LE(age->as_number(), 120);
  for (const auto& [k, v] : j.as_object()) {
    EXPECT_TRUE(k == "name" || k == "age" || k == "pet") << k;
    if (k == "pet") {
      EXPECT_TRUE(v.is_null() || v == Json("cat") || v == Json("dog"));
    }
  }
}

TEST(ConstrainedGeneration, SampledJsonFollowsTheSchemaOnEveryModel) {
  for (const char* name : {"stories260K.gguf", "tiny-zh-poems.gguf"}) {
    SCOPED_TRACE(name);
    Loaded l = load(name);
    const auto g = l.grammars->json_schema(Json::parse(kPersonSchema));
    for (uint64_t seed = 1; seed <= 12; ++seed) {
      auto ctx = context(*l.model);
      Sampler s = sampler(*l.model, 1.0f, seed);
      GenerationParams gp;
      gp.max_tokens = 400;
      gp.grammar = g;
      const std::vector<int32_t> prompt = l.tok->encode("Person: ", true, false);
      const GenerationResult r = generate(*ctx, s, l.tok.get(), prompt, gp);
      ASSERT_EQ(r.finish_reason, FinishReason::kStop) << r.text << " " << r.error;
      check_person(r.text);
      EXPECT_EQ(r.text, l.tok->decode(r.tokens));
    }
  }
}

TEST(ConstrainedGeneration, GbnfOutputsAreSentencesOfTheGrammar) {
  const char* const kGrammar =
      "root ::= \"(\" item (\", \" item){1,3} \")\" \"\\n\"\nitem ::= [a-z]{2,6} | [0-9]+ \"!\"?\n";
  const grammar::Grammar ast = grammar::parse_gbnf(kGrammar);
  for (const char* name : {"stories260K.gguf", "tiny-zh-poems.gguf"}) {
    Loaded l = load(name);
    const auto g = l.grammars->gbnf(kGrammar);
    for (const float temperature : {0.0f, 1.0f}) {
      for (uint64_t seed = 1; seed <= 6; ++seed) {
        auto ctx = context(*l.model);
        Sampler s = sampler(*l.model, temperature, seed);
        GenerationParams gp;
        gp.max_tokens = 300;
        gp.grammar = g;
        const GenerationResult r = generate(*ctx, s, l.tok.get(), {l.tok->bos()}, gp);
        ASSERT_EQ(r.finish_reason, FinishReason::kStop) << name << " " << r.text;
        EXPECT_TRUE(grammar::test::NaiveGrammarMatcher(ast, r.text).full_match()) << name << ": \"" << r.text << "\"";
        // The grammar ends with "\n": nothing can follow, so generation stopped there, not at an
        // end-of-generation token.
        EXPECT_EQ(r.eog_token, -1);
      }
    }
  }
}

// stories260K's SentencePiece detokenizer drops the first token's leading space after a
// BOS-only prompt; the grammar must see that same text, or "x" would be refused for "▁x" and
// " x" would pass as "x".
TEST(ConstrainedGeneration, TextStartSpaceIsWhatTheGrammarSees) {
  Loaded l = load("stories260K.gguf");
  const auto g = l.grammars->gbnf("root ::= \"Once\" [ a-z]{3,20} \".\"\n");
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    auto ctx = context(*l.model);
    Sampler s = sampler(*l.model, 1.0f, seed);
    GenerationParams gp;
    gp.max_tokens = 60;
    gp.grammar = g;
    const GenerationResult r = generate(*ctx, s, l.tok.get(), {l.tok->bos()}, gp);
    ASSERT_EQ(r.finish_reason, FinishReason::kStop) << r.text;
    EXPECT_EQ(r.text.rfind("Once", 0), 0u) << r.text;
    EXPECT_EQ(r.text.back(), '.');
  }
}

TEST(ConstrainedGeneration, EndOfGenerationOnlyWhereTheGrammarMayEnd) {
  Loaded l = load("stories260K.gguf");
  // The end-of-sequence token made the most likely one by far: greedy takes it at the first
  // step where the grammar may end, and never before.
  const char* const kGrammar = "root ::= \"x\" [a-z]{2,5} (\"-\" [a-z]+)?\n";
  const grammar::Grammar ast = grammar::parse_gbnf(kGrammar);
  SamplerParams p;
  p.temperature = 0.0f;
  p.logit_bias = {{l.tok->eos(), 30.0f}};
  Sampler s(p, l.model->hparams().n_vocab);
  auto ctx = context(*l.model);
  GenerationParams gp;
  gp.max_tokens = 40;
  gp.grammar = l.grammars->gbnf(kGrammar);
  const GenerationResult r = generate(*ctx, s, l.tok.get(), l.tok->encode("Once upon a time", true, false), gp);
  EXPECT_EQ(r.finish_reason, FinishReason::kStop);
  EXPECT_EQ(r.eog_token, l.tok->eos());
  EXPECT_TRUE(grammar::test::NaiveGrammarMatcher(ast, r.text).full_match()) << r.text;
  // Every shorter prefix of the output is not a sentence: the end came at the first chance.
  std::string prefix;
  for (size_t i = 0; i + 1 < r.tokens.size(); ++i) {
    prefix += l.tok->token_to_piece(r.tokens[i]);
    EXPECT_FALSE(grammar::test::NaiveGrammarMatcher(ast, prefix).full_match()) << prefix;
  }
  // With ignore_eog, a grammar that completes still stops generation by itself.
  auto ctx2 = context(*l.model);
  Sampler s2 = sampler(*l.model, 1.0f, 3);
  GenerationParams gp2;
  gp2.max_tokens = 30;
  gp2.ignore_eog = true;
  gp2.grammar = l.grammars->gbnf("root ::= [a-z ]{5}\n");
  const GenerationResult r2 = generate(*ctx2, s2, l.tok.get(), {l.tok->bos()}, gp2);
  EXPECT_EQ(r2.finish_reason, FinishReason::kStop);
  EXPECT_EQ(r2.text.size(), 5u) << r2.text;
}

TEST(ConstrainedGeneration, CheckFirstBuildsNoMaskWhenThePickIsAllowed) {
  Loaded l = load("stories260K.gguf");
  auto ctx = context(*l.model);
  Sampler s = sampler(*l.model, 0.0f, 1);
  GenerationParams gp;
  gp.max_tokens = 40;
  gp.grammar = l.grammars->gbnf("root ::= [^\\x00]*\n");  // anything (but NUL): greedy's pick always passes
  const GenerationResult free_run = generate(*ctx, s, l.tok.get(), l.tok->encode("Once upon a time", true, false), gp);
  EXPECT_EQ(free_run.timings.grammar_masks, 0);
  // And the same tokens as without a grammar.
  auto ctx2 = context(*l.model);
  Sampler s2 = sampler(*l.model, 0.0f, 1);
  GenerationParams plain;
  plain.max_tokens = 40;
  EXPECT_EQ(generate(*ctx2, s2, l.tok.get(), l.tok->encode("Once upon a time", true, false), plain).tokens, free_run.tokens);
  // A grammar the model would not follow by itself: masks are built.
  auto ctx3 = context(*l.model);
  Sampler s3 = sampler(*l.model, 0.0f, 1);
  gp.grammar = l.grammars->gbnf("root ::= [0-9]{10}\n");
  const GenerationResult digits = generate(*ctx3, s3, l.tok.get(), l.tok->encode("Once upon a time", true, false), gp);
  EXPECT_GT(digits.timings.grammar_masks, 0);
  EXPECT_EQ(digits.text.size(), 10u);
}

TEST(ConstrainedGeneration, RefusesAGrammarOfAnotherVocabulary) {
  Loaded stories = load("stories260K.gguf");
  Loaded poems = load("tiny-zh-poems.gguf");
  auto ctx = context(*stories.model);
  Sampler s = sampler(*stories.model, 0.0f, 1);
  GenerationParams gp;
  gp.grammar = poems.grammars->json_object();
  try {
    generate(*ctx, s, stories.tok.get(), {stories.tok->bos()}, gp);
    FAIL() << "a grammar of another vocabulary was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("compiled for a vocabulary of 4096 tokens but the model has 512"), std::string::npos)
        << e.what();
  }
}

// The service drives the same SequenceGenerator: greedy constrained requests running together
// give the tokens generate() gives each alone, and a request whose grammar cannot be followed by
// the vocabulary ends alone with an error while the others finish.
TEST(ConstrainedGeneration, ServicePathMatchesGenerate) {
  Loaded l = load("stories260K.gguf");
  const auto schema = l.grammars->json_schema(Json::parse(kPersonSchema));
  const std::vector<std::string> prompts = {"Person: ", "Once upon a time", "Tom"};
  std::vector<std::vector<int32_t>> solo;
  for (const std::string& p : prompts) {
    auto ctx = context(*l.model);
    Sampler s = sampler(*l.model, 0.0f, 1);
    GenerationParams gp;
    gp.max_tokens = 120;
    gp.grammar = schema;
    solo.push_back(generate(*ctx, s, l.tok.get(), l.tok->encode(p, true, false), gp).tokens);
  }
  ServiceParams params;
  params.context.n_ctx = 512;
  params.context.n_seq_max = 4;
  params.context.kv_type = TensorType::F32;
  InferenceService service(l.model, params);
  std::mutex mu;
  std::condition_variable cv;
  std::vector<RequestResult> results(prompts.size() + 1);
  std::vector<std::vector<int32_t>> tokens(prompts.size() + 1);
  int done = 0;
  const auto submit = [&](size_t i, const std::string& prompt, std::shared_ptr<const grammar::CompiledGrammar> g) {
    ServiceRequest r;
    r.prompt = prompt;
    r.sampling.temperature = 0;
    r.generation.max_tokens = 120;
    r.generation.grammar = std::move(g);
    r.on_token = [&, i](const TokenEvent& e) {
      if (e.token >= 0) tokens[i].push_back(e.token);
      return true;
    };
    r.on_finish = [&, i](const RequestResult& res) {
      std::lock_guard<std::mutex> lock(mu);
      results[i] = res;
      ++done;
      cv.notify_all();
    };
    service.submit(std::move(r));
  };
  // A character no token of stories260K's vocabulary can produce... every byte has a token, so
  // use a token element naming the end-of-sequence id, which grammars never match.
  const auto impossible = l.grammars->gbnf("root ::= \"a\" <[" + std::to_string(l.tok->eos()) + "]>\n");
  for (size_t i = 0; i < prompts.size(); ++i) submit(i, prompts[i], schema);
  submit(prompts.size(), "Once", impossible);
  std::unique_lock<std::mutex> lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(120), [&] { return done == static_cast<int>(prompts.size()) + 1; }));
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(results[i].finish_reason, FinishReason::kStop) << results[i].error;
    EXPECT_EQ(tokens[i], solo[i]) << prompts[i];
    check_person(results[i].text);
  }
  EXPECT_EQ(results.back().finish_reason, FinishReason::kError);
  EXPECT_EQ(results.back().error_code, ErrorCode::kInvalidArgument);
  EXPECT_NE(results.back().error.find("allows no token"), std::string::npos) << results.back().error;
  EXPECT_EQ(results.back().text, "a");
  // A grammar of another vocabulary is refused at submit.
  Loaded poems = load("tiny-zh-poems.gguf");
  ServiceRequest bad;
  bad.prompt = "x";
  bad.generation.grammar = poems.grammars->json_object();
  EXPECT_THROW(service.submit(std::move(bad)), Error);
}

}  // namespace
}  // namespace edgellm
