// JSON interop: Value::from_json (the Json DOM into Values) and json_dumps (Python's json.dumps).
#include "chat/jinja_value.h"

#include <algorithm>
#include <cmath>

namespace edgellm::jinja {

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
  check_value_depth(depth);
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

}  // namespace edgellm::jinja
