// A request's output constraint given as text (ServiceRequest::grammar_gbnf / json_schema /
// json_object), compiled for the vocabulary of the service that serves it. Each InferenceService
// owns one RequestGrammars: the vocabulary view is built on the first constrained request (a
// 151k vocabulary takes tens of milliseconds and a few MB, which unconstrained use never pays),
// then grammar::GrammarCompiler's LRU keeps compiled grammars, so an app that sends the same
// schema with every request compiles it once per service: once per model version, and again
// after the degradation ladder rebuilds the service (ModelHost::reconfigure).
//
// Thread-safety: compile() may be called from any thread at once (submit runs on the callers'
// threads); the vocabulary is built once under a mutex (a failed build, e.g. bad_alloc, is tried
// again by the next request), the compiler locks its cache.
#pragma once

#include <memory>
#include <mutex>

#include "service/request.h"

namespace edgellm {

class Tokenizer;
namespace grammar {
class GrammarCompiler;
}

class RequestGrammars {
 public:
  explicit RequestGrammars(const Tokenizer& tokenizer);  // the tokenizer outlives this object
  ~RequestGrammars();
  RequestGrammars(const RequestGrammars&) = delete;
  RequestGrammars& operator=(const RequestGrammars&) = delete;

  // Moves the request's text constraint into request.generation.grammar (compiled); nothing when
  // it has none. Throws Error(kInvalidArgument): the GBNF's error with line and column, a schema that is
  // not JSON, or the unsupported keyword the converter names; each prefixed with the field
  // ("grammar: ...", "json_schema: ...").
  void compile(ServiceRequest& request);

 private:
  grammar::GrammarCompiler& compiler();

  const Tokenizer& tokenizer_;
  std::mutex mutex_;
  std::unique_ptr<grammar::GrammarCompiler> compiler_;  // (mutex_ while null) built once, then read-only
};

}  // namespace edgellm
