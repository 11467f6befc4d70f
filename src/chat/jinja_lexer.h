// Jinja lexer: splits a template into text and tag tokens and tokenises the inside of tags.
// Whitespace handling follows jinja2 as Hugging Face configures it for chat templates:
// trim_blocks=True (the first newline after a block or comment tag is removed), lstrip_blocks=True
// (spaces and tabs before a block or comment tag at the start of a line are removed), `-` on a tag
// strips all whitespace on that side, `+` disables lstrip_blocks / trim_blocks for that side, a
// single trailing newline of the template is dropped (keep_trailing_newline=False), and \r\n / \r
// become \n. `{% raw %}` content is passed through as text.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "chat/jinja_value.h"

namespace edgellm::jinja {

enum class TokenType {
  kData,        // literal template text (whitespace control already applied)
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,
  kString,      // value is the unescaped string
  kInt,
  kFloat,
  kOperator,    // value is the operator text: + - * / // % ** ~ == != < <= > >= = ( ) [ ] { } , . : |
  kEof,
};

struct Token {
  TokenType type;
  std::string value;
  SourcePos pos;
};

// Throws Error(kInvalidArgument) with line and column on malformed input (unterminated tag,
// comment or string, unexpected character).
std::vector<Token> tokenize(std::string_view source);

}  // namespace edgellm::jinja
