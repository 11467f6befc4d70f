// A compiled Jinja template: parse once, render many times. This is the public face of the Jinja
// engine (lexer → parser → interpreter); ChatTemplate builds chat prompts on top of it.
//
//   auto t = jinja::Template::parse("{{ greeting | upper }}, {{ name }}!");
//   t.render(Json::parse(R"({"greeting": "hi", "name": "Ada"})"));  // "HI, Ada!"
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "chat/jinja_ast.h"
#include "core/json.h"

namespace edgellm::jinja {

struct RenderOptions {
  size_t max_output_bytes = size_t{16} << 20;  // rendered text (and each captured block) cap
  uint64_t max_steps = 20'000'000;             // statements + expressions evaluated; stops runaway loops
  int max_call_depth = 32;                     // nested macro calls; stops runaway recursion
  // strftime_now(): when set, this Unix time (seconds) is formatted as UTC so tests are
  // reproducible; otherwise the current local time is used, like Hugging Face's datetime.now().
  std::optional<int64_t> fixed_time;
};

class Template {
 public:
  // Throws Error(kInvalidArgument) "template error at line L, column C: ..." on a syntax error.
  static Template parse(std::string_view source);

  // context: a JSON object whose members become template variables. Throws Error(kInvalidArgument)
  // with line and column on runtime errors, raise_exception(), or when a limit is exceeded.
  std::string render(const Json& context, const RenderOptions& options = {}) const;
  // Same with a prepared variable map (a dict Value).
  std::string render(const Value& context, const RenderOptions& options = {}) const;

 private:
  std::shared_ptr<const StmtList> body_;
};

}  // namespace edgellm::jinja
