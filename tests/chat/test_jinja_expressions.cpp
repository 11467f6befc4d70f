// Jinja expressions with Python semantics: literals, printing (str/repr), integer vs float
// arithmetic, comparisons, boolean operators, `in`, conditional expressions, attribute and item
// access, slicing and the str/dict/list methods chat templates call. Expected values are what
// Python prints for the same expression.
#include <gtest/gtest.h>

#include "chat/jinja_test_util.h"

namespace edgellm {
namespace {

using test::expect_renders;

TEST(JinjaExpressions, PythonStylePrinting) {
  expect_renders({
      {"{{ 1 }} {{ 1.0 }} {{ 1.5e3 }} {{ -0.25 }}", "1 1.0 1500.0 -0.25"},
      {"{{ 0.1 + 0.2 }}", "0.30000000000000004"},
      {"{{ 1e16 }} {{ 1e15 }} {{ 1e-5 }} {{ 0.0001 }}", "1e+16 1000000000000000.0 1e-05 0.0001"},
      {"{{ true }} {{ True }} {{ false }} {{ none }} {{ None }}", "True True False None None"},
      {"{{ [1, 'a', none, true, 1.0] }}", "[1, 'a', None, True, 1.0]"},
      {"{{ {'a': 1, 'b': [2]} }}", "{'a': 1, 'b': [2]}"},
      {"{{ (1,) }} {{ (1, 2) }} {{ () }}", "(1,) (1, 2) ()"},
      // repr picks double quotes when the string has a single quote, and escapes control chars.
      {R"({{ ["it's", 'a\nb', 'q"', '\\'] }})", R"(["it's", 'a\nb', 'q"', '\\'])"},
      {"{{ undefined_name }}|{{ 'x' ~ undefined_name }}", "|x"},
      {"{{ 'a' 'b' }}", "ab"},
      {R"({{ '\u00e9\x41\t|' }})", "\xC3\xA9" "A\t|"},
      {"{{ 1, 2 }}", "(1, 2)"},
  });
}

TEST(JinjaExpressions, Arithmetic) {
  expect_renders({
      {"{{ 10 / 4 }} {{ 10 // 4 }} {{ 2 / 1 }}", "2.5 2 2.0"},
      {"{{ -7 // 2 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 7 % 2.5 }}", "-4 2 -2 2.0"},
      {"{{ 2 ** 10 }} {{ 2 ** -1 }} {{ 2 ** 3 ** 2 }}", "1024 0.5 64"},  // jinja2's ** is left-associative
      {"{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ -(2) }} {{ - 3 + 1 }}", "7 9 -2 -2"},
      {"{{ 1 + 1.0 }} {{ true + 1 }} {{ 10 // 3 * 1.0 }}", "2.0 2 3.0"},
      {"{{ 'ab' * 3 }} {{ 2 * 'x' }} {{ [1] * 3 }} {{ [1] + [2] }} {{ 'a' + 'b' }}",
       "ababab xx [1, 1, 1] [1, 2] ab"},
      {"{{ 'x' ~ 1 ~ none ~ [1] ~ 2.0 }}", "x1None[1]2.0"},
      {"{{ '%s=%d' % ('a', 3) }} {{ '%05.1f' % 3.14159 }}", "a=3 003.1"},
      {"{{ messages|length - 1 }}", "2", R"({"messages": [1, 2, 3]})"},
  });
}

TEST(JinjaExpressions, ComparisonsAndLogic) {
  expect_renders({
      {"{{ 3 > 2 > 1 }} {{ 1 < 2 < 1 }} {{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' != 'b' }}", "True False True True True"},
      {"{{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 2 >= 2 }} {{ 1 <= 0 }}", "True True True False"},
      {"{{ 'b' in 'abc' }} {{ 1 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 3 not in [1] }} {{ not 1 in [1] }}",
       "True True True True False"},
      {"{{ 0 or 'x' }}|{{ 1 and 2 }}|{{ [] or [] }}|{{ none and 1 }}|{{ not '' }}", "x|2|[]|None|True"},
      {"{{ 1 if false }}|{{ 1 if true else 2 }}|{{ 'a' if none else 'b' if 0 else 'c' }}", "|1|c"},
      {"{{ 'x' == none }} {{ none == none }} {{ [1, [2]] == [1, [2]] }} {{ {'a': 1} == {'a': 1} }}",
       "False True True True"},
  });
}

TEST(JinjaExpressions, AccessAndSlicing) {
  const char* ctx = R"({"msgs": [{"role": "user", "content": "hi"}, {"role": "bot", "content": "yo"}],
                        "s": "h\u00e9llo", "l": [1, 2, 3, 4], "d": {"a": "x", "items": 5}})";
  expect_renders({
      {"{{ msgs[0].content }} {{ msgs[-1]['role'] }} {{ msgs[5] }}|{{ msgs.0.role }}", "hi bot |user", ctx},
      // Python slices on code points, with negative bounds and steps.
      {"{{ s[1:] }} {{ s[:-1] }} {{ s[::-1] }} {{ s[::2] }} {{ s[1] }}",
       "\xC3\xA9llo h\xC3\xA9ll oll\xC3\xA9h hlo \xC3\xA9", ctx},
      {"{{ l[1:3] }} {{ l[::-1] }} {{ l[-2:] }} {{ l[5:] }} {{ l[::-2] }} {{ l[-100:2] }}",
       "[2, 3] [4, 3, 2, 1] [3, 4] [] [4, 2] [1, 2]", ctx},
      // a.b looks up an attribute first: d.items is the dict method; d['items'] is the entry.
      {"{{ d.a }} {{ d['a'] }} {{ d['items'] }} {{ d.items() | list }}", "x x 5 [('a', 'x'), ('items', 5)]", ctx},
      {"{{ d.missing }}|{{ d.missing is defined }}|{{ d.missing.deeper is defined }}", "|False|False", ctx},
  });
}

