// The llama.cpp side of scripts/grammar-conformance.sh: llama.cpp's own grammar engine
// (llama-grammar.cpp of the reference build, the code behind llama-gbnf-validator) decides for
// each string whether it is a whole sentence of a GBNF grammar, exactly as test-gbnf-validator
// does: accept code point by code point, reject when no stack is left, accept at the end when a
// stack is empty. Compiled against libllama by the script; not part of EdgeLLM's build.
//
//   llamacpp-gbnf-check GRAMMAR.gbnf STRINGS    (STRINGS: hex-encoded UTF-8, one per line)
//   prints "1" / "0" per line; exit 3 when llama.cpp refuses the grammar.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "llama-grammar.h"
#include "unicode.h"

static std::string read(const char* path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s GRAMMAR STRINGS\n", argv[0]);
    return 2;
  }
  const std::string text = read(argv[1]);
  llama_grammar* proto = llama_grammar_init_impl(nullptr, text.c_str(), "root", false, nullptr, 0, nullptr, 0);
  if (proto == nullptr) return 3;
  std::istringstream lines(read(argv[2]));
  for (std::string line; std::getline(lines, line);) {
    std::string s;
    for (size_t i = 0; i + 1 < line.size(); i += 2) s += static_cast<char>(std::stoi(line.substr(i, 2), nullptr, 16));
    llama_grammar* g = llama_grammar_clone_impl(*proto);
    bool ok = true;
    for (const uint32_t cpt : unicode_cpts_from_utf8(s)) {
      llama_grammar_accept(g, cpt);
      if (llama_grammar_get_stacks(g).empty()) {
        ok = false;
        break;
      }
    }
    if (ok) {
      ok = false;
      for (const auto& stack : llama_grammar_get_stacks(g)) ok = ok || stack.empty();
    }
    std::printf("%d\n", ok ? 1 : 0);
    llama_grammar_free_impl(g);
  }
  llama_grammar_free_impl(proto);
  return 0;
}
