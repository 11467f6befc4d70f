// Test helpers for the grammar engine, independent of its automata:
//
// * NaiveGrammarMatcher decides whether a whole text is a sentence of a Grammar by interpreting
//   the AST directly over code points: the set of end positions each expression can reach from a
//   start position, memoised per (rule, position). No bytes, no automata, no stacks: a different
//   algorithm from the engine's, for the accept/reject comparisons.
// * random_sentence() expands a grammar at random (what the conformance tests feed both), and
//   mutate() edits a string by one code point (insert / delete / replace), so that roughly half
//   of the inputs are not sentences.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/utf8.h"
#include "grammar/grammar_ast.h"

namespace edgellm::grammar::test {

class NaiveGrammarMatcher {
 public:
  NaiveGrammarMatcher(const Grammar& g, const std::string& text) : g_(g) {
    for (size_t i = 0; i < text.size();) {
      const utf8::Decoded d = utf8::decode(text, i);
      cps_.push_back(d.ok() ? d.cp : 0xFFFFFFFFu);  // ill-formed bytes match nothing
      i += d.length;
    }
  }

  bool full_match() {
    const std::set<size_t> ends = rule(g_.root, 0);
    return ends.count(cps_.size()) != 0;
  }

 private:
  const std::set<size_t>& rule(uint32_t r, size_t pos) {
    const auto key = std::make_pair(r, pos);
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    // Grammars given here have no left recursion (the engine refuses it): a rule never needs its
    // own result at the same position, except through a nullable repetition, which the guard
    // below answers with "no progress" (what the fixpoint would add is already there).
    auto [ins, ok] = memo_.emplace(key, std::set<size_t>{});
    (void)ok;
    std::set<size_t> result = match(g_.rules[r].body, pos);
    memo_[key] = std::move(result);
    return memo_[key];
  }

  std::set<size_t> match(const Expr& e, size_t pos) {
    std::set<size_t> out;
    switch (e.kind) {
      case Expr::Kind::kEmpty: out.insert(pos); break;
      case Expr::Kind::kLiteral: {
        size_t p = pos;
        for (size_t i = 0; i < e.text.size();) {
          const utf8::Decoded d = utf8::decode(e.text, i);
          if (p >= cps_.size() || cps_[p] != d.cp) return out;
          ++p;
          i += d.length;
        }
        out.insert(p);
        break;
      }
      case Expr::Kind::kChars:
        if (pos < cps_.size()) {
          for (const CodePointRange& r : e.ranges) {
            if (cps_[pos] >= r.lo && cps_[pos] <= r.hi) {
              out.insert(pos + 1);
              break;
            }
          }
        }
        break;
      case Expr::Kind::kAny:
        if (pos < cps_.size() && cps_[pos] != 0xFFFFFFFFu) out.insert(pos + 1);
        break;
      case Expr::Kind::kRuleRef: out = rule(e.rule, pos); break;
      case Expr::Kind::kToken: break;  // text has no tokens
      case Expr::Kind::kSeq: {
        std::set<size_t> cur{pos};
        for (const Expr& item : e.items) {
          std::set<size_t> next;
          for (size_t p : cur) {
            const std::set<size_t> s = match(item, p);
            next.insert(s.begin(), s.end());
          }
          cur = std::move(next);
          if (cur.empty()) break;
        }
        out = std::move(cur);
        break;
      }
      case Expr::Kind::kAlt:
        for (const Expr& item : e.items) {
          const std::set<size_t> s = match(item, pos);
          out.insert(s.begin(), s.end());
        }
        break;
      case Expr::Kind::kRepeat: {
        const Expr& item = e.items.front();
        std::set<size_t> cur{pos};
        if (e.min == 0) out.insert(pos);
        uint32_t k = 0;
        std::set<size_t> seen_after_min;
        while (!cur.empty()) {
          if (e.max != kUnbounded && k >= e.max) break;
          std::set<size_t> next;
          for (size_t p : cur) {
            const std::set<size_t> s = match(item, p);
            next.insert(s.begin(), s.end());
          }
          ++k;
          if (k >= e.min) {
            if (e.max == kUnbounded) {
              // Past the minimum only new positions can add anything.
              std::set<size_t> fresh;
              for (size_t p : next) {
                if (seen_after_min.insert(p).second) fresh.insert(p);
              }
              out.insert(fresh.begin(), fresh.end());
              next = std::move(fresh);
            } else {
              out.insert(next.begin(), next.end());
            }
          }
          cur = std::move(next);
        }
        break;
      }
    }
    return out;
  }

