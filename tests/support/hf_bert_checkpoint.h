// Tiny Hugging Face BERT checkpoints for the converter tests (tests/convert), written here without
// the converter's code, in the layout transformers and sentence-transformers save: config.json
// (model_type "bert"), model.safetensors (or shards + index; the BertModel names, or
// BertForMaskedLM's "bert."-prefixed names with its cls.predictions head and the position_ids
// buffer), a WordPiece tokenizer.json + tokenizer_config.json (or only vocab.txt), and for
// sentence-transformers models modules.json + 1_Pooling/config.json. Weights are seeded random
// values already rounded to the stored dtype (support/hf_checkpoint.h's writer).
//
// naive_bert_hidden is the reference: transformers' BertModel forward (absolute positions, token
// types, post-LayerNorm blocks, exact erf GELU, no attention mask within one sequence) in double
// precision over the HF tensors as written. naive_wordpiece is BERT's basic + WordPiece tokenizer
// for ASCII text, written out here.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "support/hf_checkpoint.h"

namespace edgellm::test {

struct TinyBertSpec {
  std::string dtype = "F32";
  int64_t vocab = 200;  // config.json vocab_size (the small tokenizer's tokens fill it exactly)
  int64_t embd = 64;
  int64_t layers = 2;
  int64_t ffn = 128;
  int64_t heads = 4;
  int64_t positions = 64;  // max_position_embeddings
  int64_t type_vocab = 2;
  double ln_eps = 1e-2;    // far from BERT's 1e-12 default, so a dropped or wrong eps shows
  bool masked_lm = false;  // BertForMaskedLM: "bert." prefix, cls.predictions.*, position_ids buffer
  int shards = 1;
  std::string pooling;  // "" (no modules.json), "mean" / "cls" (old flags), "cls-mode" (pooling_mode "cls")
  // "small": a WordPiece tokenizer.json written here (lower-case); "bge-vocab-txt": only vocab.txt,
  // the 30522 tokens of shared/testdata/vocab/ggml-vocab-bert-bge.gguf written back in WordPiece form
  std::string tokenizer = "small";
  bool do_lower_case = true;  // tokenizer_config.json
  uint64_t seed = 7;
};

struct TinyBertCheckpoint {
  TinyBertSpec spec;
  std::string dir;
  std::map<std::string, HfTensor> tensors;  // by BertModel name (no "bert." prefix)
  std::vector<std::string> vocab;           // WordPiece form ("##s"), id order
  const HfTensor& at(const std::string& name) const;
};

TinyBertCheckpoint write_tiny_bert_checkpoint(const TinyBertSpec& spec, const std::string& dir);
std::string tiny_bert_config_json(const TinyBertSpec& spec);

// Final hidden states [T][E] of one sequence (types: one per token, empty = all 0).
std::vector<std::vector<double>> naive_bert_hidden(const TinyBertCheckpoint& ckpt, const std::vector<int32_t>& tokens,
                                                   const std::vector<int32_t>& types = {});

// BERT's BasicTokenizer (lower-case when asked, split at whitespace and ASCII punctuation) then
// greedy longest-match WordPiece with "##" continuations ([UNK] for a word that does not split),
// for ASCII text; ids without [CLS] / [SEP].
std::vector<int32_t> naive_wordpiece(const std::vector<std::string>& vocab, const std::string& text, bool lower);

}  // namespace edgellm::test
