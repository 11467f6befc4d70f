#include "chat/jinja_methods.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <functional>

namespace edgellm::jinja {

namespace {

bool py_space(uint32_t c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f); }
bool ascii_lower(char c) { return c >= 'a' && c <= 'z'; }
bool ascii_upper(char c) { return c >= 'A' && c <= 'Z'; }
bool ascii_alpha(char c) { return ascii_lower(c) || ascii_upper(c); }

// Python index normalisation for slices: clamps into [lower, upper].
int64_t slice_bound(const Value& v, int64_t len, int64_t step, bool is_start) {
  if (v.is_none() || v.is_undefined()) {
    if (step > 0) return is_start ? 0 : len;
    return is_start ? len - 1 : -1;
  }
  if (!v.is_intlike()) value_error("slice indices must be integers or None");
  int64_t i = v.as_intlike();
  if (i < 0) {
    i += len;
    if (i < 0) i = step > 0 ? 0 : -1;
  } else if (i >= len) {
    i = step > 0 ? len : len - 1;
  }
  return i;
}

template <typename T>
std::vector<T> do_slice(const std::vector<T>& items, const Value& start, const Value& stop, const Value& step_v) {
  int64_t step = 1;
  if (!step_v.is_none() && !step_v.is_undefined()) {
    if (!step_v.is_intlike()) value_error("slice indices must be integers or None");
    step = step_v.as_intlike();
    if (step == 0) value_error("slice step cannot be zero");
  }
  const int64_t len = static_cast<int64_t>(items.size());
  int64_t b = slice_bound(start, len, step, true);
  int64_t e = slice_bound(stop, len, step, false);
  std::vector<T> out;
  if (step > 0) {
    for (int64_t i = b; i < e; i += step) out.push_back(items[static_cast<size_t>(i)]);
  } else {
    for (int64_t i = b; i > e; i += step) out.push_back(items[static_cast<size_t>(i)]);
  }
  return out;
}

bool all_ascii(const std::string& s) {
  for (unsigned char c : s) {
    if (c >= 0x80) return false;
  }
  return true;
}

const Value& arg(const CallArgs& a, size_t i, std::string_view name, const char* method) {
  const Value* v = a.get(i, name);
  if (!v) value_error(std::string(method) + "() missing required argument '" + std::string(name) + "'");
  return *v;
}

const std::string& str_arg(const CallArgs& a, size_t i, std::string_view name, const char* method) {
  const Value& v = arg(a, i, name, method);
  if (!v.is_string()) {
    value_error(std::string(method) + "() argument '" + std::string(name) + "' must be str, not " + v.type_name());
  }
  return v.str();
}

Value opt(const CallArgs& a, size_t i, std::string_view name) {
  const Value* v = a.get(i, name);
  return v ? *v : Value::none();
}

Value string_list(const std::vector<std::string>& parts) {
  std::vector<Value> out;
  out.reserve(parts.size());
  for (const auto& p : parts) out.emplace_back(p);
  return Value::list(std::move(out));
}

bool affix_match(const std::string& s, const Value& affix, bool prefix, const char* method) {
  auto one = [&](const Value& a) {
    if (!a.is_string()) value_error(std::string(method) + " first arg must be str or a tuple of str");
    const std::string& x = a.str();
    if (x.size() > s.size()) return false;
    return prefix ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  if (affix.is_list()) {
    for (const auto& a : affix.items()) {
      if (one(a)) return true;
    }
    return false;
  }
  return one(affix);
}

// str.format: {} {0} {name} with an optional !r/!s conversion and a small format spec
// (fill/align/width and .Nf for numbers).
std::string py_format(const std::string& fmt, const CallArgs& a) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') ++i;
      else value_error("Single '}' encountered in format string");
      out += '}';
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    size_t close = fmt.find('}', i);
    if (close == std::string::npos) value_error("Single '{' encountered in format string");
    std::string field = fmt.substr(i + 1, close - i - 1);
    i = close;
    std::string spec, conv;
    if (size_t colon = field.find(':'); colon != std::string::npos) {
      spec = field.substr(colon + 1);
      field.resize(colon);
    }
    if (size_t bang = field.find('!'); bang != std::string::npos) {
      conv = field.substr(bang + 1);
      field.resize(bang);
    }
    const Value* v = nullptr;
    if (field.empty()) {
      v = auto_index < a.positional.size() ? &a.positional[auto_index] : nullptr;
      ++auto_index;
    } else if (std::all_of(field.begin(), field.end(), [](char d) { return d >= '0' && d <= '9'; })) {
      size_t idx = static_cast<size_t>(std::strtoul(field.c_str(), nullptr, 10));
      v = idx < a.positional.size() ? &a.positional[idx] : nullptr;
    } else {
      v = a.keyword_arg(field);
    }
    if (!v) value_error("format(): no argument for field '{" + field + "}'");
    std::string piece;
    if (!spec.empty() && spec.find('.') != std::string::npos && v->is_number() && conv.empty()) {
      std::string cfmt = "%" + spec;
      if (cfmt.back() != 'f' && cfmt.back() != 'e' && cfmt.back() != 'g') value_error("unsupported format spec '" + spec + "'");
      char buf[512];
      int n = std::snprintf(buf, sizeof(buf), cfmt.c_str(), v->to_double());
      if (n < 0 || static_cast<size_t>(n) >= sizeof(buf)) value_error("format result too long");
      out += buf;
      continue;
    }
    piece = conv == "r" ? to_repr(*v) : to_str(*v);
    if (!spec.empty()) {
      char fill = ' ', align = v->is_number() ? '>' : '<';
      size_t k = 0;
      if (spec.size() >= 2 && (spec[1] == '<' || spec[1] == '>' || spec[1] == '^')) {
        fill = spec[0];
        align = spec[1];
        k = 2;
      } else if (spec[0] == '<' || spec[0] == '>' || spec[0] == '^') {
        align = spec[0];
        k = 1;
      }
      size_t width = 0;
      for (; k < spec.size(); ++k) {
        if (spec[k] < '0' || spec[k] > '9') value_error("unsupported format spec '" + spec + "'");
        width = std::min<size_t>(width * 10 + static_cast<size_t>(spec[k] - '0'), 4096);
      }
      size_t len = utf8_decode(piece).size();
      if (len < width) {
        size_t pad = width - len;
        size_t left = align == '>' ? pad : align == '^' ? pad / 2 : 0;
        piece = std::string(left, fill) + piece + std::string(pad - left, fill);
      }
    }
    out += piece;
    check_string_size(out.size());
  }
  return out;
}

