#include "grammar/json_schema.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/utf8.h"
#include "grammar/gbnf_parser.h"
#include "grammar/json_regex.h"

namespace edgellm::grammar {

namespace {

// The building blocks every converted schema may use. Whitespace is bounded (one newline and at
// most 20 indentation characters between two tokens) so a model cannot stall in it; numbers
// have at most 16 integer and 16 fraction digits and a two-digit exponent (every value stays a
// finite double); \u escapes exclude the surrogates, so lengths count what a decoder counts.
struct Builtin {
  const char* name;
  const char* body;
  std::vector<const char*> needs;
};

const std::vector<Builtin>& builtins() {
  static const std::vector<Builtin> kBuiltins = {
      {"space", R"(| " " | "\n" [ \t]{0,20})", {}},
      {"char",
       R"([^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" ([0-9a-cA-Ce-fE-F] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2})))",
       {}},
      {"string", R"("\"" char* "\"" space)", {"char", "space"}},
      {"boolean", R"(("true" | "false") space)", {"space"}},
      {"null", R"("null" space)", {"space"}},
      {"integral-part", R"("0" | [1-9] [0-9]{0,15})", {}},
      {"decimal-part", R"([0-9]{1,16})", {}},
      {"integer", R"("-"? integral-part space)", {"integral-part", "space"}},
      {"number", R"("-"? integral-part ("." decimal-part)? ([eE] [-+]? [0-9]{1,2})? space)",
       {"integral-part", "decimal-part", "space"}},
      {"value", R"(object | array | string | number | boolean | null)",
       {"object", "array", "string", "number", "boolean", "null"}},
      {"object", R"("{" space (string ":" space value ("," space string ":" space value)*)? "}" space)",
       {"string", "space", "value"}},
      {"array", R"("[" space (value ("," space value)*)? "]" space)", {"space", "value"}},
      // An object key that is not one of an object's declared names: plain characters only, so
      // that no escape can spell a declared name.
      {"key-char", R"([^"\\\x7F\x00-\x1F])", {}},
  };
  return kBuiltins;
}

// String formats: GBNF over the content between the quotes. Dates are real calendar dates
// (days per month, 29 February in leap years only, years 0001-9999); times need a time zone
// (RFC 3339 full-time), seconds 00-59.
struct Format {
  const char* name;
  const char* body;
};

const std::vector<Format>& formats() {
  static const std::vector<Format> kFormats = {
      {"date", R"(fmt-year "-" (("0" [13578] | "1" [02]) "-" fmt-day31 | ("0" [469] | "11") "-" fmt-day30 | "02-" fmt-day28) | fmt-leap-year "-02-29")"},
      {"time", R"(fmt-time)"},
      {"date-time", R"(fmt-date "T" fmt-time)"},
      {"uuid", R"([0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12})"},
      {"email", R"([a-zA-Z0-9_+-]{1,32} ("." [a-zA-Z0-9_+-]{1,32}){0,3} "@" fmt-label ("." fmt-label){0,3} "." [a-zA-Z]{2,8})"},
      {"ipv4", R"(fmt-octet "." fmt-octet "." fmt-octet "." fmt-octet)"},
  };
  return kFormats;
}

const char* const kFormatHelpers =
    "fmt-year ::= [0-9]{3} [1-9] | [0-9]{2} [1-9] \"0\" | [0-9] [1-9] \"00\" | [1-9] \"000\"\n"
    "fmt-day31 ::= \"0\" [1-9] | [12] [0-9] | \"3\" [01]\n"
    "fmt-day30 ::= \"0\" [1-9] | [12] [0-9] | \"30\"\n"
    "fmt-day28 ::= \"0\" [1-9] | \"1\" [0-9] | \"2\" [0-8]\n"
    // Divisible by 4 and not by 100, or divisible by 400 (year 0000 does not exist).
    "fmt-leap-year ::= [0-9] [0-9] (\"0\" [48] | [2468] [048] | [13579] [26]) | (\"0\" [48] | [2468] [048] | [13579] [26]) \"00\"\n"
    "fmt-date ::= fmt-year \"-\" ((\"0\" [13578] | \"1\" [02]) \"-\" fmt-day31 | (\"0\" [469] | \"11\") \"-\" fmt-day30 | \"02-\" fmt-day28) | fmt-leap-year \"-02-29\"\n"
    "fmt-time ::= ([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9] \":\" [0-5] [0-9] (\".\" [0-9]{1,6})? (\"Z\" | [+-] ([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9])\n"
    "fmt-label ::= [a-zA-Z0-9] ([a-zA-Z0-9-]{0,20} [a-zA-Z0-9])?\n"
    "fmt-octet ::= [0-9] | [1-9] [0-9] | \"1\" [0-9] [0-9] | \"2\" [0-4] [0-9] | \"25\" [0-5]\n";

const std::set<std::string_view> kAnnotations = {
    "title",    "description", "$schema",  "$id",       "$comment",         "default",         "examples",
    "deprecated", "readOnly",  "writeOnly", "$anchor", "contentMediaType", "contentEncoding", "$vocabulary"};

const std::set<std::string_view> kHandled = {
    "type",          "enum",        "const",       "anyOf",    "oneOf",        "allOf",         "$ref",
    "$defs",         "definitions", "properties",  "required", "additionalProperties", "minProperties",
    "maxProperties", "items",       "prefixItems", "minItems", "maxItems",     "uniqueItems",   "minLength",
    "maxLength",     "pattern",     "format",      "minimum",  "maximum",      "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf", "additionalItems", "propertyNames"};

