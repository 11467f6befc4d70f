// JSON Schema `pattern` (ECMA-262 regular expressions, the subset a grammar can hold) as a GBNF
// expression over the *encoded* JSON string content: a character the pattern allows that JSON
// must escape (", \, control characters) is allowed in its escaped form (\", \\, \n, \u001f).
//
// Supported: literals and escapes (\d \D \w \W \s \S \. \\ \/ \n \r \t \f \v \0 \xHH \uHHHH and
// escaped punctuation), `.` (any character but a line terminator), classes [a-z\d] / [^...],
// groups ( ) (?: ) (?<name> ), alternation |, quantifiers * + ? {n} {n,} {n,m} (lazy forms `*?`
// match the same strings), anchors ^ at the start and $ at the end. A side without its anchor
// allows any text there (JSON Schema patterns are not anchored: "abc" means "contains abc").
// Refused with Error(kInvalidArgument) naming the construct: backreferences, lookaround, word
// boundaries (\b \B), Unicode property escapes (\p{..}), anchors elsewhere, flags.
#pragma once

#include <string>
#include <string_view>

namespace edgellm::grammar {

// `char_rule` is the name of the grammar's rule for one arbitrary JSON string character, used
// for unanchored sides. Returns a GBNF expression (no rule definitions).
std::string json_pattern_to_gbnf(std::string_view pattern, const std::string& char_rule);

}  // namespace edgellm::grammar
