#include "chat/jinja_filters.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "chat/jinja_methods.h"
#include "chat/jinja_tests.h"

namespace edgellm::jinja {

namespace {

const char* const kFilters[] = {
    "abs", "attr", "batch", "capitalize", "center", "count", "d", "default", "dictsort", "e", "escape",
    "first", "float", "forceescape", "format", "indent", "int", "items", "join", "last", "length", "list",
    "lower", "map", "max", "min", "reject", "rejectattr", "replace", "reverse", "round", "safe", "select",
    "selectattr", "sort", "string", "sum", "title", "tojson", "trim", "unique", "upper", "wordcount"};

Value opt(const CallArgs& a, size_t i, std::string_view name, Value dflt) {
  const Value* v = a.get(i, name);
  return v ? *v : dflt;
}

bool bool_opt(const CallArgs& a, size_t i, std::string_view name, bool dflt) {
  const Value* v = a.get(i, name);
  return v ? v->truthy() : dflt;
}

// jinja2's attribute getter: "a.b.0" walks items (numbers index lists).
Value attr_path(const Value& v, const std::string& path) {
  Value cur = v;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    cur = numeric ? get_item(cur, Value(static_cast<int64_t>(std::strtoll(part.c_str(), nullptr, 10))))
                  : get_item(cur, Value(part));
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

Value attribute_of(const Value& v, const Value& attribute) {
  if (attribute.is_none() || attribute.is_undefined()) return v;
  if (attribute.is_intlike()) return get_item(v, attribute);
  return attr_path(v, to_str(attribute));
}

// Sort key that folds case for strings unless case_sensitive.
Value fold(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value(py_lower(v.str()));
  return v;
}

CallArgs tail_args(const CallArgs& a, size_t from) {
  CallArgs out;
  for (size_t i = from; i < a.positional.size(); ++i) out.positional.push_back(a.positional[i]);
  out.keyword = a.keyword;
  return out;
}

std::vector<Value> select_items(const Value& input, const CallArgs& a, bool with_attr, bool keep_if) {
  std::vector<Value> out;
  size_t next = 0;
  std::string attr;
  if (with_attr) {
    if (a.positional.empty()) value_error("selectattr/rejectattr need an attribute name");
    attr = to_str(a.positional[0]);
    next = 1;
  }
  std::string test;
  if (next < a.positional.size()) test = to_str(a.positional[next++]);
  CallArgs test_args;
  for (size_t i = next; i < a.positional.size(); ++i) test_args.positional.push_back(a.positional[i]);
  for (const auto& item : iterate(input)) {
    Value v = with_attr ? attr_path(item, attr) : item;
    bool ok = test.empty() ? v.truthy() : apply_test(test, v, test_args);
    if (ok == keep_if) out.push_back(item);
  }
  return out;
}

bool parse_py_int(std::string s, int64_t* out) {
  s = py_strip(s, Value::none(), true, true);
  std::string digits;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_' && i > 0 && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i - 1])) &&
        std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
      continue;
    }
    digits += s[i];
  }
  if (digits.empty()) return false;
  size_t b = (digits[0] == '+' || digits[0] == '-') ? 1 : 0;
  if (b == digits.size()) return false;
  for (size_t i = b; i < digits.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(digits[i]))) return false;
  }
  const char* first = digits.c_str() + (digits[0] == '+' ? 1 : 0);
  auto res = std::from_chars(first, digits.c_str() + digits.size(), *out);
  return res.ec == std::errc() && res.ptr == digits.c_str() + digits.size();
}

