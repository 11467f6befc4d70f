// `edgellm chat`: a multi-turn conversation with a model through its chat template, reusing the
// KV cache between turns (engine/chat_session.h).
//   interactive:      lines from stdin (a terminal or a pipe); answers stream to stdout; the
//                     commands /reset, /stats and /exit; a "> " prompt only on a terminal.
//   non-interactive:  --messages FILE.json answers that conversation once (--json: one record).
// Notes (template fallback, sanitized input, dropped turns) go to stderr so stdout carries only
// the answers and what the user asked for (/stats).
#include <atomic>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "cli_args.h"
#include "command.h"
#include "chat/chat_template.h"
#include "core/error.h"
#include "core/json.h"
#include "engine/chat_session.h"
#include "engine/context.h"
#include "engine/generator.h"
#include "engine/sampler.h"
#include "kernels/tensor_type.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace edgellm::cli {
namespace {

struct ChatOptions {
  std::string model;
  std::string system;
  std::string chat_template;
  std::string messages_file;
  int32_t max_tokens = 256;
  int32_t threads = 0;
  int32_t threads_batch = 0;
  int32_t ctx_size = 0;
  int32_t batch_size = 512;
  int64_t seed = -1;
  std::vector<std::string> stop;
  std::string kv_type = "f16";
  bool json = false;
  bool stats = false;
  SamplerParams sampling;
};

// Set by SIGINT while an answer is generated: the first Ctrl-C ends that answer (the chat goes
// on), a second one falls back to the default handler. At the input prompt Ctrl-C exits.
std::atomic<bool> g_interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the SIGINT handler needs a lock-free flag");

extern "C" void on_chat_sigint(int) {
  g_interrupted.store(true);
  std::signal(SIGINT, SIG_DFL);
}

std::string read_text_file(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  require(static_cast<bool>(in), ErrorCode::kIo, std::string("cannot open ") + what + " '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  require(!in.bad(), ErrorCode::kIo, std::string("cannot read ") + what + " '" + path + "'");
  return ss.str();
}

TensorType parse_kv_type(const std::string& name) {
  if (name == "f16" || name == "F16") return TensorType::F16;
  if (name == "f32" || name == "F32") return TensorType::F32;
  if (name == "q8_0" || name == "Q8_0") return TensorType::Q8_0;
  throw Error(ErrorCode::kInvalidArgument, "--kv-type: '" + name + "' is not one of f16, f32, q8_0");
}

void write_out(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

// stderr notes about a finished turn: what the user should know but is not the answer.
void report_turn_notes(const ChatReply& reply, bool print_stats) {
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
  if (print_stats) std::fprintf(stderr, "stats: %s\n", st.to_line().c_str());
}

// Runs one turn with Ctrl-C cancelling only that turn.
template <typename Fn>
ChatReply guarded_turn(Fn&& turn) {
  g_interrupted.store(false);
  std::signal(SIGINT, on_chat_sigint);
  try {
    ChatReply reply = turn(&g_interrupted);
    std::signal(SIGINT, SIG_DFL);
    return reply;
  } catch (...) {
    std::signal(SIGINT, SIG_DFL);
    throw;
  }
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
    rec.set("stats", reply.stats.to_json());
    rec.set("error", reply.error.empty() ? Json(nullptr) : Json(reply.error));
    write_out(rec.dump() + "\n");
  } else {
    write_out("\n");  // like the interactive mode: every answer ends with one newline of its own
  }
  report_turn_notes(reply, o.stats);
  if (reply.stats.finish_reason == FinishReason::kError) return 1;
  if (reply.stats.finish_reason == FinishReason::kCancelled && g_interrupted.load()) return 130;
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

int run_interactive(ChatSession& session, const ChatOptions& o, const std::string& template_desc) {
  const bool tty = isatty(STDIN_FILENO) != 0;
  if (tty) {
    std::fprintf(stderr, "chatting with %s using the %s chat template\n"
                         "commands: /reset (new conversation), /stats (last turn), /exit; "
                         "end a line with \\ to continue it; Ctrl-C stops an answer\n",
                 o.model.c_str(), template_desc.c_str());
  }
  std::string input;
  while (read_message(tty, &input)) {
    if (input == "/exit" || input == "/quit") break;
    if (input == "/reset") {
      session.reset();
      std::fprintf(stderr, "edgellm chat: conversation cleared\n");
      continue;
    }
    if (input == "/stats") {
      write_out(session.has_stats() ? "stats: " + session.last_stats().to_line() + "\n" : "stats: no turn yet\n");
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
      report_turn_notes(reply, o.stats);
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
  ap.add_string("-m,--model", &o.model, "FILE", "GGUF model to load (required)");
  ap.add_string("-s,--system", &o.system, "TEXT", "system prompt (kept when old turns are dropped)");
  ap.add_string("--chat-template", &o.chat_template, "NAME|FILE",
                "built-in template name or a Jinja / tokenizer_config.json file (default: the model's)");
  ap.add_string("--messages", &o.messages_file, "FILE",
                "answer the conversation in FILE (JSON array of {role, content}) and exit");
  ap.add_flag("--json", &o.json, "with --messages: print one JSON record {answer, stats} instead of the text");
  ap.add_flag("--stats", &o.stats, "print each turn's token counts and timings to stderr");
  ap.add_int("-n,--max-tokens", &o.max_tokens, "N", "tokens per answer; -1 = until end of turn or full context (default 256)", -1);
  ap.add_int("-t,--threads", &o.threads, "N", "threads for decoding; 0 = big cores (default 0)", 0, 256);
  ap.add_int("--threads-batch", &o.threads_batch, "N", "threads for prompt processing; 0 = --threads (default 0)", 0, 256);
  ap.add_int("-c,--ctx-size", &o.ctx_size, "N", "context size in tokens; 0 = the model's, at most 4096 (default 0)", 0);
  ap.add_int("-b,--batch-size", &o.batch_size, "N", "prompt tokens per forward pass (default 512)", 1);
  ap.add_string("--kv-type", &o.kv_type, "TYPE", "KV cache element type: f16, f32 or q8_0 (default f16)");
  ap.add_float("--temp", &s.temperature, "T", "temperature; 0 = greedy (default 0.8)", 0.0);
  ap.add_int("--top-k", &s.top_k, "K", "keep the K most likely tokens; 0 = off (default 40)", 0);
  ap.add_float("--top-p", &s.top_p, "P", "nucleus: smallest set with probability >= P; 1 = off (default 0.95)", 0.0, 1.0);
  ap.add_float("--min-p", &s.min_p, "P", "drop tokens below P x the top probability; 0 = off (default 0.05)", 0.0, 1.0);
  ap.add_float("--repeat-penalty", &s.repeat_penalty, "X", "penalise repeated tokens; 1 = off (default 1.0)", 1e-6);
  ap.add_int("--repeat-last-n", &s.penalty_last_n, "N", "penalty window in tokens; 0 = off, -1 = all (default 64)", -1);
  ap.add_float("--frequency-penalty", &s.frequency_penalty, "X", "subtract X per earlier occurrence (default 0)");
  ap.add_float("--presence-penalty", &s.presence_penalty, "X", "subtract X once if the token occurred (default 0)");
  ap.add_int64("--seed", &o.seed, "N", "sampling seed; -1 = random (default -1)", -1, static_cast<int64_t>(UINT32_MAX));
  ap.add_strings("--stop", &o.stop, "STR", "also end an answer when STR is generated (repeatable)");
  if (!ap.parse(args)) return 0;

  require(!o.model.empty(), ErrorCode::kInvalidArgument, "no model given (-m MODEL)");
  require(!o.json || !o.messages_file.empty(), ErrorCode::kInvalidArgument,
          "--json needs --messages FILE (the interactive chat streams text)");
  const TensorType kv_type = parse_kv_type(o.kv_type);
  if (o.seed < 0) o.seed = static_cast<int64_t>(std::random_device{}());
  s.seed = static_cast<uint64_t>(o.seed);

  std::unique_ptr<Model> model = Model::load(o.model);
  std::unique_ptr<Tokenizer> tokenizer = Tokenizer::from_gguf(model->gguf());
  std::string template_desc;
  std::string warning;
  ChatTemplate chat_template =
      select_chat_template(model->gguf(), *tokenizer, o.chat_template, &template_desc, &warning);
  if (!warning.empty()) std::fprintf(stderr, "edgellm chat: warning: %s\n", warning.c_str());

  ContextParams cp;
  cp.n_ctx = o.ctx_size;
  cp.n_batch = o.batch_size;
  cp.n_threads = o.threads;
  cp.n_threads_batch = o.threads_batch;
  cp.kv_type = kv_type;
  Context ctx(*model, cp);

  ChatSessionParams sp;
  sp.max_tokens = o.max_tokens;
  sp.system_prompt = o.system;
  sp.stop = o.stop;
  ChatSession session(ctx, *tokenizer, std::move(chat_template), s, std::move(sp));
  if (!o.messages_file.empty()) return run_messages(session, o);
  return run_interactive(session, o, template_desc);
}

const CommandRegistration kRegistration("chat", "multi-turn chat through the model's chat template (reuses the KV cache)",
                                        chat_command);

}  // namespace
}  // namespace edgellm::cli