std::string py_title(const std::string& s) {
  std::string out = s;
  bool prev_cased = false;
  for (char& c : out) {
    if (ascii_alpha(c)) {
      c = prev_cased ? static_cast<char>(std::tolower(static_cast<unsigned char>(c)))
                     : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      prev_cased = true;
    } else {
      prev_cased = false;
    }
  }
  return out;
}

Value bind_method(const Value& self, const std::string& name, std::function<Value(const Value&, CallArgs&)> fn) {
  return Value::function(name, [self, fn = std::move(fn)](CallArgs& a) { return fn(self, a); });
}

int64_t py_find(const std::string& s, const std::string& sub, bool reverse) {
  size_t p = reverse ? s.rfind(sub) : s.find(sub);
  if (p == std::string::npos) return -1;
  if (all_ascii(s)) return static_cast<int64_t>(p);
  return static_cast<int64_t>(utf8_decode(std::string_view(s).substr(0, p)).size());
}

Value string_method(const Value& self, const std::string& name) {
  using F = std::function<Value(const Value&, CallArgs&)>;
  F fn;
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const bool l = name != "rstrip", r = name != "lstrip";
    fn = [l, r](const Value& s, CallArgs& a) { return Value(py_strip(s.str(), opt(a, 0, "chars"), l, r)); };
  } else if (name == "split" || name == "rsplit") {
    const bool rev = name == "rsplit";
    fn = [rev](const Value& s, CallArgs& a) {
      Value sep = opt(a, 0, "sep");
      int64_t maxsplit = a.int_or(1, "maxsplit", -1);
      if (!rev || maxsplit < 0) return string_list(py_split(s.str(), sep, maxsplit));
      // rsplit with a limit: split the reversed code points, then reverse back.
      auto rev_str = [](const std::string& x) {
        auto cps = utf8_decode(x);
        std::reverse(cps.begin(), cps.end());
        return utf8_encode(cps, 0, cps.size());
      };
      Value rsep = sep.is_string() ? Value(rev_str(sep.str())) : sep;
      auto parts = py_split(rev_str(s.str()), rsep, maxsplit);
      std::reverse(parts.begin(), parts.end());
      for (auto& p : parts) p = rev_str(p);
      return string_list(parts);
    };
  } else if (name == "splitlines") {
    fn = [](const Value& s, CallArgs&) { return string_list(py_splitlines(s.str())); };
  } else if (name == "startswith" || name == "endswith") {
    const bool prefix = name == "startswith";
    fn = [prefix, name](const Value& s, CallArgs& a) {
      return Value(affix_match(s.str(), arg(a, 0, "prefix", name.c_str()), prefix, name.c_str()));
    };
  } else if (name == "upper") {
    fn = [](const Value& s, CallArgs&) { return Value(py_upper(s.str())); };
  } else if (name == "lower") {
    fn = [](const Value& s, CallArgs&) { return Value(py_lower(s.str())); };
  } else if (name == "title") {
    fn = [](const Value& s, CallArgs&) { return Value(py_title(s.str())); };
  } else if (name == "capitalize") {
    fn = [](const Value& s, CallArgs&) { return Value(py_capitalize(s.str())); };
  } else if (name == "replace") {
    fn = [](const Value& s, CallArgs& a) {
      return Value(py_replace(s.str(), str_arg(a, 0, "old", "replace"), str_arg(a, 1, "new", "replace"),
                              a.int_or(2, "count", -1)));
    };
  } else if (name == "find" || name == "rfind" || name == "index" || name == "rindex") {
    const bool rev = name[0] == 'r';
    const bool raise = name.find("index") != std::string::npos;
    fn = [rev, raise, name](const Value& s, CallArgs& a) {
      int64_t r = py_find(s.str(), str_arg(a, 0, "sub", name.c_str()), rev);
      if (r < 0 && raise) value_error("substring not found");
      return Value(r);
    };
  } else if (name == "count") {
    fn = [](const Value& s, CallArgs& a) {
      const std::string& sub = str_arg(a, 0, "sub", "count");
      if (sub.empty()) return Value(static_cast<int64_t>(utf8_decode(s.str()).size() + 1));
      int64_t n = 0;
      for (size_t p = s.str().find(sub); p != std::string::npos; p = s.str().find(sub, p + sub.size())) ++n;
      return Value(n);
    };
  } else if (name == "center" || name == "ljust" || name == "rjust") {
    fn = [name](const Value& s, CallArgs& a) {
      int64_t width = std::min<int64_t>(a.int_or(0, "width", 0), 1 << 16);
      Value fill_v = opt(a, 1, "fillchar");
      std::string fill = fill_v.is_string() ? fill_v.str() : " ";
      if (utf8_decode(fill).size() != 1) value_error("The fill character must be exactly one character long");
      int64_t len = static_cast<int64_t>(utf8_decode(s.str()).size());
      if (len >= width) return s;
      int64_t pad = width - len;
      // CPython's str.center puts the odd extra column on the left when the width is odd.
      int64_t left = name == "rjust" ? pad : name == "ljust" ? 0 : pad / 2 + (pad & width & 1);
      std::string out;
      for (int64_t i = 0; i < left; ++i) out += fill;
      out += s.str();
      for (int64_t i = 0; i < pad - left; ++i) out += fill;
      return Value(std::move(out));
    };
  } else if (name == "format") {
    fn = [](const Value& s, CallArgs& a) { return Value(py_format(s.str(), a)); };
  } else if (name == "join") {
    fn = [](const Value& s, CallArgs& a) {
      std::string out;
      bool first = true;
      for (const auto& v : iterate(arg(a, 0, "iterable", "join"))) {
        if (!v.is_string()) value_error(std::string("sequence item: expected str instance, ") + v.type_name() + " found");
        if (!first) out += s.str();
        first = false;
        out += v.str();
        check_string_size(out.size());
      }
      return Value(std::move(out));
    };
  } else if (name == "isdigit" || name == "isalpha" || name == "isalnum" || name == "isspace" ||
             name == "islower" || name == "isupper") {
    fn = [name](const Value& s, CallArgs&) {
      const std::string& x = s.str();
      if (name == "islower" || name == "isupper") {
        bool cased = false;
        for (char c : x) {
          if (name == "islower" ? ascii_upper(c) : ascii_lower(c)) return Value(false);
          if (ascii_alpha(c)) cased = true;
        }
        return Value(cased);
      }
      if (x.empty()) return Value(false);
      for (char c : x) {
        const bool digit = c >= '0' && c <= '9';
        bool ok = name == "isdigit" ? digit
                  : name == "isalpha" ? ascii_alpha(c)
                  : name == "isalnum" ? (digit || ascii_alpha(c))
                                      : py_space(static_cast<unsigned char>(c));
        if (!ok) return Value(false);
      }
      return Value(true);
    };
  } else {
    return Value::undefined(name);
  }
  return bind_method(self, name, std::move(fn));
}