bool parse_py_float(const std::string& raw, double* out) {
  std::string s = py_strip(raw, Value::none(), true, true);
  if (s.empty()) return false;
  std::string lower = py_lower(s);
  size_t b = (lower[0] == '+' || lower[0] == '-') ? 1 : 0;
  std::string body = lower.substr(b);
  const double sign = lower[0] == '-' ? -1.0 : 1.0;
  if (body == "inf" || body == "infinity") {
    *out = sign * HUGE_VAL;
    return true;
  }
  if (body == "nan") {
    *out = std::nan("");
    return true;
  }
  for (char c : body) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.' && c != 'e' && c != '+' && c != '-' && c != '_') return false;
  }
  std::string clean;
  for (char c : s) {
    if (c != '_') clean += c;
  }
  char* end = nullptr;
  errno = 0;
  *out = std::strtod(clean.c_str(), &end);
  return end == clean.c_str() + clean.size();
}

Value to_int(const Value& v, const Value& dflt) {
  if (v.is_intlike()) return Value(v.as_intlike());
  if (v.is_float()) {
    double d = v.as_float();
    if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return dflt;
    return Value(static_cast<int64_t>(d));
  }
  if (v.is_string()) {
    int64_t i;
    if (parse_py_int(v.str(), &i)) return Value(i);
    double d;
    if (parse_py_float(v.str(), &d) && std::isfinite(d) && std::fabs(d) < 9.2e18) {
      return Value(static_cast<int64_t>(d));
    }
  }
  return dflt;
}

Value to_float(const Value& v, const Value& dflt) {
  if (v.is_number()) return Value(v.to_double());
  if (v.is_string()) {
    double d;
    if (parse_py_float(v.str(), &d)) return Value(d);
  }
  return dflt;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  check_string_size(out.size());
  return out;
}

// jinja2's title(): words start after whitespace, '-', and opening brackets.
std::string jinja_title(const std::string& s) {
  std::string out = s;
  bool word_start = true;
  for (char& c : out) {
    const bool sep = c == ' ' || (c >= '\t' && c <= '\r') || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
    if (sep) {
      word_start = true;
      continue;
    }
    if (word_start) {
      if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    } else if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    }
    word_start = false;
  }
  return out;
}

Value do_round(const Value& v, int64_t precision, const std::string& method) {
  double d = v.to_double();
  if (!std::isfinite(d)) return Value(d);
  if (precision < -308 || precision > 308) value_error("round precision out of range");
  if (method == "ceil" || method == "floor") {
    double scale = std::pow(10.0, static_cast<double>(precision));
    double r = method == "ceil" ? std::ceil(d * scale) : std::floor(d * scale);
    return Value(r / scale);
  }
  if (method != "common") value_error("method must be common, ceil or floor");
  if (v.is_int() || v.is_bool()) {
    // Python's round() keeps ints ints; a negative precision rounds to tens, hundreds, ...
    int64_t i = v.as_intlike();
    if (precision >= 0) return Value(i);
    if (precision < -18) return Value(int64_t{0});
    int64_t scale = 1;
    for (int64_t k = 0; k < -precision; ++k) scale *= 10;
    return Value(static_cast<int64_t>(std::nearbyint(static_cast<double>(i) / static_cast<double>(scale))) * scale);
  }
  if (precision == 0) return Value(std::nearbyint(d));  // ties to even, like Python's round()
  if (precision > 0) {
    // Correctly rounded decimal text of the exact binary value, as Python's round(x, n) does.
    char buf[512];
    auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::fixed, static_cast<int>(precision));
    if (res.ec != std::errc()) value_error("round: value too large");
    return Value(std::strtod(std::string(buf, res.ptr).c_str(), nullptr));
  }
  double scale = std::pow(10.0, static_cast<double>(-precision));
  return Value(std::nearbyint(d / scale) * scale);
}

