// Token masks from the precomputed per-state caches against brute force: at every step of a
// random constrained walk, the mask must equal "accept_token(id) succeeds" for every id of the
// vocabulary (accept_token runs the token's bytes through the automata and uses no cache).
// Real vocabularies: stories260K (SentencePiece, 512, byte fallback), tiny-zh-poems (4096 with
// the 256 byte tokens, so characters split across tokens) and Qwen3's 151,669 (byte-level BPE:
// tokens spanning several grammar symbols such as `"},`).
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/json.h"
#include "gguf/gguf_reader.h"
#include "grammar/compiled_grammar.h"
#include "grammar/gbnf_parser.h"
#include "grammar/grammar_matcher.h"
#include "grammar/json_schema.h"
#include "support/sanitizer.h"
#include "support/test_env.h"
#include "test_grammars.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab_data.h"

namespace edgellm::grammar {
namespace {

std::unique_ptr<Tokenizer> gguf_tokenizer(const std::string& model) {
  const auto file = gguf::GgufFile::open(edgellm::test::shared_model(model));
  return Tokenizer::from_gguf(*file);
}

std::unique_ptr<Tokenizer> qwen_tokenizer() {
  const std::string dir = edgellm::test::shared_testdata("tokenizers/qwen3/");
  const Json config = Json::parse(edgellm::test::read_file(dir + "tokenizer_config.json"));
  return std::make_unique<Tokenizer>(vocab_data_from_hf_json(Json::parse(edgellm::test::read_file(dir + "tokenizer.json")), &config));
}

const char* const kSchemas[] = {
    R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 12}, "age": {"type": "integer", "minimum": 0, "maximum": 130},
        "tags": {"type": "array", "items": {"enum": ["a", "bc", "中文"]}, "maxItems": 3}}, "required": ["name", "age"]})",
    R"({"type": "array", "items": {"anyOf": [{"type": "number", "minimum": -10, "maximum": 10}, {"type": "string", "format": "date"}, {"type": "null"}]}})",
    R"({"$ref": "#/$defs/n", "$defs": {"n": {"type": "object", "properties": {"v": {"type": "string"}, "k": {"type": "array", "items": {"$ref": "#/$defs/n"}, "maxItems": 2}}, "required": ["v"]}}})",
};

// Walks `steps` random tokens through the grammar, comparing the mask with brute force each step.
void walk_and_compare(const std::string& name, const std::shared_ptr<const CompiledGrammar>& g, int steps, uint32_t seed,
                      bool check_allows) {
  const TokenVocabulary& v = g->vocabulary();
  GrammarMatcher m(g, 4);
  TokenBitset mask;
  std::mt19937 rng(seed);
  for (int step = 0; step < steps; ++step) {
    m.fill_next_token_mask(mask);
    std::vector<int32_t> allowed;
    for (int32_t id = 0; id < v.size(); ++id) {
      const bool brute = m.accept_token(id) && m.rollback(1);
      ASSERT_EQ(mask.test(id), brute) << name << " step " << step << " token " << id << " \"" << v.bytes(id) << "\"";
      if (check_allows) {
        ASSERT_EQ(m.allows(id), brute) << name << " step " << step << " token " << id;
      }
      if (brute && !v.is_eog(id)) allowed.push_back(id);
    }
    if (allowed.empty()) break;  // only the end remains
    // Prefer short tokens now and then so that structures close and the walk sees many states.
    int32_t pick = allowed[rng() % allowed.size()];
    if (rng() % 3 == 0) {
      for (int tries = 0; tries < 8; ++tries) {
        const int32_t c = allowed[rng() % allowed.size()];
        if (v.bytes(c).size() < v.bytes(pick).size()) pick = c;
      }
    }
    ASSERT_TRUE(m.accept_token(pick)) << name;
  }
}

std::vector<std::pair<std::string, std::string>> grammars_to_test() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const test::NamedGrammar& g : test::kTestGrammars) out.emplace_back(g.name, g.gbnf);
  for (size_t i = 0; i < sizeof kSchemas / sizeof kSchemas[0]; ++i) {
    out.emplace_back("schema" + std::to_string(i), json_schema_to_gbnf(Json::parse(kSchemas[i])));
  }
  return out;
}

TEST(TokenMasks, Stories260kEqualBruteForce) {
  const auto tok = gguf_tokenizer("stories260K.gguf");
  const auto vocab = TokenVocabulary::from_tokenizer(*tok);
  for (const auto& [name, text] : grammars_to_test()) {
    walk_and_compare(name, CompiledGrammar::compile(parse_gbnf(text), vocab), 40, 1, true);
  }
}

