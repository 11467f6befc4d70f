#include "generation/chat_session.h"

#include "chat/chat_prompt.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <optional>
#include <utility>

#include "core/error.h"
#include "engine/context.h"
#include "generation/answer_room.h"
#include "generation/draft_model_drafter.h"
#include "generation/drafter.h"
#include "kv/kv_cache.h"
#include "kv/session_file.h"
#include "model/model.h"
#include "tokenizer/sanitize.h"
#include "tokenizer/tokenizer.h"

namespace edgellm {

namespace {

using Clock = std::chrono::steady_clock;

Json make_message(std::string_view role, std::string content) {
  Json m = Json::object();
  m.set("role", Json(role));
  m.set("content", Json(std::move(content)));
  return m;
}

const std::string& message_role(const Json& m) { return m.at("role").as_string(); }

// Removes the oldest user/assistant turn of `conv`: from the first non-system message up to the
// next user message. The last message (the one being answered) is never removed. Returns false
// when there is nothing left to drop.
bool drop_oldest_turn(Json& conv) {
  Json::Array& a = conv.as_array();
  size_t first = 0;
  while (first < a.size() && message_role(a[first]) == "system") ++first;
  if (a.empty() || first + 1 >= a.size()) return false;
  size_t end = first + 1;
  while (end + 1 < a.size() && message_role(a[end]) != "user") ++end;
  a.erase(a.begin() + static_cast<std::ptrdiff_t>(first), a.begin() + static_cast<std::ptrdiff_t>(end));
  return true;
}

}  // namespace

size_t common_prefix_length(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

Json ChatTurnStats::to_json() const {
  Json j = Json::object();
  j.set("prompt_tokens", static_cast<int>(prompt_tokens));
  j.set("tokens_reused", static_cast<int>(tokens_reused));
  j.set("tokens_prefilled", static_cast<int>(tokens_prefilled));
  j.set("generated_tokens", static_cast<int>(generated_tokens));
  j.set("turns_dropped", static_cast<int>(turns_dropped));
  j.set("chars_sanitized", static_cast<uint64_t>(chars_sanitized));
  j.set("prefill_s", prefill_seconds);
  j.set("ttft_s", ttft_seconds);
  j.set("decode_tokens", static_cast<int>(decode_tokens));
  j.set("decode_s", decode_seconds);
  j.set("decode_tok_per_s", decode_tokens_per_second());
  j.set("finish_reason", finish_reason_name(finish_reason));
  return j;
}

std::string ChatTurnStats::to_line() const {
  char buf[320];
  std::snprintf(buf, sizeof(buf),
                "prompt %d tokens (reused %d, prefilled %d), generated %d tokens, ttft %.1f ms, "
                "decode %.1f tok/s, finish %s",
                prompt_tokens, tokens_reused, tokens_prefilled, generated_tokens, ttft_seconds * 1e3,
                decode_tokens_per_second(), finish_reason_name(finish_reason));
  std::string line = buf;
  if (turns_dropped > 0) line += ", dropped " + std::to_string(turns_dropped) + " old turn(s)";
  return line;
}

ChatSession::ChatSession(Context& ctx, const Tokenizer& tokenizer, ChatTemplate chat_template,
                         const SamplerParams& sampling, ChatSessionParams params)
    : ctx_(ctx),
      tok_(tokenizer),
      template_(std::move(chat_template)),
      sampler_(sampling, ctx.model().hparams().n_vocab),
      params_(std::move(params)) {
  require(params_.seq_id >= 0 && params_.seq_id < ctx_.params().n_seq_max, ErrorCode::kInvalidArgument,
          "chat session: sequence id " + std::to_string(params_.seq_id) + " is outside the context's [0, " +
              std::to_string(ctx_.params().n_seq_max) + ")");
  require(tok_.n_vocab() == ctx_.model().hparams().n_vocab, ErrorCode::kInvalidArgument,
          "chat session: the tokenizer has " + std::to_string(tok_.n_vocab()) + " tokens but the model " +
              std::to_string(ctx_.model().hparams().n_vocab));
  require(params_.extra_context.is_object(), ErrorCode::kInvalidArgument,
          "chat session: extra_context must be a JSON object");
  stop_ = chat_stop_strings(template_, tok_, params_.stop);
  if (params_.speculation.mode == SpeculationMode::kDraft) {
    require(params_.speculation.draft_model != nullptr, ErrorCode::kInvalidArgument,
            "chat session: speculation mode 'draft' needs a draft model (SpeculationParams::draft_model)");
    draft_model_drafter_ = std::make_unique<DraftModelDrafter>(*params_.speculation.draft_model, ctx_);
  }
  reset();
}

ChatSession::~ChatSession() = default;

void ChatSession::reset() {
  messages_ = Json::array();
  if (!params_.system_prompt.empty()) messages_.push_back(make_message("system", params_.system_prompt));
  ctx_.seq_clear(params_.seq_id);  // its full blocks stay in the prefix cache
  sampler_.reset();
  last_stats_ = ChatTurnStats{};
  has_stats_ = false;
  n_turns_ = 0;
}

std::vector<int32_t> ChatSession::conversation_tokens(const Json& messages) const {
  return chat_prompt_tokens(template_, tok_, messages, params_.extra_context);
}

const std::vector<int32_t>& ChatSession::kv_tokens() const { return ctx_.kv_cache().seq_tokens(params_.seq_id); }

std::string ChatSession::save_session() const {
  Json payload = Json::object();
  payload.set("messages", messages_);
  payload.set("turns", n_turns_);
  return ctx_.save_session(params_.seq_id, payload.dump());
}

void ChatSession::restore_session(std::string_view bytes) {
  // Validate everything before anything changes: the KV part in a scratch parse, the payload here.
  const SessionView view = decode_session(bytes, ctx_.model_fingerprint(), ctx_.kv_cache().params());
  check_session_tokens(view, ctx_.model().hparams().n_vocab);
  Json payload;
  try {
    payload = Json::parse(view.payload);
  } catch (const std::exception& e) {
    throw Error(ErrorCode::kInvalidFile, std::string("session: the conversation in it is not valid JSON: ") + e.what());
  }
  const Json* msgs = payload.is_object() ? payload.find("messages") : nullptr;
  const Json* turns = payload.is_object() ? payload.find("turns") : nullptr;
  require(msgs != nullptr && msgs->is_array() && turns != nullptr && turns->is_number(), ErrorCode::kInvalidFile,
          "session: it holds no chat conversation (saved by another program?)");
  reset();
  ctx_.load_session(params_.seq_id, bytes);  // kContextFull leaves the sequence empty, the chat reset
  messages_ = *msgs;
  n_turns_ = static_cast<int32_t>(turns->as_number());
}

ChatReply ChatSession::send(std::string_view user_text, const TextCallback& on_text,
                            const std::atomic<bool>* cancel) {
  size_t changed = 0;
  std::string clean = sanitize_user_text(user_text, &changed);
  Json conv = messages_;
  conv.push_back(make_message("user", std::move(clean)));
  return complete_conversation(std::move(conv), changed, on_text, cancel);
}

ChatReply ChatSession::respond(const Json& messages, const TextCallback& on_text, const std::atomic<bool>* cancel) {
  require(messages.is_array() && messages.size() > 0, ErrorCode::kInvalidArgument,
          "chat messages: expected a non-empty JSON array of {role, content} objects");
  Json conv = Json::array();
  size_t changed = 0;
  const Json::Array& in = messages.as_array();
  for (size_t i = 0; i < in.size(); ++i) {
    const Json& m = in[i];
    const std::string where = "chat messages: message #" + std::to_string(i);
    require(m.is_object(), ErrorCode::kInvalidArgument, where + " is not an object");
    const Json* role = m.find("role");
    const Json* content = m.find("content");
    require(role != nullptr && role->is_string() && !role->as_string().empty(), ErrorCode::kInvalidArgument,
            where + " has no string \"role\"");
    require(content != nullptr && content->is_string(), ErrorCode::kInvalidArgument,
            where + " has no string \"content\"");
    if (i == 0 && role->as_string() != "system" && !params_.system_prompt.empty()) {
      conv.push_back(make_message("system", params_.system_prompt));
    }
    Json copy = m;
    if (role->as_string() == "user") {
      size_t n = 0;
      copy.set("content", Json(sanitize_user_text(content->as_string(), &n)));
      changed += n;
    }
    conv.push_back(std::move(copy));
  }
  require(message_role(conv.as_array().back()) != "assistant", ErrorCode::kInvalidArgument,
          "chat messages: the last message is from the assistant; there is nothing to answer");
  return complete_conversation(std::move(conv), changed, on_text, cancel);
}

ChatReply ChatSession::complete_conversation(Json conv, size_t chars_sanitized, const TextCallback& on_text,
                                             const std::atomic<bool>* cancel) {
  const Clock::time_point t_turn = Clock::now();
  ChatReply reply;
  ChatTurnStats& st = reply.stats;
  st.chars_sanitized = chars_sanitized;

  // Fit the conversation into the context with room for the answer: the requested length, but
  // at most half the context (a quarter when the length is unlimited). Dropping turns works on
  // a copy, so a turn that fails leaves the conversation as it was.
  const int64_t n_ctx = ctx_.params().n_ctx;
  const int64_t reserve = answer_room(params_.max_tokens, n_ctx);
  std::vector<int32_t> tokens = conversation_tokens(conv);
  while (n_ctx > 0 && static_cast<int64_t>(tokens.size()) + reserve > n_ctx && drop_oldest_turn(conv)) {
    ++st.turns_dropped;
    tokens = conversation_tokens(conv);
  }
  require(n_ctx <= 0 || static_cast<int64_t>(tokens.size()) < n_ctx, ErrorCode::kContextFull,
          "chat: the system prompt and the last message take " + std::to_string(tokens.size()) +
              " tokens, more than the context's " + std::to_string(n_ctx) + " positions leave room for");

  // Reuse the longest prefix the sequence or the prefix cache holds; at least one token must be
  // prefilled to get the logits of the last prompt position.
  const size_t keep = static_cast<size_t>(
      ctx_.seq_reuse_prefix(params_.seq_id, tokens, static_cast<int32_t>(tokens.size()) - 1));
  const std::vector<int32_t> fresh(tokens.begin() + static_cast<std::ptrdiff_t>(keep), tokens.end());

  GenerationParams gp;
  gp.seq_id = params_.seq_id;
  gp.max_tokens = params_.max_tokens;
  gp.stop = stop_;
  GenerationCallbacks cb;
  cb.cancel = cancel;
  // Speculation: the drafter is given the reused prefix here; generate() appends the prefilled
  // rest and the answer, so it sees the conversation as the KV holds it (see the file comment).
  gp.speculation = params_.speculation;
  std::unique_ptr<Drafter> turn_drafter;
  if (draft_model_drafter_) {
    draft_model_drafter_->restart();
    cb.drafter = draft_model_drafter_.get();
  } else if (params_.speculation.mode != SpeculationMode::kOff) {
    turn_drafter = make_drafter(params_.speculation, ctx_);
    cb.drafter = turn_drafter.get();
  }
  if (cb.drafter != nullptr) cb.drafter->append({tokens.data(), keep});
  if (on_text) {
    cb.on_token = [&on_text](int32_t, std::string_view text) { return text.empty() || on_text(text); };
  }
  const Clock::time_point t_gen = Clock::now();
  GenerationResult r = generate(ctx_, sampler_, &tok_, fresh, gp, cb);  // the KV records its ids

  st.prompt_tokens = static_cast<int32_t>(tokens.size());
  st.tokens_reused = static_cast<int32_t>(keep);
  st.tokens_prefilled = r.timings.prompt_tokens;
  st.generated_tokens = static_cast<int32_t>(r.tokens.size());
  st.prefill_seconds = r.timings.prefill_seconds;
  if (r.timings.ttft_seconds > 0) {
    st.ttft_seconds = std::chrono::duration<double>(t_gen - t_turn).count() + r.timings.ttft_seconds;
  }
  st.decode_tokens = r.timings.decode_tokens;
  st.decode_seconds = r.timings.decode_seconds;
  st.speculation = r.speculation;
  st.finish_reason = r.finish_reason;
  reply.text = std::move(r.text);
  reply.tokens = std::move(r.tokens);
  reply.error = std::move(r.error);
  last_stats_ = st;
  has_stats_ = true;
  // A failed turn, or one cancelled before it produced any text, leaves the conversation as it
  // was (the KV keeps what it holds; the next turn's prefix match sorts it out).
  const bool nothing = r.finish_reason == FinishReason::kCancelled && reply.text.empty();
  if (r.finish_reason != FinishReason::kError && !nothing) {
    conv.push_back(make_message("assistant", reply.text));
    messages_ = std::move(conv);
    ++n_turns_;
  }
  return reply;
}

}  // namespace edgellm
