// ChatSession on the real tiny models (stories260K, tiny-zh-poems; neither GGUF has a chat
// template, so the built-in chatml fallback is used): multi-turn KV reuse must prefill only the
// tokens that are not already cached, and the answers must be exactly what a fresh Context that
// prefills the whole conversation from scratch produces (greedy), which proves the reused KV is
// right. The expected token lists are computed here independently: the test renders the
// conversation with its own ChatTemplate, tokenizes it and finds the common prefix itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "chat/chat_prompt.h"
#include "chat/chat_template.h"
#include "core/error.h"
#include "core/json.h"
#include "generation/chat_session.h"
#include "engine/context.h"
#include "generation/generate.h"
#include "engine/sampler.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "model/model.h"
#include "support/test_env.h"
#include "tokenizer/tokenizer.h"

namespace edgellm {
namespace {

// Answers are kept short so three turns (chatml markers cost ~10 tokens each with these
// character-level vocabularies) stay far from the 512-position contexts and the test stays fast.
constexpr int32_t kAnswerTokens = 24;

struct ModelCase {
  const char* file;
  std::vector<std::string> turns;  // user messages
  const char* system;
};

// gtest prints parameters in failure messages; the file name says which model failed.
void PrintTo(const ModelCase& c, std::ostream* os) { *os << c.file; }

std::vector<ModelCase> model_cases() {
  return {
      {"stories260K.gguf", {"Once upon a time there was a cat.", "What did the cat do?", "Tell me more."},
       "You tell short stories."},
      {"tiny-zh-poems.gguf", {"静夜思 李白", "春晓 孟浩然", "再来一首"}, "你是诗人。"},
  };
}

Json message(const std::string& role, const std::string& content) {
  Json m = Json::object();
  m.set("role", role);
  m.set("content", content);
  return m;
}

SamplerParams greedy_params() {
  SamplerParams p;
  p.temperature = 0.0f;
  p.repeat_penalty = 1.0f;
  return p;
}

// The naive reference of the prefix search.
size_t naive_common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  size_t n = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (a[i] != b[i]) break;
    ++n;
  }
  return n;
}

class ChatSessionTest : public ::testing::TestWithParam<ModelCase> {
 protected:
  void SetUp() override {
    model_ = Model::load(test::shared_model(GetParam().file));
    tok_ = Tokenizer::from_gguf(model_->gguf());
    bos_text_ = tok_->token_text(tok_->bos());
    eos_text_ = tok_->token_text(tok_->eos());
  }

  // F32 KV: the fresh-context comparison must not depend on F16 rounding of cached values that
  // were written by a different batch split. One thread keeps the test cheap on a shared machine.
  std::unique_ptr<Context> make_context(int32_t n_ctx = 512) const {
    ContextParams cp;
    cp.n_ctx = n_ctx;
    cp.n_threads = 1;
    cp.kv_type = TensorType::F32;
    return std::make_unique<Context>(*model_, cp);
  }

  ChatTemplate chatml() const {
    return ChatTemplate::from_source(*find_builtin_source("chatml"), bos_text_, eos_text_);
  }

  std::unique_ptr<ChatSession> make_session(Context& ctx, const std::string& system = "",
                                            int32_t max_tokens = kAnswerTokens) const {
    ChatSessionParams sp;
    sp.max_tokens = max_tokens;
    sp.system_prompt = system;
    return std::make_unique<ChatSession>(ctx, *tok_, chatml(), greedy_params(), sp);
  }

  // Independent rendering + tokenization of a conversation (chatml never writes BOS itself, so the
  // vocabulary's BOS is simply prepended when the vocabulary asks for it).
  std::vector<int32_t> expected_tokens(const Json& conv) const {
    const std::string text = chatml().render(conv, true);
    std::vector<int32_t> ids = tok_->encode(text, false, true);
    if (tok_->add_bos()) ids.insert(ids.begin(), tok_->bos());
    return ids;
  }

  // Greedy answer of a fresh context that prefills `prompt` from position 0.
  GenerationResult fresh_answer(const std::vector<int32_t>& prompt, const std::vector<std::string>& stop,
                                int32_t max_tokens = kAnswerTokens) const {
    auto ctx = make_context();
    Sampler sampler(greedy_params(), model_->hparams().n_vocab);
    GenerationParams gp;
    gp.max_tokens = max_tokens;
    gp.stop = stop;
    return generate(*ctx, sampler, tok_.get(), prompt, gp);
  }

