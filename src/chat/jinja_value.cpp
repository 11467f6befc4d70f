#include "chat/jinja_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "core/error.h"

namespace edgellm::jinja {

void fail_at(SourcePos pos, const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument, "template error at line " + std::to_string(pos.line) +
                                               ", column " + std::to_string(pos.column) + ": " +
                                               message);
}

void value_error(const std::string& message) { throw ValueError{message}; }

void check_string_size(size_t bytes) {
  if (bytes > kMaxStringBytes) {
    value_error("string of " + std::to_string(bytes) + " bytes exceeds the template limit of " +
                std::to_string(kMaxStringBytes));
  }
}

void check_collection_size(size_t count) {
  if (count > kMaxCollectionSize) {
    value_error("list of " + std::to_string(count) + " items exceeds the template limit of " +
                std::to_string(kMaxCollectionSize));
  }
}

const Value* DictData::find(std::string_view key) const {
  for (const auto& kv : items) {
    if (kv.first == key) return &kv.second;
  }
  return nullptr;
}

void DictData::set(const std::string& key, Value value) {
  for (auto& kv : items) {
    if (kv.first == key) {
      kv.second = std::move(value);
      return;
    }
  }
  check_collection_size(items.size() + 1);
  items.emplace_back(key, std::move(value));
}

const Value* CallArgs::get(size_t index, std::string_view name) const {
  if (index < positional.size()) return &positional[index];
  return keyword_arg(name);
}

const Value* CallArgs::keyword_arg(std::string_view name) const {
  for (const auto& kv : keyword) {
    if (kv.first == name) return &kv.second;
  }
  return nullptr;
}

Value Value::list(std::vector<Value> items, bool is_tuple) {
  auto l = std::make_shared<ListData>();
  l->items = std::move(items);
  l->is_tuple = is_tuple;
  return Value(std::move(l));
}

Value Value::dict() { return Value(std::make_shared<DictData>()); }

Value Value::function(std::string name, std::function<Value(CallArgs&)> fn) {
  auto c = std::make_shared<Callable>();
  c->name = std::move(name);
  c->fn = std::move(fn);
  return Value(std::move(c));
}

Value Value::from_json(const Json& j) {
  switch (j.type()) {
    case Json::Type::kNull:
      return Value::none();
    case Json::Type::kBool:
      return Value(j.as_bool());
    case Json::Type::kNumber: {
      double d = j.as_number();
      constexpr double kMaxExactInt = 9007199254740992.0;  // 2^53: every integer below is exact
      if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) <= kMaxExactInt) {
        return Value(static_cast<int64_t>(d));
      }
      return Value(d);
    }
    case Json::Type::kString:
      return Value(j.as_string());
    case Json::Type::kArray: {
      std::vector<Value> items;
      items.reserve(j.as_array().size());
      for (const auto& e : j.as_array()) items.push_back(from_json(e));
      return Value::list(std::move(items));
    }
    case Json::Type::kObject: {
      auto d = std::make_shared<DictData>();
      for (const auto& kv : j.as_object()) d->set(kv.first, from_json(kv.second));
      return Value(std::move(d));
    }
  }
  return Value::none();
}

double Value::to_double() const {
  switch (kind()) {
    case Kind::kBool:
      return as_bool() ? 1.0 : 0.0;
    case Kind::kInt:
      return static_cast<double>(as_int());
    case Kind::kFloat:
      return as_float();
    default:
      value_error(std::string("expected a number, got ") + type_name());
  }
}

bool Value::truthy() const {
  switch (kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return as_bool();
    case Kind::kInt:
      return as_int() != 0;
    case Kind::kFloat:
      return as_float() != 0.0;
    case Kind::kString:
      return !str().empty();
    case Kind::kList:
      return !items().empty();
    case Kind::kDict:
      return dict_ptr()->is_namespace || !dict_ptr()->items.empty();
    case Kind::kCallable:
      return true;
  }
  return false;
}