Value dict_method(const Value& self, const std::string& name) {
  std::function<Value(const Value&, CallArgs&)> fn;
  if (name == "get") {
    fn = [](const Value& d, CallArgs& a) {
      const Value& key = arg(a, 0, "key", "get");
      const Value* v = key.is_string() ? d.dict_ptr()->find(key.str()) : nullptr;
      return v ? *v : opt(a, 1, "default");
    };
  } else if (name == "items") {
    fn = [](const Value& d, CallArgs&) {
      std::vector<Value> out;
      for (const auto& kv : d.dict_ptr()->items) out.push_back(Value::list({Value(kv.first), kv.second}, true));
      return Value::list(std::move(out));
    };
  } else if (name == "keys") {
    fn = [](const Value& d, CallArgs&) {
      std::vector<Value> out;
      for (const auto& kv : d.dict_ptr()->items) out.emplace_back(kv.first);
      return Value::list(std::move(out));
    };
  } else if (name == "values") {
    fn = [](const Value& d, CallArgs&) {
      std::vector<Value> out;
      for (const auto& kv : d.dict_ptr()->items) out.push_back(kv.second);
      return Value::list(std::move(out));
    };
  } else {
    return Value::undefined(name);
  }
  return bind_method(self, name, std::move(fn));
}

Value list_method(const Value& self, const std::string& name) {
  if (name == "index") {
    return bind_method(self, name, [](const Value& l, CallArgs& a) {
      const Value& x = arg(a, 0, "value", "index");
      const auto& items = l.items();
      for (size_t i = 0; i < items.size(); ++i) {
        if (values_equal(items[i], x)) return Value(static_cast<int64_t>(i));
      }
      value_error(to_repr(x) + " is not in list");
    });
  }
  if (name == "count") {
    return bind_method(self, name, [](const Value& l, CallArgs& a) {
      const Value& x = arg(a, 0, "value", "count");
      int64_t n = 0;
      for (const auto& v : l.items()) n += values_equal(v, x) ? 1 : 0;
      return Value(n);
    });
  }
  return Value::undefined(name);
}

}  // namespace

