// The state of one constrained generation: where the output so far stands in the grammar, which
// tokens may come next, and accept / rollback as tokens are appended.
//
//   auto g = CompiledGrammar::compile(parse_gbnf(text), vocab);
//   GrammarMatcher m(g);
//   m.fill_next_token_mask(bits);   // allowed ids (end-of-generation ids where the grammar may end)
//   m.allows(id);                   // one id: a few lookups in the precomputed masks
//   m.accept_token(id);             // false (state unchanged) if the grammar refuses it
//   m.rollback(2);                  // undo the last two accepted tokens (speculative drafts)
//
// Tokens are matched by their bytes (TokenVocabulary), so a token may cover several grammar
// symbols, end inside one, or end inside a UTF-8 character the next token completes. Token
// elements (`<[id]>`) match by id. End-of-generation tokens are allowed exactly when the output
// so far is a complete sentence of the grammar (can_end()).
//
// Not thread-safe: one matcher per sequence, owned by one thread at a time. The CompiledGrammar
// it shares is immutable.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string_view>
#include <vector>

#include "engine/sampler.h"
#include "engine/token_bitset.h"
#include "grammar/compiled_grammar.h"
#include "grammar/stack_machine.h"

namespace edgellm::grammar {

class GrammarMatcher : public TokenConstraint {
 public:
  // max_rollback: how many accepted tokens rollback() can undo.
  explicit GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar, size_t max_rollback = 16);

  // Appends a token when the grammar allows it; returns false and changes nothing otherwise.
  // An end-of-generation token is accepted where can_end(); afterwards nothing else is.
  bool accept_token(int32_t id);
  // Appends raw bytes (no token elements can match): for tests, validators and prompts that
  // force a prefix. Returns false and changes nothing when the grammar refuses them.
  bool accept_bytes(std::string_view bytes);
  // Whether accept_token(id) would succeed; changes nothing.
  bool allows(int32_t id) override;
  // Every token accept_token would take now. `mask` is resized to the vocabulary.
  void fill_next_token_mask(TokenBitset& mask);
  void fill_allowed(TokenBitset& allowed) override { fill_next_token_mask(allowed); }

  // The streaming detokenizer drops one leading space from the first text token of an output that
  // starts a sequence (SentencePiece's space prefix). When set, the next token with text is
  // matched without that space, so the grammar sees exactly the text the caller receives. Masks
  // are then computed token by token (once per generation, on SentencePiece vocabularies).
  void set_strip_leading_space(bool on) { strip_space_ = on; }

  // The output so far is a complete sentence of the grammar (an end-of-generation token may come).
  bool can_end() const;
  // Nothing but the end can follow (the grammar is complete and cannot be extended).
  bool is_terminated() const;
  // An end-of-generation token was accepted.
  bool ended() const { return ended_; }

  // Undoes the last n accepted tokens (accept_bytes calls count as one each). Returns false and
  // changes nothing when fewer than n are remembered.
  bool rollback(size_t n);
  size_t rollback_depth() const { return history_.size(); }
  void reset();

  const CompiledGrammar& grammar() const { return *grammar_; }
  // Parse positions alive (more than one while the grammar is ambiguous).
  size_t n_heads() const { return heads_.size(); }
  // Stack frames held (grows with nesting; for memory accounting).
  size_t n_frames() const { return machine_.frames(); }

 private:
  struct Saved {
    std::vector<Head> heads;
    size_t frames_mark;
    bool ended;
    bool strip_space;
  };
  std::string_view token_bytes(int32_t id) const;
  bool allows_slow(int32_t id);
  bool run_bytes(const std::vector<Head>& from, std::string_view bytes, std::vector<Head>& out);
  bool head_allows(const Head& h, int32_t id);
  bool check_from_head(const Head& h, int32_t id);
  void add_uncertain(const Head& h, const StateMask& m, TokenBitset& mask);
  void commit(std::vector<Head>&& next, size_t mark);

  std::shared_ptr<const CompiledGrammar> grammar_;
  const TokenVocabulary& vocab_;
  StackMachine machine_;
  std::vector<Head> heads_;
  bool ended_ = false;
  bool strip_space_ = false;
  size_t max_rollback_;
  std::deque<Saved> history_;
  // scratch
  std::vector<Head> a_, b_, one_;
  std::vector<std::vector<Head>> levels_;
  std::vector<size_t> level_marks_;
  TokenBitset tmp_;
};

}  // namespace edgellm::grammar
