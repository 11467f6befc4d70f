// Runs the rule automata of grammar_automaton.h as a pushdown automaton over bytes and tokens.
//
// A parse position is a Head: the automaton state it is in plus a stack of return states
// (where to continue when the current rule ends). Several heads are alive when the grammar is
// ambiguous so far ("[0-9]+" vs "[0-9]+ \".\" [0-9]+" after "12"). Stacks are persistent: a
// Frame is (return state, parent frame), shared by every head that has it, hash-consed so that
// equal stacks have equal ids (heads compare by two integers), and kept in an arena that only
// grows while a matcher accepts input; what a mask computation or a trial adds on top is
// removed again by undo(mark) in LIFO order.
//
// Heads always sit on states with input edges (bytes or tokens); closure() expands calls of
// rules (push) and rule ends (pop) until they do. A call whose return state can only end its
// rule is a tail call: it does not push, so right recursion and repetition never grow a stack.
//
// The bottom of the stack: in a matcher it is the end of the whole output (popping the start
// rule gives the kAccept head). When the mask precomputation explores a state of rule R without
// knowing who called R, popping R gives kPopped; a byte after it is kept as kUncertain only if
// some caller can continue with it (R's FOLLOW set), otherwise the path dies.
#pragma once

#include <cstdint>
#include <vector>

#include "grammar/grammar_automaton.h"

namespace edgellm::grammar {

struct Head {
  int32_t stack = -1;   // frame id; -1: empty stack (the bottom)
  uint32_t state = 0;   // automaton state, or one of the pseudo-states below
  bool operator==(const Head&) const = default;
};

inline constexpr uint32_t kAcceptState = 0xFFFFFFF0u;     // the start rule ended: only the end may follow
inline constexpr uint32_t kPoppedState = 0xFFFFFFF1u;     // precomputation: the explored rule just ended
inline constexpr uint32_t kUncertainState = 0xFFFFFFF2u;  // precomputation: input continues past its end

class StackMachine {
 public:
  enum class Bottom {
    kEnd,         // popping the bottom rule = the whole output is complete (kAcceptState)
    kUnknownCaller,  // popping the bottom rule = unknown context (kPoppedState, FOLLOW check)
  };

  explicit StackMachine(const Automaton& a);

  void set_bottom(Bottom bottom, uint32_t bottom_rule);

  // Heads reached from (stack, state) without consuming input, appended to `out` (deduplicated).
  void closure(int32_t stack, uint32_t state, std::vector<Head>& out);
  // Every head of `in` advanced by one byte; `out` is cleared first.
  void step_byte(const std::vector<Head>& in, uint8_t byte, std::vector<Head>& out);
  // Heads of `in` advanced by one whole token through token edges (`<[id]>`, `!<[id]>`),
  // appended to `out`.
  void step_token_edges(const std::vector<Head>& in, int32_t token, std::vector<Head>& out);

  // Arena marks for undoing the frames a trial created.
  size_t mark() const { return frames_.size(); }
  void undo(size_t mark);
  // Frames alive (for memory accounting and tests).
  size_t frames() const { return frames_.size(); }
  void clear();

  const Automaton& automaton() const { return a_; }
  uint32_t frame_return(int32_t f) const { return frames_[static_cast<size_t>(f)].ret; }
  int32_t frame_parent(int32_t f) const { return frames_[static_cast<size_t>(f)].parent; }

 private:
  struct Frame {
    uint32_t ret;
    int32_t parent;
    int32_t next;  // hash chain
  };

  int32_t push(int32_t parent, uint32_t ret);
  size_t bucket(int32_t parent, uint32_t ret) const {
    const uint64_t h = (static_cast<uint64_t>(static_cast<uint32_t>(parent)) * 0x9E3779B97F4A7C15ull) ^
                       (static_cast<uint64_t>(ret) * 0xC2B2AE3D27D4EB4Full);
    return static_cast<size_t>(h >> 20) & (buckets_.size() - 1);
  }
  void rehash(size_t n_buckets);
  static void add_unique(std::vector<Head>& out, Head h);

  const Automaton& a_;
  Bottom bottom_ = Bottom::kEnd;
  uint32_t bottom_rule_ = 0;
  std::vector<Frame> frames_;
  std::vector<int32_t> buckets_;
  // closure() scratch
  std::vector<Head> todo_;
  std::vector<Head> seen_;
};

}  // namespace edgellm::grammar