std::string py_strip(const std::string& s, const Value& chars, bool left, bool right) {
  if (chars.is_none() || chars.is_undefined()) {
    size_t b = 0, e = s.size();
    if (left) {
      while (b < e && py_space(static_cast<unsigned char>(s[b]))) ++b;
    }
    if (right) {
      while (e > b && py_space(static_cast<unsigned char>(s[e - 1]))) --e;
    }
    return s.substr(b, e - b);
  }
  if (!chars.is_string()) value_error("strip arg must be None or str");
  auto set = utf8_decode(chars.str());
  auto cps = utf8_decode(s);
  size_t b = 0, e = cps.size();
  auto in_set = [&](uint32_t c) { return std::find(set.begin(), set.end(), c) != set.end(); };
  if (left) {
    while (b < e && in_set(cps[b])) ++b;
  }
  if (right) {
    while (e > b && in_set(cps[e - 1])) --e;
  }
  return utf8_encode(cps, b, e);
}

std::string py_lower(std::string s) {
  for (char& c : s) {
    if (ascii_upper(c)) c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

std::string py_upper(std::string s) {
  for (char& c : s) {
    if (ascii_lower(c)) c = static_cast<char>(c - 'a' + 'A');
  }
  return s;
}

std::string py_capitalize(const std::string& s) {
  std::string out = py_lower(s);
  if (!out.empty() && ascii_lower(out[0])) out[0] = static_cast<char>(out[0] - 'a' + 'A');
  return out;
}

std::string py_replace(const std::string& s, const std::string& old, const std::string& replacement,
                       int64_t count) {
  std::string out;
  if (old.empty()) {
    // Python inserts the replacement before every character and at the end.
    auto cps = utf8_decode(s);
    int64_t done = 0;
    for (size_t i = 0; i <= cps.size(); ++i) {
      if (count < 0 || done < count) {
        out += replacement;
        ++done;
      }
      if (i < cps.size()) utf8_append(out, cps[i]);
      check_string_size(out.size());
    }
    return out;
  }
  size_t pos = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    size_t hit = s.find(old, pos);
    if (hit == std::string::npos) break;
    out.append(s, pos, hit - pos);
    out += replacement;
    check_string_size(out.size());
    pos = hit + old.size();
    ++done;
  }
  out.append(s, pos, std::string::npos);
  check_string_size(out.size());
  return out;
}

std::vector<std::string> py_split(const std::string& s, const Value& sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (sep.is_none() || sep.is_undefined()) {
    size_t i = 0;
    while (true) {
      while (i < s.size() && py_space(static_cast<unsigned char>(s[i]))) ++i;
      if (i >= s.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
        size_t e = s.size();
        while (e > i && py_space(static_cast<unsigned char>(s[e - 1]))) --e;
        out.push_back(s.substr(i, e - i));
        break;
      }
      size_t j = i;
      while (j < s.size() && !py_space(static_cast<unsigned char>(s[j]))) ++j;
      out.push_back(s.substr(i, j - i));
      check_collection_size(out.size());
      i = j;
    }
    return out;
  }
  if (!sep.is_string()) value_error(std::string("must be str or None, not ") + sep.type_name());
  const std::string& d = sep.str();
  if (d.empty()) value_error("empty separator");
  size_t pos = 0;
  while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
    size_t hit = s.find(d, pos);
    if (hit == std::string::npos) break;
    out.push_back(s.substr(pos, hit - pos));
    check_collection_size(out.size());
    pos = hit + d.size();
  }
  out.push_back(s.substr(pos));
  return out;
}

