// `edgellm run`: load a model, generate a continuation of one prompt and stream it to stdout.
// Output modes: text (default, flushed per piece), --ids (token ids, space separated) and --json
// (nothing streamed; one JSON record at the end). --stats adds timings and memory on stderr;
// --dump-logits writes the raw logits of every sampled position for offline comparison.
// --parallel N -f FILE serves one prompt per line through the InferenceService (run_parallel.h).
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include "cli_args.h"
#include "command.h"
#include "generation_options.h"
#include "interrupt.h"
#include "run_parallel.h"
#include "core/error.h"
#include "core/json.h"
#include "engine/context.h"
#include "generation/generate.h"
#include "engine/sampler.h"
#include "kernels/tensor_type.h"
#include "model/model.h"
#include "platform/memory_stats.h"
#include "tokenizer/tokenizer.h"

namespace edgellm::cli {
namespace {

struct RunOptions {
  ModelOptions model;
  std::string prompt;
  std::string prompt_file;
  std::string prompt_ids;
  int32_t max_tokens = 256;
  ContextOptions context;
  int64_t seed = -1;
  std::vector<std::string> stop;
  bool no_bos = false;
  bool ids = false;
  bool stats = false;
  bool json = false;
  bool ignore_eos = false;
  bool truncate = false;
  bool context_shift = false;
  int32_t keep = 4;
  std::string dump_logits;
  SamplerParams sampling;
  int32_t parallel = 0;
  int32_t step_tokens = 256;
  int64_t deadline_ms = 0;
  GrammarOptions grammar;
  SpeculationOptions spec;
};

// Raw little-endian F32 rows, n_vocab per sampled position.
class LogitDump {
 public:
  explicit LogitDump(const std::string& path) : path_(path), f_(std::fopen(path.c_str(), "wb")) {
    require(f_ != nullptr, ErrorCode::kIo, "--dump-logits: cannot create '" + path + "'");
  }
  ~LogitDump() {
    if (f_ != nullptr) std::fclose(f_);
  }
  LogitDump(const LogitDump&) = delete;
  LogitDump& operator=(const LogitDump&) = delete;

  void write(const float* logits, int32_t n) {
    const size_t count = static_cast<size_t>(n);
    if constexpr (std::endian::native == std::endian::little) {
      require(std::fwrite(logits, sizeof(float), count, f_) == count, ErrorCode::kIo,
              "--dump-logits: write to '" + path_ + "' failed");
    } else {
      std::vector<uint32_t> swapped(count);
      for (size_t i = 0; i < count; ++i) {
        const uint32_t u = std::bit_cast<uint32_t>(logits[i]);
        swapped[i] = (u >> 24) | ((u >> 8) & 0xff00u) | ((u << 8) & 0xff0000u) | (u << 24);
      }
      require(std::fwrite(swapped.data(), sizeof(uint32_t), count, f_) == count, ErrorCode::kIo,
              "--dump-logits: write to '" + path_ + "' failed");
    }
  }
  void close() {
    FILE* f = f_;
    f_ = nullptr;
    require(std::fclose(f) == 0, ErrorCode::kIo, "--dump-logits: closing '" + path_ + "' failed");
  }

