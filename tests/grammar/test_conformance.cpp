// The CI-sized version of scripts/grammar-conformance.sh: for every grammar in this repository
// (tests/grammar/test_grammars.h and the GBNF of the 12 schemas of tests/grammar/schemas/), the
// first 300 strings of the full run with llama.cpp's verdict on each (recorded by the script from
// the reference build's llama-grammar.cpp into tests/grammar/conformance/<name>.txt) must get the
// same verdict from our engine. The full run (10,000 strings for each of 32 grammars, including
// llama.cpp's own grammars/) is in docs/structured-output.md.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/json.h"
#include "grammar/compiled_grammar.h"
#include "grammar/gbnf_parser.h"
#include "grammar/grammar_matcher.h"
#include "grammar/json_schema.h"
#include "support/test_env.h"
#include "test_grammars.h"

namespace edgellm::grammar {
namespace {

std::string grammar_text(const std::string& name) {
  if (name.rfind("schema-", 0) == 0) {
    return json_schema_to_gbnf(Json::parse(edgellm::test::read_file("tests/grammar/schemas/" + name.substr(7) + ".json")));
  }
  for (const test::NamedGrammar& g : test::kTestGrammars) {
    if (name == g.name) return g.gbnf;
  }
  return "";
}

std::string unhex(const std::string& h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) out += static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16));
  return out;
}

TEST(Conformance, VerdictsEqualLlamaCppsOnRecordedStrings) {
  std::vector<std::string> pieces;
  for (int b = 0; b < 256; ++b) pieces.push_back(std::string(1, static_cast<char>(b)));
  pieces.push_back("");
  const auto vocab = TokenVocabulary::from_pieces(pieces, {256});
  int files = 0, strings = 0, accepted = 0;
  for (const auto& e : std::filesystem::directory_iterator("tests/grammar/conformance")) {
    const std::string name = e.path().stem().string();
    const std::string text = grammar_text(name);
    ASSERT_FALSE(text.empty()) << "no grammar for " << e.path();
    const auto g = CompiledGrammar::compile(parse_gbnf(text), vocab);
    std::istringstream lines(edgellm::test::read_file(e.path().string()));
    for (std::string line; std::getline(lines, line);) {
      const size_t sp = line.find(' ');
      ASSERT_NE(sp, std::string::npos) << line;
      const std::string s = unhex(line.substr(0, sp));
      const bool llama = line.substr(sp + 1) == "1";
      GrammarMatcher m(g);
      ASSERT_EQ(m.accept_bytes(s) && m.can_end(), llama) << name << ": \"" << s << "\"";
      ++strings;
      accepted += llama;
    }
    ++files;
  }
  EXPECT_GE(files, 24);
  EXPECT_GE(strings, 24 * 300);
  // Both verdicts are well represented (the generator mutates every other string).
  EXPECT_GT(accepted, strings / 3);
  EXPECT_LT(accepted, strings * 4 / 5);
}

}  // namespace
}  // namespace edgellm::grammar
