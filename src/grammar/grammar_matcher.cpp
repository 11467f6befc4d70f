#include "grammar/grammar_matcher.h"

#include <algorithm>

#include "core/error.h"

namespace edgellm::grammar {

namespace {
bool contains(const std::vector<int32_t>& sorted, int32_t id) { return std::binary_search(sorted.begin(), sorted.end(), id); }
}  // namespace

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar, size_t max_rollback)
    : grammar_(std::move(grammar)),
      vocab_(grammar_->vocabulary()),
      machine_(grammar_->automaton()),
      max_rollback_(max_rollback) {
  reset();
}

void GrammarMatcher::reset() {
  machine_.clear();
  machine_.set_bottom(StackMachine::Bottom::kEnd, grammar_->automaton().root);
  heads_.clear();
  const Automaton& a = grammar_->automaton();
  machine_.closure(-1, a.rule_start[a.root], heads_);
  history_.clear();
  ended_ = false;
}

bool GrammarMatcher::can_end() const {
  if (ended_) return false;
  for (const Head& h : heads_) {
    if (h.state == kAcceptState) return true;
  }
  return false;
}

bool GrammarMatcher::is_terminated() const {
  if (ended_) return true;
  for (const Head& h : heads_) {
    if (h.state != kAcceptState) return false;
  }
  return true;
}

bool GrammarMatcher::run_bytes(const std::vector<Head>& from, std::string_view bytes, std::vector<Head>& out) {
  a_ = from;
  for (const char c : bytes) {
    machine_.step_byte(a_, static_cast<uint8_t>(c), b_);
    a_.swap(b_);
    if (a_.empty()) break;
  }
  for (const Head& h : a_) {
    if (std::find(out.begin(), out.end(), h) == out.end()) out.push_back(h);
  }
  return !a_.empty();
}

void GrammarMatcher::commit(std::vector<Head>&& next, size_t mark) {
  history_.push_back({std::move(heads_), mark, ended_});
  if (history_.size() > max_rollback_) history_.pop_front();
  heads_ = std::move(next);
}

bool GrammarMatcher::accept_token(int32_t id) {
  require(id >= 0 && id < vocab_.size(), ErrorCode::kInvalidArgument, "grammar: token id outside the vocabulary");
  if (ended_) return false;
  if (vocab_.is_eog(id)) {
    if (!can_end()) return false;
    commit(std::vector<Head>{Head{-1, kAcceptState}}, machine_.mark());
    ended_ = true;
    return true;
  }
  const size_t mark = machine_.mark();
  std::vector<Head> next;
  machine_.step_token_edges(heads_, id, next);
  const std::string_view bytes = vocab_.bytes(id);
  if (!bytes.empty()) run_bytes(heads_, bytes, next);
  if (next.empty()) {
    machine_.undo(mark);
    return false;
  }
  commit(std::move(next), mark);
  return true;
}

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
  if (ended_) return false;
  const size_t mark = machine_.mark();
  std::vector<Head> next;
  if (bytes.empty()) {
    next = heads_;
  } else if (!run_bytes(heads_, bytes, next)) {
    machine_.undo(mark);
    return false;
  }
  commit(std::move(next), mark);
  return true;
}

bool GrammarMatcher::rollback(size_t n) {
  if (n > history_.size()) return false;
  for (size_t i = 0; i < n; ++i) {
    Saved s = std::move(history_.back());
    history_.pop_back();
    heads_ = std::move(s.heads);
    ended_ = s.ended;
    // Frames made after the mark are only referenced by the heads just dropped.
    machine_.undo(s.frames_mark);
  }
  return true;
}

bool GrammarMatcher::check_from_head(const Head& h, int32_t id) {
  const size_t mark = machine_.mark();
  one_.assign(1, h);
  std::vector<Head> sink;
  bool ok = false;
  machine_.step_token_edges(one_, id, sink);
  if (!sink.empty()) {
    ok = true;
  } else {
    const std::string_view bytes = vocab_.bytes(id);
    ok = !bytes.empty() && run_bytes(one_, bytes, sink);
  }
  machine_.undo(mark);
  return ok;
}

bool GrammarMatcher::head_allows(const Head& h, int32_t id) {
  if (h.state == kAcceptState) return false;
  const StateMask& m = grammar_->mask(h.state);
  const bool listed = contains(m.ids, id);
  if (m.complement ? !listed && !contains(m.uncertain, id) : listed) return true;
  return contains(m.uncertain, id) && check_from_head(h, id);
}

bool GrammarMatcher::allows(int32_t id) {
  if (id < 0 || id >= vocab_.size() || ended_) return false;
  if (vocab_.is_eog(id)) return can_end();
  for (const Head& h : heads_) {
    if (head_allows(h, id)) return true;
  }
  return false;
}

void GrammarMatcher::fill_next_token_mask(TokenBitset& mask) {
  if (mask.size() != vocab_.size()) mask.resize(vocab_.size());
  mask.clear_all();
  if (ended_) return;
  for (const Head& h : heads_) {
    if (h.state == kAcceptState) {
      for (int32_t id : vocab_.eog_ids()) mask.set(id);
      continue;
    }
    const StateMask& m = grammar_->mask(h.state);
    if (m.complement) {
      if (tmp_.size() != vocab_.size()) tmp_.resize(vocab_.size());
      tmp_.set_all();
      for (int32_t id : m.ids) tmp_.reset(id);
      for (int32_t id : m.uncertain) tmp_.reset(id);
      mask.or_with(tmp_);
    } else {
      for (int32_t id : m.ids) mask.set(id);
    }
    for (int32_t id : m.uncertain) {
      if (!mask.test(id) && check_from_head(h, id)) mask.set(id);
    }
  }
}

}  // namespace edgellm::grammar
