// GBNF syntax: what parses into which AST, and every refusal with its line and column.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "grammar/gbnf_parser.h"
#include "test_grammars.h"

namespace edgellm::grammar {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_gbnf(text);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
  return "";
}

TEST(GbnfParser, LiteralsClassesAndEscapes) {
  const Grammar g = parse_gbnf("root ::= \"a\\n\\x41\\u00e9\\U0001F600\\\"\" [^a-c\\]\\-] . \"\"\n");
  ASSERT_EQ(g.rules.size(), 1u);
  const Expr& body = g.rules[0].body;
  ASSERT_EQ(body.kind, Expr::Kind::kSeq);
  ASSERT_EQ(body.items.size(), 4u);
  EXPECT_EQ(body.items[0], Expr::literal("a\nA\xC3\xA9\xF0\x9F\x98\x80\""));
  // [^a-c\]\-]: everything but a-c, ']' and '-', without the surrogates.
  const std::vector<CodePointRange> want = {{0, 0x2C}, {0x2E, 0x5C}, {0x5E, 0x60}, {0x64, 0xD7FF}, {0xE000, 0x10FFFF}};
  EXPECT_EQ(body.items[1].ranges, want);
  EXPECT_EQ(body.items[2].kind, Expr::Kind::kAny);
  EXPECT_EQ(body.items[3].kind, Expr::Kind::kEmpty);
}

TEST(GbnfParser, RepetitionForms) {
  const Grammar g = parse_gbnf("root ::= a* a+ a? a{3} a{2,} a{0,4} (a b){1,2}\na ::= \"a\"\nb ::= \"b\"\n");
  const Expr& s = g.rules[g.root].body;
  ASSERT_EQ(s.items.size(), 7u);
  const std::pair<uint32_t, uint32_t> want[] = {{0, kUnbounded}, {1, kUnbounded}, {0, 1}, {3, 3},
                                                {2, kUnbounded}, {0, 4}, {1, 2}};
  for (size_t i = 0; i < 7; ++i) {
    EXPECT_EQ(s.items[i].kind, Expr::Kind::kRepeat) << i;
    EXPECT_EQ(s.items[i].min, want[i].first) << i;
    EXPECT_EQ(s.items[i].max, want[i].second) << i;
  }
  EXPECT_EQ(s.items[6].items[0].kind, Expr::Kind::kSeq);
}

TEST(GbnfParser, NewlinesCommentsAndRuleEnds) {
  // Newlines are free inside parentheses and after '|'; a rule otherwise ends at the newline.
  const Grammar g = parse_gbnf(
      "# leading comment\n\nroot ::= ( \"a\"   # a comment\n   \"b\" ) |\n   \"c\"\r\nx-y_z ::= \"d\"   \n");
  ASSERT_EQ(g.rules.size(), 2u);
  EXPECT_EQ(g.rules[0].body.kind, Expr::Kind::kAlt);
  EXPECT_EQ(g.rules[1].name, "x-y_z");
}

TEST(GbnfParser, Tokens) {
  const TokenResolver resolve = [](std::string_view t) -> std::optional<int32_t> {
    if (t == "<think>") return 7;
    return std::nullopt;
  };
  const Grammar g = parse_gbnf("root ::= <[12]> !<think> <think>\n", resolve);
  const Expr& s = g.rules[0].body;
  EXPECT_EQ(s.items[0], Expr::tok(12, false));
  EXPECT_EQ(s.items[1], Expr::tok(7, true));
  EXPECT_EQ(s.items[2], Expr::tok(7, false));
  EXPECT_NE(error_of("root ::= <unknown>\n").find("needs a vocabulary"), std::string::npos);
}

TEST(GbnfParser, ErrorsNameTheLineAndColumn) {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"root ::= foo\n", "line 1, column 10: undefined rule 'foo'"},
      {"root ::= \"a\"\nroot ::= \"b\"\n", "line 2, column 1: rule 'root' is defined twice"},
      {"root ::= \"abc\n", "unterminated string literal"},
      {"root ::= [a-z\n", "unterminated character class"},
      {"root ::= []\n", "line 1, column 10: empty character class"},
      {"root ::= *\n", "line 1, column 10: a repetition operator needs an item before it"},
      {"root ::= \"a\"{2001}\n", "repetition count above 2000"},
      {"root ::= \"a\"{3,2}\n", "the maximum is below the minimum"},
      {"root ::= \"a\" )\n", "line 1, column 14: unexpected ')'"},
      {"root := \"a\"\n", "expected '::=' after rule name 'root'"},
      {"root ::= \"\\q\"\n", "unknown escape '\\q'"},
      {"root ::= \"\\x4\"\n", "expected 2 hex digits"},
      {"root ::= (\"a\"\n", "expected ')'"},
      {"root ::= \"\\uD800\"\n", "surrogate"},
      {"root ::= \"a\xff\"\n", "line 1, column 12: invalid UTF-8"},
      {"x ::= \"a\"\n", "no rule named 'root'"},
      {"root ::= \"a\"\n\n  bar ::= \"b\" baz\n", "line 3, column 15: undefined rule 'baz'"},
  };
  for (const Case& c : cases) {
    const std::string e = error_of(c.text);
    EXPECT_NE(e.find(c.message), std::string::npos) << "grammar: " << c.text << "\nerror: " << e;
  }
}

// Rule ids follow the order of first mention, which printing changes; rules are compared by
// name (the printed lines, sorted, name every reference).
std::vector<std::string> sorted_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::sort(lines.begin(), lines.end());
  return lines;
}

TEST(GbnfParser, PrintedGrammarsParseBackToTheSameRules) {
  for (const test::NamedGrammar& ng : test::kTestGrammars) {
    const Grammar g = parse_gbnf(ng.gbnf);
    const std::string printed = print_gbnf(g);
    Grammar again;
    ASSERT_NO_THROW(again = parse_gbnf(printed)) << ng.name << ":\n" << printed;
    EXPECT_EQ(sorted_lines(print_gbnf(again)), sorted_lines(printed)) << ng.name << ":\n" << printed;
    EXPECT_EQ(again.rules.size(), g.rules.size());
  }
}

TEST(GbnfParser, StartRuleByName) {
  const Grammar g = parse_gbnf("a ::= \"x\" b\nb ::= \"y\"\n", {}, "b");
  EXPECT_EQ(g.rules[g.root].name, "b");
}

}  // namespace
}  // namespace edgellm::grammar
