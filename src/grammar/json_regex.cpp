#include "grammar/json_regex.h"

#include <vector>

#include "core/error.h"
#include "core/utf8.h"
#include "grammar/gbnf_parser.h"

namespace edgellm::grammar {

namespace {

using Ranges = std::vector<CodePointRange>;

Ranges digit() { return {{'0', '9'}}; }
Ranges word() { return normalize_ranges({{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}); }
Ranges space() {
  return normalize_ranges({{'\t', '\r'}, {' ', ' '}, {0xA0, 0xA0}, {0x1680, 0x1680}, {0x2000, 0x200A},
                           {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}});
}
Ranges dot() { return complement_ranges(normalize_ranges({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}})); }

Ranges unite(Ranges a, const Ranges& b) {
  a.insert(a.end(), b.begin(), b.end());
  return normalize_ranges(std::move(a));
}

// One decoded character of the ranges, written the way JSON text holds it: plain where JSON
// allows it, escaped for '"', '\' and the control characters.
std::string json_char(const Ranges& ranges) {
  const Ranges specials = normalize_ranges({{0, 0x1F}, {'"', '"'}, {'\\', '\\'}});
  Ranges plain;
  std::vector<uint32_t> escaped;
  for (const CodePointRange& r : ranges) {
    for (const CodePointRange& s : complement_ranges(specials)) {
      const uint32_t lo = std::max(r.lo, s.lo), hi = std::min(r.hi, s.hi);
      if (lo <= hi) plain.push_back({lo, hi});
    }
    for (const CodePointRange& s : specials) {
      for (uint32_t c = std::max(r.lo, s.lo); c <= std::min(r.hi, s.hi); ++c) escaped.push_back(c);
    }
  }
  std::vector<std::string> alts;
  if (!plain.empty()) alts.push_back(gbnf_class(normalize_ranges(plain)));
  for (const uint32_t c : escaped) {
    std::string e;
    switch (c) {
      case '"': e = "\\\""; break;
      case '\\': e = "\\\\"; break;
      case '\n': e = "\\n"; break;
      case '\r': e = "\\r"; break;
      case '\t': e = "\\t"; break;
      case '\b': e = "\\b"; break;
      case '\f': e = "\\f"; break;
      default: {
        static const char* const kHex = "0123456789abcdef";
        e = "\\u00";
        e += kHex[c >> 4];
        e += kHex[c & 15];
      }
    }
    alts.push_back(gbnf_literal(e));
  }
  if (alts.empty()) return gbnf_class({});  // matches nothing
  if (alts.size() == 1) return alts.front();
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + ")";
}

class RegexParser {
 public:
  RegexParser(std::string_view p, const std::string& char_rule) : p_(p), char_rule_(char_rule) {}

  std::string parse() {
    const size_t bad = utf8::first_invalid(p_);
    if (bad != p_.size()) fail("invalid UTF-8");
    std::vector<std::string> branches;
    do {
      if (!branches.empty()) ++pos_;  // '|'
      branches.push_back(branch(true));
    } while (pos_ < p_.size() && p_[pos_] == '|');
    if (pos_ != p_.size()) fail("unbalanced ')'");
    if (branches.size() == 1) return branches.front();
    std::string out = "(";
    for (size_t i = 0; i < branches.size(); ++i) out += (i ? " | " : "") + branches[i];
    return out + ")";
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(ErrorCode::kInvalidArgument, "pattern \"" + std::string(p_) + "\": " + what + " (at offset " +
                                                 std::to_string(pos_) + ")");
  }

  bool at(char c) const { return pos_ < p_.size() && p_[pos_] == c; }

