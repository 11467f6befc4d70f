// How `edgellm eval` cuts text into tokens for its metrics (docs/eval.md, "Tokenisation"). Three
// rules, each written again independently in Python by scripts/eval-metric-reference.py, whose
// golden file tests/eval/data/metric-golden.json the tests compare with:
//
//   rouge_tokens  rouge-score's tokenizer (google-research/rouge, tokenize.py, no stemmer) for
//                 Latin text: lowercase, every character outside [a-z0-9] separates, tokens are
//                 the runs of [a-z0-9]. Extended so CJK text is scored per character: each
//                 character of is_cjk() is a token of its own (rouge-score drops them all).
//                 Lowercasing is Python's str.lower() as far as it can yield [a-z0-9]: A-Z,
//                 U+0130 (-> "i" + U+0307) and U+212A KELVIN SIGN (-> "k"); nothing else can.
//   bleu_tokens   case kept; whitespace (Unicode White_Space) separates; each punctuation or
//                 symbol character (Unicode P* or S*) and each CJK character is a token; the
//                 other characters (letters, digits, marks) form words.
//   qa_tokens     SQuAD v1.1's answer normalisation, extended as MLQA's evaluation does for
//                 other languages: lowercase (ASCII A-Z only), remove punctuation (ASCII
//                 string.punctuation and every Unicode P* character), remove the English articles
//                 a / an / the as whole words, collapse whitespace; tokens are the
//                 whitespace-separated words with each CJK character split out (MLQA's "mixed
//                 segmentation"). qa_normalize() is the normalised string exact match compares.
//
// Invalid UTF-8 never throws: each ill-formed sequence reads as U+FFFD (core/utf8.h's maximal
// subpart rule), which is a symbol (S*) for bleu_tokens and a separator for the other two.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace edgellm::eval {

// Han ideographs (CJK Unified Ideographs with extensions A-G, compatibility ideographs),
// Hiragana, Katakana (and its phonetic extensions) and Hangul (syllables and jamo): scripts
// written without spaces between words, or scored per syllable, and so compared per character.
bool is_cjk(char32_t cp);

std::vector<std::string> rouge_tokens(std::string_view text);
std::vector<std::string> bleu_tokens(std::string_view text);
std::string qa_normalize(std::string_view text);
std::vector<std::string> qa_tokens(std::string_view text);

}  // namespace edgellm::eval
