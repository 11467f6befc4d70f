// What a runtime holds per model to serve constrained requests: the model's TokenVocabulary and
// a cache of compiled grammars, keyed by their source, shared by every request that asks for the
// same grammar or schema (an app sends the same schema every time; compiling it once also keeps
// the state masks its generations computed).
//
//   GrammarCompiler grammars(TokenVocabulary::from_tokenizer(tokenizer));
//   request.generation.grammar = grammars.json_schema(Json::parse(schema_text));   // or gbnf(), json_object()
//
// Thread-safe: any thread may compile; two threads asking for the same new grammar at once may
// both compile it (one result is kept).
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/json.h"
#include "grammar/compiled_grammar.h"
#include "grammar/json_schema.h"
#include "grammar/token_vocabulary.h"

namespace edgellm::grammar {

struct GrammarCompilerOptions {
  size_t cache_entries = 32;  // compiled grammars kept (least recently used go first)
  CompileOptions compile;
};

class GrammarCompiler {
 public:
  explicit GrammarCompiler(std::shared_ptr<const TokenVocabulary> vocab, const GrammarCompilerOptions& options = {});

  // GBNF text (`<text>` tokens resolve against the vocabulary). Throws Error(kInvalidArgument)
  // with the grammar error (line, column) or the compile error.
  std::shared_ptr<const CompiledGrammar> gbnf(std::string_view text, std::string_view root = "root");
  // A JSON Schema (json_schema.h). Throws Error(kInvalidArgument) naming the keyword.
  std::shared_ptr<const CompiledGrammar> json_schema(const Json& schema, const JsonSchemaOptions& options = {});
  // Any JSON object (OpenAI's response_format {"type": "json_object"}).
  std::shared_ptr<const CompiledGrammar> json_object();

  const TokenVocabulary& vocabulary() const { return *vocab_; }
  const std::shared_ptr<const TokenVocabulary>& vocabulary_ptr() const { return vocab_; }
  size_t cached() const;

 private:
  std::shared_ptr<const CompiledGrammar> cached_or_compile(const std::string& key, std::string_view gbnf_text,
                                                           std::string_view root);

  std::shared_ptr<const TokenVocabulary> vocab_;
  GrammarCompilerOptions options_;
  mutable std::mutex mutex_;
  // Most recently used first; the map points into the list.
  std::list<std::pair<std::string, std::shared_ptr<const CompiledGrammar>>> lru_;
  std::unordered_map<std::string, decltype(lru_)::iterator> index_;
};

}  // namespace edgellm::grammar