TEST(JinjaExpressions, StringMethods) {
  expect_renders({
      {"{{ ' a '.strip() }}|{{ 'xax'.strip('x') }}|{{ 'xa'.lstrip('x') }}|{{ 'a\\n\\n'.rstrip() }}|{{ '\\nb'.lstrip('\\n') }}",
       "a|a|a|a|b"},
      {"{{ 'a b  c'.split() }} {{ 'a,b,c'.split(',') }} {{ 'a,b,c'.split(',', 1) }} {{ 'a,b,c'.rsplit(',', 1) }}",
       "['a', 'b', 'c'] ['a', 'b', 'c'] ['a', 'b,c'] ['a,b', 'c']"},
      {"{{ 'x</think>y'.split('</think>')[-1] }} {{ 'x</think>y'.split('</think>')[0] }}", "y x"},
      {"{{ 'abc'.startswith('a') }} {{ 'abc'.endswith(('x', 'c')) }} {{ 'abc'.startswith('b') }}", "True True False"},
      {"{{ 'ab'.upper() }} {{ 'AB'.lower() }} {{ 'hello world'.title() }} {{ 'hELLO'.capitalize() }}",
       "AB ab Hello World Hello"},
      {"{{ 'aXa'.replace('a', 'b') }} {{ 'aaa'.replace('a', 'b', 2) }}", "bXb bba"},
      {"{{ 'abcb'.find('b') }} {{ 'abcb'.rfind('b') }} {{ 'x'.find('q') }} {{ 'h\u00e9b'.find('b') }} {{ 'abab'.count('ab') }}",
       "1 3 -1 2 2"},
      {"{{ '{} and {}'.format(1, 'b') }} {{ '{0}{name}'.format('z', name='n') }} {{ '-'.join(['a', 'b']) }}",
       "1 and b zn a-b"},
      {"[{{ 'ab'.center(5) }}|{{ 'ab'.center(6, '*') }}|{{ 'a'.ljust(3) }}|{{ 'a'.rjust(3, '0') }}]", "[  ab |**ab**|a  |00a]"},
      {"{{ '12'.isdigit() }} {{ 'a1'.isalpha() }} {{ 'a\\nb'.splitlines() }}", "True False ['a', 'b']"},
  });
}

TEST(JinjaExpressions, DictAndListMethods) {
  const char* ctx = R"({"d": {"a": 1, "b": null}, "l": [3, 1, 3]})";
  expect_renders({
      {"{{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 5) }} {{ d.get('b', 7) }}", "1 None 5 None", ctx},
      {"{{ d.keys() | list }} {{ d.values() | list }}", "['a', 'b'] [1, None]", ctx},
      {"{{ l.index(1) }} {{ l.count(3) }}", "1 2", ctx},
  });
}

TEST(JinjaExpressions, Globals) {
  expect_renders({
      {"{{ range(3) | list }} {{ range(1, 7, 2) | list }} {{ range(3, 0, -1) | list }}", "[0, 1, 2] [1, 3, 5] [3, 2, 1]"},
      {"{{ dict(a=1, b='x') }} {{ namespace(a=1).a }}", "{'a': 1, 'b': 'x'} 1"},
      // fixed_time in the test helper: 2024-07-15 00:00:00 UTC.
      {"{{ strftime_now('%d %b %Y') }}|{{ strftime_now('%Y-%m-%d') }}", "15 Jul 2024|2024-07-15"},
  });
}

// Strings are indexed by code point (core/utf8.h decides what is well-formed); a byte that belongs
// to no well-formed sequence (an overlong C0 80, a surrogate ED A0 80, F4 90 80 80 above U+10FFFF)
// counts as one item and survives slicing unchanged, like a bytes object would.
TEST(JinjaExpressions, IllFormedUtf8BytesAreOneItemEach) {
  expect_renders({
      {"{{ 'a\xC3\xA9" "b'|length }} {{ 'a\xC3\xA9" "b'[::-1] }}", "3 b\xC3\xA9" "a"},
      {"{{ '\xC0\x80z'|length }}|{{ '\xC0\x80z'[::-1] }}", "3|z\x80\xC0"},
      {"{{ '\xED\xA0\x80'|length }}|{{ '\xED\xA0\x80'[1:] }}", "3|\xA0\x80"},
      {"{{ '\xF4\x90\x80\x80'|length }}|{{ 'x\xF4\x90\x80\x80'[:2] }}", "4|x\xF4"},
      {"{{ '\xF0\x9F\x98\x80'|length }}|{{ '\xF0\x9F\x98'|length }}", "1|3"},
      // tojson(ensure_ascii=True) writes each of them as \ufffd; a lone surrogate escape in a
      // literal has no UTF-8 form and becomes U+FFFD.
      {"{{ '\xC0\x80'|tojson(ensure_ascii=True) }}", R"("\ufffd\ufffd")"},
      {R"({{ '\ud800' }})", "\xEF\xBF\xBD"},
  });
}

}  // namespace
}  // namespace edgellm
