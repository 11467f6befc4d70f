#include "grammar/gbnf_parser.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>

#include "core/error.h"
#include "core/utf8.h"

namespace edgellm::grammar {

std::vector<CodePointRange> normalize_ranges(std::vector<CodePointRange> ranges) {
  std::vector<CodePointRange> in;
  in.reserve(ranges.size() + 1);
  for (CodePointRange r : ranges) {
    if (r.lo > r.hi || r.lo > utf8::kMaxCodePoint) continue;
    r.hi = std::min<uint32_t>(r.hi, utf8::kMaxCodePoint);
    // Split around the surrogates.
    if (r.lo <= 0xDFFF && r.hi >= 0xD800) {
      if (r.lo < 0xD800) in.push_back({r.lo, 0xD7FF});
      if (r.hi > 0xDFFF) in.push_back({0xE000, r.hi});
    } else {
      in.push_back(r);
    }
  }
  std::sort(in.begin(), in.end(), [](const CodePointRange& a, const CodePointRange& b) { return a.lo < b.lo; });
  std::vector<CodePointRange> out;
  for (const CodePointRange& r : in) {
    // Adjacent across the surrogate gap counts as adjacent: nothing between them can occur.
    const uint64_t prev_end = out.empty() ? 0 : (out.back().hi == 0xD7FF ? 0xDFFFu : out.back().hi);
    if (!out.empty() && static_cast<uint64_t>(r.lo) <= prev_end + 1) {
      out.back().hi = std::max(out.back().hi, r.hi);
    } else {
      out.push_back(r);
    }
  }
  // Merging across the gap may have produced a range containing surrogates again: split it.
  std::vector<CodePointRange> result;
  for (const CodePointRange& r : out) {
    if (r.lo <= 0xDFFF && r.hi >= 0xD800) {
      if (r.lo < 0xD800) result.push_back({r.lo, 0xD7FF});
      if (r.hi > 0xDFFF) result.push_back({0xE000, r.hi});
    } else {
      result.push_back(r);
    }
  }
  return result;
}

std::vector<CodePointRange> complement_ranges(const std::vector<CodePointRange>& ranges) {
  std::vector<CodePointRange> out;
  uint32_t next = 0;
  for (const CodePointRange& r : ranges) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= utf8::kMaxCodePoint) out.push_back({next, utf8::kMaxCodePoint});
  return normalize_ranges(std::move(out));
}

namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Collapses one-item sequences / alternatives so that parsed grammars have one canonical shape.
Expr simplify(std::vector<Expr> items, Expr::Kind kind) {
  if (items.empty()) return Expr::empty();
  if (items.size() == 1) return std::move(items.front());
  return kind == Expr::Kind::kSeq ? Expr::seq(std::move(items)) : Expr::alt(std::move(items));
}

class Parser {
 public:
  Parser(std::string_view text, const TokenResolver& tokens) : s_(text), tokens_(tokens) {}

