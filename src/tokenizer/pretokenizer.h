// Pre-tokenizers: split text (as code points) into words before BPE merges run inside each word.
// Each family reproduces one regex list used by Hugging Face / llama.cpp for that model family,
// implemented as hand-written matchers over code points (no regex library). A family is a chain
// of stages; each stage splits every current piece into its matches *and* the unmatched gaps
// between them (llama.cpp's semantics), and look-arounds such as (?!\S) or $ see only the
// current piece.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace edgellm {

enum class PreTokenizerKind {
  kDefault,        // llama.cpp's fallback for BPE vocabs without tokenizer.ggml.pre (gpt-neox)
  kGpt2,           // gpt-2, mpt, olmo, jais, phi-2, roberta-bpe, jina-*
  kLlama3,         // llama3 / llama-bpe / dbrx / smaug-bpe / falcon3: digits in groups of <= 3
  kQwen2,          // qwen2 / stablelm2 / deepseek-r1-qwen: like llama3 with single digits
  kDeepseekLlm,    // deepseek-llm
  kDeepseekCoder,  // deepseek-coder
  kFalcon,         // falcon
  kStarcoder,      // starcoder / refact / command-r / smollm / codeshell / exaone
};

// Maps a tokenizer.ggml.pre name to its family; throws Error(kUnsupported) naming `name` for
// families this engine does not implement.
PreTokenizerKind pretokenizer_from_name(std::string_view name);
const char* pretokenizer_name(PreTokenizerKind kind);

// Word boundaries of cps: words are [bounds[i], bounds[i+1]); bounds starts with 0 and ends
// with cps.size(); no word is empty. An empty input gives {0}.
std::vector<size_t> pretokenize(PreTokenizerKind kind, const std::vector<uint32_t>& cps);

// The families, exposed for tests. Each appends the ends of the words it finds in
// [begin, end) to `ends` (so words are [previous end, this end)).
void split_gpt2(const uint32_t* cps, size_t begin, size_t end, std::vector<size_t>& ends);
void split_llama3(const uint32_t* cps, size_t begin, size_t end, size_t max_digits,
                  std::vector<size_t>& ends);

}  // namespace edgellm