  std::unique_ptr<Model> model_;
  std::unique_ptr<Tokenizer> tok_;
  std::string bos_text_;
  std::string eos_text_;
};

TEST_P(ChatSessionTest, ThreeTurnsPrefillOnlyTheNewTokensAndMatchAFreshContext) {
  auto ctx = make_context();
  auto session = make_session(*ctx, GetParam().system);
  Json conv = Json::array();
  conv.push_back(message("system", GetParam().system));

  int32_t previous_prompt_tokens = 0;
  for (size_t turn = 0; turn < GetParam().turns.size(); ++turn) {
    SCOPED_TRACE("turn " + std::to_string(turn + 1));
    const std::vector<int32_t> kv_before = session->kv_tokens();
    ASSERT_EQ(static_cast<int32_t>(kv_before.size()), ctx->seq_length(0));
    const int64_t processed_before = ctx->stats().n_tokens_processed;

    conv.push_back(message("user", GetParam().turns[turn]));
    const std::vector<int32_t> full = expected_tokens(conv);
    const ChatReply reply = session->send(GetParam().turns[turn]);
    ASSERT_NE(reply.stats.finish_reason, FinishReason::kError) << reply.error;
    const ChatTurnStats& st = reply.stats;

    // The counts, against the independently computed conversation and prefix.
    const size_t expected_reuse = std::min(naive_common_prefix(kv_before, full), full.size() - 1);
    EXPECT_EQ(st.prompt_tokens, static_cast<int32_t>(full.size()));
    EXPECT_EQ(st.tokens_reused, static_cast<int32_t>(expected_reuse));
    EXPECT_EQ(st.tokens_prefilled, st.prompt_tokens - st.tokens_reused);
    EXPECT_EQ(st.generated_tokens, static_cast<int32_t>(reply.tokens.size()));
    EXPECT_EQ(st.turns_dropped, 0);
    if (turn == 0) {
      EXPECT_EQ(st.tokens_reused, 0);
    } else {
      // The whole previous prompt is a text prefix of this one and is reused (at worst its last
      // token re-merges with the answer's first characters).
      EXPECT_GE(st.tokens_reused, previous_prompt_tokens - 1);
      // With these messages every greedy answer re-tokenizes to exactly the sampled ids, so the
      // whole previous KV (prompt + answer) is a prefix of the new prompt and all of it is reused.
      EXPECT_EQ(full.size() > kv_before.size() &&
                    std::equal(kv_before.begin(), kv_before.end(), full.begin()),
                true);
      EXPECT_EQ(st.tokens_reused, static_cast<int32_t>(kv_before.size()));
    }
    previous_prompt_tokens = st.prompt_tokens;

    // What the context really ran: the new prompt tokens plus one forward pass per generated
    // token that entered the KV (the last sampled token is not decoded when -n ends the answer).
    const int32_t held = ctx->seq_length(0);
    ASSERT_GE(held, st.prompt_tokens);
    EXPECT_EQ(ctx->stats().n_tokens_processed - processed_before,
              static_cast<int64_t>(st.tokens_prefilled) + (held - st.prompt_tokens));
    // The session's record of the KV: the full prompt, then the answer's ids.
    std::vector<int32_t> expected_kv = full;
    expected_kv.insert(expected_kv.end(), reply.tokens.begin(), reply.tokens.end());
    expected_kv.resize(static_cast<size_t>(held));
    EXPECT_EQ(session->kv_tokens(), expected_kv);

    // Reused KV == from-scratch KV: the greedy answers are identical.
    const GenerationResult fresh = fresh_answer(full, session->stop_strings());
    EXPECT_EQ(reply.tokens, fresh.tokens);
    EXPECT_EQ(reply.text, fresh.text);
    EXPECT_EQ(reply.stats.finish_reason, fresh.finish_reason);

    conv.push_back(message("assistant", reply.text));
    EXPECT_EQ(session->messages(), conv);
  }
  EXPECT_EQ(session->n_turns(), 3);
}

