// Drafting with a second, smaller model (speculative decoding's classic form, llama.cpp's
// -md/--model-draft): a lower-bit copy of the same weights or a small model of the same family
// guesses the next k tokens greedily, one cheap forward each, and the target model verifies them
// in one forward (generate.cpp). The draft model must use the target's vocabulary, token for
// token (check_same_vocabulary): its ids are fed to the target as they are.
//
//   appended:  p0 p1 ... pn t1 t2          (the target's sequence: prompt, then sampled tokens)
//   draft KV:  p0 p1 ... pn t1 d2' d3'     (positions it holds: the tokens it saw last time)
//   draft():   keep the common prefix (p0 .. t1), truncate the rest (rejected drafts), decode the
//              missing tail (t2) for its logits, then argmax -> d1, decode d1 -> argmax -> d2 ...
//
// So rejected drafts cost nothing beyond their forwards: the draft sequence is truncated to what
// the target kept (no copy), and the accepted drafts' KV is already there. The last draft is
// never decoded (k drafts take k - 1 one-token forwards plus the catch-up forward).
//
// Greedy drafts make the draft distribution q a point mass, for which the speculative-sampling
// rule is exactly what generate() does (docs/speculative-decoding.md, "Why the output is
// identical"): output equal to plain decoding, greedy or sampled at the same seed.
//
// Memory: one Context on the draft model with one sequence of the target's n_ctx (its KV pool is
// sized for that sequence: kv_blocks_for(n_ctx) blocks at the draft model's shape) plus its
// scratch; allocated_bytes() reports it, and the memory plan counts it (engine/memory_plan.h:
// draft_context_params, plan_draft_memory; `edgellm plan -md`). The forwards run on the target context's thread pool
// (ContextParams::thread_pool, the process-wide pool when that is null) and thread count, between
// the target's forwards on the same thread, so the two never compete for the workers.
// When the sequence outgrows the draft context (endless streams with context shift) the draft
// keeps the newer half and re-reads it. Errors inside a draft forward end that draft (no guess)
// and never the generation. One generation owns a drafter; not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/context.h"
#include "generation/drafter.h"

namespace edgellm {

class Model;

// Throws Error(kInvalidArgument) naming the first difference when `draft` cannot draft for
// `target`: a different n_vocab, no token list (tokenizer.ggml.tokens) in either file to compare,
// or a token whose text differs.
void check_same_vocabulary(const Model& draft, const Model& target);

class DraftModelDrafter final : public Drafter {
 public:
  // `draft` must outlive the drafter. `target` is the context whose sequence the drafts extend:
  // its n_ctx, n_batch, threads and thread pool are taken over (the draft KV type is F16, F32
  // when the target's is F32). Throws as check_same_vocabulary, and as Context's constructor.
  DraftModelDrafter(const Model& draft, const Context& target);

  void append(std::span<const int32_t> tokens) override;
  int32_t draft(int32_t max, int32_t* out) override;

  // Starts a new sequence (a new generation) while keeping the draft KV of whatever prefix the
  // next sequence shares with the last one: the next draft() decodes only what differs.
  void restart() { seq_.clear(); }

  int64_t forwards() const { return forwards_; }  // draft-model forward passes run so far
  size_t allocated_bytes() const { return ctx_->allocated_bytes(); }
  const Context& context() const { return *ctx_; }

 private:
  // Makes the draft context hold seq_ and leaves the logits of its last token in row 0.
  void catch_up();

  std::unique_ptr<Context> ctx_;
  std::vector<int32_t> seq_;     // the target's sequence as appended (the newer part after a shift)
  std::vector<int32_t> cached_;  // the tokens at the draft context's positions 0 .. seq_length
  int64_t forwards_ = 0;
};

}  // namespace edgellm
