// Admission (inference_service.h's overview, "KV admission" and "Prefix cache"): a waiting
// request is tokenized or rendered once, sized (prompt + max_tokens in KV blocks), given a free
// sequence with its session restored and the longest cached prefix mapped, and started when the
// blocks the running requests may still take leave room for it (committed_blocks); otherwise it
// waits as the blocked request.
#include <algorithm>
#include <exception>
#include <string>
#include <vector>

#include "chat/chat_prompt.h"
#include "core/log.h"
#include "generation/draft_model_drafter.h"
#include "kv/block_pool.h"
#include "kv/kv_cache.h"
#include "service/inference_service.h"
#include "service/live_request.h"
#include "tokenizer/tokenizer.h"

namespace edgellm {

bool InferenceService::prepare(Live& r) {
  // Tokenize (once: a request blocked on KV keeps its ids) and check that it can ever fit.
  try {
    if (!r.prepared) {
      std::vector<std::string> stop = r.req.generation.stop;
      if (!r.req.tokens.empty()) {
        r.prompt = r.req.tokens;
      } else if (!r.req.messages.is_null()) {
        Json extra = Json::object();
        if (!r.req.tools.is_null()) extra.set("tools", r.req.tools);
        r.prompt = chat_prompt_tokens(*template_, *tokenizer_, r.req.messages, extra);
        stop = chat_stop_strings(*template_, *tokenizer_, std::move(stop));
      } else {
        r.prompt = tokenizer_->encode(r.req.prompt, r.req.add_special, r.req.parse_special);
      }
      r.req.generation.stop = std::move(stop);
      r.prepared = true;
    }
    const int64_t n_ctx = ctx_params_.n_ctx;
    const int64_t n_prompt = static_cast<int64_t>(r.prompt.size());
    if (n_prompt == 0) throw Error(ErrorCode::kInvalidArgument, "the prompt tokenizes to no tokens");
    if (n_prompt >= n_ctx) {
      throw Error(ErrorCode::kContextFull, "the prompt has " + std::to_string(n_prompt) +
                                               " tokens; the context holds " + std::to_string(n_ctx) +
                                               " positions and the answer needs at least one");
    }
    const int64_t answer = r.req.generation.max_tokens < 0 ? n_ctx : r.req.generation.max_tokens;
    r.reserved_blocks = ctx_->kv_blocks_for(std::min<int64_t>(n_ctx, n_prompt + answer));
    if (r.reserved_blocks > ctx_->kv_blocks_total()) {
      throw Error(ErrorCode::kOutOfMemory, "out of KV memory: the request needs " + std::to_string(r.reserved_blocks) +
                                               " KV blocks (prompt + max_tokens); the whole pool has " +
                                               std::to_string(ctx_->kv_blocks_total()) +
                                               " (lower max_tokens or raise the KV budget)");
    }
    return true;
  } catch (const Error& e) {
    r.error_code = e.code();
    r.error_message = e.what();
    log_message(LogLevel::kWarn, "service: request " + std::to_string(r.id) + " refused: " + e.what());
    return false;
  } catch (const std::exception& e) {
    r.error_code = ErrorCode::kInternal;
    r.error_message = e.what();
    log_message(LogLevel::kError, "service: request " + std::to_string(r.id) + " failed to start: " + e.what());
    return false;
  }
}

void InferenceService::admit() {
  for (;;) {
    // In queue order; a classify needs no request sequence (it runs in the scratch ones).
    std::unique_ptr<Live> r = std::move(blocked_);
    if (r && r->classify == nullptr && free_seqs_.empty()) {
      blocked_ = std::move(r);
      return;
    }
    if (!r) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (queue_.empty() || (free_seqs_.empty() && queue_.front()->classify == nullptr)) return;
      r = queue_.pop();
      live_[r->id] = Where::kScheduler;
      ++held_;  // counted as held from here, so submit() never sees it neither queued nor held
    }
    if (r->classify) {
      if (!run_classify(r)) return;  // waits as blocked_
      continue;
    }
    if (!prepare(*r)) {
      const ErrorCode code = r->error_code;
      const std::string why = std::move(r->error_message);
      finish(std::move(r), FinishReason::kError, code, why);
      continue;
    }
    const int32_t seq = free_seqs_.back();
    const int64_t total = ctx_->kv_blocks_total();
    // A session's positions are new blocks: checked before they are loaded, with no credit.
    const bool with_session = !r->req.session_in.empty();
    if (with_session && (finished_requests_ < blocked_retry_after_ || committed_blocks() + r->reserved_blocks > total)) {
      blocked_retry_after_ = finished_requests_ + 1;
      blocked_ = std::move(r);  // waits for running requests to release their blocks
      return;
    }
    try {
      if (with_session) ctx_->load_session(seq, r->req.session_in, &r->prompt);  // the saved positions that start the prompt
      r->cached_tokens = ctx_->seq_reuse_prefix(seq, r->prompt, static_cast<int32_t>(r->prompt.size()) - 1);
    } catch (const Error& e) {
      ctx_->seq_clear(seq);
      const ErrorCode code = e.code();
      const std::string why = e.what();
      finish(std::move(r), FinishReason::kError, code, why);
      continue;
    }
    // The prefix is mapped (no block allocated): count what every sequence, this one included,
    // may still take. Blocks shared with running requests are counted once, so requests with a
    // common system prompt run side by side where their full reservations would not fit.
    r->seq = seq;
    if (committed_blocks(r.get()) > total) {
      r->seq = -1;
      ctx_->seq_clear(seq);  // the mapped blocks go back to the cache
      blocked_retry_after_ = finished_requests_ + 1;
      blocked_ = std::move(r);  // waits for running requests to release their blocks
      return;
    }
    try {
      // Built once the request is admitted: it feeds the prompt to the sampler's penalty window.
      // The generator sees the whole prompt; the prefix the KV cache already holds (full blocks
      // of earlier requests) counts as prefilled.
      r->gen = std::make_unique<SequenceGenerator>(*r->sampler, tokenizer_.get(), model_->hparams().n_vocab,
                                                   ctx_params_.n_ctx, 0, r->prompt, r->req.generation);
      r->gen->prefill_advanced(r->cached_tokens);
    } catch (const Error& e) {
      r->seq = -1;
      ctx_->seq_clear(seq);
      const ErrorCode code = e.code();
      const std::string why = e.what();
      finish(std::move(r), FinishReason::kError, code, why);
      continue;
    }
    const SpeculationMode spec_mode = r->req.generation.speculation.mode;
    if (spec_mode != SpeculationMode::kOff && r->spec_off_reason.empty()) {
      // kDraft was refused at submit on a service without a draft model: drafters_ has a slot each.
      DraftModelDrafter* slot = spec_mode == SpeculationMode::kDraft ? drafters_.at(static_cast<size_t>(seq)).get() : nullptr;
      r->spec = std::make_unique<SequenceSpeculation>(r->req.generation.speculation, slot);
      r->spec->append(r->prompt);
    }
    if (with_session) std::string().swap(r->req.session_in);
    free_seqs_.pop_back();
    r->admitted = Clock::now();
    running_.push_back(std::move(r));
    publish_gauges();
  }
}

