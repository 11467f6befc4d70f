// Jinja statements: if/elif/else, for (else, filter, loop variables, unpacking, break/continue),
// scoping of set, namespace(), block set, macros with defaults/varargs/kwargs, call blocks,
// filter blocks, with, do and Hugging Face's {% generation %}.
#include <gtest/gtest.h>

#include "chat/jinja_test_util.h"

namespace edgellm {
namespace {

using test::render_jinja;

TEST(JinjaStatements, IfElifElse) {
  EXPECT_EQ(render_jinja("{% if false %}a{% elif true %}b{% else %}c{% endif %}"), "b");
  EXPECT_EQ(render_jinja("{% if x %}a{% elif y %}b{% else %}c{% endif %}", R"({"x": 0, "y": ""})"), "c");
  EXPECT_EQ(render_jinja("{% if [] %}a{% endif %}{% if [0] %}b{% endif %}{% if {} %}c{% endif %}"), "b");
}

TEST(JinjaStatements, ForLoopVariables) {
  EXPECT_EQ(render_jinja("{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}"
                         "{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }} {% endfor %}"),
            "1032TrueFalse3 2121FalseFalse3 3210FalseTrue3 ");
  EXPECT_EQ(render_jinja("{% for x in [1, 2, 3] %}[{{ loop.previtem }}|{{ loop.nextitem }}]{% endfor %}"),
            "[|2][1|3][2|]");
  EXPECT_EQ(render_jinja("{% for x in [1, 2, 3] %}{{ loop.cycle('a', 'b') }}{% endfor %}"), "aba");
}

TEST(JinjaStatements, ForElseFilterUnpack) {
  EXPECT_EQ(render_jinja("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render_jinja("{% for x in missing %}x{% else %}none{% endfor %}"), "none");
  // The if filter runs before the loop, so loop.length counts the kept items.
  EXPECT_EQ(render_jinja("{% for x in [1, 2, 3, 4, 5] if x is odd %}{{ x }}/{{ loop.length }} {% endfor %}"),
            "1/3 3/3 5/3 ");
  EXPECT_EQ(render_jinja("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", R"({"d": {"b": 1, "a": 2}})"),
            "b=1;a=2;");
  EXPECT_EQ(render_jinja("{% for k in d %}{{ k }}{% endfor %}", R"({"d": {"b": 1, "a": 2}})"), "ba");
  EXPECT_EQ(render_jinja("{% for a, b in [[1, 2], (3, 4)] %}{{ a + b }} {% endfor %}"), "3 7 ");
}

TEST(JinjaStatements, BreakAndContinue) {
  EXPECT_EQ(render_jinja("{% for x in [1, 2, 3] %}{% if x == 2 %}{% continue %}{% endif %}{{ x }}{% endfor %}"), "13");
  EXPECT_EQ(render_jinja("{% for x in [1, 2, 3] %}{% if x == 2 %}{% break %}{% endif %}{{ x }}{% endfor %}"), "1");
}

TEST(JinjaStatements, SetScoping) {
  // A for loop body is its own scope; if is not.
  EXPECT_EQ(render_jinja("{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{{ x }}{% endfor %}{{ x }}"), "21");
  EXPECT_EQ(render_jinja("{% if true %}{% set y = 5 %}{% endif %}{{ y }}"), "5");
  EXPECT_EQ(render_jinja("{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set t = 1, 2 %}{{ t }}"), "12(1, 2)");
  EXPECT_EQ(render_jinja("{% set x %}block {{ 1 + 1 }}{% endset %}[{{ x }}]"), "[block 2]");
  EXPECT_EQ(render_jinja("{% set x | upper %}shout{% endset %}{{ x }}"), "SHOUT");
}

TEST(JinjaStatements, ScopeAnalysisMatchesJinja2) {
  // jinja2 decides at compile time how a scope's stored names start: a name the scope stores
  // before reading it (and no enclosing scope mentions) starts undefined, also for nested loops
  // and macros that read it first; names stored only inside an if start from the outer value.
  EXPECT_EQ(render_jinja("{% for i in [1] %}[{{ x }}]{% endfor %}{% set x = 1 %}{{ x }}", R"({"x": "X0"})"), "[]1");
  EXPECT_EQ(render_jinja("{{ x }}{% set x = 1 %}{{ x }}", R"({"x": "X0"})"), "X01");
  EXPECT_EQ(render_jinja("{% for i in [1, 2] %}{% for j in [1] %}[{{ y }}]{% endfor %}{% set y = i %}{% endfor %}",
                         R"({"y": "Y0"})"),
            "[][]");
  EXPECT_EQ(render_jinja("{% if false %}{% set x = 1 %}{% endif %}{% for i in [1] %}[{{ x }}]{% endfor %}",
                         R"({"x": "X0"})"),
            "[X0]");
  EXPECT_EQ(render_jinja("{% macro m() %}[{{ a }}]{% set a = 1 %}[{{ a }}]{% endmacro %}{{ m() }}", R"({"a": "A0"})"),
            "[A0][1]");
  // A block set renders in a scope of its own.
  EXPECT_EQ(render_jinja("{% set x %}{% set inner = 1 %}v{% endset %}[{{ inner }}]{{ x }}"), "[]v");
}

TEST(JinjaStatements, NamespaceCarriesStateOutOfLoops) {
  EXPECT_EQ(render_jinja("{% set ns = namespace(total=0, last='') %}{% for i in [1, 2, 3] %}"
                         "{% set ns.total = ns.total + i %}{% set ns.last = i %}{% endfor %}{{ ns.total }}/{{ ns.last }}"),
            "6/3");
  // The Qwen pattern: find the last user message index walking backwards.
  EXPECT_EQ(render_jinja("{% set ns = namespace(idx=-1) %}{% for m in msgs[::-1] %}"
                         "{% if ns.idx == -1 and m == 'u' %}{% set ns.idx = (msgs|length - 1) - loop.index0 %}{% endif %}"
                         "{% endfor %}{{ ns.idx }}",
                         R"({"msgs": ["u", "a", "u", "a"]})"),
            "2");
}

TEST(JinjaStatements, Macros) {
  EXPECT_EQ(render_jinja("{% macro m(a, b='d') %}<{{ a }}|{{ b }}>{% endmacro %}{{ m(1) }}{{ m(1, 2) }}{{ m(b=3, a=4) }}"),
            "<1|d><1|2><4|3>");
  EXPECT_EQ(render_jinja("{% macro m() %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, k=3) }}"), "(1, 2){'k': 3}");
  // Recursion works (bounded by max_call_depth).
  EXPECT_EQ(render_jinja("{% macro f(n) %}{{ n }}{% if n > 0 %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(3) }}"), "3210");
  // Macros see template-level variables.
  EXPECT_EQ(render_jinja("{% set g = 'G' %}{% macro m() %}{{ g }}{% endmacro %}{{ m() }}"), "G");
  EXPECT_EQ(render_jinja("{% macro w(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}"
                         "{% call w('b') %}inner{% endcall %}"),
            "<b>inner</b>");
}

TEST(JinjaStatements, FilterWithDoGeneration) {
  EXPECT_EQ(render_jinja("{% filter upper %}hello {{ 'x' }}{% endfilter %}"), "HELLO X");
  EXPECT_EQ(render_jinja("{% with a = 5 %}{{ a }}{% endwith %}[{{ a }}]"), "5[]");
  EXPECT_EQ(render_jinja("{% do range(3) %}ok"), "ok");
  EXPECT_EQ(render_jinja("a{% generation %}b{{ 1 }}{% endgeneration %}c"), "ab1c");
}

}  // namespace
}  // namespace edgellm
