#include "service/request_grammar.h"

#include <string>
#include <utility>

#include "core/error.h"
#include "core/json.h"
#include "grammar/grammar_compiler.h"
#include "grammar/token_vocabulary.h"

namespace edgellm {

RequestGrammars::RequestGrammars(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}
RequestGrammars::~RequestGrammars() = default;

grammar::GrammarCompiler& RequestGrammars::compiler() {
  // A mutex rather than std::call_once: an exception from the build must leave it retryable, and
  // some libstdc++ targets hang in call_once after a throwing callable (GCC PR 66146).
  std::lock_guard<std::mutex> lock(mutex_);
  if (compiler_ == nullptr) {
    compiler_ = std::make_unique<grammar::GrammarCompiler>(grammar::TokenVocabulary::from_tokenizer(tokenizer_));
  }
  return *compiler_;
}

namespace {

// The field's name before the compiler's message, so every face reports which input was wrong.
template <typename Fn>
std::shared_ptr<const grammar::CompiledGrammar> named(const char* field, Fn&& compile) {
  try {
    return compile();
  } catch (const Error& e) {
    // The converters name it already ("json_schema: /properties/x: ..."): not twice.
    const std::string prefix = std::string(field) + ": ";
    const std::string what = e.what();
    throw Error(e.code() == ErrorCode::kInternal ? ErrorCode::kInternal : ErrorCode::kInvalidArgument,
                what.rfind(prefix, 0) == 0 ? what : prefix + what);
  }
}

}  // namespace

void RequestGrammars::compile(ServiceRequest& request) {
  if (!request.grammar_gbnf.empty()) {
    request.generation.grammar = named("grammar", [&] { return compiler().gbnf(request.grammar_gbnf); });
  } else if (!request.json_schema.empty()) {
    request.generation.grammar = named("json_schema", [&] {
      // Json::parse throws kInvalidArgument with the offset of a syntax error.
      return compiler().json_schema(Json::parse(request.json_schema, 64));
    });
  } else if (request.json_object) {
    request.generation.grammar = named("json_object", [&] { return compiler().json_object(); });
  } else {
    return;
  }
  request.grammar_gbnf.clear();
  request.json_schema.clear();
  request.json_object = false;
}

}  // namespace edgellm
