#include "grammar/grammar_matcher.h"

#include <algorithm>

#include "core/error.h"

namespace edgellm::grammar {

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar, size_t max_rollback)
    : grammar_(std::move(grammar)),
      vocab_(grammar_->vocabulary()),
      machine_(grammar_->automaton()),
      max_rollback_(std::max<size_t>(1, max_rollback)) {
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

std::string_view GrammarMatcher::token_bytes(int32_t id) const {
  std::string_view b = vocab_.bytes(id);
  if (strip_space_ && !b.empty() && b[0] == ' ') b.remove_prefix(1);
  return b;
}

void GrammarMatcher::commit(std::vector<Head>&& next, size_t mark) {
  history_.push_back({std::move(heads_), mark, ended_, strip_space_});
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
  const bool has_text = !vocab_.bytes(id).empty();
  const std::string_view bytes = token_bytes(id);
  if (!bytes.empty()) {
    run_bytes(heads_, bytes, next);
  } else if (has_text) {
    next = heads_;  // a lone space that the detokenizer drops: no text, nothing to match
  }
  if (next.empty()) {
    machine_.undo(mark);
    return false;
  }
  commit(std::move(next), mark);
  if (has_text) strip_space_ = false;
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
    strip_space_ = s.strip_space;
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
  // One token: the state's mask answers when it is computed; otherwise running the token
  // through the automata costs less than computing the mask.
  const StateMask* m = grammar_->mask_if_ready(h.state);
  if (m == nullptr) return check_from_head(h, id);
  if (m->accepts(id)) return true;
  return m->is_uncertain(id) && check_from_head(h, id);
}

void GrammarMatcher::add_uncertain(const Head& h, const StateMask& m, TokenBitset& mask) {
  // The uncertain tokens in byte order: each one resumes from the parse positions after the
  // prefix it shares with the one before (levels_[d] = positions after d bytes), and a prefix
  // that died rejects every following token that shares it.
  const size_t mark0 = machine_.mark();
  if (levels_.size() < vocab_.max_token_bytes() + 1) {
    levels_.resize(vocab_.max_token_bytes() + 1);
    level_marks_.resize(vocab_.max_token_bytes() + 1);
  }
  levels_[0].assign(1, h);
  level_marks_[0] = mark0;
  size_t valid = 0;               // levels_[0..valid] hold the previous token's prefix
  size_t dead = SIZE_MAX;         // levels_[dead] is empty: prefixes of that length are rejected
  for (size_t k = 0; k < m.uncertain_walk.size(); ++k) {
    const int32_t id = m.uncertain_walk[k];
    const size_t lcp = m.uncertain_lcp[k];
    if (lcp >= dead) continue;  // shares the dead prefix
    dead = SIZE_MAX;
    if (mask.test(id)) {
      valid = std::min(valid, lcp);
      continue;
    }
    const std::string_view b = vocab_.bytes(id);
    size_t d = std::min(valid, lcp);
    machine_.undo(level_marks_[d]);
    for (; d < b.size(); ++d) {
      machine_.step_byte(levels_[d], static_cast<uint8_t>(b[d]), levels_[d + 1]);
      level_marks_[d + 1] = machine_.mark();
      if (levels_[d + 1].empty()) {
        dead = d + 1;
        break;
      }
    }
    valid = dead == SIZE_MAX ? b.size() : dead;
    if (dead == SIZE_MAX) mask.set(id);
  }
  machine_.undo(mark0);
}

bool GrammarMatcher::allows_slow(int32_t id) {
  if (accept_token(id)) {
    rollback(1);
    return true;
  }
  return false;
}

bool GrammarMatcher::allows(int32_t id) {
  if (id < 0 || id >= vocab_.size() || ended_) return false;
  if (vocab_.is_eog(id)) return can_end();
  if (strip_space_) return allows_slow(id);
  for (const Head& h : heads_) {
    if (head_allows(h, id)) return true;
  }
  return false;
}

void GrammarMatcher::fill_next_token_mask(TokenBitset& mask) {
  if (mask.size() != vocab_.size()) mask.resize(vocab_.size());
  mask.clear_all();
  if (ended_) return;
  if (strip_space_) {
    for (int32_t id = 0; id < vocab_.size(); ++id) {
      if (allows(id)) mask.set(id);
    }
    return;
  }
  for (const Head& h : heads_) {
    if (h.state == kAcceptState) {
      for (int32_t id : vocab_.eog_ids()) mask.set(id);
      continue;
    }
    const StateMask& m = grammar_->mask(h.state);
    switch (m.form) {
      case StateMask::Form::kAccepted:
        for (int32_t id : m.ids) mask.set(id);
        break;
      case StateMask::Form::kRejected:
        if (tmp_.size() != vocab_.size()) tmp_.resize(vocab_.size());
        tmp_.set_all();
        for (int32_t id : m.ids) tmp_.reset(id);
        for (int32_t id : m.uncertain) tmp_.reset(id);
        mask.or_with(tmp_);
        break;
      case StateMask::Form::kBitset: {
        std::vector<uint64_t>& w = mask.words();
        for (size_t i = 0; i < w.size(); ++i) w[i] |= m.bits[i];
        break;
      }
    }
    if (!m.uncertain_walk.empty()) add_uncertain(h, m, mask);
  }
}

}  // namespace edgellm::grammar
