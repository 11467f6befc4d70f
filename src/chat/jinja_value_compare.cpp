// Python == and < between Values.
#include "chat/jinja_value.h"

namespace edgellm::jinja {

namespace {

bool equal_at(const Value& a, const Value& b, int depth) {
  check_value_depth(depth);
  if (a.is_number() && b.is_number()) {
    if (a.is_intlike() && b.is_intlike()) return a.as_intlike() == b.as_intlike();
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
  check_value_depth(depth);
  if (a.is_number() && b.is_number()) {
    if (a.is_intlike() && b.is_intlike()) return a.as_intlike() < b.as_intlike();
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

}  // namespace edgellm::jinja
