// Jinja filters and tests. Expected strings follow jinja2 3.x (and Hugging Face's tojson, which
// is json.dumps(ensure_ascii=False) without HTML escaping).
#include <gtest/gtest.h>

#include "chat/jinja_test_util.h"

namespace edgellm {
namespace {

using test::expect_renders;

TEST(JinjaFilters, Strings) {
  expect_renders({
      {"{{ '  a b  ' | trim }}|{{ 'xxaxx' | trim('x') }}", "a b|a"},
      {"{{ 'aB' | upper }}{{ 'aB' | lower }}|{{ 'hello WORLD' | capitalize }}", "ABab|Hello world"},
      // jinja2's title starts words after spaces, '-' and brackets (not after apostrophes).
      {"{{ \"they're bill's-friends (ok\" | title }}", "They're Bill's-Friends (Ok"},
      {"{{ 'aXbX' | replace('X', '-') }}|{{ 'aaa' | replace('a', 'b', 2) }}", "a-b-|bba"},
      {"{{ '<a href=\"x\">&\\'' | e }}|{{ '<b>' | safe }}", "&lt;a href=&#34;x&#34;&gt;&amp;&#39;|<b>"},
      {"{{ 1 | string }}{{ [1] | string }}{{ none | string }}", "1[1]None"},
      {"{{ 'a b  c' | wordcount }}", "3"},
      {"{{ 'ab' | center(6) }}|", "  ab  |"},
      {"{{ '%s-%d' | format('a', 3) }}", "a-3"},
      {"{{ 'abc' | reverse }}", "cba"},
  });
}

TEST(JinjaFilters, Indent) {
  expect_renders({
      // Blank lines are not indented unless blank=true; the first line only with first=true.
      {"{{ 'a\\nb\\n\\nc' | indent(2) }}", "a\n  b\n\n  c"},
      {"{{ 'a\\nb' | indent(2, true) }}", "  a\n  b"},
      {"{{ 'a\\n\\nb\\n' | indent(4, blank=true) }}", "a\n    \n    b\n    "},
      {"{{ 'a\\nb' | indent('> ') }}", "a\n> b"},
  });
}

TEST(JinjaFilters, Sequences) {
  const char* users = R"({"users": [{"n": "x", "a": 1}, {"n": "y", "a": 0}, {"n": "z", "a": 2}]})";
  expect_renders({
      {"{{ [1, 2] | length }}{{ 'h\u00e9llo' | length }}{{ {'a': 1} | count }}{{ missing | length }}", "2510"},
      {"{{ [3, 4] | first }}{{ [3, 4] | last }}{{ 'abc' | first }}|{{ [] | first }}|", "34a||"},
      {"{{ ['a', 'b'] | join(', ') }}|{{ [1, 2] | join }}|{{ users | join(',', attribute='n') }}", "a, b|12|x,y,z", users},
      {"{{ 'abc' | list }} {{ {'a': 1} | items | list }} {{ {'b': 1, 'A': 2} | dictsort }}",
       "['a', 'b', 'c'] [('a', 1)] [('A', 2), ('b', 1)]"},
      {"{{ users | selectattr('a') | map(attribute='n') | list }}|{{ users | rejectattr('a') | map(attribute='n') | list }}",
       "['x', 'z']|['y']", users},
      {"{{ users | selectattr('a', 'equalto', 2) | map(attribute='n') | join }}|{{ users | selectattr('n', 'in', ['x', 'y']) | list | length }}",
       "z|2", users},
      {"{{ [1, 2, 3, 4] | select('odd') | list }}|{{ [1, 2, 3] | reject('even') | list }}|{{ [0, 1, ''] | select | list }}",
       "[1, 3]|[1, 3]|[1]"},
      {"{{ ['a', 'b'] | map('upper') | list }}|{{ [{'q': 1}, {}] | map(attribute='q', default='-') | list }}",
       "['A', 'B']|[1, '-']"},
      {"{{ [1, 2, 1, 'A', 'a'] | unique | list }}", "[1, 2, 'A']"},
      {"{{ [3, 1, 2] | sort }}|{{ ['b', 'A', 'c'] | sort }}|{{ [3, 1, 2] | sort(reverse=true) }}|{{ users | sort(attribute='a') | map(attribute='n') | join }}",
       "[1, 2, 3]|['A', 'b', 'c']|[3, 2, 1]|yxz", users},
      {"{{ [1, 2, 3] | sum }}{{ [1, 5, 2] | max }}{{ [4, 1] | min }}{{ [1, 2] | reverse | list }}", "651[2, 1]"},
      {"{{ [1, 2, 3] | batch(2) | list }}", "[[1, 2], [3]]"},
  });
}

TEST(JinjaFilters, NumbersAndDefaults) {
  expect_renders({
      {"{{ '12' | int }}{{ '1.9' | int }}{{ 'x' | int }}{{ 'x' | int(7) }}{{ 3.9 | int }}{{ true | int }}", "121073" "1"},
      {"{{ '1.5' | float }} {{ 2 | float }} {{ 'a' | float }}", "1.5 2.0 0.0"},
      // round() is Python's: ties to even, and 2.675 is really 2.67499999...
      {"{{ 2.5 | round }} {{ 3.5 | round }} {{ 2.675 | round(2) }} {{ 1.23456 | round(2, 'floor') }} {{ 1.2 | round(0, 'ceil') }}",
       "2.0 4.0 2.67 1.23 2.0"},
      // ints stay ints, as Python's round(int, n) does.
      {"{{ 1 | round }} {{ 1234 | round(-2) }}", "1 1200"},
      {"{{ -3 | abs }} {{ -1.5 | abs }}", "3 1.5"},
      {"{{ x | default('d') }}|{{ '' | default('d') }}|{{ '' | default('d', true) }}|{{ none | d('z') }}", "d||d|None"},
  });
}

TEST(JinjaFilters, ToJsonMatchesPythonJsonDumps) {
  const char* ctx = R"({"d": {"b": [1, {"x": "y"}], "a": {}, "f": 2.5, "s": "\u00e9\"\n<&>"}})";
  expect_renders({
      {"{{ d | tojson }}", R"({"b": [1, {"x": "y"}], "a": {}, "f": 2.5, "s": "é\"\n<&>"})", ctx},
      {"{{ d.b | tojson(indent=2) }}", "[\n  1,\n  {\n    \"x\": \"y\"\n  }\n]", ctx},
      {"{{ d | tojson(sort_keys=true) }}", R"({"a": {}, "b": [1, {"x": "y"}], "f": 2.5, "s": "é\"\n<&>"})", ctx},
      {"{{ d.s | tojson(ensure_ascii=true) }}", R"("\u00e9\"\n<&>")", ctx},
      {"{{ [1.0, none, true, 'a'] | tojson }}|{{ [] | tojson(indent=2) }}", R"([1.0, null, true, "a"]|[])"},
      {"{{ {'a': 1} | tojson(separators=(',', ':')) }}", R"({"a":1})"},
  });
}