const char* Value::type_name() const {
  switch (kind()) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kList:
      return list_ptr()->is_tuple ? "tuple" : "list";
    case Kind::kDict:
      return dict_ptr()->is_namespace ? "Namespace" : "dict";
    case Kind::kCallable:
      return "function";
  }
  return "object";
}

// ------------------------------------------------------------------ printing

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  if (d == 0.0) return std::signbit(d) ? "-0.0" : "0.0";
  // Shortest round-trip digits in scientific form, then laid out the way Python's repr does:
  // fixed notation for decimal exponents in (-4, 16], scientific with a 2-digit exponent otherwise.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string s(buf, res.ptr);
  std::string out;
  if (s[0] == '-') {
    out = "-";
    s.erase(0, 1);
  }
  size_t e = s.find('e');
  std::string digits;
  for (size_t i = 0; i < e; ++i) {
    if (s[i] != '.') digits += s[i];
  }
  int exp10 = std::atoi(s.c_str() + e + 1);
  int decpt = exp10 + 1;
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += "0." + std::string(static_cast<size_t>(-decpt), '0') + digits;
    } else if (static_cast<size_t>(decpt) >= digits.size()) {
      out += digits + std::string(static_cast<size_t>(decpt) - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(decpt)) + "." +
             digits.substr(static_cast<size_t>(decpt));
    }
  } else {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    out += exp10 < 0 ? "e-" : "e+";
    int a = std::abs(exp10);
    if (a < 10) out += "0";
    out += std::to_string(a);
  }
  return out;
}

namespace {

void check_depth(int depth) {
  if (depth > kMaxValueDepth) value_error("value nested too deeply (or contains itself)");
}

void repr_string(std::string& out, const std::string& s) {
  char quote = '\'';
  if (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) quote = '"';
  out += quote;
  for (unsigned char c : s) {
    if (c == static_cast<unsigned char>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      static const char* kHex = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  out += quote;
}

void append_str(std::string& out, const Value& v, bool repr, int depth) {
  check_depth(depth);
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return;
    case Value::Kind::kNone:
      out += "None";
      return;
    case Value::Kind::kBool:
      out += v.as_bool() ? "True" : "False";
      return;
    case Value::Kind::kInt:
      out += std::to_string(v.as_int());
      return;
    case Value::Kind::kFloat:
      out += float_repr(v.as_float());
      return;
    case Value::Kind::kString:
      if (repr) {
        repr_string(out, v.str());
      } else {
        out += v.str();
      }
      return;
    case Value::Kind::kList: {
      bool tuple = v.list_ptr()->is_tuple;
      out += tuple ? '(' : '[';
      const auto& items = v.items();
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += ", ";
        append_str(out, items[i], true, depth + 1);
        check_string_size(out.size());
      }
      if (tuple && items.size() == 1) out += ',';
      out += tuple ? ')' : ']';
      return;
    }
    case Value::Kind::kDict: {
      bool ns = v.dict_ptr()->is_namespace;
      if (ns) out += "<Namespace ";
      out += '{';
      bool first = true;
      for (const auto& kv : v.dict_ptr()->items) {
        if (!first) out += ", ";
        first = false;
        repr_string(out, kv.first);
        out += ": ";
        append_str(out, kv.second, true, depth + 1);
        check_string_size(out.size());
      }
      out += '}';
      if (ns) out += '>';
      return;
    }
    case Value::Kind::kCallable:
      out += "<function " + v.fn_ptr()->name + ">";
      return;
  }
}

}  // namespace

std::string to_str(const Value& v) {
  if (v.is_string()) return v.str();
  std::string out;
  append_str(out, v, false, 0);
  return out;
}

std::string to_repr(const Value& v) {
  std::string out;
  append_str(out, v, true, 0);
  return out;
}

// ------------------------------------------------------------------ comparison