 private:
  std::string path_;
  FILE* f_;
};

Json ids_json(const std::vector<int32_t>& ids) {
  Json a = Json::array();
  for (int32_t id : ids) a.push_back(Json(static_cast<int>(id)));
  return a;
}

void print_stats(const GenerationResult& r, const ProcessMemory& mem, size_t weight_bytes, size_t ctx_bytes,
                 size_t repacked_bytes) {
  const GenerationTimings& t = r.timings;
  std::fprintf(stderr, "\n--- stats ---\n");
  std::fprintf(stderr, "load:          %8.1f ms\n", t.load_seconds * 1e3);
  std::fprintf(stderr, "prompt:        %8d tokens in %8.1f ms (%8.2f tok/s)\n", t.prompt_tokens,
               t.prefill_seconds * 1e3, t.prefill_tokens_per_second());
  std::fprintf(stderr, "first token:   %8.1f ms\n", t.ttft_seconds * 1e3);
  std::fprintf(stderr, "decode:        %8d tokens in %8.1f ms (%8.2f tok/s)\n", t.decode_tokens,
               t.decode_seconds * 1e3, t.decode_tokens_per_second());
  std::fprintf(stderr, "generated:     %8zu tokens, finish reason %s\n", r.tokens.size(),
               finish_reason_name(r.finish_reason));
  if (t.grammar_seconds > 0 || t.grammar_masks > 0) {
    std::fprintf(stderr, "grammar:       %8.1f ms checking tokens, %d full masks\n", t.grammar_seconds * 1e3, t.grammar_masks);
  }
  if (mem.valid) {
    std::fprintf(stderr, "peak RSS:      %8.1f MiB\n", static_cast<double>(mem.peak_bytes) / (1024.0 * 1024.0));
  } else {
    std::fprintf(stderr, "peak RSS:      unavailable\n");
  }
  std::fprintf(stderr, "weights:       %8.1f MiB, context buffers %.1f MiB\n",
               static_cast<double>(weight_bytes) / (1024.0 * 1024.0), static_cast<double>(ctx_bytes) / (1024.0 * 1024.0));
  if (repacked_bytes > 0) {
    std::fprintf(stderr, "repacked:      %8.1f MiB of weights in anonymous memory (their mapped pages released)\n",
                 static_cast<double>(repacked_bytes) / (1024.0 * 1024.0));
  }
}

int run_command(const std::vector<std::string>& args) {
  RunOptions o;
  SamplerParams& s = o.sampling;
  ArgParser ap("run", "-m MODEL (-p PROMPT | -f FILE | --prompt-ids IDS) [options]");
  add_model_options(ap, &o.model);
  ap.add_string("-p,--prompt", &o.prompt, "TEXT", "prompt text");
  ap.add_string("-f,--file", &o.prompt_file, "FILE", "read the prompt text from FILE");
  ap.add_string("--prompt-ids", &o.prompt_ids, "IDS", "prompt as comma-separated token ids (used as given: no BOS added)");
  ap.add_int("-n,--max-tokens", &o.max_tokens, "N", "tokens to generate; -1 = until end of text or full context (default 256)", -1);
  add_context_options(ap, &o.context);
  add_sampling_options(ap, &s, &o.seed);
  add_sampler_order_option(ap, &s);
  ap.add_strings("--stop", &o.stop, "STR", "stop when STR is generated (repeatable; STR is not printed)");
  add_grammar_options(ap, &o.grammar);
  add_speculation_options(ap, &o.spec);
  add_kv_type_options(ap, &o.context.kv);
  ap.add_flag("--no-bos", &o.no_bos, "do not add the BOS token to a text prompt");
  ap.add_flag("--ignore-eos", &o.ignore_eos, "never sample end-of-text tokens (generate to -n)");
  ap.add_flag("--truncate", &o.truncate, "drop the oldest prompt tokens when the prompt does not fit the context");
  ap.add_flag("--context-shift", &o.context_shift,
              "endless stream: when the context is full, drop the older half after the --keep positions and go on");
  ap.add_int("--keep", &o.keep, "N",
             "with --context-shift: positions at the start never dropped (attention sinks, system prompt); "
             "-1 = the whole prompt (default 4)",
             -1);
  ap.add_flag("--ids", &o.ids, "print generated token ids instead of text");
  ap.add_flag("--stats", &o.stats, "print timings and memory to stderr at the end");
  ap.add_flag(shared_option("json"), &o.json, "one record on stdout at the end instead of streaming text");
  ap.add_string("--dump-logits", &o.dump_logits, "FILE", "write raw little-endian F32 logits of every sampled position");
  ap.add_int(shared_option("parallel"), &o.parallel, 1, 1024,
             "serve the prompts of -f FILE (one per line) through the service, N decoded at once");
  ap.add_int("--step-tokens", &o.step_tokens, "N", "with --parallel: tokens per scheduler step (default 256)", 2);
  std::string deadline;
  ap.add_string("--deadline-ms", &deadline, "MS", "with --parallel: per-request deadline (default none)");
  if (!ap.parse(args)) return 0;

  // The service's options mean nothing to a single generation: refuse them rather than ignore them.
  for (const char* opt : {"--step-tokens", "--deadline-ms"}) {
    require(ap.seen("--parallel") || !ap.seen(opt), ErrorCode::kInvalidArgument,
            std::string(opt) + " applies to --parallel N runs only (the service's scheduler)");
  }
  if (ap.seen("--parallel")) {
    const std::string model_path = resolve_model_path(o.model);
    require(ap.seen("-f") && !ap.seen("-p") && !ap.seen("--prompt-ids"), ErrorCode::kInvalidArgument,
            "--parallel reads its prompts from -f FILE (one per line)");
    require(!o.ids && o.dump_logits.empty() && !o.truncate && !o.context_shift, ErrorCode::kInvalidArgument,
            "--parallel does not combine with --ids, --dump-logits, --truncate or --context-shift");
    ParallelRunOptions po;
    po.model = model_path;
    po.prompts = prompts_from_lines(read_text_file(o.prompt_file, "prompt file"));
    po.parallel = o.parallel;
    po.step_tokens = o.step_tokens;
    po.max_tokens = o.max_tokens;
    po.deadline_ms = deadline.empty() ? 0 : parse_int(deadline, "--deadline-ms", 0, int64_t{1} << 40);
    po.stop = o.stop;
    po.ignore_eos = o.ignore_eos;
    po.no_bos = o.no_bos;
    po.json = o.json;
    po.context = context_params(o.context);
    po.load = model_load_params(o.context);
    resolve_seed(&o.seed, &s);
    po.sampling = s;
    po.grammar = o.grammar;
    po.speculation = speculation_params(o.spec);  // checks the mode's name and -md
    po.draft_model = o.spec.model_draft;
    return run_parallel(po);
  }

  require(!o.model.model.empty(), ErrorCode::kInvalidArgument, "no model given (-m MODEL)");
  const int n_prompt_sources = (ap.seen("-p") ? 1 : 0) + (ap.seen("-f") ? 1 : 0) + (ap.seen("--prompt-ids") ? 1 : 0);
  require(n_prompt_sources == 1, ErrorCode::kInvalidArgument,
          n_prompt_sources == 0 ? "no prompt given (-p TEXT, -f FILE or --prompt-ids IDS)"
                                : "give only one of -p, -f and --prompt-ids");
  require(!(o.ids && o.json), ErrorCode::kInvalidArgument, "--ids and --json cannot be combined (the JSON has the ids)");
  const ContextParams cp = context_params(o.context);  // validates --kv-type before the model loads
  SpeculationParams spec = speculation_params(o.spec);  // and --spec / -md
  if (!o.prompt_file.empty()) o.prompt = read_text_file(o.prompt_file, "prompt file");
  std::vector<int32_t> prompt_ids;
  if (ap.seen("--prompt-ids")) prompt_ids = parse_int_list(o.prompt_ids, "--prompt-ids");
  resolve_seed(&o.seed, &s);
  std::unique_ptr<LogitDump> dump;
  if (!o.dump_logits.empty()) dump = std::make_unique<LogitDump>(o.dump_logits);

  const std::string model_path = resolve_model_path(o.model);
  const auto t_load = std::chrono::steady_clock::now();
  std::unique_ptr<Model> model = Model::load(model_path, model_load_params(o.context));
  const int32_t n_vocab = model->hparams().n_vocab;
  // The tokenizer is only optional when nothing needs text: ids in, ids out, no stop strings.
  std::unique_ptr<Tokenizer> tokenizer;
  const bool text_needed = prompt_ids.empty() || !o.ids || o.json || !o.stop.empty();
  try {
    tokenizer = Tokenizer::from_gguf(model->gguf());
  } catch (const Error& e) {
    if (text_needed) throw;
    std::fprintf(stderr, "edgellm run: warning: no usable tokenizer (%s); generating ids only\n", e.what());
  }
  // --spec draft: the draft model outlives the generation.
  const std::unique_ptr<Model> draft_model = load_draft_model(o.spec, *model, model_load_params(o.context));
  spec.draft_model = draft_model.get();
  Context ctx(*model, cp);
  warn_past_training_context("run", *model, ctx.params().n_ctx);
  const double load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_load).count();

