#include "chat/jinja_tests.h"

#include <cmath>

#include "chat/jinja_methods.h"

namespace edgellm::jinja {

namespace {

const char* const kTests[] = {"defined", "undefined", "none", "string", "number", "integer", "float",
                              "boolean", "true", "false", "mapping", "iterable", "sequence", "callable",
                              "equalto", "eq", "==", "ne", "!=", "lt", "<", "lessthan", "le", "<=", "gt",
                              ">", "greaterthan", "ge", ">=", "in", "odd", "even", "divisibleby", "lower",
                              "upper", "sameas", "escaped"};

const Value& need(const CallArgs& args, const std::string& test) {
  const Value* v = args.get(0, "value");
  if (!v) value_error("test '" + test + "' needs an argument");
  return *v;
}


}  // namespace

bool has_test(const std::string& name) {
  for (const char* t : kTests) {
    if (name == t) return true;
  }
  return false;
}

bool apply_test(const std::string& name, const Value& v, const CallArgs& args) {
  using K = Value::Kind;
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_number();  // Python: bool is a Number too
  if (name == "integer") return v.is_int();
  if (name == "float") return v.is_float();
  if (name == "boolean") return v.is_bool();
  if (name == "true") return v.is_bool() && v.as_bool();
  if (name == "false") return v.is_bool() && !v.as_bool();
  if (name == "mapping") return v.is_dict();
  if (name == "iterable") return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
  if (name == "sequence") return v.is_string() || v.is_list() || v.is_dict();
  if (name == "callable") return v.is_callable();
  if (name == "escaped") return false;
  if (name == "equalto" || name == "eq" || name == "==") return values_equal(v, need(args, name));
  if (name == "ne" || name == "!=") return !values_equal(v, need(args, name));
  if (name == "lt" || name == "<" || name == "lessthan") return values_less(v, need(args, name));
  if (name == "le" || name == "<=") return !values_less(need(args, name), v);
  if (name == "gt" || name == ">" || name == "greaterthan") return values_less(need(args, name), v);
  if (name == "ge" || name == ">=") return !values_less(v, need(args, name));
  if (name == "sameas") {
    const Value& o = need(args, name);
    if (v.kind() != o.kind()) return false;
    switch (v.kind()) {
      case K::kList: return v.list_ptr() == o.list_ptr();
      case K::kDict: return v.dict_ptr() == o.dict_ptr();
      case K::kCallable: return v.fn_ptr() == o.fn_ptr();
      case K::kString: return v.str() == o.str();
      default: return values_equal(v, o);
    }
  }
  if (name == "in") {
    const Value& seq = need(args, name);
    if (seq.is_string()) {
      if (!v.is_string()) value_error("'in <string>' requires string as left operand");
      return seq.str().find(v.str()) != std::string::npos;
    }
    if (seq.is_dict()) return v.is_string() && seq.dict_ptr()->find(v.str()) != nullptr;
    for (const auto& e : iterate(seq)) {
      if (values_equal(e, v)) return true;
    }
    return false;
  }
  // jinja2 computes these with Python's %, so floats work too (3.0 is odd, 2.5 is neither).
  if (name == "odd") return values_equal(binary_op(BinaryOp::kMod, v, Value(int64_t{2})), Value(int64_t{1}));
  if (name == "even") return values_equal(binary_op(BinaryOp::kMod, v, Value(int64_t{2})), Value(int64_t{0}));
  if (name == "divisibleby") {
    return values_equal(binary_op(BinaryOp::kMod, v, need(args, name)), Value(int64_t{0}));
  }
  if (name == "lower" || name == "upper") {
    std::string s = to_str(v);
    bool cased = false;
    for (char c : s) {
      bool up = c >= 'A' && c <= 'Z', lo = c >= 'a' && c <= 'z';
      if (name == "lower" ? up : lo) return false;
      cased = cased || up || lo;
    }
    return cased;
  }
  value_error("no test named '" + name + "'");
}

}  // namespace edgellm::jinja
