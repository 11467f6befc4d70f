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
// A state's mask is computed by walking the vocabulary trie from it (a rejected prefix skips
// every token that extends it), once per grammar: at compile time for every state
// (CompileOptions::precompute, or precompute_all() later), or lazily the first time a matcher
// needs the state's full mask. Lazy is the default: compile() then only builds the automata
// (milliseconds), a request that never needs a full mask never pays for one (the sampler checks
// its pick with allows(), which runs that one token through the automata), and the states a
// generation does reach are computed once and kept for every later request of the grammar. A
// state of the start rule that no rule calls knows its context (the end of the output), so it
// has no uncertain tokens at all.
//
// Thread-safe: the automata are immutable after compile(); a lazily computed mask is published
// once with release/acquire ordering (two threads may both compute it; one result is kept).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
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
  // Compute every state's mask during compile() instead of on first use.
  bool precompute = false;
  // Threads for precompute (compile() and precompute_all()); 0 or 1: the calling thread only.
  int n_threads = 1;
};

struct CompileStats {
  AutomatonStats automaton;
  double automaton_ms = 0;       // inlining, NFA, DFA, analysis
  uint32_t input_states = 0;     // states that can hold a parse (each gets a mask when needed)
  // Filled by precompute (compile-time or precompute_all()):
  double masks_ms = 0;           // the per-state token walks (wall time)
  uint32_t mask_states = 0;      // masks computed
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
  // The state's mask (computed now if it was not yet); only states with input edges have one.
  const StateMask& mask(uint32_t state) const;
  // The mask if it is computed already, else null (no computation).
  const StateMask* mask_if_ready(uint32_t state) const {
    return masks_[state].load(std::memory_order_acquire);
  }
  // Computes every missing mask now (n_threads as in CompileOptions) and fills the precompute
  // fields of stats() (only from the compile-time run or the first call).
  void precompute_all(int n_threads = 1) const;
  // Masks computed so far (lazily or not) and their memory.
  uint32_t masks_ready() const { return ready_.load(std::memory_order_relaxed); }
  uint64_t masks_bytes() const { return ready_bytes_.load(std::memory_order_relaxed); }
  CompileStats stats() const {
    std::lock_guard<std::mutex> lock(stats_mutex_);
    return stats_;
  }
  // The grammar as GBNF (print_gbnf of what was compiled), for diagnostics.
  const std::string& gbnf() const { return gbnf_; }

  // Throws Error(kInvalidArgument) for grammars the automata refuse (left recursion, too large),
  // and for a token element naming an id outside the vocabulary.
  static std::shared_ptr<const CompiledGrammar> compile(const Grammar& grammar,
                                                        std::shared_ptr<const TokenVocabulary> vocab,
                                                        const CompileOptions& options = {});

 private:
  CompiledGrammar() = default;
  const StateMask& publish(uint32_t state, StateMask&& m) const;

  Automaton automaton_;
  std::shared_ptr<const TokenVocabulary> vocab_;
  // Owned masks, published once each (see above); freed with the grammar.
  mutable std::unique_ptr<std::atomic<const StateMask*>[]> masks_;
  mutable std::atomic<uint32_t> ready_{0};
  mutable std::atomic<uint64_t> ready_bytes_{0};
  mutable std::mutex stats_mutex_;
  mutable CompileStats stats_;        // guarded by stats_mutex_
  mutable bool precomputed_ = false;  // guarded by stats_mutex_
  std::string gbnf_;

 public:
  ~CompiledGrammar();
  CompiledGrammar(const CompiledGrammar&) = delete;
  CompiledGrammar& operator=(const CompiledGrammar&) = delete;
};

}  // namespace edgellm::grammar
