// libFuzzer target: arbitrary bytes as a JSON Schema. Conversion must produce GBNF or throw
// edgellm::Error; the GBNF it produces must always parse and compile (small limits may refuse
// it with Error: "too large"); and random sentences of the grammar must be JSON that
// edgellm::Json parses: a schema's grammar never allows text that is not JSON.
//
// Seeds: tests/fuzz/corpus/json_schema/ (LLVMFuzzerInitialize writes the schemas of
// tests/grammar/test_json_schema.cpp's kinds into EDGELLM_FUZZ_SEED_DIR; scripts/fuzz-long.sh
// keeps what coverage found).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "../grammar/naive_grammar.h"
#include "core/error.h"
#include "core/json.h"
#include "grammar/compiled_grammar.h"
#include "grammar/gbnf_parser.h"
#include "grammar/grammar_matcher.h"
#include "grammar/json_schema.h"

namespace {

using namespace edgellm;
using namespace edgellm::grammar;

const char* const kSeeds[] = {
    R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 8}, "age": {"type": "integer", "minimum": 0, "maximum": 130}}, "required": ["name"]})",
    R"({"type": "array", "items": {"enum": ["a", 1, null, {"k": [true]}]}, "minItems": 1, "maxItems": 3})",
    R"({"anyOf": [{"type": "number", "exclusiveMinimum": -2, "maximum": 5}, {"type": "string", "pattern": "^[a-z]+(-\\d{2})?$"}]})",
    R"({"$ref": "#/$defs/n", "$defs": {"n": {"type": "object", "properties": {"k": {"type": "array", "items": {"$ref": "#/$defs/n"}}}}}})",
    R"({"type": "object", "additionalProperties": {"type": "boolean"}, "properties": {"x": {"const": "y"}}})",
    R"({"type": "string", "format": "date-time"})",
    R"({"type": ["integer", "null"], "minimum": -100000, "maximum": 99999})",
    R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}], "items": false})",
};

void write_seeds(const std::string& dir) {
  for (size_t i = 0; i < sizeof kSeeds / sizeof kSeeds[0]; ++i) {
    const std::string path = dir + "/seed-" + std::to_string(i) + ".json";
    if (FILE* f = std::fopen(path.c_str(), "wb")) {
      std::fputs(kSeeds[i], f);
      std::fclose(f);
    }
  }
}

const std::shared_ptr<const TokenVocabulary>& byte_vocab() {
  static const std::shared_ptr<const TokenVocabulary> v = [] {
    std::vector<std::string> pieces;
    for (int b = 0; b < 256; ++b) pieces.push_back(std::string(1, static_cast<char>(b)));
    pieces.push_back("");
    return TokenVocabulary::from_pieces(pieces, {256});
  }();
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("EDGELLM_FUZZ_SEED_DIR"); dir && *dir) write_seeds(dir);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 16384) return 0;
  Json schema;
  try {
    schema = Json::parse(std::string_view(reinterpret_cast<const char*>(data), size), 64);
  } catch (const Error&) {
    return 0;
  }
  std::string gbnf;
  try {
    gbnf = json_schema_to_gbnf(schema);
  } catch (const Error&) {
    return 0;
  }
  const Grammar g = parse_gbnf(gbnf);  // the converter's output always parses
  CompileOptions options;
  options.limits.max_nfa_states = 50000;
  options.limits.max_dfa_states = 10000;
  std::shared_ptr<const CompiledGrammar> cg;
  try {
    cg = CompiledGrammar::compile(g, byte_vocab(), options);
  } catch (const Error& e) {
    if (std::string(e.what()).find("too large") == std::string::npos) std::abort();  // only size may refuse it
    return 0;
  }
  std::mt19937 rng(static_cast<uint32_t>(size));
  const grammar::test::SentenceGenerator sentences(g);
  for (int i = 0; i < 4; ++i) {
    const std::string s = sentences(rng);
    GrammarMatcher m(cg);
    if (!m.accept_bytes(s) || !m.can_end()) continue;  // the depth budget cut it short
    try {
      Json::parse(s, 4096);
    } catch (const Error&) {
      std::fprintf(stderr, "grammar sentence is not JSON: %s\n", s.c_str());
      std::abort();
    }
  }
  return 0;
}
