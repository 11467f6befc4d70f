#include "grammar/grammar_compiler.h"

#include "core/error.h"
#include "grammar/gbnf_parser.h"

namespace edgellm::grammar {

GrammarCompiler::GrammarCompiler(std::shared_ptr<const TokenVocabulary> vocab, const GrammarCompilerOptions& options)
    : vocab_(std::move(vocab)), options_(options) {
  require(vocab_ != nullptr, ErrorCode::kInvalidArgument, "grammar compiler: no vocabulary");
}

size_t GrammarCompiler::cached() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lru_.size();
}

std::shared_ptr<const CompiledGrammar> GrammarCompiler::cached_or_compile(const std::string& key,
                                                                          std::string_view gbnf_text,
                                                                          std::string_view root) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = index_.find(key);
    if (it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->second;
    }
  }
  // Compiled without the lock: other grammars compile meanwhile.
  const TokenVocabulary* v = vocab_.get();
  const TokenResolver resolve = [v](std::string_view t) { return v->find_token(t); };
  std::shared_ptr<const CompiledGrammar> g =
      CompiledGrammar::compile(parse_gbnf(gbnf_text, resolve, root), vocab_, options_.compile);
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = index_.find(key);
  if (it != index_.end()) return it->second->second;  // compiled by another thread meanwhile
  if (options_.cache_entries == 0) return g;
  lru_.emplace_front(key, g);
  index_[key] = lru_.begin();
  while (lru_.size() > options_.cache_entries) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return g;
}

std::shared_ptr<const CompiledGrammar> GrammarCompiler::gbnf(std::string_view text, std::string_view root) {
  std::string key = "gbnf:";
  key += root;
  key += '\n';
  key += text;
  return cached_or_compile(key, text, root);
}

std::shared_ptr<const CompiledGrammar> GrammarCompiler::json_schema(const Json& schema, const JsonSchemaOptions& options) {
  std::string key = options.allow_additional_properties_by_default ? "schema+:" : "schema:";
  key += schema.dump();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = index_.find(key);
    if (it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->second;
    }
  }
  const std::string text = json_schema_to_gbnf(schema, options);
  return cached_or_compile(key, text, "root");
}

std::shared_ptr<const CompiledGrammar> GrammarCompiler::json_object() {
  static const std::string kText = json_object_gbnf();
  return cached_or_compile("json_object", kText, "root");
}

}  // namespace edgellm::grammar
