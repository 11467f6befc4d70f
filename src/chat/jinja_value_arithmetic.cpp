// Python's binary operators (+ - * / // % **, including str % args formatting) and unary minus.
#include "chat/jinja_value.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string_view>

namespace edgellm::jinja {

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
        piece = std::to_string(a.is_float() ? static_cast<int64_t>(a.as_float()) : a.as_intlike());
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
  const bool ints = a.is_intlike() && b.is_intlike();
  const bool nums = a.is_number() && b.is_number();
  switch (op) {
    case BinaryOp::kAdd:
      if (ints) {
        int64_t r;
        if (__builtin_add_overflow(a.as_intlike(), b.as_intlike(), &r)) value_error("integer overflow");
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
        if (__builtin_sub_overflow(a.as_intlike(), b.as_intlike(), &r)) value_error("integer overflow");
        return Value(r);
      }
      if (nums) return Value(a.to_double() - b.to_double());
      unsupported("-", a, b);
    case BinaryOp::kMul:
      if (ints) {
        int64_t r;
        if (__builtin_mul_overflow(a.as_intlike(), b.as_intlike(), &r)) value_error("integer overflow");
        return Value(r);
      }
      if (nums) return Value(a.to_double() * b.to_double());
      if (a.is_string() && b.is_intlike()) return repeat_string(a.str(), b.as_intlike());
      if (a.is_intlike() && b.is_string()) return repeat_string(b.str(), a.as_intlike());
      if (a.is_list() && b.is_intlike()) return repeat_list(a, b.as_intlike());
      if (a.is_intlike() && b.is_list()) return repeat_list(b, a.as_intlike());
      unsupported("*", a, b);
    case BinaryOp::kDiv:
      if (nums) {
        if (b.to_double() == 0.0) value_error("division by zero");
        return Value(a.to_double() / b.to_double());
      }
      unsupported("/", a, b);
    case BinaryOp::kFloorDiv:
      if (ints) {
        int64_t x = a.as_intlike(), y = b.as_intlike();
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
        int64_t x = a.as_intlike(), y = b.as_intlike();
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
      if (ints && b.as_intlike() >= 0) {
        int64_t base = a.as_intlike(), e = b.as_intlike(), r = 1;
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
  if (v.is_intlike()) {
    if (v.as_intlike() == std::numeric_limits<int64_t>::min()) value_error("integer overflow");
    return Value(-v.as_intlike());
  }
  if (v.is_float()) return Value(-v.as_float());
  if (v.is_undefined()) value_error("'" + v.undefined_name() + "' is undefined");
  value_error(std::string("bad operand type for unary -: '") + v.type_name() + "'");
}

}  // namespace edgellm::jinja