TEST_P(ChatSessionTest, ResetForgetsTheConversationTheCacheKeepsItsFullBlocks) {
  auto ctx = make_context();
  auto session = make_session(*ctx, GetParam().system);
  const ChatReply first = session->send(GetParam().turns[0]);
  (void)session->send(GetParam().turns[1]);
  ASSERT_GT(ctx->seq_length(0), 0);

  session->reset();
  EXPECT_EQ(ctx->seq_length(0), 0);
  EXPECT_TRUE(session->kv_tokens().empty());
  EXPECT_FALSE(session->has_stats());
  ASSERT_EQ(session->messages().size(), 1u);
  EXPECT_EQ(session->messages().at(size_t{0}).at("role").as_string(), "system");

  // After the reset the same first message gives the same answer. The sequence holds nothing, so
  // what is reused comes from the prefix cache: the full blocks of the first prompt (its last
  // block also held answer tokens), leaving at least one token to prefill.
  const ChatReply again = session->send(GetParam().turns[0]);
  const int32_t T = ctx->params().kv_block_tokens;
  const int32_t n = first.stats.prompt_tokens;
  EXPECT_EQ(again.stats.tokens_reused, std::min(n / T * T, n - 1));
  EXPECT_EQ(again.stats.tokens_prefilled, again.stats.prompt_tokens - again.stats.tokens_reused);
  EXPECT_EQ(again.tokens, first.tokens);
}

// A small context forces old turns out: the session must keep answering, keep the system prompt,
// say how many turns it dropped, and still answer exactly like a fresh prefill of what is left.
TEST_P(ChatSessionTest, FullContextDropsTheOldestTurnsKeepingTheSystemPrompt) {
  constexpr int32_t kSmallCtx = 160;  // room for about two turns with a 16-token answer
  constexpr int32_t kShortAnswer = 16;
  auto ctx = make_context(kSmallCtx);
  auto session = make_session(*ctx, GetParam().system, kShortAnswer);
  int32_t total_dropped = 0;
  for (int turn = 0; turn < 6; ++turn) {
    SCOPED_TRACE("turn " + std::to_string(turn + 1));
    const std::string& text = GetParam().turns[static_cast<size_t>(turn) % GetParam().turns.size()];
    const ChatReply reply = session->send(text);
    ASSERT_NE(reply.stats.finish_reason, FinishReason::kError) << reply.error;
    total_dropped += reply.stats.turns_dropped;
    EXPECT_LE(reply.stats.prompt_tokens + kShortAnswer, kSmallCtx);

    const Json& msgs = session->messages();
    ASSERT_GE(msgs.size(), 3u);
    EXPECT_EQ(msgs.at(size_t{0}).at("role").as_string(), "system");
    EXPECT_EQ(msgs.at(size_t{0}).at("content").as_string(), GetParam().system);
    EXPECT_EQ(msgs.at(size_t{1}).at("role").as_string(), "user");  // turns are dropped whole

    Json asked = Json::array();
    for (size_t i = 0; i + 1 < msgs.size(); ++i) asked.push_back(msgs.at(i));
    const std::vector<int32_t> full = expected_tokens(asked);
    EXPECT_EQ(reply.stats.prompt_tokens, static_cast<int32_t>(full.size()));
    const GenerationResult fresh = fresh_answer(full, session->stop_strings(), kShortAnswer);
    EXPECT_EQ(reply.tokens, fresh.tokens);
  }
  EXPECT_GT(total_dropped, 0) << "the small context never filled; the test does not test dropping";
}

TEST_P(ChatSessionTest, AMessageLongerThanTheContextFailsAndLeavesTheConversation) {
  auto ctx = make_context(64);
  auto session = make_session(*ctx, "", 8);
  const ChatReply ok = session->send(GetParam().turns[0]);
  ASSERT_NE(ok.stats.finish_reason, FinishReason::kError);
  const Json before = session->messages();
  const std::vector<int32_t> kv_before = session->kv_tokens();
  std::string huge;
  for (int i = 0; i < 40; ++i) huge += GetParam().turns[1];
  try {
    (void)session->send(huge);
    FAIL() << "expected kContextFull";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kContextFull);
    EXPECT_NE(std::string(e.what()).find("tokens"), std::string::npos) << e.what();
  }
  EXPECT_EQ(session->messages(), before);
  EXPECT_EQ(session->kv_tokens(), kv_before);
  EXPECT_EQ(ctx->seq_length(0), static_cast<int32_t>(kv_before.size()));
}

TEST_P(ChatSessionTest, UserTextIsSanitizedAndCounted) {
  auto ctx = make_context();
  auto session = make_session(*ctx, "", 4);
  // NUL, a C0 control and DEL are removed; a lone continuation byte becomes U+FFFD.
  const std::string dirty = std::string("ab") + '\0' + "c\x01" "d\x7f" "e\x80";
  const ChatReply reply = session->send(dirty);
  EXPECT_EQ(reply.stats.chars_sanitized, 4u);
  const Json& msgs = session->messages();
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_EQ(msgs.at(size_t{0}).at("content").as_string(), "abcde\xEF\xBF\xBD");
}

