// edgellm_grammar_conformance: the EdgeLLM side of scripts/grammar-conformance.sh, which compares
// this engine's accept / reject decisions with llama.cpp's grammar on the same strings.
//
//   edgellm_grammar_conformance strings GRAMMAR.gbnf N SEED     N strings, hex-encoded UTF-8, one
//                                                               per line: random sentences of the
//                                                               grammar, every other one mutated
//   edgellm_grammar_conformance verdicts GRAMMAR.gbnf STRINGS   "1" (the whole string is a sentence)
//                                                               or "0" per line of STRINGS
//   edgellm_grammar_conformance schema SCHEMA.json              the GBNF of a JSON Schema
//   edgellm_grammar_conformance test-grammars DIR               writes tests/grammar/test_grammars.h's
//                                                               grammars to DIR/<name>.gbnf
//
// Verdicts use the byte-level matcher (GrammarMatcher::accept_bytes + can_end), the path every
// token takes.
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "core/error.h"
#include "core/json.h"
#include "grammar/compiled_grammar.h"
#include "grammar/gbnf_parser.h"
#include "grammar/grammar_matcher.h"
#include "grammar/json_schema.h"
#include "naive_grammar.h"
#include "test_grammars.h"

namespace {

using namespace edgellm;
using namespace edgellm::grammar;

std::string read(const char* path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(ErrorCode::kIo, std::string("cannot read ") + path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string hex(const std::string& s) {
  static const char* const kHex = "0123456789abcdef";
  std::string out;
  for (const unsigned char c : s) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

std::string unhex(const std::string& h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) out += static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string cmd = argc > 1 ? argv[1] : "";
    if (cmd == "schema" && argc == 3) {
      std::fputs(json_schema_to_gbnf(Json::parse(read(argv[2]))).c_str(), stdout);
      return 0;
    }
    if (cmd == "test-grammars" && argc == 3) {
      for (const test::NamedGrammar& g : test::kTestGrammars) {
        std::ofstream f(std::string(argv[2]) + "/" + g.name + ".gbnf", std::ios::binary);
        f << g.gbnf;
      }
      return 0;
    }
    if (cmd == "strings" && argc == 5) {
      const Grammar g = parse_gbnf(read(argv[2]));
      const int n = std::stoi(argv[3]);
      std::mt19937 rng(static_cast<uint32_t>(std::stoul(argv[4])));
      const test::SentenceGenerator gen(g);
      for (int i = 0; i < n; ++i) {
        std::string s = gen(rng);
        if (i % 2 == 1) s = test::mutate(s, rng);
        std::printf("%s\n", hex(s).c_str());
      }
      return 0;
    }
    if (cmd == "verdicts" && argc == 4) {
      std::vector<std::string> pieces;
      for (int b = 0; b < 256; ++b) pieces.push_back(std::string(1, static_cast<char>(b)));
      pieces.push_back("");
      const auto cg = CompiledGrammar::compile(parse_gbnf(read(argv[2])), TokenVocabulary::from_pieces(pieces, {256}));
      std::istringstream lines(read(argv[3]));
      for (std::string line; std::getline(lines, line);) {
        GrammarMatcher m(cg);
        std::printf("%d\n", m.accept_bytes(unhex(line)) && m.can_end() ? 1 : 0);
      }
      return 0;
    }
    std::fprintf(stderr, "usage: %s strings GRAMMAR N SEED | verdicts GRAMMAR STRINGS | schema SCHEMA.json\n", argv[0]);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "edgellm_grammar_conformance: %s\n", e.what());
    return 1;
  }
}
