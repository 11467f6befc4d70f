#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "tokenizer/unicode.h"

namespace edgellm {
namespace {

// Texts of control tokens that end a turn in common chat formats; a vocab that has them as
// control tokens stops generation there even when GGUF names only one EOS.
constexpr const char* kEndOfGenerationTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>",
    "<EOT>", "<|end_of_text|>", "<｜end▁of▁sentence｜>", "<|end▁of▁sentence|>",
};
// Candidates for the end-of-turn token when the vocab does not name one (first match wins).
constexpr const char* kEndOfTurnTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<EOT>",
    "<｜end▁of▁sentence｜>",
};

std::string describe_token(int32_t id, const std::string& text) {
  std::string shown = text.size() > 40 ? text.substr(0, 40) + "..." : text;
  return "token " + std::to_string(id) + " ('" + shown + "')";
}

// "<0xNN>" -> NN, or -1.
int parse_byte_token(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
  int value = 0;
  for (size_t i = 3; i < 5; ++i) {
    const char c = text[i];
    int digit;
    if (c >= '0' && c <= '9') digit = c - '0';
    else if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
    else if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    else return -1;
    value = value * 16 + digit;
  }
  return value;
}

}  // namespace

// Defined in bpe.cpp: the byte-level alphabet and its inverse (-1 for code points outside it).
std::string bpe_unmap_bytes(std::string_view token_text);
// Defined in wordpiece.cpp: BERT's clean_up_tokenization of decoded text.
std::string wordpiece_clean_up(std::string_view text);

Tokenizer::Tokenizer(VocabData data) : data_(std::move(data)) {
  if (data_.model == "llama") {
    spm_ = true;
  } else if (data_.model == "gpt2") {
    spm_ = false;
  } else if (data_.model == "bert") {
    spm_ = false;
    wpm_ = true;
  } else {
    throw Error(ErrorCode::kUnsupported,
                "tokenizer model '" + data_.model + "' is not supported (supported: llama, gpt2, bert)");
  }
  const size_t n = data_.tokens.size();
  require(n > 0, ErrorCode::kInvalidFile, "tokenizer has an empty token list");
  require(n < static_cast<size_t>(INT32_MAX), ErrorCode::kInvalidFile, "tokenizer has too many tokens");
  if (data_.scores.empty()) data_.scores.assign(n, 0.0f);
  if (data_.types.empty()) data_.types.assign(n, static_cast<int32_t>(TokenAttr::kNormal));
  require(data_.scores.size() == n, ErrorCode::kInvalidFile,
          "tokenizer scores count " + std::to_string(data_.scores.size()) + " != token count " + std::to_string(n));
  require(data_.types.size() == n, ErrorCode::kInvalidFile,
          "tokenizer token_type count " + std::to_string(data_.types.size()) + " != token count " + std::to_string(n));

  const struct { const char* name; int32_t* id; } specials[] = {
      {"bos", &data_.bos}, {"eos", &data_.eos}, {"eot", &data_.eot}, {"unk", &data_.unk},
      {"pad", &data_.pad}, {"eom", &data_.eom}, {"cls", &data_.cls}, {"sep", &data_.sep},
      {"mask", &data_.mask}};
  for (const auto& s : specials) {
    require(*s.id >= -1 && *s.id < static_cast<int32_t>(n), ErrorCode::kInvalidFile,
            std::string("tokenizer ") + s.name + " id " + std::to_string(*s.id) + " is outside [0, " +
                std::to_string(n) + ")");
  }
  if (data_.bos < 0) data_.add_bos = false;
  if (data_.eos < 0) data_.add_eos = false;
  if (data_.sep < 0) data_.add_sep = false;

  attrs_.resize(n);
  std::fill(std::begin(byte_tokens_), std::end(byte_tokens_), -1);
  for (size_t i = 0; i < n; ++i) {
    const int32_t type = data_.types[i];
    const auto id = static_cast<int32_t>(i);
    require(type >= 1 && type <= 6, ErrorCode::kInvalidFile,
            describe_token(id, data_.tokens[i]) + " has unknown token type " + std::to_string(type));
    attrs_[i] = static_cast<TokenAttr>(type);
    if (attrs_[i] == TokenAttr::kByte) {
      const int byte = parse_byte_token(data_.tokens[i]);
      if (spm_) {
        require(byte >= 0, ErrorCode::kInvalidFile,
                describe_token(id, data_.tokens[i]) + " is a byte token but not of the form <0xNN>");
      }
      if (byte >= 0 && byte_tokens_[byte] < 0) byte_tokens_[byte] = id;
    }
    const TokenAttr a = attrs_[i];
    if ((a == TokenAttr::kControl || a == TokenAttr::kUserDefined || a == TokenAttr::kUnknown) &&
        !data_.tokens[i].empty()) {
      specials_by_byte_[static_cast<uint8_t>(data_.tokens[i][0])].push_back(
          {data_.tokens[i], id, a == TokenAttr::kUserDefined});
    }
  }
  token_to_id_.build(data_.tokens);  // duplicate texts: the last id wins, as in llama.cpp
  for (auto& bucket : specials_by_byte_) {
    std::stable_sort(bucket.begin(), bucket.end(),
                     [](const Special& a, const Special& b) { return a.text.size() > b.text.size(); });
  }

  if (wpm_) {
    build_wpm_tables();
  } else if (!spm_) {
    pre_ = pretokenizer_from_name(data_.pre.empty() ? "default" : data_.pre);
    build_bpe_tables();
  }

  if (data_.eot < 0) {
    for (const char* text : kEndOfTurnTexts) {
      const int32_t id = lookup(text);
      if (id >= 0 && attrs_[id] == TokenAttr::kControl) {
        data_.eot = id;
        break;
      }
    }
  }
  for (int32_t id : {data_.eos, data_.eot, data_.eom}) {
    if (id >= 0) eog_ids_.push_back(id);
  }
  for (const char* text : kEndOfGenerationTexts) {
    const int32_t id = lookup(text);
    if (id >= 0 && attrs_[id] == TokenAttr::kControl) eog_ids_.push_back(id);
  }
  std::sort(eog_ids_.begin(), eog_ids_.end());
  eog_ids_.erase(std::unique(eog_ids_.begin(), eog_ids_.end()), eog_ids_.end());
}

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const gguf::GgufFile& file) {
  return std::make_unique<Tokenizer>(vocab_data_from_gguf(file));
}

