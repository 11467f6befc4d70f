// Text <-> token ids for the three vocabulary families in GGUF files:
//   * "llama": SentencePiece BPE (bigram merges ranked by token score, spaces as U+2581 "▁",
//     unknown characters fall back to byte tokens <0xNN>);
//   * "gpt2": byte-level BPE (GPT-2 byte-to-unicode alphabet, merges ranked by merge order,
//     text first split into words by a family-specific pre-tokenizer, see pretokenizer.h);
//   * "bert": WordPiece (BERT's normalizer and pre-tokenizer, bert_normalizer.h, then the longest
//     vocabulary piece first inside each word, wordpiece.cpp); add_special gives [CLS] ... [SEP].
// Control tokens (<|im_start|>, BOS) are recognised in text only when parse_special is set;
// user-defined tokens (<think>) are always recognised, as llama.cpp does.
// A Tokenizer is immutable after construction; all methods are const and thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/merge_table.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/sanitize.h"
#include "tokenizer/token_index.h"
#include "tokenizer/vocab_data.h"

namespace edgellm {

namespace gguf { class GgufFile; }

class Tokenizer {
 public:
  // Validates `data` (ids in range, token types known, byte tokens well-formed, merges of the
  // form "a b") and builds the lookup structures. Throws Error(kInvalidFile) naming the
  // offending token / merge, Error(kUnsupported) for unknown models or pre-tokenizers.
  explicit Tokenizer(VocabData data);
  // Not copyable or movable: lookup tables hold views into the token strings.
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;
  static std::unique_ptr<Tokenizer> from_gguf(const gguf::GgufFile& file);

  // add_special: prepend BOS / append EOS as the vocab's add_bos / add_eos flags say.
  // parse_special: recognise control-token text (e.g. "<|im_start|>") as that token.
  // Any byte string is accepted; malformed UTF-8 is encoded as its raw bytes where the vocab
  // can (byte tokens / byte-level alphabet), otherwise as U+FFFD or unk.
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;

  // Bytes this token stands for (may be a partial UTF-8 character). Control/unknown-typed
  // tokens give "" (unknown: U+FFFD) unless render_special, which gives their text.
  // Throws Error(kInvalidArgument) for ids outside [0, n_vocab).
  std::string token_to_piece(int32_t id, bool render_special = false) const;

  // Concatenated pieces; for SentencePiece vocabs with add_space_prefix the space that encode
  // added in front of the first text token is removed again. Malformed UTF-8 in the result
  // becomes U+FFFD (rule in unicode.h).
  std::string decode(const std::vector<int32_t>& ids, bool render_special = false) const;

  int32_t n_vocab() const { return static_cast<int32_t>(data_.tokens.size()); }
  int32_t bos() const { return data_.bos; }
  int32_t eos() const { return data_.eos; }
  int32_t eot() const { return data_.eot; }
  int32_t unk() const { return data_.unk; }
  int32_t pad() const { return data_.pad; }
  bool add_bos() const { return data_.add_bos; }
  bool add_eos() const { return data_.add_eos; }
  bool is_spm() const { return spm_; }
  bool is_wordpiece() const { return wpm_; }
  int32_t cls() const { return data_.cls; }  // WordPiece [CLS] / [SEP] (-1: none)
  int32_t sep() const { return data_.sep; }
  PreTokenizerKind pretokenizer() const { return pre_; }
  // The vocabulary as loaded, except merges: their strings are released once the merge table is
  // built (data().merges is empty).
  const VocabData& data() const { return data_; }

  // End of generation: eos, eot, eom and control tokens such as <|im_end|>, <|eot_id|>,
  // <|endoftext|>, <|end|>, <end_of_turn> when the vocab has them.
  bool is_eog(int32_t id) const;
  const std::vector<int32_t>& eog_ids() const { return eog_ids_; }

  std::optional<int32_t> find_token(std::string_view text) const;
  // Throw Error(kInvalidArgument) for ids outside [0, n_vocab).
  const std::string& token_text(int32_t id) const;
  TokenAttr token_attr(int32_t id) const;

  // True if the first text piece of a decoded sequence drops its leading space (SPM with
  // add_space_prefix); used by StreamingDecoder to stay identical to decode().
  // WordPiece pieces that start a word carry the space before them, so it drops one too.
  bool strips_leading_space() const { return (spm_ && data_.add_space_prefix) || wpm_; }

 private:
  struct Fragment {  // a piece of input: either raw text or an already-recognised token
    std::string_view text;
    int32_t token = -1;
  };

  void check_id(int32_t id) const;
  int32_t lookup(std::string_view text) const;  // -1 when absent
  std::vector<Fragment> split_special(std::string_view text, bool parse_special) const;
  void encode_spm(std::string_view text, std::vector<int32_t>& out) const;      // spm.cpp
  void encode_bpe(std::string_view text, std::vector<int32_t>& out) const;      // bpe.cpp
  void bpe_word(std::string_view word, std::vector<int32_t>& out) const;        // bpe.cpp
  void build_bpe_tables();                                                      // bpe.cpp
  int32_t spm_byte_token(uint8_t byte) const;                                   // spm.cpp
  void encode_wpm(std::string_view text, std::vector<int32_t>& out) const;      // wordpiece.cpp
  void build_wpm_tables();                                                      // wordpiece.cpp
  std::string wpm_piece(int32_t id) const;                                      // wordpiece.cpp

  VocabData data_;
  bool spm_ = true;
  bool wpm_ = false;
  // WordPiece vocabulary spelling: llama.cpp's converter writes word-initial pieces as "▁piece"
  // and continuations bare ("phantom space"); a file written with BERT's own spelling has bare
  // word-initial pieces and "##" continuations. Both are read.
  bool wpm_phantom_ = true;
  int32_t wpm_max_piece_chars_ = 0;  // longest vocabulary piece, in code points (bounds the search)
  PreTokenizerKind pre_ = PreTokenizerKind::kDefault;
  std::vector<TokenAttr> attrs_;
  TokenIndex token_to_id_;
  std::vector<int32_t> eog_ids_;
  // Special-token candidates bucketed by first byte, longest first.
  struct Special {
    std::string_view text;
    int32_t id;
    bool always;  // user-defined: matched even without parse_special
  };
  std::vector<Special> specials_by_byte_[256];
  // SPM: byte value -> <0xNN> token (or -1).
  int32_t byte_tokens_[256];
  // BPE: (left id, right id) -> (rank, merged id). Built from data_.merges, whose strings are
  // then released (data().merges is empty after construction).
  MergeTable merges_;
  int32_t byte_symbol_ids_[256];  // BPE: id of the token for each byte's alphabet character
};

}  // namespace edgellm