  if (prompt_ids.empty()) {
    require(!o.prompt.empty(), ErrorCode::kInvalidArgument,
            o.prompt_file.empty() ? "the prompt is empty (-p \"\")" : "the prompt file '" + o.prompt_file + "' is empty");
    prompt_ids = tokenizer->encode(o.prompt, !o.no_bos, true);
    require(!prompt_ids.empty(), ErrorCode::kInvalidArgument, "the prompt encodes to no tokens");
  }
  Sampler sampler(s, n_vocab);

  GenerationParams gp;
  gp.max_tokens = o.max_tokens;
  gp.stop = o.stop;
  gp.ignore_eog = o.ignore_eos;
  gp.truncate_prompt = o.truncate;
  gp.context_shift = o.context_shift;
  gp.n_keep = o.keep;
  gp.speculation = spec;
  double grammar_ms = 0;
  if (o.grammar.any()) {
    require(tokenizer != nullptr, ErrorCode::kInvalidArgument, "a grammar needs the model's tokenizer");
    gp.grammar = compile_grammar_options(o.grammar, *tokenizer, &grammar_ms);
  }

  bool printed_any_id = false;
  GenerationCallbacks cb;
  cb.cancel = interrupt_flag();
  if (!o.json) {
    cb.on_token = [&](int32_t id, std::string_view text) {
      if (o.ids) {
        if (id >= 0) {
          std::fprintf(stdout, printed_any_id ? " %d" : "%d", id);
          printed_any_id = true;
        }
      } else if (!text.empty()) {
        std::fwrite(text.data(), 1, text.size(), stdout);
      }
      std::fflush(stdout);
      return true;
    };
  }
  if (dump) cb.on_logits = [&](const float* logits, int32_t n) { dump->write(logits, n); };