namespace {

bool is_intlike(const Value& v) { return v.is_int() || v.is_bool(); }
int64_t intlike(const Value& v) { return v.is_bool() ? (v.as_bool() ? 1 : 0) : v.as_int(); }

bool equal_at(const Value& a, const Value& b, int depth) {
  check_depth(depth);
  if (a.is_number() && b.is_number()) {
    if (is_intlike(a) && is_intlike(b)) return intlike(a) == intlike(b);
    return a.to_double() == b.to_double();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kString:
      return a.str() == b.str();
    case Value::Kind::kList: {
      const auto& x = a.items();
      const auto& y = b.items();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!equal_at(x[i], y[i], depth + 1)) return false;
      }
      return true;
    }
    case Value::Kind::kDict: {
      const auto& x = a.dict_ptr()->items;
      const auto& y = *b.dict_ptr();
      if (a.dict_ptr()->is_namespace || y.is_namespace) return a.dict_ptr() == b.dict_ptr();
      if (x.size() != y.items.size()) return false;
      for (const auto& kv : x) {
        const Value* other = y.find(kv.first);
        if (!other || !equal_at(kv.second, *other, depth + 1)) return false;
      }
      return true;
    }
    case Value::Kind::kCallable:
      return a.fn_ptr() == b.fn_ptr();
    default:
      return false;
  }
}

bool less_at(const Value& a, const Value& b, int depth) {
  check_depth(depth);
  if (a.is_number() && b.is_number()) {
    if (is_intlike(a) && is_intlike(b)) return intlike(a) < intlike(b);
    return a.to_double() < b.to_double();
  }
  if (a.is_string() && b.is_string()) return a.str() < b.str();  // UTF-8 order = code point order
  if (a.is_list() && b.is_list()) {
    const auto& x = a.items();
    const auto& y = b.items();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!equal_at(x[i], y[i], depth + 1)) return less_at(x[i], y[i], depth + 1);
    }
    return x.size() < y.size();
  }
  value_error(std::string("'<' not supported between instances of '") + a.type_name() + "' and '" +
              b.type_name() + "'");
}

}  // namespace

bool values_equal(const Value& a, const Value& b) { return equal_at(a, b, 0); }
bool values_less(const Value& a, const Value& b) { return less_at(a, b, 0); }

// ------------------------------------------------------------------ json.dumps

namespace {

void json_string(std::string& out, const std::string& s, bool ensure_ascii) {
  static const char* kHex = "0123456789abcdef";
  auto u_escape = [&](uint32_t unit) {
    out += "\\u";
    for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(unit >> shift) & 15];
  };
  out += '"';
  if (!ensure_ascii) {
    for (unsigned char c : s) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
          if (c < 0x20) {
            u_escape(c);
          } else {
            out += static_cast<char>(c);
          }
      }
    }
  } else {
    for (uint32_t cp : utf8_decode(s)) {
      switch (cp) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
          if (cp >= 0x20 && cp < 0x7f) {
            out += static_cast<char>(cp);
          } else if (cp > 0x10FFFF) {
            u_escape(0xFFFD);  // an invalid UTF-8 byte: Python would not have such a str
          } else if (cp >= 0x10000) {
            uint32_t v = cp - 0x10000;
            u_escape(0xD800 + (v >> 10));
            u_escape(0xDC00 + (v & 0x3FF));
          } else {
            u_escape(cp);
          }
      }
    }
  }
  out += '"';
}

