#include "tools/eval/text_tokens.h"

#include "core/utf8.h"
#include "tokenizer/unicode.h"

namespace edgellm::eval {
namespace {

bool is_ascii_alnum_lower(char32_t c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

// Calls fn(cp) for every character of `text`; an ill-formed sequence is one U+FFFD.
template <typename Fn>
void for_each_cp(std::string_view text, Fn&& fn) {
  for (size_t pos = 0; pos < text.size();) {
    const utf8::Decoded d = utf8::decode(text, pos);
    fn(d.ok() ? d.cp : utf8::kReplacementChar);
    pos += d.length;
  }
}

void flush(std::string& word, std::vector<std::string>& out) {
  if (!word.empty()) out.push_back(std::move(word));
  word.clear();
}

// string.punctuation of Python: the 32 printable ASCII characters that are not letters, digits
// or space.
bool is_ascii_punctuation(char32_t c) {
  return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) || (c >= 0x7B && c <= 0x7E);
}

bool is_word_char(char32_t c) {  // Python's \w on str: alphanumeric or '_'
  return c == '_' || unicode::is_letter(c) || unicode::is_number(c);
}

}  // namespace

bool is_cjk(char32_t c) {
  return (c >= 0x1100 && c <= 0x11FF) ||    // Hangul Jamo
         (c >= 0x3040 && c <= 0x309F) ||    // Hiragana
         (c >= 0x30A0 && c <= 0x30FF) ||    // Katakana
         (c >= 0x3130 && c <= 0x318F) ||    // Hangul Compatibility Jamo
         (c >= 0x31F0 && c <= 0x31FF) ||    // Katakana Phonetic Extensions
         (c >= 0x3400 && c <= 0x4DBF) ||    // CJK Unified Ideographs Extension A
         (c >= 0x4E00 && c <= 0x9FFF) ||    // CJK Unified Ideographs
         (c >= 0xAC00 && c <= 0xD7AF) ||    // Hangul Syllables
         (c >= 0xF900 && c <= 0xFAFF) ||    // CJK Compatibility Ideographs
         (c >= 0x20000 && c <= 0x2FA1F) ||  // Extensions B-F, Compatibility Supplement
         (c >= 0x30000 && c <= 0x3134F);    // Extension G
}

std::vector<std::string> rouge_tokens(std::string_view text) {
  std::vector<std::string> out;
  std::string word;
  for_each_cp(text, [&](char32_t c) {
    if (c >= 'A' && c <= 'Z') c += 'a' - 'A';
    if (c == 0x212A) c = 'k';  // KELVIN SIGN lowercases to ASCII k
    if (c == 0x0130) {         // LATIN CAPITAL LETTER I WITH DOT ABOVE -> "i" + U+0307 (a separator)
      word.push_back('i');
      flush(word, out);
      return;
    }
    if (is_ascii_alnum_lower(c)) {
      word.push_back(static_cast<char>(c));
    } else {
      flush(word, out);
      if (is_cjk(c)) out.push_back(utf8::encode(c));
    }
  });
  flush(word, out);
  return out;
}

std::vector<std::string> bleu_tokens(std::string_view text) {
  std::vector<std::string> out;
  std::string word;
  for_each_cp(text, [&](char32_t c) {
    const uint16_t f = unicode::flags(c);
    if (f & unicode::kWhitespace) {
      flush(word, out);
    } else if ((f & (unicode::kPunct | unicode::kSymbol)) || is_cjk(c)) {
      flush(word, out);
      out.push_back(utf8::encode(c));
    } else {
      utf8::append(word, c);
    }
  });
  flush(word, out);
  return out;
}

std::string qa_normalize(std::string_view text) {
  // lower, then remove punctuation (SQuAD's order: lower -> remove_punc -> remove_articles ->
  // white_space_fix).
  std::u32string s;
  for_each_cp(text, [&](char32_t c) {
    if (c >= 'A' && c <= 'Z') c += 'a' - 'A';
    if (is_ascii_punctuation(c) || (unicode::flags(c) & unicode::kPunct)) return;
    s.push_back(c);
  });
  // remove_articles: re.sub(r'\b(a|an|the)\b', ' ', text). Matches cannot overlap (each ends at
  // a word boundary followed by a non-word character), so one left-to-right scan finds them all.
  std::u32string t;
  for (size_t i = 0; i < s.size();) {
    const bool boundary_before = i == 0 || !is_word_char(s[i - 1]);
    size_t len = 0;
    if (boundary_before) {
      for (const std::u32string_view art :
           {std::u32string_view(U"the"), std::u32string_view(U"an"), std::u32string_view(U"a")}) {
        if (s.compare(i, art.size(), art) == 0 && (i + art.size() == s.size() || !is_word_char(s[i + art.size()]))) {
          len = art.size();
          break;
        }
      }
    }
    if (len > 0) {
      t.push_back(U' ');
      i += len;
    } else {
      t.push_back(s[i++]);
    }
  }
  // white_space_fix: ' '.join(text.split())
  std::string out;
  bool pending_space = false;
  for (const char32_t c : t) {
    if (unicode::is_whitespace(c)) {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space) out.push_back(' ');
    pending_space = false;
    utf8::append(out, c);
  }
  return out;
}

std::vector<std::string> qa_tokens(std::string_view text) {
  const std::string norm = qa_normalize(text);
  std::vector<std::string> out;
  std::string word;
  for_each_cp(norm, [&](char32_t c) {
    if (c == U' ') {
      flush(word, out);
    } else if (is_cjk(c)) {
      flush(word, out);
      out.push_back(utf8::encode(c));
    } else {
      utf8::append(word, c);
    }
  });
  flush(word, out);
  return out;
}

}  // namespace edgellm::eval