  GenerationResult r = [&] {
    const SigintScope sigint;  // the first Ctrl-C ends generation cleanly (finish reason "cancelled")
    return generate(ctx, sampler, tokenizer.get(), prompt_ids, gp, cb);
  }();
  r.timings.load_seconds = load_seconds;
  if (dump) dump->close();
  const ProcessMemory mem = read_process_memory();

  if (o.json) {
    Json timings = Json::object();
    timings.set("load_s", r.timings.load_seconds);
    timings.set("prompt_tokens", static_cast<int>(r.timings.prompt_tokens));
    timings.set("prefill_s", r.timings.prefill_seconds);
    timings.set("prefill_tok_per_s", r.timings.prefill_tokens_per_second());
    timings.set("ttft_s", r.timings.ttft_seconds);
    timings.set("decode_tokens", static_cast<int>(r.timings.decode_tokens));
    timings.set("decode_s", r.timings.decode_seconds);
    timings.set("decode_tok_per_s", r.timings.decode_tokens_per_second());
    if (gp.grammar != nullptr) {
      timings.set("grammar_compile_ms", grammar_ms);
      timings.set("grammar_s", r.timings.grammar_seconds);
      timings.set("grammar_masks", static_cast<int>(r.timings.grammar_masks));
    }
    if (spec.mode != SpeculationMode::kOff) timings.set("speculation", speculation_stats_json(spec, r.speculation));
    Json memory = Json::object();
    memory.set("peak_rss_bytes", mem.valid ? Json(static_cast<uint64_t>(mem.peak_bytes)) : Json(nullptr));
    memory.set("weight_bytes", static_cast<uint64_t>(model->weight_bytes()));
    if (draft_model) memory.set("draft_weight_bytes", static_cast<uint64_t>(draft_model->weight_bytes()));
    memory.set("context_bytes", static_cast<uint64_t>(ctx.allocated_bytes()));
    memory.set("repacked_bytes", static_cast<uint64_t>(model->repacked_bytes()));
    Json rec = Json::object();
    rec.set("model", model_path);
    rec.set("prompt_ids", ids_json(prompt_ids));
    rec.set("text", r.text);
    rec.set("ids", ids_json(r.tokens));
    rec.set("finish_reason", finish_reason_name(r.finish_reason));
    rec.set("stop", r.stop_string.empty() ? Json(nullptr) : Json(r.stop_string));
    rec.set("eog_token", r.eog_token >= 0 ? Json(static_cast<int>(r.eog_token)) : Json(nullptr));
    rec.set("error", r.error.empty() ? Json(nullptr) : Json(r.error));
    rec.set("seed", static_cast<int64_t>(o.seed));
    rec.set("n_ctx", static_cast<int>(ctx.params().n_ctx));
    rec.set("context_shifts", static_cast<int>(r.context_shifts));
    rec.set("n_vocab", static_cast<int>(n_vocab));
    rec.set("timings", std::move(timings));
    rec.set("memory", std::move(memory));
    const std::string line = rec.dump() + "\n";
    std::fwrite(line.data(), 1, line.size(), stdout);
  } else if (o.ids) {
    std::fputc('\n', stdout);
  } else if (isatty(STDOUT_FILENO) && !r.text.empty() && r.text.back() != '\n') {
    std::fputc('\n', stdout);  // keep the shell prompt off the last line; pipes get the text unchanged
  }
  std::fflush(stdout);

