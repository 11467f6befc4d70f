// A Hugging Face tokenizer (tokenizer.json + tokenizer_config.json + config.json) as the GGUF
// tokenizer.* keys llama.cpp's convert_hf_to_gguf.py writes, for three tokenizer families:
//
//   byte-level BPE     model BPE + a ByteLevel pre-tokenizer (Qwen2/2.5/3, Llama 3, GPT-2):
//                      tokenizer.ggml.model "gpt2", pre "qwen2" / "llama-bpe" / "gpt-2" (identified by
//                      the Split regex; llama.cpp identifies it by hashing an encoding, which names the
//                      same pre-tokenizers), tokens, token types, merges
//   SentencePiece BPE  model BPE with byte_fallback and "▁" for spaces (Llama 2, Mistral, TinyLlama):
//                      model "llama", pre "default", tokens, types (<0xNN> byte tokens, unknown,
//                      control), scores, add_space_prefix from the normalizer / pre-tokenizer
//   WordPiece          model WordPiece (BERT, BGE): model "bert", pre "default", tokens in llama.cpp's
//                      "phantom space" form ("##ing" -> "ing", "word" -> "▁word", specials as is)
//
// Token types follow llama.cpp: added tokens marked special, or that look special ("<|...|>"),
// are control tokens; other added tokens are user-defined. The vocabulary is padded to config.json
// vocab_size with unused "[PADn]" tokens. Special-token ids and add_bos/add_eos/add_sep come from
// tokenizer_config.json ({bos,eos,unk,sep,pad,cls,mask}_token, add_*_token), the post-processor
// (TemplateProcessing / RobertaProcessing: whether BOS / EOS / SEP are added), then config.json's
// *_token_id for types still unset. The chat template is tokenizer_config.json's chat_template
// (a string, or a list of named templates), else chat_template.jinja.
//
// Where this differs from llama.cpp's converter (docs/convert.md): SentencePiece-style BPE scores
// are derived from the merge ranks (token made by merge r scores -(r + 1)), so the score order
// llama.cpp's SentencePiece tokenizer merges by is the order Hugging Face applies the merges in;
// llama.cpp writes -1000 for every token of a tokenizer.json-only Llama (its tokenizer.model path
// reads real scores).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/json.h"

namespace edgellm {
namespace gguf {
class GgufWriter;
}
}  // namespace edgellm

namespace edgellm::convert {

struct TokenizerExport {
  std::string model;                // tokenizer.ggml.model: "gpt2", "llama", "bert"
  std::string pre;                  // tokenizer.ggml.pre
  std::vector<std::string> tokens;  // padded to the model's vocab_size
  std::vector<int32_t> types;       // TokenAttr values (tokenizer/vocab_data.h)
  std::vector<float> scores;        // "llama" only
  std::vector<std::string> merges;  // "gpt2" only: "left right", rank order
  // ("bos", id), ("eos", id), ... in llama.cpp's order: bos eos unk sep pad cls mask (+ eot / eom
  // when a post-processor moved EOS there).
  std::vector<std::pair<std::string, int32_t>> special_ids;
  std::vector<std::pair<std::string, bool>> add_special;  // ("bos", true), ("eos", false), ("sep", ...)
  std::optional<bool> add_space_prefix;
  std::optional<bool> normalizer_lowercase;  // WordPiece: BertNormalizer lowercase
  std::optional<bool> normalizer_strip_accents;
  int32_t token_type_count = 0;  // WordPiece: config.json type_vocab_size (0 = not written)
  std::string chat_template;     // the default template ("" = none)
  std::vector<std::pair<std::string, std::string>> named_chat_templates;  // tokenizer.chat_template.<name>

  std::optional<int32_t> special_id(const std::string& type) const;
};

struct TokenizerSources {
  const Json* tokenizer_json = nullptr;    // required
  const Json* tokenizer_config = nullptr;  // optional
  const Json* config_json = nullptr;       // optional (special ids, type_vocab_size)
  std::string chat_template_file;          // chat_template.jinja contents, "" when absent
  int64_t vocab_size = 0;                  // config.json vocab_size: tokens are padded to it
};

// Errors: kUnsupported (another tokenizer model: Unigram, WordLevel; a byte-level BPE whose
// pre-tokenizer regex llama.cpp does not know), kInvalidFile (malformed files, a vocabulary larger
// than vocab_size, ids outside it), each naming the key or token.
TokenizerExport export_hf_tokenizer(const TokenizerSources& sources);

// Writes the tokenizer.* keys (and nothing else).
void write_tokenizer(gguf::GgufWriter& writer, const TokenizerExport& tokenizer);

}  // namespace edgellm::convert