int64_t InferenceService::committed_blocks(const Live* candidate) const {
  // Two upper bounds on the blocks the running sequences can ever hold at once; the smaller
  // one counts (each holds from any state, so admitting against the smaller never overcommits).
  // 1. Their reservations: every block in use is in some table, and a table never exceeds its
  //    reservation (prompt + max_tokens, at most n_ctx, in blocks).
  // 2. Sharing kept: the blocks in use now, each once however many tables hold it, plus
  //    - growth: blocks each table may still gain, up to its reservation;
  //    - copies: blocks a sequence copies without growing its table. A shared partial last
  //      block is copied on its next write (a prompt that ends on a block boundary maps that
  //      block and recomputes its last position). A context shift copies the shared blocks it
  //      moves rows into (kv_cache.h, seq_drop): a block with r references, s of them from
  //      context-shift sequences, yields at most min(s, r - 1) copies (the last holder copies
  //      nothing).
  //    Requests with a common system prompt then run side by side where their reservations
  //    alone would not fit.
  const KvCache& kv = ctx_->kv_cache();
  const BlockPool& pool = kv.pool();
  const int32_t T = kv.params().block_tokens;
  int64_t reserved = 0;
  int64_t sharing = pool.n_in_use();
  std::vector<int32_t> shift_shared;  // shared blocks in context-shift tables, once per table
  const auto count = [&](const Live& r) {
    reserved += r.reserved_blocks;
    const std::vector<int32_t>& table = kv.block_table(r.seq);
    sharing += std::max<int64_t>(0, r.reserved_blocks - static_cast<int64_t>(table.size()));
    if (table.empty()) return;
    if (r.req.generation.context_shift) {
      for (const int32_t b : table) {
        if (pool.refcount(b) > 1) shift_shared.push_back(b);
      }
    } else if (kv.seq_length(r.seq) % T != 0 && pool.refcount(table.back()) > 1) {
      sharing += 1;
    }
  };
  for (const auto& rp : running_) count(*rp);
  if (candidate != nullptr) count(*candidate);
  std::sort(shift_shared.begin(), shift_shared.end());
  for (size_t i = 0; i < shift_shared.size();) {
    size_t j = i;
    while (j < shift_shared.size() && shift_shared[j] == shift_shared[i]) ++j;
    sharing += std::min<int64_t>(static_cast<int64_t>(j - i), pool.refcount(shift_shared[i]) - 1);
    i = j;
  }
  return std::min(reserved, sharing);
}

}  // namespace edgellm
