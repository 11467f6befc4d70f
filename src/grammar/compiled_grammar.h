// A grammar compiled for one vocabulary: the rule automata (grammar_automaton.h) plus, for every
// automaton state a parse can wait in, the tokens that state allows whatever the stack below it
// holds (the approach of XGrammar's adaptive token mask cache):
//
//   accepted   the token's bytes run to their end inside the state's rule (or end exactly where
//              the rule ends): allowed in every context;
//   rejected   every path dies inside the rule, or leaves it into a byte no caller of the rule
//              accepts (the rule's FOLLOW set): refused in every context;
//   uncertain  the only surviving paths leave the rule with bytes left over: the matcher checks
//              these against its real stack at run time.
//
// Computed once per grammar by walking the vocabulary trie from each state (a rejected prefix
// skips every token that extends it); a state of the start rule that no rule calls knows its
// context (the end of the output), so it has no uncertain tokens at all. Per state the smaller
// of the accepted and the rejected list is stored (`complement`).
//
// Immutable after compile(): one CompiledGrammar is shared by every matcher (sequence) using it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "grammar/grammar_ast.h"
#include "grammar/grammar_automaton.h"
#include "grammar/token_vocabulary.h"

namespace edgellm::grammar {

struct StateMask {
  // How the accepted tokens are stored: a sorted list of them, a sorted list of the rejected ones
  // (every other token not uncertain is accepted), or a bitset when both lists would be long
  // (more than 1/32 of the vocabulary: the bitset is then smaller and ORs in a few microseconds).
  enum class Form : uint8_t { kAccepted, kRejected, kBitset };
  Form form = Form::kAccepted;
  std::vector<int32_t> ids;             // kAccepted / kRejected, sorted
  std::vector<uint64_t> bits;           // kBitset: the accepted tokens
  std::vector<int32_t> uncertain;       // sorted by id: decided at run time against the stack
  std::vector<int32_t> uncertain_walk;  // the same tokens in byte order (trie order) ...
  std::vector<uint16_t> uncertain_lcp;  // ... with the bytes each shares with the one before it

  // Accepted in every context (false for uncertain tokens).
  bool accepts(int32_t id) const;
  bool is_uncertain(int32_t id) const;
  size_t memory_bytes() const;
};

struct CompileOptions {
  AutomatonLimits limits;
};

struct CompileStats {
  AutomatonStats automaton;
  double automaton_ms = 0;       // inlining, NFA, DFA, analysis
  double masks_ms = 0;           // the per-state token walks
  uint32_t mask_states = 0;      // states with a precomputed mask
  uint64_t mask_bytes = 0;       // memory of the stored lists
  uint64_t uncertain_tokens = 0; // summed over states
  uint32_t max_uncertain = 0;    // the largest uncertain list of one state
  uint64_t trie_steps = 0;       // trie nodes stepped over all walks
};

class CompiledGrammar {
 public:
  const Automaton& automaton() const { return automaton_; }
  const TokenVocabulary& vocabulary() const { return *vocab_; }
  const std::shared_ptr<const TokenVocabulary>& vocabulary_ptr() const { return vocab_; }
  // The state's precomputed mask; only states with input edges have one.
  const StateMask& mask(uint32_t state) const { return masks_[state]; }
  const CompileStats& stats() const { return stats_; }
  // The grammar as GBNF (print_gbnf of what was compiled), for diagnostics.
  const std::string& gbnf() const { return gbnf_; }

  // Throws Error(kInvalidArgument) for grammars the automata refuse (left recursion, too large),
  // and for a token element naming an id outside the vocabulary.
  static std::shared_ptr<const CompiledGrammar> compile(const Grammar& grammar,
                                                        std::shared_ptr<const TokenVocabulary> vocab,
                                                        const CompileOptions& options = {});

 private:
  CompiledGrammar() = default;

  Automaton automaton_;
  std::shared_ptr<const TokenVocabulary> vocab_;
  std::vector<StateMask> masks_;
  CompileStats stats_;
  std::string gbnf_;
};

}  // namespace edgellm::grammar