  Grammar parse(std::string_view root_name) {
    const size_t bad = utf8::first_invalid(s_);
    if (bad != s_.size()) {
      pos_ = bad;
      fail("invalid UTF-8");
    }
    skip_space(true);
    while (pos_ < s_.size()) parse_rule();
    for (size_t i = 0; i < g_.rules.size(); ++i) {
      if (!defined_[i]) {
        pos_ = first_use_[i];
        fail("undefined rule '" + g_.rules[i].name + "'");
      }
    }
    const auto it = ids_.find(std::string(root_name));
    if (it == ids_.end()) {
      throw Error(ErrorCode::kInvalidArgument,
                  "grammar: no rule named '" + std::string(root_name) + "' (the start rule) is defined");
    }
    g_.root = it->second;
    return std::move(g_);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos_ && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        col = 1;
      } else if ((static_cast<unsigned char>(s_[i]) & 0xC0) != 0x80) {
        ++col;
      }
    }
    throw Error(ErrorCode::kInvalidArgument,
                "grammar: line " + std::to_string(line) + ", column " + std::to_string(col) + ": " + what);
  }

  char peek(size_t ahead = 0) const { return pos_ + ahead < s_.size() ? s_[pos_ + ahead] : '\0'; }
  bool at_end() const { return pos_ >= s_.size(); }

  void skip_space(bool newline_ok) {
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (c == ' ' || c == '\t' || (newline_ok && (c == '\r' || c == '\n'))) {
        ++pos_;
      } else if (c == '#') {
        while (pos_ < s_.size() && s_[pos_] != '\r' && s_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  std::string parse_name() {
    const size_t start = pos_;
    while (pos_ < s_.size() && is_name_char(s_[pos_])) ++pos_;
    if (pos_ == start) fail("expected a rule name");
    return std::string(s_.substr(start, pos_ - start));
  }

  uint32_t parse_uint() {
    const size_t start = pos_;
    uint64_t v = 0;
    while (pos_ < s_.size() && is_digit(s_[pos_])) {
      v = v * 10 + static_cast<uint64_t>(s_[pos_] - '0');
      if (v > 0xFFFFFFFFull) fail("number too large");
      ++pos_;
    }
    if (pos_ == start) fail("expected an integer");
    return static_cast<uint32_t>(v);
  }

  uint32_t rule_id(const std::string& name, size_t use_pos) {
    const auto it = ids_.find(name);
    if (it != ids_.end()) return it->second;
    const auto id = static_cast<uint32_t>(g_.rules.size());
    ids_.emplace(name, id);
    g_.rules.push_back(Rule{name, Expr::empty()});
    defined_.push_back(false);
    first_use_.push_back(use_pos);
    return id;
  }

  uint32_t parse_hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const char c = peek();
      uint32_t d = 0;
      if (c >= '0' && c <= '9') {
        d = static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        d = static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        d = static_cast<uint32_t>(c - 'A' + 10);
      } else {
        fail("expected " + std::to_string(digits) + " hex digits");
      }
      v = (v << 4) | d;
      ++pos_;
    }
    return v;
  }

  // One character of a literal or class: an escape or a UTF-8 encoded code point.
  uint32_t parse_char() {
    if (at_end()) fail("unexpected end of input");
    if (peek() == '\\') {
      const char e = peek(1);
      pos_ += 2;
      switch (e) {
        case 'x': return parse_hex(2);
        case 'u': return parse_hex(4);
        case 'U': return parse_hex(8);
        case 't': return '\t';
        case 'r': return '\r';
        case 'n': return '\n';
        case '\\':
        case '"':
        case '[':
        case ']':
        case '-': return static_cast<uint32_t>(e);
        default:
          pos_ -= 2;
          fail(e == '\0' ? std::string("unexpected end of input after '\\'")
                         : "unknown escape '\\" + std::string(1, e) + "'");
      }
    }
    const utf8::Decoded d = utf8::decode(s_, pos_);
    pos_ += d.length;
    return d.cp;
  }

  Expr parse_literal() {
    ++pos_;  // opening quote
    std::string bytes;
    while (peek() != '"') {
      if (at_end()) fail("unterminated string literal");
      const size_t at = pos_;
      const uint32_t cp = parse_char();
      if (!utf8::is_scalar_value(cp)) {
        pos_ = at;
        fail("a literal cannot contain code point " + std::to_string(cp) + " (a surrogate or above U+10FFFF)");
      }
      utf8::append(bytes, cp);
    }
    ++pos_;
    if (bytes.empty()) return Expr::empty();
    return Expr::literal(std::move(bytes));
  }

  Expr parse_class() {
    const size_t start = pos_;
    ++pos_;  // [
    bool negated = false;
    if (peek() == '^') {
      negated = true;
      ++pos_;
    }
    std::vector<CodePointRange> ranges;
    bool any_item = false;
    while (peek() != ']') {
      if (at_end()) fail("unterminated character class");
      const uint32_t lo = parse_char();
      uint32_t hi = lo;
      if (peek() == '-' && peek(1) != ']') {
        ++pos_;
        if (at_end()) fail("unexpected end of input in a character range");
        hi = parse_char();
      }
      ranges.push_back({lo, hi});
      any_item = true;
    }
    ++pos_;
    if (!any_item) {
      pos_ = start;
      fail("empty character class");
    }
    ranges = normalize_ranges(std::move(ranges));
    return Expr::chars(negated ? complement_ranges(ranges) : std::move(ranges));
  }

  Expr parse_token(bool negated) {
    const size_t start = pos_;
    ++pos_;  // <
    if (peek() == '[') {
      ++pos_;
      const uint32_t id = parse_uint();
      if (peek() != ']') fail("expected ']' in a token id");
      ++pos_;
      if (peek() != '>') fail("expected '>' after a token id");
      ++pos_;
      if (id > 0x7FFFFFFFu) fail("token id out of range");
      return Expr::tok(static_cast<int32_t>(id), negated);
    }
    while (!at_end() && peek() != '>') ++pos_;
    if (at_end()) fail("expected '>' to end a token");
    ++pos_;
    const std::string_view text = s_.substr(start, pos_ - start);
    if (!tokens_) {
      pos_ = start;
      fail("token " + std::string(text) + " needs a vocabulary (use <[id]> for a token id)");
    }
    const std::optional<int32_t> id = tokens_(text);
    if (!id) {
      pos_ = start;
      fail("'" + std::string(text) + "' is not the text of exactly one token");
    }
    return Expr::tok(*id, negated);
  }

  // Applies a repetition operator to the last item of the sequence.
  void repeat_last(std::vector<Expr>& items, uint32_t min, uint32_t max, size_t op_pos) {
    if (items.empty()) {
      pos_ = op_pos;
      fail("a repetition operator needs an item before it");
    }
    Expr last = std::move(items.back());
    items.back() = Expr::repeat(std::move(last), min, max);
  }

  Expr parse_sequence(bool nested) {
    std::vector<Expr> items;
    for (;;) {
      const char c = peek();
      const size_t op_pos = pos_;
      if (c == '"') {
        items.push_back(parse_literal());
      } else if (c == '[') {
        items.push_back(parse_class());
      } else if (c == '<') {
        items.push_back(parse_token(false));
      } else if (c == '!') {
        ++pos_;
        if (peek() != '<') fail("expected a token after '!'");
        items.push_back(parse_token(true));
      } else if (is_name_char(c)) {
        const std::string name = parse_name();
        items.push_back(Expr::ref(rule_id(name, op_pos)));
      } else if (c == '(') {
        ++pos_;
        skip_space(true);
        Expr inner = parse_alternates(true);
        if (peek() != ')') fail("expected ')'");
        ++pos_;
        items.push_back(std::move(inner));
      } else if (c == '.') {
        ++pos_;
        items.push_back(Expr::any());
      } else if (c == '*') {
        ++pos_;
        repeat_last(items, 0, kUnbounded, op_pos);
      } else if (c == '+') {
        ++pos_;
        repeat_last(items, 1, kUnbounded, op_pos);
      } else if (c == '?') {
        ++pos_;
        repeat_last(items, 0, 1, op_pos);
      } else if (c == '{') {
        ++pos_;
        skip_space(nested);
        const uint32_t min = parse_uint();
        skip_space(nested);
        uint32_t max = min;
        if (peek() == ',') {
          ++pos_;
          skip_space(nested);
          max = is_digit(peek()) ? parse_uint() : kUnbounded;
          skip_space(nested);
        }
        if (peek() != '}') fail("expected '}' to end a repetition");
        ++pos_;
        if (min > kMaxRepetition || (max != kUnbounded && max > kMaxRepetition)) {
          pos_ = op_pos;
          fail("repetition count above " + std::to_string(kMaxRepetition));
        }
        if (max < min) {
          pos_ = op_pos;
          fail("repetition {" + std::to_string(min) + "," + std::to_string(max) + "}: the maximum is below the minimum");
        }
        repeat_last(items, min, max, op_pos);
      } else {
        break;
      }
      skip_space(nested);
    }
    return simplify(std::move(items), Expr::Kind::kSeq);
  }

  Expr parse_alternates(bool nested) {
    std::vector<Expr> alts;
    alts.push_back(parse_sequence(nested));
    while (peek() == '|') {
      ++pos_;
      skip_space(true);
      alts.push_back(parse_sequence(nested));
    }
    return simplify(std::move(alts), Expr::Kind::kAlt);
  }

  void parse_rule() {
    const size_t name_pos = pos_;
    const std::string name = parse_name();
    skip_space(false);
    if (s_.substr(pos_, 3) != "::=") fail("expected '::=' after rule name '" + name + "'");
    pos_ += 3;
    skip_space(true);
    const uint32_t id = rule_id(name, name_pos);
    if (defined_[id]) {
      pos_ = name_pos;
      fail("rule '" + name + "' is defined twice");
    }
    Expr body = parse_alternates(false);
    if (peek() == '\r') {
      pos_ += peek(1) == '\n' ? 2 : 1;
    } else if (peek() == '\n') {
      ++pos_;
    } else if (!at_end()) {
      fail(std::string("unexpected '") + peek() + "' (expected a newline or the end of the rule)");
    }
    g_.rules[id].body = std::move(body);
    defined_[id] = true;
    skip_space(true);
  }

  std::string_view s_;
  const TokenResolver& tokens_;
  size_t pos_ = 0;
  Grammar g_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<bool> defined_;
  std::vector<size_t> first_use_;
};

