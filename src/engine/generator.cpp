#include "engine/generator.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <memory>
#include <optional>

#include "core/error.h"
#include "engine/batch.h"
#include "engine/context.h"
#include "engine/generator_stop.h"
#include "engine/sampler.h"
#include "model/model.h"
#include "tokenizer/streaming_decoder.h"
#include "tokenizer/tokenizer.h"

namespace edgellm {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

bool cancel_requested(const GenerationCallbacks& cb) {
  return cb.cancel != nullptr && cb.cancel->load(std::memory_order_relaxed);
}

// Validates the prompt against the vocabulary and the free context; returns the ids to prefill
// (the prompt itself, or its truncated form when allowed).
std::vector<int32_t> checked_prompt(const std::vector<int32_t>& prompt, int32_t n_vocab, int32_t n_ctx,
                                    int32_t pos0, const Tokenizer* tokenizer, const GenerationParams& params,
                                    int32_t* dropped) {
  require(!prompt.empty(), ErrorCode::kInvalidArgument, "generate: the prompt is empty (no token ids)");
  for (size_t i = 0; i < prompt.size(); ++i) {
    require(prompt[i] >= 0 && prompt[i] < n_vocab, ErrorCode::kInvalidArgument,
            "generate: prompt token #" + std::to_string(i) + " has id " + std::to_string(prompt[i]) +
                ", outside the vocabulary [0, " + std::to_string(n_vocab) + ")");
  }
  *dropped = 0;
  const int64_t free_positions = static_cast<int64_t>(n_ctx) - pos0;
  if (n_ctx <= 0 || static_cast<int64_t>(prompt.size()) <= free_positions) return prompt;
  const std::string what = "generate: the prompt has " + std::to_string(prompt.size()) +
                           " tokens but only " + std::to_string(std::max<int64_t>(free_positions, 0)) +
                           " of the context's " + std::to_string(n_ctx) + " positions are free";
  require(params.truncate_prompt, ErrorCode::kContextFull, what + " (raise the context size or allow truncation)");
  require(free_positions >= 2, ErrorCode::kContextFull, what + "; too few to truncate into");
  // Leave room to generate: the requested tokens, but at most half of the free context.
  const int64_t wanted = params.max_tokens > 0 ? params.max_tokens : free_positions / 4;
  const int64_t room = std::clamp<int64_t>(wanted, 1, free_positions / 2);
  const int64_t keep = free_positions - room;
  const bool keep_bos = pos0 == 0 && tokenizer != nullptr && prompt.front() == tokenizer->bos();
  std::vector<int32_t> out;
  if (keep_bos) out.push_back(prompt.front());
  const size_t tail = static_cast<size_t>(keep) - out.size();
  out.insert(out.end(), prompt.end() - static_cast<std::ptrdiff_t>(tail), prompt.end());
  *dropped = static_cast<int32_t>(prompt.size() - out.size());
  return out;
}

}  // namespace

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kError: return "error";
  }
  return "error";
}