std::string do_indent(std::string s, const Value& width, bool first, bool blank) {
  std::string ind = width.is_string() ? width.str() : std::string(static_cast<size_t>(std::clamp<int64_t>(
                                                          width.is_intlike() ? width.as_intlike() : 4, 0, 4096)), ' ');
  s += "\n";  // jinja2 appends a newline so that splitlines keeps a trailing empty line
  auto lines = py_splitlines(s);
  std::string rv;
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i) rv += "\n" + ind;
      rv += lines[i];
      check_string_size(rv.size());
    }
  } else {
    rv = lines.empty() ? std::string() : lines[0];
    for (size_t i = 1; i < lines.size(); ++i) {
      rv += "\n";
      if (!lines[i].empty()) rv += ind;
      rv += lines[i];
      check_string_size(rv.size());
    }
  }
  if (first) rv = ind + rv;
  return rv;
}

Value dict_items(const Value& v) {
  if (v.is_undefined()) return Value::list();
  if (!v.is_dict()) value_error("Can only get item pairs from a mapping.");
  std::vector<Value> out;
  for (const auto& kv : v.dict_ptr()->items) out.push_back(Value::list({Value(kv.first), kv.second}, true));
  return Value::list(std::move(out));
}

Value tojson(const Value& v, const CallArgs& a) {
  JsonDumpOptions o;
  o.ensure_ascii = bool_opt(a, 0, "ensure_ascii", false);
  Value indent = opt(a, 1, "indent", Value::none());
  if (!indent.is_none()) {
    o.has_indent = true;
    if (indent.is_string()) {
      o.indent = indent.str();
    } else if (indent.is_intlike()) {
      o.indent = std::string(static_cast<size_t>(std::clamp<int64_t>(indent.as_intlike(), 0, 64)), ' ');
    } else {
      value_error("tojson indent must be an integer or a string");
    }
    o.item_separator = ",";
  }
  Value seps = opt(a, 2, "separators", Value::none());
  if (!seps.is_none()) {
    if (!seps.is_list() || seps.items().size() != 2 || !seps.items()[0].is_string() || !seps.items()[1].is_string()) {
      value_error("tojson separators must be a pair of strings");
    }
    o.item_separator = seps.items()[0].str();
    o.key_separator = seps.items()[1].str();
  }
  o.sort_keys = bool_opt(a, 3, "sort_keys", false);
  return Value(json_dumps(v, o));
}

}  // namespace

bool has_filter(const std::string& name) {
  for (const char* f : kFilters) {
    if (name == f) return true;
  }
  return false;
}

