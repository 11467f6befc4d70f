// One running request's speculative decoding inside the InferenceService's continuous batching
// (docs/speculative-decoding.md "In the service"). The scheduler (inference_step.cpp) asks each
// decoding sequence for drafts while it assembles the step's batch, puts the sequence's next
// token and its k drafts into the same forward as every other sequence's entries, and then
// samples the sequence's rows in order while the drafts are what the sampler picks, exactly as
// generate() does for one sequence:
//
//   batch   seq 0: t0@p0 d1@p0+1 d2@p0+2 | seq 1: t1@p1 | seq 2: t2@p2 d1@p2+1 ...
//   rows    seq 0: s1 (=d1? go on) s2 (=d2? go on) s3 | seq 1: s1 | seq 2: ...
//
// The rejected drafts' KV is truncated (KvCache::seq_truncate: blocks wholly after the kept
// positions go back to the pool, no copy), and the back-off (DraftSchedule) follows the
// acceptance. The service adds the batch-size back-off: drafts are only added to a step while
// its decode entries stay within ServiceParams::spec_max_batch_tokens and never to a step that
// also prefills (see inference_step.cpp for the measured reason).
//
// Drafting: an NgramDrafter of the request's own (mode kNgram), or the draft model's drafter of
// the request's sequence slot (mode kDraft: one DraftModelDrafter per slot, owned by the
// service, restarted for each request so its KV keeps the previous request's common prefix).
//
// Owned by the request's Live record; scheduler thread only (as the slot's drafter).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "generation/draft_model_drafter.h"
#include "generation/draft_schedule.h"
#include "generation/generate.h"
#include "generation/ngram_drafter.h"

namespace edgellm {

class Context;
class SequenceGenerator;
struct ServiceRequest;

// At submit: throws Error(kInvalidArgument) naming the field for speculation parameters the
// service cannot honour (mode draft when the service has no draft model: `has_draft_model`;
// draft_max outside [1, 8]; n-gram sizes), and returns why speculation is off for this request
// although it asked for it ("" when it will speculate, or when it did not ask).
std::string check_speculation(const ServiceRequest& request, bool has_draft_model);

class SequenceSpeculation {
 public:
  // Mode kNgram, or kDraft with the slot's `draft_model` drafter (not null; restarted here; it
  // must outlive this), check_speculation passed. Throws Error(kInvalidArgument) for n-gram sizes.
  SequenceSpeculation(const SpeculationParams& params, DraftModelDrafter* draft_model);

  // Tokens that entered the sequence: the prompt at admission, then every sampled token.
  void append(std::span<const int32_t> tokens) { drafter_->append(tokens); }

  // Drafts for the sequence's next forward, whose first entry is gen's next token at
  // gen.next_pos(): at most `cap` (what the step has room for; 0: none this step, and the
  // back-off schedule does not count the step), and no more than can be used: the positions left
  // in n_ctx, the tokens left to max_tokens (a verify forward samples up to drafts + 1) and the
  // KV blocks `blocks_free` (free now, less what the step's earlier entries took). Returns how
  // many; they stay in drafts() until the next call.
  int32_t draft(const SequenceGenerator& gen, const Context& ctx, int32_t seq, int32_t max_tokens, int32_t cap,
                int32_t blocks_free);
  int32_t n_drafts() const { return n_draft_; }
  std::span<const int32_t> drafts() const { return {draft_.data(), static_cast<size_t>(n_draft_)}; }

  // Row `row` of this sequence's forward was sampled and gave `next` (the generator's next
  // token). True when row + 1 is valid too: row < n_drafts() and next is the draft of that row.
  bool keeps(int32_t row, int32_t next) const { return row < n_draft_ && next == draft_[static_cast<size_t>(row)]; }

  // Rows 0..last_row of the forward were used (last_row accepted drafts): the rejected drafts'
  // positions after base + last_row are truncated (no copy of a kept block) and the schedule
  // learns the outcome; counts drafted / accepted into `stats`.
  void verified(Context& ctx, int32_t seq, int32_t base, int32_t last_row, SpeculationStats& stats);

 private:
  SpeculationParams params_;
  std::optional<NgramDrafter> ngram_;  // mode kNgram
  Drafter* drafter_ = nullptr;         // ngram_, or the slot's DraftModelDrafter
  DraftSchedule schedule_;
  std::array<int32_t, SpeculationParams::kMaxDraft> draft_{};
  int32_t n_draft_ = 0;
};

}  // namespace edgellm
