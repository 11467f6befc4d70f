#include "grammar/stack_machine.h"

#include <algorithm>

namespace edgellm::grammar {

StackMachine::StackMachine(const Automaton& a) : a_(a) { rehash(1024); }

void StackMachine::set_bottom(Bottom bottom, uint32_t bottom_rule) {
  bottom_ = bottom;
  bottom_rule_ = bottom_rule;
}

void StackMachine::clear() {
  frames_.clear();
  std::fill(buckets_.begin(), buckets_.end(), -1);
}

void StackMachine::rehash(size_t n_buckets) {
  buckets_.assign(n_buckets, -1);
  // Re-inserting in id order keeps the newest frame of every chain at its head, which undo()
  // relies on.
  for (size_t i = 0; i < frames_.size(); ++i) {
    Frame& f = frames_[i];
    const size_t b = bucket(f.parent, f.ret);
    f.next = buckets_[b];
    buckets_[b] = static_cast<int32_t>(i);
  }
}

int32_t StackMachine::push(int32_t parent, uint32_t ret) {
  const size_t b = bucket(parent, ret);
  for (int32_t i = buckets_[b]; i >= 0; i = frames_[static_cast<size_t>(i)].next) {
    const Frame& f = frames_[static_cast<size_t>(i)];
    if (f.parent == parent && f.ret == ret) return i;
  }
  const auto id = static_cast<int32_t>(frames_.size());
  frames_.push_back({ret, parent, buckets_[b]});
  buckets_[b] = id;
  if (frames_.size() > buckets_.size()) rehash(buckets_.size() * 2);
  return id;
}

void StackMachine::undo(size_t mark) {
  while (frames_.size() > mark) {
    const Frame& f = frames_.back();
    const size_t b = bucket(f.parent, f.ret);
    buckets_[b] = f.next;  // the newest frame is the head of its chain
    frames_.pop_back();
  }
}

void StackMachine::add_unique(std::vector<Head>& out, Head h) {
  for (const Head& x : out) {
    if (x == h) return;
  }
  out.push_back(h);
}

void StackMachine::closure(int32_t stack, uint32_t state, std::vector<Head>& out) {
  const AutomatonState& first = a_.states[state];
  if (first.quiet) {  // the common case: a state inside a rule, nothing to expand
    if (first.has_input_edges()) add_unique(out, {stack, state});
    return;
  }
  todo_.clear();
  seen_.clear();
  todo_.push_back({stack, state});
  while (!todo_.empty()) {
    const Head h = todo_.back();
    todo_.pop_back();
    if (std::find(seen_.begin(), seen_.end(), h) != seen_.end()) continue;
    seen_.push_back(h);
    const AutomatonState& st = a_.states[h.state];
    if (st.has_input_edges()) add_unique(out, h);
    for (uint32_t i = st.rules_begin; i < st.rules_end; ++i) {
      const RuleEdge& e = a_.rule_edges[i];
      const int32_t k = a_.states[e.target].pop_only ? h.stack : push(h.stack, e.target);
      todo_.push_back({k, a_.rule_start[e.rule]});
    }
    if (st.final) {
      if (h.stack < 0) {
        add_unique(out, {-1, bottom_ == Bottom::kEnd ? kAcceptState : kPoppedState});
      } else {
        const Frame& f = frames_[static_cast<size_t>(h.stack)];
        todo_.push_back({f.parent, f.ret});
      }
    }
  }
}

void StackMachine::step_byte(const std::vector<Head>& in, uint8_t byte, std::vector<Head>& out) {
  out.clear();
  for (const Head& h : in) {
    if (h.state >= kAcceptState) {
      if (h.state == kUncertainState) {
        add_unique(out, h);
      } else if (h.state == kPoppedState && bottom_ == Bottom::kUnknownCaller &&
                 byteset_has(a_.rule_follow[bottom_rule_], byte)) {
        add_unique(out, {-1, kUncertainState});
      }
      continue;  // kAccept: nothing may follow the end
    }
    const uint32_t t = a_.byte_target(h.state, byte);
    if (t == Automaton::kNoState) continue;
    closure(h.stack, t, out);
  }
}

void StackMachine::step_token_edges(const std::vector<Head>& in, int32_t token, std::vector<Head>& out) {
  for (const Head& h : in) {
    if (h.state >= kAcceptState) continue;
    const AutomatonState& st = a_.states[h.state];
    for (uint32_t i = st.tokens_begin; i < st.tokens_end; ++i) {
      const TokenEdge& e = a_.token_edges[i];
      if (e.negated ? token != e.token : token == e.token) closure(h.stack, e.target, out);
    }
  }
}

}  // namespace edgellm::grammar