GenerationResult generate(Context& ctx, Sampler& sampler, const Tokenizer* tokenizer,
                          const std::vector<int32_t>& prompt, const GenerationParams& params,
                          const GenerationCallbacks& callbacks) {
  const Clock::time_point t_start = Clock::now();
  const int32_t n_vocab = ctx.model().hparams().n_vocab;
  require(sampler.n_vocab() == n_vocab, ErrorCode::kInvalidArgument,
          "generate: the sampler was built for a vocabulary of " + std::to_string(sampler.n_vocab()) +
              " tokens but the model has " + std::to_string(n_vocab));
  require(params.stop.empty() || tokenizer != nullptr, ErrorCode::kInvalidArgument,
          "generate: stop strings need a tokenizer (the model's vocabulary) to turn tokens into text");
  const int32_t seq = params.seq_id;
  const int32_t n_ctx = ctx.params().n_ctx;
  const int32_t pos0 = ctx.seq_length(seq);

  GenerationResult result;
  const std::vector<int32_t> ids =
      checked_prompt(prompt, n_vocab, n_ctx, pos0, tokenizer, params, &result.prompt_tokens_dropped);
  StopStringFilter stops(params.stop);  // validates the stop strings before any work
  std::optional<StreamingDecoder> detok;
  if (tokenizer != nullptr) {
    // The output is the start of the text only when nothing but BOS precedes it; after a real
    // prompt the first token's leading space is part of the continuation (" They ...").
    const bool text_start = pos0 == 0 && ids.size() == 1 && ids.front() == tokenizer->bos();
    detok.emplace(*tokenizer, text_start);
  }

  if (params.penalize_prompt) {
    for (int32_t id : ids) sampler.accept(id);
  }
  result.timings.prompt_tokens = static_cast<int32_t>(ids.size());
  int32_t pos = pos0;

  auto finish = [&](FinishReason reason) {
    result.finish_reason = reason;
    return result;
  };
  // Text the filters still hold when generation ends for a reason other than a stop string is real
  // output: release it (unless the caller cancelled and asked for nothing more).
  auto release_tail = [&]() {
    std::string tail = detok ? stops.push(detok->flush()) : std::string();
    tail += stops.flush();
    if (tail.empty()) return;
    result.text += tail;
    if (callbacks.on_token) (void)callbacks.on_token(-1, tail);
  };

  try {
    // Prefill, chunked here as well (Context::decode would split the same way) so that a
    // cancellation is noticed between chunks of a long prompt.
    const int32_t n_batch = std::max<int32_t>(1, ctx.params().n_batch);
    Batch batch;
    for (size_t start = 0; start < ids.size(); start += static_cast<size_t>(n_batch)) {
      if (cancel_requested(callbacks)) return finish(FinishReason::kCancelled);
      const size_t end = std::min(ids.size(), start + static_cast<size_t>(n_batch));
      batch.clear();
      for (size_t i = start; i < end; ++i) {
        batch.add(seq, ids[i], pos + static_cast<int32_t>(i), i + 1 == ids.size());
      }
      ctx.decode(batch);
    }
    pos += static_cast<int32_t>(ids.size());
    result.timings.prefill_seconds = seconds_since(t_start);
    if (params.max_tokens == 0) return finish(FinishReason::kLength);

    const float* logits = ctx.logits(0);
    Clock::time_point t_first{};
    bool sampled_any = false;
    for (;;) {
      if (callbacks.on_logits) callbacks.on_logits(logits, n_vocab);
      const int32_t id = sampler.sample(logits);
      if (!sampled_any) {
        sampled_any = true;
        t_first = Clock::now();
        result.timings.ttft_seconds = std::chrono::duration<double>(t_first - t_start).count();
      } else {
        result.timings.decode_tokens++;
        result.timings.decode_seconds = seconds_since(t_first);
      }
      if (!params.ignore_eog && tokenizer != nullptr && tokenizer->is_eog(id)) {
        result.eog_token = id;
        release_tail();
        return finish(FinishReason::kStop);
      }
      sampler.accept(id);
      result.tokens.push_back(id);

      std::string piece = detok ? stops.push(detok->push(id)) : std::string();
      if (stops.matched()) {
        result.stop_string = stops.matched_stop();
        result.text += piece;
        if (callbacks.on_token) (void)callbacks.on_token(id, piece);
        return finish(FinishReason::kStop);
      }
      result.text += piece;
      if (callbacks.on_token && !callbacks.on_token(id, piece)) return finish(FinishReason::kCancelled);

      if (params.max_tokens > 0 && static_cast<int64_t>(result.tokens.size()) >= params.max_tokens) {
        release_tail();
        return finish(FinishReason::kLength);
      }
      if (n_ctx > 0 && pos >= n_ctx) {  // the sampled token has no position left to be decoded at
        release_tail();
        return finish(FinishReason::kLength);
      }
      if (cancel_requested(callbacks)) return finish(FinishReason::kCancelled);

      batch.clear();
      batch.add(seq, id, pos, true);
      try {
        ctx.decode(batch);
      } catch (const Error& e) {
        if (e.code() != ErrorCode::kContextFull) throw;
        release_tail();  // KV blocks ran out before n_ctx: as good as a full context
        return finish(FinishReason::kLength);
      }
      ++pos;
      logits = ctx.logits(0);
    }
  } catch (const Error& e) {
    result.error = e.what();
    return finish(e.code() == ErrorCode::kCancelled ? FinishReason::kCancelled : FinishReason::kError);
  } catch (const std::exception& e) {
    result.error = e.what();
    return finish(FinishReason::kError);
  }
}

}  // namespace edgellm