TEST(JinjaTests, TypeAndValueTests) {
  expect_renders({
      {"{{ 1 is number }}{{ 1.0 is float }}{{ 1 is integer }}{{ 1.0 is integer }}{{ true is boolean }}{{ true is number }}",
       "TrueTrueTrueFalseTrueTrue"},
      {"{{ 's' is string }}{{ {} is mapping }}{{ [] is iterable }}{{ 's' is sequence }}{{ none is none }}{{ range is callable }}",
       "TrueTrueTrueTrueTrueTrue"},
      {"{{ x is defined }}{{ x is undefined }}{{ x is not defined }}{{ y is none }}{{ y is defined }}",
       "FalseTrueTrueTrueTrue", R"({"y": null})"},
      {"{{ 3 is odd }}{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ 9 is divisibleby(4) }}", "TrueTrueTrueFalse"},
      // Python's % decides: 3.0 is odd, 2.5 is neither odd nor even.
      {"{{ 3.0 is odd }}{{ 2.5 is odd }}{{ 2.5 is even }}", "TrueFalseFalse"},
      {"{{ 'ab' is lower }}{{ 'AB' is upper }}{{ 'aB' is lower }}", "TrueTrueFalse"},
      {"{{ 1 is eq 1 }}{{ 2 is equalto 2 }}{{ 2 is ne 2 }}{{ 1 is in [1] }}{{ 3 is gt 2 }}{{ 3 is le 2 }}",
       "TrueTrueFalseTrueTrueFalse"},
      {"{{ true is true }}{{ 1 is true }}{{ false is false }}{{ 0 is false }}", "TrueFalseTrueFalse"},
  });
}

}  // namespace
}  // namespace edgellm
