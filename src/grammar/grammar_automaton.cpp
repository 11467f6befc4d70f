#include "grammar/grammar_automaton.h"

#include <algorithm>
#include <functional>
#include <map>
#include <unordered_map>

#include "core/error.h"
#include "grammar/utf8_ranges.h"

namespace edgellm::grammar {

namespace {

// A character class this wide makes a rule "wide": its mask precomputation walks most of the
// vocabulary's trie, so copying the rule into every caller would repeat that walk per copy.
constexpr uint64_t kWideClass = 64;

constexpr uint64_t kSizeCap = uint64_t{1} << 40;  // saturates size estimates

uint64_t sat_add(uint64_t a, uint64_t b) { return std::min(kSizeCap, a + b); }
uint64_t sat_mul(uint64_t a, uint64_t b) { return b == 0 ? 0 : (a > kSizeCap / b ? kSizeCap : a * b); }

void collect_refs(const Expr& e, std::vector<uint32_t>& out) {
  if (e.kind == Expr::Kind::kRuleRef) out.push_back(e.rule);
  for (const Expr& i : e.items) collect_refs(i, out);
}

// --- inlining decisions -------------------------------------------------------------------------

struct RuleInfo {
  std::vector<uint32_t> refs;  // with repeats: every reference site
  bool recursive = false;
  bool inlined = false;
  bool wide = false;           // after inlining its callees
  bool loops = false;          // has an unbounded repetition (after inlining its callees)
  uint64_t size = 0;           // estimated NFA states after inlining its callees
  uint32_t uses = 0;           // reference sites in other rules' bodies
};

class Inliner {
 public:
  Inliner(const Grammar& g, const AutomatonLimits& limits) : g_(g), limits_(limits), info_(g.rules.size()) {}

  std::vector<RuleInfo> decide() {
    for (size_t r = 0; r < g_.rules.size(); ++r) collect_refs(g_.rules[r].body, info_[r].refs);
    for (size_t r = 0; r < g_.rules.size(); ++r) {
      for (uint32_t c : info_[r].refs) info_[c].uses++;
    }
    tarjan();
    // Tarjan emits SCCs callees first: every non-recursive callee is decided before its callers.
    for (const std::vector<uint32_t>& scc : sccs_) {
      for (uint32_t r : scc) {
        RuleInfo& ri = info_[r];
        ri.size = size_of(g_.rules[r].body);
        ri.wide = wide(g_.rules[r].body);
        ri.loops = loops(g_.rules[r].body);
        // A wide rule with a loop (a string body) is kept as one rule that every caller calls:
        // copied into each, its many-token states would be walked once per copy, while as a
        // rule it is left only at its end (a quote) and few tokens cross that. A wide rule
        // without a loop (one character) is copied: as a rule nearly every token would leave it
        // and be "uncertain".
        ri.inlined = !ri.recursive && r != g_.root &&
                     (ri.uses <= 1 || (ri.size <= limits_.inline_max_states && (!ri.wide || !ri.loops)));
      }
    }
    return std::move(info_);
  }

 private:
  uint64_t size_of(const Expr& e) const {
    switch (e.kind) {
      case Expr::Kind::kEmpty: return 0;
      case Expr::Kind::kLiteral: return e.text.size();
      case Expr::Kind::kChars: return 1 + 3 * e.ranges.size();
      case Expr::Kind::kAny: return 8;
      case Expr::Kind::kRuleRef: return info_[e.rule].inlined ? info_[e.rule].size : 1;
      case Expr::Kind::kToken: return 1;
      case Expr::Kind::kSeq:
      case Expr::Kind::kAlt: {
        uint64_t s = 1;
        for (const Expr& i : e.items) s = sat_add(s, sat_add(size_of(i), 1));
        return s;
      }
      case Expr::Kind::kRepeat: {
        const uint64_t copies = e.max == kUnbounded ? uint64_t{e.min} + 1 : uint64_t{e.max};
        return sat_add(2, sat_mul(sat_add(size_of(e.items.front()), 1), std::max<uint64_t>(copies, 1)));
      }
    }
    return 0;
  }

  bool wide(const Expr& e) const {
    if (e.kind == Expr::Kind::kAny) return true;
    if (e.kind == Expr::Kind::kChars) {
      uint64_t n = 0;
      for (const CodePointRange& r : e.ranges) n += uint64_t{r.hi} - r.lo + 1;
      return n >= kWideClass;
    }
    if (e.kind == Expr::Kind::kRuleRef) return info_[e.rule].inlined && info_[e.rule].wide;
    for (const Expr& i : e.items) {
      if (wide(i)) return true;
    }
    return false;
  }

