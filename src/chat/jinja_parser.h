// Jinja parser: tokens → syntax tree, with jinja2's operator precedence (filters and tests bind
// tighter than arithmetic; `**` is left-associative as in jinja2). Nesting of expressions and
// blocks is bounded so that hostile templates cannot exhaust the native stack.
#pragma once

#include <string_view>

#include "chat/jinja_ast.h"

namespace edgellm::jinja {

// Deepest expression subtree and block nesting a template may have.
inline constexpr int kMaxExprDepth = 128;
inline constexpr int kMaxBlockDepth = 64;

// Throws Error(kInvalidArgument) "template error at line L, column C: ..." on a syntax error.
StmtList parse_template(std::string_view source);

}  // namespace edgellm::jinja
