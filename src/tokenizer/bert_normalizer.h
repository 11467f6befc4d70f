// The text -> words step of BERT's WordPiece tokenizer, as Hugging Face's tokenizers run it for
// BertTokenizer vocabularies (GGUF tokenizer.ggml.model "bert"):
//   BertNormalizer     clean_text: drop U+0000, U+FFFD and control / format / unassigned /
//                      private-use characters (not TAB, LF, CR); every whitespace character
//                      becomes a space. handle_chinese_chars: a space on both sides of each CJK
//                      ideograph (so each is a word). strip_accents: NFD, then drop non-spacing
//                      marks (Mn). lowercase: full lower-case mapping.
//   BertPreTokenizer   split at whitespace (dropped) and around every punctuation character
//                      (Unicode P*, and the ASCII symbols $ + < = > ^ ` | ~), each its own word.
// Invalid UTF-8 decodes to U+FFFD (unicode.h), which clean_text drops.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace edgellm {

struct BertNormalizerOptions {
  bool lowercase = true;      // tokenizer.ggml.normalizer.lowercase (default true)
  bool strip_accents = true;  // tokenizer.ggml.normalizer.strip_accents (default: = lowercase)
};

// The ideograph ranges BERT treats as CJK (its _is_chinese_char: the CJK Unified Ideographs
// blocks and extensions, and the compatibility ideographs; not kana or hangul).
bool is_bert_cjk(uint32_t cp);
// Unicode punctuation (P*) or ASCII punctuation / symbols (!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~).
bool is_bert_punctuation(uint32_t cp);

// The words of `text` in order, each as code points (never empty).
std::vector<std::vector<uint32_t>> bert_words(std::string_view text, const BertNormalizerOptions& options);

}  // namespace edgellm
