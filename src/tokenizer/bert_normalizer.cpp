#include "tokenizer/bert_normalizer.h"

#include "tokenizer/unicode.h"
#include "tokenizer/unicode_normalize.h"

namespace edgellm {

bool is_bert_cjk(uint32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) ||
         // 0x2B920, not 0x2B820: the range Hugging Face's Rust code has (and llama.cpp copies)
         (cp >= 0x2B920 && cp <= 0x2CEAF) || (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

bool is_bert_punctuation(uint32_t cp) {
  if (cp < 0x80) {
    return (cp >= 0x21 && cp <= 0x2F) || (cp >= 0x3A && cp <= 0x40) || (cp >= 0x5B && cp <= 0x60) ||
           (cp >= 0x7B && cp <= 0x7E);
  }
  return (unicode::flags(cp) & unicode::kPunct) != 0;
}

namespace {

bool is_bert_whitespace(uint32_t cp) {
  return cp == '\t' || cp == '\n' || cp == '\r' || unicode::is_whitespace(cp);
}

// clean_text's filter, applied before the whitespace mapping: TAB, LF and CR are whitespace;
// every other "other" code point (Cc, Cf, Cs, Co, Cn; NEL U+0085 too) is dropped.
bool is_bert_dropped(uint32_t cp) {
  if (cp == 0 || cp == unicode::kReplacementChar) return true;
  if (cp == '\t' || cp == '\n' || cp == '\r') return false;
  return (unicode::flags(cp) & (unicode::kControl | unicode::kUnassigned)) != 0;
}

}  // namespace

std::vector<std::vector<uint32_t>> bert_words(std::string_view text, const BertNormalizerOptions& options) {
  // Normalizer: clean text, CJK ideographs made words of their own (marked by spaces, as
  // Hugging Face does, so the pre-tokenizer below splits them off).
  std::vector<uint32_t> cps;
  cps.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    size_t len = 0;
    bool valid = false;
    const uint32_t cp = unicode::decode_one(text, pos, &len, &valid);
    pos += len;
    if (is_bert_dropped(cp)) continue;
    if (is_bert_whitespace(cp)) {
      cps.push_back(' ');
    } else if (is_bert_cjk(cp)) {
      cps.push_back(' ');
      cps.push_back(cp);
      cps.push_back(' ');
    } else {
      cps.push_back(cp);
    }
  }
  if (options.strip_accents) {
    std::vector<uint32_t> nfd = unicode::to_nfd(cps);
    cps.clear();
    for (const uint32_t cp : nfd) {
      if (!unicode::is_nonspacing_mark(cp)) cps.push_back(cp);
    }
  }
  if (options.lowercase) {
    std::vector<uint32_t> lower;
    lower.reserve(cps.size());
    for (const uint32_t cp : cps) unicode::append_lower(cp, lower);
    cps.swap(lower);
  }
  // Pre-tokenizer: whitespace separates words, each punctuation character is a word.
  std::vector<std::vector<uint32_t>> words;
  std::vector<uint32_t> word;
  for (const uint32_t cp : cps) {
    if (is_bert_whitespace(cp) || is_bert_punctuation(cp)) {
      if (!word.empty()) words.push_back(std::move(word));
      word.clear();
      if (!is_bert_whitespace(cp)) words.push_back({cp});
    } else {
      word.push_back(cp);
    }
  }
  if (!word.empty()) words.push_back(std::move(word));
  return words;
}

}  // namespace edgellm