TEST_P(ChatSessionTest, CancelledTurnsKeepWhatWasSaidAndTheCacheConsistent) {
  auto ctx = make_context();
  auto session = make_session(*ctx);
  // Cancelled before anything was generated: the conversation is unchanged.
  const std::atomic<bool> cancelled{true};
  const ChatReply none = session->send(GetParam().turns[0], {}, &cancelled);
  EXPECT_EQ(none.stats.finish_reason, FinishReason::kCancelled);
  EXPECT_TRUE(none.text.empty());
  EXPECT_EQ(session->messages().size(), 0u);
  EXPECT_EQ(static_cast<int32_t>(session->kv_tokens().size()), ctx->seq_length(0));

  // Stopped by the text callback after the first piece: the partial answer is kept.
  std::string streamed;
  const ChatReply part = session->send(GetParam().turns[0], [&](std::string_view text) {
    streamed += text;
    return false;
  });
  EXPECT_EQ(part.stats.finish_reason, FinishReason::kCancelled);
  EXPECT_FALSE(part.text.empty());
  EXPECT_EQ(part.text, streamed);
  ASSERT_EQ(session->messages().size(), 2u);
  EXPECT_EQ(session->messages().at(size_t{1}).at("content").as_string(), part.text);
  EXPECT_EQ(static_cast<int32_t>(session->kv_tokens().size()), ctx->seq_length(0));

  // The next turn still answers exactly like a fresh prefill of the conversation.
  Json conv = session->messages();
  conv.push_back(message("user", GetParam().turns[1]));
  const ChatReply next = session->send(GetParam().turns[1]);
  EXPECT_GT(next.stats.tokens_reused, 0);
  EXPECT_EQ(next.tokens, fresh_answer(expected_tokens(conv), session->stop_strings()).tokens);
}

TEST_P(ChatSessionTest, RespondAnswersAGivenConversationLikeAFreshContext) {
  auto ctx = make_context();
  auto session = make_session(*ctx, GetParam().system);
  Json conv = Json::array();
  conv.push_back(message("user", GetParam().turns[0]));
  conv.push_back(message("assistant", GetParam().turns[1]));
  conv.push_back(message("user", GetParam().turns[2]));
  const ChatReply reply = session->respond(conv);
  ASSERT_NE(reply.stats.finish_reason, FinishReason::kError) << reply.error;

  Json with_system = Json::array();
  with_system.push_back(message("system", GetParam().system));  // inserted from the params
  for (const Json& m : conv.as_array()) with_system.push_back(m);
  const std::vector<int32_t> full = expected_tokens(with_system);
  EXPECT_EQ(reply.stats.prompt_tokens, static_cast<int32_t>(full.size()));
  EXPECT_EQ(reply.tokens, fresh_answer(full, session->stop_strings()).tokens);
  EXPECT_EQ(session->messages().size(), 5u);
}