  // A top-level branch may carry its own anchors; nested ones may not.
  std::string branch(bool top) {
    bool start_anchor = false, end_anchor = false;
    if (top && at('^')) {
      start_anchor = true;
      ++pos_;
    }
    std::vector<std::string> items;
    while (pos_ < p_.size() && !at('|') && !at(')')) {
      if (at('$')) {
        if (!top || (pos_ + 1 != p_.size() && p_[pos_ + 1] != '|')) fail("'$' is supported only at the end of the pattern");
        end_anchor = true;
        ++pos_;
        break;
      }
      if (at('^')) fail("'^' is supported only at the start of the pattern");
      std::string a = atom();
      items.push_back(quantified(std::move(a)));
    }
    std::string out;
    if (top && !start_anchor) out += char_rule_ + "* ";
    for (const std::string& i : items) out += i + " ";
    if (top && !end_anchor) out += char_rule_ + "* ";
    if (out.empty()) return "\"\"";
    out.pop_back();
    return "(" + out + ")";
  }

  uint32_t parse_number() {
    const size_t start = pos_;
    uint64_t v = 0;
    while (pos_ < p_.size() && p_[pos_] >= '0' && p_[pos_] <= '9') {
      v = v * 10 + static_cast<uint64_t>(p_[pos_] - '0');
      if (v > kMaxRepetition) fail("repetition count above " + std::to_string(kMaxRepetition));
      ++pos_;
    }
    if (pos_ == start) fail("expected a number in a {} quantifier");
    return static_cast<uint32_t>(v);
  }

  std::string quantified(std::string a) {
    if (pos_ >= p_.size()) return a;
    std::string q;
    const char c = p_[pos_];
    if (c == '*' || c == '+' || c == '?') {
      q = std::string(1, c);
      ++pos_;
    } else if (c == '{') {
      const size_t save = pos_;
      ++pos_;
      if (pos_ >= p_.size() || p_[pos_] < '0' || p_[pos_] > '9') {  // a literal '{' in ECMA's Annex B
        pos_ = save;
        return a;
      }
      const uint32_t lo = parse_number();
      uint32_t hi = lo;
      bool unbounded = false;
      if (at(',')) {
        ++pos_;
        if (at('}')) {
          unbounded = true;
        } else {
          hi = parse_number();
        }
      }
      if (!at('}')) fail("expected '}'");
      ++pos_;
      if (!unbounded && hi < lo) fail("quantifier {n,m} with m < n");
      q = "{" + std::to_string(lo) + (unbounded ? "," : (hi != lo ? "," + std::to_string(hi) : "")) + "}";
    } else {
      return a;
    }
    if (at('?')) ++pos_;  // lazy: same set of strings
    if (at('*') || at('+') || at('?') || at('{')) fail("a quantifier cannot follow a quantifier");
    return "(" + a + ")" + q;
  }

  uint32_t hex(int n) {
    uint32_t v = 0;
    for (int i = 0; i < n; ++i) {
      if (pos_ >= p_.size()) fail("incomplete hex escape");
      const char c = p_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') {
        v |= static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        v |= static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        v |= static_cast<uint32_t>(c - 'A' + 10);
      } else {
        fail("bad hex digit");
      }
    }
    return v;
  }

  // An escape after '\': the characters it stands for.
  Ranges escape(bool in_class) {
    if (pos_ >= p_.size()) fail("pattern ends with '\\'");
    const char c = p_[pos_++];
    switch (c) {
      case 'd': return digit();
      case 'D': return complement_ranges(digit());
      case 'w': return word();
      case 'W': return complement_ranges(word());
      case 's': return space();
      case 'S': return complement_ranges(space());
      case 'n': return {{'\n', '\n'}};
      case 'r': return {{'\r', '\r'}};
      case 't': return {{'\t', '\t'}};
      case 'f': return {{'\f', '\f'}};
      case 'v': return {{'\v', '\v'}};
      case '0': return {{0, 0}};
      case 'x': {
        const uint32_t v = hex(2);
        return {{v, v}};
      }
      case 'u': {
        if (at('{')) fail("\\u{...} needs the 'u' flag, which patterns do not have");
        const uint32_t v = hex(4);
        return normalize_ranges({{v, v}});
      }
      case 'b':
        if (in_class) return {{'\b', '\b'}};
        fail("word boundaries (\\b) are not supported");
      case 'B': fail("word boundaries (\\B) are not supported");
      case 'p':
      case 'P': fail("Unicode property escapes (\\p{...}) are not supported");
      case 'k': fail("named backreferences are not supported");
      case 'c': fail("control escapes (\\cX) are not supported");
      default:
        if (c >= '1' && c <= '9') fail("backreferences are not supported");
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) fail(std::string("unknown escape \\") + c);
        --pos_;
        {
          const utf8::Decoded d = utf8::decode(p_, pos_);
          pos_ += d.length;
          return {{d.cp, d.cp}};
        }
    }
  }