std::vector<std::string> py_splitlines(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0, i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (c == '\n' || c == '\r' || c == '\v' || c == '\f' || c == '\x1c' || c == '\x1d' || c == '\x1e') {
      out.push_back(s.substr(start, i - start));
      check_collection_size(out.size());
      i += (c == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ? 2 : 1;
      start = i;
    } else {
      ++i;
    }
  }
  if (start < s.size()) out.push_back(s.substr(start));
  return out;
}

size_t py_len(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kString:
      return all_ascii(v.str()) ? v.str().size() : utf8_decode(v.str()).size();
    case Value::Kind::kList:
      return v.items().size();
    case Value::Kind::kDict:
      return v.dict_ptr()->items.size();
    case Value::Kind::kUndefined:
      return 0;
    default:
      value_error(std::string("object of type '") + v.type_name() + "' has no len()");
  }
}

std::vector<Value> iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return {};
    case Value::Kind::kList:
      return v.items();
    case Value::Kind::kDict: {
      std::vector<Value> keys;
      for (const auto& kv : v.dict_ptr()->items) keys.emplace_back(kv.first);
      return keys;
    }
    case Value::Kind::kString: {
      std::vector<Value> chars;
      auto cps = utf8_decode(v.str());
      for (size_t i = 0; i < cps.size(); ++i) chars.emplace_back(utf8_encode(cps, i, i + 1));
      return chars;
    }
    default:
      value_error(std::string("'") + v.type_name() + "' object is not iterable");
  }
}

