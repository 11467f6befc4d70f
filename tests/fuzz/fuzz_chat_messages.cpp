// libFuzzer target: the real chat templates rendered over hostile conversations. The input is a
// JSON document — an array of messages, or an object {"messages": [...], <extra context>} such as
// tools, documents, enable_thinking — rendered by every template (the built-ins and the
// tokenizer_config.json templates of $EDGELLM_TESTDATA/testdata/tokenizers/*). Messages are what
// an app passes from its user, so a template must render or throw edgellm::Error (e.g. its own
// raise_exception), within the output cap; any other exception, crash, sanitizer report, leak or
// hang is a bug. fuzz_chat_template fuzzes the template source; this one the data.
//
// Seeds: tests/fuzz/corpus/chat_messages/ (conversations from the chat-cases.jsonl of
// shared/testdata, cut by tests/fuzz/make_tokenizer_json_seeds.py).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "chat/chat_template.h"
#include "core/error.h"
#include "core/json.h"

namespace {

constexpr size_t kMaxOutputBytes = size_t{1} << 20;
constexpr uint64_t kMaxSteps = 200000;

std::vector<edgellm::ChatTemplate> load_templates() {
  std::vector<edgellm::ChatTemplate> out;
  for (const auto& name : edgellm::builtin_chat_template_names()) out.push_back(edgellm::ChatTemplate::builtin(name));
  const char* env = std::getenv("EDGELLM_TESTDATA");
  const std::filesystem::path dir = std::filesystem::path(env && *env ? env : "../shared") / "testdata" / "tokenizers";
  std::error_code ec;
  size_t real = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const auto path = entry.path() / "tokenizer_config.json";
    std::ifstream in(path);
    if (!in) continue;
    std::stringstream ss;
    ss << in.rdbuf();
    try {
      out.push_back(edgellm::ChatTemplate::from_tokenizer_config(edgellm::Json::parse(ss.str())));
      ++real;
    } catch (const edgellm::Error& e) {
      std::fprintf(stderr, "fuzz_chat_messages: %s: %s\n", path.c_str(), e.what());
      std::abort();  // the real templates must load: that is a regression, not a fuzz input
    }
  }
  std::fprintf(stderr, "fuzz_chat_messages: %zu built-in + %zu tokenizer_config templates (%s)\n", out.size() - real,
               real, dir.c_str());
  for (auto& t : out) {
    t.options().max_output_bytes = kMaxOutputBytes;
    t.options().max_steps = kMaxSteps;
    t.options().fixed_time = 0;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static std::vector<edgellm::ChatTemplate> templates = load_templates();
  edgellm::Json doc;
  try {
    doc = edgellm::Json::parse(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const edgellm::Error&) {
    return 0;
  }
  edgellm::Json messages = doc;
  edgellm::Json extra = edgellm::Json::object();
  if (doc.is_object()) {
    const edgellm::Json* m = doc.find("messages");
    if (!m) return 0;
    messages = *m;
    for (const auto& [key, value] : doc.as_object()) {
      if (key != "messages") extra.set(key, value);
    }
  }
  if (!messages.is_array()) return 0;
  for (const auto& t : templates) {
    for (bool gen : {false, true}) {
      try {
        const std::string out = t.render(messages, gen, extra);
        if (out.size() > kMaxOutputBytes) std::abort();  // the cap must hold
      } catch (const edgellm::Error&) {
        // The template refused the conversation (raise_exception, wrong types, limits).
      }
    }
  }
  return 0;
}
