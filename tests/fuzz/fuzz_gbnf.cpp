// libFuzzer target: arbitrary bytes as GBNF text. The parser must accept or throw
// edgellm::Error; an accepted grammar must print back to the same rules; compiling it (small
// limits) must succeed or throw Error; and for a compiled grammar the token masks of a small
// vocabulary must equal brute force (accept_token per token) along a few steps driven by the
// input's last bytes. Any other exception, crash, sanitizer report, leak or hang is a bug.
//
// Seeds: tests/fuzz/corpus/gbnf/ (the grammars of tests/grammar/test_grammars.h, written by
// LLVMFuzzerInitialize into EDGELLM_FUZZ_SEED_DIR, and what scripts/fuzz-long.sh kept).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "../grammar/test_grammars.h"
#include "core/error.h"
#include "grammar/compiled_grammar.h"
#include "grammar/gbnf_parser.h"
#include "grammar/grammar_matcher.h"

namespace {

using namespace edgellm;
using namespace edgellm::grammar;

// Bytes, a few multi-byte and multi-symbol pieces, a token with no text and an end token.
const std::shared_ptr<const TokenVocabulary>& vocab() {
  static const std::shared_ptr<const TokenVocabulary> v = [] {
    std::vector<std::string> pieces;
    for (int b = 0; b < 256; ++b) pieces.push_back(std::string(1, static_cast<char>(b)));
    for (const char* p : {"ab", "abc", "\"}", "\",", "{\"", "12", "  ", "\n", "\xE4\xBD\xA0", "\xE4\xBD", "x\xF0\x9F"}) {
      pieces.push_back(p);
    }
    pieces.push_back("");  // <ctl>
    pieces.push_back("");  // <end>
    const int32_t n = static_cast<int32_t>(pieces.size());
    return TokenVocabulary::from_pieces(pieces, {n - 1}, {{"<ctl>", n - 2}, {"<end>", n - 1}});
  }();
  return v;
}

std::vector<std::string> sorted_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::sort(lines.begin(), lines.end());
  return lines;
}

void write_seeds(const std::string& dir) {
  for (const test::NamedGrammar& g : test::kTestGrammars) {
    const std::string path = dir + "/seed-" + g.name + ".gbnf";
    if (FILE* f = std::fopen(path.c_str(), "wb")) {
      std::fputs(g.gbnf, f);
      std::fclose(f);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("EDGELLM_FUZZ_SEED_DIR"); dir && *dir) write_seeds(dir);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 8192) return 0;
  const std::string text(reinterpret_cast<const char*>(data), size);
  const TokenVocabulary* v = vocab().get();
  const TokenResolver resolve = [v](std::string_view t) { return v->find_token(t); };
  Grammar g;
  try {
    g = parse_gbnf(text, resolve);
  } catch (const Error&) {
    return 0;
  }
  const std::string printed = print_gbnf(g);
  const Grammar again = parse_gbnf(printed);  // must not throw
  if (sorted_lines(print_gbnf(again)) != sorted_lines(printed)) std::abort();

  CompileOptions options;
  options.limits.max_nfa_states = 20000;
  options.limits.max_dfa_states = 5000;
  std::shared_ptr<const CompiledGrammar> cg;
  try {
    cg = CompiledGrammar::compile(g, vocab(), options);
  } catch (const Error&) {
    return 0;
  }
  GrammarMatcher m(cg, 2);
  TokenBitset mask;
  // Drive a few steps with the input's bytes choosing among the allowed tokens.
  for (size_t step = 0; step < 4; ++step) {
    m.fill_next_token_mask(mask);
    std::vector<int32_t> allowed;
    for (int32_t id = 0; id < v->size(); ++id) {
      const bool brute = m.accept_token(id) && m.rollback(1);
      if (brute != mask.test(id) || brute != m.allows(id)) std::abort();
      if (brute && !v->is_eog(id)) allowed.push_back(id);
    }
    if (allowed.empty()) break;
    const uint8_t pick = size > step ? data[size - 1 - step] : 0;
    if (!m.accept_token(allowed[pick % allowed.size()])) std::abort();
  }
  return 0;
}
