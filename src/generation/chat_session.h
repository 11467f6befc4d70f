// A multi-turn chat over one sequence of a Context, reusing the KV cache between turns.
//
// Every turn renders the WHOLE conversation with the chat template (add_generation_prompt=true)
// and tokenizes it, exactly as a fresh start would. The KV cache records which token ids the
// sequence holds; Context::seq_reuse_prefix keeps the longest prefix of the new prompt ids that
// the sequence itself or the prefix cache (full blocks of any sequence, also after reset())
// holds, and only the rest is prefilled. Because the prompt is always the full
// rendering, the KV after prefill is identical to a from-scratch prefill of the conversation,
// whatever the template does with earlier turns (end-of-turn markers, re-tokenised answers,
// templates that rewrite old messages).
//
//   turn 1:  [BOS sys user1 gen-prompt] -> generated a1          KV = prompt1 + a1
//   turn 2:  render(sys user1 a1 user2) = prompt1 + a1' + ... ; a1' == a1 when a1 re-tokenises
//            the same, so typically reused = |prompt1 + a1|, prefilled = the end-of-turn marker +
//            user2 + the generation prompt.
//
// Speculative decoding (ChatSessionParams::speculation) changes how many forwards an answer
// takes, never its tokens. The drafter sees the whole conversation, not only the prefilled part:
//   n-gram:       a new NgramDrafter per turn, given the reused prefix first (earlier turns are
//                 what answers quote), then the prefilled tokens and the answer (generate()).
//   draft model:  one DraftModelDrafter for the session, restarted per turn: its own context
//                 keeps the KV of the prefix it shares with the last turn's sequence, so a turn
//                 re-reads only what changed (as the target's KV does).
//
// The sampler lives as long as the session: its RNG and penalty window carry over from turn to
// turn (each turn's new prompt tokens and answer enter the window), reset() restarts both.
//
// When the conversation no longer fits the context (leaving room for the answer), the oldest
// user/assistant turns are dropped (a leading system message is kept) and the turn reports how
// many; the KV then only reuses what precedes the first dropped message.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "chat/chat_template.h"
#include "core/json.h"
#include "generation/generate.h"
#include "engine/sampler.h"

namespace edgellm {

class Context;
class DraftModelDrafter;
class Tokenizer;

namespace gguf { class GgufFile; }

struct ChatSessionParams {
  int32_t seq_id = 0;               // the Context sequence this session owns
  int32_t max_tokens = 256;         // per answer; < 0: until end of turn or the context is full
  std::string system_prompt;        // empty: no system message
  std::vector<std::string> stop;    // extra stop strings (the template's end-of-turn text is added)
  Json extra_context = Json::object();  // more template variables (enable_thinking, ...)
  // Speculative decoding of the answers (off by default). kDraft: speculation.draft_model (same
  // vocabulary as the target, checked by the constructor) must outlive the session; its context
  // (the target's n_ctx, one sequence) is allocated by the constructor.
  SpeculationParams speculation;
};

// One turn's numbers. prompt_tokens = tokens_reused + tokens_prefilled.
struct ChatTurnStats {
  int32_t prompt_tokens = 0;      // tokens of the whole rendered conversation (with BOS)
  int32_t tokens_reused = 0;      // prefix that was already in the KV cache
  int32_t tokens_prefilled = 0;   // tokens run through prefill this turn
  int32_t generated_tokens = 0;   // sampled tokens of the answer (end-of-turn token excluded)
  int32_t turns_dropped = 0;      // oldest user/assistant turns removed to fit the context
  size_t chars_sanitized = 0;     // characters of user text replaced or removed by sanitize_user_text
  double prefill_seconds = 0;     // forward passes of the new prompt tokens
  double ttft_seconds = 0;        // turn start (render + tokenize + prefill) to the first sampled token
  double decode_seconds = 0;      // first to last sampled token
  int32_t decode_tokens = 0;      // tokens sampled after the first one
  SpeculationStats speculation;   // the answer's decode forwards, drafted and accepted tokens
  FinishReason finish_reason = FinishReason::kError;