  const Grammar& g_;
  std::vector<uint32_t> cps_;
  std::map<std::pair<uint32_t, size_t>, std::set<size_t>> memo_;
};

// A random code point of the ranges, half of the time from the first 128 of the first range
// (grammars are mostly ASCII) and otherwise anywhere.
// Never U+0000: C-string based matchers (llama.cpp's) stop at it, and no grammar test needs it.
inline uint32_t random_code_point(const std::vector<CodePointRange>& ranges, std::mt19937& rng) {
  for (;;) {
    const CodePointRange& r = ranges[rng() % ranges.size()];
    const uint32_t span = r.hi - r.lo;
    const uint32_t cp = rng() % 2 == 0 ? r.lo + static_cast<uint32_t>(rng() % (std::min<uint32_t>(span, 127) + 1))
                                       : r.lo + static_cast<uint32_t>(rng() % (uint64_t{span} + 1));
    if (cp != 0 || (r.lo == 0 && r.hi == 0 && ranges.size() == 1)) return cp == 0 ? 1 : cp;
  }
}

// Random sentences: below a depth of 8 every choice is uniform; deeper, alternatives and
// repetition counts go to the choice that closes the sentence fastest (the least rule nesting
// still needed, a fixpoint over the rules), so recursive grammars still produce whole sentences.
class SentenceGenerator {
 public:
  explicit SentenceGenerator(const Grammar& g) : g_(g), rule_height_(g.rules.size(), kInf) {
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t r = 0; r < g.rules.size(); ++r) {
        const uint32_t h = height(g.rules[r].body);
        if (h < kInf && h + 1 < rule_height_[r]) {
          rule_height_[r] = h + 1;
          changed = true;
        }
      }
    }
  }

  std::string operator()(std::mt19937& rng) const {
    std::string s;
    expand(g_.rules[g_.root].body, rng, 0, s);
    return s;
  }

 private:
  static constexpr uint32_t kInf = 1u << 30;

  uint32_t height(const Expr& e) const {
    switch (e.kind) {
      case Expr::Kind::kRuleRef: return rule_height_[e.rule];
      case Expr::Kind::kSeq: {
        uint32_t h = 0;
        for (const Expr& i : e.items) h = std::max(h, height(i));
        return h;
      }
      case Expr::Kind::kAlt: {
        uint32_t h = kInf;
        for (const Expr& i : e.items) h = std::min(h, height(i));
        return h;
      }
      case Expr::Kind::kRepeat: return e.min == 0 ? 0 : height(e.items.front());
      default: return 0;
    }
  }

  void expand(const Expr& e, std::mt19937& rng, int depth, std::string& out) const {
    const bool deep = depth > 8;
    switch (e.kind) {
      case Expr::Kind::kEmpty: return;
      case Expr::Kind::kLiteral: out += e.text; return;
      case Expr::Kind::kChars:
        if (!e.ranges.empty()) utf8::append(out, random_code_point(e.ranges, rng));
        return;
      case Expr::Kind::kAny: utf8::append(out, random_code_point({{0x20, 0x7E}, {0xA0, 0x10FFFF}}, rng)); return;
      case Expr::Kind::kRuleRef:
        if (depth > 60) return;  // gives up: the string is then just another input
        expand(g_.rules[e.rule].body, rng, depth + 1, out);
        return;
      case Expr::Kind::kToken: return;
      case Expr::Kind::kSeq:
        for (const Expr& i : e.items) expand(i, rng, depth, out);
        return;
      case Expr::Kind::kAlt: {
        size_t pick = rng() % e.items.size();
        if (deep) {
          for (size_t i = 0; i < e.items.size(); ++i) {
            if (height(e.items[i]) < height(e.items[pick])) pick = i;
          }
        }
        expand(e.items[pick], rng, depth + 1, out);
        return;
      }
      case Expr::Kind::kRepeat: {
        const uint32_t hi = e.max == kUnbounded ? e.min + (deep ? 0u : 4u) : (deep ? e.min : e.max);
        const uint32_t n = e.min + static_cast<uint32_t>(rng() % (hi - e.min + 1));
        for (uint32_t i = 0; i < n; ++i) expand(e.items.front(), rng, depth + 1, out);
        return;
      }
    }
  }

  const Grammar& g_;
  std::vector<uint32_t> rule_height_;
};

inline std::string random_sentence(const Grammar& g, std::mt19937& rng) { return SentenceGenerator(g)(rng); }

// One code point inserted, deleted or replaced at a random position.
inline std::string mutate(const std::string& s, std::mt19937& rng) {
  std::vector<std::string> cps;
  for (size_t i = 0; i < s.size();) {
    const utf8::Decoded d = utf8::decode(s, i);
    cps.push_back(s.substr(i, d.length));
    i += d.length;
  }
  static const char* const kPool[] = {"a", "0", "9", " ", "\"", "{", "}", "[", "]", ",", ":", "-", ".", "\n",
                                      "\\", "e", "x", "\xC3\xA9", "\xE4\xBD\xA0", "\xF0\x9F\x98\x80"};
  const std::string pick = kPool[rng() % (sizeof kPool / sizeof kPool[0])];
  const size_t pos = cps.empty() ? 0 : rng() % (cps.size() + 1);
  switch (cps.empty() ? 0 : rng() % 3) {
    case 0: cps.insert(cps.begin() + static_cast<std::ptrdiff_t>(pos), pick); break;
    case 1: cps.erase(cps.begin() + static_cast<std::ptrdiff_t>(std::min(pos, cps.size() - 1))); break;
    default: cps[std::min(pos, cps.size() - 1)] = pick; break;
  }
  std::string out;
  for (const std::string& c : cps) out += c;
  return out;
}

}  // namespace edgellm::grammar::test
