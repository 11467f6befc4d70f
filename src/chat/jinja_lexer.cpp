#include "chat/jinja_lexer.h"

#include <algorithm>

namespace edgellm::jinja {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || static_cast<unsigned char>(c) >= 0x80;
}
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

class Lexer {
 public:
  explicit Lexer(std::string_view source) {
    // Newline normalisation and keep_trailing_newline=False.
    src_.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
      if (source[i] == '\r') {
        src_ += '\n';
        if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
      } else {
        src_ += source[i];
      }
    }
    if (!src_.empty() && src_.back() == '\n') src_.pop_back();
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i) {
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  std::vector<Token> run() {
    size_t pos = 0;
    bool line_starting = true;  // the text before the next tag starts at the beginning of a line
    bool strip_next = false;    // the previous tag ended with '-': drop leading whitespace
    while (pos <= src_.size()) {
      size_t tag = find_tag(pos);
      std::string text = src_.substr(pos, (tag == std::string::npos ? src_.size() : tag) - pos);
      if (strip_next) {
        size_t k = 0;
        while (k < text.size() && is_space(text[k])) ++k;
        text.erase(0, k);
        strip_next = false;
      }
      if (tag == std::string::npos) {
        emit_data(std::move(text), pos);
        break;
      }
      const char kind = src_[tag + 1];  // '{', '%' or '#'
      const char mod = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
      const bool is_block_like = kind == '%' || kind == '#';
      if (mod == '-') {
        while (!text.empty() && is_space(text.back())) text.pop_back();
      } else if (mod != '+' && is_block_like) {
        lstrip_line(text, line_starting);
      }
      emit_data(std::move(text), pos);
      size_t inner = tag + 2 + ((mod == '-' || mod == '+') ? 1 : 0);
      char end_mod = '\0';
      if (kind == '#') {
        size_t end = src_.find("#}", inner);
        if (end == std::string::npos) fail_at(pos_of(tag), "unterminated comment");
        end_mod = end > inner && (src_[end - 1] == '-' || src_[end - 1] == '+') ? src_[end - 1] : '\0';
        pos = end + 2;
      } else if (kind == '%' && raw_begin(inner, &pos, &end_mod)) {
        pos = lex_raw(tag, pos, end_mod);
        line_starting = false;
        continue;
      } else {
        pos = lex_tag(tag, kind, inner, &end_mod);
      }
      line_starting = false;
      if (end_mod == '-') {
        strip_next = true;
        size_t k = pos;
        while (k < src_.size() && is_space(src_[k])) ++k;
        line_starting = k > pos && src_[k - 1] == '\n';
      } else if (end_mod != '+' && is_block_like && pos < src_.size() && src_[pos] == '\n') {
        ++pos;  // trim_blocks
        line_starting = true;
      }
      if (pos == src_.size()) break;
    }
    tokens_.push_back(Token{TokenType::kEof, "", pos_of(src_.size())});
    return std::move(tokens_);
  }

 private:
  SourcePos pos_of(size_t offset) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    size_t line = static_cast<size_t>(it - line_starts_.begin());
    SourcePos p;
    p.line = static_cast<int>(line);
    p.column = static_cast<int>(offset - line_starts_[line - 1] + 1);
    return p;
  }

  size_t find_tag(size_t from) const {
    for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return std::string::npos;
  }

  // lstrip_blocks: drop spaces/tabs between the last newline (or the line start) and the tag.
  static void lstrip_line(std::string& text, bool line_starting) {
    size_t nl = text.rfind('\n');
    size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
    if (l_pos == 0 && !line_starting) return;
    for (size_t k = l_pos; k < text.size(); ++k) {
      if (text[k] != ' ' && text[k] != '\t') return;
    }
    text.resize(l_pos);
  }

  void emit_data(std::string text, size_t offset) {
    if (text.empty()) return;
    tokens_.push_back(Token{TokenType::kData, std::move(text), pos_of(offset)});
  }

  size_t skip_ws(size_t i) const {
    while (i < src_.size() && is_space(src_[i])) ++i;
    return i;
  }

  bool word_at(size_t i, std::string_view w) const {
    return src_.compare(i, w.size(), w) == 0 && (i + w.size() >= src_.size() || !is_name_char(src_[i + w.size()]));
  }

  // `{% raw %}` / `{% raw -%}`: jinja2 applies no trim_blocks after the raw opening tag.
  bool raw_begin(size_t inner, size_t* after, char* end_mod) const {
    size_t i = skip_ws(inner);
    if (!word_at(i, "raw")) return false;
    i = skip_ws(i + 3);
    if (src_.compare(i, 3, "-%}") == 0) {
      *end_mod = '-';
      *after = skip_ws(i + 3);
      return true;
    }
    if (src_.compare(i, 2, "%}") == 0) {
      *end_mod = '\0';
      *after = i + 2;
      return true;
    }
    return false;
  }

  // Raw content up to `{% endraw %}`; returns the offset after the closing tag.
  size_t lex_raw(size_t tag, size_t content_begin, char begin_mod) {
    for (size_t i = src_.find("{%", content_begin); i != std::string::npos; i = src_.find("{%", i + 1)) {
      size_t j = i + 2;
      char mod = '\0';
      if (j < src_.size() && (src_[j] == '-' || src_[j] == '+')) mod = src_[j++];
      j = skip_ws(j);
      if (!word_at(j, "endraw")) continue;
      j = skip_ws(j + 6);
      char end_mod = '\0';
      if (j < src_.size() && (src_[j] == '-' || src_[j] == '+')) end_mod = src_[j++];
      if (src_.compare(j, 2, "%}") != 0) continue;
      std::string text = src_.substr(content_begin, i - content_begin);
      if (mod == '-') {
        while (!text.empty() && is_space(text.back())) text.pop_back();
      } else if (mod != '+') {
        lstrip_line(text, begin_mod == '-' && content_begin > 0 && src_[content_begin - 1] == '\n');
      }
      emit_data(std::move(text), content_begin);
      size_t after = j + 2;
      if (end_mod == '-') {
        after = skip_ws(after);
      } else if (end_mod != '+' && after < src_.size() && src_[after] == '\n') {
        ++after;
      }
      return after;
    }
    fail_at(pos_of(tag), "unterminated raw block (missing {% endraw %})");
  }

  // Tokenises the inside of {{ }} or {% %}; returns the offset after the closing delimiter.
  size_t lex_tag(size_t tag, char kind, size_t i, char* end_mod) {
    const char close = kind == '{' ? '}' : '%';
    tokens_.push_back(Token{kind == '{' ? TokenType::kVarBegin : TokenType::kBlockBegin, "", pos_of(tag)});
    std::vector<char> brackets;
    while (true) {
      i = skip_ws(i);
      if (i >= src_.size()) {
        fail_at(pos_of(tag), std::string("unexpected end of template, expected '") + close + "}'");
      }
      if (brackets.empty()) {
        size_t j = i;
        char mod = '\0';
        if (src_[j] == '-' || src_[j] == '+') mod = src_[j++];
        if (j + 1 < src_.size() && src_[j] == close && src_[j + 1] == '}') {
          tokens_.push_back(Token{kind == '{' ? TokenType::kVarEnd : TokenType::kBlockEnd, "", pos_of(i)});
          *end_mod = mod;
          return j + 2;
        }
      }
      const SourcePos p = pos_of(i);
      const char c = src_[i];
      if (is_name_start(c)) {
        size_t j = i;
        while (j < src_.size() && is_name_char(src_[j])) ++j;
        tokens_.push_back(Token{TokenType::kName, src_.substr(i, j - i), p});
        i = j;
      } else if (is_digit(c)) {
        i = lex_number(i, p);
      } else if (c == '\'' || c == '"') {
        i = lex_string(i, p);
      } else {
        static const char* const kTwo[] = {"//", "**", "==", "!=", "<=", ">="};
        std::string op;
        for (const char* t : kTwo) {
          if (src_.compare(i, 2, t) == 0) op = t;
        }
        if (op.empty()) {
          if (std::string_view("+-*/%~<>=()[]{},.:|").find(c) == std::string_view::npos) {
            fail_at(p, std::string("unexpected character '") + c + "'");
          }
          op = std::string(1, c);
        }
        if (c == '(' || c == '[' || c == '{') brackets.push_back(c);
        if (c == ')' || c == ']' || c == '}') {
          const char open = c == ')' ? '(' : c == ']' ? '[' : '{';
          if (brackets.empty() || brackets.back() != open) fail_at(p, std::string("unexpected '") + c + "'");
          brackets.pop_back();
        }
        tokens_.push_back(Token{TokenType::kOperator, op, p});
        i += op.size();
      }
    }
  }

  size_t lex_number(size_t i, SourcePos p) {
    size_t j = i;
    auto digits = [&] {
      while (j < src_.size() && (is_digit(src_[j]) || (src_[j] == '_' && j + 1 < src_.size() && is_digit(src_[j + 1])))) ++j;
    };
    digits();
    bool is_float = false;
    // After a '.', digits are an attribute index (`foo.0.1` is foo[0][1]), never a float.
    const bool after_dot = i > 0 && src_[i - 1] == '.';
    if (!after_dot && j + 1 < src_.size() && src_[j] == '.' && is_digit(src_[j + 1])) {
      ++j;
      digits();
      is_float = true;
    }
    if (!after_dot && j < src_.size() && (src_[j] == 'e' || src_[j] == 'E')) {
      size_t k = j + 1;
      if (k < src_.size() && (src_[k] == '+' || src_[k] == '-')) ++k;
      if (k < src_.size() && is_digit(src_[k])) {
        j = k;
        digits();
        is_float = true;
      }
    }
    std::string text;
    for (size_t k = i; k < j; ++k) {
      if (src_[k] != '_') text += src_[k];
    }
    tokens_.push_back(Token{is_float ? TokenType::kFloat : TokenType::kInt, text, p});
    return j;
  }

  static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // Python string literal escapes.
  size_t lex_string(size_t i, SourcePos p) {
    const char quote = src_[i];
    std::string out;
    size_t j = i + 1;
    while (true) {
      if (j >= src_.size()) fail_at(p, "unterminated string literal");
      char c = src_[j];
      if (c == quote) break;
      if (c != '\\') {
        out += c;
        ++j;
        continue;
      }
      if (j + 1 >= src_.size()) fail_at(p, "unterminated string literal");
      char e = src_[j + 1];
      j += 2;
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'v': out += '\v'; break;
        case '0': out += '\0'; break;
        case '\n': break;
        case 'x':
        case 'u':
        case 'U': {
          size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          uint32_t cp = 0;
          for (size_t k = 0; k < n; ++k) {
            int h = j + k < src_.size() ? hex_value(src_[j + k]) : -1;
            if (h < 0) fail_at(p, std::string("truncated \\") + e + " escape in string literal");
            cp = cp * 16 + static_cast<uint32_t>(h);
          }
          if (cp > 0x10FFFF) fail_at(p, "invalid \\U escape in string literal");
          j += n;
          utf8_append(out, cp);
          break;
        }
        default:
          out += '\\';
          out += e;
      }
    }
    tokens_.push_back(Token{TokenType::kString, std::move(out), p});
    return j + 1;
  }

  std::string src_;
  std::vector<size_t> line_starts_;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) { return Lexer(source).run(); }

}  // namespace edgellm::jinja