// Digits of a non-negative integer, and the GBNF of all decimal spellings (no leading zeros) of
// the integers in [lo, hi] (both with the same number of digits) -- the classic range split:
// 120..349 = "1" ([2-9] [0-9]) | [2] [0-9] [0-9] | "3" ([0-3] [0-9] | "4" [0-9]).
std::string same_length_range(const std::string& a, const std::string& b) {
  if (a.empty()) return "";
  if (a == b) return gbnf_literal(a);
  if (a[0] == b[0]) return gbnf_literal(a.substr(0, 1)) + " (" + same_length_range(a.substr(1), b.substr(1)) + ")";
  const size_t rest = a.size() - 1;
  const std::string zeros(rest, '0'), nines(rest, '9');
  auto digits = [&](char lo, char hi) {
    std::string d = lo == hi ? std::string("[") + lo + "]" : std::string("[") + lo + "-" + hi + "]";
    if (rest > 0) d += " [0-9]" + (rest > 1 ? "{" + std::to_string(rest) + "}" : std::string());
    return d;
  };
  std::vector<std::string> alts;
  char lo_full = a[0], hi_full = b[0];  // first digits whose every tail is in range
  if (a.substr(1) != zeros) {
    alts.push_back(gbnf_literal(a.substr(0, 1)) + " (" + same_length_range(a.substr(1), nines) + ")");
    lo_full = static_cast<char>(a[0] + 1);
  }
  const bool b_full = b.substr(1) == nines;
  if (!b_full) hi_full = static_cast<char>(b[0] - 1);
  if (lo_full <= hi_full) alts.push_back(digits(lo_full, hi_full));
  if (!b_full) alts.push_back(gbnf_literal(b.substr(0, 1)) + " (" + same_length_range(zeros, b.substr(1)) + ")");
  std::string out;
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out;
}

// Integers in [lo, hi] (lo >= 0; hi < 0 means no upper bound; at most 16 digits).
std::string nonneg_range(int64_t lo, int64_t hi) {
  constexpr int kMaxDigits = 16;
  const std::string slo = std::to_string(lo);
  std::vector<std::string> alts;
  const size_t max_len = hi < 0 ? kMaxDigits : std::to_string(hi).size();
  for (size_t len = slo.size(); len <= max_len; ++len) {
    const std::string low = len == slo.size() ? slo : "1" + std::string(len - 1, '0');
    if (hi < 0 && len > slo.size()) {  // every number of this many digits (and more) is in range
      alts.push_back("[1-9] [0-9]{" + std::to_string(len - 1) + "," + std::to_string(kMaxDigits - 1) + "}");
      break;
    }
    const std::string high = (hi >= 0 && len == max_len) ? std::to_string(hi) : std::string(len, '9');
    alts.push_back("(" + same_length_range(low, high) + ")");
  }
  std::string out;
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return alts.size() > 1 ? "(" + out + ")" : out;
}