  uint32_t class_char(Ranges* set) {
    if (at('\\')) {
      ++pos_;
      const Ranges r = escape(true);
      if (r.size() == 1 && r[0].lo == r[0].hi) return r[0].lo;
      *set = r;
      return 0xFFFFFFFFu;  // a set such as \d: cannot start or end a range
    }
    const utf8::Decoded d = utf8::decode(p_, pos_);
    pos_ += d.length;
    return d.cp;
  }

  std::string char_class() {
    ++pos_;  // [
    bool negated = false;
    if (at('^')) {
      negated = true;
      ++pos_;
    }
    Ranges set;
    bool first = true;
    while (!at(']') || first) {
      if (pos_ >= p_.size()) fail("unterminated character class");
      if (at(']') && first) break;  // "[]" matches nothing in ECMA-262
      first = false;
      Ranges esc;
      const uint32_t lo = class_char(&esc);
      if (lo == 0xFFFFFFFFu) {
        set = unite(std::move(set), esc);
        continue;
      }
      if (at('-') && pos_ + 1 < p_.size() && p_[pos_ + 1] != ']') {
        ++pos_;
        Ranges esc2;
        const uint32_t hi = class_char(&esc2);
        if (hi == 0xFFFFFFFFu) fail("a class escape cannot end a range");
        if (hi < lo) fail("range out of order in character class");
        set = unite(std::move(set), {{lo, hi}});
      } else {
        set = unite(std::move(set), {{lo, lo}});
      }
    }
    ++pos_;  // ]
    set = normalize_ranges(std::move(set));
    return json_char(negated ? complement_ranges(set) : set);
  }

  std::string atom() {
    const char c = p_[pos_];
    switch (c) {
      case '(': {
        ++pos_;
        if (at('?')) {
          ++pos_;
          if (at(':')) {
            ++pos_;
          } else if (at('<') && pos_ + 1 < p_.size() && p_[pos_ + 1] != '=' && p_[pos_ + 1] != '!') {
            while (pos_ < p_.size() && p_[pos_] != '>') ++pos_;  // a named group is a group
            if (pos_ >= p_.size()) fail("unterminated group name");
            ++pos_;
          } else {
            fail("lookaround assertions are not supported");
          }
        }
        std::vector<std::string> alts;
        do {
          if (!alts.empty()) ++pos_;
          alts.push_back(branch(false));
        } while (at('|'));
        if (!at(')')) fail("missing ')'");
        ++pos_;
        if (alts.size() == 1) return alts.front();
        std::string out = "(";
        for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
        return out + ")";
      }
      case '[': return char_class();
      case '.': ++pos_; return json_char(dot());
      case '\\': ++pos_; return json_char(normalize_ranges(escape(false)));
      case '*':
      case '+':
      case '?': fail("nothing to repeat");
      case '{': {
        // Annex B: a '{' that does not start a quantifier is a literal.
        ++pos_;
        return json_char({{'{', '{'}});
      }
      default: {
        const utf8::Decoded d = utf8::decode(p_, pos_);
        pos_ += d.length;
        return json_char({{d.cp, d.cp}});
      }
    }
  }

  std::string_view p_;
  const std::string& char_rule_;
  size_t pos_ = 0;
};

}  // namespace

std::string json_pattern_to_gbnf(std::string_view pattern, const std::string& char_rule) {
  return RegexParser(pattern, char_rule).parse();
}

}  // namespace edgellm::grammar
