// JSON Schema -> grammar: which JSON texts each converted schema accepts, against expectations
// written here (hand-picked texts, and arithmetic / a calendar computed in the test for number
// bounds and dates), and the refusal of every unsupported keyword by name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/json.h"
#include "grammar/compiled_grammar.h"
#include "grammar/gbnf_parser.h"
#include "grammar/grammar_matcher.h"
#include "grammar/json_schema.h"

namespace edgellm::grammar {
namespace {

std::shared_ptr<const TokenVocabulary> byte_vocab() {
  static const auto v = [] {
    std::vector<std::string> pieces;
    for (int b = 0; b < 256; ++b) pieces.push_back(std::string(1, static_cast<char>(b)));
    pieces.push_back("");
    return TokenVocabulary::from_pieces(pieces, {256});
  }();
  return v;
}

class Schema {
 public:
  explicit Schema(const std::string& schema, JsonSchemaOptions options = {})
      : gbnf_(json_schema_to_gbnf(Json::parse(schema), options)),
        g_(CompiledGrammar::compile(parse_gbnf(gbnf_), byte_vocab())) {}
  bool accepts(const std::string& text) const {
    GrammarMatcher m(g_);
    return m.accept_bytes(text) && m.can_end();
  }
  const std::string& gbnf() const { return gbnf_; }

 private:
  std::string gbnf_;
  std::shared_ptr<const CompiledGrammar> g_;
};

std::string error_of(const std::string& schema) {
  try {
    json_schema_to_gbnf(Json::parse(schema));
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
  return "";
}

void expect_cases(const Schema& s, const std::vector<std::string>& yes, const std::vector<std::string>& no) {
  for (const std::string& t : yes) EXPECT_TRUE(s.accepts(t)) << "should accept: " << t << "\n" << s.gbnf();
  for (const std::string& t : no) EXPECT_FALSE(s.accepts(t)) << "should refuse: " << t << "\n" << s.gbnf();
}

TEST(JsonSchema, ObjectsRequiredOptionalAndOrder) {
  const Schema s(R"({"type": "object", "properties": {
      "a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "boolean"}}, "required": ["b"]})");
  expect_cases(s, {R"({"b": ""})", R"({"a": 1, "b": "x"})", R"({"b": "x", "c": true})", R"({"a": -5, "b": "y", "c": false})",
                   "{\n  \"b\": \"z\"\n}\n"},
               {R"({})", R"({"a": 1})", R"({"b": "x", "a": 1})", R"({"b": "x",})", R"({"b": "x", "d": 1})",
                R"({"b": 1})", R"({"a": 1.5, "b": "x"})"});
  const Schema none_required(R"({"properties": {"a": {"type": "null"}, "b": {"const": 3}}})");
  expect_cases(none_required, {"{}", R"({"a": null})", R"({"b": 3})", R"({"a": null, "b": 3})"},
               {R"({"b": 4})", R"({"b": 3, "a": null})", R"({,"b": 3})"});
}

TEST(JsonSchema, AdditionalProperties) {
  const Schema open(R"({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"],
                       "additionalProperties": {"type": "integer"}})");
  expect_cases(open, {R"({"name": "x"})", R"({"name": "x", "n": 1})", R"({"name": "x", "nam": 1, "names": 2, "": 3})"},
               {R"({"name": "x", "name": 1})", R"({"name": "x", "n": "s"})", R"({"name": "x", "na\u006de": 1})"});
  const Schema map(R"({"type": "object", "additionalProperties": true, "minProperties": 1, "maxProperties": 2})");
  expect_cases(map, {R"({"a": 1})", R"({"a": [1, {"b": null}], "c": "d"})"}, {"{}", R"({"a": 1, "b": 2, "c": 3})"});
  // Key lengths from propertyNames, also for the keys that must avoid the declared names.
  const Schema named(R"({"type": "object", "properties": {"ab": {"type": "integer"}}, "propertyNames": {"maxLength": 3},
                        "additionalProperties": {"type": "integer"}})");
  expect_cases(named, {R"({"ab": 1, "a": 2, "abc": 3, "xyz": 4})", R"({"b": 1})"},
               {R"({"ab": 1, "abcd": 2})", R"({"wxyz": 1})", R"({"ab": 1, "ab": 2})"});
  const Schema lengths(R"({"type": "object", "propertyNames": {"minLength": 2, "maxLength": 4}, "additionalProperties": {"type": "null"}})");
  expect_cases(lengths, {R"({"ab": null, "abcd": null})", "{}"}, {R"({"a": null})", R"({"abcde": null})"});
  EXPECT_NE(error_of(R"({"type": "object", "propertyNames": {"pattern": "^a"}})").find("only 'minLength' and 'maxLength'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"properties": {"long-name": {}}, "propertyNames": {"maxLength": 3}})").find("does not satisfy 'propertyNames'"),
            std::string::npos);
  // min/maxProperties with declared properties, all of them required: bounds on the others.
  const Schema counted(R"({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"], "minProperties": 2,
                          "maxProperties": 3, "additionalProperties": {"type": "integer"}})");
  expect_cases(counted, {R"({"a": 1, "b": 2})", R"({"a": 1, "b": 2, "c": 3})"}, {R"({"a": 1})", R"({"a": 1, "b": 2, "c": 3, "d": 4})"});
  EXPECT_NE(error_of(R"({"properties": {"a": {}}, "maxProperties": 3})").find("together with optional properties"), std::string::npos);
  // The specification's default, on request.
  JsonSchemaOptions spec;
  spec.allow_additional_properties_by_default = true;
  const Schema by_default(R"({"properties": {"a": {"type": "integer"}}})", spec);
  EXPECT_TRUE(by_default.accepts(R"({"a": 1, "b": 2})"));
  EXPECT_FALSE(Schema(R"({"properties": {"a": {"type": "integer"}}})").accepts(R"({"a": 1, "b": 2})"));
}

