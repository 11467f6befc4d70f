// Everything a tokenizer needs, independent of where it came from: GGUF metadata
// (tokenizer.ggml.* keys, as written by llama.cpp's converters) or a Hugging Face
// tokenizer.json (+ tokenizer_config.json). Tokenizer's constructor validates it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace edgellm {

class Json;
namespace gguf { class GgufFile; }

// Values of GGUF tokenizer.ggml.token_type.
enum class TokenAttr : uint8_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,      // BOS/EOS/<|im_start|>: not text; parsed from text only with parse_special
  kUserDefined = 4,  // added tokens that are text (<think>): always matched in input text
  kUnused = 5,
  kByte = 6,         // SentencePiece byte fallback "<0xNN>"
};

struct VocabData {
  // "llama" (SentencePiece), "gpt2" (byte-level BPE) or "bert" (WordPiece, wordpiece.cpp)
  std::string model = "llama";
  std::string pre = "default";  // tokenizer.ggml.pre: selects the pre-tokenizer (BPE only)
  std::vector<std::string> tokens;
  std::vector<float> scores;    // SPM merge priorities; empty = all 0
  std::vector<int32_t> types;   // TokenAttr values; empty = all kNormal
  std::vector<std::string> merges;  // BPE merges "left right", highest priority first
  int32_t bos = -1, eos = -1, eot = -1, unk = -1, pad = -1, eom = -1;  // -1 = absent
  // WordPiece: [CLS] (also bos, as llama.cpp has it), [SEP] (appended with add_special), [MASK].
  int32_t cls = -1, sep = -1, mask = -1;
  bool add_bos = true;            // prepend BOS when encode(add_special=true); ignored if bos < 0
  bool add_eos = false;
  bool add_space_prefix = true;   // SPM: prepend " " to the text (and drop it again on decode)
  bool ignore_merges = false;     // BPE: a pre-token that is itself a token is used whole (Llama 3)
  bool add_sep = false;           // WordPiece: append [SEP] when encode(add_special=true)
  // WordPiece: BertNormalizer's lowercase and strip_accents (tokenizer.ggml.normalizer.*; both
  // default to true, strip_accents to lowercase's value when only that is given).
  bool lowercase = true;
  bool strip_accents = true;
};

// Reads tokenizer.ggml.* from a GGUF file. Throws Error(kInvalidFile) for missing/malformed
// keys and Error(kUnsupported) for tokenizer models other than llama/gpt2/bert (t5, rwkv...).
VocabData vocab_data_from_gguf(const gguf::GgufFile& file);

// Reads a Hugging Face tokenizer.json with a byte-level BPE model (Qwen2/3, Llama 3, GPT-2
// style). The pre-tokenizer is identified from the Split regex (qwen2 or llama-bpe) or a plain
// ByteLevel pre-tokenizer (gpt-2). added_tokens become control tokens ("special": true) or
// user-defined tokens. BOS/EOS/PAD/UNK and add_bos/add_eos come from tokenizer_config (may be
// null). The NFC normalizer some files declare is not applied (documented in docs/tokenizer.md).
VocabData vocab_data_from_hf_json(const Json& tokenizer_json, const Json* tokenizer_config);

}  // namespace edgellm