TEST_P(ChatSessionTest, RespondRejectsMalformedConversations) {
  auto ctx = make_context();
  auto session = make_session(*ctx);
  auto expect_invalid = [&](const char* json, const char* needle) {
    try {
      (void)session->respond(Json::parse(json));
      ADD_FAILURE() << "accepted " << json;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << json;
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_invalid("[]", "non-empty");
  expect_invalid(R"({"role":"user","content":"x"})", "array");
  expect_invalid(R"([{"role":"user"}])", "#0");
  expect_invalid(R"([{"role":"user","content":"x"},{"content":"y"}])", "#1");
  expect_invalid(R"([{"role":"user","content":"x"},{"role":"assistant","content":"y"}])", "assistant");
  EXPECT_EQ(session->messages().size(), 0u);
  EXPECT_EQ(ctx->seq_length(0), 0);
}

TEST_P(ChatSessionTest, FallbackTemplateAndStopStrings) {
  std::string desc;
  std::string warning;
  const ChatTemplate t = select_chat_template(model_->gguf(), *tok_, "", &desc, &warning);
  EXPECT_EQ(detect_builtin_name(t.source()), "chatml");
  EXPECT_NE(warning.find("no chat template"), std::string::npos) << warning;
  EXPECT_NE(desc.find("chatml"), std::string::npos) << desc;
  EXPECT_EQ(t.bos_token(), bos_text_);

  const ChatTemplate over = select_chat_template(model_->gguf(), *tok_, "llama3", &desc, &warning);
  EXPECT_EQ(detect_builtin_name(over.source()), "llama3");
  EXPECT_TRUE(warning.empty()) << warning;

  // These vocabularies have no <|im_end|> token, so the marker must be a text stop string; their
  // </s> is an end-of-generation token and needs none.
  auto ctx = make_context();
  auto session = make_session(*ctx);
  const auto& stops = session->stop_strings();
  EXPECT_NE(std::find(stops.begin(), stops.end(), "<|im_end|>"), stops.end());
  EXPECT_EQ(std::find(stops.begin(), stops.end(), eos_text_), stops.end());
}

// A template that writes bos_token itself must not get a second BOS (llama.cpp's rule).
TEST_P(ChatSessionTest, TemplateWrittenBosIsNotDoubled) {
  ASSERT_TRUE(tok_->add_bos());
  auto ctx = make_context();
  ChatSessionParams sp;
  ChatSession with_bos(*ctx, *tok_,
                       ChatTemplate::from_source("{{ bos_token }}{% for m in messages %}{{ m['content'] }}\n{% endfor %}",
                                                 bos_text_, eos_text_),
                       greedy_params(), sp);
  Json conv = Json::array();
  conv.push_back(message("user", GetParam().turns[0]));
  const std::vector<int32_t> ids = with_bos.conversation_tokens(conv);
  ASSERT_GE(ids.size(), 2u);
  EXPECT_EQ(ids[0], tok_->bos());
  EXPECT_NE(ids[1], tok_->bos());
  EXPECT_EQ(std::count(ids.begin(), ids.end(), tok_->bos()), 1);
  // And one without it gets the vocabulary's BOS.
  const std::vector<int32_t> plain = make_session(*ctx)->conversation_tokens(conv);
  EXPECT_EQ(plain.front(), tok_->bos());
  EXPECT_EQ(std::count(plain.begin(), plain.end(), tok_->bos()), 1);
}

INSTANTIATE_TEST_SUITE_P(Models, ChatSessionTest, ::testing::ValuesIn(model_cases()),
                         [](const ::testing::TestParamInfo<ModelCase>& info) {
                           std::string name = info.param.file;
                           name = name.substr(0, name.find('.'));
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// A GGUF that carries tokenizer.chat_template: that template is used (no warning), and
// --chat-template still overrides it. The file is stories260K's metadata plus the key.
TEST(ChatSessionTemplates, TheModelsOwnTemplateWinsOverTheFallback) {
  const auto src = gguf::GgufFile::open(test::shared_model("stories260K.gguf"));
  const auto tok = Tokenizer::from_gguf(*src);
  gguf::GgufWriter w;
  w.copy_metadata_from(*src);
  const std::string own = "{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n"
                          "{{ m['content'] }}<|eot_id|>{% endfor %}";
  w.set_string("tokenizer.chat_template", own);
  const std::vector<uint8_t> bytes = w.write_to_bytes();
  const auto with_template = gguf::GgufFile::from_bytes(bytes.data(), bytes.size());

  std::string desc;
  std::string warning = "unset";
  const ChatTemplate t = select_chat_template(*with_template, *tok, "", &desc, &warning);
  EXPECT_EQ(t.source(), own);
  EXPECT_TRUE(warning.empty()) << warning;
  EXPECT_NE(desc.find("tokenizer.chat_template"), std::string::npos) << desc;
  EXPECT_NE(desc.find("llama3"), std::string::npos) << desc;

  const ChatTemplate over = select_chat_template(*with_template, *tok, "chatml", &desc, &warning);
  EXPECT_EQ(over.source(), *find_builtin_source("chatml"));
  EXPECT_NE(desc.find("chatml"), std::string::npos) << desc;

  try {
    (void)select_chat_template(*with_template, *tok, "/no/such/template.jinja", &desc, &warning);
    ADD_FAILURE() << "a missing template file was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/no/such/template.jinja"), std::string::npos) << e.what();
  }
}

TEST(ChatSessionHelpers, CommonPrefixLength) {
  EXPECT_EQ(common_prefix_length({}, {1, 2}), 0u);
  EXPECT_EQ(common_prefix_length({1, 2, 3}, {1, 2, 4}), 2u);
  EXPECT_EQ(common_prefix_length({1, 2}, {1, 2, 3}), 2u);
  EXPECT_EQ(common_prefix_length({5}, {6}), 0u);
}

}  // namespace
}  // namespace edgellm