void json_value(std::string& out, const Value& v, const JsonDumpOptions& o, int depth) {
  check_depth(depth);
  check_string_size(out.size());
  auto newline = [&](int level) {
    out += '\n';
    for (int i = 0; i < level; ++i) out += o.indent;
  };
  switch (v.kind()) {
    case Value::Kind::kNone:
      out += "null";
      return;
    case Value::Kind::kBool:
      out += v.as_bool() ? "true" : "false";
      return;
    case Value::Kind::kInt:
      out += std::to_string(v.as_int());
      return;
    case Value::Kind::kFloat: {
      double d = v.as_float();
      if (std::isnan(d)) {
        out += "NaN";
      } else if (std::isinf(d)) {
        out += d < 0 ? "-Infinity" : "Infinity";
      } else {
        out += float_repr(d);
      }
      return;
    }
    case Value::Kind::kString:
      json_string(out, v.str(), o.ensure_ascii);
      return;
    case Value::Kind::kList: {
      const auto& items = v.items();
      if (items.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += o.item_separator;
        if (o.has_indent) newline(depth + 1);
        json_value(out, items[i], o, depth + 1);
      }
      if (o.has_indent) newline(depth);
      out += ']';
      return;
    }
    case Value::Kind::kDict: {
      std::vector<const std::pair<std::string, Value>*> entries;
      for (const auto& kv : v.dict_ptr()->items) entries.push_back(&kv);
      if (o.sort_keys) {
        std::stable_sort(entries.begin(), entries.end(),
                         [](auto* a, auto* b) { return a->first < b->first; });
      }
      if (entries.empty()) {
        out += "{}";
        return;
      }
      out += '{';
      for (size_t i = 0; i < entries.size(); ++i) {
        if (i) out += o.item_separator;
        if (o.has_indent) newline(depth + 1);
        json_string(out, entries[i]->first, o.ensure_ascii);
        out += o.key_separator;
        json_value(out, entries[i]->second, o, depth + 1);
      }
      if (o.has_indent) newline(depth);
      out += '}';
      return;
    }
    case Value::Kind::kUndefined:
      value_error("Object of type Undefined is not JSON serializable");
    case Value::Kind::kCallable:
      value_error("Object of type function is not JSON serializable");
  }
}

}  // namespace

std::string json_dumps(const Value& v, const JsonDumpOptions& options) {
  std::string out;
  json_value(out, v, options, 0);
  check_string_size(out.size());
  return out;
}

namespace {

int depth_of(const Value& v, const DictData* self, int level,
             std::unordered_map<const void*, int>& memo) {
  check_depth(level);
  const void* key = nullptr;
  if (v.is_list()) key = v.list_ptr().get();
  if (v.is_dict()) key = v.dict_ptr().get();
  if (!key) return 0;
  if (key == self) value_error("a namespace cannot contain itself");
  if (auto it = memo.find(key); it != memo.end()) return it->second;
  int deepest = 0;
  if (v.is_list()) {
    for (const auto& e : v.items()) deepest = std::max(deepest, depth_of(e, self, level + 1, memo));
  } else {
    for (const auto& kv : v.dict_ptr()->items) {
      deepest = std::max(deepest, depth_of(kv.second, self, level + 1, memo));
    }
  }
  memo[key] = deepest + 1;
  return deepest + 1;
}

}  // namespace

int checked_depth(const Value& v, const DictData* self) {
  std::unordered_map<const void*, int> memo;
  return depth_of(v, self, 0, memo);
}

// ------------------------------------------------------------------ arithmetic