Value apply_filter(const std::string& name, const Value& v, const CallArgs& a) {
  if (name == "safe") return v;
  if (name == "string") return Value(to_str(v));
  if (name == "trim") return Value(py_strip(to_str(v), opt(a, 0, "chars", Value::none()), true, true));
  if (name == "upper") return Value(py_upper(to_str(v)));
  if (name == "lower") return Value(py_lower(to_str(v)));
  if (name == "capitalize") return Value(py_capitalize(to_str(v)));
  if (name == "title") return Value(jinja_title(to_str(v)));
  if (name == "length" || name == "count") return Value(static_cast<int64_t>(py_len(v)));
  if (name == "tojson") return tojson(v, a);
  if (name == "escape" || name == "e" || name == "forceescape") return Value(html_escape(to_str(v)));
  if (name == "default" || name == "d") {
    Value dflt = opt(a, 0, "default_value", Value(std::string()));
    bool boolean = bool_opt(a, 1, "boolean", false);
    if (v.is_undefined() || (boolean && !v.truthy())) return dflt;
    return v;
  }
  if (name == "first" || name == "last") {
    auto items = iterate(v);
    if (items.empty()) return Value::undefined(name);
    return name == "first" ? items.front() : items.back();
  }
  if (name == "join") {
    std::string sep = to_str(opt(a, 0, "d", Value(std::string())));
    Value attribute = opt(a, 1, "attribute", Value::none());
    std::string out;
    bool first = true;
    for (const auto& item : iterate(v)) {
      if (!first) out += sep;
      first = false;
      out += to_str(attribute_of(item, attribute));
      check_string_size(out.size());
    }
    return Value(std::move(out));
  }
  if (name == "list") return Value::list(iterate(v));
  if (name == "items") return dict_items(v);
  if (name == "int") return to_int(v, opt(a, 0, "default", Value(int64_t{0})));
  if (name == "float") return to_float(v, opt(a, 0, "default", Value(0.0)));
  if (name == "abs") {
    if (v.is_float()) return Value(std::fabs(v.as_float()));
    if (v.is_intlike()) {
      if (v.as_intlike() == INT64_MIN) value_error("integer overflow");
      return Value(v.as_intlike() < 0 ? -v.as_intlike() : v.as_intlike());
    }
    value_error(std::string("bad operand type for abs(): '") + v.type_name() + "'");
  }
  if (name == "round") {
    if (!v.is_number()) value_error(std::string("round() needs a number, got ") + v.type_name());
    return do_round(v, a.int_or(0, "precision", 0), to_str(opt(a, 1, "method", Value("common"))));
  }
  if (name == "replace") {
    const Value* old_v = a.get(0, "old");
    const Value* new_v = a.get(1, "new");
    if (!old_v || !new_v) value_error("replace needs the old and new strings");
    return Value(py_replace(to_str(v), to_str(*old_v), to_str(*new_v), a.int_or(2, "count", -1)));
  }
  if (name == "indent") {
    return Value(do_indent(to_str(v), opt(a, 0, "width", Value(int64_t{4})), bool_opt(a, 1, "first", false),
                           bool_opt(a, 2, "blank", false)));
  }
  if (name == "center") {
    std::string s = to_str(v);
    int64_t width = std::min<int64_t>(a.int_or(0, "width", 80), 1 << 16);
    int64_t len = static_cast<int64_t>(utf8_decode(s).size());
    if (len >= width) return Value(s);
    int64_t pad = width - len;
    int64_t left = pad / 2 + (pad & width & 1);  // CPython's centering rule
    return Value(std::string(static_cast<size_t>(left), ' ') + s + std::string(static_cast<size_t>(pad - left), ' '));
  }
  if (name == "wordcount") {
    int64_t n = 0;
    bool in_word = false;
    for (unsigned char c : to_str(v)) {
      bool w = std::isalnum(c) || c == '_' || c >= 0x80;
      if (w && !in_word) ++n;
      in_word = w;
    }
    return Value(n);
  }
  if (name == "reverse") {
    if (v.is_string()) {
      auto cps = utf8_decode(v.str());
      std::reverse(cps.begin(), cps.end());
      return Value(utf8_encode(cps, 0, cps.size()));
    }
    auto items = iterate(v);
    std::reverse(items.begin(), items.end());
    return Value::list(std::move(items));
  }
  if (name == "format") {
    std::vector<Value> args = a.positional;
    return binary_op(BinaryOp::kMod, Value(to_str(v)), Value::list(std::move(args), true));
  }
  if (name == "attr") {
    const Value* n = a.get(0, "name");
    if (!n) value_error("attr needs an attribute name");
    if (v.is_dict() && !v.dict_ptr()->is_namespace) {
      // Python getattr on a dict finds only its methods, never its entries.
      Value m = get_attr(v, to_str(*n));
      return m.is_callable() ? m : Value::undefined(to_str(*n));
    }
    return get_attr(v, to_str(*n));
  }
  if (name == "select" || name == "reject") return Value::list(select_items(v, a, false, name == "select"));
  if (name == "selectattr" || name == "rejectattr") {
    return Value::list(select_items(v, a, true, name == "selectattr"));
  }
  if (name == "map") {
    std::vector<Value> out;
    if (const Value* attribute = a.keyword_arg("attribute")) {
      const Value* dflt = a.keyword_arg("default");
      for (const auto& item : iterate(v)) {
        Value x = attribute_of(item, *attribute);
        out.push_back(x.is_undefined() && dflt ? *dflt : x);
      }
    } else {
      if (a.positional.empty()) value_error("map needs a filter name or attribute=");
      std::string filter = to_str(a.positional[0]);
      CallArgs rest = tail_args(a, 1);
      for (const auto& item : iterate(v)) out.push_back(apply_filter(filter, item, rest));
    }
    return Value::list(std::move(out));
  }
  if (name == "unique") {
    bool cs = bool_opt(a, 0, "case_sensitive", false);
    Value attribute = opt(a, 1, "attribute", Value::none());
    std::vector<Value> out, seen;
    for (const auto& item : iterate(v)) {
      Value key = fold(attribute_of(item, attribute), cs);
      if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return values_equal(s, key); })) {
        seen.push_back(key);
        out.push_back(item);
      }
    }
    return Value::list(std::move(out));
  }
  if (name == "sort") {
    bool reverse = bool_opt(a, 0, "reverse", false);
    bool cs = bool_opt(a, 1, "case_sensitive", false);
    Value attribute = opt(a, 2, "attribute", Value::none());
    auto items = iterate(v);
    std::vector<std::pair<Value, Value>> keyed;
    for (auto& item : items) keyed.emplace_back(fold(attribute_of(item, attribute), cs), item);
    std::stable_sort(keyed.begin(), keyed.end(), [reverse](const auto& x, const auto& y) {
      return reverse ? values_less(y.first, x.first) : values_less(x.first, y.first);
    });
    std::vector<Value> out;
    for (auto& kv : keyed) out.push_back(kv.second);
    return Value::list(std::move(out));
  }
  if (name == "dictsort") {
    bool cs = bool_opt(a, 0, "case_sensitive", false);
    std::string by = to_str(opt(a, 1, "by", Value("key")));
    bool reverse = bool_opt(a, 2, "reverse", false);
    if (by != "key" && by != "value") value_error("You can only sort by either \"key\" or \"value\"");
    auto items = dict_items(v).items();
    const size_t idx = by == "key" ? 0 : 1;
    std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
      Value kx = fold(x.items()[idx], cs), ky = fold(y.items()[idx], cs);
      return reverse ? values_less(ky, kx) : values_less(kx, ky);
    });
    return Value::list(std::move(items));
  }
  if (name == "min" || name == "max") {
    bool cs = bool_opt(a, 0, "case_sensitive", false);
    Value attribute = opt(a, 1, "attribute", Value::none());
    auto items = iterate(v);
    if (items.empty()) return Value::undefined(name);
    size_t best = 0;
    for (size_t i = 1; i < items.size(); ++i) {
      Value ki = fold(attribute_of(items[i], attribute), cs);
      Value kb = fold(attribute_of(items[best], attribute), cs);
      if (name == "min" ? values_less(ki, kb) : values_less(kb, ki)) best = i;
    }
    return items[best];
  }
  if (name == "sum") {
    Value attribute = opt(a, 0, "attribute", Value::none());
    Value total = opt(a, 1, "start", Value(int64_t{0}));
    for (const auto& item : iterate(v)) total = binary_op(BinaryOp::kAdd, total, attribute_of(item, attribute));
    return total;
  }
  if (name == "batch") {
    int64_t n = a.int_or(0, "linecount", 1);
    if (n <= 0) value_error("batch size must be positive");
    const Value* fill = a.get(1, "fill_with");
    std::vector<Value> out, cur;
    for (const auto& item : iterate(v)) {
      cur.push_back(item);
      if (static_cast<int64_t>(cur.size()) == n) {
        out.push_back(Value::list(std::move(cur)));
        cur.clear();
      }
    }
    if (!cur.empty()) {
      while (fill && !fill->is_none() && static_cast<int64_t>(cur.size()) < n) cur.push_back(*fill);
      out.push_back(Value::list(std::move(cur)));
    }
    return Value::list(std::move(out));
  }
  value_error("no filter named '" + name + "'");
}

}  // namespace edgellm::jinja