TEST(TokenMasks, TinyZhPoemsEqualBruteForce) {
  const auto tok = gguf_tokenizer("tiny-zh-poems.gguf");
  const auto vocab = TokenVocabulary::from_tokenizer(*tok);
  for (const auto& [name, text] : grammars_to_test()) {
    walk_and_compare(name, CompiledGrammar::compile(parse_gbnf(text), vocab), 30, 2, true);
  }
}

TEST(TokenMasks, QwenVocabularyEqualsBruteForce) {
  const auto tok = qwen_tokenizer();
  const auto vocab = TokenVocabulary::from_tokenizer(*tok);
  ASSERT_EQ(vocab->size(), 151669);
  const std::vector<std::pair<std::string, std::string>> all = grammars_to_test();
  for (const auto& [name, text] : all) {
    if (name != "json" && name != "csv" && name != "unicode" && name.rfind("schema", 0) != 0) continue;
    // Under a sanitizer 2 steps of each walk (the mask over all 151,669 tokens in two grammar
    // states; the brute force is most of the run); the plain build walks 6 (docs/testing.md).
    walk_and_compare(name, CompiledGrammar::compile(parse_gbnf(text), vocab), edgellm::test::kSanitized ? 2 : 6, 3, false);
  }
}

// A character split over byte tokens: the first byte is allowed only where the class may hold a
// character starting with it, and the mask after it holds exactly the continuation bytes that
// complete an allowed character.
TEST(TokenMasks, CharactersSplitAcrossTokens) {
  const auto tok = gguf_tokenizer("tiny-zh-poems.gguf");
  const auto vocab = TokenVocabulary::from_tokenizer(*tok);
  const auto g = CompiledGrammar::compile(parse_gbnf("root ::= [一-二]+ \"。\"\n"), vocab);  // U+4E00..U+4E8C
  const std::optional<int32_t> e4 = tok->find_token("<0xE4>");
  const std::optional<int32_t> b8 = tok->find_token("<0xB8>");
  const std::optional<int32_t> ba = tok->find_token("<0xBA>");
  const std::optional<int32_t> bb = tok->find_token("<0xBB>");
  const std::optional<int32_t> e5 = tok->find_token("<0xE5>");
  ASSERT_TRUE(e4 && b8 && ba && bb && e5);
  GrammarMatcher m(g);
  TokenBitset mask;
  m.fill_next_token_mask(mask);
  EXPECT_TRUE(mask.test(*e4));
  EXPECT_FALSE(mask.test(*e5));
  ASSERT_TRUE(m.accept_token(*e4));  // E4: U+4000..U+4FFF, of which U+4E00.. are allowed
  m.fill_next_token_mask(mask);
  EXPECT_TRUE(mask.test(*b8));   // E4 B8 xx: U+4E00..U+4E3F
  EXPECT_TRUE(mask.test(*ba));   // E4 BA xx: U+4E80..U+4EBF, of which ..U+4E8C
  EXPECT_FALSE(mask.test(*bb));  // E4 BB xx: U+4EC0..: outside
  ASSERT_TRUE(m.accept_token(*ba));
  m.fill_next_token_mask(mask);
  const std::optional<int32_t> x8c = tok->find_token("<0x8C>");
  const std::optional<int32_t> x8d = tok->find_token("<0x8D>");
  EXPECT_TRUE(mask.test(*x8c));   // U+4E8C
  EXPECT_FALSE(mask.test(*x8d));  // U+4E8D
  EXPECT_FALSE(m.can_end());
}

// A token that spans several symbols and leaves the rule it started in: `string` is a called
// rule (used in many places), so `"},` in Qwen's vocabulary is one of its uncertain tokens and
// is decided against the stack: allowed after a value inside an object inside an array, refused
// at the top level.
TEST(TokenMasks, TokensSpanningRulesAreDecidedByTheStack) {
  const auto tok = qwen_tokenizer();
  const auto vocab = TokenVocabulary::from_tokenizer(*tok);
  const auto g = CompiledGrammar::compile(parse_gbnf(test::kTestGrammars[1].gbnf), vocab);  // json
  const std::optional<int32_t> quote_brace_comma = vocab->find_token("\"},");
  ASSERT_TRUE(quote_brace_comma);
  GrammarMatcher inner(g);
  ASSERT_TRUE(inner.accept_bytes("{\"a\": [{\"b\": \"x"));
  EXPECT_TRUE(inner.allows(*quote_brace_comma));
  GrammarMatcher top(g);
  ASSERT_TRUE(top.accept_bytes("{\"b\": \"x"));
  EXPECT_FALSE(top.allows(*quote_brace_comma));
  TokenBitset mask;
  inner.fill_next_token_mask(mask);
  EXPECT_TRUE(mask.test(*quote_brace_comma));
  top.fill_next_token_mask(mask);
  EXPECT_FALSE(mask.test(*quote_brace_comma));
}

}  // namespace
}  // namespace edgellm::grammar
