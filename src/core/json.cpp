#include "core/json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "core/error.h"
#include "core/utf8.h"

namespace edgellm {
namespace {

class Parser {
 public:
  Parser(std::string_view text, int max_depth) : s_(text), max_depth_(max_depth) {}

  Json parse_document() {
    skip_ws();
    Json v = parse_value(0);
    skip_ws();
    if (pos_ != s_.size()) fail("trailing characters after the JSON value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(ErrorCode::kInvalidFile, "JSON parse error at byte " + std::to_string(pos_) + ": " + what);
  }

  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }

  bool consume(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  void expect_literal(std::string_view lit) {
    if (s_.substr(pos_, lit.size()) != lit) fail("invalid literal");
    pos_ += lit.size();
  }

  Json parse_value(int depth) {
    if (depth > max_depth_) fail("nesting deeper than " + std::to_string(max_depth_));
    if (pos_ >= s_.size()) fail("unexpected end of input");
    const char c = s_[pos_];
    switch (c) {
      case '{': return parse_object(depth);
      case '[': return parse_array(depth);
      case '"': return Json(parse_string());
      case 't': expect_literal("true"); return Json(true);
      case 'f': expect_literal("false"); return Json(false);
      case 'n': expect_literal("null"); return Json(nullptr);
      default:
        if (c == '-' || (c >= '0' && c <= '9')) return Json(parse_number());
        fail(std::string("unexpected character '") + c + "'");
    }
  }

  Json parse_object(int depth) {
    ++pos_;  // '{'
    Json::Object obj;
    std::unordered_map<std::string, size_t> index;  // key -> position, built lazily
    skip_ws();
    if (consume('}')) return Json(std::move(obj));
    for (;;) {
      skip_ws();
      if (pos_ >= s_.size() || s_[pos_] != '"') fail("expected a string key");
      std::string key = parse_string();
      skip_ws();
      if (!consume(':')) fail("expected ':'");
      skip_ws();
      Json value = parse_value(depth + 1);
      // Duplicate keys: the last one wins, as in Python's json module. Large objects (a
      // tokenizer.json vocab has 150k keys) get a hash index so the check is not O(n^2).
      constexpr size_t kIndexThreshold = 32;
      size_t found = obj.size();
      if (obj.size() < kIndexThreshold) {
        for (size_t i = 0; i < obj.size(); ++i) {
          if (obj[i].first == key) { found = i; break; }
        }
      } else {
        if (index.empty()) {
          for (size_t i = 0; i < obj.size(); ++i) index.emplace(obj[i].first, i);
        }
        const auto it = index.find(key);
        if (it != index.end()) found = it->second;
        else index.emplace(key, obj.size());
      }
      if (found < obj.size()) obj[found].second = std::move(value);
      else obj.emplace_back(std::move(key), std::move(value));
      skip_ws();
      if (consume('}')) return Json(std::move(obj));
      if (!consume(',')) fail("expected ',' or '}'");
    }
  }

  Json parse_array(int depth) {
    ++pos_;  // '['
    Json::Array arr;
    skip_ws();
    if (consume(']')) return Json(std::move(arr));
    for (;;) {
      skip_ws();
      arr.push_back(parse_value(depth + 1));
      skip_ws();
      if (consume(']')) return Json(std::move(arr));
      if (!consume(',')) fail("expected ',' or ']'");
    }
  }

  double parse_number() {
    const size_t start = pos_;
    consume('-');
    if (pos_ >= s_.size()) fail("truncated number");
    if (s_[pos_] == '0') {
      ++pos_;
    } else if (s_[pos_] >= '1' && s_[pos_] <= '9') {
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
    } else {
      fail("invalid number");
    }
    if (consume('.')) {
      if (pos_ >= s_.size() || s_[pos_] < '0' || s_[pos_] > '9') fail("invalid fraction");
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (!consume('+')) consume('-');
      if (pos_ >= s_.size() || s_[pos_] < '0' || s_[pos_] > '9') fail("invalid exponent");
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
    }
    const std::string token(s_.substr(start, pos_ - start));
    return std::strtod(token.c_str(), nullptr);
  }

  uint32_t parse_hex4() {
    if (pos_ + 4 > s_.size()) fail("truncated \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = s_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f') v |= static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= static_cast<uint32_t>(c - 'A' + 10);
      else fail("invalid hex digit in \\u escape");
    }
    return v;
  }

  std::string parse_string() {
    ++pos_;  // opening quote
    std::string out;
    for (;;) {
      if (pos_ >= s_.size()) fail("unterminated string");
      const unsigned char c = static_cast<unsigned char>(s_[pos_++]);
      if (c == '"') return out;
      if (c < 0x20) fail("control character in string");
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (pos_ >= s_.size()) fail("truncated escape");
      const char e = s_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t cp = parse_hex4();
          if (cp >= 0xd800 && cp <= 0xdbff) {
            // A high surrogate must be followed by a low one; a lone one becomes U+FFFD.
            if (pos_ + 6 <= s_.size() && s_[pos_] == '\\' && s_[pos_ + 1] == 'u') {
              const size_t save = pos_;
              pos_ += 2;
              const uint32_t lo = parse_hex4();
              if (lo >= 0xdc00 && lo <= 0xdfff) {
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
              } else {
                pos_ = save;
                cp = 0xfffd;
              }
            } else {
              cp = 0xfffd;
            }
          } else if (cp >= 0xdc00 && cp <= 0xdfff) {
            cp = 0xfffd;
          }
          utf8::append(out, cp);
          break;
        }
        default: fail("invalid escape");
      }
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
  int max_depth_;
};

void dump_number(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out += "null";  // JSON has no NaN/Inf
    return;
  }
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
    out += buf;
    return;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  // Prefer the shortest representation that round-trips.
  for (int prec = 1; prec <= 17; ++prec) {
    char tmp[32];
    std::snprintf(tmp, sizeof tmp, "%.*g", prec, v);
    if (std::strtod(tmp, nullptr) == v) {
      out += tmp;
      return;
    }
  }
  out += buf;
}

void dump_value(std::string& out, const Json& v, int indent, int level, bool ensure_ascii) {
  auto newline = [&](int lvl) {
    if (indent < 0) return;
    out += '\n';
    out.append(static_cast<size_t>(indent * lvl), ' ');
  };
  switch (v.type()) {
    case Json::Type::kNull: out += "null"; break;
    case Json::Type::kBool: out += v.as_bool() ? "true" : "false"; break;
    case Json::Type::kNumber: dump_number(out, v.as_number()); break;
    case Json::Type::kString: json_escape(out, v.as_string(), ensure_ascii); break;
    case Json::Type::kArray: {
      const auto& a = v.as_array();
      out += '[';
      for (size_t i = 0; i < a.size(); ++i) {
        if (i) out += indent < 0 ? ", " : ",";
        newline(level + 1);
        dump_value(out, a[i], indent, level + 1, ensure_ascii);
      }
      if (!a.empty()) newline(level);
      out += ']';
      break;
    }
    case Json::Type::kObject: {
      const auto& o = v.as_object();
      out += '{';
      for (size_t i = 0; i < o.size(); ++i) {
        if (i) out += indent < 0 ? ", " : ",";
        newline(level + 1);
        json_escape(out, o[i].first, ensure_ascii);
        out += ": ";
        dump_value(out, o[i].second, indent, level + 1, ensure_ascii);
      }
      if (!o.empty()) newline(level);
      out += '}';
      break;
    }
  }
}

}  // namespace

Json Json::parse(std::string_view text, int max_depth) { return Parser(text, max_depth).parse_document(); }

namespace {
[[noreturn]] void type_error(const char* wanted) {
  throw Error(ErrorCode::kInvalidArgument, std::string("JSON value is not ") + wanted);
}
}  // namespace

bool Json::as_bool() const {
  if (!is_bool()) type_error("a boolean");
  return std::get<bool>(value_);
}
double Json::as_number() const {
  if (!is_number()) type_error("a number");
  return std::get<double>(value_);
}
int64_t Json::as_int() const {
  const double d = as_number();
  if (d != std::floor(d) || std::fabs(d) > 9.007199254740992e15) type_error("an integer");
  return static_cast<int64_t>(d);
}
const std::string& Json::as_string() const {
  if (!is_string()) type_error("a string");
  return std::get<std::string>(value_);
}
const Json::Array& Json::as_array() const {
  if (!is_array()) type_error("an array");
  return std::get<Array>(value_);
}
Json::Array& Json::as_array() {
  if (!is_array()) type_error("an array");
  return std::get<Array>(value_);
}
const Json::Object& Json::as_object() const {
  if (!is_object()) type_error("an object");
  return std::get<Object>(value_);
}
Json::Object& Json::as_object() {
  if (!is_object()) type_error("an object");
  return std::get<Object>(value_);
}

const Json* Json::find(std::string_view key) const {
  if (!is_object()) return nullptr;
  for (const auto& kv : std::get<Object>(value_)) {
    if (kv.first == key) return &kv.second;
  }
  return nullptr;
}

const Json& Json::at(std::string_view key) const {
  const Json* v = find(key);
  if (!v) throw Error(ErrorCode::kInvalidArgument, "JSON object has no key '" + std::string(key) + "'");
  return *v;
}

const Json& Json::at(size_t index) const {
  const auto& a = as_array();
  if (index >= a.size()) throw Error(ErrorCode::kInvalidArgument, "JSON array index out of range");
  return a[index];
}

Json& Json::set(std::string key, Json value) {
  auto& o = as_object();
  for (auto& kv : o) {
    if (kv.first == key) {
      kv.second = std::move(value);
      return kv.second;
    }
  }
  o.emplace_back(std::move(key), std::move(value));
  return o.back().second;
}

void Json::push_back(Json value) { as_array().push_back(std::move(value)); }

size_t Json::size() const {
  if (is_array()) return std::get<Array>(value_).size();
  if (is_object()) return std::get<Object>(value_).size();
  if (is_string()) return std::get<std::string>(value_).size();
  return 0;
}

std::string Json::dump(int indent, bool ensure_ascii) const {
  std::string out;
  dump_value(out, *this, indent, 0, ensure_ascii);
  return out;
}

void json_escape(std::string& out, std::string_view s, bool ensure_ascii) {
  out += '"';
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      default: break;
    }
    if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else if (c >= 0x80 && ensure_ascii) {
      // One well-formed UTF-8 sequence; a byte that does not start one is written as U+FFFD and
      // only that byte is consumed, so the bytes after it are still escaped on their own.
      const utf8::Decoded d = utf8::decode(s, i);
      const uint32_t cp = d.ok() ? d.cp : utf8::kReplacementChar;
      const size_t len = d.ok() ? d.length : 1;
      i += len - 1;
      char buf[16];
      if (cp >= 0x10000) {
        const uint32_t v = cp - 0x10000;
        std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xd800 + (v >> 10), 0xdc00 + (v & 0x3ff));
      } else {
        std::snprintf(buf, sizeof buf, "\\u%04x", cp);
      }
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
}

}  // namespace edgellm
