// WordPiece (GGUF tokenizer.ggml.model = "bert"), as Hugging Face's tokenizers run BERT's:
// bert_words() splits the text into words (bert_normalizer.h); inside each word, from its start,
// the longest vocabulary piece is taken, then the longest continuation piece from where it
// ended, and so on. A word with a position no piece starts at, or longer than
// kMaxInputCharsPerWord code points, becomes [UNK] as a whole.
#include <algorithm>

#include "core/error.h"
#include "tokenizer/bert_normalizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace edgellm {
namespace {

// BERT's max_input_chars_per_word.
constexpr size_t kMaxInputCharsPerWord = 100;
constexpr std::string_view kPhantomSpace = "\xE2\x96\x81";  // U+2581, llama.cpp's word-start mark

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

size_t count_code_points(std::string_view s) {
  size_t n = 0;
  for (const char c : s) n += (static_cast<uint8_t>(c) & 0xC0) != 0x80;
  return n;
}

}  // namespace

void Tokenizer::build_wpm_tables() {
  require(data_.unk >= 0, ErrorCode::kInvalidFile,
          "WordPiece vocabulary has no [UNK] token (tokenizer.ggml.unknown_token_id)");
  bool phantom = false, hashes = false;
  size_t longest = 0;
  for (size_t i = 0; i < data_.tokens.size(); ++i) {
    const std::string& t = data_.tokens[i];
    if (attrs_[i] != TokenAttr::kNormal) continue;
    phantom = phantom || starts_with(t, kPhantomSpace);
    hashes = hashes || starts_with(t, "##");
    longest = std::max(longest, count_code_points(t));
  }
  // A vocabulary with "▁" pieces is llama.cpp's spelling; one with only "##" pieces is BERT's.
  wpm_phantom_ = phantom || !hashes;
  wpm_max_piece_chars_ = static_cast<int32_t>(std::min<size_t>(longest, kMaxInputCharsPerWord + 2));
}

void Tokenizer::encode_wpm(std::string_view text, std::vector<int32_t>& out) const {
  const BertNormalizerOptions options{data_.lowercase, data_.strip_accents};
  std::string key;
  std::string piece;
  for (const std::vector<uint32_t>& word : bert_words(text, options)) {
    if (word.size() > kMaxInputCharsPerWord) {
      out.push_back(data_.unk);
      continue;
    }
    const size_t first_new = out.size();
    bool bad = false;
    for (size_t start = 0; start < word.size() && !bad;) {
      // Longest piece first: word[start, end) for end from start + the longest piece down.
      size_t end = std::min(word.size(), start + static_cast<size_t>(std::max(1, wpm_max_piece_chars_)));
      int32_t id = -1;
      for (; end > start; --end) {
        piece.clear();
        for (size_t k = start; k < end; ++k) unicode::append_utf8(piece, word[k]);
        key.clear();
        if (start == 0) {
          if (wpm_phantom_) key += kPhantomSpace;
        } else if (!wpm_phantom_) {
          key += "##";
        }
        key += piece;
        id = lookup(key);
        // Only text pieces: a control token's spelling ("[CLS]") is never a piece of a word.
        if (id >= 0 && attrs_[static_cast<size_t>(id)] == TokenAttr::kNormal) break;
        id = -1;
      }
      if (id < 0) {
        bad = true;
      } else {
        out.push_back(id);
        start = end;
      }
    }
    if (bad) {
      out.resize(first_new);
      out.push_back(data_.unk);
    }
  }
}

std::string Tokenizer::wpm_piece(int32_t id) const {
  const std::string& text = data_.tokens[static_cast<size_t>(id)];
  if (wpm_phantom_) {
    if (starts_with(text, kPhantomSpace)) return " " + text.substr(kPhantomSpace.size());
    return text;
  }
  if (starts_with(text, "##")) return text.substr(2);
  return " " + text;
}

std::string wordpiece_clean_up(std::string_view text) {
  // BERT's clean_up_tokenization: the spaces a word-per-token join puts before punctuation and
  // contractions are removed.
  static constexpr std::pair<std::string_view, std::string_view> kRules[] = {
      {" .", "."},     {" ?", "?"},   {" !", "!"},   {" ,", ","},     {" ' ", "'"},
      {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
  };
  std::string s(text);
  for (const auto& [from, to] : kRules) {
    std::string out;
    out.reserve(s.size());
    size_t pos = 0;
    for (size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
      out.append(s, pos, hit - pos);
      out += to;
    }
    out.append(s, pos, std::string::npos);
    s.swap(out);
  }
  return s;
}

}  // namespace edgellm