std::string sanitize(std::string_view s) {
  std::string out;
  for (const char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (ok) {
      out += c;
    } else if (out.empty() || out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  while (!out.empty() && out.front() == '-') out.erase(0, 1);
  if (out.size() > 40) out.resize(40);
  return out.empty() ? "x" : out;
}

std::string json_text(const Json& v) {
  // Compact, as a model would write it; any JSON spelling of the value validates the same.
  return v.dump();
}

std::string type_name(const Json& v) {
  switch (v.type()) {
    case Json::Type::kNull: return "null";
    case Json::Type::kBool: return "boolean";
    case Json::Type::kNumber: return "number";
    case Json::Type::kString: return "string";
    case Json::Type::kArray: return "array";
    case Json::Type::kObject: return "object";
  }
  return "?";
}

bool value_has_type(const Json& v, const std::string& t) {
  if (t == "integer") return v.is_number() && std::isfinite(v.as_number()) && std::floor(v.as_number()) == v.as_number();
  return type_name(v) == t || (t == "number" && v.is_number());
}

}  // namespace

class JsonGrammarBuilder::Converter {
 public:
  explicit Converter(const JsonSchemaOptions& options) : options_(options) {}

  std::string add(const Json& schema, const std::string& hint) {
    root_ = &schema;
    ref_rules_.clear();  // $refs resolve within their own document
    return visit(schema, "", hint);
  }

  std::string rules() const {
    std::string out;
    for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
    for (const Builtin& b : builtins()) {
      if (used_builtins_.count(b.name)) out += std::string(b.name) + " ::= " + b.body + "\n";
    }
    if (used_formats_) out += kFormatHelpers;
    return out;
  }

  std::string builtin(const std::string& name) {
    if (used_builtins_.insert(name).second) {
      for (const Builtin& b : builtins()) {
        if (name == b.name) {
          for (const char* n : b.needs) builtin(n);
        }
      }
    }
    return name;
  }

 private:
  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw Error(ErrorCode::kInvalidArgument, "json_schema: " + (path.empty() ? std::string("/") : path) + ": " + what);
  }

  std::string new_rule_name(const std::string& hint) {
    std::string base = sanitize(hint);
    // Never collide with the builtins or format helpers.
    static const std::set<std::string> kReserved = {"root", "space", "char", "string", "boolean", "null",
                                                    "integral-part", "decimal-part", "integer", "number",
                                                    "value", "object", "array", "key-char"};
    if (kReserved.count(base) || base.rfind("fmt-", 0) == 0) base += "-s";
    std::string name = base;
    for (int i = 2; names_.count(name); ++i) name = base + "-" + std::to_string(i);
    names_.insert(name);
    return name;
  }

  std::string add_rule(const std::string& hint, const std::string& body) {
    const std::string name = new_rule_name(hint);
    rules_.emplace_back(name, body);
    return name;
  }

  // Resolves a local reference ("#", "#/$defs/a", "#/properties/x/items", ...).
  const Json& resolve(const std::string& ref, const std::string& path) {
    if (ref.empty() || ref[0] != '#') fail(path, "$ref \"" + ref + "\": only references inside the schema (\"#...\") are supported");
    const Json* cur = root_;
    size_t pos = 1;
    if (pos < ref.size() && ref[pos] != '/') fail(path, "$ref \"" + ref + "\": anchors are not supported, use a JSON pointer");
    while (pos < ref.size()) {
      const size_t next = ref.find('/', pos + 1);
      std::string token = ref.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1);
      std::string decoded;
      for (size_t i = 0; i < token.size(); ++i) {
        if (token[i] == '~' && i + 1 < token.size() && (token[i + 1] == '0' || token[i + 1] == '1')) {
          decoded += token[i + 1] == '0' ? '~' : '/';
          ++i;
        } else if (token[i] == '%' && i + 2 < token.size()) {
          decoded += static_cast<char>(std::stoi(token.substr(i + 1, 2), nullptr, 16));
          i += 2;
        } else {
          decoded += token[i];
        }
      }
      if (cur->is_object()) {
        cur = cur->find(decoded);
      } else if (cur->is_array()) {
        char* end = nullptr;
        const unsigned long idx = std::strtoul(decoded.c_str(), &end, 10);
        cur = (end != decoded.c_str() && *end == '\0' && idx < cur->size()) ? &cur->at(idx) : nullptr;
      } else {
        cur = nullptr;
      }
      if (cur == nullptr) fail(path, "$ref \"" + ref + "\" points to nothing");
      if (next == std::string::npos) break;
      pos = next;
    }
    return *cur;
  }

  void check_keywords(const Json& s, const std::string& path) {
    for (const auto& [key, value] : s.as_object()) {
      (void)value;
      if (kAnnotations.count(key) || kHandled.count(key)) continue;
      static const std::map<std::string_view, const char*> kKnownUnsupported = {
          {"not", "a grammar cannot exclude a sub-schema"},
          {"if", "conditional schemas are not supported"},
          {"then", "conditional schemas are not supported"},
          {"else", "conditional schemas are not supported"},
          {"patternProperties", "keys by pattern are not supported"},
          {"dependentRequired", "dependencies between keys are not supported"},
          {"dependentSchemas", "dependencies between keys are not supported"},
          {"dependencies", "dependencies between keys are not supported"},
          {"contains", "a grammar cannot require an item anywhere in an array"},
          {"minContains", "a grammar cannot count matching items"},
          {"maxContains", "a grammar cannot count matching items"},
          {"unevaluatedProperties", "not supported"},
          {"unevaluatedItems", "not supported"},
          {"$dynamicRef", "not supported"},
          {"$recursiveRef", "not supported"},
          {"nullable", "an OpenAPI keyword, not JSON Schema: use \"type\": [\"...\", \"null\"]"},
      };
      const auto it = kKnownUnsupported.find(key);
      fail(path, "keyword '" + key + "' " + (it != kKnownUnsupported.end() ? std::string("is not supported (") + it->second + ")"
                                                                            : std::string("is not supported (unknown keyword)")));
    }
  }

  static bool has_only(const Json& s, const std::set<std::string_view>& allowed) {
    for (const auto& [key, value] : s.as_object()) {
      (void)value;
      if (!allowed.count(key) && !kAnnotations.count(key) && key != "$defs" && key != "definitions") return false;
    }
    return true;
  }

  double number_at(const Json& s, const char* key, const std::string& path) {
    const Json* v = s.find(key);
    if (!v->is_number() || !std::isfinite(v->as_number())) fail(path, std::string("'") + key + "' must be a number");
    return v->as_number();
  }

  int64_t count_at(const Json& s, const char* key, const std::string& path) {
    const Json* v = s.find(key);
    if (v == nullptr) return -1;
    if (!v->is_number() || v->as_number() < 0 || std::floor(v->as_number()) != v->as_number() || v->as_number() > 1e9) {
      fail(path, std::string("'") + key + "' must be a non-negative integer");
    }
    return static_cast<int64_t>(v->as_number());
  }

  std::string visit(const Json& s, const std::string& path, const std::string& hint) {
    if (s.is_bool()) {
      if (!s.as_bool()) fail(path, "the schema 'false' accepts no value");
      return builtin("value");
    }
    if (!s.is_object()) fail(path, "a schema must be an object or a boolean, not " + type_name(s));
    check_keywords(s, path);

    if (const Json* ref = s.find("$ref")) {
      if (!ref->is_string()) fail(path, "'$ref' must be a string");
      if (!has_only(s, {"$ref"})) fail(path, "'$ref' together with other keywords is not supported");
      return reference(ref->as_string(), path);
    }
    for (const char* comb : {"anyOf", "oneOf"}) {
      if (const Json* alts = s.find(comb)) {
        if (!alts->is_array() || alts->size() == 0) fail(path, std::string("'") + comb + "' must be a non-empty array");
        if (!has_only(s, {comb})) fail(path, std::string("'") + comb + "' together with other keywords is not supported");
        std::string body;
        for (size_t i = 0; i < alts->size(); ++i) {
          body += (i ? " | " : "") + visit(alts->at(i), path + "/" + comb + "/" + std::to_string(i), hint + "-" + std::to_string(i));
        }
        return alts->size() == 1 ? body : add_rule(hint, body);
      }
    }
    if (const Json* all = s.find("allOf")) {
      if (!all->is_array() || all->size() != 1) fail(path, "'allOf' is supported with exactly one schema");
      if (!has_only(s, {"allOf"})) fail(path, "'allOf' together with other keywords is not supported");
      return visit(all->at(0), path + "/allOf/0", hint);
    }

    // Types: given, or implied by the keywords.
    std::vector<std::string> types;
    if (const Json* t = s.find("type")) {
      if (t->is_string()) {
        types.push_back(t->as_string());
      } else if (t->is_array()) {
        for (const Json& x : t->as_array()) {
          if (!x.is_string()) fail(path, "'type' must be a string or an array of strings");
          types.push_back(x.as_string());
        }
      } else {
        fail(path, "'type' must be a string or an array of strings");
      }
      for (const std::string& ty : types) {
        static const std::set<std::string> kTypes = {"object", "array", "string", "number", "integer", "boolean", "null"};
        if (!kTypes.count(ty)) fail(path, "unknown type '" + ty + "'");
      }
    }

    if (const Json* c = s.find("const")) {
      if (!types.empty() && std::none_of(types.begin(), types.end(), [&](const std::string& t) { return value_has_type(*c, t); })) {
        fail(path, "'const' does not have the schema's type");
      }
      return "(" + gbnf_literal(json_text(*c)) + " " + builtin("space") + ")";
    }
    if (const Json* e = s.find("enum")) {
      if (!e->is_array() || e->size() == 0) fail(path, "'enum' must be a non-empty array");
      std::string body;
      size_t n = 0;
      for (const Json& v : e->as_array()) {
        if (!types.empty() && std::none_of(types.begin(), types.end(), [&](const std::string& t) { return value_has_type(v, t); })) {
          continue;  // an enum value of another type can never validate
        }
        body += (n++ ? " | " : "") + gbnf_literal(json_text(v));
      }
      if (n == 0) fail(path, "no 'enum' value has the schema's type");
      return add_rule(hint, "(" + body + ") " + builtin("space"));
    }

    if (types.empty()) {
      const auto any = [&](std::initializer_list<const char*> keys) {
        return std::any_of(keys.begin(), keys.end(), [&](const char* k) { return s.find(k) != nullptr; });
      };
      if (any({"properties", "required", "additionalProperties", "minProperties", "maxProperties"})) types.push_back("object");
      if (any({"items", "prefixItems", "minItems", "maxItems", "additionalItems"})) types.push_back("array");
      if (any({"minLength", "maxLength", "pattern", "format"})) types.push_back("string");
      if (any({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"})) types.push_back("number");
      if (types.empty()) return builtin("value");
    }
    std::vector<std::string> alts;
    for (const std::string& t : types) {
      const std::string h = types.size() > 1 ? hint + "-" + t : hint;
      if (t == "object") {
        alts.push_back(object(s, path, h));
      } else if (t == "array") {
        alts.push_back(array(s, path, h));
      } else if (t == "string") {
        alts.push_back(string(s, path, h));
      } else if (t == "number" || t == "integer") {
        alts.push_back(number(s, path, h, t == "integer"));
      } else if (t == "boolean") {
        alts.push_back(builtin("boolean"));
      } else {
        alts.push_back(builtin("null"));
      }
    }
    if (alts.size() == 1) return alts.front();
    std::string body;
    for (size_t i = 0; i < alts.size(); ++i) body += (i ? " | " : "") + alts[i];
    return add_rule(hint, body);
  }

  std::string reference(const std::string& ref, const std::string& path) {
    const auto it = ref_rules_.find(ref);
    if (it != ref_rules_.end()) return it->second;
    const Json& target = resolve(ref, path);
    // The rule exists before its body is built, so a recursive reference finds it.
    const size_t slash = ref.rfind('/');
    const std::string name = new_rule_name(slash == std::string::npos ? "ref" : ref.substr(slash + 1));
    ref_rules_[ref] = name;
    const size_t index = rules_.size();
    rules_.emplace_back(name, "");
    const std::string body = visit(target, ref.substr(1), name);
    rules_[index].second = body;
    return name;
  }

  // The content of a key that is none of `names`: a trie of the names, where each node allows
  // a character that leaves the trie (then anything), a child's character, or the end of the
  // key when no name ends there.
  // Key lengths from "propertyNames" ({"minLength", "maxLength"} only); {0, -1} when absent.
  std::pair<int64_t, int64_t> key_lengths(const Json& s, const std::string& path) {
    const Json* pn = s.find("propertyNames");
    if (pn == nullptr) return {0, -1};
    const std::string where = path + "/propertyNames";
    if (pn->is_bool()) {
      if (!pn->as_bool()) fail(where, "'propertyNames': false allows no key");
      return {0, -1};
    }
    if (!pn->is_object()) fail(where, "must be a schema");
    for (const auto& [k, v] : pn->as_object()) {
      (void)v;
      if (k != "minLength" && k != "maxLength" && k != "type" && !kAnnotations.count(k)) {
        fail(where, "only 'minLength' and 'maxLength' are supported in 'propertyNames' (not '" + k + "')");
      }
    }
    if (const Json* t = pn->find("type"); t != nullptr && !(t->is_string() && t->as_string() == "string")) {
      fail(where, "'type' must be \"string\"");
    }
    const int64_t lo = std::max<int64_t>(count_at(*pn, "minLength", where), 0);
    const int64_t hi = count_at(*pn, "maxLength", where);
    if (hi >= 0 && hi < lo) fail(where, "'maxLength' is below 'minLength'");
    if (lo > kMaxRepetition || hi > static_cast<int64_t>(kMaxRepetition)) fail(where, "lengths above 2000 are not supported");
    return {lo, hi};
  }

  static std::string count_suffix(int64_t lo, int64_t hi) {
    if (hi < 0) return lo == 0 ? "*" : "{" + std::to_string(lo) + ",}";
    return "{" + std::to_string(lo) + "," + std::to_string(hi) + "}";
  }

  // The content of a key that is none of `names` and has min_len..max_len characters
  // (max_len < 0: unbounded).
  std::string excluded_key(const std::vector<std::string>& names, int64_t min_len, int64_t max_len) {
    struct Node {
      std::map<uint32_t, Node> children;
      bool terminal = false;
    };
    Node root;
    for (const std::string& n : names) {
      Node* cur = &root;
      for (size_t i = 0; i < n.size();) {
        const utf8::Decoded d = utf8::decode(n, i);
        cur = &cur->children[d.cp];
        i += d.length;
      }
      cur->terminal = true;
    }
    const std::string kc = builtin("key-char");
    std::function<std::string(const Node&, int64_t)> build = [&](const Node& node, int64_t depth) -> std::string {
      const bool room = max_len < 0 || depth < max_len;  // another character fits
      std::vector<CodePointRange> out;
      for (const auto& [cp, child] : node.children) out.push_back({cp, cp});
      const std::vector<CodePointRange> key_chars = complement_ranges(normalize_ranges({{0, 0x1F}, {'"', '"'}, {'\\', '\\'}, {0x7F, 0x7F}}));
      std::vector<CodePointRange> others;
      const std::vector<CodePointRange> not_children = complement_ranges(normalize_ranges(out));
      for (const CodePointRange& a : key_chars) {
        for (const CodePointRange& b : not_children) {
          const uint32_t lo = std::max(a.lo, b.lo), hi = std::min(a.hi, b.hi);
          if (lo <= hi) others.push_back({lo, hi});
        }
      }
      std::vector<std::string> alts;
      if (room && !others.empty()) {
        const int64_t rest_lo = std::max<int64_t>(0, min_len - depth - 1);
        const int64_t rest_hi = max_len < 0 ? -1 : max_len - depth - 1;
        alts.push_back(gbnf_class(normalize_ranges(others)) + " " + kc + count_suffix(rest_lo, rest_hi));
      }
      for (const auto& [cp, child] : node.children) {
        if (room) alts.push_back(gbnf_literal(utf8::encode(cp)) + " " + build(child, depth + 1));
      }
      if (!node.terminal && depth >= min_len) alts.push_back("\"\"");
      if (alts.empty()) return "[^\\x00-\\U0010FFFF]";  // no key fits
      std::string body;
      for (size_t i = 0; i < alts.size(); ++i) body += (i ? " | " : "") + alts[i];
      return "(" + body + ")";
    };
    return build(root, 0);
  }

  std::string object(const Json& s, const std::string& path, const std::string& hint) {
    std::vector<std::pair<std::string, const Json*>> props;
    if (const Json* p = s.find("properties")) {
      if (!p->is_object()) fail(path, "'properties' must be an object");
      for (const auto& [k, v] : p->as_object()) props.emplace_back(k, &v);
    }
    std::set<std::string> required;
    if (const Json* r = s.find("required")) {
      if (!r->is_array()) fail(path, "'required' must be an array of strings");
      for (const Json& x : r->as_array()) {
        if (!x.is_string()) fail(path, "'required' must be an array of strings");
        required.insert(x.as_string());
      }
    }
    static const Json kAny = Json(true);
    for (const std::string& name : required) {  // required but not described: any value
      if (std::none_of(props.begin(), props.end(), [&](const auto& p) { return p.first == name; })) props.emplace_back(name, &kAny);
    }
    const Json* additional = s.find("additionalProperties");
    std::string add_value;  // empty: no additional properties
    if (additional == nullptr) {
      if (options_.allow_additional_properties_by_default) add_value = builtin("value");
    } else if (additional->is_bool()) {
      if (additional->as_bool()) add_value = builtin("value");
    } else {
      add_value = visit(*additional, path + "/additionalProperties", hint + "-additional");
    }
    const int64_t min_props = count_at(s, "minProperties", path);
    const int64_t max_props = count_at(s, "maxProperties", path);
    const std::string sp = builtin("space");

    const auto [key_min, key_max] = key_lengths(s, path);
    const bool key_bounds = key_min > 0 || key_max >= 0;
    if (key_bounds) {
      for (const auto& [name, schema] : props) {
        (void)schema;
        size_t cps = 0;
        for (size_t i = 0; i < name.size(); i += utf8::decode(name, i).length) ++cps;
        if (static_cast<int64_t>(cps) < key_min || (key_max >= 0 && static_cast<int64_t>(cps) > key_max)) {
          fail(path, "property '" + name + "' does not satisfy 'propertyNames'");
        }
      }
    }
    if (props.empty()) {
      if (add_value.empty()) {
        if (min_props > 0) fail(path, "'minProperties' > 0 but no property is allowed");
        return "(\"{\" " + sp + " \"}\" " + sp + ")";
      }
      const std::string key = key_bounds ? "\"\\\"\" " + builtin("key-char") + count_suffix(key_min, key_max) + " \"\\\"\" " + sp
                                         : builtin("string");
      const std::string kv = add_rule(hint + "-kv", key + " \":\" " + sp + " " + add_value);
      const int64_t lo = std::max<int64_t>(min_props, 0);
      const int64_t hi = max_props;  // -1: unbounded
      if (hi == 0) return "(\"{\" " + sp + " \"}\" " + sp + ")";
      if (hi >= 0 && hi < lo) fail(path, "'maxProperties' is below 'minProperties'");
      if (lo > kMaxRepetition || hi > static_cast<int64_t>(kMaxRepetition)) fail(path, "'minProperties' / 'maxProperties' above 2000");
      std::string tail = "(\",\" " + sp + " " + kv + ")";
      const int64_t tlo = std::max<int64_t>(lo - 1, 0);
      tail += hi < 0 ? (tlo == 0 ? "*" : "{" + std::to_string(tlo) + ",}") : "{" + std::to_string(tlo) + "," + std::to_string(hi - 1) + "}";
      std::string list = kv + " " + tail;
      if (lo == 0) list = "(" + list + ")?";
      return add_rule(hint, "\"{\" " + sp + " " + list + " \"}\" " + sp);
    }
    const bool all_required = std::all_of(props.begin(), props.end(), [&](const auto& p) { return required.count(p.first) != 0; });
    if ((min_props >= 0 || max_props >= 0) && !all_required) {
      fail(path, "'minProperties' / 'maxProperties' together with optional properties are not supported");
    }
    const int64_t n_declared = static_cast<int64_t>(props.size());
    if (max_props >= 0 && max_props < n_declared) fail(path, "'maxProperties' is below the number of required properties");
    if (max_props >= 0 && max_props > static_cast<int64_t>(kMaxRepetition)) fail(path, "'maxProperties' above 2000");
    if (min_props > n_declared && add_value.empty()) fail(path, "'minProperties' needs more properties than are allowed");

    const size_t n = props.size();
    std::vector<std::string> kv(n);
    std::vector<bool> req(n);
    std::vector<std::string> names;
    for (size_t i = 0; i < n; ++i) {
      const std::string& name = props[i].first;
      names.push_back(name);
      req[i] = required.count(name) != 0;
      std::string key;
      json_escape(key, name);
      const std::string value = visit(*props[i].second, path + "/properties/" + name, hint + "-" + name);
      kv[i] = add_rule(hint + "-" + name + "-kv", gbnf_literal(key) + " " + sp + " \":\" " + sp + " " + value);
    }
    std::string add_kv;
    if (!add_value.empty()) {
      add_kv = add_rule(hint + "-additional-kv", "\"\\\"\" " + excluded_key(names, key_min, key_max) + " \"\\\"\" " + sp +
                                                     " \":\" " + sp + " " + add_value);
    }
    // rest[i]: what may follow once the properties before i are decided; every present item is
    // preceded by a comma.
    std::vector<std::string> rest(n + 1);
    // With all properties required, min/maxProperties bound the additional ones.
    const int64_t add_lo = std::max<int64_t>(0, min_props - n_declared);
    const int64_t add_hi = max_props < 0 ? -1 : max_props - n_declared;
    rest[n] = add_kv.empty() || add_hi == 0 ? "" : "(\",\" " + sp + " " + add_kv + ")" + count_suffix(add_lo, add_hi);
    for (size_t i = n; i-- > 1;) {
      const std::string item = "\",\" " + sp + " " + kv[i];
      std::string body = req[i] ? item : "(" + item + ")?";
      if (!rest[i + 1].empty()) body += " " + rest[i + 1];
      rest[i] = add_rule(hint + "-rest", body);
    }
    size_t first_required = n;
    for (size_t i = 0; i < n; ++i) {
      if (req[i]) {
        first_required = i;
        break;
      }
    }
    std::vector<std::string> alts;
    for (size_t k = 0; k < n && k <= first_required; ++k) {
      alts.push_back(kv[k] + (k + 1 <= n && !rest[k + 1].empty() ? " " + rest[k + 1] : ""));
    }
    if (first_required == n && !add_kv.empty()) alts.push_back(add_kv + " " + rest[n]);
    std::string body;
    for (size_t i = 0; i < alts.size(); ++i) body += (i ? " | " : "") + alts[i];
    body = "(" + body + ")";
    if (first_required == n) body += "?";
    return add_rule(hint, "\"{\" " + sp + " " + body + " \"}\" " + sp);
  }

  std::string array(const Json& s, const std::string& path, const std::string& hint) {
    std::vector<std::string> prefix;
    std::string item;  // empty: no items beyond the prefix
    const Json* items = s.find("items");
    const Json* prefix_items = s.find("prefixItems");
    const Json* additional_items = s.find("additionalItems");
    if (items != nullptr && items->is_array()) {  // draft 4-7 tuple form
      if (prefix_items != nullptr) fail(path, "'items' as an array together with 'prefixItems'");
      prefix_items = items;
      items = additional_items;
    } else if (additional_items != nullptr) {
      fail(path, "'additionalItems' needs 'items' as an array");
    }
    if (prefix_items != nullptr) {
      if (!prefix_items->is_array()) fail(path, "'prefixItems' must be an array of schemas");
      for (size_t i = 0; i < prefix_items->size(); ++i) {
        prefix.push_back(visit(prefix_items->at(i), path + "/prefixItems/" + std::to_string(i), hint + "-" + std::to_string(i)));
      }
    }
    if (items == nullptr || (items->is_bool() && items->as_bool())) {
      item = builtin("value");
    } else if (!(items->is_bool() && !items->as_bool())) {
      item = visit(*items, path + "/items", hint + "-item");
    }
    if (const Json* u = s.find("uniqueItems")) {
      if (!u->is_bool()) fail(path, "'uniqueItems' must be a boolean");
      if (u->as_bool()) fail(path, "'uniqueItems': true is not supported (a grammar cannot compare items)");
    }
    const int64_t m = std::max<int64_t>(count_at(s, "minItems", path), 0);
    int64_t big_m = count_at(s, "maxItems", path);  // -1: unbounded
    const int64_t p = static_cast<int64_t>(prefix.size());
    if (item.empty()) big_m = big_m < 0 ? p : std::min(big_m, p);
    if (big_m >= 0 && big_m < m) fail(path, "'maxItems' is below 'minItems'" + std::string(item.empty() ? " (or the prefix)" : ""));
    if (m > kMaxRepetition || big_m > static_cast<int64_t>(kMaxRepetition)) fail(path, "'minItems' / 'maxItems' above 2000");
    const std::string sp = builtin("space");
    if (big_m == 0) return "(\"[\" " + sp + " \"]\" " + sp + ")";
    // after(i): the list once i items are written (i >= 1).
    std::function<std::string(int64_t)> after = [&](int64_t i) -> std::string {
      if (big_m >= 0 && i >= big_m) return "";
      if (i >= p) {
        const int64_t lo = std::max<int64_t>(m - i, 0);
        const std::string one = "(\",\" " + sp + " " + item + ")";
        if (big_m < 0) return one + (lo == 0 ? "*" : "{" + std::to_string(lo) + ",}");
        return one + "{" + std::to_string(lo) + "," + std::to_string(big_m - i) + "}";
      }
      const std::string next = "\",\" " + sp + " " + prefix[static_cast<size_t>(i)];
      const std::string tail = after(i + 1);
      const std::string body = next + (tail.empty() ? "" : " " + tail);
      return i < m ? body : "(" + body + ")?";
    };
    const std::string first = p > 0 ? prefix[0] : item;
    const std::string tail = after(1);
    std::string list = first + (tail.empty() ? "" : " " + tail);
    if (m == 0) list = "(" + list + ")?";
    return add_rule(hint, "\"[\" " + sp + " " + list + " \"]\" " + sp);
  }

  std::string string(const Json& s, const std::string& path, const std::string& hint) {
    const int64_t min_len = count_at(s, "minLength", path);
    const int64_t max_len = count_at(s, "maxLength", path);
    const Json* pattern = s.find("pattern");
    const Json* format = s.find("format");
    const std::string sp = builtin("space");
    if (format != nullptr) {
      if (!format->is_string()) fail(path, "'format' must be a string");
      if (pattern != nullptr || min_len >= 0 || max_len >= 0) fail(path, "'format' together with 'pattern' or length bounds is not supported");
      for (const Format& f : formats()) {
        if (format->as_string() == f.name) {
          used_formats_ = true;
          return add_rule(hint, "\"\\\"\" (" + std::string(f.body) + ") \"\\\"\" " + sp);
        }
      }
      std::string known;
      for (const Format& f : formats()) known += (known.empty() ? "" : ", ") + std::string(f.name);
      fail(path, "format '" + format->as_string() + "' is not supported (supported: " + known + ")");
    }
    if (pattern != nullptr) {
      if (!pattern->is_string()) fail(path, "'pattern' must be a string");
      if (min_len >= 0 || max_len >= 0) fail(path, "'pattern' together with 'minLength' / 'maxLength' is not supported");
      std::string body;
      try {
        body = json_pattern_to_gbnf(pattern->as_string(), builtin("char"));
      } catch (const Error& e) {
        fail(path, e.what());
      }
      return add_rule(hint, "\"\\\"\" " + body + " \"\\\"\" " + sp);
    }
    if (min_len < 0 && max_len < 0) return builtin("string");
    const int64_t lo = std::max<int64_t>(min_len, 0);
    if (max_len >= 0 && max_len < lo) fail(path, "'maxLength' is below 'minLength'");
    if (lo > kMaxRepetition || max_len > static_cast<int64_t>(kMaxRepetition)) {
      fail(path, "'minLength' / 'maxLength' above " + std::to_string(kMaxRepetition) + " is not supported");
    }
    const std::string count = max_len < 0 ? "{" + std::to_string(lo) + ",}"
                              : "{" + std::to_string(lo) + "," + std::to_string(max_len) + "}";
    return add_rule(hint, "\"\\\"\" " + builtin("char") + count + " \"\\\"\" " + sp);
  }

  // Numbers and integers with their bounds. Integer bounds may be any number (rounded inward);
  // number bounds must be integers (the integral part carries the bound, a fraction only where
  // it cannot cross it).
  std::string number(const Json& s, const std::string& path, const std::string& hint, bool integer) {
    if (const Json* mo = s.find("multipleOf")) {
      if (!mo->is_number() || mo->as_number() != 1.0) fail(path, "'multipleOf' is supported only as 1 (an integer)");
      integer = true;
    }
    bool has_lo = false, has_hi = false, lo_excl = false, hi_excl = false;
    double lo = 0, hi = 0;
    const auto bound = [&](const char* key, bool is_lo, bool excl) {
      if (s.find(key) == nullptr) return;
      const Json* v = s.find(key);
      if (v->is_bool()) fail(path, std::string("'") + key + "' as a boolean (draft 4) is not supported");
      const double x = number_at(s, key, path);
      if (is_lo) {
        if (!has_lo || x > lo || (x == lo && excl)) {
          lo = x;
          lo_excl = excl;
        }
        has_lo = true;
      } else {
        if (!has_hi || x < hi || (x == hi && excl)) {
          hi = x;
          hi_excl = excl;
        }
        has_hi = true;
      }
    };
    bound("minimum", true, false);
    bound("exclusiveMinimum", true, true);
    bound("maximum", false, false);
    bound("exclusiveMaximum", false, true);
    const std::string sp = builtin("space");
    if (!has_lo && !has_hi) return builtin(integer ? "integer" : "number");
    constexpr double kLimit = 1e15;
    if ((has_lo && std::fabs(lo) > kLimit) || (has_hi && std::fabs(hi) > kLimit)) {
      fail(path, "numeric bounds beyond +-1e15 are not supported");
    }
    if (integer) {
      int64_t ilo = 0, ihi = 0;
      if (has_lo) ilo = static_cast<int64_t>(lo_excl ? std::floor(lo) + 1 : std::ceil(lo));
      if (has_hi) ihi = static_cast<int64_t>(hi_excl ? std::ceil(hi) - 1 : std::floor(hi));
      if (has_lo && has_hi && ilo > ihi) fail(path, "no integer lies within the bounds");
      return add_rule(hint, "(" + int_range(has_lo, ilo, has_hi, ihi) + ") " + sp);
    }
    if ((has_lo && std::floor(lo) != lo) || (has_hi && std::floor(hi) != hi)) {
      fail(path, std::string("bounds of type 'number' must be integers (") + (has_lo && std::floor(lo) != lo ? "minimum " : "maximum ") +
                     "is not); use type 'integer' or integral bounds");
    }
    if (has_lo && has_hi && (lo > hi || (lo == hi && (lo_excl || hi_excl)))) fail(path, "no number lies within the bounds");
    return add_rule(hint, "(" + decimal_range(has_lo, static_cast<int64_t>(lo), lo_excl, has_hi, static_cast<int64_t>(hi), hi_excl) +
                              ") " + sp);
  }

  // Integers in the bounds (either side may be open).
  std::string int_range(bool has_lo, int64_t lo, bool has_hi, int64_t hi) {
    std::vector<std::string> alts;
    // Negative part: "-" and the magnitudes [max(1, -hi), -lo].
    if (!has_lo || lo < 0) {
      const int64_t mag_lo = has_hi ? std::max<int64_t>(1, -hi) : 1;
      const int64_t mag_hi = has_lo ? -lo : -1;
      if (mag_hi < 0 || mag_lo <= mag_hi) alts.push_back("\"-\" " + nonneg_range(mag_lo, mag_hi));
    }
    // Non-negative part: [max(0, lo), hi].
    if (!has_hi || hi >= 0) alts.push_back(nonneg_range(has_lo ? std::max<int64_t>(0, lo) : 0, has_hi ? hi : -1));
    std::string out;
    for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
    return out;
  }

  // Unsigned decimals y (integral part, optional fraction) with a (<= or <) y (<= or <) b for
  // integers 0 <= a <= b (b < 0: unbounded).
  std::string unsigned_decimal(int64_t a, bool a_excl, int64_t b, bool b_excl) {
    const std::string frac = "(\".\" " + builtin("decimal-part") + ")";
    const std::string nonzero_frac = "(\".\" \"0\"{0,15} [1-9] [0-9]{0,15})";  // > 0: zeros, then a non-zero digit
    const std::string zero_frac = "(\".\" \"0\"{1,16})";
    std::vector<std::string> alts;
    if (b >= 0 && a == b) {
      if (a_excl || b_excl) return "";
      return gbnf_literal(std::to_string(a)) + " " + zero_frac + "?";
    }
    // The integral part a itself.
    alts.push_back(gbnf_literal(std::to_string(a)) + " " + (a_excl ? nonzero_frac : frac + "?"));
    // Integral parts strictly between a and b: any fraction.
    const int64_t mid_lo = a + 1;
    const int64_t mid_hi = b < 0 ? -1 : b - 1;
    if (b < 0 || mid_lo <= mid_hi) alts.push_back("(" + nonneg_range(mid_lo, mid_hi) + ") " + frac + "?");
    // The integral part b: only the value b itself (no fraction but zeros).
    if (b >= 0 && !b_excl) alts.push_back(gbnf_literal(std::to_string(b)) + " " + zero_frac + "?");
    std::string out;
    for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
    return out;
  }

  std::string decimal_range(bool has_lo, int64_t lo, bool lo_excl, bool has_hi, int64_t hi, bool hi_excl) {
    std::vector<std::string> alts;
    // x >= 0 part.
    if (!has_hi || hi > 0 || (hi == 0 && !hi_excl)) {
      const bool from_zero = !has_lo || lo < 0;
      const std::string part = unsigned_decimal(from_zero ? 0 : lo, from_zero ? false : lo_excl, has_hi ? hi : -1,
                                                has_hi ? hi_excl : false);
      if (!part.empty()) alts.push_back(part);
    }
    // x < 0 part: "-" y with y > 0 and -x within the mirrored bounds.
    if (!has_lo || lo < 0) {
      const bool to_zero = !has_hi || hi >= 0;
      const int64_t ya = to_zero ? 0 : -hi;
      const bool ya_excl = to_zero ? true : hi_excl;
      const int64_t yb = has_lo ? -lo : -1;
      const std::string part = unsigned_decimal(ya, ya_excl, yb, has_lo ? lo_excl : false);
      if (!part.empty()) alts.push_back("\"-\" (" + part + ")");
    }
    if (alts.empty()) return "[^\\x00-\\U0010FFFF]";
    std::string out;
    for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
    return out;
  }

  const Json* root_ = nullptr;
  JsonSchemaOptions options_;
  std::vector<std::pair<std::string, std::string>> rules_;
  std::set<std::string> names_;
  std::set<std::string> used_builtins_;
  std::map<std::string, std::string> ref_rules_;
  bool used_formats_ = false;
};

JsonGrammarBuilder::JsonGrammarBuilder(const JsonSchemaOptions& options) : c_(std::make_unique<Converter>(options)) {}
JsonGrammarBuilder::~JsonGrammarBuilder() = default;
std::string JsonGrammarBuilder::add_schema(const Json& schema, const std::string& name_hint) {
  return c_->add(schema, name_hint);
}
std::string JsonGrammarBuilder::builtin(const std::string& name) { return c_->builtin(name); }
std::string JsonGrammarBuilder::rules() const { return c_->rules(); }

std::string json_schema_to_gbnf(const Json& schema, const JsonSchemaOptions& options) {
  JsonGrammarBuilder b(options);
  const std::string root = b.add_schema(schema, "root");
  return "root ::= " + root + "\n" + b.rules();
}

std::string json_object_gbnf() { return json_schema_to_gbnf(Json::parse(R"({"type": "object", "additionalProperties": true})")); }

std::string json_value_gbnf() { return json_schema_to_gbnf(Json(true)); }

}  // namespace edgellm::grammar
