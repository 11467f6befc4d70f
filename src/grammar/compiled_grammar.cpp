#include "grammar/compiled_grammar.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <thread>

#include "core/error.h"
#include "engine/token_bitset.h"
#include "grammar/gbnf_parser.h"
#include "grammar/stack_machine.h"

namespace edgellm::grammar {

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void check_token_ids(const Expr& e, int32_t n_vocab) {
  if (e.kind == Expr::Kind::kToken) {
    require(e.token >= 0 && e.token < n_vocab, ErrorCode::kInvalidArgument, [&] {
      return "grammar: token id " + std::to_string(e.token) + " is outside the vocabulary [0, " +
             std::to_string(n_vocab) + ")";
    });
  }
  for (const Expr& i : e.items) check_token_ids(i, n_vocab);
}

// Walks the vocabulary trie from one automaton state (see compiled_grammar.h).
class MaskWalker {
 public:
  MaskWalker(const Automaton& a, const TokenVocabulary& v) : a_(a), v_(v), m_(a) {
    accepted_.resize(v.size());
    const size_t depth = v.max_token_bytes() + 1;
    levels_.resize(depth);
    marks_.resize(depth, 0);
  }

  StateMask compute(uint32_t state, uint64_t& steps) {
    const AutomatonState& st = a_.states[state];
    const bool knows_end = st.rule == a_.root && !a_.rule_called[a_.root];
    m_.clear();
    m_.set_bottom(knows_end ? StackMachine::Bottom::kEnd : StackMachine::Bottom::kUnknownCaller, st.rule);
    accepted_.clear_all();
    uncertain_.clear();

    for (uint32_t i = st.tokens_begin; i < st.tokens_end; ++i) {
      const TokenEdge& e = a_.token_edges[i];
      if (e.negated) {
        for (int32_t t = 0; t < v_.size(); ++t) {
          if (t != e.token && !v_.is_eog(t)) accepted_.set(t);
        }
      } else if (!v_.is_eog(e.token)) {
        accepted_.set(e.token);
      }
    }

    const std::vector<TrieNode>& nodes = v_.trie();
    const std::vector<int32_t>& tokens = v_.trie_tokens();
    const size_t n = v_.trie_size();
    levels_[0].assign(1, Head{-1, state});
    marks_[0] = m_.mark();
    size_t i = 0;
    while (i < n) {
      const TrieNode& nd = nodes[i];
      const size_t d = nd.depth;
      m_.undo(marks_[d - 1]);
      std::vector<Head>& level = levels_[d];
      m_.step_byte(levels_[d - 1], nd.byte, level);
      marks_[d] = m_.mark();
      ++steps;
      if (level.empty()) {
        i = nd.subtree_end;
        continue;
      }
      bool alive = false, uncertain = false;
      for (const Head& h : level) {
        if (h.state == kUncertainState) {
          uncertain = true;
        } else {
          alive = true;  // a real state, or the rule / the output ended exactly here
        }
      }
      const uint32_t own_end = nodes[i + 1].tokens_begin;
      if (alive) {
        for (uint32_t t = nd.tokens_begin; t < own_end; ++t) accepted_.set(tokens[t]);
      } else {
        for (uint32_t t = nd.tokens_begin; t < own_end; ++t) uncertain_.push_back(tokens[t]);
      }
      bool continues = false;
      for (const Head& h : level) continues |= h.state < kAcceptState || h.state == kPoppedState;
      if (!continues) {
        // Only "past the end" paths remain: every extension is uncertain (kUncertain) or
        // rejected (kAccept: nothing may follow the end).
        if (uncertain) {
          const uint32_t sub_end = nodes[nd.subtree_end].tokens_begin;
          for (uint32_t t = own_end; t < sub_end; ++t) uncertain_.push_back(tokens[t]);
        }
        i = nd.subtree_end;
        continue;
      }
      ++i;
    }

    StateMask out;
    // uncertain_ is in trie order: keep that order for the run-time walk, with prefix lengths.
    out.uncertain_walk = uncertain_;
    out.uncertain_lcp.resize(uncertain_.size());
    std::string_view prev;
    for (size_t k = 0; k < uncertain_.size(); ++k) {
      const std::string_view b = v_.bytes(uncertain_[k]);
      size_t l = 0;
      while (l < prev.size() && l < b.size() && prev[l] == b[l]) ++l;
      out.uncertain_lcp[k] = static_cast<uint16_t>(l);
      prev = b;
    }
    std::sort(uncertain_.begin(), uncertain_.end());
    out.uncertain = uncertain_;
    const size_t n_vocab = static_cast<size_t>(v_.size());
    const size_t n_acc = accepted_.count();
    const size_t n_rej = n_vocab - n_acc - uncertain_.size();
    const size_t dense = n_vocab / 32;
    if (n_acc <= dense) {
      out.form = StateMask::Form::kAccepted;
      out.ids.reserve(n_acc);
      accepted_.for_each([&](int32_t t) { out.ids.push_back(t); });
    } else if (n_rej <= dense) {
      out.form = StateMask::Form::kRejected;
      out.ids.reserve(n_rej);
      size_t u = 0;
      for (int32_t t = 0; t < v_.size(); ++t) {
        if (accepted_.test(t)) continue;
        if (u < uncertain_.size() && uncertain_[u] == t) {
          ++u;
          continue;
        }
        out.ids.push_back(t);
      }
    } else {
      out.form = StateMask::Form::kBitset;
      out.bits = accepted_.words();
    }
    return out;
  }