TEST(JsonSchema, Arrays) {
  const Schema bounded(R"({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 3})");
  expect_cases(bounded, {"[1, 2]", "[1,2,3]"}, {"[]", "[1]", "[1, 2, 3, 4]", "[1, \"a\"]"});
  const Schema tuple(R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}], "items": false})");
  expect_cases(tuple, {"[]", "[\"a\"]", "[\"a\", 1.5]"}, {"[1]", "[\"a\", 1, 2]"});
  const Schema tuple_min(R"({"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "null"}, "minItems": 2})");
  expect_cases(tuple_min, {"[\"a\", null]", "[\"a\", null, null]"}, {"[\"a\"]", "[null, null]"});
  EXPECT_TRUE(Schema(R"({"type": "array", "maxItems": 0})").accepts("[]"));
  EXPECT_FALSE(Schema(R"({"type": "array", "maxItems": 0})").accepts("[1]"));
}

TEST(JsonSchema, StringsEnumsConstAndCombinators) {
  const Schema len(R"({"type": "string", "minLength": 2, "maxLength": 4})");
  expect_cases(len, {R"("ab")", R"("a\"b")", R"("\u00e9\u00e9")", "\"\xE4\xBD\xA0\xE5\xA5\xBD\"", R"("abcd")"},
               {R"("a")", R"("abcde")", "\"a\nb\"", R"("\ud800x")"});
  const Schema e(R"({"enum": ["red", 2, null, {"k": [1]}], "type": ["string", "null", "object"]})");
  expect_cases(e, {R"("red")", "null", R"({"k": [1]})"}, {"2", R"("blue")"});
  const Schema any_of(R"({"anyOf": [{"type": "integer", "minimum": 10}, {"type": "string", "maxLength": 1}]})");
  expect_cases(any_of, {"10", "12345", R"("x")"}, {"9", R"("xy")", "1.5"});
  const Schema types(R"({"type": ["integer", "null"], "maximum": 3})");
  expect_cases(types, {"3", "-7", "null"}, {"4", "\"3\""});
}

