// Code point ranges as UTF-8 byte patterns: the byte-level automata (grammar_automaton.h) match
// a character class one byte at a time, which is what lets a token end in the middle of a
// character and the next token finish it.
//
//   [U+0080, U+07FF]  ->  [C2-DF][80-BF]
//   [U+0800, U+FFFF]  ->  [E0][A0-BF][80-BF] | [E1-EC][80-BF][80-BF] | [ED][80-9F][80-BF] | [EE-EF][80-BF][80-BF]
//
// The patterns accept exactly the well-formed encodings of the range (no overlong forms, no
// surrogates), as utf8.h defines well-formed.
#pragma once

#include <cstdint>
#include <vector>

#include "grammar/grammar_ast.h"

namespace edgellm::grammar {

struct ByteRange {
  uint8_t lo = 0;
  uint8_t hi = 0;
};

// One sequence of 1..4 byte ranges; a byte string matches it when byte i lies in range i.
struct Utf8Sequence {
  ByteRange bytes[4];
  uint8_t length = 0;
};

// The byte patterns of normalized code point ranges (surrogates already removed), disjoint.
std::vector<Utf8Sequence> utf8_sequences(const std::vector<CodePointRange>& ranges);

}  // namespace edgellm::grammar