 private:
  const Automaton& a_;
  const TokenVocabulary& v_;
  StackMachine m_;
  TokenBitset accepted_;
  std::vector<int32_t> uncertain_;
  std::vector<std::vector<Head>> levels_;
  std::vector<size_t> marks_;
};

}  // namespace

bool StateMask::accepts(int32_t id) const {
  switch (form) {
    case Form::kAccepted: return std::binary_search(ids.begin(), ids.end(), id);
    case Form::kRejected:
      return !std::binary_search(ids.begin(), ids.end(), id) && !is_uncertain(id);
    case Form::kBitset: return (bits[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1;
  }
  return false;
}

bool StateMask::is_uncertain(int32_t id) const { return std::binary_search(uncertain.begin(), uncertain.end(), id); }

size_t StateMask::memory_bytes() const {
  return (ids.size() + uncertain.size() + uncertain_walk.size()) * sizeof(int32_t) + bits.size() * sizeof(uint64_t) +
         uncertain_lcp.size() * sizeof(uint16_t);
}

std::shared_ptr<const CompiledGrammar> CompiledGrammar::compile(const Grammar& grammar,
                                                                std::shared_ptr<const TokenVocabulary> vocab,
                                                                const CompileOptions& options) {
  require(vocab != nullptr, ErrorCode::kInvalidArgument, "grammar: no vocabulary to compile for");
  for (const Rule& r : grammar.rules) check_token_ids(r.body, vocab->size());
  std::shared_ptr<CompiledGrammar> g(new CompiledGrammar());
  const auto t0 = std::chrono::steady_clock::now();
  g->automaton_ = Automaton::build(grammar, options.limits);
  g->stats_.automaton = g->automaton_.stats;
  g->stats_.automaton_ms = ms_since(t0);
  g->vocab_ = std::move(vocab);
  g->gbnf_ = print_gbnf(grammar);
  const size_t n = g->automaton_.states.size();
  g->masks_ = std::make_unique<std::atomic<const StateMask*>[]>(n);
  for (size_t s = 0; s < n; ++s) {
    g->masks_[s].store(nullptr, std::memory_order_relaxed);
    g->stats_.input_states += g->automaton_.states[s].has_input_edges() ? 1 : 0;
  }
  if (options.precompute) g->precompute_all(options.n_threads);
  return g;
}

CompiledGrammar::~CompiledGrammar() {
  if (!masks_) return;
  for (size_t s = 0; s < automaton_.states.size(); ++s) delete masks_[s].load(std::memory_order_acquire);
}

const StateMask& CompiledGrammar::publish(uint32_t state, StateMask&& m) const {
  auto* fresh = new StateMask(std::move(m));
  const StateMask* expected = nullptr;
  if (masks_[state].compare_exchange_strong(expected, fresh, std::memory_order_acq_rel, std::memory_order_acquire)) {
    ready_.fetch_add(1, std::memory_order_relaxed);
    ready_bytes_.fetch_add(fresh->memory_bytes(), std::memory_order_relaxed);
    return *fresh;
  }
  delete fresh;  // another thread published it first
  return *expected;
}

const StateMask& CompiledGrammar::mask(uint32_t state) const {
  if (const StateMask* m = masks_[state].load(std::memory_order_acquire)) return *m;
  MaskWalker walker(automaton_, *vocab_);
  uint64_t steps = 0;
  return publish(state, walker.compute(state, steps));
}

void CompiledGrammar::precompute_all(int n_threads) const {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<uint32_t> pending;
  for (uint32_t s = 0; s < automaton_.states.size(); ++s) {
    if (automaton_.states[s].has_input_edges() && mask_if_ready(s) == nullptr) pending.push_back(s);
  }
  std::atomic<size_t> next{0};
  std::atomic<uint64_t> steps{0};
  const auto work = [&] {
    MaskWalker walker(automaton_, *vocab_);
    uint64_t my_steps = 0;
    for (size_t i = next.fetch_add(1); i < pending.size(); i = next.fetch_add(1)) {
      if (mask_if_ready(pending[i]) == nullptr) publish(pending[i], walker.compute(pending[i], my_steps));
    }
    steps.fetch_add(my_steps);
  };
  const int threads = std::max(1, std::min<int>(n_threads, static_cast<int>(pending.size())));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  std::lock_guard<std::mutex> lock(stats_mutex_);
  if (precomputed_) return;
  precomputed_ = true;
  stats_.masks_ms = ms_since(t0);
  stats_.trie_steps = steps.load();
  for (uint32_t s = 0; s < automaton_.states.size(); ++s) {
    const StateMask* m = mask_if_ready(s);
    if (m == nullptr) continue;
    stats_.mask_states++;
    stats_.mask_bytes += m->memory_bytes();
    stats_.uncertain_tokens += m->uncertain.size();
    stats_.max_uncertain = std::max<uint32_t>(stats_.max_uncertain, static_cast<uint32_t>(m->uncertain.size()));
  }
}

}  // namespace edgellm::grammar
