// A BERT tokenizer saved the old way — vocab.txt (one WordPiece token per line, the line number is
// its id) and tokenizer_config.json, no tokenizer.json — as the tokenizer.json transformers'
// BertConverter builds from it when it loads BertTokenizerFast, so the rest of the export
// (tokenizer_export.h) is the same as for a model that ships tokenizer.json:
//
//   model           WordPiece over vocab.txt, unk_token (tokenizer_config "unk_token", default "[UNK]")
//   normalizer      BertNormalizer: lowercase = do_lower_case (default true), strip_accents
//                   (default: follows lowercase), handle_chinese_chars = tokenize_chinese_chars
//   pre_tokenizer   BertPreTokenizer
//   post_processor  TemplateProcessing "[CLS] $A [SEP]" (pair "[CLS] $A [SEP] $B:1 [SEP]:1") with
//                   the cls_token / sep_token texts
//   added_tokens    the special tokens (unk, sep, pad, cls, mask; tokenizer_config's
//                   added_tokens_decoder when present) found in the vocabulary, marked special
//
// Lines are split at '\n' only (a '\r' stays part of the token, as transformers' load_vocab
// keeps it); a token listed twice keeps its last id, as load_vocab's dict does.
#pragma once

#include <string>

#include "core/json.h"

namespace edgellm::convert {

// `vocab_txt`: the file's contents; `tokenizer_config`: may be null. Errors: kInvalidFile naming
// `origin` for an empty vocabulary or one above 2^24 lines.
Json tokenizer_json_from_vocab_txt(const std::string& vocab_txt, const Json* tokenizer_config,
                                   const std::string& origin);

}  // namespace edgellm::convert
