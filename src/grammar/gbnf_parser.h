// GBNF, the grammar format of llama.cpp (its grammars/README.md), parsed into a Grammar:
//
//   root  ::= "1. " move (" " move)* "\n"     # comment to the end of the line
//   move  ::= [a-h] [1-8] | "O-O" | piece{1,2}
//   piece ::= [^\x00-\x1F"\\] | <[151657]> | !<think> | .
//
// Syntax (the same as llama.cpp's parser, so its grammars work unchanged):
// - rules `name ::= alternatives`, names of [a-zA-Z0-9-] (we also accept `_`); the start rule is
//   `root` (or the name the caller gives); a rule ends at a newline, except after `|` and inside
//   parentheses, where newlines are free;
// - "literal" and [char class] / [^negated] with ranges `a-z`; `.` is any character; escapes
//   \xHH \uHHHH \UHHHHHHHH \t \r \n \\ \" \[ \] \- (code points, not bytes);
// - ( grouping ), alternatives `|`, repetition `*` `+` `?` `{m}` `{m,}` `{m,n}`;
// - tokens: `<[id]>` (a token id), `<text>` (the one token whose text that is; needs a
//   vocabulary), `!` before either: any single token but that one.
//
// Deliberate differences, each an error with line and column rather than a silent change:
// a rule defined twice (llama.cpp keeps the last definition), `{m,n}` with n above
// kMaxRepetition (llama.cpp silently drops the upper bound), invalid UTF-8 in the text, a code
// point above U+10FFFF or a surrogate in a literal (no UTF-8 text can contain them), `[]` (an
// empty class). Left recursion (`expr ::= expr "+" term`) is refused at compile time
// (compiled_grammar.h), as llama.cpp refuses it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "grammar/grammar_ast.h"

namespace edgellm::grammar {

// Largest repetition count in `{m,n}` (llama.cpp's MAX_REPETITION_THRESHOLD).
inline constexpr uint32_t kMaxRepetition = 2000;

// Resolves `<text>` to the id of the single token with exactly that text, or nullopt.
using TokenResolver = std::function<std::optional<int32_t>(std::string_view text)>;

// Throws Error(kInvalidArgument) "grammar: line L, column C: <what>" for any syntax error, an
// undefined rule (named), a missing start rule or an unresolvable `<text>` token.
Grammar parse_gbnf(std::string_view text, const TokenResolver& tokens = {}, std::string_view root = "root");

// GBNF text for a grammar (one rule per line, in rule order): parse_gbnf(print_gbnf(g)) == g up to
// the way literals and classes are split (used to show generated grammars, and by the fuzzer's
// round-trip check).
std::string print_gbnf(const Grammar& grammar);

// GBNF spellings for generated grammars: a quoted literal of UTF-8 bytes ("a\"b"), and a
// character class of normalized ranges ([a-z\-]; an empty set prints as a class matching nothing).
std::string gbnf_literal(std::string_view utf8_text);
std::string gbnf_class(const std::vector<CodePointRange>& ranges);

}  // namespace edgellm::grammar