Value get_attr(const Value& obj, const std::string& name) {
  switch (obj.kind()) {
    case Value::Kind::kDict: {
      if (!obj.dict_ptr()->is_namespace) {
        Value m = dict_method(obj, name);
        if (!m.is_undefined()) return m;
      }
      const Value* v = obj.dict_ptr()->find(name);
      return v ? *v : Value::undefined(name);
    }
    case Value::Kind::kString:
      return string_method(obj, name);
    case Value::Kind::kList:
      return list_method(obj, name);
    default:
      return Value::undefined(name);
  }
}

Value get_item(const Value& obj, const Value& key) {
  switch (obj.kind()) {
    case Value::Kind::kDict: {
      if (key.is_string()) {
        const Value* v = obj.dict_ptr()->find(key.str());
        if (v) return *v;
        return obj.dict_ptr()->is_namespace ? Value::undefined(key.str()) : dict_method(obj, key.str());
      }
      return Value::undefined(to_str(key));
    }
    case Value::Kind::kList: {
      if (!key.is_intlike()) return key.is_string() ? list_method(obj, key.str()) : Value::undefined(to_str(key));
      int64_t i = key.as_intlike();
      const int64_t n = static_cast<int64_t>(obj.items().size());
      if (i < 0) i += n;
      if (i < 0 || i >= n) return Value::undefined(to_str(key));
      return obj.items()[static_cast<size_t>(i)];
    }
    case Value::Kind::kString: {
      if (!key.is_intlike()) return key.is_string() ? string_method(obj, key.str()) : Value::undefined(to_str(key));
      int64_t i = key.as_intlike();
      auto cps = utf8_decode(obj.str());
      const int64_t n = static_cast<int64_t>(cps.size());
      if (i < 0) i += n;
      if (i < 0 || i >= n) return Value::undefined(to_str(key));
      return Value(utf8_encode(cps, static_cast<size_t>(i), static_cast<size_t>(i) + 1));
    }
    default:
      return Value::undefined(to_str(key));
  }
}

Value slice_value(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  if (obj.is_list()) return Value::list(do_slice(obj.items(), start, stop, step), obj.list_ptr()->is_tuple);
  if (obj.is_string()) {
    auto cps = do_slice(utf8_decode(obj.str()), start, stop, step);
    return Value(utf8_encode(cps, 0, cps.size()));
  }
  if (obj.is_undefined()) return Value::undefined(obj.undefined_name());
  value_error(std::string("'") + obj.type_name() + "' object is not subscriptable");
}

}  // namespace edgellm::jinja
