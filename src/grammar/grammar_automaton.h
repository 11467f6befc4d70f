// A grammar as byte-level automata: one deterministic automaton per rule that survives inlining,
// whose edges consume a byte range, a whole token, or a call of another rule. A stack of return
// states (stack_machine.h) runs them: a pushdown automaton over bytes.
//
// Built from a Grammar in three steps:
// 1. inlining: a rule that is not recursive is copied into the rules that use it when that is
//    cheap (it is used once, or it is small and has no wide character class). Repetition,
//    groups and inlined rules then become loops and branches inside one automaton, so matching
//    `"\"" char* "\""` or a whitespace rule is one table step per byte, not a push and a pop;
// 2. Thompson construction of an NFA per kept rule (literals as byte chains, classes as UTF-8
//    byte patterns, utf8_ranges.h), then the subset construction to a DFA: from every state at
//    most one byte edge matches a byte;
// 3. analysis: which rules can match the empty string, left recursion (refused, as in llama.cpp),
//    and per rule the bytes that can follow it in any context (FOLLOW), which lets the mask
//    precomputation reject a token that leaves a rule into a byte no caller accepts.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "grammar/grammar_ast.h"

namespace edgellm::grammar {

struct ByteEdge {
  uint8_t lo = 0;
  uint8_t hi = 0;
  uint32_t target = 0;
};

struct RuleEdge {
  uint32_t rule = 0;    // automaton rule index
  uint32_t target = 0;  // state to continue from when the rule is done (the return state)
};

struct TokenEdge {
  int32_t token = -1;
  bool negated = false;  // any token except `token`
  uint32_t target = 0;
};

struct AutomatonState {
  uint32_t rule = 0;
  uint32_t bytes_begin = 0, bytes_end = 0;    // ByteEdges sorted by lo, disjoint
  uint32_t rules_begin = 0, rules_end = 0;
  uint32_t tokens_begin = 0, tokens_end = 0;
  bool final = false;     // the rule may end here
  // Derived flags for the stack machine's fast paths:
  bool quiet = false;     // not final and no rule edges: nothing to expand after reaching it
  bool pop_only = false;  // final with no edges at all: returning here only pops (a tail call)
  bool has_input_edges() const { return bytes_end > bytes_begin || tokens_end > tokens_begin; }
};

using ByteSet = std::array<uint64_t, 4>;
inline bool byteset_has(const ByteSet& s, uint8_t b) { return (s[b >> 6] >> (b & 63)) & 1; }
inline void byteset_add(ByteSet& s, uint8_t b) { s[b >> 6] |= uint64_t{1} << (b & 63); }

struct AutomatonLimits {
  uint32_t max_nfa_states = 2'000'000;  // over all rules, after inlining and repetition
  uint32_t max_dfa_states = 200'000;  // bounds the time an ambiguous grammar can take (subset blow-up)
  // Inlining: a non-recursive rule used more than once is copied only up to this many NFA
  // states, and not when it loops over a wide character class (>= 64 code points: a string
  // body), which stays one rule shared by its callers.
  uint32_t inline_max_states = 256;
};

struct AutomatonStats {
  uint32_t rules_in = 0;        // rules of the Grammar
  uint32_t rules_kept = 0;      // rules with an automaton of their own
  uint32_t nfa_states = 0;
  uint32_t dfa_states = 0;
};

class Automaton {
 public:
  // Throws Error(kInvalidArgument) for left recursion (naming the rule) and
  // Error(kInvalidArgument) "grammar too large" when the limits are exceeded.
  static Automaton build(const Grammar& grammar, const AutomatonLimits& limits = {});

  std::vector<AutomatonState> states;
  std::vector<ByteEdge> byte_edges;
  std::vector<RuleEdge> rule_edges;
  std::vector<TokenEdge> token_edges;
  std::vector<uint32_t> rule_start;       // per automaton rule: its start state
  std::vector<std::string> rule_names;    // per automaton rule
  std::vector<bool> rule_nullable;        // per automaton rule: may match the empty string
  std::vector<bool> rule_called;          // per automaton rule: some rule edge calls it
  std::vector<ByteSet> rule_follow;       // per automaton rule: bytes that may follow it
  uint32_t root = 0;
  AutomatonStats stats;

  // Byte classes: bytes no edge tells apart share a class (JSON grammars: ~30 of 256), and
  // `next_by_class` [state][class] is the byte transition table (absent for automata whose table
  // would exceed kMaxDenseEntries; then the edges are scanned).
  std::array<uint8_t, 256> byte_class{};
  uint32_t n_classes = 0;
  std::vector<uint32_t> next_by_class;
  static constexpr size_t kMaxDenseEntries = size_t{4} << 20;

  const AutomatonState& state(uint32_t s) const { return states[s]; }
  // The target of the byte edge of state s that accepts b, or kNoState.
  static constexpr uint32_t kNoState = 0xFFFFFFFFu;
  uint32_t byte_target(uint32_t s, uint8_t b) const {
    if (!next_by_class.empty()) return next_by_class[static_cast<size_t>(s) * n_classes + byte_class[b]];
    const AutomatonState& st = states[s];
    for (uint32_t i = st.bytes_begin; i < st.bytes_end; ++i) {
      const ByteEdge& e = byte_edges[i];
      if (b < e.lo) break;
      if (b <= e.hi) return e.target;
    }
    return kNoState;
  }
};

}  // namespace edgellm::grammar