TEST(JsonSchema, PatternsOverEncodedText) {
  const Schema code(R"({"type": "string", "pattern": "^[A-Z]{2}-\\d{3}$"})");
  expect_cases(code, {R"("AB-123")"}, {R"("AB-12")", R"("ab-123")", R"("XAB-123")"});
  const Schema contains(R"({"type": "string", "pattern": "ab|^x"})");  // unanchored: "contains ab" or "starts with x"
  expect_cases(contains, {R"("zzabzz")", R"("ab")", R"("xyz")"}, {R"("a b")", R"("yx")"});
  const Schema quote(R"({"type": "string", "pattern": "^[\"\\\\]+$"})");  // quotes and backslashes, escaped in JSON
  expect_cases(quote, {R"("\"\\")"}, {R"("a")"});
  for (const char* bad : {"(?=a)", "\\1", "\\bword", "\\p{L}", "a^b"}) {
    const std::string schema = std::string(R"({"type": "string", "pattern": )") + Json(bad).dump() + "}";
    EXPECT_NE(error_of(schema).find("pattern"), std::string::npos) << bad;
  }
}

// Integer bounds against arithmetic: every integer of [-1200, 1200] is accepted exactly when it is
// within the bounds.
TEST(JsonSchema, IntegerRangesMatchArithmetic) {
  struct Bounds {
    const char* schema;
    double lo, hi;  // inclusive; +-inf when open
  };
  const double inf = INFINITY;
  const Bounds cases[] = {
      {R"({"type": "integer", "minimum": 0, "maximum": 150})", 0, 150},
      {R"({"type": "integer", "minimum": -37, "maximum": 1024})", -37, 1024},
      {R"({"type": "integer", "exclusiveMinimum": 5, "exclusiveMaximum": 100})", 6, 99},
      {R"({"type": "integer", "minimum": 120})", 120, inf},
      {R"({"type": "integer", "maximum": -3})", -inf, -3},
      {R"({"type": "integer", "minimum": -999, "maximum": -10})", -999, -10},
      {R"({"type": "integer", "minimum": 1.5, "maximum": 7.9})", 2, 7},
      {R"({"type": "integer", "minimum": 99, "maximum": 1001})", 99, 1001},
  };
  for (const Bounds& b : cases) {
    const Schema s(b.schema);
    for (int v = -1200; v <= 1200; ++v) {
      const bool want = v >= b.lo && v <= b.hi;
      ASSERT_EQ(s.accepts(std::to_string(v)), want) << b.schema << " value " << v << "\n" << s.gbnf();
    }
    EXPECT_FALSE(s.accepts("007"));
    EXPECT_FALSE(s.accepts("1.0"));
  }
}

// Number bounds against double comparison, on random decimals: whatever the grammar accepts is
// within the bounds, and every value within them is accepted in its usual spelling (the grammar
// may refuse "-0.0", a negative zero).
TEST(JsonSchema, NumberBoundsMatchArithmetic) {
  struct Bounds {
    const char* schema;
    double lo, hi;
    bool lo_excl, hi_excl;
  };
  const double inf = INFINITY;
  const Bounds cases[] = {
      {R"({"type": "number", "minimum": 0, "maximum": 1})", 0, 1, false, false},
      {R"({"type": "number", "exclusiveMinimum": 0, "maximum": 100})", 0, 100, true, false},
      {R"({"type": "number", "minimum": -5, "exclusiveMaximum": 5})", -5, 5, false, true},
      {R"({"type": "number", "exclusiveMinimum": -2, "exclusiveMaximum": 0})", -2, 0, true, true},
      {R"({"type": "number", "minimum": 3})", 3, inf, false, false},
      {R"({"type": "number", "maximum": -1})", -inf, -1, false, false},
  };
  std::mt19937 rng(7);
  for (const Bounds& b : cases) {
    const Schema s(b.schema);
    for (int i = 0; i < 1500; ++i) {
      const int ip = static_cast<int>(rng() % 12) - 6;
      char buf[64];
      std::string text;
      switch (rng() % 4) {
        case 0: text = std::to_string(ip); break;
        case 1: std::snprintf(buf, sizeof buf, "%d.%u", ip, static_cast<unsigned>(rng() % 1000)); text = buf; break;
        case 2: std::snprintf(buf, sizeof buf, "%d.0", ip); text = buf; break;
        default: std::snprintf(buf, sizeof buf, "-0.%03u", static_cast<unsigned>(rng() % 1000)); text = buf; break;
      }
      const double v = std::strtod(text.c_str(), nullptr);
      const bool want = (b.lo_excl ? v > b.lo : v >= b.lo) && (b.hi_excl ? v < b.hi : v <= b.hi);
      const bool negative_zero = text[0] == '-' && v == 0;
      if (negative_zero && !want) continue;
      ASSERT_EQ(s.accepts(text), want && !negative_zero) << b.schema << " value " << text << "\n" << s.gbnf();
    }
  }
  EXPECT_NE(error_of(R"({"type": "number", "minimum": 0.5})").find("bounds of type 'number' must be integers"), std::string::npos);
}

// Dates against a calendar computed here: every day of 1899-1901, 1999-2001, 2023-2024 and
// 2100, plus impossible ones.
TEST(JsonSchema, DateFormatIsTheCalendar) {
  const Schema s(R"({"type": "string", "format": "date"})");
  const auto leap = [](int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; };
  for (const int y : {1899, 1900, 1901, 1999, 2000, 2001, 2023, 2024, 2100}) {
    for (int m = 1; m <= 12; ++m) {
      const int days = m == 2 ? (leap(y) ? 29 : 28) : (m == 4 || m == 6 || m == 9 || m == 11) ? 30 : 31;
      for (int d = 1; d <= 31; ++d) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "\"%04d-%02d-%02d\"", y, m, d);
        ASSERT_EQ(s.accepts(buf), d <= days) << buf;
      }
    }
  }
  expect_cases(s, {}, {R"("0000-01-01")", R"("2024-13-01")", R"("2024-00-10")", R"("2024-1-01")"});
  const Schema dt(R"({"type": "string", "format": "date-time"})");
  expect_cases(dt, {R"("2024-02-29T23:59:59Z")", R"("1999-12-31T00:00:00.123+05:30")"},
               {R"("2024-02-29T24:00:00Z")", R"("2024-02-29T10:00:00")", R"("2023-02-29T10:00:00Z")"});
  const Schema uuid(R"({"type": "string", "format": "uuid"})");
  expect_cases(uuid, {R"("123e4567-e89b-12d3-a456-426614174000")"}, {R"("123e4567e89b12d3a456426614174000")"});
  const Schema ip(R"({"type": "string", "format": "ipv4"})");
  expect_cases(ip, {R"("192.168.0.255")", R"("0.0.0.0")"}, {R"("256.1.1.1")", R"("01.2.3.4")"});
}

