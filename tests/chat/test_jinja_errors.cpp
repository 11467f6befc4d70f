// Bad templates must fail with edgellm::Error naming the line and column, never crash or hang:
// syntax errors, raise_exception(), runaway loops and recursion, oversized output and values,
// pathological nesting.
#include <gtest/gtest.h>

#include <string>

#include "chat/jinja_template.h"
#include "chat/jinja_test_util.h"
#include "core/error.h"

namespace edgellm {
namespace {

using test::render_jinja;

// Renders and returns the error message; fails the test when nothing is thrown.
std::string error_of(const std::string& source, const jinja::RenderOptions& options = {}) {
  try {
    jinja::Template::parse(source).render(Json::object(), options);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << source;
    return e.what();
  }
  ADD_FAILURE() << "no error for: " << source.substr(0, 200);
  return "";
}

void expect_error(const std::string& source, const std::string& fragment, const jinja::RenderOptions& options = {}) {
  const std::string msg = error_of(source, options);
  EXPECT_NE(msg.find(fragment), std::string::npos) << "message '" << msg << "' lacks '" << fragment << "'";
}

TEST(JinjaErrors, SyntaxErrorsNameLineAndColumn) {
  expect_error("{% if %}", "line 1, column 7: expected an expression");
  expect_error("a\n\n  {{ 1 + }}", "line 3, column 10: expected an expression, got '}}'");
  expect_error("{% if true %}x", "expected 'endif'");
  expect_error("{% for x in y %}x", "expected 'endfor'");
  expect_error("{% foo %}", "unknown tag 'foo'");
  expect_error("{% endif %}", "unexpected 'endif'");
  expect_error("{{ 'abc }}", "unterminated string");
  expect_error("x {# never closed", "line 1, column 3: unterminated comment");
  expect_error("{{ 1 ", "expected '}}'");
  expect_error("{{ [1, 2 }}", "expected");
  expect_error("{% break %}", "'break' outside of a loop");
  expect_error("{{ a ? b }}", "unexpected character '?'");
}

TEST(JinjaErrors, RuntimeErrors) {
  expect_error("{{ raise_exception('Conversation roles must alternate') }}",
               "line 1, column 4: Conversation roles must alternate");
  expect_error("line1\n{{ 'a' + 1 }}", "line 2, column 8: unsupported operand type(s) for +: 'str' and 'int'");
  expect_error("{{ 1 / 0 }}", "division by zero");
  expect_error("{{ foo() }}", "'foo' is undefined");
  expect_error("{{ x.strip() }}", "is undefined");
  expect_error("{{ 5() }}", "'int' object is not callable");
  expect_error("{% set d = {} %}{% set d.a = 1 %}", "cannot assign attribute on non-namespace object");
  expect_error("{% for x in 5 %}{% endfor %}", "'int' object is not iterable");
  expect_error("{% set a, b = [1] %}", "not enough values to unpack");
  expect_error("{{ x | nosuchfilter }}", "no filter named 'nosuchfilter'");
  expect_error("{{ x is nosuchtest }}", "no test named 'nosuchtest'");
  expect_error("{{ undefined_value | tojson }}", "not JSON serializable");
  expect_error("{{ [1] < ['a'] }}", "'<' not supported");
}

TEST(JinjaErrors, RunawayLoopsAndRecursionAreStopped) {
  jinja::RenderOptions small;
  small.max_steps = 100000;
  expect_error("{% for i in range(1000) %}{% for j in range(1000) %}{{ j }}{% endfor %}{% endfor %}",
               "evaluation steps", small);
  expect_error("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "nested deeper than 32 calls");
  jinja::RenderOptions tiny_output;
  tiny_output.max_output_bytes = 1000;
  expect_error("{% for i in range(1000) %}xxxxxxxxxx{% endfor %}", "exceeds the limit of 1000 bytes", tiny_output);
  // Macro output is capped too.
  expect_error("{% macro m() %}{% for i in range(1000) %}xx{% endfor %}{% endmacro %}{% set s = m() %}",
               "exceeds the limit", tiny_output);
}

TEST(JinjaErrors, OversizedValuesAreRejected) {
  expect_error("{{ 'a' * 1000000000 }}", "exceeds the template limit");
  expect_error("{{ [1] * 100000000 }}", "exceeds the template limit");
  expect_error("{{ range(100000000) | length }}", "exceeds the template limit");
  expect_error("{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
               "exceeds the template limit");
  expect_error("{{ 2 ** 64 }}", "integer overflow");
}

TEST(JinjaErrors, PathologicalNestingFailsCleanly) {
  expect_error("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}", "nested too deeply");
  expect_error("{{ " + std::string(5000, '[') + std::string(5000, ']') + " }}", "nested too deeply");
  std::string ifs;
  for (int i = 0; i < 500; ++i) ifs += "{% if true %}";
  expect_error(ifs, "nested too deeply");
  std::string sum = "{{ 1";
  for (int i = 0; i < 10000; ++i) sum += " + 1";
  expect_error(sum + " }}", "nested too deeply");
  std::string nots = "{{ ";
  for (int i = 0; i < 5000; ++i) nots += "not ";
  expect_error(nots + "1 }}", "nested too deeply");
  // A namespace that would contain itself, and values nested through a namespace in a loop.
  expect_error("{% set ns = namespace() %}{% set ns.me = [ns] %}", "cannot contain itself");
  expect_error("{% set ns = namespace(x=1) %}{% for i in range(1000) %}{% set ns.x = [ns.x] %}{% endfor %}",
               "nested too deeply");
}

TEST(JinjaErrors, LimitsDoNotBreakOrdinaryTemplates) {
  std::string sum = "{{ 1";
  for (int i = 0; i < 100; ++i) sum += " + 1";
  EXPECT_EQ(render_jinja(sum + " }}"), "101");
  EXPECT_EQ(render_jinja("{% for i in range(10000) %}{% endfor %}done"), "done");
}

}  // namespace
}  // namespace edgellm
