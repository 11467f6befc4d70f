// Helpers shared by the tokenizer tests (header-only; not a test executable).
#pragma once

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/json.h"
#include "gguf/gguf_reader.h"
#include "support/test_env.h"
#include "tokenizer/tokenizer.h"

namespace edgellm::test {

inline std::unique_ptr<Tokenizer> load_gguf_tokenizer(const std::string& path) {
  auto file = gguf::GgufFile::open(path);
  return Tokenizer::from_gguf(*file);
}

inline std::unique_ptr<Tokenizer> load_hf_tokenizer(const std::string& name) {
  const Json tj = Json::parse(read_file(shared_testdata("tokenizers/" + name + "/tokenizer.json")));
  const Json cfg = Json::parse(read_file(shared_testdata("tokenizers/" + name + "/tokenizer_config.json")));
  return std::make_unique<Tokenizer>(vocab_data_from_hf_json(tj, &cfg));
}

inline std::string ids_to_string(const std::vector<int32_t>& ids) {
  std::ostringstream s;
  for (size_t i = 0; i < ids.size(); ++i) s << (i ? " " : "") << ids[i];
  return s.str();
}

// "\xE4\xB8" -> "e4 b8": readable failure messages for byte strings.
inline std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    if (!out.empty()) out += ' ';
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

}  // namespace edgellm::test