  if (o.stats) {
    print_stats(r, mem, model->weight_bytes(), ctx.allocated_bytes(), model->repacked_bytes());
    std::fputs(speculation_stats_line(spec, r.speculation).c_str(), stderr);
    if (draft_model) {
      std::fprintf(stderr, "draft model:   %8.1f MiB of weights (%s)\n",
                   static_cast<double>(draft_model->weight_bytes()) / (1024.0 * 1024.0), o.spec.model_draft.c_str());
    }
    const ContextParams& cp = ctx.params();
    const PlacementLog::Snapshot pl = ctx.placement_log();
    std::fprintf(stderr, "threads:       prefill %d (%s), decode %d (%s)%s%s\n", cp.n_threads_batch,
                 cp.placement_batch.to_string().c_str(), cp.n_threads, cp.placement.to_string().c_str(),
                 pl.note.empty() ? "" : "; ", pl.note.c_str());
  }
  if (r.prompt_tokens_dropped > 0) {
    std::fprintf(stderr, "edgellm run: note: dropped the oldest %d prompt tokens to fit the context\n",
                 r.prompt_tokens_dropped);
  }
  if (r.finish_reason == FinishReason::kError) {
    std::fprintf(stderr, "edgellm run: error: generation failed after %zu tokens: %s\n", r.tokens.size(),
                 r.error.c_str());
    return 1;
  }
  if (r.finish_reason == FinishReason::kCancelled && interrupt_flag()->load()) return 130;  // 128 + SIGINT
  return 0;
}

const CommandRegistration kRunRegistration("run", "generate text from a prompt (streams to stdout)", run_command);

}  // namespace
}  // namespace edgellm::cli