  bool loops(const Expr& e) const {
    if (e.kind == Expr::Kind::kRepeat && e.max == kUnbounded) return true;
    if (e.kind == Expr::Kind::kRuleRef) return info_[e.rule].inlined && info_[e.rule].loops;
    for (const Expr& i : e.items) {
      if (loops(i)) return true;
    }
    return false;
  }

  void tarjan() {
    const size_t n = g_.rules.size();
    std::vector<int64_t> index(n, -1), low(n, 0);
    std::vector<bool> on_stack(n, false);
    std::vector<uint32_t> stack;
    int64_t counter = 0;
    // Iterative DFS: (rule, next ref position).
    for (uint32_t start = 0; start < n; ++start) {
      if (index[start] >= 0) continue;
      std::vector<std::pair<uint32_t, size_t>> dfs{{start, 0}};
      index[start] = low[start] = counter++;
      stack.push_back(start);
      on_stack[start] = true;
      while (!dfs.empty()) {
        auto& [v, next] = dfs.back();
        if (next < info_[v].refs.size()) {
          const uint32_t w = info_[v].refs[next++];
          if (index[w] < 0) {
            index[w] = low[w] = counter++;
            stack.push_back(w);
            on_stack[w] = true;
            dfs.push_back({w, 0});
          } else if (on_stack[w]) {
            low[v] = std::min(low[v], index[w]);
          }
          continue;
        }
        if (low[v] == index[v]) {
          std::vector<uint32_t> scc;
          uint32_t w = 0;
          do {
            w = stack.back();
            stack.pop_back();
            on_stack[w] = false;
            scc.push_back(w);
          } while (w != v);
          const bool self_loop = std::find(info_[v].refs.begin(), info_[v].refs.end(), v) != info_[v].refs.end();
          for (uint32_t r : scc) info_[r].recursive = scc.size() > 1 || self_loop;
          sccs_.push_back(std::move(scc));
        }
        const uint32_t done = v;
        dfs.pop_back();
        if (!dfs.empty()) low[dfs.back().first] = std::min(low[dfs.back().first], low[done]);
      }
    }
  }

  const Grammar& g_;
  const AutomatonLimits& limits_;
  std::vector<RuleInfo> info_;
  std::vector<std::vector<uint32_t>> sccs_;
};

// --- Thompson NFA -------------------------------------------------------------------------------

struct NfaState {
  std::vector<uint32_t> eps;
  std::vector<ByteEdge> bytes;
  std::vector<RuleEdge> rules;
  std::vector<TokenEdge> tokens;
};

class NfaBuilder {
 public:
  NfaBuilder(const Grammar& g, const std::vector<RuleInfo>& info, const std::vector<uint32_t>& kept_id,
             const AutomatonLimits& limits, std::vector<NfaState>& states)
      : g_(g), info_(info), kept_id_(kept_id), limits_(limits), states_(states) {}

  uint32_t new_state() {
    if (states_.size() >= limits_.max_nfa_states) {
      throw Error(ErrorCode::kInvalidArgument,
                  "grammar too large: more than " + std::to_string(limits_.max_nfa_states) +
                      " automaton states after expanding repetitions and inlining rules");
    }
    states_.emplace_back();
    return static_cast<uint32_t>(states_.size() - 1);
  }

  void byte_edge(uint32_t from, uint8_t lo, uint8_t hi, uint32_t to) { states_[from].bytes.push_back({lo, hi, to}); }

  uint32_t emit_chars(const std::vector<CodePointRange>& ranges, uint32_t start) {
    const uint32_t end = new_state();
    for (const Utf8Sequence& s : utf8_sequences(ranges)) {
      uint32_t cur = start;
      for (uint8_t i = 0; i + 1 < s.length; ++i) {
        const uint32_t next = new_state();
        byte_edge(cur, s.bytes[i].lo, s.bytes[i].hi, next);
        cur = next;
      }
      byte_edge(cur, s.bytes[s.length - 1].lo, s.bytes[s.length - 1].hi, end);
    }
    return end;
  }

