// `edgellm chat`: a multi-turn conversation with a model through its chat template, reusing the
// KV cache between turns (generation/chat_session.h).
//   interactive:      lines from stdin (a terminal or a pipe); answers stream to stdout; the
//                     commands /reset, /stats and /exit; a "> " prompt only on a terminal.
//   non-interactive:  --messages FILE.json answers that conversation once (--json: one record).
//   --session FILE:   the interactive chat resumes the conversation and its KV cache saved in
//                     FILE (if it exists) and saves them there after every turn and /reset
//                     (docs/sessions.md); a session of another model or KV type, or a truncated
//                     or corrupted file, is refused (exit 1) and left as it is.
//   --spec ngram|draft: speculative decoding of the answers (-md FILE, --draft-max N, as `run`);
//                     the answers are the same, each turn's stats add drafted / accepted /
//                     tokens per forward (--stats, /stats, --json).
// Notes (template fallback, sanitized input, dropped turns) go to stderr so stdout carries only
// the answers and what the user asked for (/stats).
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include "chat/chat_prompt.h"
#include "cli_args.h"
#include "command.h"
#include "generation_options.h"
#include "interrupt.h"
#include "chat/chat_template.h"
#include "core/error.h"
#include "core/json.h"
#include "generation/chat_session.h"
#include "engine/context.h"
#include "generation/generate.h"
#include "kv/session_file.h"
#include "engine/sampler.h"
#include "kernels/tensor_type.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace edgellm::cli {
namespace {

struct ChatOptions {
  ModelOptions model;
  std::string system;
  std::string chat_template;
  std::string messages_file;
  std::string session_file;
  int32_t max_tokens = 256;
  ContextOptions context;
  int64_t seed = -1;
  std::vector<std::string> stop;
  bool json = false;
  bool stats = false;
  SamplerParams sampling;
  SpeculationOptions spec;
  SpeculationParams speculation;  // parsed from spec (draft_model set once it is loaded)
};

void write_out(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

// A turn's stats as /stats and --stats print them: the turn's line, then the speculation line
// when speculation is on.
std::string stats_text(const ChatTurnStats& st, const SpeculationParams& sp) {
  return "stats: " + st.to_line() + "\n" + speculation_stats_line(sp, st.speculation);
}

// stderr notes about a finished turn: what the user should know but is not the answer.
void report_turn_notes(const ChatReply& reply, const ChatOptions& o) {
  const ChatTurnStats& st = reply.stats;
  if (st.chars_sanitized > 0) {
    std::fprintf(stderr, "edgellm chat: note: %zu character(s) of the input were replaced or removed "
                         "(control characters or malformed UTF-8)\n", st.chars_sanitized);
  }
  if (st.turns_dropped > 0) {
    std::fprintf(stderr, "edgellm chat: note: the context is full; dropped the oldest %d turn(s) of the "
                         "conversation (the system prompt is kept)\n", st.turns_dropped);
  }
  if (st.finish_reason == FinishReason::kError) {
    std::fprintf(stderr, "edgellm chat: error: generation failed after %d tokens: %s\n", st.generated_tokens,
                 reply.error.c_str());
  }
  if (o.stats) std::fputs(stats_text(st, o.speculation).c_str(), stderr);
}

// Runs one turn with Ctrl-C cancelling only that turn (the chat goes on; a second Ctrl-C during
// the turn kills). At the input prompt no handler is installed, so Ctrl-C exits.
template <typename Fn>
ChatReply guarded_turn(Fn&& turn) {
  const SigintScope sigint;
  return turn(interrupt_flag());
}

int run_messages(ChatSession& session, const ChatOptions& o) {
  const Json messages = Json::parse(read_text_file(o.messages_file, "messages file"));
  ChatSession::TextCallback stream;
  if (!o.json) stream = [](std::string_view text) {
    write_out(text);
    return true;
  };
  const ChatReply reply =
      guarded_turn([&](const std::atomic<bool>* cancel) { return session.respond(messages, stream, cancel); });
  if (o.json) {
    Json rec = Json::object();
    rec.set("answer", reply.text);
    Json stats = reply.stats.to_json();
    if (o.speculation.mode != SpeculationMode::kOff) {
      stats.set("speculation", speculation_stats_json(o.speculation, reply.stats.speculation));
    }
    rec.set("stats", std::move(stats));
    rec.set("error", reply.error.empty() ? Json(nullptr) : Json(reply.error));
    write_out(rec.dump() + "\n");
  } else {
    write_out("\n");  // like the interactive mode: every answer ends with one newline of its own
  }
  report_turn_notes(reply, o);
  if (reply.stats.finish_reason == FinishReason::kError) return 1;
  if (reply.stats.finish_reason == FinishReason::kCancelled && interrupt_flag()->load()) return 130;
  return 0;
}

// One input message: a line, or several when lines end with a backslash.
bool read_message(bool tty, std::string* out) {
  out->clear();
  std::string line;
  for (bool first = true;; first = false) {
    if (tty) write_out(first ? "> " : "... ");
    if (!std::getline(std::cin, line)) {
      if (tty && first) write_out("\n");  // Ctrl-D: leave the shell prompt on a line of its own
      return !first;
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty() && line.back() == '\\') {
      line.pop_back();
      *out += line;
      *out += '\n';
      continue;
    }
    *out += line;
    return true;
  }
}

void save_session(const ChatSession& session, const ChatOptions& o) {
  if (o.session_file.empty()) return;
  try {
    write_session_file(o.session_file, session.save_session());
  } catch (const Error& e) {
    std::fprintf(stderr, "edgellm chat: error: the session was not saved: %s\n", e.what());
  }
}

int run_interactive(ChatSession& session, const ChatOptions& o, const std::string& model_path,
                    const std::string& template_desc) {
  const bool tty = isatty(STDIN_FILENO) != 0;
  if (tty) {
    std::fprintf(stderr, "chatting with %s using the %s chat template\n"
                         "commands: /reset (new conversation), /stats (last turn), /exit; "
                         "end a line with \\ to continue it; Ctrl-C stops an answer\n",
                 model_path.c_str(), template_desc.c_str());
  }
  std::string input;
  while (read_message(tty, &input)) {
    if (input == "/exit" || input == "/quit") break;
    if (input == "/reset") {
      session.reset();
      save_session(session, o);
      std::fprintf(stderr, "edgellm chat: conversation cleared\n");
      continue;
    }
    if (input == "/stats") {
      write_out(session.has_stats() ? stats_text(session.last_stats(), o.speculation) : "stats: no turn yet\n");
      continue;
    }
    if (input.empty()) continue;
    if (input.front() == '/' && input.find_first_of(" \n") == std::string::npos) {
      std::fprintf(stderr, "edgellm chat: unknown command '%s' (commands: /reset, /stats, /exit)\n", input.c_str());
      continue;
    }
    try {
      const ChatReply reply = guarded_turn([&](const std::atomic<bool>* cancel) {
        return session.send(input, [](std::string_view text) {
          write_out(text);
          return true;
        }, cancel);
      });
      write_out("\n");
      report_turn_notes(reply, o);
      save_session(session, o);
    } catch (const Error& e) {
      // A turn that cannot run (message longer than the context, template error) leaves the
      // conversation unchanged; the chat goes on.
      std::fprintf(stderr, "edgellm chat: error (%s): %s\n", error_code_name(e.code()), e.what());
    }
  }
  return 0;
}

int chat_command(const std::vector<std::string>& args) {
  ChatOptions o;
  SamplerParams& s = o.sampling;
  ArgParser ap("chat", "-m MODEL [-s SYSTEM] [--messages FILE.json [--json]] [options]");
  add_model_options(ap, &o.model);
  ap.add_string("-s,--system", &o.system, "TEXT", "system prompt (kept when old turns are dropped)");
  ap.add_string("--chat-template", &o.chat_template, "NAME|FILE",
                "built-in template name or a Jinja / tokenizer_config.json file (default: the model's)");
  ap.add_string("--messages", &o.messages_file, "FILE",
                "answer the conversation in FILE (JSON array of {role, content}) and exit");
  ap.add_string("--session", &o.session_file, "FILE",
                "resume the conversation and KV cache saved in FILE (if it exists); save them there after every turn");
  ap.add_flag(shared_option("json"), &o.json, "with --messages: one record {answer, stats} instead of the text");
  ap.add_flag("--stats", &o.stats, "print each turn's token counts and timings to stderr");
  ap.add_int("-n,--max-tokens", &o.max_tokens, "N", "tokens per answer; -1 = until end of turn or full context (default 256)", -1);
  add_context_options(ap, &o.context);
  add_kv_type_options(ap, &o.context.kv);
  add_sampling_options(ap, &s, &o.seed);
  ap.add_strings("--stop", &o.stop, "STR", "also end an answer when STR is generated (repeatable)");
  add_speculation_options(ap, &o.spec);
  if (!ap.parse(args)) return 0;

  require(!o.model.model.empty(), ErrorCode::kInvalidArgument, "no model given (-m MODEL)");
  require(!o.json || !o.messages_file.empty(), ErrorCode::kInvalidArgument,
          "--json needs --messages FILE (the interactive chat streams text)");
  require(o.session_file.empty() || o.messages_file.empty(), ErrorCode::kInvalidArgument,
          "--session is for the interactive chat, not --messages");
  const ContextParams cp = context_params(o.context);  // validates --kv-type before the model loads
  o.speculation = speculation_params(o.spec);          // and --spec / -md
  resolve_seed(&o.seed, &s);

  const std::string model_path = resolve_model_path(o.model);
  std::unique_ptr<Model> model = Model::load(model_path, model_load_params(o.context));
  std::unique_ptr<Tokenizer> tokenizer = Tokenizer::from_gguf(model->gguf());
  std::string template_desc;
  std::string warning;
  ChatTemplate chat_template =
      select_chat_template(model->gguf(), *tokenizer, o.chat_template, &template_desc, &warning);
  if (!warning.empty()) std::fprintf(stderr, "edgellm chat: warning: %s\n", warning.c_str());

  Context ctx(*model, cp);
  warn_past_training_context("chat", *model, ctx.params().n_ctx);
  // --spec draft: the draft model outlives the session (declared before it).
  const std::unique_ptr<Model> draft_model = load_draft_model(o.spec, *model, model_load_params(o.context));
  o.speculation.draft_model = draft_model.get();

  ChatSessionParams sp;
  sp.max_tokens = o.max_tokens;
  sp.system_prompt = o.system;
  sp.stop = o.stop;
  sp.speculation = o.speculation;
  ChatSession session(ctx, *tokenizer, std::move(chat_template), s, std::move(sp));
  if (!o.session_file.empty() && access(o.session_file.c_str(), F_OK) == 0) {
    session.restore_session(read_session_file(o.session_file));  // a refusal ends the command (exit 1)
    std::fprintf(stderr, "edgellm chat: resumed %d turn(s) from %s (%zu KV positions)\n", session.n_turns(),
                 o.session_file.c_str(), session.kv_tokens().size());
  }
  if (!o.messages_file.empty()) return run_messages(session, o);
  return run_interactive(session, o, model_path, template_desc);
}

const CommandRegistration kChatRegistration("chat", "multi-turn chat through the model's chat template (reuses the KV cache)",
                                        chat_command);

}  // namespace
}  // namespace edgellm::cli
