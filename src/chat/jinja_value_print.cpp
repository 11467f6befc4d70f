// Python str() / repr() of a Value, and Python's float repr.
#include "chat/jinja_value.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace edgellm::jinja {

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
  check_value_depth(depth);
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

}  // namespace edgellm::jinja