  // Appends the automaton of `e` starting at `start`; returns its end state.
  uint32_t emit(const Expr& e, uint32_t start) {
    switch (e.kind) {
      case Expr::Kind::kEmpty: return start;
      case Expr::Kind::kLiteral: {
        uint32_t cur = start;
        for (const char c : e.text) {
          const uint32_t next = new_state();
          const auto b = static_cast<uint8_t>(c);
          byte_edge(cur, b, b, next);
          cur = next;
        }
        return cur;
      }
      case Expr::Kind::kChars: return emit_chars(e.ranges, start);
      case Expr::Kind::kAny: return emit_chars({{0, 0xD7FF}, {0xE000, 0x10FFFF}}, start);
      case Expr::Kind::kRuleRef: {
        if (info_[e.rule].inlined) return emit(g_.rules[e.rule].body, start);
        const uint32_t end = new_state();
        states_[start].rules.push_back({kept_id_[e.rule], end});
        return end;
      }
      case Expr::Kind::kToken: {
        const uint32_t end = new_state();
        states_[start].tokens.push_back({e.token, e.negated, end});
        return end;
      }
      case Expr::Kind::kSeq: {
        uint32_t cur = start;
        for (const Expr& i : e.items) cur = emit(i, cur);
        return cur;
      }
      case Expr::Kind::kAlt: {
        const uint32_t end = new_state();
        for (const Expr& i : e.items) {
          const uint32_t s = new_state();
          states_[start].eps.push_back(s);
          const uint32_t t = emit(i, s);
          states_[t].eps.push_back(end);
        }
        return end;
      }
      case Expr::Kind::kRepeat: {
        const Expr& item = e.items.front();
        uint32_t cur = start;
        for (uint32_t i = 0; i < e.min; ++i) cur = emit(item, cur);
        if (e.max == kUnbounded) {
          const uint32_t loop = new_state();
          states_[cur].eps.push_back(loop);
          const uint32_t s = new_state();
          states_[loop].eps.push_back(s);
          const uint32_t t = emit(item, s);
          states_[t].eps.push_back(loop);
          return loop;
        }
        // x{0,3} as (x (x (x)?)?)?: every copy may stop to the common end.
        const uint32_t end = new_state();
        states_[cur].eps.push_back(end);
        for (uint32_t i = e.min; i < e.max; ++i) {
          const uint32_t s = new_state();
          states_[cur].eps.push_back(s);
          cur = emit(item, s);
          states_[cur].eps.push_back(end);
        }
        return end;
      }
    }
    return start;
  }

 private:
  const Grammar& g_;
  const std::vector<RuleInfo>& info_;
  const std::vector<uint32_t>& kept_id_;
  const AutomatonLimits& limits_;
  std::vector<NfaState>& states_;
};

// --- subset construction ------------------------------------------------------------------------

struct VecHash {
  size_t operator()(const std::vector<uint32_t>& v) const {
    uint64_t h = 1469598103934665603ull;
    for (uint32_t x : v) h = (h ^ x) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
};

struct DfaDraft {
  std::vector<ByteEdge> bytes;
  std::vector<RuleEdge> rules;
  std::vector<TokenEdge> tokens;
  bool final = false;
  uint32_t rule = 0;
};

class Determinizer {
 public:
  Determinizer(const std::vector<NfaState>& nfa, const AutomatonLimits& limits, std::vector<DfaDraft>& dfa)
      : nfa_(nfa), limits_(limits), dfa_(dfa), mark_(nfa.size(), 0) {}

  // The DFA of one rule: returns its start state.
  uint32_t run(uint32_t rule, uint32_t nfa_start, uint32_t nfa_final) {
    ids_.clear();
    nfa_final_ = nfa_final;
    rule_ = rule;
    const uint32_t start = intern(closure({nfa_start}));
    while (!work_.empty()) {
      const auto [id, set] = std::move(work_.back());
      work_.pop_back();
      expand(id, set);
    }
    return start;
  }