void print_char(std::string& out, uint32_t cp, bool in_class) {
  switch (cp) {
    case '\t': out += "\\t"; return;
    case '\r': out += "\\r"; return;
    case '\n': out += "\\n"; return;
    case '\\': out += "\\\\"; return;
    case '"': out += "\\\""; return;
    default: break;
  }
  if (in_class && (cp == ']' || cp == '[' || cp == '-' || cp == '^')) {
    out += '\\';
    if (cp == '^') {  // not an escape GBNF knows: write it as hex
      out += "x5E";
      return;
    }
    out += static_cast<char>(cp);
    return;
  }
  if (cp < 0x20 || cp == 0x7F || !utf8::is_scalar_value(cp)) {
    char buf[16];
    std::snprintf(buf, sizeof buf, cp <= 0xFF ? "\\x%02X" : cp <= 0xFFFF ? "\\u%04X" : "\\U%08X", cp);
    out += buf;
    return;
  }
  utf8::append(out, cp);
}

void print_expr(std::string& out, const Expr& e, const Grammar& g, bool need_group) {
  switch (e.kind) {
    case Expr::Kind::kEmpty: out += "\"\""; return;
    case Expr::Kind::kLiteral: {
      out += '"';
      for (size_t i = 0; i < e.text.size();) {
        const utf8::Decoded d = utf8::decode(e.text, i);
        print_char(out, d.cp, false);
        i += d.length;
      }
      out += '"';
      return;
    }
    case Expr::Kind::kChars: {
      if (e.ranges.empty()) {  // matches nothing: a class of the one non-character we never emit
        out += "[^\\x00-\\U0010FFFF]";
        return;
      }
      out += '[';
      for (const CodePointRange& r : e.ranges) {
        print_char(out, r.lo, true);
        if (r.hi != r.lo) {
          out += '-';
          print_char(out, r.hi, true);
        }
      }
      out += ']';
      return;
    }
    case Expr::Kind::kAny: out += '.'; return;
    case Expr::Kind::kRuleRef: out += g.rules[e.rule].name; return;
    case Expr::Kind::kToken:
      if (e.negated) out += '!';
      out += "<[" + std::to_string(e.token) + "]>";
      return;
    case Expr::Kind::kSeq:
    case Expr::Kind::kAlt: {
      if (need_group) out += '(';
      for (size_t i = 0; i < e.items.size(); ++i) {
        if (i > 0) out += e.kind == Expr::Kind::kSeq ? " " : " | ";
        const Expr& item = e.items[i];
        // Inside a sequence an alternative needs parentheses; a sequence inside an alternative
        // does not (`a b | c`), but a nested sequence in a sequence would flatten on reparse.
        const bool group = item.kind == Expr::Kind::kAlt || (e.kind == Expr::Kind::kSeq && item.kind == Expr::Kind::kSeq);
        print_expr(out, item, g, group);
      }
      if (need_group) out += ')';
      return;
    }
    case Expr::Kind::kRepeat: {
      const Expr& item = e.items.front();
      // A repeated repetition needs its own group, or `x**` would read as one operator each.
      const bool group = item.kind == Expr::Kind::kSeq || item.kind == Expr::Kind::kAlt ||
                         item.kind == Expr::Kind::kRepeat;
      if (item.kind == Expr::Kind::kRepeat) out += '(';
      print_expr(out, item, g, group && item.kind != Expr::Kind::kRepeat);
      if (item.kind == Expr::Kind::kRepeat) out += ')';
      if (e.min == 0 && e.max == kUnbounded) {
        out += '*';
      } else if (e.min == 1 && e.max == kUnbounded) {
        out += '+';
      } else if (e.min == 0 && e.max == 1) {
        out += '?';
      } else if (e.min == e.max) {
        out += '{' + std::to_string(e.min) + '}';
      } else if (e.max == kUnbounded) {
        out += '{' + std::to_string(e.min) + ",}";
      } else {
        out += '{' + std::to_string(e.min) + ',' + std::to_string(e.max) + '}';
      }
      return;
    }
  }
}

}  // namespace

Grammar parse_gbnf(std::string_view text, const TokenResolver& tokens, std::string_view root) {
  return Parser(text, tokens).parse(root);
}

std::string gbnf_literal(std::string_view utf8_text) {
  std::string out;
  print_expr(out, utf8_text.empty() ? Expr::empty() : Expr::literal(std::string(utf8_text)), Grammar{}, false);
  return out;
}

std::string gbnf_class(const std::vector<CodePointRange>& ranges) {
  std::string out;
  print_expr(out, Expr::chars(ranges), Grammar{}, false);
  return out;
}

std::string print_gbnf(const Grammar& grammar) {
  std::string out;
  for (const Rule& r : grammar.rules) {
    out += r.name;
    out += " ::= ";
    print_expr(out, r.body, grammar, false);
    out += '\n';
  }
  return out;
}

}  // namespace edgellm::grammar
