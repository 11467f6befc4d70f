// Whitespace semantics of jinja2 as Hugging Face configures it (trim_blocks, lstrip_blocks,
// keep_trailing_newline=False) and the `-` / `+` markers. Expected strings are worked out from the
// jinja2 rules by hand: trim_blocks eats the one newline right after a block/comment tag,
// lstrip_blocks eats spaces/tabs between a line start and a block/comment tag, `-` eats all
// whitespace (newlines included) on its side, `+` turns the lstrip/trim off for that side.
#include <gtest/gtest.h>

#include "chat/jinja_test_util.h"

namespace edgellm {
namespace {

using test::render_jinja;

using Case = test::JinjaCase;

TEST(JinjaWhitespace, TrimAndLstripBlocks) {
  const Case cases[] = {
      // Newline after %} is eaten; the one after "b" stays.
      {"a\n{% if true %}\n  b\n{% endif %}\nc", "a\n  b\nc"},
      // Indented tags: leading spaces go (lstrip_blocks), the newline after them too (trim_blocks).
      {"a\n  {% if true %}\n  b\n  {% endif %}\nc\n", "a\n  b\nc"},
      // {{ }} is not a block: neither lstrip nor trim applies.
      {"  {{ 'x' }}\n  y", "  x\n  y"},
      // Text before a tag on the same line keeps its spaces (not at line start).
      {"a  {% if true %}b{% endif %}", "a  b"},
      // Trailing spaces after a tag are not trimmed, only a newline.
      {"{% if true %}  \nx{% endif %}", "  \nx"},
      // A for loop body written on its own lines.
      {"{% for i in [1,2,3] %}\n  {{ i }}\n{% endfor %}\n", "  1\n  2\n  3\n"},
      // Comments behave like blocks.
      {"{# c #}\nx\n  {# c2 #}\ny", "x\ny"},
      // Only one trailing newline of the template is dropped.
      {"x\n\n", "x\n"},
      // \r\n is normalised to \n.
      {"a\r\n{% if true %}\r\nb\r\n{% endif %}\r\n", "a\nb\n"},
      // A set statement on its own line leaves nothing behind.
      {"x\n    {% set a = 1 %}\n    {{ a }}\n", "x\n    1"},
  };
  for (const auto& c : cases) EXPECT_EQ(render_jinja(c.source), c.expected) << c.source;
}

TEST(JinjaWhitespace, MinusMarkersStripAllWhitespace) {
  const Case cases[] = {
      {"a  {%- if true -%}  b  {%- endif -%}  c", "abc"},
      {"a\n  {{- 'x' -}}\n  b", "axb"},
      {"a \n\n {#- comment -#} \n\n b", "ab"},
      {"{% for i in [1, 2] -%}\n   {{ i }}\n{%- endfor %}", "12"},
      // Qwen-style template lines: everything between the tags disappears.
      {"{%- if true %}\n    {{- 'A' }}\n{%- endif %}\n{{- 'B' }}", "AB"},
  };
  for (const auto& c : cases) EXPECT_EQ(render_jinja(c.source), c.expected) << c.source;
}

TEST(JinjaWhitespace, PlusMarkersDisableLstripAndTrim) {
  // {%+ keeps the indentation; +%} keeps the newline after the tag.
  EXPECT_EQ(render_jinja("  {%+ if true %}x{% endif %}"), "  x");
  EXPECT_EQ(render_jinja("{% if true +%}\nx{% endif %}"), "\nx");
  // The first endif trims its newline; the second keeps it (+%}).
  EXPECT_EQ(render_jinja("{%+ if true %}x{% endif %}\n  {%+ if true %}y{% endif +%}\nz"), "x  y\nz");
}

TEST(JinjaWhitespace, RawBlocks) {
  EXPECT_EQ(render_jinja("{% raw %}{{ not parsed }} {% if %}{% endraw %}\n{{ 1 }}"), "{{ not parsed }} {% if %}1");
  // No trim_blocks after {% raw %}; `-` markers work on both raw tags.
  EXPECT_EQ(render_jinja("{% raw %}\nx{% endraw %}"), "\nx");
  EXPECT_EQ(render_jinja("  {% raw -%}  a {{ b }}  {%- endraw %}\nz"), "a {{ b }}z");
}

TEST(JinjaWhitespace, LstripOnlyAfterLineStart) {
  // After a trimmed newline the next line starts fresh, so its indentation before a block goes.
  EXPECT_EQ(render_jinja("{% if true %}\n   {% if true %}\nin\n   {% endif %}\n{% endif %}"), "in\n");
  // Text between two tags on one line is kept.
  EXPECT_EQ(render_jinja("{% if true %}  {% endif %}"), "  ");
  // Tabs count as indentation, other characters do not.
  EXPECT_EQ(render_jinja("\t {% if true %}x{% endif %}"), "x");
  EXPECT_EQ(render_jinja(". {% if true %}x{% endif %}"), ". x");
}

}  // namespace
}  // namespace edgellm
