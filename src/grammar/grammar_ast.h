// A grammar as parsed: named rules whose bodies are expressions over code points, rule references
// and whole tokens. This is the common form of GBNF text (gbnf_parser.h) and of everything built
// from a JSON Schema (json_schema.h); compiled_grammar.h turns it into byte-level automata.
//
//   root ::= "{" ws item ("," ws item)* "}"        Rule{"root", Seq[Literal "{", Ref ws, Ref item,
//                                                        Repeat{0, inf, Seq[Literal ",", Ref ws, Ref item]},
//                                                        Literal "}"]}
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace edgellm::grammar {

// An inclusive range of Unicode scalar values.
struct CodePointRange {
  uint32_t lo = 0;
  uint32_t hi = 0;
  bool operator==(const CodePointRange&) const = default;
};

inline constexpr uint32_t kUnbounded = std::numeric_limits<uint32_t>::max();

struct Expr {
  enum class Kind : uint8_t {
    kEmpty,    // matches the empty string
    kLiteral,  // `text`: UTF-8 bytes of a quoted string
    kChars,    // one code point from `ranges` (sorted, disjoint, non-adjacent; negation resolved;
               // surrogates excluded: they have no UTF-8 encoding). Empty ranges: matches nothing.
    kAny,      // `.`: any code point
    kRuleRef,  // `rule`
    kToken,    // `<[id]>` / `<text>`: exactly token `token`; `!<...>`: any token but it (negated)
    kSeq,      // items in order
    kAlt,      // one of items
    kRepeat,   // items[0] between min and max times (max may be kUnbounded)
  };
  Kind kind = Kind::kEmpty;
  std::string text;                     // kLiteral
  std::vector<CodePointRange> ranges;   // kChars
  uint32_t rule = 0;                    // kRuleRef: index into Grammar::rules
  int32_t token = -1;                   // kToken
  bool negated = false;                 // kToken
  uint32_t min = 0, max = 0;            // kRepeat
  std::vector<Expr> items;              // kSeq, kAlt, kRepeat (one item)

  static Expr empty() { return Expr{}; }
  static Expr literal(std::string bytes) {
    Expr e;
    e.kind = Kind::kLiteral;
    e.text = std::move(bytes);
    return e;
  }
  static Expr chars(std::vector<CodePointRange> ranges) {
    Expr e;
    e.kind = Kind::kChars;
    e.ranges = std::move(ranges);
    return e;
  }
  static Expr any() {
    Expr e;
    e.kind = Kind::kAny;
    return e;
  }
  static Expr ref(uint32_t rule) {
    Expr e;
    e.kind = Kind::kRuleRef;
    e.rule = rule;
    return e;
  }
  static Expr tok(int32_t id, bool negated) {
    Expr e;
    e.kind = Kind::kToken;
    e.token = id;
    e.negated = negated;
    return e;
  }
  static Expr seq(std::vector<Expr> items) {
    Expr e;
    e.kind = Kind::kSeq;
    e.items = std::move(items);
    return e;
  }
  static Expr alt(std::vector<Expr> items) {
    Expr e;
    e.kind = Kind::kAlt;
    e.items = std::move(items);
    return e;
  }
  static Expr repeat(Expr item, uint32_t min, uint32_t max) {
    Expr e;
    e.kind = Kind::kRepeat;
    e.min = min;
    e.max = max;
    e.items.push_back(std::move(item));
    return e;
  }

  bool operator==(const Expr&) const = default;
};

struct Rule {
  std::string name;
  Expr body;
  bool operator==(const Rule&) const = default;
};

struct Grammar {
  std::vector<Rule> rules;
  uint32_t root = 0;  // index of the start rule
  bool operator==(const Grammar&) const = default;
};

// Sorts, merges overlapping and adjacent ranges, clips to U+10FFFF and removes the surrogates
// U+D800..U+DFFF (they cannot occur in well-formed UTF-8 text).
std::vector<CodePointRange> normalize_ranges(std::vector<CodePointRange> ranges);
// The complement of normalized ranges within the scalar values.
std::vector<CodePointRange> complement_ranges(const std::vector<CodePointRange>& ranges);

}  // namespace edgellm::grammar