void Tokenizer::check_id(int32_t id) const {
  if (id < 0 || id >= n_vocab()) {
    throw Error(ErrorCode::kInvalidArgument,
                "token id " + std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(n_vocab()) + ")");
  }
}

int32_t Tokenizer::lookup(std::string_view text) const {
  return token_to_id_.find(data_.tokens, text);
}

std::optional<int32_t> Tokenizer::find_token(std::string_view text) const {
  const int32_t id = lookup(text);
  if (id < 0) return std::nullopt;
  return id;
}

const std::string& Tokenizer::token_text(int32_t id) const {
  check_id(id);
  return data_.tokens[static_cast<size_t>(id)];
}

TokenAttr Tokenizer::token_attr(int32_t id) const {
  check_id(id);
  return attrs_[static_cast<size_t>(id)];
}

bool Tokenizer::is_eog(int32_t id) const {
  return std::find(eog_ids_.begin(), eog_ids_.end(), id) != eog_ids_.end();
}

std::vector<Tokenizer::Fragment> Tokenizer::split_special(std::string_view text, bool parse_special) const {
  // Leftmost-longest scan: at each byte, the longest special token that starts there wins.
  std::vector<Fragment> fragments;
  size_t raw_start = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const auto& bucket = specials_by_byte_[static_cast<uint8_t>(text[pos])];
    const Special* found = nullptr;
    for (const Special& s : bucket) {
      if (!parse_special && !s.always) continue;
      if (s.text.size() <= text.size() - pos && std::memcmp(text.data() + pos, s.text.data(), s.text.size()) == 0) {
        found = &s;
        break;
      }
    }
    if (!found) {
      ++pos;
      continue;
    }
    if (pos > raw_start) fragments.push_back({text.substr(raw_start, pos - raw_start), -1});
    fragments.push_back({found->text, found->id});
    pos += found->text.size();
    raw_start = pos;
  }
  if (raw_start < text.size()) fragments.push_back({text.substr(raw_start), -1});
  return fragments;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  // Symbol indices in the merge loops are ints.
  require(text.size() < (size_t{1} << 30), ErrorCode::kInvalidArgument, [&] {
    return "text of " + std::to_string(text.size()) + " bytes is too long to tokenize (limit 1 GiB)";
  });
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  if (add_special && data_.add_bos) out.push_back(data_.bos);
  const std::vector<Fragment> fragments = split_special(text, parse_special);
  // SPM: the space prefix goes in front of text that starts the input or follows a special
  // token (llama.cpp's rule), and every space becomes U+2581.
  bool prev_special = true;
  std::string escaped;
  for (const Fragment& f : fragments) {
    if (f.token >= 0) {
      out.push_back(f.token);
      prev_special = true;
      continue;
    }
    if (spm_) {
      escaped.clear();
      if (data_.add_space_prefix && prev_special) escaped += "\xE2\x96\x81";
      for (char c : f.text) {
        if (c == ' ') escaped += "\xE2\x96\x81";
        else escaped.push_back(c);
      }
      encode_spm(escaped, out);
    } else if (wpm_) {
      encode_wpm(f.text, out);
    } else {
      encode_bpe(f.text, out);
    }
    prev_special = false;
  }
  if (add_special && data_.add_eos) out.push_back(data_.eos);
  if (add_special && data_.add_sep) out.push_back(data_.sep);
  return out;
}

std::string Tokenizer::token_to_piece(int32_t id, bool render_special) const {
  check_id(id);
  const std::string& text = data_.tokens[static_cast<size_t>(id)];
  switch (attrs_[static_cast<size_t>(id)]) {
    case TokenAttr::kControl:
    case TokenAttr::kUnused:
      return render_special ? text : std::string();
    case TokenAttr::kUnknown:
      return render_special ? text : unicode::to_utf8(unicode::kReplacementChar);
    case TokenAttr::kUserDefined:
      return text;  // added tokens are stored as plain text in both families
    case TokenAttr::kByte: {
      const int byte = parse_byte_token(text);
      if (byte >= 0) return std::string(1, static_cast<char>(byte));
      break;  // a BPE vocab's odd "byte" token: decode it like a normal one
    }
    case TokenAttr::kNormal:
      break;
  }
  if (wpm_) return wpm_piece(id);
  if (!spm_) return bpe_unmap_bytes(text);
  std::string piece;
  piece.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, 3, "\xE2\x96\x81") == 0) {
      piece.push_back(' ');
      i += 3;
    } else {
      piece.push_back(text[i++]);
    }
  }
  return piece;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool render_special) const {
  std::string out;
  bool strip = strips_leading_space();
  for (int32_t id : ids) {
    std::string piece = token_to_piece(id, render_special);
    if (strip && attrs_[static_cast<size_t>(id)] != TokenAttr::kControl) {
      if (!piece.empty() && piece[0] == ' ') piece.erase(0, 1);
      strip = false;
    }
    out += piece;
  }
  if (wpm_) out = wordpiece_clean_up(out);
  return unicode::make_valid(out);
}

}  // namespace edgellm
