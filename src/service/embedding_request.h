// What a caller hands the EmbeddingService (service/embedding_service.h), and what it gets back:
// the C++ shapes behind /v1/embeddings, /v1/rerank, edgellm_embed / edgellm_rerank and NAPI's
// embed / rerank. Faces translate their wire format into an EmbeddingRequest and add no policy.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "engine/embedder.h"
#include "generation/generate.h"
#include "model/pooling_type.h"
#include "service/request.h"

namespace edgellm {

struct EmbeddingResult;

enum class EmbeddingTask {
  kEmbed,   // one vector per input (texts or token arrays)
  kRerank,  // one relevance score per document for `query` (a cross-encoder: pooling rank)
};

struct EmbeddingRequest {
  EmbeddingTask task = EmbeddingTask::kEmbed;
  // kEmbed: exactly one of texts (each framed with the model's special tokens: [CLS] ... [SEP],
  // BOS / EOS as the vocabulary adds them) and token_inputs (OpenAI's token arrays, used as
  // given: no special token is added).
  std::vector<std::string> texts;
  std::vector<std::vector<int32_t>> token_inputs;
  // kRerank: [CLS] query [SEP] document [SEP] per document (embedder.h: pair_input).
  std::string query;
  std::vector<std::string> documents;

  // kEmbed: none / mean / cls / last; kUnspecified: the model's (Embedder::default_pooling).
  // kRerank always uses rank.
  PoolingType pooling = PoolingType::kUnspecified;
  int normalize = 2;                            // llama.cpp's --embd-normalize (pooling.h); not for scores
  Truncation truncation = Truncation::kRefuse;  // inputs longer than the model takes
  int64_t deadline_ms = 30000;                  // from submit(), queue wait included; <= 0: none
  Priority priority = Priority::kInteractive;

  // Runs exactly once per accepted request, on the scheduler thread, under no lock of the
  // service; must not block for long. Gets the result by non-const reference so the layers in
  // between (the Runtime) fill in their fields without a copy.
  std::function<void(EmbeddingResult&)> on_finish;
};

struct EmbeddingResult {
  RequestId id = 0;
  // kStop: every output is there; kCancelled, kTimeout, kError: none is (error_code / error say
  // why for kError).
  FinishReason finish_reason = FinishReason::kError;
  ErrorCode error_code = ErrorCode::kInternal;
  std::string error;

  EmbeddingTask task = EmbeddingTask::kEmbed;
  PoolingType pooling = PoolingType::kUnspecified;  // what ran
  int32_t dims = 0;                                 // floats per vector (n_embd; 0 for rerank)
  // kEmbed: [rows, dims], one row per input in input order; with pooling none one row per token
  // (input i's rows follow input i - 1's; input_tokens[i] of them).
  std::vector<float> vectors;
  // kRerank: one score per document, in document order (the classifier's first output; raw
  // logits as llama-server returns them, or probabilities where the model's head ends in a
  // softmax: qwen3).
  std::vector<float> scores;
  std::vector<int32_t> input_tokens;  // per input / document: tokens run (after truncation)
  std::vector<uint8_t> truncated;     // per input / document: 1 when it was cut to fit
  int64_t prompt_tokens = 0;          // sum of input_tokens (OpenAI usage)

  double queue_ms = 0;        // submit -> admitted (inputs tokenized)
  double total_ms = 0;        // submit -> on_finish
  int32_t forwards = 0;       // forward passes that ran (some of) its inputs
  std::string model_version;  // set by the Runtime
};

}  // namespace edgellm
