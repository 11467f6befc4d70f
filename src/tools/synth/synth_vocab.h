// Tokenizer metadata (tokenizer.ggml.*) for synthetic models: either a real tokenizer (a Hugging
// Face tokenizer.json, or the tokenizer.* keys of any GGUF such as a vocab-only file), padded to
// the model's vocabulary size as llama.cpp's converter pads it, or a placeholder vocabulary.
#pragma once

#include <cstdint>
#include <string>

namespace edgellm {
struct VocabData;
namespace gguf {
class GgufWriter;
}
}  // namespace edgellm

namespace edgellm::synth {

// A SentencePiece-style ("llama" model) vocabulary of n_vocab tokens: 0 "<unk>" (unknown),
// 1 "<s>" (BOS), 2 "</s>" (EOS), then "<t3>", "<t4>", ... (normal, score -id). Loads in our
// Tokenizer; text encodes to <unk>-heavy ids, which is all a benchmark needs.
void write_placeholder_vocab(gguf::GgufWriter& w, int32_t n_vocab);

// A WordPiece ("bert" model) vocabulary of n_vocab tokens in BERT's id layout: 0 [PAD],
// 100 [UNK], 101 [CLS], 102 [SEP], 103 [MASK] (control), every other id "▁t<id>" (a word-start
// piece in llama.cpp's phantom-space spelling). Needs n_vocab > 103.
void write_placeholder_wordpiece_vocab(gguf::GgufWriter& w, int32_t n_vocab);

// Writes `vocab` padded with "[PADn]" tokens (type unused) up to n_vocab entries. Throws
// Error(kInvalidArgument) when the vocabulary has more tokens than the model's embedding rows.
void write_vocab(gguf::GgufWriter& w, const VocabData& vocab, int32_t n_vocab, const std::string& chat_template);

// `path` is a tokenizer.json (tokenizer_config.json next to it is used when present: BOS/EOS,
// add_bos, chat template) or a .gguf whose tokenizer.* keys are copied (verbatim when its token
// count equals n_vocab, else converted and padded). Errors name the path.
void write_tokenizer_from_file(gguf::GgufWriter& w, const std::string& path, int32_t n_vocab);

}  // namespace edgellm::synth