TEST(JsonSchema, ReferencesAndRecursion) {
  const Schema tree(R"({"$ref": "#/$defs/node", "$defs": {"node": {"type": "object", "properties": {
      "v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}},
      "required": ["v"]}}})");
  expect_cases(tree, {R"({"v": 1})", R"({"v": 1, "kids": [{"v": 2}, {"v": 3, "kids": [{"v": 4, "kids": []}]}]})"},
               {R"({"v": 1, "kids": [{"v": 2}, {"v": 3}, {"v": 4}]})", R"({"kids": []})"});
  const Schema list(R"({"type": "object", "properties": {"head": {"type": "string"}, "tail": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}},
      "required": ["head", "tail"]})");
  expect_cases(list, {R"({"head": "a", "tail": {"head": "b", "tail": null}})"}, {R"({"head": "a", "tail": {"head": "b"}})"});
  const Schema pointer(R"({"properties": {"a": {"type": "boolean"}, "b": {"$ref": "#/properties/a"}}, "required": ["a", "b"]})");
  expect_cases(pointer, {R"({"a": true, "b": false})"}, {R"({"a": true, "b": 1})"});
}

TEST(JsonSchema, AnyValueAndJsonObject) {
  const Schema any("true");
  expect_cases(any, {"1", "\"s\"", "[1, [2, {}]]", "{\"a\": {\"b\": [null, true, 1e5, -0.5]}}"}, {"", "[1,]", "{a: 1}", "nul"});
  const auto g = CompiledGrammar::compile(parse_gbnf(json_object_gbnf()), byte_vocab());
  GrammarMatcher m(g);
  EXPECT_FALSE(m.accept_bytes("[1]"));
  EXPECT_TRUE(m.accept_bytes("{\"a\": [1, {\"b\": \"c\"}]}"));
  EXPECT_TRUE(m.can_end());
}

TEST(JsonSchema, UnsupportedKeywordsAreNamed) {
  struct Case {
    const char* schema;
    const char* message;
  };
  const Case cases[] = {
      {R"({"type": "string", "format": "uri"})", "/: format 'uri' is not supported (supported: date, time, date-time, uuid, email, ipv4)"},
      {R"({"properties": {"x": {"not": {"type": "string"}}}})", "/properties/x: keyword 'not' is not supported"},
      {R"({"type": "array", "uniqueItems": true})", "'uniqueItems': true is not supported"},
      {R"({"type": "object", "patternProperties": {"^a": {}}})", "keyword 'patternProperties' is not supported"},
      {R"({"type": "object", "dependentRequired": {"a": ["b"]}})", "keyword 'dependentRequired' is not supported"},
      {R"({"if": {}, "then": {}})", "keyword 'if' is not supported"},
      {R"({"type": "integer", "multipleOf": 5})", "'multipleOf' is supported only as 1"},
      {R"({"$ref": "https://example.com/s.json"})", "only references inside the schema"},
      {R"({"$ref": "#/$defs/missing"})", "points to nothing"},
      {R"({"allOf": [{}, {}]})", "'allOf' is supported with exactly one schema"},
      {R"({"type": "strin"})", "unknown type 'strin'"},
      {R"({"type": "string", "maxLength": 5000})", "above 2000"},
      {R"({"frobnicate": 1})", "keyword 'frobnicate' is not supported (unknown keyword)"},
      {R"({"type": "string", "nullable": true})", "OpenAPI"},
      {"false", "accepts no value"},
  };
  for (const Case& c : cases) {
    const std::string e = error_of(c.schema);
    EXPECT_NE(e.find(c.message), std::string::npos) << c.schema << "\n" << e;
    EXPECT_EQ(e.rfind("json_schema: ", 0), 0u) << e;
  }
  // Annotations are ignored, not refused.
  EXPECT_TRUE(Schema(R"({"title": "t", "description": "d", "examples": [1], "default": 1, "$comment": "c",
                        "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "integer"})")
                  .accepts("1"));
}

}  // namespace
}  // namespace edgellm::grammar