  double decode_tokens_per_second() const { return decode_seconds > 0 ? decode_tokens / decode_seconds : 0.0; }
  Json to_json() const;
  // One human-readable line: "prompt 52 tokens (reused 40, prefilled 12), generated 20 tokens, ..."
  std::string to_line() const;
};

struct ChatReply {
  std::string text;              // the answer as streamed (appended to the conversation)
  std::vector<int32_t> tokens;   // its sampled ids (end-of-generation token excluded)
  std::string error;             // set when stats.finish_reason == kError
  ChatTurnStats stats;
};

class ChatSession {
 public:
  // `ctx`, `tokenizer` must outlive the session. The sequence params.seq_id is cleared.
  // Throws Error(kInvalidArgument) for a bad seq id or sampler parameters, and for speculation
  // kDraft without a draft model or with one of another vocabulary.
  ChatSession(Context& ctx, const Tokenizer& tokenizer, ChatTemplate chat_template,
              const SamplerParams& sampling, ChatSessionParams params);
  ~ChatSession();
  ChatSession(const ChatSession&) = delete;
  ChatSession& operator=(const ChatSession&) = delete;

  // Streams text pieces of the answer; return false to stop generating (finish reason cancelled).
  using TextCallback = std::function<bool(std::string_view text)>;

  // Sanitizes `user_text`, appends it as a user message and answers it. The answer is appended as
  // an assistant message unless generation failed (finish reason error: reply.error says why) or
  // was cancelled before any text; then the conversation stays as it was, without this message.
  // Throws Error(kContextFull) when even the system prompt plus this message do not fit the
  // context, Error(kInvalidArgument) when the template rejects the conversation.
  ChatReply send(std::string_view user_text, const TextCallback& on_text = {},
                 const std::atomic<bool>* cancel = nullptr);

  // Replaces the conversation (a JSON array of {role, content} objects, last one not from the
  // assistant) and answers it. User contents are sanitized; a system prompt from the params is
  // inserted when the array has no leading system message.
  ChatReply respond(const Json& messages, const TextCallback& on_text = {},
                    const std::atomic<bool>* cancel = nullptr);

  // Forgets the conversation (the system prompt stays) and releases the sequence's KV (its full
  // blocks stay in the prefix cache until the pool needs them).
  void reset();

  // Sessions (docs/sessions.md): the conversation (messages, turn count) and the sequence's KV
  // as bytes, and back. restore_session refuses a session of another model or KV type, and
  // truncated or corrupted bytes (Error kInvalidArgument / kInvalidFile, the session unchanged);
  // kContextFull when it does not fit this context (the conversation is then reset). The sampler
  // is not saved: greedy answers continue exactly, a sampled chat restarts its RNG from the seed.
  std::string save_session() const;
  void restore_session(std::string_view bytes);

  const Json& messages() const { return messages_; }
  // The token ids held in the sequence's KV cache, position by position.
  const std::vector<int32_t>& kv_tokens() const;
  const ChatTurnStats& last_stats() const { return last_stats_; }
  bool has_stats() const { return has_stats_; }
  int32_t n_turns() const { return n_turns_; }
  const std::vector<std::string>& stop_strings() const { return stop_; }

  // The prompt ids of a conversation: rendered with add_generation_prompt, tokenized with special
  // tokens parsed, BOS prepended when the vocabulary asks for it and the rendering does not
  // already start with it (templates that write bos_token themselves).
  std::vector<int32_t> conversation_tokens(const Json& messages) const;

 private:
  // Answers `conv` (the candidate conversation, last message to be answered); on success it
  // becomes messages_ with the answer appended.
  ChatReply complete_conversation(Json conv, size_t chars_sanitized, const TextCallback& on_text,
                                  const std::atomic<bool>* cancel);

  Context& ctx_;
  const Tokenizer& tok_;
  ChatTemplate template_;
  Sampler sampler_;
  ChatSessionParams params_;
  std::vector<std::string> stop_;
  Json messages_ = Json::array();
  ChatTurnStats last_stats_;
  bool has_stats_ = false;
  int32_t n_turns_ = 0;
  std::unique_ptr<DraftModelDrafter> draft_model_drafter_;  // speculation kDraft only
};

// Length of the longest common prefix of two id lists.
size_t common_prefix_length(const std::vector<int32_t>& a, const std::vector<int32_t>& b);

}  // namespace edgellm
