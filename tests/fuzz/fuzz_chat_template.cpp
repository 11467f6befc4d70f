// libFuzzer target: arbitrary bytes as a chat template source, rendered against a fixed
// conversation (system, user, assistant with tool calls, tool) and tool list. The engine must
// either render (within the output cap) or throw edgellm::Error; any other exception, crash,
// sanitizer report, leak or hang is a bug.
//
// Seeds: tests/fuzz/corpus/chat_template/ (the real templates of shared/testdata's
// tokenizer_config.json files, from tests/fuzz/make_seeds.py, grown by scripts/fuzz-long.sh), and
// with EDGELLM_FUZZ_SEED_DIR set LLVMFuzzerInitialize writes every built-in template there.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "chat/chat_template.h"
#include "core/error.h"
#include "core/json.h"

namespace {

// Small limits keep each input fast: the fuzzer explores shapes, not sizes.
constexpr size_t kMaxOutputBytes = size_t{1} << 20;
constexpr uint64_t kMaxSteps = 100000;

const edgellm::Json& messages() {
  static const edgellm::Json m = edgellm::Json::parse(R"([
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "Hi \u00e9\u4f60 <tool_response>"},
    {"role": "assistant", "content": "<think>\nhmm\n</think>\n\nHello", "tool_calls": [
      {"type": "function", "function": {"name": "f", "arguments": {"a": [1, 2.5, null, true]}}}]},
    {"role": "tool", "content": "{\"ok\": 1}"},
    {"role": "user", "content": ""}])");
  return m;
}

const edgellm::Json& extra() {
  static const edgellm::Json e = edgellm::Json::parse(R"({
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
    "enable_thinking": false})");
  return e;
}

void write_seeds(const std::string& dir) {
  for (const auto& name : edgellm::builtin_chat_template_names()) {
    const auto source = edgellm::find_builtin_source(name);
    if (!source) continue;
    const std::string path = dir + "/builtin-" + name + ".jinja";
    if (FILE* f = std::fopen(path.c_str(), "wb")) {
      std::fwrite(source->data(), 1, source->size(), f);
      std::fclose(f);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("EDGELLM_FUZZ_SEED_DIR"); dir && *dir) write_seeds(dir);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string source(reinterpret_cast<const char*>(data), size);
  try {
    auto tmpl = edgellm::ChatTemplate::from_source(source, "<s>", "</s>");
    tmpl.options().max_output_bytes = kMaxOutputBytes;
    tmpl.options().max_steps = kMaxSteps;
    tmpl.options().fixed_time = 0;
    std::string out = tmpl.render(messages(), (size & 1) != 0, extra());
    if (out.size() > kMaxOutputBytes) std::abort();  // the cap must hold
  } catch (const edgellm::Error&) {
    // Expected for malformed templates.
  }
  return 0;
}