 private:
  std::vector<uint32_t> closure(std::vector<uint32_t> seeds) {
    ++epoch_;
    std::vector<uint32_t> out;
    std::vector<uint32_t> worklist = std::move(seeds);
    while (!worklist.empty()) {
      const uint32_t s = worklist.back();
      worklist.pop_back();
      if (mark_[s] == epoch_) continue;
      mark_[s] = epoch_;
      out.push_back(s);
      for (uint32_t t : nfa_[s].eps) {
        if (mark_[t] != epoch_) worklist.push_back(t);
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  uint32_t intern(std::vector<uint32_t> set) {
    const auto it = ids_.find(set);
    if (it != ids_.end()) return it->second;
    if (dfa_.size() >= limits_.max_dfa_states) {
      throw Error(ErrorCode::kInvalidArgument, "grammar too large: more than " +
                                                   std::to_string(limits_.max_dfa_states) + " automaton states");
    }
    const auto id = static_cast<uint32_t>(dfa_.size());
    dfa_.emplace_back();
    dfa_.back().rule = rule_;
    dfa_.back().final = std::binary_search(set.begin(), set.end(), nfa_final_);
    ids_.emplace(set, id);
    work_.push_back({id, std::move(set)});
    return id;
  }

  void expand(uint32_t id, const std::vector<uint32_t>& set) {
    // Bytes: cut [0, 256) at every edge boundary; each piece goes to the union of the edges
    // covering it.
    std::vector<const ByteEdge*> edges;
    std::vector<uint32_t> cuts;
    for (uint32_t s : set) {
      for (const ByteEdge& e : nfa_[s].bytes) {
        edges.push_back(&e);
        cuts.push_back(e.lo);
        cuts.push_back(uint32_t{e.hi} + 1);
      }
    }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    std::vector<ByteEdge> out;
    for (size_t i = 0; i + 1 < cuts.size(); ++i) {
      const uint32_t lo = cuts[i], hi = cuts[i + 1] - 1;
      std::vector<uint32_t> targets;
      for (const ByteEdge* e : edges) {
        if (e->lo <= lo && e->hi >= hi) targets.push_back(e->target);
      }
      if (targets.empty()) continue;
      const uint32_t t = intern(closure(std::move(targets)));
      if (!out.empty() && out.back().target == t && uint32_t{out.back().hi} + 1 == lo) {
        out.back().hi = static_cast<uint8_t>(hi);
      } else {
        out.push_back({static_cast<uint8_t>(lo), static_cast<uint8_t>(hi), t});
      }
    }
    std::map<uint32_t, std::vector<uint32_t>> by_rule;
    std::map<std::pair<int32_t, bool>, std::vector<uint32_t>> by_token;
    for (uint32_t s : set) {
      for (const RuleEdge& e : nfa_[s].rules) by_rule[e.rule].push_back(e.target);
      for (const TokenEdge& e : nfa_[s].tokens) by_token[{e.token, e.negated}].push_back(e.target);
    }
    std::vector<RuleEdge> rules;
    for (auto& [r, targets] : by_rule) rules.push_back({r, intern(closure(std::move(targets)))});
    std::vector<TokenEdge> tokens;
    for (auto& [key, targets] : by_token) tokens.push_back({key.first, key.second, intern(closure(std::move(targets)))});
    // intern() may have grown dfa_: index again.
    dfa_[id].bytes = std::move(out);
    dfa_[id].rules = std::move(rules);
    dfa_[id].tokens = std::move(tokens);
  }

  const std::vector<NfaState>& nfa_;
  const AutomatonLimits& limits_;
  std::vector<DfaDraft>& dfa_;
  std::vector<uint32_t> mark_;
  uint32_t epoch_ = 0;
  uint32_t nfa_final_ = 0;
  uint32_t rule_ = 0;
  std::unordered_map<std::vector<uint32_t>, uint32_t, VecHash> ids_;
  std::vector<std::pair<uint32_t, std::vector<uint32_t>>> work_;
};

}  // namespace

Automaton Automaton::build(const Grammar& grammar, const AutomatonLimits& limits) {
  require(grammar.root < grammar.rules.size(), ErrorCode::kInvalidArgument, "grammar: the start rule is missing");
  Automaton a;
  a.stats.rules_in = static_cast<uint32_t>(grammar.rules.size());
  const std::vector<RuleInfo> info = Inliner(grammar, limits).decide();

  // Kept rules: the root and every non-inlined rule a kept rule calls, in discovery order.
  std::vector<uint32_t> kept_id(grammar.rules.size(), kNoState);
  std::vector<uint32_t> kept;
  std::function<void(const Expr&)> find_calls;
  std::vector<uint32_t> worklist{grammar.root};
  kept_id[grammar.root] = 0;
  kept.push_back(grammar.root);
  std::vector<bool> scanned(grammar.rules.size(), false);
  find_calls = [&](const Expr& e) {
    if (e.kind == Expr::Kind::kRuleRef) {
      if (info[e.rule].inlined) {
        if (!scanned[e.rule]) {  // inlined bodies are scanned once: their calls are the same each copy
          scanned[e.rule] = true;
          find_calls(grammar.rules[e.rule].body);
        }
      } else if (kept_id[e.rule] == kNoState) {
        kept_id[e.rule] = static_cast<uint32_t>(kept.size());
        kept.push_back(e.rule);
        worklist.push_back(e.rule);
      }
      return;
    }
    for (const Expr& i : e.items) find_calls(i);
  };
  while (!worklist.empty()) {
    const uint32_t r = worklist.back();
    worklist.pop_back();
    find_calls(grammar.rules[r].body);
  }

  // NFA per kept rule, then its DFA.
  std::vector<NfaState> nfa;
  NfaBuilder builder(grammar, info, kept_id, limits, nfa);
  std::vector<std::pair<uint32_t, uint32_t>> nfa_bounds;  // (start, final) per kept rule
  for (const uint32_t r : kept) {
    const uint32_t s = builder.new_state();
    const uint32_t f = builder.emit(grammar.rules[r].body, s);
    nfa_bounds.push_back({s, f});
  }
  a.stats.nfa_states = static_cast<uint32_t>(nfa.size());
  std::vector<DfaDraft> dfa;
  Determinizer det(nfa, limits, dfa);
  for (size_t k = 0; k < kept.size(); ++k) {
    a.rule_start.push_back(det.run(static_cast<uint32_t>(k), nfa_bounds[k].first, nfa_bounds[k].second));
    a.rule_names.push_back(grammar.rules[kept[k]].name);
  }
  std::vector<NfaState>().swap(nfa);

  // Flatten.
  a.states.resize(dfa.size());
  for (size_t s = 0; s < dfa.size(); ++s) {
    AutomatonState& st = a.states[s];
    DfaDraft& d = dfa[s];
    st.rule = d.rule;
    st.final = d.final;
    st.bytes_begin = static_cast<uint32_t>(a.byte_edges.size());
    a.byte_edges.insert(a.byte_edges.end(), d.bytes.begin(), d.bytes.end());
    st.bytes_end = static_cast<uint32_t>(a.byte_edges.size());
    st.rules_begin = static_cast<uint32_t>(a.rule_edges.size());
    a.rule_edges.insert(a.rule_edges.end(), d.rules.begin(), d.rules.end());
    st.rules_end = static_cast<uint32_t>(a.rule_edges.size());
    st.tokens_begin = static_cast<uint32_t>(a.token_edges.size());
    a.token_edges.insert(a.token_edges.end(), d.tokens.begin(), d.tokens.end());
    st.tokens_end = static_cast<uint32_t>(a.token_edges.size());
    st.quiet = !st.final && st.rules_end == st.rules_begin;
    st.pop_only = st.final && st.rules_end == st.rules_begin && !st.has_input_edges();
  }
  a.root = 0;
  const size_t n_rules = kept.size();

  // Byte classes: two bytes share a class when every edge holds both or neither, i.e. no edge
  // boundary lies between them.
  {
    std::array<bool, 257> cut{};
    cut[0] = true;
    for (const ByteEdge& e : a.byte_edges) {
      cut[e.lo] = true;
      cut[static_cast<size_t>(e.hi) + 1] = true;
    }
    uint32_t c = 0;
    for (size_t b = 0; b < 256; ++b) {
      if (b > 0 && cut[b]) ++c;
      a.byte_class[b] = static_cast<uint8_t>(c);
    }
    a.n_classes = c + 1;
    if (a.states.size() * a.n_classes <= Automaton::kMaxDenseEntries) {
      a.next_by_class.assign(a.states.size() * a.n_classes, kNoState);
      for (size_t s = 0; s < a.states.size(); ++s) {
        const AutomatonState& st = a.states[s];
        for (uint32_t i = st.bytes_begin; i < st.bytes_end; ++i) {
          const ByteEdge& e = a.byte_edges[i];
          for (uint32_t b = e.lo; b <= e.hi; ++b) a.next_by_class[s * a.n_classes + a.byte_class[b]] = e.target;
        }
      }
    }
  }
  a.stats.rules_kept = static_cast<uint32_t>(n_rules);
  a.stats.dfa_states = static_cast<uint32_t>(a.states.size());

  // Nullable rules and per-state "can finish the rule without input" (eps), to a fixpoint.
  std::vector<bool> eps(a.states.size(), false);
  a.rule_nullable.assign(n_rules, false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t s = 0; s < a.states.size(); ++s) {
      if (eps[s]) continue;
      const AutomatonState& st = a.states[s];
      bool e = st.final;
      for (uint32_t i = st.rules_begin; !e && i < st.rules_end; ++i) {
        const RuleEdge& re = a.rule_edges[i];
        e = a.rule_nullable[re.rule] && eps[re.target];
      }
      if (e) {
        eps[s] = true;
        changed = true;
      }
    }
    for (size_t r = 0; r < n_rules; ++r) {
      if (!a.rule_nullable[r] && eps[a.rule_start[r]]) {
        a.rule_nullable[r] = true;
        changed = true;
      }
    }
  }

  // Left recursion: rule R calls S before consuming anything (from its start, through calls of
  // nullable rules). A cycle in that relation would push forever.
  std::vector<std::vector<uint32_t>> left(n_rules);
  for (size_t r = 0; r < n_rules; ++r) {
    std::vector<uint32_t> todo_states{a.rule_start[r]};
    std::vector<bool> seen(a.states.size(), false);
    while (!todo_states.empty()) {
      const uint32_t s = todo_states.back();
      todo_states.pop_back();
      if (seen[s]) continue;
      seen[s] = true;
      const AutomatonState& st = a.states[s];
      for (uint32_t i = st.rules_begin; i < st.rules_end; ++i) {
        const RuleEdge& re = a.rule_edges[i];
        left[r].push_back(re.rule);
        if (a.rule_nullable[re.rule]) todo_states.push_back(re.target);
      }
    }
  }
  {
    std::vector<int> color(n_rules, 0);  // 0 new, 1 on the path, 2 done
    for (size_t r0 = 0; r0 < n_rules; ++r0) {
      if (color[r0] != 0) continue;
      std::vector<std::pair<uint32_t, size_t>> dfs{{static_cast<uint32_t>(r0), 0}};
      color[r0] = 1;
      while (!dfs.empty()) {
        auto& [v, next] = dfs.back();
        if (next < left[v].size()) {
          const uint32_t w = left[v][next++];
          if (color[w] == 1) {
            throw Error(ErrorCode::kInvalidArgument, "grammar: rule '" + a.rule_names[w] +
                                                         "' is left-recursive (it can start with itself), "
                                                         "which GBNF does not support; rewrite it with repetition");
          }
          if (color[w] == 0) {
            color[w] = 1;
            dfs.push_back({w, 0});
          }
          continue;
        }
        color[v] = 2;
        dfs.pop_back();
      }
    }
  }

  // FIRST bytes per state, then FOLLOW per rule.
  std::vector<ByteSet> first(a.states.size(), ByteSet{});
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t s = 0; s < a.states.size(); ++s) {
      const AutomatonState& st = a.states[s];
      ByteSet f = first[s];
      for (uint32_t i = st.bytes_begin; i < st.bytes_end; ++i) {
        for (uint32_t b = a.byte_edges[i].lo; b <= a.byte_edges[i].hi; ++b) byteset_add(f, static_cast<uint8_t>(b));
      }
      for (uint32_t i = st.rules_begin; i < st.rules_end; ++i) {
        const RuleEdge& re = a.rule_edges[i];
        const ByteSet& g = first[a.rule_start[re.rule]];
        for (int w = 0; w < 4; ++w) f[w] |= g[w];
        if (a.rule_nullable[re.rule]) {
          for (int w = 0; w < 4; ++w) f[w] |= first[re.target][w];
        }
      }
      if (f != first[s]) {
        first[s] = f;
        changed = true;
      }
    }
  }
  a.rule_follow.assign(n_rules, ByteSet{});
  a.rule_called.assign(n_rules, false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t s = 0; s < a.states.size(); ++s) {
      const AutomatonState& st = a.states[s];
      for (uint32_t i = st.rules_begin; i < st.rules_end; ++i) {
        const RuleEdge& re = a.rule_edges[i];
        if (!a.rule_called[re.rule]) {
          a.rule_called[re.rule] = true;
          changed = true;
        }
        ByteSet f = a.rule_follow[re.rule];
        for (int w = 0; w < 4; ++w) f[w] |= first[re.target][w];
        if (eps[re.target]) {
          for (int w = 0; w < 4; ++w) f[w] |= a.rule_follow[st.rule][w];
        }
        if (f != a.rule_follow[re.rule]) {
          a.rule_follow[re.rule] = f;
          changed = true;
        }
      }
    }
  }
  return a;
}

}  // namespace edgellm::grammar
