// One compiled grammar shared by concurrent sequences: matchers on four threads walk the same
// lazily masked grammar at once, so the same states' masks are computed and published
// concurrently (compare-and-swap of the mask pointer; the losing thread's copy is dropped), while
// the GrammarCompiler's cache is hit and filled from every thread. Every mask must equal the one
// of a grammar precomputed on one thread, and TSan (make test-tsan, area "grammar") must see no
// race.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "core/json.h"
#include "grammar/compiled_grammar.h"
#include "grammar/gbnf_parser.h"
#include "grammar/grammar_compiler.h"
#include "grammar/grammar_matcher.h"
#include "grammar/json_schema.h"
#include "test_grammars.h"

namespace edgellm::grammar {
namespace {

std::shared_ptr<const TokenVocabulary> vocab() {
  // Bytes plus multi-symbol pieces, so that tokens cross rule ends (uncertain tokens).
  std::vector<std::string> pieces;
  for (int b = 0; b < 256; ++b) pieces.push_back(std::string(1, static_cast<char>(b)));
  for (const char* p : {"\"}", "\",", "{\"", "\": ", "12", "true", "null", "\"a\"", "  ", "\n  ", "],", "[{"}) pieces.push_back(p);
  pieces.push_back("");
  return TokenVocabulary::from_pieces(pieces, {static_cast<int32_t>(pieces.size() - 1)});
}

TEST(GrammarThreads, ConcurrentLazyMasksEqualPrecomputedOnes) {
  const auto v = vocab();
  const std::string gbnf = json_schema_to_gbnf(Json::parse(R"({"type": "object", "properties": {
      "a": {"type": "array", "items": {"type": "integer", "minimum": -5, "maximum": 500}, "maxItems": 4},
      "b": {"type": "string", "maxLength": 6}, "c": {"anyOf": [{"type": "null"}, {"$ref": "#"}]}}})"));
  CompileOptions pre;
  pre.precompute = true;
  const auto reference = CompiledGrammar::compile(parse_gbnf(gbnf), v, pre);
  for (int round = 0; round < 3; ++round) {
    const auto lazy = CompiledGrammar::compile(parse_gbnf(gbnf), v);
    std::atomic<int> mismatches{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        std::mt19937 rng(static_cast<uint32_t>(round * 10 + t));
        GrammarMatcher a(lazy), b(reference);
        TokenBitset ma, mb;
        for (int step = 0; step < 60; ++step) {
          a.fill_next_token_mask(ma);
          b.fill_next_token_mask(mb);
          if (ma.words() != mb.words()) ++mismatches;
          std::vector<int32_t> ids;
          ma.for_each([&](int32_t id) {
            if (!v->is_eog(id)) ids.push_back(id);
          });
          if (ids.empty()) break;
          const int32_t pick = ids[rng() % ids.size()];
          if (!a.accept_token(pick) || !b.accept_token(pick)) ++mismatches;
        }
      });
    }
    for (std::thread& th : threads) th.join();
    EXPECT_EQ(mismatches.load(), 0);
    EXPECT_GT(lazy->masks_ready(), 0u);
    EXPECT_LE(lazy->masks_ready(), reference->stats().mask_states);
  }
}

TEST(GrammarThreads, CompilerCacheFromManyThreads) {
  GrammarCompiler compiler(vocab(), GrammarCompilerOptions{4, {}});
  std::vector<std::thread> threads;
  std::vector<std::shared_ptr<const CompiledGrammar>> got(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      // Two threads per grammar; six grammars through a cache of four.
      const test::NamedGrammar& g = test::kTestGrammars[static_cast<size_t>(t % 6)];
      got[static_cast<size_t>(t)] = compiler.gbnf(g.gbnf);
      GrammarMatcher m(got[static_cast<size_t>(t)]);
      TokenBitset mask;
      m.fill_next_token_mask(mask);
    });
  }
  for (std::thread& th : threads) th.join();
  for (const auto& g : got) EXPECT_NE(g, nullptr);
  EXPECT_LE(compiler.cached(), 4u);
  // A cached grammar comes back as the same object.
  const auto again = compiler.gbnf(test::kTestGrammars[0].gbnf);
  EXPECT_EQ(compiler.gbnf(test::kTestGrammars[0].gbnf), again);
}

}  // namespace
}  // namespace edgellm::grammar
