// libFuzzer target for the Hugging Face tokenizer.json loader: arbitrary bytes as tokenizer.json
// (with one of three tokenizer_config.json variants, picked by the input's length) go through
// Json::parse -> vocab_data_from_hf_json -> Tokenizer's validating constructor, then a short
// encode / decode / streaming decode. Each step must succeed or throw edgellm::Error; what loads
// must keep the invariants the engine relies on (ids in range, streaming decode == decode,
// decode yields valid UTF-8). Reads no files.
//
// Seeds: tests/fuzz/corpus/tokenizer_json/ holds small tokenizer.json files cut from the real
// Qwen3 and Llama 3 files of shared/testdata (their pre_tokenizer, normalizer, decoder and
// added_tokens kept whole, the vocabulary cut to the byte alphabet plus the first merges) by
// tests/fuzz/make_tokenizer_json_seeds.py.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/json.h"
#include "tokenizer/streaming_decoder.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"
#include "tokenizer/vocab_data.h"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_tokenizer_json invariant violated: %s\n", what);
    std::abort();
  }
}

const edgellm::Json& config(size_t variant) {
  static const edgellm::Json configs[] = {
      edgellm::Json::parse(R"({"bos_token": null, "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
                               "add_bos_token": false})"),
      edgellm::Json::parse(R"({"bos_token": {"content": "<|begin_of_text|>"}, "eos_token": {"content": "<|eot_id|>"},
                               "add_bos_token": true, "add_eos_token": true, "unk_token": "a"})"),
  };
  return configs[variant];
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  edgellm::Json tj;
  try {
    tj = edgellm::Json::parse(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const edgellm::Error&) {
    return 0;  // not JSON: the JSON fuzzer's business
  }
  std::unique_ptr<edgellm::Tokenizer> tok;
  try {
    const size_t variant = size % 3;
    tok = std::make_unique<edgellm::Tokenizer>(
        edgellm::vocab_data_from_hf_json(tj, variant == 2 ? nullptr : &config(variant)));
  } catch (const edgellm::Error&) {
    return 0;  // rejected cleanly
  }
  for (const char* text : {"Hello world, 123!", "  \xE4\xBD\xA0\xE5\xA5\xBD\n\n<|im_start|>x", "\xF0\x9F\x98\x80 a'll"}) {
    for (bool parse_special : {false, true}) {
      const std::vector<int32_t> ids = tok->encode(text, true, parse_special);
      for (int32_t id : ids) check(id >= 0 && id < tok->n_vocab(), "id out of range");
      const std::string decoded = tok->decode(ids);
      check(edgellm::unicode::make_valid(decoded) == decoded, "decode produced malformed UTF-8");
      edgellm::StreamingDecoder stream(*tok);
      std::string streamed;
      for (int32_t id : ids) streamed += stream.push(id);
      streamed += stream.flush();
      check(streamed == decoded, "streaming decode differs from decode");
    }
  }
  return 0;
}
