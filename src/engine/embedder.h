// The Embedder: token sequences in, one vector (or score) per sequence out, for any supported
// model. What the EmbeddingService's scheduler thread owns, as the InferenceService owns a
// Context:
//   encoder models (bert)        EncoderPass over the sequences packed into one call
//   decoder models (qwen3, ...)  a Context in embeddings mode (ContextParams::embeddings): every
//                                sequence prefilled in its own KV sequence, the normed final
//                                states read back, the sequences cleared (Qwen3-Embedding: last)
// then pooling (pooling.h: none / mean / cls / last, or rank through the classification head)
// and normalisation. Inputs are packed greedily into forwards of at most n_batch tokens (and
// n_seq_max sequences for decoders); a sequence never attends to another, so an input's result
// does not depend on what it was batched with (tests: batched equals one by one).
//
// Not thread-safe: one thread drives an Embedder (the service's scheduler, or the CLI).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "engine/context.h"
#include "engine/encoder_pass.h"
#include "model/model.h"
#include "model/pooling_type.h"

namespace edgellm {

class Tokenizer;

struct EmbedderParams {
  int32_t n_ctx = 0;                        // longest input in tokens; 0: the model's positions (encoders), or its
                                            // training context capped at 4096 (decoders)
  int32_t n_batch = 0;                      // tokens per forward; 0: max(n_ctx, 1024). At least n_ctx for encoders
                                            // (an encoder sees a whole sequence at once)
  int32_t n_seq_max = 16;                   // decoders: sequences per forward (KV sequences)
  int32_t n_threads = 0;                    // 0: the big cores
  TensorType kv_type = TensorType::F16;     // decoders: K/V cache type of the embedding context
  std::shared_ptr<ThreadPool> thread_pool;  // null: the process-wide shared pool
};

// One input: token ids and their token types (segment ids: 0 for the first text, 1 for the
// second of a pair; empty = all 0).
struct EmbedInput {
  std::vector<int32_t> tokens;
  std::vector<int32_t> types;
};

// What to do with an input longer than the embedder's n_ctx.
enum class Truncation {
  kRefuse,  // Error(kInvalidArgument) naming the lengths (llama-server's behaviour)
  kEnd,     // keep the first tokens and the closing special token ([SEP] / EOS), as
            // sentence-transformers truncates to max_seq_length
};
const char* truncation_name(Truncation t);  // "refuse", "end"

class Embedder {
 public:
  // Throws Error(kInvalidArgument) for bad parameters (e.g. n_ctx beyond an encoder's
  // positions), kOutOfMemory when the buffers cannot be allocated.
  Embedder(const Model& model, const EmbedderParams& params);
  ~Embedder();
  Embedder(const Embedder&) = delete;
  Embedder& operator=(const Embedder&) = delete;

  const Model& model() const { return model_; }
  int32_t n_ctx() const { return n_ctx_; }
  int32_t n_batch() const { return n_batch_; }
  int32_t n_seq_max() const { return n_seq_max_; }
  PoolingType default_pooling() const;
  int32_t n_threads() const { return n_threads_; }

  // Runs the inputs (each 1 to n_ctx tokens, ids in the vocabulary) and appends their outputs to
  // `out`: pooled_dims(pooling) floats per input in input order (kNone: n_embd floats per token
  // of every input). kUnspecified means default_pooling(). `normalize` as normalize_embedding
  // (rank scores are never normalised). Throws Error(kInvalidArgument) for a bad input (out is
  // then unchanged), kUnsupported for rank without a classification head, kCancelled when the
  // abort check fired (out unchanged).
  void embed(const std::vector<EmbedInput>& inputs, PoolingType pooling, int normalize, std::vector<float>& out);

  // The general form: each job its own input, pooling and normalisation, its output written to
  // `out` (output_floats(job) floats). Validates every job first (nothing is written on a bad
  // one), then runs them in order in forwards of at most n_batch tokens (and n_seq_max
  // sequences); jobs that fit one forward run in one. kUnspecified pooling means the default.
  struct Job {
    const EmbedInput* input = nullptr;
    PoolingType pooling = PoolingType::kUnspecified;
    int normalize = 2;
    float* out = nullptr;
  };
  void run(Job* jobs, size_t n_jobs);
  // Floats a job writes: pooled_dims(pooling), times the tokens with pooling none.
  size_t output_floats(const EmbedInput& input, PoolingType pooling) const;

  // Polled between layers (AbortCheck{} removes it).
  void set_abort_check(AbortCheck check) { abort_ = check; }
  // Frees the forward's scratch (re-made by the next embed); returns the bytes released.
  size_t trim();
  size_t allocated_bytes() const;
  // What the constructor allocates (planning): the encoder's scratch, or the Context's KV,
  // scratch and output rows. plan_embedder_memory (memory_plan.h) gives every term.
  static size_t planned_bytes(const Model& model, const EmbedderParams& params);
  // `params` with the defaults filled in as the constructor fills them (n_ctx, n_batch,
  // n_seq_max, n_threads), and the embeddings Context a decoder runs in.
  static EmbedderParams resolved_params(const Model& model, const EmbedderParams& params);
  static ContextParams context_params(const Model& model, const EmbedderParams& params);

  int64_t forwards() const { return forwards_; }  // forward calls since construction

 private:
  void run_forward(const Job* jobs, size_t n);
  void run_encoder(const Job* jobs, size_t n);
  void run_decoder(const Job* jobs, size_t n);
  void check_input(const EmbedInput& in, size_t index) const;

  const Model& model_;
  EmbedderParams params_;
  int32_t n_ctx_ = 0;
  int32_t n_batch_ = 0;
  int32_t n_seq_max_ = 0;
  int n_threads_ = 1;
  AbortCheck abort_;
  std::shared_ptr<ThreadPool> pool_;
  std::unique_ptr<EncoderPass> encoder_;  // encoders (null after trim)
  std::unique_ptr<Context> context_;      // decoders
  std::vector<EncoderSequence> seqs_;     // one forward's sequences (reserved)
  std::vector<float> row_;                // one pooled state (rank head input)
  int64_t forwards_ = 0;
};

// Input preparation (on the thread that tokenizes: the service's scheduler, the CLI).
// text_input: `text` with the vocabulary's special tokens ([CLS] ... [SEP], BOS / EOS as the
// model adds them). pair_input: a (query, document) pair for a cross-encoder, BERT's way —
// [CLS] query [SEP] document [SEP], token types 0 then 1 — or, for other vocabularies,
// llama-server's generic rerank format (BOS? query EOS? SEP? document EOS?). Longer than
// max_tokens: refused, or with kEnd cut at the end of the text (of the document for a pair,
// then the query), keeping the closing special tokens. *truncated says whether it was cut.
// Throws Error(kInvalidArgument) for an input that is empty after tokenization or refused.
EmbedInput text_input(const Tokenizer& tokenizer, std::string_view text, int32_t max_tokens, Truncation truncation,
                      bool* truncated = nullptr);
EmbedInput token_input(std::vector<int32_t> tokens, int32_t max_tokens, Truncation truncation,
                       bool* truncated = nullptr);
EmbedInput pair_input(const Tokenizer& tokenizer, std::string_view query, std::string_view document, int32_t max_tokens,
                      Truncation truncation, bool* truncated = nullptr);

}  // namespace edgellm
