// The byte-level pushdown automata against a naive interpreter of the grammar (naive_grammar.h):
// whole strings accepted or refused alike, and every prefix of a sentence accepted.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "core/error.h"
#include "grammar/compiled_grammar.h"
#include "grammar/gbnf_parser.h"
#include "grammar/grammar_matcher.h"
#include "naive_grammar.h"
#include "test_grammars.h"

namespace edgellm::grammar {
namespace {

// A vocabulary of the 256 single bytes: masks stay cheap and every string is reachable.
std::shared_ptr<const TokenVocabulary> byte_vocab() {
  std::vector<std::string> pieces;
  for (int b = 0; b < 256; ++b) pieces.push_back(std::string(1, static_cast<char>(b)));
  pieces.push_back("");  // an end-of-generation token with no text
  return TokenVocabulary::from_pieces(pieces, {256});
}

bool engine_accepts(const std::shared_ptr<const CompiledGrammar>& g, const std::string& s) {
  GrammarMatcher m(g);
  return m.accept_bytes(s) && m.can_end();
}

TEST(GrammarMatcher, AgreesWithTheNaiveInterpreter) {
  const auto vocab = byte_vocab();
  for (const test::NamedGrammar& ng : test::kTestGrammars) {
    const Grammar g = parse_gbnf(ng.gbnf);
    const auto cg = CompiledGrammar::compile(g, vocab);
    std::mt19937 rng(1234);
    int accepted = 0, total = 0;
    for (int i = 0; i < 400; ++i) {
      std::string s = test::random_sentence(g, rng);
      if (i % 2 == 1) s = test::mutate(s, rng);
      const bool want = test::NaiveGrammarMatcher(g, s).full_match();
      const bool got = engine_accepts(cg, s);
      ASSERT_EQ(got, want) << ng.name << ": \"" << s << "\"";
      accepted += got;
      ++total;
      if (want) {
        // Every prefix of a sentence is a live prefix, byte by byte.
        GrammarMatcher m(cg);
        for (size_t k = 0; k < s.size(); ++k) {
          ASSERT_TRUE(m.accept_bytes(s.substr(k, 1))) << ng.name << ": \"" << s << "\" at byte " << k;
        }
        EXPECT_TRUE(m.can_end());
      }
    }
    // Both outcomes occur, or the comparison proves little.
    EXPECT_GT(accepted, total / 5) << ng.name;
    EXPECT_LT(accepted, total) << ng.name;
  }
}

TEST(GrammarMatcher, RefusedInputChangesNothing) {
  const auto cg = CompiledGrammar::compile(parse_gbnf("root ::= \"ab\" [0-9]+ \"c\"\n"), byte_vocab());
  GrammarMatcher m(cg);
  ASSERT_TRUE(m.accept_bytes("ab1"));
  EXPECT_FALSE(m.accept_bytes("x"));
  EXPECT_FALSE(m.accept_bytes("2x"));  // first byte fine, second not: all or nothing
  EXPECT_TRUE(m.accept_bytes("2c"));
  EXPECT_TRUE(m.can_end());
  EXPECT_TRUE(m.is_terminated());
  EXPECT_FALSE(m.accept_bytes("c"));
}

TEST(GrammarMatcher, EndOfGenerationOnlyWhereTheGrammarMayEnd) {
  const auto cg = CompiledGrammar::compile(parse_gbnf("root ::= \"a\" \"b\"?\n"), byte_vocab());
  GrammarMatcher m(cg);
  EXPECT_FALSE(m.allows(256));
  EXPECT_FALSE(m.accept_token(256));
  ASSERT_TRUE(m.accept_token('a'));
  EXPECT_TRUE(m.can_end());
  EXPECT_FALSE(m.is_terminated());
  EXPECT_TRUE(m.allows(256));
  EXPECT_TRUE(m.allows('b'));
  ASSERT_TRUE(m.accept_token(256));
  EXPECT_TRUE(m.ended());
  EXPECT_FALSE(m.allows('b'));
  EXPECT_FALSE(m.accept_token('b'));
}

TEST(GrammarMatcher, RollbackRestoresEarlierStates) {
  const auto cg = CompiledGrammar::compile(parse_gbnf(test::kTestGrammars[1].gbnf), byte_vocab());
  GrammarMatcher m(cg, 8);
  const std::string text = "{\"a\": [1, 2";
  for (char c : text) ASSERT_TRUE(m.accept_token(static_cast<uint8_t>(c)));
  const size_t frames = m.n_frames();
  ASSERT_TRUE(m.rollback(3));  // back to {"a": [1,
  EXPECT_FALSE(m.accept_token('}'));
  EXPECT_TRUE(m.accept_token('3'));
  EXPECT_TRUE(m.accept_token(']'));
  EXPECT_TRUE(m.accept_token('}'));
  EXPECT_TRUE(m.can_end());
  EXPECT_LE(m.n_frames(), frames + 2);
  EXPECT_FALSE(m.rollback(9));  // only 8 remembered
  EXPECT_TRUE(m.rollback(8));
}

TEST(GrammarMatcher, LeftRecursionIsRefused) {
  try {
    Automaton::build(parse_gbnf("root ::= expr\nexpr ::= x expr \"+\" | \"1\"\nx ::= \"\" | \"-\"\n"));
    FAIL() << "left recursion through a nullable rule was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rule 'expr' is left-recursive"), std::string::npos) << e.what();
  }
}

TEST(GrammarMatcher, TailRecursionDoesNotGrowTheStack) {
  // A right-recursive rule called after every item: without tail calls the stack would hold one
  // frame per item.
  const auto cg = CompiledGrammar::compile(parse_gbnf("root ::= item\nitem ::= [a-z] (\",\" item)?\n"), byte_vocab());
  GrammarMatcher m(cg);
  for (int i = 0; i < 2000; ++i) ASSERT_TRUE(m.accept_bytes("x,"));
  EXPECT_LT(m.n_frames(), 8u);
  EXPECT_TRUE(m.accept_bytes("y"));
  EXPECT_TRUE(m.can_end());
}

}  // namespace
}  // namespace edgellm::grammar