namespace {

[[noreturn]] void unsupported(const char* op, const Value& a, const Value& b) {
  if (a.is_undefined()) value_error("'" + a.undefined_name() + "' is undefined");
  if (b.is_undefined()) value_error("'" + b.undefined_name() + "' is undefined");
  value_error(std::string("unsupported operand type(s) for ") + op + ": '" + a.type_name() +
              "' and '" + b.type_name() + "'");
}

Value repeat_string(const std::string& s, int64_t n) {
  if (n <= 0 || s.empty()) return Value(std::string());
  if (static_cast<uint64_t>(n) > kMaxStringBytes / s.size() + 1) check_string_size(kMaxStringBytes + 1);
  check_string_size(s.size() * static_cast<size_t>(n));
  std::string out;
  out.reserve(s.size() * static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out += s;
  return Value(std::move(out));
}

Value repeat_list(const Value& l, int64_t n) {
  const auto& items = l.items();
  std::vector<Value> out;
  if (n > 0 && !items.empty()) {
    if (static_cast<uint64_t>(n) > kMaxCollectionSize) check_collection_size(kMaxCollectionSize + 1);
    check_collection_size(items.size() * static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out.insert(out.end(), items.begin(), items.end());
  }
  return Value::list(std::move(out), l.list_ptr()->is_tuple);
}

double py_fmod(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0.0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// printf-style formatting for `'%s' % value` (Python's str % operator); the common conversions.
Value percent_format(const std::string& fmt, const Value& args) {
  std::vector<Value> list;
  if (args.is_list() && args.list_ptr()->is_tuple) {
    list = args.items();
  } else {
    list.push_back(args);
  }
  size_t next = 0;
  std::string out;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    ++i;
    std::string spec;
    while (i < fmt.size() && std::string_view("0123456789.-+ #").find(fmt[i]) != std::string_view::npos) {
      spec += fmt[i++];
    }
    if (i >= fmt.size()) value_error("incomplete format");
    char conv = fmt[i];
    if (conv == '%') {
      out += '%';
      continue;
    }
    if (next >= list.size()) value_error("not enough arguments for format string");
    const Value& a = list[next++];
    std::string piece;
    switch (conv) {
      case 's': piece = to_str(a); break;
      case 'r': piece = to_repr(a); break;
      case 'd':
      case 'i': {
        if (!a.is_number()) value_error(std::string("%d format: a number is required, not ") + a.type_name());
        piece = std::to_string(a.is_float() ? static_cast<int64_t>(a.as_float()) : intlike(a));
        break;
      }
      case 'f':
      case 'e':
      case 'g': {
        if (!a.is_number()) value_error(std::string("%f format: a number is required, not ") + a.type_name());
        std::string cfmt = "%" + spec + conv;
        char buf[512];
        int n = std::snprintf(buf, sizeof(buf), cfmt.c_str(), a.to_double());
        if (n < 0 || static_cast<size_t>(n) >= sizeof(buf)) value_error("format result too long");
        out += buf;
        continue;
      }
      default:
        value_error(std::string("unsupported format character '") + conv + "'");
    }
    // Width and '-' alignment for %s/%d.
    int width = 0;
    bool left = false;
    for (char c : spec) {
      if (c == '-') left = true;
      else if (c >= '0' && c <= '9') width = std::min(width * 10 + (c - '0'), 4096);
    }
    if (static_cast<int>(piece.size()) < width) {
      std::string pad(static_cast<size_t>(width) - piece.size(), ' ');
      piece = left ? piece + pad : pad + piece;
    }
    out += piece;
    check_string_size(out.size());
  }
  if (next < list.size()) value_error("not all arguments converted during string formatting");
  return Value(std::move(out));
}

}  // namespace

Value binary_op(BinaryOp op, const Value& a, const Value& b) {
  const bool ints = is_intlike(a) && is_intlike(b);
  const bool nums = a.is_number() && b.is_number();
  switch (op) {
    case BinaryOp::kAdd:
      if (ints) {
        int64_t r;
        if (__builtin_add_overflow(intlike(a), intlike(b), &r)) value_error("integer overflow");
        return Value(r);
      }
      if (nums) return Value(a.to_double() + b.to_double());
      if (a.is_string() && b.is_string()) {
        check_string_size(a.str().size() + b.str().size());
        return Value(a.str() + b.str());
      }
      if (a.is_list() && b.is_list()) {
        check_collection_size(a.items().size() + b.items().size());
        std::vector<Value> out = a.items();
        out.insert(out.end(), b.items().begin(), b.items().end());
        return Value::list(std::move(out), a.list_ptr()->is_tuple);
      }
      unsupported("+", a, b);
    case BinaryOp::kSub:
      if (ints) {
        int64_t r;
        if (__builtin_sub_overflow(intlike(a), intlike(b), &r)) value_error("integer overflow");
        return Value(r);
      }
      if (nums) return Value(a.to_double() - b.to_double());
      unsupported("-", a, b);
    case BinaryOp::kMul:
      if (ints) {
        int64_t r;
        if (__builtin_mul_overflow(intlike(a), intlike(b), &r)) value_error("integer overflow");
        return Value(r);
      }
      if (nums) return Value(a.to_double() * b.to_double());
      if (a.is_string() && is_intlike(b)) return repeat_string(a.str(), intlike(b));
      if (is_intlike(a) && b.is_string()) return repeat_string(b.str(), intlike(a));
      if (a.is_list() && is_intlike(b)) return repeat_list(a, intlike(b));
      if (is_intlike(a) && b.is_list()) return repeat_list(b, intlike(a));
      unsupported("*", a, b);
    case BinaryOp::kDiv:
      if (nums) {
        if (b.to_double() == 0.0) value_error("division by zero");
        return Value(a.to_double() / b.to_double());
      }
      unsupported("/", a, b);
    case BinaryOp::kFloorDiv:
      if (ints) {
        int64_t x = intlike(a), y = intlike(b);
        if (y == 0) value_error("integer division or modulo by zero");
        if (x == std::numeric_limits<int64_t>::min() && y == -1) value_error("integer overflow");
        int64_t q = x / y;
        if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
        return Value(q);
      }
      if (nums) {
        if (b.to_double() == 0.0) value_error("float floor division by zero");
        return Value(std::floor(a.to_double() / b.to_double()));
      }
      unsupported("//", a, b);
    case BinaryOp::kMod:
      if (ints) {
        int64_t x = intlike(a), y = intlike(b);
        if (y == 0) value_error("integer division or modulo by zero");
        if (y == -1) return Value(int64_t{0});
        int64_t r = x % y;
        if (r != 0 && ((r < 0) != (y < 0))) r += y;
        return Value(r);
      }
      if (nums) {
        if (b.to_double() == 0.0) value_error("float modulo");
        return Value(py_fmod(a.to_double(), b.to_double()));
      }
      if (a.is_string()) return percent_format(a.str(), b);
      unsupported("%", a, b);
    case BinaryOp::kPow:
      if (ints && intlike(b) >= 0) {
        int64_t base = intlike(a), e = intlike(b), r = 1;
        while (e > 0) {
          if (e & 1) {
            if (__builtin_mul_overflow(r, base, &r)) value_error("integer overflow");
          }
          e >>= 1;
          if (e > 0 && __builtin_mul_overflow(base, base, &base)) value_error("integer overflow");
        }
        return Value(r);
      }
      if (nums) {
        if (a.to_double() == 0.0 && b.to_double() < 0) value_error("0.0 cannot be raised to a negative power");
        return Value(std::pow(a.to_double(), b.to_double()));
      }
      unsupported("**", a, b);
  }
  value_error("unknown operator");
}

Value negate(const Value& v) {
  if (is_intlike(v)) {
    if (intlike(v) == std::numeric_limits<int64_t>::min()) value_error("integer overflow");
    return Value(-intlike(v));
  }
  if (v.is_float()) return Value(-v.as_float());
  if (v.is_undefined()) value_error("'" + v.undefined_name() + "' is undefined");
  value_error(std::string("bad operand type for unary -: '") + v.type_name() + "'");
}

// ------------------------------------------------------------------ UTF-8

// Invalid bytes decode to 0x110000 + byte so that slicing and re-encoding keeps them intact.
std::vector<uint32_t> utf8_decode(std::string_view s) {
  std::vector<uint32_t> out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool ok = len > 0 && i + static_cast<size_t>(len) <= s.size();
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1Fu) : len == 3 ? (c & 0x0Fu) : (c & 0x07u);
    for (int k = 1; ok && k < len; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
      if ((cc & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (cc & 0x3Fu);
    }
    if (ok) {
      out.push_back(cp);
      i += static_cast<size_t>(len);
    } else {
      out.push_back(0x110000u + c);
      ++i;
    }
  }
  return out;
}

void utf8_append(std::string& out, uint32_t cp) {
  if (cp >= 0x110000u) {
    out += static_cast<char>(cp - 0x110000u);
  } else if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string utf8_encode(const std::vector<uint32_t>& cps, size_t begin, size_t end) {
  std::string out;
  for (size_t i = begin; i < end && i < cps.size(); ++i) utf8_append(out, cps[i]);
  return out;
}

}  // namespace edgellm::jinja
